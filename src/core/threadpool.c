/* Persistent thread pool (see threadpool.h).
 *
 * A job is published through one atomic word, the gate: its high half is the job's sequence
 * number, the low half a count of the workers that joined it (shared jobs) and two flags. Decode
 * issues a hundred or more small jobs per token, a few microseconds apart, so a waiting thread
 * first spins on the gate for up to SPIN_US (a wake-up through the kernel would cost more than
 * the gap), then sleeps on a condition variable. The spin is bounded in time, not in iterations,
 * because pause lasts 10 to 140 cycles depending on the CPU; and it is short, because on a
 * machine with more runnable threads than cores a spinning thread holds up the very thread it
 * waits for (sleeping lets the scheduler's wake-up preemption run it at once; yielding would send
 * the spinner to the back of the queue for a whole time slice). The publisher takes the mutex only
 * when someone sleeps: the counters are sequentially consistent atomics, so either the publisher
 * sees the sleeper's count or the sleeper sees the new gate before it waits.
 *
 * Static jobs (elm_pool_run): every worker runs fn once; the caller waits for the pending count to
 * reach zero. Shared jobs (elm_pool_run_shared): a worker joins by incrementing the count with a
 * compare-and-swap that fails once the caller has closed the gate (its own fn returned, so no work
 * is left to claim); the caller waits only for the workers that joined. A late worker touches no
 * job data.
 *
 * Parking (threadpool.h): a worker with ith >= active skips shared jobs and sleeps on `unpark`
 * until active rises (or a static job, which needs every worker, raises it). Each worker
 * publishes its count of involuntary context switches at most every half window; the caller sums
 * them with its own once per window, at the start of a shared job, and decides. */
#include "core/clock.h"
#include "core/threadpool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

enum { SPIN_US = 50, CHECK_CLOCK_EVERY = 64 };

/* The gate: [63:32] job sequence, bit 31 closed, bit 30 static job, [29:0] workers joined. */
#define GATE_SEQ(g) ((g) >> 32)
#define GATE_CLOSED 0x80000000ull
#define GATE_STATIC 0x40000000ull
#define GATE_COUNT 0x3fffffffull

typedef struct {
    struct elm_pool *p;
    int ith;
    atomic_long switches; /* involuntary context switches, as last published (every 10 ms) */
} worker_arg;

struct elm_pool {
    int n;
    pthread_t *threads;
    worker_arg *args;
    pthread_mutex_t mu;
    pthread_cond_t wake, done, unpark;
    _Atomic uint64_t gate;
    atomic_int pending;       /* static job: workers still running it */
    atomic_uint finished;     /* shared job: workers that joined and are done */
    unsigned joined;          /* shared job: workers that joined (the caller's copy) */
    atomic_int sleepers;      /* workers blocked (or about to block) on `wake` */
    atomic_bool caller_waits; /* the caller blocked (or about to block) on `done` */
    atomic_bool stop;
    atomic_int active;        /* threads that run shared jobs, caller included */
    elm_pool_adapt adapt;     /* the caller's: parking decisions */
    uint64_t window_end_us;   /* the caller's: when the current window ends */
    uint64_t parked_us;       /* the caller's: time with a worker parked, before parked_at_us */
    uint64_t parked_at_us;    /* the caller's: when the current spell of parking began */
    long window_switches;     /* the caller's: the sum of the counts at its start */
    elm_pool_fn fn;
    void *arg;
};

static uint64_t now_us(void) { return (uint64_t)(elm_now_s() * 1e6); }

/* This thread's involuntary context switches so far; 0 where the OS does not count per thread. */
static long involuntary_switches(void) {
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
    return 0;
}

int elm_pool_adapt_window(elm_pool_adapt *a, unsigned long long now_us, long switches) {
    if (switches < ELM_POOL_CONTENDED) {
        if (a->active < a->n && now_us >= a->probe_at_us) {
            a->active++;
            a->raised_at_us = now_us;
        }
    } else if (a->active > 1) {
        const unsigned long long since = now_us - a->raised_at_us;
        const bool failed_probe =
            a->raised_at_us && since <= ELM_POOL_PROBE_WINDOWS * ELM_POOL_WINDOW_US;
        a->backoff_us = !failed_probe ? ELM_POOL_PROBE_FIRST_US
                        : a->backoff_us * 2 < ELM_POOL_PROBE_MAX_US ? a->backoff_us * 2
                                                                     : ELM_POOL_PROBE_MAX_US;
        a->active--;
        a->probe_at_us = now_us + a->backoff_us;
    }
    return a->active;
}

/* Sets the count of threads that run shared jobs; wakes the workers it unparks. */
static void set_active(elm_pool *p, int active) {
    const int was = atomic_exchange(&p->active, active);
    if (was == p->n && active < p->n) p->parked_at_us = now_us();
    if (was < p->n && active == p->n) p->parked_us += now_us() - p->parked_at_us;
    if (active <= was) return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->unpark);
    pthread_mutex_unlock(&p->mu);
}

/* Sleeps while worker ith is parked. */
static void park(elm_pool *p, int ith) {
    pthread_mutex_lock(&p->mu);
    while (ith >= atomic_load(&p->active) && !atomic_load(&p->stop))
        pthread_cond_wait(&p->unpark, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* The caller, at the start of a shared job: decides once per window. A window is the time since
 * the last decision, at least ELM_POOL_WINDOW_US and longer when no shared job came (between
 * requests of a server, say), so its count is scaled to ELM_POOL_WINDOW_US. */
static void adapt(elm_pool *p) {
    const uint64_t t = now_us();
    if (t < p->window_end_us) return;
    long sum = involuntary_switches();
    for (int i = 1; i < p->n; i++)
        sum += atomic_load_explicit(&p->args[i].switches, memory_order_relaxed);
    if (p->window_end_us) {
        const uint64_t span = t - (p->window_end_us - ELM_POOL_WINDOW_US);
        const uint64_t n = (uint64_t)(sum - p->window_switches);
        const long scaled = (long)(n * ELM_POOL_WINDOW_US / span);
        set_active(p, elm_pool_adapt_window(&p->adapt, t, scaled));
    }
    p->window_switches = sum;
    p->window_end_us = t + ELM_POOL_WINDOW_US;
}

/* Spins until cond(p, seen) holds or SPIN_US pass; returns whether it holds. */
static bool spin_until(elm_pool *p, bool (*cond)(elm_pool *, uint64_t), uint64_t seen) {
    uint64_t deadline = 0;
    for (unsigned i = 0;; i++) {
        if (cond(p, seen)) return true;
        if (i % CHECK_CLOCK_EVERY == 0) {
            const uint64_t t = now_us();
            if (!deadline) deadline = t + SPIN_US;
            else if (t >= deadline) return cond(p, seen);
        }
        cpu_relax();
    }
}

static bool job_ready(elm_pool *p, uint64_t seen) {
    return GATE_SEQ(atomic_load(&p->gate)) != seen || atomic_load(&p->stop);
}

static bool job_done(elm_pool *p, uint64_t shared) {
    return shared ? atomic_load(&p->finished) == p->joined : atomic_load(&p->pending) == 0;
}

/* Waits for a job with another sequence than seen; returns the gate (or anything on stop). */
static uint64_t wait_for_job(elm_pool *p, uint64_t seen) {
    if (!spin_until(p, job_ready, seen)) {
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->sleepers, 1);
        while (!job_ready(p, seen)) pthread_cond_wait(&p->wake, &p->mu);
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->mu);
    }
    return atomic_load(&p->gate);
}

static void wake_caller(elm_pool *p) {
    if (!atomic_load(&p->caller_waits)) return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
}

/* Joins shared job seq unless it is closed or over; true if joined. */
static bool join(elm_pool *p, uint64_t g, uint64_t seq) {
    while (GATE_SEQ(g) == seq && !(g & GATE_CLOSED))
        if (atomic_compare_exchange_weak(&p->gate, &g, g + 1)) return true;
    return false;
}

static void *worker(void *v) {
    worker_arg *wa = v;
    elm_pool *p = wa->p;
    uint64_t seen = 0, published_us = 0;
    for (;;) {
        const uint64_t g = wait_for_job(p, seen);
        if (atomic_load(&p->stop)) break;
        seen = GATE_SEQ(g);
        if (g & GATE_STATIC) {
            p->fn(p->arg, wa->ith, p->n);
            if (atomic_fetch_sub(&p->pending, 1) == 1) wake_caller(p);
        } else if (wa->ith >= atomic_load(&p->active)) {
            park(p, wa->ith);
        } else if (join(p, g, seen)) {
            p->fn(p->arg, wa->ith, p->n);
            atomic_fetch_add(&p->finished, 1);
            wake_caller(p);
            const uint64_t t = now_us();
            if (t - published_us >= ELM_POOL_WINDOW_US / 2) {
                atomic_store_explicit(&wa->switches, involuntary_switches(), memory_order_relaxed);
                published_us = t;
            }
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
    pthread_cond_init(&p->unpark, NULL);
    atomic_init(&p->gate, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_waits, false);
    atomic_init(&p->stop, false);
    atomic_init(&p->active, n_threads);
    p->adapt = (elm_pool_adapt){.active = n_threads, .n = n_threads};
    p->n = 1;
    for (int i = 1; i < n_threads; i++) {
        p->args[i].p = p;
        p->args[i].ith = i;
        atomic_init(&p->args[i].switches, 0);
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
    pthread_cond_broadcast(&p->unpark);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->unpark);
    free(p->threads);
    free(p->args);
    free(p);
}

int elm_pool_size(const elm_pool *p) { return p->n; }

double elm_pool_parked_s(const elm_pool *p) {
    const bool parked = atomic_load(&p->active) < p->n;
    return 1e-6 * (double)(p->parked_us + (parked ? now_us() - p->parked_at_us : 0));
}

void elm_pool_park(elm_pool *p, int active) {
    active = active < 1 ? 1 : active > p->n ? p->n : active;
    p->adapt = (elm_pool_adapt){.active = active, .n = p->n, .backoff_us = ELM_POOL_PROBE_FIRST_US,
                                .probe_at_us = now_us() + ELM_POOL_PROBE_FIRST_US};
    set_active(p, active);
}

/* Publishes job fn(arg) (static or shared), runs the caller's part and waits for the workers. */
static void run(elm_pool *p, elm_pool_fn fn, void *arg, bool shared) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    if (shared) adapt(p);
    else if (atomic_load(&p->active) < p->n) elm_pool_park(p, p->n);
    p->fn = fn;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    atomic_store(&p->finished, 0);
    const uint64_t seq = GATE_SEQ(atomic_load(&p->gate)) + 1;
    atomic_store(&p->gate, seq << 32 | (shared ? 0 : GATE_STATIC));
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    if (shared) p->joined = (unsigned)(atomic_fetch_or(&p->gate, GATE_CLOSED) & GATE_COUNT);
    if (spin_until(p, job_done, shared)) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_waits, true);
    while (!job_done(p, shared)) pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->caller_waits, false);
    pthread_mutex_unlock(&p->mu);
}

void elm_pool_run(elm_pool *p, elm_pool_fn fn, void *arg) { run(p, fn, arg, false); }

void elm_pool_run_shared(elm_pool *p, elm_pool_fn fn, void *arg) { run(p, fn, arg, true); }
