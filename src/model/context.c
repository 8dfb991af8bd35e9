/* elm_context: allocation of the KV cache and scratch buffers, preallocated for n_ctx tokens so
 * that no forward call allocates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch.h"
#include "model/context_state.h"
#include "model/kv_quant.h"
#include "model/layer_kind.h"

static float *alloc_f32(size_t n, bool *ok) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *ok = false;
    return p;
}

/* 64-byte aligned (the SIMD tiles load whole cache lines), zeroed. */
static void *alloc_aligned(size_t bytes, bool *ok) {
    bytes = (bytes + 63) / 64 * 64;
    /* posix_memalign, not C11 aligned_alloc: Android's bionic has that only from API level 28. */
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64)) p = NULL;
    if (p) memset(p, 0, bytes);
    else *ok = false;
    return p;
}

/* The first of the matrices the pass multiplies (the output, then the layers') for which
 * pred(t, k) holds, or NULL. */
static const elm_tensor *find_matrix(const elm_model *m, const elm_kernels *k,
                                     bool (*pred)(const elm_tensor *t, const elm_kernels *k)) {
    if (pred(m->output, k)) return m->output;
    for (int l = 0; l < m->hp.n_layers; l++) {
        const elm_tensor *w[ELM_LAYER_MATRICES];
        const int n = elm_layer_matrices(&m->layers[l], w);
        for (int i = 0; i < n; i++)
            if (pred(w[i], k)) return w[i];
    }
    return NULL;
}

/* The widest input among the products the pass runs: at least `cols`, the activations' widths. */
static int64_t max_matrix_cols(const elm_model *m, int64_t cols) {
    for (int l = 0; l < m->hp.n_layers; l++) {
        const elm_tensor *w[ELM_LAYER_MATRICES];
        const int n = elm_layer_matrices(&m->layers[l], w);
        for (int i = 0; i < n; i++)
            if (w[i]->ne[0] > cols) cols = w[i]->ne[0];
    }
    return cols;
}

/* Products of F32, F16 or BF16 weights take transposed activations (xt); BF16 ones also take
 * them paired (xp). */
static bool float_matrix(const elm_tensor *t, const elm_kernels *k) {
    (void)k;
    return !elm_type_q8_act(t->type);
}
static bool bf16_matrix(const elm_tensor *t, const elm_kernels *k) {
    (void)k;
    return t->type == ELM_TYPE_BF16;
}

/* Only the table that packed a matrix reads its layout. */
static bool packed_elsewhere(const elm_tensor *t, const elm_kernels *k) {
    return t->packed_by && t->packed_by != k;
}

/* Norm weights may be stored as F32, F16 or BF16; the pass wants floats. */
static void decode_vector(const elm_tensor *t, float *out) {
    elm_type_get(t->type)->to_float(t->data, out, t->ne[0]);
}

/* The recurrent layers' state per sequence: offsets, sizes, the state, its checkpoints, the
 * runs and the kinds' scratch (context_state.h). Nothing for a model without them. */
static void alloc_states(elm_context *c, const elm_context_params *p, bool *ok) {
    const elm_hparams *hp = &c->m->hp;
    int64_t scratch = 0;
    c->state_off = calloc((size_t)hp->n_layers + 1, sizeof *c->state_off);
    if (!c->state_off) {
        *ok = false;
        return;
    }
    /* as elm_state_bytes counts it, from the bound layers' kinds */
    for (int l = 0; l < hp->n_layers; l++) {
        const elm_layer_ops *ops = elm_layer_ops_of(c->m->layers[l].kind);
        c->state_off[l] = c->state_floats;
        if (!ops) continue;
        c->state_floats += ops->state_floats(hp, l);
        const int64_t s = ops->scratch_floats(hp, c->n_batch);
        if (s > scratch) scratch = s;
    }
    if (!c->state_floats) return;
    c->n_seq = p->n_seq > 0 ? p->n_seq : 1;
    c->seq_rows = c->n_seq > 1 ? c->n_ctx / c->n_seq : 0;
    const size_t n_seq = (size_t)c->n_seq, per = (size_t)c->state_floats;
    c->state = alloc_f32(n_seq * per, ok);
    c->ckpt = alloc_f32(n_seq * ELM_STATE_CKPTS * per, ok);
    c->mix = alloc_f32((size_t)scratch, ok);
    c->seq_pos = calloc(n_seq, sizeof *c->seq_pos);
    c->ckpt_pos = malloc(n_seq * ELM_STATE_CKPTS * sizeof *c->ckpt_pos);
    c->runs = calloc((size_t)c->n_batch, sizeof *c->runs);
    if (!c->seq_pos || !c->ckpt_pos || !c->runs) *ok = false;
    for (size_t i = 0; c->ckpt_pos && i < n_seq * ELM_STATE_CKPTS; i++) c->ckpt_pos[i] = -1;
}

/* Whether pair i of hp's RoPE turns with a text token's position under interleaved M-RoPE
 * (hp.rope_sections, Qwen3.5): pair i is in stream t, h or w (all at the token's position) by
 * ggml_mrope_cache_init's rule, else in the fourth, where llama.cpp puts text at position 0.
 * Without sections every pair turns. */
static bool mrope_turns(const elm_hparams *hp, int i) {
    const int32_t *s = hp->rope_sections;
    const int64_t n = (int64_t)s[0] + s[1] + s[2] + s[3];
    if (n <= 0) return true;
    const int64_t sector = i % n;
    return (sector % 3 == 0 && sector < 3 * (int64_t)s[0]) ||
           (sector % 3 == 1 && sector < 3 * (int64_t)s[1]) ||
           (sector % 3 == 2 && sector < 3 * (int64_t)s[2]);
}

/* The attention factor llama.cpp's context gives ggml's YaRN RoPE for the file's attn_factor
 * (llama_context: get_mscale(factor, 1), then its cancelling 1 / (1 + 0.1·ln factor), in float),
 * which rope_yarn multiplies by 1 + 0.1·ln factor again (elm_rope_freqs_yarn). */
static float yarn_attn_factor(float freq_scale, float attn_factor) {
    const float factor = 1.0f / freq_scale;
    float a = factor <= 1.0f ? 1.0f : 0.1f * logf(factor) + 1.0f;
    a *= 1.0f / (1.0f + 0.1f * logf(factor));
    return a * attn_factor;
}

/* The layers' RoPE frequency divisors into ff[rope_dim / 2]: the model's for this context
 * (factors: elm_model_rope_factors, else all 1), and an infinite one (no turn) for a pair that
 * does not turn (mrope_turns). Returns false when all are 1 (none needed). */
static bool rope_divisors(const elm_hparams *hp, const elm_tensor *factors, float *ff) {
    bool any = factors != NULL;
    if (factors) decode_vector(factors, ff);
    else
        for (int i = 0; i < hp->rope_dim / 2; i++) ff[i] = 1.0f;
    for (int i = 0; i < hp->rope_dim / 2; i++)
        if (!mrope_turns(hp, i)) {
            ff[i] = INFINITY;
            any = true;
        }
    return any;
}

/* The first attention layer with q/k norms, or NULL. */
static const elm_layer *qk_normed(const elm_model *m) {
    for (int l = 0; l < m->hp.n_layers; l++)
        if (m->layers[l].q_norm) return &m->layers[l];
    return NULL;
}

/* Lays out the layers' rows of keys and values (c->kv, c->k_bytes, c->v_bytes, c->kv_dim,
 * c->swa_rows): each layer's own, of its own width, after the previous layer's; a layer reading
 * another's points at that one's (Gemma 4). ELM_ERR_UNSUPPORTED when a layer's head size does
 * not suit the cache types. */
static elm_status layout_kv(elm_context *c, const elm_context_params *p, elm_error *err) {
    const elm_hparams *hp = &c->m->hp;
    for (int l = 0; l < hp->n_layers; l++) {
        elm_kv_layer *kl = &c->kv[l];
        const int32_t hd = elm_layer_head_dim(hp, l);
        kl->k_block = elm_kv_block(p->type_k, hd);
        kl->v_block = elm_kv_block(p->type_v, hd);
        if (!kl->k_block || !kl->v_block) {
            const elm_type_traits *t = elm_type_get(kl->k_block ? p->type_v : p->type_k);
            return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                              "%s: KV cache type %s needs f32, f16, or q8_0/q4_0 with a head size "
                              "that is a multiple of 32 or divides 32 (head size %d)",
                              c->m->path, t ? t->name : "?", hd);
        }
        const int src = elm_layer_kv_src(hp, l);
        if (src != l && (src < 0 || src > l || hp->first_layer))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: layer %d reads the KV cache of "
                              "layer %d, not in this view of the model's layers", c->m->path, l,
                              src);
        if (src != l) { /* its source, laid out before it */
            *kl = c->kv[src];
            kl->own = false;
            continue;
        }
        kl->own = true;
        kl->dim = elm_layer_kv_heads(hp, l) * hd;
        kl->k_row = elm_kv_bytes(p->type_k, kl->k_block, kl->dim);
        kl->v_row = elm_kv_bytes(p->type_v, kl->v_block, kl->dim);
        const int32_t rows = elm_kv_layer_rows(hp, l, c->n_ctx);
        kl->rows = p->swa_full && rows > 0 ? c->n_ctx : rows;
        if (kl->rows > 0 && kl->rows < c->n_ctx) c->swa_rows = kl->rows;
        if (kl->rows > 0 && kl->dim > c->kv_dim) c->kv_dim = kl->dim;
        kl->k_off = c->k_bytes;
        kl->v_off = c->v_bytes;
        c->k_bytes += (size_t)kl->rows * kl->k_row;
        c->v_bytes += (size_t)kl->rows * kl->v_row;
    }
    return ELM_OK;
}

/* The per-layer embeddings' buffers and norm (Gemma 4), nothing without them. */
static void alloc_ple(elm_context *c, bool *ok) {
    const elm_model *m = c->m;
    const size_t P = (size_t)m->hp.n_embd_per_layer, nb = (size_t)c->n_batch;
    if (!m->ple_embd) return;
    c->ple = alloc_f32(nb * (size_t)m->hp.n_layers * P, ok);
    c->ple_row = alloc_f32((size_t)m->hp.n_layers * P, ok);
    c->ple_g = alloc_f32(nb * P, ok);
    c->ple_norm = alloc_f32(P, ok);
    if (*ok) decode_vector(m->ple_proj_norm, c->ple_norm);
}

/* A mixture of experts' routing and gathering buffers (context_state.h), nothing without one. */
static void alloc_moe(elm_context *c, bool *ok) {
    const elm_hparams *hp = &c->m->hp;
    const size_t nb = (size_t)c->n_batch, E = (size_t)hp->n_expert, k = (size_t)hp->n_expert_used;
    if (E == 0) return;
    c->moe_probs = alloc_f32(nb * E, ok);
    c->moe_w = alloc_f32(nb * k, ok);
    c->moe_x = alloc_f32(nb * (size_t)hp->dim, ok);
    c->moe_y = alloc_f32(nb * k * (size_t)hp->dim, ok);
    c->moe_ids = calloc(nb * k, sizeof *c->moe_ids);
    c->moe_slots = calloc(nb * k, sizeof *c->moe_slots);
    c->moe_first = calloc(E + 1, sizeof *c->moe_first);
    *ok = *ok && c->moe_ids && c->moe_slots && c->moe_first;
    const elm_layer *layers = c->m->layers;
    for (int l = 0; l < hp->n_layers && *ok; l++) {
        if (!layers[l].router_bias) continue;
        if (!c->moe_bias) c->moe_bias = alloc_f32((size_t)hp->n_layers * E, ok);
        if (*ok) decode_vector(layers[l].router_bias, c->moe_bias + (size_t)l * E);
    }
}

elm_status elm_context_new(const elm_model *m, const elm_context_params *p, elm_context **out,
                           elm_error *err) {
    *out = NULL;
    if (p->n_ctx <= 0 || p->n_ctx > (1 << 20))
        return elm_errorf(err, ELM_ERR_ARG, "context size %d out of range 1..1048576", p->n_ctx);
    if (p->n_batch < 0)
        return elm_errorf(err, ELM_ERR_ARG, "batch size %d is negative", p->n_batch);
    if (p->n_seq < 0 || p->n_seq > 256 || (p->n_seq > 1 && p->n_ctx % p->n_seq))
        return elm_errorf(err, ELM_ERR_ARG,
                          "%d sequences: out of range 0..256 or not dividing the context of %d",
                          p->n_seq, p->n_ctx);
    const elm_hparams *hp = &m->hp;
    const elm_kernels *k = p->ggml_rounding ? elm_kernels_ggml() : elm_kernels_best();
    const elm_tensor *packed = find_matrix(m, k, packed_elsewhere);
    if (packed)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: weights packed for the %s kernels (tensor '%s') cannot run on the "
                          "%s kernels; map the file instead of reading it in "
                          "(elm_load_opts.in_memory false, --mmap)",
                          m->path, packed->packed_by->isa, packed->name, k->isa);
    elm_context *c = calloc(1, sizeof *c);
    if (c) c->kv = calloc((size_t)hp->n_layers + 1, sizeof *c->kv);
    if (!c || !c->kv) {
        free(c);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory creating context");
    }
    c->m = m;
    c->k = k;
    c->n_ctx = p->n_ctx;
    c->n_batch = p->n_batch ? (p->n_batch < p->n_ctx ? p->n_batch : p->n_ctx) : p->n_ctx;
    c->type_k = p->type_k;
    c->type_v = p->type_v;
    elm_status st = layout_kv(c, p, err);
    const int32_t n_threads = p->n_threads ? p->n_threads : elm_online_cores();
    if (!st) st = elm_pool_new(n_threads, &c->pool, err);
    if (st) {
        elm_context_free(c);
        return st;
    }
    /* q and the attention output are n_heads·head_dim wide, which is not dim for Gemma; the
     * widest layer's head (Gemma 4), the largest GQA group */
    int32_t head_dim = 0, group = 1;
    for (int l = 0; l < hp->n_layers; l++) {
        const int32_t hd = elm_layer_head_dim(hp, l), g = hp->n_heads / elm_layer_kv_heads(hp, l);
        head_dim = hd > head_dim ? hd : head_dim;
        group = g > group ? g : group;
    }
    c->head_dim = head_dim;
    const size_t q_dim = (size_t)hp->n_heads * (size_t)head_dim;
    /* the FFN's hidden size: the dense one, an expert's or the shared expert's */
    int64_t ffn = hp->expert_ffn_dim > hp->ffn_dim ? hp->expert_ffn_dim : hp->ffn_dim;
    if (hp->shexp_ffn_dim > ffn) ffn = hp->shexp_ffn_dim;
    int64_t max_cols = hp->dim > ffn ? hp->dim : ffn;
    if ((int64_t)q_dim > max_cols) max_cols = (int64_t)q_dim;
    max_cols = max_matrix_cols(m, max_cols); /* a recurrent kind's (a DeltaNet's value width) */
    c->scratch_bytes = (elm_matmul_scratch_bytes(max_cols) + 63) / 64 * 64;

    const size_t nb = (size_t)c->n_batch, nt = (size_t)n_threads;
    bool ok = true;
    /* a view of 0 layers (elm_forward_hidden) has no cache; calloc(0) may give NULL */
    c->k_cache = calloc(c->k_bytes ? c->k_bytes : 1, 1);
    c->v_cache = calloc(c->v_bytes ? c->v_bytes : 1, 1);
    ok = c->k_cache && c->v_cache;
    if (p->type_k != ELM_TYPE_F32 || p->type_v != ELM_TYPE_F32 || c->swa_rows) {
        /* rings are read in position order through these, f32 caches' other layers in place */
        const size_t rows = p->type_k != ELM_TYPE_F32 || p->type_v != ELM_TYPE_F32
                                ? (size_t)c->n_ctx
                                : (size_t)c->swa_rows;
        c->k_deq = alloc_f32(rows * c->kv_dim, &ok);
        c->v_deq = alloc_f32(rows * c->kv_dim, &ok);
    }
    c->x = alloc_f32(nb * hp->dim, &ok);
    c->xb = alloc_f32(nb * hp->dim, &ok);
    c->q = alloc_f32(nb * q_dim, &ok);
    const elm_arch *a = elm_arch_find(hp->arch);
    if (a && a->attn_gate) c->qg = alloc_f32(nb * 2 * q_dim, &ok);
    c->kb = alloc_f32(nb * c->kv_dim, &ok);
    c->vb = alloc_f32(nb * c->kv_dim, &ok);
    c->att = alloc_f32(nb * q_dim, &ok);
    c->hg = alloc_f32(nb * (size_t)ffn, &ok);
    c->hu = alloc_f32(nb * (size_t)ffn, &ok);
    c->xq = alloc_aligned(nb * elm_q8_row_bytes(max_cols), &ok);
    if (find_matrix(m, k, float_matrix))
        c->xt = alloc_aligned((nb + 15) / 16 * 16 * (size_t)max_cols * sizeof(float), &ok);
    if (find_matrix(m, k, bf16_matrix) && c->k->pair16)
        c->xp = alloc_aligned((nb + 15) / 16 * 16 * (size_t)max_cols * sizeof(uint16_t), &ok);
    if (c->k->round_float_act) c->xr = alloc_f32(nb * (size_t)max_cols, &ok);
    /* a GQA group's scores per thread (elm_kernels.attention) */
    c->scores = alloc_f32(nt * (size_t)group * (size_t)c->n_ctx, &ok);
    c->scratch = alloc_aligned(nt * c->scratch_bytes, &ok);
    const elm_layer *L0 = hp->n_layers > 0 ? &m->layers[0] : NULL;
    c->n_norms = L0 && L0->attn_post_norm ? (L0->ple_post_norm ? 5 : 4) : 2;
    c->norms = alloc_f32(((size_t)hp->n_layers * c->n_norms + 1) * hp->dim, &ok);
    if (qk_normed(m)) c->qk_norms = alloc_f32((size_t)hp->n_layers * 2 * head_dim, &ok);
    if (hp->v_norm) c->ones = alloc_f32((size_t)head_dim, &ok);
    for (int l = 0; l < hp->n_layers && !c->out_scale; l++)
        if (m->layers[l].out_scale) c->out_scale = alloc_f32((size_t)hp->n_layers, &ok);
    alloc_ple(c, &ok);
    alloc_moe(c, &ok);
    alloc_states(c, p, &ok);
    const int32_t rope_dim_swa = hp->rope_dim_swa ? hp->rope_dim_swa : hp->rope_dim;
    c->inv_freq = alloc_f32((size_t)hp->rope_dim / 2, &ok);
    /* a sequence's context picks LongRoPE's factors (llama.cpp: n_ctx_seq) */
    const elm_tensor *rope_ff = elm_model_rope_factors(m, c->n_ctx / (p->n_seq > 1 ? p->n_seq : 1));
    c->rope_ff = alloc_f32((size_t)hp->rope_dim / 2, &ok);
    c->rope_cs = alloc_f32(nb * (size_t)hp->rope_dim, &ok);
    if (hp->rope_theta_swa > 0) {
        c->inv_freq_swa = alloc_f32((size_t)rope_dim_swa / 2, &ok);
        c->rope_cs_swa = alloc_f32(nb * (size_t)rope_dim_swa, &ok);
    }
    c->tokens = calloc((size_t)c->n_ctx, sizeof(int32_t));
    c->pos = calloc(nb, sizeof(int32_t));
    c->row0 = calloc(nb, sizeof(int32_t));
    if (hp->non_causal && !(c->pos_end = calloc(nb, sizeof(int32_t)))) ok = false;
    ok = ok && c->tokens && c->pos && c->row0;
    if (!ok) {
        elm_context_free(c);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory allocating a %d-token context",
                          p->n_ctx);
    }
    for (int l = 0; l < hp->n_layers; l++) {
        const elm_layer *L = &m->layers[l];
        const elm_tensor *norm[] = {L->attn_norm, L->ffn_norm, L->attn_post_norm, L->ffn_post_norm,
                                    L->ple_post_norm};
        for (int i = 0; i < c->n_norms; i++)
            decode_vector(norm[i], c->norms + (size_t)(c->n_norms * l + i) * hp->dim);
        if (c->out_scale) c->out_scale[l] = 1.0f;
        if (c->out_scale && L->out_scale) decode_vector(L->out_scale, c->out_scale + l);
    }
    decode_vector(m->output_norm, c->norms + (size_t)(c->n_norms * hp->n_layers) * hp->dim);
    for (int l = 0; c->qk_norms && l < hp->n_layers; l++) {
        const elm_layer *L = &m->layers[l];
        if (L->q_norm) decode_vector(L->q_norm, c->qk_norms + (size_t)(2 * l) * head_dim);
        if (L->k_norm) decode_vector(L->k_norm, c->qk_norms + (size_t)(2 * l + 1) * head_dim);
    }
    for (int i = 0; c->ones && i < head_dim; i++) c->ones[i] = 1.0f;
    /* linear scaling multiplies every angle; Llama 3.1's or LongRoPE's frequency divisors each
     * one, as llama.cpp's freq_factors, and M-RoPE stills some pairs of a text token; the
     * attention factor scales cos and sin of all layers */
    elm_rope_freqs_init(&c->rope, hp->rope_dim, hp->rope_theta, hp->rope_freq_scale,
                        rope_divisors(hp, rope_ff, c->rope_ff) ? c->rope_ff : NULL, c->inv_freq);
    const float mscale = hp->rope_attn_factor > 0 ? hp->rope_attn_factor : 1.0f; /* 0: unbound */
    c->rope.mscale = mscale;
    if (hp->rope_yarn) {
        c->rope.mscale = yarn_attn_factor(hp->rope_freq_scale, mscale);
        elm_rope_freqs_yarn(&c->rope, hp->n_ctx_orig, hp->yarn_beta_fast, hp->yarn_beta_slow,
                            c->inv_freq);
    }
    /* windowed layers with their own base take no scaling (llama.cpp: rope_freq_scale_train_swa) */
    if (c->inv_freq_swa) {
        elm_rope_freqs_init(&c->rope_swa, rope_dim_swa, hp->rope_theta_swa, 1.0f, NULL,
                            c->inv_freq_swa);
        c->rope_swa.mscale = mscale;
    }
    *out = c;
    return ELM_OK;
}

void elm_context_free(elm_context *c) {
    if (!c) return;
    elm_pool_free(c->pool);
    void *bufs[] = {c->k_cache, c->v_cache, c->x,      c->xb,    c->q,   c->qg,   c->kb,
                    c->vb,      c->att,     c->hg,     c->hu,    c->xq,       c->xt,    c->xp,  c->xr,  c->scores,
                    c->scratch, c->norms,   c->inv_freq, c->rope_cs, c->tokens, c->k_deq, c->v_deq,
                    c->qk_norms, c->pos, c->row0, c->pos_end, c->kv, c->inv_freq_swa,
                    c->rope_cs_swa, c->rope_ff, c->state_off, c->state, c->ckpt, c->mix,
                    c->seq_pos, c->ckpt_pos, c->runs, c->ones, c->out_scale, c->ple,
                    c->ple_row, c->ple_g, c->ple_norm, c->moe_probs, c->moe_ids, c->moe_w,
                    c->moe_slots, c->moe_first, c->moe_x, c->moe_y, c->moe_bias};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(c);
}

void elm_context_reset(elm_context *c) {
    c->n_past = 0;
    for (int i = 0; c->state_floats && i < c->n_seq; i++) elm_seq_restore(c, i, 0);
}

void elm_context_set_hook(elm_context *c, elm_matmul_hook hook, void *user) {
    c->hook = hook;
    c->hook_user = user;
}
int32_t elm_context_n_past(const elm_context *c) { return c->n_past; }
int32_t elm_context_n_ctx(const elm_context *c) { return c->n_ctx; }
int32_t elm_context_n_batch(const elm_context *c) { return c->n_batch; }
const elm_model *elm_context_model(const elm_context *c) { return c->m; }
double elm_context_parked_s(const elm_context *c) { return elm_pool_parked_s(c->pool); }
