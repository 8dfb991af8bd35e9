/* The Markdown report (`--markdown FILE`): a heading, the run's description, the metric table
 * and the verdict list. */
#include <string.h>

#include "eval/report.h"

/* Table cells may hold file names: '|' would end the cell. */
static void cell(elm_sbuf *b, const char *s) {
    for (const char *bar; (bar = strchr(s, '|')); s = bar + 1) {
        elm_sb_printf(b, "%.*s\\|", (int)(bar - s), s);
    }
    elm_sb_puts(b, s);
}

char *elm_report_markdown(const elm_eval_report *r) {
    eval_table *t = eval_table_build(r);
    if (!t) return NULL;
    elm_sbuf b = {0};
    elm_sb_puts(&b, "# edgelm eval\n\n");
    eval_describe(&b, r);
    elm_sb_puts(&b, ".\n\n");
    for (int row = 0; row < t->rows; row++) {
        elm_sb_puts(&b, "|");
        for (int c = 0; c < t->cols; c++) {
            elm_sb_puts(&b, " ");
            cell(&b, eval_table_cell(t, row, c));
            elm_sb_puts(&b, " |");
        }
        elm_sb_puts(&b, "\n");
        if (row == 0) {
            elm_sb_puts(&b, "|");
            for (int c = 0; c < t->cols; c++) elm_sb_puts(&b, t->numeric[c] ? "---:|" : ":---|");
            elm_sb_puts(&b, "\n");
        }
    }
    eval_verdict_list(&b, r, "\n## Verdicts\n\n", "- ");
    eval_table_free(t);
    return elm_sb_finish(&b);
}
