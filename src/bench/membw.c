/* Streaming read bandwidth (see membw.h): each thread sums 64-bit words of its share with several
 * independent accumulators, so the loop is bound by loads, not by an addition chain; the sum is
 * kept so the compiler cannot drop the reads. Threads come from the same persistent pool the
 * forward pass uses, and the time is the wall time of the whole pass. */
#include "bench/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"

typedef struct {
    const uint64_t *buf;
    size_t words;
    uint64_t sums[512];
} read_job;

static void read_worker(void *arg, int ith, int nth) {
    read_job *j = arg;
    long w0, w1;
    elm_split((long)(j->words / 8), ith, nth, &w0, &w1);
    const uint64_t *p = j->buf + (size_t)w0 * 8, *end = j->buf + (size_t)w1 * 8;
    uint64_t a[8] = {0};
    for (; p < end; p += 8)
        for (int k = 0; k < 8; k++) a[k] += p[k];
    j->sums[ith] = a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

elm_status elm_membw_read(int n_threads, size_t bytes, int reps, double *gbps, elm_error *err) {
    *gbps = 0;
    if (n_threads < 1 || n_threads > 512 || reps < 1 || bytes < ((size_t)1 << 20))
        return elm_errorf(err, ELM_ERR_ARG, "memory bandwidth: %d threads, %d repetitions, %zu bytes",
                          n_threads, reps, bytes);
    elm_pool *pool = NULL;
    elm_status st = elm_pool_new(n_threads, &pool, err);
    if (st) return st;
    bytes = bytes / 64 * 64;
    uint64_t *buf = aligned_alloc(64, bytes);
    if (!buf) {
        elm_pool_free(pool);
        return elm_errorf(err, ELM_ERR_NOMEM, "memory bandwidth: cannot allocate %zu MiB",
                          bytes >> 20);
    }
    memset(buf, 1, bytes); /* fault the pages in before timing */
    read_job j = {.buf = buf, .words = bytes / 8};
    elm_pool_run(pool, read_worker, &j); /* and warm the threads */
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        elm_pool_run(pool, read_worker, &j);
        const double dt = now_s() - t0;
        if (dt > 0 && bytes / dt / 1e9 > *gbps) *gbps = bytes / dt / 1e9;
    }
    uint64_t sink = 0;
    for (int i = 0; i < n_threads; i++) sink += j.sums[i];
    free(buf);
    elm_pool_free(pool);
    /* every word is 0x0101010101010101: a wrong sum means the reads were not all done */
    if (sink != (uint64_t)0x0101010101010101ull * (j.words / 8 * 8))
        return elm_errorf(err, ELM_ERR_ARG, "memory bandwidth: read check failed");
    return ELM_OK;
}
