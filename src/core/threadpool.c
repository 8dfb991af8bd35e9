/* Persistent thread pool (see threadpool.h). Workers sleep on a condition variable and are woken
 * by a generation counter; the caller takes part as thread 0 and waits for the others. */
#include "core/threadpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

struct elm_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation;
    int pending;
    bool stop;
    elm_pool_fn fn;
    void *arg;
};

typedef struct { elm_pool *p; int ith; } worker_arg;

static void *worker(void *v) {
    worker_arg *wa = v;
    elm_pool *p = wa->p;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        elm_pool_fn fn = p->fn;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        fn(arg, wa->ith, p->n);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Worker arguments live right after the thread handles, in one allocation. */
static worker_arg *worker_args_of(elm_pool *p) { return (worker_arg *)(p->threads + p->n); }

elm_status elm_pool_new(int n_threads, elm_pool **out, elm_error *err) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 512)
        return elm_errorf(err, ELM_ERR_ARG, "thread count %d out of range 1..512", n_threads);
    elm_pool *p = calloc(1, sizeof *p);
    if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory creating thread pool");
    p->n = n_threads;
    p->threads = calloc((size_t)n_threads, sizeof(pthread_t) + sizeof(worker_arg));
    if (!p->threads) {
        free(p);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory creating thread pool");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    worker_arg *wa = worker_args_of(p);
    for (int i = 1; i < n_threads; i++) {
        wa[i].p = p;
        wa[i].ith = i;
        if (pthread_create(&p->threads[i], NULL, worker, &wa[i]) != 0) {
            p->n = i; /* join only the ones started */
            elm_pool_free(p);
            return elm_errorf(err, ELM_ERR_NOMEM, "cannot start thread %d", i);
        }
    }
    *out = p;
    return ELM_OK;
}

void elm_pool_free(elm_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}

int elm_pool_size(const elm_pool *p) { return p->n; }

void elm_pool_run(elm_pool *p, elm_pool_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->pending = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    fn(arg, 0, p->n);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
