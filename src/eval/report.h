/* Private helpers of the eval report renderers: the metric table that the
 * terminal and Markdown renderers lay out in their own syntax. */
#ifndef EDGELM_EVAL_REPORT_H
#define EDGELM_EVAL_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "edgelm/eval.h"

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
void eval_describe(elm_sbuf *b, const elm_eval_report *r);
void eval_verdict_line(elm_sbuf *b, const elm_eval_report *r, const elm_eval_entry *e);

/* The verdict of every model, one line each after `bullet`, under `heading` (nothing without
 * models). */
void eval_verdict_list(elm_sbuf *b, const elm_eval_report *r, const char *heading,
                       const char *bullet);

/* Display width of UTF-8 text in code points. */
size_t utf8_width(const char *s);

#endif
