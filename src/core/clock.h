/* The one monotonic clock every timing in edgelm reads (stats lines, ETAs, the pool's spin
 * budget, benchmarks): never goes backwards, unaffected by wall-clock changes. */
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

#endif
