/* The growing string of strbuf.h. */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Room for `more` bytes and the NUL; false (and oom) when it cannot be had. */
static bool reserve(elm_sbuf *b, size_t more) {
    if (b->oom) return false;
    if (b->len + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
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

void elm_sb_put(elm_sbuf *b, const char *p, size_t n) {
    if (!reserve(b, n)) return;
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void elm_sb_puts(elm_sbuf *b, const char *s) { elm_sb_put(b, s, strlen(s)); }

void elm_sb_printf(elm_sbuf *b, const char *fmt, ...) {
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

void elm_sb_clear(elm_sbuf *b) {
    b->len = 0;
    b->oom = false;
    if (b->s) b->s[0] = '\0';
}

char *elm_sb_finish(elm_sbuf *b) {
    if (!reserve(b, 0)) {
        free(b->s);
        b->s = NULL;
        return NULL;
    }
    b->s[b->len] = '\0';
    return b->s;
}

void elm_list_add(char *buf, size_t cap, const char *item) {
    const size_t len = strnlen(buf, cap);
    if (len + 1 < cap) snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", item);
}

static const char *row_name(elm_named_rows t, size_t i) {
    const char *name;
    memcpy(&name, (const char *)t.rows + i * t.stride, sizeof name);
    return name;
}

static const char *names_once(elm_names *l, void (*fill)(char *, size_t), const elm_named_rows *t) {
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; !l->built && t && i < t->n; i++) elm_list_add(l->s, sizeof l->s, row_name(*t, i));
    if (!l->built && fill) fill(l->s, sizeof l->s);
    l->built = true;
    pthread_mutex_unlock(&l->lock);
    return l->s;
}

const char *elm_names_get(elm_names *l, void (*fill)(char *buf, size_t cap)) {
    return names_once(l, fill, NULL);
}

const char *elm_named_list(elm_names *l, elm_named_rows t) { return names_once(l, NULL, &t); }

long elm_named_find(elm_named_rows t, const char *name) {
    for (size_t i = 0; name && i < t.n; i++)
        if (!strcasecmp(name, row_name(t, i))) return (long)i;
    return -1;
}
