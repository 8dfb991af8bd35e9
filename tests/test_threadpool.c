/* The thread pool (core/threadpool.c): static and shared jobs do all their items exactly once,
 * and a shared job whose joined worker is held up (as by preemption on a busy core) is done by the
 * caller, home range of the worker included, and returns only once the worker has left it. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "core/threadpool.h"

enum { ITEMS = 4096, CHUNK = 16 };

typedef struct {
    elm_pool_work work;
    atomic_int done[ITEMS];
    atomic_int by_worker;    /* items done by threads other than the caller */
    atomic_bool joined;      /* a worker has started on the job */
    atomic_bool left;        /* the held worker has finished its part */
    int hold_ms;             /* the first worker to start sleeps this long before its chunks */
    int await_ms;            /* the caller waits up to this long for a worker to start */
} job;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void shared_fn(void *arg, int ith, int nth) {
    (void)nth;
    job *j = arg;
    long b, e;
    const bool held = ith != 0 && !atomic_exchange(&j->joined, true) && j->hold_ms;
    if (held) sleep_ms(j->hold_ms);
    for (int waited = 0; ith == 0 && waited < j->await_ms && !atomic_load(&j->joined); waited++)
        sleep_ms(1);
    while (elm_pool_work_claim(&j->work, ith, CHUNK, &b, &e))
        for (long i = b; i < e; i++) {
            atomic_fetch_add(&j->done[i], 1);
            if (ith != 0) atomic_fetch_add(&j->by_worker, 1);
        }
    if (held) atomic_store(&j->left, true);
}

static void static_fn(void *arg, int ith, int nth) {
    job *j = arg;
    long b, e;
    elm_split(ITEMS, ith, nth, &b, &e);
    for (long i = b; i < e; i++) atomic_fetch_add(&j->done[i], 1);
}

/* Runs one job and checks that every item was done exactly once; returns the worker's share. */
static int run_job(elm_pool *p, job *j, bool shared, int hold_ms, int await_ms, const char *what) {
    elm_pool_work_init(&j->work, ITEMS, elm_pool_size(p));
    for (int i = 0; i < ITEMS; i++) atomic_init(&j->done[i], 0);
    atomic_init(&j->by_worker, 0);
    atomic_init(&j->joined, false);
    atomic_init(&j->left, false);
    j->hold_ms = hold_ms;
    j->await_ms = await_ms;
    if (shared) elm_pool_run_shared(p, shared_fn, j);
    else elm_pool_run(p, static_fn, j);
    int wrong = 0;
    for (int i = 0; i < ITEMS; i++) wrong += atomic_load(&j->done[i]) != 1;
    CHECK(wrong == 0, "%s: %d items not done exactly once", what, wrong);
    return atomic_load(&j->by_worker);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_pool *p = NULL;
    elm_error err = {0};
    CHECK(elm_pool_new(2, &p, &err) == ELM_OK && p, "pool of 2: %s", err.msg);
    if (!p) return check_done();
    job *j = calloc(1, sizeof *j);
    for (int r = 0; r < 20; r++) {
        run_job(p, j, false, 0, 0, "static job");
        run_job(p, j, true, 0, 0, "shared job");
    }
    /* a worker held up 20 ms after joining a shared job (the caller waits for it to join): the
     * caller claims every chunk, the worker's home range too */
    const int held = run_job(p, j, true, 20, 2000, "held shared job");
    CHECK(held == 0, "a worker held up before its first chunk did %d items", held);
    CHECK(atomic_load(&j->left), "the held job returned before its worker left it");
    for (int r = 0; r < 20; r++) run_job(p, j, true, 0, 0, "shared job after a held one");
    free(j);
    elm_pool_free(p);
    return check_done();
}
