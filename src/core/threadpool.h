/* A persistent thread pool: workers start once per context and wait between jobs, so decode does
 * not pay thread start-up per matmul. A job is fn(arg, ith, nth) run by every thread, the caller
 * being thread 0; elm_pool_run returns when all have finished. */
#ifndef EDGELM_CORE_THREADPOOL_H
#define EDGELM_CORE_THREADPOOL_H

#include "edgelm/error.h"

typedef struct elm_pool elm_pool;
typedef void (*elm_pool_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (1 means no workers: jobs run on the caller). */
elm_status elm_pool_new(int n_threads, elm_pool **out, elm_error *err);
void elm_pool_free(elm_pool *p);
int elm_pool_size(const elm_pool *p);
void elm_pool_run(elm_pool *p, elm_pool_fn fn, void *arg);

/* The [begin, end) share of n items for thread ith of nth (contiguous, balanced). */
static inline void elm_split(long n, int ith, int nth, long *begin, long *end) {
    long per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra ? 1 : 0);
}

#endif
