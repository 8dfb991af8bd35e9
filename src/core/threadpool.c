/* Persistent thread pool (see threadpool.h). A job is published by bumping a generation counter;
 * workers spin briefly on it (decode issues dozens of small matmuls per token, and a futex wake
 * per matmul would cost more than the work) and then sleep on a condition variable. The caller
 * runs share 0 and waits for the pending count to reach zero the same way. */
#include "core/threadpool.h"

#include <pthread.h>
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

enum { SPIN_ITERS = 20000 };

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
    atomic_int pending;
    atomic_bool stop;
    elm_pool_fn fn;
    void *arg;
};

static unsigned long wait_for_job(elm_pool *p, unsigned long seen) {
    unsigned long g = seen;
    for (int s = 0; s < SPIN_ITERS; s++) {
        g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen || atomic_load(&p->stop)) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->stop) && (g = atomic_load(&p->generation)) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void *worker(void *v) {
    worker_arg *wa = v;
    elm_pool *p = wa->p;
    unsigned long seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load(&p->stop)) break;
        p->fn(p->arg, wa->ith, p->n);
        if (atomic_fetch_sub(&p->pending, 1) == 1) {
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
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    for (int s = 0; s < SPIN_ITERS && atomic_load(&p->pending) > 0; s++) cpu_relax();
    if (atomic_load(&p->pending) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
