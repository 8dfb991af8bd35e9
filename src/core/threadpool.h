/* A persistent thread pool: workers start once per context and wait between jobs, so decode does
 * not pay thread start-up per matmul. A job is fn(arg, ith, nth), the caller being thread 0.
 *
 * elm_pool_run: every thread runs fn, and the call returns when all have finished; for work
 * split statically by ith (elm_split).
 * elm_pool_run_shared: fn runs on the caller and on each worker that picks the job up before the
 * caller's own fn returns; the call returns when those have finished. For work claimed
 * dynamically (elm_pool_work_claim): a worker that is late - descheduled on a busy machine, or on
 * a slower core of a big.LITTLE phone - then neither holds the job up nor leaves its share undone. */
#ifndef EDGELM_CORE_THREADPOOL_H
#define EDGELM_CORE_THREADPOOL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "edgelm/error.h"

typedef struct elm_pool elm_pool;
typedef void (*elm_pool_fn)(void *arg, int ith, int nth);

/* n_threads >= 1 (1 means no workers: jobs run on the caller). */
elm_status elm_pool_new(int n_threads, elm_pool **out, elm_error *err);
void elm_pool_free(elm_pool *p);
int elm_pool_size(const elm_pool *p);
void elm_pool_run(elm_pool *p, elm_pool_fn fn, void *arg);
void elm_pool_run_shared(elm_pool *p, elm_pool_fn fn, void *arg);

/* Parking under contention. When the machine has more runnable threads than cores (a core busy
 * with another program), the scheduler preempts a pool thread every slice, and whichever thread
 * waits for it idles: measured on a 2-core EPYC with one busy loop, -t 2 decoded 10-35% slower
 * than -t 1. The pool counts its threads' involuntary context switches (getrusage RUSAGE_THREAD,
 * where the OS has it) over windows of ELM_POOL_WINDOW_US of shared jobs (a longer gap between
 * jobs scaled to one window): a window with ELM_POOL_CONTENDED switches or more parks one more
 * worker (it sleeps and joins no shared job); a quiet window after probe_at_us unparks one
 * again, to try. Contention within
 * ELM_POOL_PROBE_WINDOWS windows of a probe doubles the wait before the next (from
 * ELM_POOL_PROBE_FIRST_US up to ELM_POOL_PROBE_MAX_US); later contention starts it afresh. Static
 * jobs (elm_pool_run) unpark every worker: they split by ith. */
enum {
    ELM_POOL_WINDOW_US = 20000,
    ELM_POOL_CONTENDED = 10,
    ELM_POOL_PROBE_WINDOWS = 3,
    ELM_POOL_PROBE_FIRST_US = 100000,
    ELM_POOL_PROBE_MAX_US = 1600000,
};

typedef struct elm_pool_adapt {
    int active, n; /* threads that run shared jobs, caller included; pool size */
    unsigned long long probe_at_us, raised_at_us, backoff_us;
} elm_pool_adapt;

/* The parking decision for a window that ended at now_us (microseconds, a monotonic clock that
 * is past ELM_POOL_PROBE_MAX_US) with `switches` involuntary context switches among the active
 * threads; returns the new active count, 1..a->n. Start from {.active = n, .n = n}. */
int elm_pool_adapt_window(elm_pool_adapt *a, unsigned long long now_us, long switches);

/* Parks workers so that `active` threads (caller included, clamped to 1..elm_pool_size) run
 * shared jobs, as a contended window would, the next probe coming ELM_POOL_PROBE_FIRST_US later.
 * What the pool does itself on contention; for tests. */
void elm_pool_park(elm_pool *p, int active);

/* Seconds since the pool started during which some worker was parked (on the caller's clock;
 * call from the thread that runs the jobs). */
double elm_pool_parked_s(const elm_pool *p);

/* The [begin, end) share of n items for thread ith of nth (contiguous, balanced). */
static inline void elm_split(long n, int ith, int nth, long *begin, long *end) {
    long per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra ? 1 : 0);
}

/* Dynamically claimed work of n items (elm_pool_run_shared): the items are split into one
 * contiguous home range per thread, and thread ith claims chunks of its home range first, in
 * order, then whatever is left of the others'. Each thread so streams through its own contiguous
 * rows as with a static split (interleaving chunks between threads measured a third slower in
 * decode), and a late thread's range is done by the others. */
enum { ELM_POOL_MAX_HOMES = 32 };

typedef struct elm_pool_work {
    struct {
        atomic_long next; /* claimed offset into the range */
        char pad[64 - sizeof(atomic_long)];
    } home[ELM_POOL_MAX_HOMES];
    long n;
    int homes;
} elm_pool_work;

static inline void elm_pool_work_init(elm_pool_work *w, long n, int nth) {
    w->n = n;
    w->homes = nth < ELM_POOL_MAX_HOMES ? nth : ELM_POOL_MAX_HOMES;
    for (int i = 0; i < w->homes; i++) atomic_init(&w->home[i].next, 0);
}

/* The next [begin, end) of up to chunk items for thread ith; false when none are left. */
static inline bool elm_pool_work_claim(elm_pool_work *w, int ith, long chunk, long *begin,
                                       long *end) {
    for (int k = 0; k < w->homes; k++) {
        const int r = (ith + k) % w->homes;
        long lo, hi;
        elm_split(w->n, r, w->homes, &lo, &hi);
        const long b = lo + atomic_fetch_add_explicit(&w->home[r].next, chunk, memory_order_relaxed);
        if (b < hi) {
            *begin = b;
            *end = b + chunk < hi ? b + chunk : hi;
            return true;
        }
    }
    return false;
}

#endif
