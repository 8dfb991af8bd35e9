/* Chunked evaluation and perplexity (see perplexity.h). The NLL at each scored position is the
 * log-softmax computed in double, as llama-perplexity does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/context.h"
#include "edgelm/perplexity.h"

static double nll_of(const float *logits, int32_t n_vocab, int32_t next) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    return -((double)logits[next] - max - log(sum));
}

/* The running sums of one evaluation, and the chunk being scored. */
typedef struct scorer {
    const int32_t *window;
    int32_t n_ctx, n_vocab, first;
    double sum, sum2;
    int64_t count;
    elm_scored_fn on_scored;
    void *user;
} scorer;

/* Scores the positions of a batch that fall in the second half of the chunk (not the last). */
static elm_status score_batch(const float *logits, int32_t off, int32_t nb, void *arg) {
    scorer *s = arg;
    for (int32_t t = 0; t < nb; t++) {
        const int32_t j = off + t;
        if (j < s->first || j >= s->n_ctx - 1) continue;
        const float *lj = logits + (size_t)t * s->n_vocab;
        const double nll = nll_of(lj, s->n_vocab, s->window[j + 1]);
        s->sum += nll;
        s->sum2 += nll * nll;
        s->count++;
        if (s->on_scored) s->on_scored(lj, s->n_vocab, s->window[j + 1], s->user);
    }
    return ELM_OK;
}

elm_status elm_eval_chunks(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                           const elm_ppl_params *p, elm_scored_fn on_scored, elm_chunk_fn on_chunk,
                           void *user, elm_ppl_result *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    const int32_t n_ctx = p->n_ctx, n_vocab = m->hp.n_vocab;
    if (n_ctx < 4) return elm_errorf(err, ELM_ERR_ARG, "context size %d too small (need >= 4)", n_ctx);
    if (n_tokens < 2 * (int64_t)n_ctx)
        return elm_errorf(err, ELM_ERR_ARG,
                          "text has %lld tokens; need at least %d (2 x context %d)",
                          (long long)n_tokens, 2 * n_ctx, n_ctx);
    if (m->vocab.bos_id < 0) return elm_errorf(err, ELM_ERR_ARG, "%s: model has no BOS token", m->path);
    elm_context *c = NULL;
    elm_context_params cp = {.n_ctx = n_ctx, .n_batch = p->n_batch, .n_threads = p->n_threads,
                             .type_k = p->type_k, .type_v = p->type_v};
    elm_status st = elm_context_new(m, &cp, &c, err);
    if (st) return st;
    const int32_t n_batch = elm_context_n_batch(c);
    float *logits = malloc(sizeof(float) * (size_t)n_batch * (size_t)n_vocab);
    int32_t *window = malloc(sizeof(int32_t) * (size_t)n_ctx);
    if (!logits || !window) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for %d x %d logits", n_batch, n_vocab);
        goto done;
    }
    const int32_t n_chunks = (int32_t)(n_tokens / n_ctx);
    scorer s = {window, n_ctx, n_vocab, n_ctx / 2, 0, 0, 0, on_scored, user};
    for (int32_t ch = 0; ch < n_chunks; ch++) {
        memcpy(window, tokens + (int64_t)ch * n_ctx, sizeof(int32_t) * (size_t)n_ctx);
        window[0] = m->vocab.bos_id;
        elm_context_reset(c);
        if ((st = elm_forward_batched(c, window, n_ctx, logits, true, score_batch, &s, err)))
            goto done;
        if (on_chunk) on_chunk(ch + 1, n_chunks, exp(s.sum / s.count), user);
    }
    const int64_t count = s.count;
    const double mean = s.sum / count, var = s.sum2 / count - mean * mean;
    out->mean_nll = mean;
    out->ppl = exp(mean);
    out->ppl_stderr = count > 1 && var > 0 ? out->ppl * sqrt(var / (count - 1)) : 0;
    out->n_ctx = n_ctx;
    out->chunks = n_chunks;
    out->n_tokens = n_tokens;
    out->scored_tokens = count;
done:
    free(window);
    free(logits);
    elm_context_free(c);
    return st;
}

elm_status elm_ppl_tokenize(const elm_model *m, const char *text, size_t len, int32_t **ids,
                            int64_t *n_ids, elm_error *err) {
    return elm_tokenize_alloc(&m->vocab, text, len, true, false, ids, n_ids, err);
}

elm_status elm_perplexity(const elm_model *m, const char *text, size_t len, const elm_ppl_params *p,
                          elm_chunk_fn on_chunk, void *user, elm_ppl_result *out, elm_error *err) {
    int32_t *ids;
    int64_t n;
    elm_status st = elm_ppl_tokenize(m, text, len, &ids, &n, err);
    if (!st) st = elm_eval_chunks(m, ids, n, p, NULL, on_chunk, user, out, err);
    free(ids);
    return st;
}
