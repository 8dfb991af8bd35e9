/* JSON field readers of the request parsers (see fields.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "server/fields.h"

#include "core/json_text.h"

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

int srv_parse_body(const char *body, size_t len, cJSON **root, char *msg, size_t cap) {
    *root = NULL;
    if (elm_json_has_nul_escape(body, len))
        return srv_bad(msg, cap, "request body: a string holds \\u0000, which is not supported");
    cJSON *r = cJSON_ParseWithLength(body, len);
    if (!r) return srv_bad(msg, cap, "request body: invalid JSON");
    if (!cJSON_IsObject(r)) {
        cJSON_Delete(r);
        return srv_bad(msg, cap, "request body: expected a JSON object");
    }
    *root = r;
    return 0;
}
