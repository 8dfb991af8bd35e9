/* Resident memory of this process, from Linux's /proc/self/status: the kernel keeps the peak of
 * the whole resident set (VmHWM) but not of its anonymous part (RssAnon: heap and private
 * mappings, what a run allocates; file pages of a mapped model are not in it), so a sampler thread
 * records that peak while a long job runs. Elsewhere (no /proc) every figure reads 0. */
#ifndef EDGELM_CORE_MEMSTAT_H
#define EDGELM_CORE_MEMSTAT_H

#include <stdint.h>

typedef struct elm_mem_usage {
    int64_t peak_rss; /* VmHWM, bytes: peak resident set since the process started */
    int64_t rss_anon; /* RssAnon, bytes: anonymous resident memory now */
} elm_mem_usage;

/* Reads both figures now; zeros where /proc/self/status cannot be read. */
elm_mem_usage elm_mem_now(void);

typedef struct elm_mem_sampler elm_mem_sampler;

/* Starts a thread that reads RssAnon every interval_ms (and once at once). NULL when no thread
 * can be started (then elm_mem_sampler_stop reports the figures of the stop alone). */
elm_mem_sampler *elm_mem_sampler_start(int interval_ms);

/* Stops and frees s (NULL allowed): returns the peak resident set and the largest RssAnon seen
 * (including one last reading now). */
elm_mem_usage elm_mem_sampler_stop(elm_mem_sampler *s);

#endif
