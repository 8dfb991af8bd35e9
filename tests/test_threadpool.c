/* The thread pool (core/threadpool.c): static and shared jobs do all their items exactly once,
 * and a shared job whose joined worker is held up (as by preemption on a busy core) is done by the
 * caller, home range of the worker included, and returns only once the worker has left it. A
 * parked worker joins no shared job until a static job unparks it; the parking decision
 * (elm_pool_adapt_window) parks on a contended window and probes back with doubling waits. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "core/clock.h"
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

static void check_adapt(void) {
    enum { F = ELM_POOL_PROBE_FIRST_US, C = ELM_POOL_CONTENDED, W = ELM_POOL_WINDOW_US };
    elm_pool_adapt a = {.active = 2, .n = 2};
    unsigned long long t = 1000000;
    CHECK(elm_pool_adapt_window(&a, t, C - 1) == 2, "a quiet window parked a worker");
    CHECK(elm_pool_adapt_window(&a, t += W, C) == 1, "a contended window parked no worker");
    CHECK(elm_pool_adapt_window(&a, t += W, C) == 1, "parked below one thread");
    const unsigned long long parked_at = t - W;
    CHECK(elm_pool_adapt_window(&a, parked_at + F - 1, 0) == 1, "probed before the first wait");
    CHECK(elm_pool_adapt_window(&a, t = parked_at + F, 0) == 2, "no probe after the first wait");
    CHECK(elm_pool_adapt_window(&a, t += W, C) == 1, "a contended probe kept the worker");
    CHECK(elm_pool_adapt_window(&a, t + 2 * F - 1, 0) == 1,
          "a failed probe did not double the wait");
    unsigned long long wait = 2 * F;
    for (int i = 0; i < 8; i++) { /* each failed probe doubles the wait, up to the maximum */
        CHECK(elm_pool_adapt_window(&a, t += wait, 0) == 2, "no probe after %llu us", wait);
        CHECK(elm_pool_adapt_window(&a, t += W, C) == 1, "a contended probe kept the worker");
        wait = wait * 2 < ELM_POOL_PROBE_MAX_US ? wait * 2 : ELM_POOL_PROBE_MAX_US;
    }
    CHECK(a.backoff_us == ELM_POOL_PROBE_MAX_US, "the wait grew to %llu us", a.backoff_us);
    CHECK(elm_pool_adapt_window(&a, t += ELM_POOL_PROBE_MAX_US, 0) == 2, "no probe at the maximum");
    CHECK(elm_pool_adapt_window(&a, t += W, 0) == 2, "a quiet window undid a probe");
    CHECK(elm_pool_adapt_window(&a, t += (ELM_POOL_PROBE_WINDOWS - 1) * W, C) == 1 &&
              a.backoff_us == ELM_POOL_PROBE_MAX_US,
          "contention soon after a probe did not count as a failed one");
    CHECK(elm_pool_adapt_window(&a, t += ELM_POOL_PROBE_MAX_US, 0) == 2, "no probe at the maximum");
    t += (ELM_POOL_PROBE_WINDOWS + 1) * W; /* quiet windows: the probe held */
    CHECK(elm_pool_adapt_window(&a, t, C) == 1 && a.backoff_us == F,
          "contention long after a probe did not start the wait afresh (%llu us)", a.backoff_us);
    /* four threads: parks one per contended window; quiet probes then rise window after window */
    elm_pool_adapt b = {.active = 4, .n = 4};
    t = 1000000;
    for (int want = 3; want >= 1; want--)
        CHECK(elm_pool_adapt_window(&b, t += W, 2 * C) == want, "did not park down to %d", want);
    t += F;
    for (int want = 2; want <= 4; want++)
        CHECK(elm_pool_adapt_window(&b, t += W, 0) == want, "did not probe up to %d", want);
    CHECK(elm_pool_adapt_window(&b, t += W, 0) == 4, "rose above the pool size");
}

/* A worker parked by elm_pool_park joins no shared job; a static job unparks it. */
static void check_parking(elm_pool *p, job *j) {
    const double t0 = elm_now_s();
    elm_pool_park(p, 1);
    run_job(p, j, true, 0, 30, "shared job with the worker parked");
    /* the pool probes back ELM_POOL_PROBE_FIRST_US after parking; before that nobody joins */
    if (elm_now_s() - t0 < 1e-6 * ELM_POOL_PROBE_FIRST_US)
        CHECK(!atomic_load(&j->joined), "a parked worker joined a shared job");
    /* hangs if the static job did not unpark the worker (after it, the pool may park again if
     * this machine is busy, so whether the worker joins later jobs is not checked) */
    run_job(p, j, false, 0, 0, "static job with the worker parked");
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
    check_parking(p, j);
    check_adapt();
    free(j);
    elm_pool_free(p);
    return check_done();
}
