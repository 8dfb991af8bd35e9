/* JSON field readers of the request parsers (see fields.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "server/fields.h"

int srv_bad(char *msg, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return 400;
}

const cJSON *srv_field(const cJSON *o, const char *name) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    return f && !cJSON_IsNull(f) ? f : NULL;
}

bool srv_number(const cJSON *o, const char *name, double lo, double hi, bool integer, double *out,
                char *msg, size_t cap) {
    const cJSON *f = srv_field(o, name);
    if (!f) return true;
    if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) ||
        (integer && f->valuedouble != floor(f->valuedouble))) {
        srv_bad(msg, cap, "%s: expected %s", name, integer ? "an integer" : "a number");
        return false;
    }
    if (f->valuedouble < lo || f->valuedouble > hi) {
        srv_bad(msg, cap, "%s: %g out of range %g..%g", name, f->valuedouble, lo, hi);
        return false;
    }
    *out = f->valuedouble;
    return true;
}

bool srv_boolean(const cJSON *o, const char *name, bool *out, char *msg, size_t cap) {
    const cJSON *f = srv_field(o, name);
    if (!f) return true;
    if (!cJSON_IsBool(f)) {
        srv_bad(msg, cap, "%s: expected true or false", name);
        return false;
    }
    *out = cJSON_IsTrue(f);
    return true;
}
