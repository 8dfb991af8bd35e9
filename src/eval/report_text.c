/* The terminal report: the metric table with aligned columns, then one verdict line per model. */
#include <stdlib.h>

#include "eval/report.h"

static void pad(elm_sbuf *b, size_t n) {
    for (size_t i = 0; i < n; i++) elm_sb_puts(b, " ");
}

char *elm_report_text(const elm_eval_report *r) {
    eval_table *t = eval_table_build(r);
    size_t *width = t ? calloc((size_t)t->cols, sizeof(size_t)) : NULL;
    if (!width) {
        eval_table_free(t);
        return NULL;
    }
    for (int row = 0; row < t->rows; row++)
        for (int c = 0; c < t->cols; c++) {
            const size_t w = utf8_width(eval_table_cell(t, row, c));
            width[c] = w > width[c] ? w : width[c];
        }
    elm_sbuf b = {0};
    elm_sb_puts(&b, "edgelm eval: ");
    eval_describe(&b, r);
    elm_sb_puts(&b, "\n\n");
    for (int row = 0; row < t->rows; row++) {
        for (int c = 0; c < t->cols; c++) {
            const char *s = eval_table_cell(t, row, c);
            const size_t gap = width[c] - utf8_width(s);
            if (c > 0) elm_sb_puts(&b, " | ");
            if (t->numeric[c] && row > 0) pad(&b, gap);
            elm_sb_puts(&b, s);
            if (!(t->numeric[c] && row > 0) && c + 1 < t->cols) pad(&b, gap);
        }
        while (!b.oom && b.len > 0 && b.s[b.len - 1] == ' ') b.len--; /* empty change cells */
        elm_sb_puts(&b, "\n");
        if (row == 0) {
            for (int c = 0; c < t->cols; c++) {
                if (c > 0) elm_sb_puts(&b, "-+-");
                for (size_t i = 0; i < width[c]; i++) elm_sb_puts(&b, "-");
            }
            elm_sb_puts(&b, "\n");
        }
    }
    eval_verdict_list(&b, r, "\nverdicts:\n", "  ");
    free(width);
    eval_table_free(t);
    return elm_sb_finish(&b);
}
