/* Verdicts of the eval report (docs/deployment.md, "Validation before shipping": PPL change < 5% is
 * excellent, generation similarity > 90% acceptable) and the lines the text and Markdown reports
 * share: the description of the run and one verdict line per model. */
#include <string.h>

#include "core/fileio.h"
#include "eval/report.h"

double elm_eval_ppl_change_pct(const elm_eval_report *r, const elm_eval_entry *e) {
    return 100.0 * (e->ppl.ppl / r->baseline.ppl.ppl - 1.0);
}

const char *elm_eval_ppl_verdict(double change_pct) {
    return change_pct < ELM_EVAL_PPL_EXCELLENT_PCT ? "excellent" : "flagged";
}

const char *elm_eval_sim_verdict(double similarity) {
    return similarity > ELM_EVAL_SIM_ACCEPTABLE ? "acceptable" : "flagged";
}

size_t utf8_width(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

void eval_describe(elm_sbuf *b, const elm_eval_report *r) {
    elm_sb_printf(b, "%s: %d chunks of %d tokens, %lld scored tokens", elm_base_name(r->text_path), r->chunks,
              r->n_ctx, (long long)r->scored_tokens);
    if (r->n_prompts > 0)
        elm_sb_printf(b, "; %d prompts, up to %d greedy tokens each", r->n_prompts, r->n_predict);
    elm_sb_printf(b, "; baseline %s", r->baseline.name);
    if (r->type_k != ELM_TYPE_F32 || r->type_v != ELM_TYPE_F32)
        elm_sb_printf(b, "; the models' KV cache %s/%s (the baseline's f32)",
                      elm_type_get(r->type_k)->name, elm_type_get(r->type_v)->name);
}

void eval_verdict_line(elm_sbuf *b, const elm_eval_report *r, const elm_eval_entry *e) {
    const double change = elm_eval_ppl_change_pct(r, e);
    elm_sb_printf(b, "%s: PPL %+.2f%% -> %s (excellent below %.0f%%)", e->name, change,
              elm_eval_ppl_verdict(change), ELM_EVAL_PPL_EXCELLENT_PCT);
    if (e->has_gen)
        elm_sb_printf(b, "; similarity %.1f%% -> %s (acceptable above %.0f%%)", 100 * e->gen.similarity,
                  elm_eval_sim_verdict(e->gen.similarity), 100 * ELM_EVAL_SIM_ACCEPTABLE);
}

void eval_verdict_list(elm_sbuf *b, const elm_eval_report *r, const char *heading,
                       const char *bullet) {
    if (r->n_models > 0) elm_sb_puts(b, heading);
    for (int k = 0; k < r->n_models; k++) {
        elm_sb_puts(b, bullet);
        eval_verdict_line(b, r, &r->models[k]);
        elm_sb_puts(b, "\n");
    }
}
