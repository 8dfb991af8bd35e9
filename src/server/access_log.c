/* Access log lines (see access_log.h). The path comes from the client: in the text form its bytes
 * outside printable ASCII, and spaces, are written %XX so that a line stays one line of
 * space-separated fields; in JSON cJSON escapes it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "core/strbuf.h"
#include "server/access_log.h"

/* ISO 8601 in UTC with milliseconds. */
static void iso_time(struct timespec t, char out[32]) {
    struct tm tm;
    gmtime_r(&t.tv_sec, &tm);
    const size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03ldZ", t.tv_nsec / 1000000L);
}

/* Milliseconds to the microsecond: enough for a log, and short. */
static double ms(double v) { return round(v * 1e3) / 1e3; }

static char *json_line(const srv_access *a, const char *when) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "time", when);
    cJSON_AddStringToObject(o, "method", a->method);
    cJSON_AddStringToObject(o, "path", a->path);
    cJSON_AddNumberToObject(o, "status", a->status);
    const srv_job_result *r = a->job;
    if (r) {
        cJSON_AddNumberToObject(o, "prompt_tokens", r->prompt_tokens);
        cJSON_AddNumberToObject(o, "cached_tokens", r->cached_tokens);
        cJSON_AddNumberToObject(o, "completion_tokens", r->completion_tokens);
        cJSON_AddNumberToObject(o, "ttft_ms", ms(r->ttft_ms));
    }
    cJSON_AddNumberToObject(o, "total_ms", ms(a->total_ms));
    if (r) {
        if (r->slot >= 0) cJSON_AddNumberToObject(o, "slot", r->slot);
        cJSON_AddStringToObject(o, "finish_reason", r->finish_reason ? r->finish_reason : "");
    }
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return line;
}

static char *text_line(const srv_access *a, const char *when) {
    elm_sbuf b = {0};
    elm_sb_printf(&b, "%s %s ", when, a->method);
    for (const unsigned char *p = (const unsigned char *)a->path; *p; p++)
        if (*p > ' ' && *p < 0x7f && *p != '%') elm_sb_put(&b, (const char *)p, 1);
        else elm_sb_printf(&b, "%%%02X", *p);
    elm_sb_printf(&b, " %u", a->status);
    const srv_job_result *r = a->job;
    if (r)
        elm_sb_printf(&b, " prompt=%d cached=%d gen=%d ttft_ms=%.1f", r->prompt_tokens,
                      r->cached_tokens, r->completion_tokens, r->ttft_ms);
    elm_sb_printf(&b, " total_ms=%.1f", a->total_ms);
    if (r) {
        if (r->slot >= 0) elm_sb_printf(&b, " slot=%d", r->slot);
        elm_sb_printf(&b, " finish=%s", r->finish_reason ? r->finish_reason : "-");
    }
    return elm_sb_finish(&b);
}

char *srv_access_line(const srv_access *a, bool json) {
    char when[32];
    iso_time(a->arrived, when);
    return json ? json_line(a, when) : text_line(a, when);
}
