/* Well-formed UTF-8, as Python's decoder reads it: the checks every parser of text shares
 * (JSON-schema literals, log-probability bytes, token pieces, documents to index). */
#ifndef EDGELM_CORE_UTF8_H
#define EDGELM_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 character at s [n > 0 bytes], or 0 when none starts
 * there: a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short. */
static inline int elm_utf8_len(const unsigned char *s, size_t n) {
    const int len = s[0] < 0x80                    ? 1
                    : s[0] >= 0xC2 && s[0] <= 0xDF ? 2
                    : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                    : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                                   : 0;
    if (!len || (size_t)len > n) return 0;
    for (int i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] >= 0x90))
        return 0;
    return len;
}

/* Whether s [n bytes] is whole, well-formed UTF-8 (n may be 0). */
static inline bool elm_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        const int k = elm_utf8_len(p + i, n - i);
        if (!k) return false;
        i += (size_t)k;
    }
    return true;
}

#endif
