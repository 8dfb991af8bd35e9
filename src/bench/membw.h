/* Memory read bandwidth: the ceiling decode runs against. Decode reads every weight once per
 * token, so tokens/s can be at most bandwidth / bytes per token; `edgelm bench` puts the two
 * figures side by side. */
#ifndef EDGELM_BENCH_MEMBW_H
#define EDGELM_BENCH_MEMBW_H

#include <stddef.h>
#include "edgelm/error.h"

/* Streams a buffer of `bytes` (make it far larger than the last-level cache; it is allocated and
 * touched first) with n_threads threads each reading its own contiguous share, `reps` times, and
 * returns the best read rate in GB/s (10^9 bytes per second) in *gbps. ELM_ERR_NOMEM when the
 * buffer cannot be had, ELM_ERR_ARG for n_threads or reps < 1 or bytes < 1 MiB. */
elm_status elm_membw_read(int n_threads, size_t bytes, int reps, double *gbps, elm_error *err);

#endif
