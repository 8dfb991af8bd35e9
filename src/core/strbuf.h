/* A growing NUL-terminated string: reports, chat prompts, replies, calibration samples. After an
 * allocation failure every call is a no-op, `oom` stays true and elm_sb_finish returns NULL, so
 * callers check once at the end. Zero-initialize to start. Also the fixed-size name lists of
 * messages (elm_list_add, elm_names). */
#ifndef EDGELM_CORE_STRBUF_H
#define EDGELM_CORE_STRBUF_H

#include <pthread.h>
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

/* Appends item to the ", "-separated list in buf[cap] (a NUL-terminated string, "" for none yet),
 * cut short rather than overflowing: the lists of names that messages quote, built from a table. */
void elm_list_add(char *buf, size_t cap, const char *item);

/* Such a list made once, on first use, from a table that does not change: a static elm_names
 * initialized with ELM_NAMES_INIT, read through elm_names_get. */
typedef struct elm_names {
    pthread_mutex_t lock;
    bool built;
    char s[320];
} elm_names;
#define ELM_NAMES_INIT {PTHREAD_MUTEX_INITIALIZER, false, ""}

/* The list of l, which fill(buf, cap) writes with elm_list_add the first time (thread-safe). */
const char *elm_names_get(elm_names *l, void (*fill)(char *buf, size_t cap));

/* A table of n rows, stride bytes apart, each starting with its name (a const char *): the
 * tables of templates, recipes and the like that options name. */
typedef struct elm_named_rows {
    const void *rows;
    size_t n, stride;
} elm_named_rows;
#define ELM_NAMED_ROWS(table) {(table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0])}

/* The index of the row named name (ASCII case-insensitively), or -1 (also for a NULL name). */
long elm_named_find(elm_named_rows t, const char *name);
/* Their names as one list, made on first use into l (as elm_names_get). */
const char *elm_named_list(elm_names *l, elm_named_rows t);

#endif
