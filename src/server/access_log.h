/* One line per answered request for the server's access log (`edgelm serve --log-format`): when it
 * arrived, method, path, status, and for a completion its tokens, time to first token, total time
 * and slot. Text for people, or JSON (one object per line) for log collectors. */
#ifndef EDGELM_SERVER_ACCESS_LOG_H
#define EDGELM_SERVER_ACCESS_LOG_H

#include <stdbool.h>
#include <time.h>

#include "server/scheduler.h"

typedef struct srv_access {
    struct timespec arrived; /* wall clock (CLOCK_REALTIME) */
    const char *method, *path;
    unsigned status;
    double total_ms;            /* from arrival to the end of the response */
    const srv_job_result *job;  /* the completion's result, or NULL (no job, or a stream the
                                   client left before its end) */
} srv_access;

/* The line, without a newline (malloc'd; the caller frees): JSON when json, else
 * "2026-12-04T19:52:00.123Z POST /v1/completions 200 prompt=6 cached=0 gen=5 ttft_ms=1.8
 * total_ms=9.5 slot=0 finish=length". NULL when out of memory. */
char *srv_access_line(const srv_access *a, bool json);

#endif
