/* A growing NUL-terminated string: reports, chat prompts, replies, calibration samples. After an
 * allocation failure every call is a no-op, `oom` stays true and elm_sb_finish returns NULL, so
 * callers check once at the end. Zero-initialize to start. */
#ifndef EDGELM_CORE_STRBUF_H
#define EDGELM_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct elm_sbuf {
    char *s; /* NULL until something is added */
    size_t len, cap;
    bool oom;
} elm_sbuf;

/* Appends n bytes of p. */
void elm_sb_put(elm_sbuf *b, const char *p, size_t n);
/* Appends the string s. */
void elm_sb_puts(elm_sbuf *b, const char *s);
void elm_sb_printf(elm_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empties the string, keeping its memory, and forgets an earlier allocation failure. */
void elm_sb_clear(elm_sbuf *b);
/* The string (the caller frees it), or NULL after an allocation failure (then freed here). */
char *elm_sb_finish(elm_sbuf *b);

#endif
