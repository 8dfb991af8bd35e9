/* The one monotonic clock every timing in edgelm reads (stats lines, ETAs, the pool's spin
 * budget, benchmarks): never goes backwards, unaffected by wall-clock changes. And the deadlines
 * of timed waits, which pthread's default condition variables take on the wall clock. */
#ifndef EDGELM_CORE_CLOCK_H
#define EDGELM_CORE_CLOCK_H

#include <time.h>

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC), with nanosecond resolution. */
static inline double elm_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Milliseconds on the same clock. */
static inline double elm_now_ms(void) { return elm_now_s() * 1e3; }

/* The CLOCK_REALTIME time ms milliseconds from now: the deadline pthread_cond_timedwait takes
 * (its condition variables' default clock). */
static inline struct timespec elm_deadline_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += ms % 1000 * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

#endif
