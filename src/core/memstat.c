/* Resident memory figures (memstat.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/memstat.h"

elm_mem_usage elm_mem_now(void) {
    elm_mem_usage u = {0, 0};
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return u;
    char line[256];
    long long kib;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %lld kB", &kib) == 1) u.peak_rss = (int64_t)kib * 1024;
        else if (sscanf(line, "RssAnon: %lld kB", &kib) == 1) u.rss_anon = (int64_t)kib * 1024;
    }
    fclose(f);
    return u;
}

struct elm_mem_sampler {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool stop;
    int interval_ms;
    int64_t peak_anon;
};

static void note(elm_mem_sampler *s) {
    const int64_t a = elm_mem_now().rss_anon;
    pthread_mutex_lock(&s->mu);
    if (a > s->peak_anon) s->peak_anon = a;
    pthread_mutex_unlock(&s->mu);
}

static void *sample(void *arg) {
    elm_mem_sampler *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        note(s);
        const struct timespec t = elm_deadline_ms(s->interval_ms);
        pthread_mutex_lock(&s->mu);
        if (!s->stop) pthread_cond_timedwait(&s->wake, &s->mu, &t);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

elm_mem_sampler *elm_mem_sampler_start(int interval_ms) {
    elm_mem_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->interval_ms = interval_ms > 0 ? interval_ms : 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, sample, s) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->wake);
        free(s);
        return NULL;
    }
    return s;
}

elm_mem_usage elm_mem_sampler_stop(elm_mem_sampler *s) {
    elm_mem_usage u = elm_mem_now();
    if (!s) return u;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    if (s->peak_anon > u.rss_anon) u.rss_anon = s->peak_anon;
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->wake);
    free(s);
    return u;
}
