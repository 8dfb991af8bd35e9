/* The mixture-of-experts FFN (elm_arch.moe; Qwen3-MoE, LFM2-MoE, gpt-oss), as llama.cpp's
 * build_moe_ffn runs it: per token, the router's logits (plus its bias, gpt-oss's), their
 * probabilities by the file's gating function (hp.moe_gating: a softmax over the experts,
 * Qwen3-MoE's, or each one's sigmoid, LFM2-MoE's), the top k of the probabilities plus the
 * layer's selection bias where it has one (exp_probs_b: it steers the choice, not the weights),
 * their probabilities divided by their sum (norm_w); or (SOFTMAX_WEIGHT, gpt-oss) the top k of
 * the logits, weighed by a softmax over those k; then
 * y = Σ_r w_r · (Wdown_e·act(Wgate_e·x + bg_e, Wup_e·x + bu_e) + bd_e) over the chosen experts
 * e in rank order r (the expert biases gpt-oss's, act the model's gate activation), plus a
 * shared expert's dense FFN where the layer has one (Granite 4.0-H), weighed by a sigmoid gate
 * (Qwen3.5-MoE).
 *
 * The batch's tokens are grouped by expert, so that each expert's matrices are read once per
 * batch, by the same row-split products as a dense FFN (forward_ops.h) over the expert's slice
 * of the stacked tensors (its rows: in the file's layout when mapped, packed like the other
 * matrices, expert by expert, when read into memory, model/pack.c). Decode
 * reads the k chosen experts only. */
#include <math.h>
#include <string.h>

#include "model/forward_ops.h"

/* Expert e's matrix of stack t ({cols, rows, n_expert}): a 2-D view of its rows. */
static elm_tensor expert_view(const elm_tensor *t, int32_t e) {
    const size_t bytes = (size_t)t->ne[1] * elm_row_bytes(t->type, t->ne[0]);
    elm_tensor v = *t;
    v.n_dims = 2;
    v.ne[2] = 1;
    v.data = (char *)t->data + (size_t)e * bytes;
    v.nbytes = bytes;
    return v;
}

/* Token t's k experts of highest probability plus bias[e] (bias NULL: none), most probable
 * first (the lower index on ties), and their probabilities without the bias divided by their sum
 * (summed as ggml_sum_rows does, clamped to llama.cpp's floor), or for SOFTMAX_WEIGHT their
 * softmax (ggml_soft_max over the k). Each chosen probability is then set to -inf in moe_probs. */
static void route(elm_context *c, int32_t t, const float *bias) {
    const int32_t E = c->m->hp.n_expert, k = c->m->hp.n_expert_used;
    float *p = c->moe_probs + (size_t)t * E;
    int32_t *ids = c->moe_ids + (size_t)t * k;
    float *w = c->moe_w + (size_t)t * k;
    double sum = 0;
    for (int32_t r = 0; r < k; r++) {
        int32_t best = 0;
        float best_sel = bias ? p[0] + bias[0] : p[0];
        for (int32_t e = 1; e < E; e++) {
            const float sel = bias ? p[e] + bias[e] : p[e]; /* ggml_add's float sum */
            if (sel > best_sel) best = e, best_sel = sel;
        }
        ids[r] = best;
        w[r] = p[best];
        sum += w[r];
        p[best] = -INFINITY;
    }
    if (c->m->hp.moe_gating == ELM_MOE_SOFTMAX_WEIGHT) {
        c->k->softmax(w, k);
        return;
    }
    const float s = (float)sum < 6.103515625e-5f ? 6.103515625e-5f : (float)sum;
    for (int32_t r = 0; r < k; r++) w[r] /= s;
}

/* The slots t·k + r of tokens [t0, n) grouped by expert: moe_first[e] .. moe_first[e + 1]. */
static void group_by_expert(elm_context *c, int32_t t0, int32_t n) {
    const int32_t E = c->m->hp.n_expert, k = c->m->hp.n_expert_used;
    int32_t *first = c->moe_first;
    memset(first, 0, sizeof *first * (size_t)(E + 1));
    for (int32_t s = t0 * k; s < n * k; s++) first[c->moe_ids[s] + 1]++;
    for (int32_t e = 0; e < E; e++) first[e + 1] += first[e];
    for (int32_t s = t0 * k; s < n * k; s++) c->moe_slots[first[c->moe_ids[s]]++] = s;
    for (int32_t e = E; e > 0; e--) first[e] = first[e - 1]; /* back to the starts */
    first[0] = 0;
}

/* y[i, j] += b[e, j] for cnt rows of n: expert e's bias (ggml_add_id; F32 [n_expert, n]), if
 * any. */
static void add_expert_bias(float *y, const elm_tensor *b, int32_t e, int32_t cnt, int64_t n) {
    if (!b) return;
    const float *be = (const float *)b->data + (size_t)e * n;
    for (int32_t i = 0; i < cnt; i++)
        for (int64_t j = 0; j < n; j++) y[(size_t)i * n + j] += be[j];
}

/* Expert e of layer l over its cnt slots (moe_slots from moe_first[e]): their tokens' normed
 * inputs gathered from c->xb, the gated FFN, each output × its weight into its slot of moe_y. */
static void run_expert(elm_context *c, int l, int32_t e, int32_t cnt) {
    const elm_layer *L = &c->m->layers[l];
    const int64_t dim = c->m->hp.dim, ff = c->m->hp.expert_ffn_dim;
    const int32_t k = c->m->hp.n_expert_used, *slots = c->moe_slots + c->moe_first[e];
    for (int32_t i = 0; i < cnt; i++)
        memcpy(c->moe_x + i * dim, c->xb + (size_t)(slots[i] / k) * dim, sizeof(float) * dim);
    const elm_tensor gate = expert_view(L->gate_exps, e), up = expert_view(L->up_exps, e),
                     down = expert_view(L->down_exps, e);
    const elm_tensor *gate_up[] = {&gate, &up};
    float *gate_up_out[] = {c->hg, c->hu};
    /* llama.cpp's mul_mat_id dots each row with each token alone, as a product of one token
     * would: out_first at the last token asks a table for that order (all outputs are kept) */
    elm_fw_matmul_group(c, l, 2, gate_up, gate_up_out, c->moe_x, cnt, cnt - 1);
    add_expert_bias(c->hg, L->gate_exps_b, e, cnt, ff);
    add_expert_bias(c->hu, L->up_exps_b, e, cnt, ff);
    elm_fw_glu(c, c->hg, c->hu, (int64_t)cnt * ff);
    elm_fw_matmul(c, l, &down, c->hg, cnt, cnt - 1, c->moe_x);
    add_expert_bias(c->moe_x, L->down_exps_b, e, cnt, dim);
    for (int32_t i = 0; i < cnt; i++) {
        const float w = c->moe_w[slots[i]], *x = c->moe_x + i * dim;
        float *y = c->moe_y + (size_t)slots[i] * dim;
        for (int64_t d = 0; d < dim; d++) y[d] = x[d] * w;
    }
}

/* Token t's k chosen experts of layer l (one token routed: a decode step) as two pool jobs
 * instead of two a expert: the k gate and up products, which share the token's input, then
 * the k down products, each over its own row of c->hg; the same floats as run_expert. */
static void run_token(elm_context *c, int l, int32_t t) {
    const elm_layer *L = &c->m->layers[l];
    const int64_t dim = c->m->hp.dim, ff = c->m->hp.expert_ffn_dim;
    const int32_t k = c->m->hp.n_expert_used;
    elm_tensor views[3][ELM_FW_MAX_GROUP / 2];
    const elm_tensor *gate_up[ELM_FW_MAX_GROUP] = {0}, *down[ELM_FW_MAX_GROUP / 2] = {0};
    float *gate_up_out[ELM_FW_MAX_GROUP] = {0}, *down_out[ELM_FW_MAX_GROUP / 2] = {0};
    for (int32_t r = 0; r < k; r++) {
        const int32_t e = c->moe_ids[(size_t)t * k + r];
        views[0][r] = expert_view(L->gate_exps, e);
        views[1][r] = expert_view(L->up_exps, e);
        views[2][r] = expert_view(L->down_exps, e);
        gate_up[2 * r] = &views[0][r];
        gate_up[2 * r + 1] = &views[1][r];
        down[r] = &views[2][r];
        gate_up_out[2 * r] = c->hg + r * ff;
        gate_up_out[2 * r + 1] = c->hu + r * ff;
        down_out[r] = c->moe_y + ((size_t)t * k + r) * dim;
    }
    elm_fw_matmul_group(c, l, 2 * k, gate_up, gate_up_out, c->xb + (size_t)t * dim, 1, 0);
    for (int32_t r = 0; r < k; r++) {
        const int32_t e = c->moe_ids[(size_t)t * k + r];
        add_expert_bias(c->hg + r * ff, L->gate_exps_b, e, 1, ff);
        add_expert_bias(c->hu + r * ff, L->up_exps_b, e, 1, ff);
    }
    elm_fw_glu(c, c->hg, c->hu, (int64_t)k * ff);
    elm_fw_matmul_rows(c, l, k, down, down_out, c->hg);
    for (int32_t r = 0; r < k; r++) {
        float *y = down_out[r];
        add_expert_bias(y, L->down_exps_b, c->moe_ids[(size_t)t * k + r], 1, dim);
        const float w = c->moe_w[(size_t)t * k + r];
        for (int64_t d = 0; d < dim; d++) y[d] *= w;
    }
}

/* The E router logits p plus the router's bias b (NULL: none) turned into probabilities in place
 * by gating function g (hp.moe_gating): their softmax, each one's sigmoid as
 * ggml_vec_sigmoid_f32 computes it, or the logits themselves (SOFTMAX_WEIGHT: route weighs
 * the chosen). */
static void gate(elm_context *c, int32_t g, const float *b, float *p, int32_t E) {
    for (int32_t e = 0; b && e < E; e++) p[e] += b[e];
    if (g == ELM_MOE_SOFTMAX) c->k->softmax(p, E);
    if (g == ELM_MOE_SIGMOID)
        for (int32_t e = 0; e < E; e++) p[e] = 1.0f / (1.0f + expf(-p[e]));
}

/* The shared expert of layer l over the n normed tokens c->xb, into c->moe_x, weighed by
 * sigmoid(ffn_gate_inp_shexp·x) where the family gates it (Qwen3.5-MoE), as llama.cpp's
 * build_ffn and ggml_sigmoid (the tokens [t0, n) kept). */
static void shared_expert(elm_context *c, int l, int32_t n, int32_t t0) {
    const elm_layer *L = &c->m->layers[l];
    const int64_t dim = c->m->hp.dim;
    elm_fw_gated_ffn(c, l, L->shexp_gate, L->shexp_up, L->shexp_down, c->m->hp.shexp_ffn_dim, n,
                     t0, c->moe_x);
    if (!L->shexp_gate_inp) return;
    float *g = c->moe_probs; /* free once the tokens are routed: one logit per token here */
    elm_fw_matmul(c, l, L->shexp_gate_inp, c->xb, n, t0, g);
    for (int32_t t = t0; t < n; t++) {
        const float w = 1.0f / (1.0f + expf(-g[t]));
        for (int64_t d = 0; d < dim; d++) c->moe_x[(size_t)t * dim + d] *= w;
    }
}

void elm_ffn_moe(elm_context *c, int l, int32_t n, int32_t t0) {
    const elm_hparams *hp = &c->m->hp;
    const int32_t E = hp->n_expert, k = hp->n_expert_used;
    const int64_t dim = hp->dim;
    const elm_layer *L = &c->m->layers[l];
    const float *bias = L->router_bias ? c->moe_bias + (size_t)l * E : NULL;
    const float *logit_bias = L->router_b ? L->router_b->data : NULL;
    elm_fw_matmul(c, l, L->router, c->xb, n, t0, c->moe_probs);
    for (int32_t t = t0; t < n; t++) {
        gate(c, hp->moe_gating, logit_bias, c->moe_probs + (size_t)t * E, E);
        route(c, t, bias);
    }
    if (n - t0 == 1 && 2 * k <= ELM_FW_MAX_GROUP && k <= c->n_batch) {
        run_token(c, l, t0);
    } else {
        group_by_expert(c, t0, n);
        for (int32_t e = 0; e < E; e++)
            if (c->moe_first[e + 1] > c->moe_first[e])
                run_expert(c, l, e, c->moe_first[e + 1] - c->moe_first[e]);
    }
    if (L->shexp_down) shared_expert(c, l, n, t0);
    /* the slots added in rank order, as llama.cpp's graph adds its views, then the shared
     * expert's output; the tokens the caller drops, 0 */
    memset(c->xb, 0, sizeof(float) * (size_t)t0 * dim);
    for (int32_t t = t0; t < n; t++) {
        float *y = c->xb + (size_t)t * dim;
        memcpy(y, c->moe_y + (size_t)t * k * dim, sizeof(float) * dim);
        for (int32_t r = 1; r < k; r++) {
            const float *s = c->moe_y + ((size_t)t * k + r) * dim;
            for (int64_t d = 0; d < dim; d++) y[d] += s[d];
        }
        if (L->shexp_down)
            for (int64_t d = 0; d < dim; d++) y[d] += c->moe_x[(size_t)t * dim + d];
    }
}
