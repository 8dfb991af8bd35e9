/* The two model passes of `edgelm eval`, both riding on elm_eval_chunks (the perplexity loop) so
 * they see exactly the chunks and scored positions perplexity does: the baseline pass streams its
 * log-probs into a reference file, a quantized model's pass reads them back position by position
 * and accumulates the comparison statistics (kld.c). */
#include <stdlib.h>
#include <string.h>

#include "edgelm/eval.h"

/* elm_eval_chunks passes one user pointer to both callbacks: each pass's state carries the
 * caller's chunk callback and forwards to it. */
typedef struct {
    elm_chunk_fn fn;
    void *user;
} chunk_relay;

static void relay_chunk(int32_t chunk, int32_t n_chunks, double ppl, void *user) {
    const chunk_relay *r = user; /* first member of every pass state */
    if (r->fn) r->fn(chunk, n_chunks, ppl, r->user);
}

/* ------------------------------------------------------------------------- baseline pass */

typedef struct {
    chunk_relay relay;
    elm_ref_writer *w;
    float *lp; /* [n_vocab] scratch */
} ref_pass;

static void on_ref_scored(const float *logits, int32_t n_vocab, int32_t next, void *user) {
    (void)next;
    ref_pass *s = user;
    elm_log_softmax_f32(logits, n_vocab, s->lp);
    elm_ref_writer_add(s->w, s->lp);
}

static const char *base_name(const char *path) {
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/') n--; /* a Hugging Face folder given as "dir/" */
    const char *end = path + n, *p = end;
    while (p > path && p[-1] != '/') p--;
    return p;
}

elm_status elm_eval_reference(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                              const elm_ppl_params *p, uint64_t model_bytes, const char *path,
                              elm_chunk_fn on_chunk, void *user, elm_ppl_result *ppl,
                              elm_error *err) {
    memset(ppl, 0, sizeof *ppl);
    if (p->n_ctx < 4 || n_tokens < 2 * (int64_t)p->n_ctx) /* the loop's own check, before any file */
        return elm_eval_chunks(m, tokens, n_tokens, p, NULL, NULL, NULL, ppl, err);
    elm_ref_info info = {
        .n_vocab = m->hp.n_vocab,
        .n_ctx = p->n_ctx,
        .n_chunks = (int32_t)(n_tokens / p->n_ctx),
        .n_text_tokens = n_tokens,
        .model_bytes = model_bytes,
    };
    const char *name = base_name(m->path);
    const size_t len = strcspn(name, "/");
    memcpy(info.model_name, name, len < ELM_REF_NAME_MAX - 1 ? len : ELM_REF_NAME_MAX - 1);
    ref_pass s = {.relay = {on_chunk, user}, .lp = malloc(sizeof(float) * (size_t)m->hp.n_vocab)};
    if (!s.lp) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for %d log-probs", m->hp.n_vocab);
    elm_status st = elm_ref_writer_open(path, &info, tokens, &s.w, err);
    if (!st) {
        st = elm_eval_chunks(m, tokens, n_tokens, p, on_ref_scored, relay_chunk, &s, ppl, err);
        if (st) elm_ref_writer_abort(s.w);
        else st = elm_ref_writer_finish(s.w, ppl, err);
    }
    free(s.lp);
    return st;
}

/* ------------------------------------------------------------------------ quantized pass */

typedef struct {
    chunk_relay relay;
    const elm_ref *ref;
    int64_t pos;      /* scored positions seen */
    float *lp;        /* [n_vocab] scratch */
    elm_kld_acc *acc;
} cmp_pass;

static void on_cmp_scored(const float *logits, int32_t n_vocab, int32_t next, void *user) {
    cmp_pass *s = user;
    const int64_t pos = s->pos++;
    if (pos >= s->ref->info.n_scored) return; /* counted, reported after the loop */
    elm_log_softmax_f32(logits, n_vocab, s->lp);
    elm_kld_acc_add(s->acc, s->ref->logprobs + (size_t)pos * (size_t)n_vocab, s->lp, n_vocab, next);
}

elm_status elm_eval_compare(const elm_model *m, const elm_ref *ref, const int32_t *tokens,
                            int64_t n_tokens, const elm_ppl_params *p, elm_chunk_fn on_chunk,
                            void *user, elm_ppl_result *ppl, elm_kld_stats *kld, elm_error *err) {
    memset(ppl, 0, sizeof *ppl);
    memset(kld, 0, sizeof *kld);
    elm_status st = elm_ref_check(ref, m->hp.n_vocab, p->n_ctx, tokens, n_tokens, err);
    if (st) return st;
    cmp_pass s = {.relay = {on_chunk, user},
                  .ref = ref,
                  .lp = malloc(sizeof(float) * (size_t)m->hp.n_vocab),
                  .acc = elm_kld_acc_new(ref->info.n_scored)};
    if (!s.lp || !s.acc) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for %lld scored positions",
                        (long long)ref->info.n_scored);
    } else {
        st = elm_eval_chunks(m, tokens, n_tokens, p, on_cmp_scored, relay_chunk, &s, ppl, err);
        if (!st && s.pos != ref->info.n_scored)
            st = elm_errorf(err, ELM_ERR_ARG, "%s: %lld positions scored, the reference has %lld",
                            ref->path, (long long)s.pos, (long long)ref->info.n_scored);
        if (!st) elm_kld_acc_finish(s.acc, kld);
    }
    elm_kld_acc_free(s.acc);
    free(s.lp);
    return st;
}
