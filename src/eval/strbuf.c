/* The growing string the report renderers write into (see report.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report.h"

static bool reserve(sbuf *b, size_t more) {
    if (b->oom) return false;
    if (b->len + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}

void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sb_puts(sbuf *b, const char *s) {
    const size_t n = strlen(s);
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

char *sb_finish(sbuf *b) {
    if (b->oom || !reserve(b, 0)) {
        free(b->s);
        return NULL;
    }
    b->s[b->len] = '\0';
    return b->s;
}
