/* What cJSON's parsed values lose of a JSON text, for the parsers that must refuse it. */
#ifndef EDGELM_CORE_JSON_TEXT_H
#define EDGELM_CORE_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Whether JSON text s [n bytes] has a \u0000 escape in a string: cJSON cuts the string there, so
 * a name or value would be a shorter one than the client sent (a function "a\u0000b" taken as
 * "a"). */
static inline bool elm_json_has_nul_escape(const char *s, size_t n) {
    bool in = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') in = !in;
        else if (in && s[i] == '\\' && ++i < n && s[i] == 'u' && i + 4 < n &&
                 !memcmp(s + i + 1, "0000", 4))
            return true;
    }
    return false;
}

#endif
