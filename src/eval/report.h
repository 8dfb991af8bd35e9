/* Private helpers of the eval report renderers: a growing string, and the metric table that the
 * terminal and Markdown renderers lay out in their own syntax. */
#ifndef EDGELM_EVAL_REPORT_H
#define EDGELM_EVAL_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "edgelm/eval.h"

/* Growing NUL-terminated string; after an allocation failure every call is a no-op and
 * sb_finish returns NULL. */
typedef struct {
    char *s;
    size_t len, cap;
    bool oom;
} sbuf;

void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_puts(sbuf *b, const char *s);
/* The string (caller frees), or NULL after an allocation failure. */
char *sb_finish(sbuf *b);

/* The comparison as a grid of cells: row 0 is the header ("metric", baseline, then value and
 * change per model); column 0 names the metric. */
typedef struct {
    int rows, cols;
    char **cells; /* [rows * cols], owned; "" where empty */
    bool *numeric; /* [cols] right-aligned */
    bool oom;
} eval_table;

/* Builds the table; NULL when out of memory. */
eval_table *eval_table_build(const elm_eval_report *r);
void eval_table_free(eval_table *t);
const char *eval_table_cell(const eval_table *t, int row, int col);

/* The run's one-line description ("valid.txt: 221 chunks of 256 tokens, ...") and one verdict
 * line per model, shared by the text and Markdown reports. */
void eval_describe(sbuf *b, const elm_eval_report *r);
void eval_verdict_line(sbuf *b, const elm_eval_report *r, const elm_eval_entry *e);

/* Display width of UTF-8 text in code points. */
size_t utf8_width(const char *s);

#endif
