/* The attention layer kind (layer_kind.h): x += Wo·Attn(RoPE(Wq·n(x)), RoPE(Wk·n(x)), Wv·n(x))
 * over the KV cache, with what the families add (model/arch.h): q/k/v biases (Qwen2), attention
 * sinks and an output bias (gpt-oss), per-head
 * q/k RMSNorm (Qwen3, LFM2), layers without RoPE (SmolLM3), the RoPE pairing (NEOX), a head size
 * that is not dim / heads (q is n_heads·head_dim wide), RoPE on part of each head (Phi-3
 * variants, Qwen3.5), a sliding window (Mistral) or a ring of it (Gemma 3's local layers), an
 * output gate from the q projection (Qwen3.5: Wo·(Attn ⊙ sigmoid(Wg·n(x)))), and Gemma 4's: head
 * sizes, KV heads and RoPE of each layer's own (elm_layer_head_dim...; the global layers' partial
 * RoPE is rope_freqs leaving pairs unturned), values RMSNormed without weights (or, without
 * attn_v, the k projection as values), and the last layers reading an earlier layer's cache
 * instead of writing their own (elm_layer_kv_src). */
#include <math.h>
#include <string.h>

#include "model/context_state.h"
#include "model/forward_ops.h"
#include "model/kv_quant.h"

typedef struct {
    elm_context *c;
    const float *k, *v; /* the layer's cached keys and values as floats, [rows, kv_dim] */
    size_t kv_dim;      /* floats from one position to the next in k and v */
    int hd, n_kv_heads; /* the layer's head size and KV heads */
    int32_t t0;         /* the batch tokens [t0, t0 + n_tok) attend */
    int32_t base;       /* ring layers: the position at row 0 of k and v (else 0) */
    int32_t n_swa;      /* the layer's window, 0: none */
    const float *sinks; /* the layer's attention sinks [n_heads], or NULL */
    bool ring;
    bool non_causal;    /* tokens see their sequence's later positions too (c->pos_end) */
    int32_t n_tok;       /* the tokens attending in this pass (elm_kernels.attention) */
    elm_pool_work items; /* (token, KV head) pairs, claimed one at a time */
} attention_job;

/* Causal attention of each (token, KV head) over its sequence's positions [0, pos], or the last
 * n_swa of them: cache rows row0 + p (context.h: pos, row0), or rows p - base of a ring read in
 * position order. A non-causal model's token sees [0, pos_end] instead, its sequence's positions
 * in the batch and before, and a window those within n_swa / 2 of pos on either side (llama.cpp's
 * LLAMA_SWA_TYPE_SYMMETRIC). The query heads of a KV head's group (GQA) go together, so that each
 * k and v row is read from memory once for all of them: one head at a time, at 1536 positions,
 * read them from L2 eight times and took 45% of a Q4_0 prefill. */
static void attention_worker(void *arg, int ith, int nth) {
    (void)nth;
    attention_job *j = arg;
    elm_context *c = j->c;
    const elm_hparams *hp = &c->m->hp;
    const int hd = j->hd, group = hp->n_heads / j->n_kv_heads;
    const size_t q_dim = (size_t)hp->n_heads * hd;
    float *scores = c->scores + (size_t)ith * (size_t)group * c->n_ctx;
    long i0, i1;
    while (elm_pool_work_claim(&j->items, ith, 1, &i0, &i1)) {
        for (long item = i0; item < i1; item++) {
            const int64_t t = j->t0 + item / j->n_kv_heads;
            const int kvh = (int)(item % j->n_kv_heads), h = kvh * group;
            const int32_t pos = c->pos[t];
            const size_t row = j->ring ? 0 : (size_t)c->row0[t];
            /* a sliding window sees positions (pos - n_swa, pos] */
            int32_t p0 = j->n_swa > 0 && pos >= j->n_swa ? pos + 1 - j->n_swa : 0, p1 = pos;
            if (j->non_causal) {
                const int32_t half = j->n_swa / 2;
                p1 = c->pos_end[t];
                p0 = j->n_swa > 0 && pos > half ? pos - half : 0;
                if (j->n_swa > 0 && pos + half < p1) p1 = pos + half;
            }
            const float *q = c->q + (size_t)t * q_dim + (size_t)h * hd;
            const size_t first = (row + (size_t)(p0 - j->base)) * j->kv_dim + (size_t)kvh * hd;
            float *out = c->att + (size_t)t * q_dim + (size_t)h * hd;
            c->k->attention(q, group, j->k + first, j->v + first, j->kv_dim, p1 + 1 - p0, p0,
                            hd, hp->attn_scale, j->sinks ? j->sinks + h : NULL, j->n_tok, scores,
                            out);
        }
    }
}

typedef struct {
    elm_context *c;
    const elm_kv_layer *kl;     /* the layer's rows */
    const unsigned char *k, *v; /* and where they are */
    elm_pool_work positions;    /* claimed KV_CHUNK at a time, as products are */
} decode_job;

/* KV_CHUNK positions: 64 KiB of floats at TinyLlama's KV width (256). A static split here made
 * every layer of every step wait for a worker the scheduler held back (a busy core). */
enum { KV_CHUNK = 64 };

static void decode_worker(void *arg, int ith, int nth) {
    (void)nth;
    decode_job *j = arg;
    elm_context *c = j->c;
    const elm_kv_layer *kl = j->kl;
    long p0, p1;
    while (elm_pool_work_claim(&j->positions, ith, KV_CHUNK, &p0, &p1)) {
        const size_t n = (size_t)(p1 - p0) * (size_t)kl->dim, off = (size_t)p0 * kl->dim;
        elm_kv_decode(c->type_k, kl->k_block, j->k + (size_t)p0 * kl->k_row, c->k_deq + off,
                      (int64_t)n);
        elm_kv_decode(c->type_v, kl->v_block, j->v + (size_t)p0 * kl->v_row, c->v_deq + off,
                      (int64_t)n);
    }
}

/* Layer l's cached keys and values [n_pos, its kv dim] as floats for the attention kernel: the
 * cache itself when it is f32, else decoded into the context's one-layer buffers. */
static void layer_kv(elm_context *c, int l, int32_t n_pos, const float **k, const float **v) {
    const unsigned char *kc = elm_kv_layer_k(c, l), *vc = elm_kv_layer_v(c, l);
    if (c->type_k == ELM_TYPE_F32 && c->type_v == ELM_TYPE_F32) {
        *k = (const float *)kc;
        *v = (const float *)vc;
        return;
    }
    decode_job j = {.c = c, .kl = &c->kv[l], .k = kc, .v = vc};
    elm_pool_work_init(&j.positions, n_pos, elm_pool_size(c->pool));
    elm_pool_run_shared(c->pool, decode_worker, &j);
    *k = c->k_deq;
    *v = c->v_deq;
}

/* A ring layer's positions [lo, hi] in order, decoded into k_deq / v_deq rows 0 .. hi - lo
 * (at most two runs of ring rows). */
static void ring_kv(elm_context *c, int l, int32_t lo, int32_t hi) {
    const unsigned char *kc = elm_kv_layer_k(c, l), *vc = elm_kv_layer_v(c, l);
    const elm_kv_layer *kl = &c->kv[l];
    const int32_t R = kl->rows;
    for (int32_t p = lo; p <= hi;) {
        const int32_t r = p % R, run = hi - p + 1 < R - r ? hi - p + 1 : R - r;
        const size_t off = (size_t)(p - lo) * kl->dim, n = (size_t)run * kl->dim;
        elm_kv_decode(c->type_k, kl->k_block, kc + (size_t)r * kl->k_row, c->k_deq + off,
                      (int64_t)n);
        elm_kv_decode(c->type_v, kl->v_block, vc + (size_t)r * kl->v_row, c->v_deq + off,
                      (int64_t)n);
        p += run;
    }
}

/* y[t, i] += b[i] for n_tok rows of n (biases are F32, elm_model_bind checks). */
static void add_bias(float *y, const elm_tensor *b, int32_t n_tok, int64_t n) {
    if (!b) return;
    const float *bias = b->data;
    for (int32_t t = 0; t < n_tok; t++)
        for (int64_t i = 0; i < n; i++) y[(size_t)t * n + i] += bias[i];
}

/* Per-head RMSNorm of the batch's q and k before RoPE (Qwen3), every head_dim slice scaled by
 * layer l's q or k norm weights; and of v without weights (Gemma 4). A layer reading another's
 * cache (n_kv 0) has only q. */
static void qkv_norm(elm_context *c, int l, int32_t n, int n_kv) {
    const elm_hparams *hp = &c->m->hp;
    const int hd = elm_layer_head_dim(hp, l);
    if (c->qk_norms) {
        const float *wq = c->qk_norms + (size_t)(2 * l) * c->head_dim, *wk = wq + c->head_dim;
        for (size_t i = 0; i < (size_t)n * (size_t)hp->n_heads; i++)
            c->k->rmsnorm(c->q + i * hd, c->q + i * hd, wq, hd, hp->rms_eps);
        for (size_t i = 0; i < (size_t)n * (size_t)n_kv; i++)
            c->k->rmsnorm(c->kb + i * hd, c->kb + i * hd, wk, hd, hp->rms_eps);
    }
    for (size_t i = 0; c->ones && i < (size_t)n * (size_t)n_kv; i++)
        c->k->rmsnorm(c->vb + i * hd, c->vb + i * hd, c->ones, hd, hp->rms_eps);
}

/* A gated family's q projection c->qg: each head's query into c->q (its gate stays). */
static void split_gate(elm_context *c, int32_t n) {
    const int hd = c->m->hp.head_dim;
    for (size_t i = 0; i < (size_t)n * (size_t)c->m->hp.n_heads; i++)
        memcpy(c->q + i * hd, c->qg + 2 * i * hd, sizeof(float) * (size_t)hd);
}

/* The attention output times sigmoid of each head's gate (Qwen3.5's attn_output_gate). */
static void apply_gate(elm_context *c, int32_t n) {
    const int hd = c->m->hp.head_dim;
    for (size_t i = 0; i < (size_t)n * (size_t)c->m->hp.n_heads; i++) {
        const float *g = c->qg + (2 * i + 1) * hd;
        float *o = c->att + i * hd;
        for (int d = 0; d < hd; d++) o[d] *= 1.0f / (1.0f + expf(-g[d]));
    }
}

/* Attention of the batch's tokens [t0, t0 + nt) in layer l, after their keys and values are in
 * the cache. A ring is read from the first position the first token sees. */
static void attend(elm_context *c, int l, int32_t t0, int32_t nt) {
    const elm_hparams *hp = &c->m->hp;
    attention_job aj = {.c = c, .kv_dim = (size_t)c->kv[l].dim, .hd = elm_layer_head_dim(hp, l),
                        .n_kv_heads = elm_layer_kv_heads(hp, l), .t0 = t0,
                        .n_swa = elm_layer_swa(hp, l) ? hp->n_swa : 0,
                        .ring = elm_kv_layer_ring(c, l), .non_causal = hp->non_causal,
                        .sinks = c->m->layers[l].sinks ? c->m->layers[l].sinks->data : NULL,
                        .n_tok = nt};
    elm_pool_work_init(&aj.items, (long)nt * aj.n_kv_heads, elm_pool_size(c->pool));
    if (aj.ring) {
        const int32_t first = c->pos[t0];
        aj.base = first >= hp->n_swa ? first + 1 - hp->n_swa : 0;
        ring_kv(c, l, aj.base, c->pos[t0 + nt - 1]);
        aj.k = c->k_deq;
        aj.v = c->v_deq;
    } else {
        int32_t rows = 0; /* the cache rows the tokens' attention reads: [0, rows) */
        for (int32_t t = t0; t < t0 + nt; t++) {
            const int32_t last = hp->non_causal ? c->pos_end[t] : c->pos[t];
            if (c->row0[t] + last + 1 > rows) rows = c->row0[t] + last + 1;
        }
        layer_kv(c, l, rows, &aj.k, &aj.v);
    }
    elm_pool_run_shared(c->pool, attention_worker, &aj);
}

void elm_layer_attention(elm_context *c, int l, int32_t n) {
    const elm_model *m = c->m;
    const elm_hparams *hp = &m->hp;
    const elm_layer *L = &m->layers[l];
    const elm_kv_layer *kl = &c->kv[l];
    const int hd = elm_layer_head_dim(hp, l), rope_dim = elm_layer_rope_dim(hp, l);
    const int n_kv = kl->own ? elm_layer_kv_heads(hp, l) : 0; /* the heads it computes */
    const int kv = n_kv * hd, q_dim = hp->n_heads * hd;
    void (*rope)(float *, int, int, int, const float *) =
        hp->rope_style == ELM_ROPE_NEOX ? c->k->rope_neox : c->k->rope;

    /* without attn_v (Gemma 4's attention_k_eq_v) the values are the k projection */
    const elm_tensor *qkv[] = {L->wq, L->wk, L->wv};
    float *qkv_out[] = {c->qg ? c->qg : c->q, c->kb, c->vb};
    elm_fw_matmul_group(c, l, n_kv ? (L->wv ? 3 : 2) : 1, qkv, qkv_out, c->xb, n, 0);
    if (c->qg) split_gate(c, n);
    if (n_kv && !L->wv) memcpy(c->vb, c->kb, sizeof(float) * (size_t)n * (size_t)kv);
    add_bias(c->q, L->bq, n, q_dim);
    add_bias(c->kb, L->bk, n, kv);
    add_bias(c->vb, L->bv, n, kv);
    qkv_norm(c, l, n, n_kv);
    unsigned char *k_layer = elm_kv_layer_k(c, l), *v_layer = elm_kv_layer_v(c, l);
    const bool nope = elm_layer_nope(hp, l);
    const bool ring = elm_kv_layer_ring(c, l);
    const float *rope_cs = elm_layer_swa(hp, l) && c->rope_cs_swa ? c->rope_cs_swa : c->rope_cs;
    /* a ring takes the tokens in chunks that fit beside the window (its spare rows + 1); a layer
     * reading another's rows, which hold the whole batch already, all at once */
    const int32_t chunk = ring && n_kv ? kl->rows - hp->n_swa + 1 : n;
    for (int32_t t0 = 0; t0 < n; t0 += chunk) {
        const int32_t nt = n - t0 < chunk ? n - t0 : chunk;
        for (int32_t t = t0; t < t0 + nt; t++) {
            const size_t row = ring ? (size_t)(c->pos[t] % kl->rows)
                                    : (size_t)c->row0[t] + (size_t)c->pos[t]; /* cache row */
            const float *cs = rope_cs + (size_t)t * rope_dim;
            if (!nope) {
                rope(c->q + (size_t)t * q_dim, hp->n_heads, hd, rope_dim, cs);
                if (n_kv) rope(c->kb + (size_t)t * kv, n_kv, hd, rope_dim, cs);
            }
            if (!n_kv) continue;
            /* keys are stored (and quantized) after RoPE */
            elm_kv_encode(c->type_k, kl->k_block, c->kb + (size_t)t * kv,
                          k_layer + row * kl->k_row, kv);
            elm_kv_encode(c->type_v, kl->v_block, c->vb + (size_t)t * kv,
                          v_layer + row * kl->v_row, kv);
        }
        attend(c, l, t0, nt);
    }
    if (c->qg) apply_gate(c, n);
    elm_fw_matmul(c, l, L->wo, c->att, n, 0, c->xb);
    add_bias(c->xb, L->bo, n, hp->dim);
}
