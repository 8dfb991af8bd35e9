/* Streaming read bandwidth (elm_membw_read, edgelm/system.h): each thread runs the widest dot product of the kernel
 * table (the loads decode itself issues: 256-bit or wider, several accumulators) over its share
 * of a buffer of ones, dotted with itself, so every byte comes from memory once; the sums are
 * checked, so the reads cannot be dropped. Threads come from the same persistent pool the forward
 * pass uses, and the time is the wall time of the whole pass. */
#include "core/clock.h"
#include "edgelm/system.h"

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "core/threadpool.h"
#include "kernels/kernels.h"

typedef struct {
    const elm_kernels *k;
    const float *buf;
    size_t n;
    double sums[512];
} read_job;

static void read_worker(void *arg, int ith, int nth) {
    read_job *j = arg;
    long b, e;
    elm_split((long)(j->n / 1024), ith, nth, &b, &e);
    const float *p = j->buf + (size_t)b * 1024;
    j->sums[ith] = j->k->dot_f32(p, p, (int64_t)(e - b) * 1024);
}

elm_status elm_membw_read(int n_threads, size_t bytes, int reps, double *gbps, elm_error *err) {
    *gbps = 0;
    if (n_threads == 0) n_threads = elm_online_cores();
    if (n_threads < 1 || n_threads > 512 || reps < 1 || bytes < ((size_t)1 << 20))
        return elm_errorf(err, ELM_ERR_ARG,
                          "memory bandwidth: %d threads, %d repetitions, %zu bytes", n_threads,
                          reps, bytes);
    elm_pool *pool = NULL;
    elm_status st = elm_pool_new(n_threads, &pool, err);
    if (st) return st;
    bytes = bytes / 4096 * 4096;
    float *buf = aligned_alloc(64, bytes);
    if (!buf) {
        elm_pool_free(pool);
        return elm_errorf(err, ELM_ERR_NOMEM, "memory bandwidth: cannot allocate %zu MiB",
                          bytes >> 20);
    }
    read_job j = {.k = elm_kernels_best(), .buf = buf, .n = bytes / sizeof(float)};
    for (size_t i = 0; i < j.n; i++) buf[i] = 1.0f; /* also faults the pages in before timing */
    elm_pool_run(pool, read_worker, &j);            /* and warms the threads */
    bool ok = true;
    for (int r = 0; r < reps; r++) {
        const double t0 = elm_now_s();
        elm_pool_run(pool, read_worker, &j);
        const double dt = elm_now_s() - t0;
        if (dt > 0 && bytes / dt / 1e9 > *gbps) *gbps = bytes / dt / 1e9;
        double total = 0;
        for (int i = 0; i < n_threads; i++) total += j.sums[i];
        ok &= total > 0.5 * (double)j.n; /* every read happened (float sums round, hence 0.5) */
    }
    free(buf);
    elm_pool_free(pool);
    if (!ok) return elm_errorf(err, ELM_ERR_ARG, "memory bandwidth: read check failed");
    return ELM_OK;
}
