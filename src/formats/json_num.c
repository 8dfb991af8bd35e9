/* Exact integer extraction from cJSON numbers (see json_num.h). */
#include "formats/json_num.h"

bool elm_json_uint(const cJSON *item, uint64_t max, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return false;
    double d = item->valuedouble;
    /* The range test comes first so the cast below is defined (NaN fails every comparison). */
    if (!(d >= 0.0 && d <= (double)max) || d != (double)(uint64_t)d) return false;
    *out = (uint64_t)d;
    return true;
}
