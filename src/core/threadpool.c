/* Persistent thread pool (see threadpool.h). A job is published by bumping a generation counter.
 * Decode issues a hundred or more small jobs per token, so waiting is done in three stages:
 * spin on the counter (a wake-up through the kernel would cost more than the job), then yield
 * the core (on a machine with more runnable threads than cores, a spinning thread would hold up
 * the very threads it waits for), then sleep on a condition variable. The publisher takes the
 * mutex only when someone sleeps: the counters are sequentially consistent atomics, so either the
 * publisher sees the sleeper's count or the sleeper sees the new generation before it waits. The
 * caller runs share 0 and waits for the pending count to reach zero the same way. */
#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

enum { SPIN_ITERS = 4096, YIELD_ITERS = 64 };

typedef struct {
    struct elm_pool *p;
    int ith;
} worker_arg;

struct elm_pool {
    int n;
    pthread_t *threads;
    worker_arg *args;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_ulong generation;
    atomic_int pending;       /* workers still running the current job */
    atomic_int sleepers;      /* workers blocked (or about to block) on `wake` */
    atomic_bool caller_waits; /* the caller blocked (or about to block) on `done` */
    atomic_bool stop;
    elm_pool_fn fn;
    void *arg;
};

/* Spins, then yields, until cond(p, seen) holds; false if it still does not. */
static bool spin_until(elm_pool *p, bool (*cond)(elm_pool *, unsigned long), unsigned long seen) {
    for (int s = 0; s < SPIN_ITERS; s++) {
        if (cond(p, seen)) return true;
        cpu_relax();
    }
    for (int s = 0; s < YIELD_ITERS; s++) {
        if (cond(p, seen)) return true;
        sched_yield();
    }
    return cond(p, seen);
}

static bool job_ready(elm_pool *p, unsigned long seen) {
    return atomic_load(&p->generation) != seen || atomic_load(&p->stop);
}

static bool job_done(elm_pool *p, unsigned long unused) {
    (void)unused;
    return atomic_load(&p->pending) == 0;
}

static unsigned long wait_for_job(elm_pool *p, unsigned long seen) {
    if (!spin_until(p, job_ready, seen)) {
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->sleepers, 1);
        while (!job_ready(p, seen)) pthread_cond_wait(&p->wake, &p->mu);
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->mu);
    }
    return atomic_load(&p->generation);
}

static void *worker(void *v) {
    worker_arg *wa = v;
    elm_pool *p = wa->p;
    unsigned long seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop)) break;
        p->fn(p->arg, wa->ith, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_waits)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

elm_status elm_pool_new(int n_threads, elm_pool **out, elm_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 512)
        return elm_errorf(err, ELM_ERR_ARG, "thread count %d out of range 1..512", n_threads);
    elm_pool *p = calloc(1, sizeof *p);
    if (p) {
        p->threads = calloc((size_t)n_threads, sizeof *p->threads);
        p->args = calloc((size_t)n_threads, sizeof *p->args);
    }
    if (!p || !p->threads || !p->args) {
        if (p) free(p->threads), free(p->args);
        free(p);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory creating thread pool");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_waits, false);
    atomic_init(&p->stop, false);
    p->n = 1;
    for (int i = 1; i < n_threads; i++) {
        p->args[i] = (worker_arg){p, i};
        if (pthread_create(&p->threads[i], NULL, worker, &p->args[i]) != 0) {
            elm_pool_free(p);
            return elm_errorf(err, ELM_ERR_NOMEM, "cannot start thread %d", i);
        }
        p->n = i + 1;
    }
    *out = p;
    return ELM_OK;
}

void elm_pool_free(elm_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p->args);
    free(p);
}

int elm_pool_size(const elm_pool *p) { return p->n; }

void elm_pool_run(elm_pool *p, elm_pool_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    if (spin_until(p, job_done, 0)) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_waits, true);
    while (!job_done(p, 0)) pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->caller_waits, false);
    pthread_mutex_unlock(&p->mu);
}
