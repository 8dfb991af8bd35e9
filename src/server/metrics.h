/* The server's counters for GET /metrics, rendered in the Prometheus text exposition format
 * (version 0.0.4): requests by endpoint and status, prompt / cached / generated tokens, prefix
 * cache hits, time to first token and per-token latency histograms, and the slot and queue gauges
 * read at scrape time. Names carry the prefix edgelm_; docs/runtime.md maps them to llama-server's
 * llamacpp: metrics.
 *
 * Thread-safe: the HTTP threads count requests and the scheduler thread counts tokens while a
 * scrape renders; one mutex makes every scrape a consistent snapshot (a histogram's +Inf bucket
 * always equals its _count). */
#ifndef EDGELM_SERVER_METRICS_H
#define EDGELM_SERVER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct srv_metrics srv_metrics;

/* A zeroed set of counters; NULL when out of memory. */
srv_metrics *srv_metrics_new(void);

void srv_metrics_free(srv_metrics *m);

/* One answered request: its route (e.g. "/v1/chat/completions"; any path that is not a route
 * counts as "other") and HTTP status. */
void srv_metrics_request(srv_metrics *m, const char *path, unsigned status);

/* A job taken by a slot: its prompt tokens, of which `cached` were already in the slot's cache
 * (a prefix-cache hit when > 0). */
void srv_metrics_job_start(srv_metrics *m, int32_t tokens, int32_t cached);

/* A job ended after generating `generated` tokens (its usage.completion_tokens). */
void srv_metrics_job_end(srv_metrics *m, int32_t generated);

/* One sampled token (an end-of-generation one too), `seconds` after the job's submission (first)
 * or after its previous token. */
void srv_metrics_token(srv_metrics *m, bool first, double seconds);

/* The exposition text (malloc'd; the caller frees), with the gauges given: slots busy and in all,
 * requests waiting for a slot. NULL when out of memory. */
char *srv_metrics_render(srv_metrics *m, int slots_busy, int slots_total, int waiting);

#endif
