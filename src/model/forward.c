/* The forward pass, written once for prefill (n tokens) and decode (1 token). Reads like the
 * Llama paper: per layer, x += Wo·Attn(RoPE(Wq·n(x)), RoPE(Wk·n(x)), Wv·n(x)) then
 * x += Wdown·(silu(Wgate·n(x)) ⊙ Wup·n(x)), n = RMSNorm; logits = Wout·n(x).
 * Matrix products run on the context's thread pool, split by weight rows so each weight row is
 * read once per call whatever the number of tokens. */
#include <math.h>
#include <string.h>

#include "model/context.h"

typedef struct {
    elm_context *c;
    const elm_tensor *w;
    const float *x;
    int64_t n_tok;
    float *y;
} matmul_job;

static void matmul_worker(void *arg, int ith, int nth) {
    matmul_job *j = arg;
    long r0, r1;
    elm_split((long)j->w->ne[1], ith, nth, &r0, &r1);
    if (r0 < r1)
        j->c->k->matmul_rows(j->w, j->x, j->n_tok, j->y, r0, r1,
                             j->c->scratch + (size_t)ith * j->c->scratch_cols);
}

/* Y[n_tok, rows] = X[n_tok, cols] · Wᵀ, for layer `layer` (-1: output) */
static void matmul(elm_context *c, int layer, const elm_tensor *w, const float *x, int64_t n_tok,
                   float *y) {
    if (c->hook) c->hook(w, layer, x, n_tok, c->hook_user);
    matmul_job j = {c, w, x, n_tok, y};
    elm_pool_run(c->pool, matmul_worker, &j);
}

typedef struct {
    elm_context *c;
    int layer;
    int64_t n_tok;
    int32_t pos0;
} attention_job;

/* Causal attention of each (token, head) over the cache positions [0, pos]; query heads share
 * KV heads in groups (GQA). */
static void attention_worker(void *arg, int ith, int nth) {
    attention_job *j = arg;
    elm_context *c = j->c;
    const elm_hparams *hp = &c->m->hp;
    const int hd = hp->head_dim, group = hp->n_heads / hp->n_kv_heads;
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t layer_off = (size_t)j->layer * c->n_ctx * c->kv_dim;
    float *scores = c->scores + (size_t)ith * c->n_ctx;
    long i0, i1;
    elm_split((long)(j->n_tok * hp->n_heads), ith, nth, &i0, &i1);
    for (long item = i0; item < i1; item++) {
        const int64_t t = item / hp->n_heads;
        const int h = (int)(item % hp->n_heads), kvh = h / group;
        const int32_t pos = j->pos0 + (int32_t)t;
        const float *q = c->q + (size_t)t * hp->dim + (size_t)h * hd;
        const float *kc = c->k_cache + layer_off + (size_t)kvh * hd;
        const float *vc = c->v_cache + layer_off + (size_t)kvh * hd;
        c->k->attention(q, kc, vc, (size_t)c->kv_dim, pos + 1, hd, scale, scores,
                        c->att + (size_t)t * hp->dim + (size_t)h * hd);
    }
}

static void embed(elm_context *c, const int32_t *tokens, int32_t n) {
    const elm_tensor *e = c->m->tok_embd;
    const size_t row = elm_row_bytes(e->type, e->ne[0]);
    for (int32_t t = 0; t < n; t++)
        elm_type_get(e->type)->to_float((const char *)e->data + (size_t)tokens[t] * row,
                                        c->x + (size_t)t * e->ne[0], e->ne[0]);
}

static void layer_forward(elm_context *c, int l, int32_t n) {
    const elm_model *m = c->m;
    const elm_hparams *hp = &m->hp;
    const elm_layer *L = &m->layers[l];
    const int dim = hp->dim, kv = c->kv_dim;
    const float *attn_norm = c->norms + (size_t)(2 * l) * dim, *ffn_norm = attn_norm + dim;

    for (int32_t t = 0; t < n; t++)
        c->k->rmsnorm(c->xb + (size_t)t * dim, c->x + (size_t)t * dim, attn_norm, dim, hp->rms_eps);
    matmul(c, l, L->wq, c->xb, n, c->q);
    matmul(c, l, L->wk, c->xb, n, c->kb);
    matmul(c, l, L->wv, c->xb, n, c->vb);
    const size_t layer_off = (size_t)l * c->n_ctx * kv;
    for (int32_t t = 0; t < n; t++) {
        const int32_t pos = c->n_past + t;
        c->k->rope(c->q + (size_t)t * dim, hp->n_heads, hp->head_dim, hp->rope_dim, c->inv_freq, pos);
        c->k->rope(c->kb + (size_t)t * kv, hp->n_kv_heads, hp->head_dim, hp->rope_dim, c->inv_freq, pos);
        memcpy(c->k_cache + layer_off + (size_t)pos * kv, c->kb + (size_t)t * kv, sizeof(float) * kv);
        memcpy(c->v_cache + layer_off + (size_t)pos * kv, c->vb + (size_t)t * kv, sizeof(float) * kv);
    }
    attention_job aj = {c, l, n, c->n_past};
    elm_pool_run(c->pool, attention_worker, &aj);
    matmul(c, l, L->wo, c->att, n, c->xb);
    for (size_t i = 0; i < (size_t)n * dim; i++) c->x[i] += c->xb[i];

    for (int32_t t = 0; t < n; t++)
        c->k->rmsnorm(c->xb + (size_t)t * dim, c->x + (size_t)t * dim, ffn_norm, dim, hp->rms_eps);
    matmul(c, l, L->w_gate, c->xb, n, c->hg);
    matmul(c, l, L->w_up, c->xb, n, c->hu);
    c->k->swiglu(c->hg, c->hg, c->hu, (int64_t)n * hp->ffn_dim);
    matmul(c, l, L->w_down, c->hg, n, c->xb);
    for (size_t i = 0; i < (size_t)n * dim; i++) c->x[i] += c->xb[i];
}

elm_status elm_forward(elm_context *c, const int32_t *tokens, int32_t n, float *logits,
                       bool all_logits, elm_error *err) {
    const elm_hparams *hp = &c->m->hp;
    if (n <= 0 || n > c->n_batch)
        return elm_errorf(err, ELM_ERR_ARG, "batch of %d tokens out of range 1..%d", n, c->n_batch);
    if (c->n_past + n > c->n_ctx)
        return elm_errorf(err, ELM_ERR_ARG, "context full: %d cached + %d new tokens > %d",
                          c->n_past, n, c->n_ctx);
    for (int32_t t = 0; t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= hp->n_vocab)
            return elm_errorf(err, ELM_ERR_ARG, "token id %d out of range 0..%d", tokens[t],
                              hp->n_vocab - 1);
    embed(c, tokens, n);
    for (int l = 0; l < hp->n_layers; l++) layer_forward(c, l, n);
    c->n_past += n;
    if (!logits) return ELM_OK;

    const int32_t first = all_logits ? 0 : n - 1, n_out = n - first;
    const float *out_norm = c->norms + (size_t)(2 * hp->n_layers) * hp->dim;
    for (int32_t t = 0; t < n_out; t++)
        c->k->rmsnorm(c->xb + (size_t)t * hp->dim, c->x + (size_t)(first + t) * hp->dim, out_norm,
                      hp->dim, hp->rms_eps);
    matmul(c, -1, c->m->output, c->xb, n_out, logits);
    return ELM_OK;
}
