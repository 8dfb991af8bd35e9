/* Generation quality (docs/deployment.md, "Validation before shipping"): greedy continuations of each
 * prompt from the baseline and from a quantized model, compared by difflib similarity, exact
 * match, completion (longer than 10 characters before EOS) and average length. */
#include <stdlib.h>
#include <string.h>

#include "edgelm/eval.h"
#include "edgelm/generate.h"

void elm_continuations_free(elm_continuations *c) {
    if (!c) return;
    for (int32_t i = 0; c->texts && i < c->n; i++) free(c->texts[i]);
    free(c->texts);
    free(c->n_tokens);
    memset(c, 0, sizeof *c);
}

elm_status elm_eval_continuations(const elm_model *m, const char *const *prompts, int32_t n_prompts,
                                  int32_t n_predict, const elm_ppl_params *p,
                                  elm_continuations *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    if (n_predict <= 0) return elm_errorf(err, ELM_ERR_ARG, "tokens to generate must be > 0 (got %d)", n_predict);
    if (n_prompts <= 0) return elm_errorf(err, ELM_ERR_ARG, "no prompts");
    out->texts = calloc((size_t)n_prompts, sizeof(char *));
    out->n_tokens = calloc((size_t)n_prompts, sizeof(int32_t));
    if (!out->texts || !out->n_tokens)
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for %d prompts", n_prompts);
    out->n = n_prompts;

    /* tokenize every prompt first: the context is sized for the longest */
    int32_t **ids = calloc((size_t)n_prompts, sizeof(int32_t *));
    int32_t *n_ids = calloc((size_t)n_prompts, sizeof(int32_t));
    int32_t *gen = malloc(sizeof(int32_t) * (size_t)n_predict);
    elm_context *c = NULL;
    elm_status st = ELM_OK;
    if (!ids || !n_ids || !gen) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for %d prompts", n_prompts);
    int64_t longest = 0;
    for (int32_t i = 0; i < n_prompts && !st; i++) {
        const size_t len = strlen(prompts[i]);
        if (len == 0) st = elm_errorf(err, ELM_ERR_ARG, "prompt %d is empty", i + 1);
        else if (len > (1 << 20))
            st = elm_errorf(err, ELM_ERR_ARG, "prompt %d is too long (%zu bytes)", i + 1, len);
        if (st) break;
        int64_t n = 0;
        st = elm_tokenize_alloc(&m->vocab, prompts[i], len, m->vocab.add_bos, false, &ids[i], &n, err);
        if (!st && n == 0) st = elm_errorf(err, ELM_ERR_ARG, "prompt %d gives no tokens", i + 1);
        if (st) break;
        n_ids[i] = (int32_t)n;
        longest = n > longest ? n : longest;
    }
    if (!st) {
        const elm_context_params cp = {.n_ctx = (int32_t)(longest + n_predict),
                                       .n_threads = p->n_threads, .type_k = p->type_k,
                                       .type_v = p->type_v};
        st = elm_context_new(m, &cp, &c, err);
    }
    elm_gen_params gp = {.n_predict = n_predict, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 0; /* greedy */
    gp.sampling.repeat_penalty = 1;
    for (int32_t i = 0; i < n_prompts && !st; i++) {
        elm_context_reset(c);
        int32_t n_gen = 0;
        elm_gen_stats stats;
        st = elm_generate(c, ids[i], n_ids[i], &gp, NULL, NULL, gen, n_predict, &n_gen, &stats, err);
        if (st) break;
        out->n_tokens[i] = n_gen;
        if (!(out->texts[i] = elm_detokenize(&m->vocab, gen, n_gen, false)))
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory decoding a continuation");
    }
    elm_context_free(c);
    for (int32_t i = 0; ids && i < n_prompts; i++) free(ids[i]);
    free(ids);
    free(n_ids);
    free(gen);
    return st;
}

/* Code points of a UTF-8 string (continuation bytes not counted). */
static size_t n_chars(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

elm_status elm_gen_quality_of(const elm_continuations *ref, const elm_continuations *q,
                              elm_gen_quality *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    if (ref->n != q->n)
        return elm_errorf(err, ELM_ERR_ARG, "%d continuations to compare with %d reference ones", q->n, ref->n);
    out->n_prompts = q->n;
    if (q->n == 0) return ELM_OK;
    double sim = 0, exact = 0, complete = 0, chars = 0, tokens = 0;
    for (int32_t i = 0; i < q->n; i++) {
        const char *a = ref->texts[i], *b = q->texts[i];
        double r;
        elm_status st = elm_similarity_ratio(a, strlen(a), b, strlen(b), true, &r, err);
        if (st) return st;
        const size_t len = n_chars(b);
        sim += r;
        exact += strcmp(a, b) == 0;
        complete += len > ELM_EVAL_COMPLETE_CHARS;
        chars += (double)len;
        tokens += q->n_tokens[i];
    }
    out->similarity = sim / q->n;
    out->exact_match_rate = exact / q->n;
    out->completion_rate = complete / q->n;
    out->avg_chars = chars / q->n;
    out->avg_tokens = tokens / q->n;
    return ELM_OK;
}
