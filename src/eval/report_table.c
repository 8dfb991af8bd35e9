/* The metric table of the eval report: one row per metric, one column for the baseline, then a
 * value and a change column per quantized model. The terminal and Markdown renderers only lay
 * this grid out. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report.h"

static void set(eval_table *t, int row, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set(eval_table *t, int row, int col, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **cell = &t->cells[row * t->cols + col];
    free(*cell);
    *cell = strdup(buf);
    t->oom |= !*cell;
}

/* A value with its ± when it has one; exact zeros (the baseline against itself) print as "0". */
static void set_pm(eval_table *t, int row, int col, int prec, double v, double se) {
    if (v == 0 && se == 0) set(t, row, col, "0");
    else if (se > 0) set(t, row, col, "%.*f ± %.*f", prec, v, prec, se);
    else set(t, row, col, "%.*f", prec, v);
}

/* Sizes from a few hundred KiB (test models) to many GiB keep about four significant digits. */
static int size_prec(double mib) { return mib >= 100 ? 1 : mib >= 1 ? 2 : 3; }

typedef enum { CH_NONE, CH_REL, CH_PTS } change_kind;

/* One metric row: its value for the baseline and every model, and the change column. */
typedef struct {
    const char *label;
    int prec;      /* decimals; -1: by size */
    change_kind change;
    double (*value)(const elm_eval_entry *e);
    double (*stderr_of)(const elm_eval_entry *e); /* NULL: no ± */
} metric;

static double v_size(const elm_eval_entry *e) { return e->size_mib; }
static double v_ppl(const elm_eval_entry *e) { return e->ppl.ppl; }
static double v_ppl_se(const elm_eval_entry *e) { return e->ppl.ppl_stderr; }
static double v_kld(const elm_eval_entry *e) { return e->kld.kld_mean; }
static double v_kld_se(const elm_eval_entry *e) { return e->kld.kld_stderr; }
static double v_kld_med(const elm_eval_entry *e) { return e->kld.kld_median; }
static double v_kld_p99(const elm_eval_entry *e) { return e->kld.kld_p99; }
static double v_kld_max(const elm_eval_entry *e) { return e->kld.kld_max; }
static double v_top1(const elm_eval_entry *e) { return e->kld.top1_pct; }
static double v_top5(const elm_eval_entry *e) { return e->kld.top5_overlap_pct; }
static double v_rms(const elm_eval_entry *e) { return e->kld.rms_dp_pct; }
static double v_sim(const elm_eval_entry *e) { return 100 * e->gen.similarity; }
static double v_exact(const elm_eval_entry *e) { return 100 * e->gen.exact_match_rate; }
static double v_complete(const elm_eval_entry *e) { return 100 * e->gen.completion_rate; }
static double v_chars(const elm_eval_entry *e) { return e->gen.avg_chars; }

/* The rows from the scored chunks (size, likelihood, next-token distributions), then those
 * from the greedy continuations, which a report has only when it ran prompts. */
static const metric CHUNK_METRICS[] = {
    {"size (MiB)", -1, CH_REL, v_size, NULL},
    {"perplexity", 4, CH_REL, v_ppl, v_ppl_se},
    {"KLD mean", 6, CH_NONE, v_kld, v_kld_se},
    {"KLD median", 6, CH_NONE, v_kld_med, NULL},
    {"KLD p99", 6, CH_NONE, v_kld_p99, NULL},
    {"KLD max", 6, CH_NONE, v_kld_max, NULL},
    {"top-1 agreement (%)", 2, CH_NONE, v_top1, NULL},
    {"top-5 overlap (%)", 2, CH_NONE, v_top5, NULL},
    {"RMS Δp (%)", 3, CH_NONE, v_rms, NULL},
};
static const metric GEN_METRICS[] = {
    {"similarity (%)", 2, CH_NONE, v_sim, NULL},
    {"exact match (%)", 1, CH_NONE, v_exact, NULL},
    {"completion (%)", 1, CH_PTS, v_complete, NULL},
    {"avg length (chars)", 1, CH_REL, v_chars, NULL},
};
#define N_CHUNK_METRICS ((int)(sizeof CHUNK_METRICS / sizeof CHUNK_METRICS[0]))
#define N_GEN_METRICS ((int)(sizeof GEN_METRICS / sizeof GEN_METRICS[0]))

static void fill_metric(eval_table *t, int row, const metric *mt, const elm_eval_report *r) {
    set(t, row, 0, "%s", mt->label);
    for (int k = -1; k < r->n_models; k++) {
        const elm_eval_entry *e = k < 0 ? &r->baseline : &r->models[k];
        const int col = k < 0 ? 1 : 2 + 2 * k;
        const double v = mt->value(e), base = mt->value(&r->baseline);
        const int prec = mt->prec >= 0 ? mt->prec : size_prec(v);
        set_pm(t, row, col, prec, v, mt->stderr_of ? mt->stderr_of(e) : 0);
        if (k < 0) continue;
        if (mt->change == CH_REL && base != 0) set(t, row, col + 1, "%+.2f%%", 100 * (v / base - 1));
        else if (mt->change == CH_PTS) set(t, row, col + 1, "%+.1f pts", v - base);
    }
}

eval_table *eval_table_build(const elm_eval_report *r) {
    const bool gen = r->n_prompts > 0;
    const int n_rows = 1 + N_CHUNK_METRICS + (gen ? N_GEN_METRICS : 0) + 1 + gen; /* + verdicts */
    eval_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->rows = n_rows;
    t->cols = 2 + 2 * r->n_models;
    t->cells = calloc((size_t)t->rows * (size_t)t->cols, sizeof(char *));
    t->numeric = calloc((size_t)t->cols, sizeof(bool));
    if (!t->cells || !t->numeric) {
        eval_table_free(t);
        return NULL;
    }
    for (int c = 1; c < t->cols; c++) t->numeric[c] = true;
    set(t, 0, 0, "metric");
    set(t, 0, 1, "%s (baseline)", r->baseline.name);
    for (int k = 0; k < r->n_models; k++) {
        set(t, 0, 2 + 2 * k, "%s", r->models[k].name);
        set(t, 0, 3 + 2 * k, "change");
    }
    int row = 1;
    for (int i = 0; i < N_CHUNK_METRICS; i++) fill_metric(t, row++, &CHUNK_METRICS[i], r);
    for (int i = 0; gen && i < N_GEN_METRICS; i++) fill_metric(t, row++, &GEN_METRICS[i], r);
    set(t, row, 0, "PPL verdict (< %.0f%%)", ELM_EVAL_PPL_EXCELLENT_PCT);
    if (gen) set(t, row + 1, 0, "similarity verdict (> %.0f%%)", 100 * ELM_EVAL_SIM_ACCEPTABLE);
    for (int k = 0; k < r->n_models; k++) {
        const elm_eval_entry *e = &r->models[k];
        set(t, row, 2 + 2 * k, "%s", elm_eval_ppl_verdict(elm_eval_ppl_change_pct(r, e)));
        if (gen && e->has_gen) set(t, row + 1, 2 + 2 * k, "%s", elm_eval_sim_verdict(e->gen.similarity));
    }
    for (int i = 0; i < t->rows * t->cols && !t->oom; i++)
        if (!t->cells[i]) set(t, i / t->cols, i % t->cols, "%s", "");
    if (t->oom) {
        eval_table_free(t);
        return NULL;
    }
    return t;
}

void eval_table_free(eval_table *t) {
    if (!t) return;
    for (int i = 0; t->cells && i < t->rows * t->cols; i++) free(t->cells[i]);
    free(t->cells);
    free(t->numeric);
    free(t);
}

const char *eval_table_cell(const eval_table *t, int row, int col) {
    return t->cells[row * t->cols + col];
}
