/* The machine-readable report (`--json`), described by docs/eval.schema.json: the run, the
 * thresholds, the baseline, and per model ref_ppl, ppl, ppl_change_pct, the KLD statistics,
 * top1_pct, top5_overlap_pct, rms_dp_pct, the generation figures (null without prompts) and the
 * verdicts. Rates and similarity are fractions in [0, 1]; *_pct fields are percentages. */
#include <cjson/cJSON.h>

#include "edgelm/eval.h"

static void add_num_or_null(cJSON *o, const char *key, bool present, double v) {
    if (present) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* Fields every entry has: identity, size, perplexity and the generation figures. */
static void add_common(cJSON *o, const elm_eval_entry *e) {
    cJSON_AddStringToObject(o, "name", e->name);
    cJSON_AddStringToObject(o, "path", e->path);
    cJSON_AddNumberToObject(o, "size_mib", e->size_mib);
    cJSON_AddNumberToObject(o, "ppl", e->ppl.ppl);
    cJSON_AddNumberToObject(o, "ppl_stderr", e->ppl.ppl_stderr);
    add_num_or_null(o, "completion_rate", e->has_gen, e->gen.completion_rate);
    add_num_or_null(o, "avg_length", e->has_gen, e->gen.avg_chars);
    add_num_or_null(o, "avg_tokens", e->has_gen, e->gen.avg_tokens);
}

static void add_model(cJSON *arr, const elm_eval_report *r, const elm_eval_entry *e) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddItemToArray(arr, o);
    add_common(o, e);
    const double change = elm_eval_ppl_change_pct(r, e);
    cJSON_AddNumberToObject(o, "ref_ppl", r->baseline.ppl.ppl);
    cJSON_AddNumberToObject(o, "ppl_change_pct", change);
    cJSON_AddNumberToObject(o, "kld_mean", e->kld.kld_mean);
    cJSON_AddNumberToObject(o, "kld_stderr", e->kld.kld_stderr);
    cJSON_AddNumberToObject(o, "kld_median", e->kld.kld_median);
    cJSON_AddNumberToObject(o, "kld_p99", e->kld.kld_p99);
    cJSON_AddNumberToObject(o, "kld_max", e->kld.kld_max);
    cJSON_AddNumberToObject(o, "top1_pct", e->kld.top1_pct);
    cJSON_AddNumberToObject(o, "top5_overlap_pct", e->kld.top5_overlap_pct);
    cJSON_AddNumberToObject(o, "rms_dp_pct", e->kld.rms_dp_pct);
    add_num_or_null(o, "similarity", e->has_gen, e->gen.similarity);
    add_num_or_null(o, "exact_match_rate", e->has_gen, e->gen.exact_match_rate);
    cJSON *v = cJSON_AddObjectToObject(o, "verdicts");
    cJSON_AddStringToObject(v, "ppl", elm_eval_ppl_verdict(change));
    if (e->has_gen) cJSON_AddStringToObject(v, "similarity", elm_eval_sim_verdict(e->gen.similarity));
    else cJSON_AddNullToObject(v, "similarity");
}

char *elm_report_json(const elm_eval_report *r) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "text", r->text_path);
    cJSON_AddNumberToObject(o, "n_ctx", r->n_ctx);
    cJSON_AddNumberToObject(o, "chunks", r->chunks);
    cJSON_AddNumberToObject(o, "scored_tokens", (double)r->scored_tokens);
    cJSON_AddNumberToObject(o, "prompts", r->n_prompts);
    cJSON_AddNumberToObject(o, "n_predict", r->n_predict);
    cJSON_AddStringToObject(o, "cache_type_k", elm_type_get(r->type_k)->name);
    cJSON_AddStringToObject(o, "cache_type_v", elm_type_get(r->type_v)->name);
    cJSON *th = cJSON_AddObjectToObject(o, "thresholds");
    cJSON_AddNumberToObject(th, "ppl_change_pct", ELM_EVAL_PPL_EXCELLENT_PCT);
    cJSON_AddNumberToObject(th, "similarity", ELM_EVAL_SIM_ACCEPTABLE);
    cJSON_AddNumberToObject(th, "completion_chars", ELM_EVAL_COMPLETE_CHARS);
    add_common(cJSON_AddObjectToObject(o, "baseline"), &r->baseline);
    cJSON *models = cJSON_AddArrayToObject(o, "models");
    for (int k = 0; k < r->n_models && models; k++) add_model(models, r, &r->models[k]);
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    return s;
}
