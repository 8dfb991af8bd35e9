/* What the forward pass (forward.c) lends its layer kinds (layer_kind.h): matrix products on the
 * context's thread pool. Private to src/model. */
#ifndef EDGELM_MODEL_FORWARD_OPS_H
#define EDGELM_MODEL_FORWARD_OPS_H

#include "model/context_state.h"

/* The most products one pool job runs (elm_fw_matmul_group, elm_fw_matmul_rows): a decoded
 * token's gate and up products of 8 experts (Qwen3-MoE). */
#define ELM_FW_MAX_GROUP 16

/* Y_i[n_tok, rows_i] = X[n_tok, cols] · W_iᵀ for the n (<= ELM_FW_MAX_GROUP) weights w of layer
 * `layer` (-1: the output), which share their input x; the caller keeps the tokens
 * [out_first, n_tok) of each y_i (elm_matmul_args.out_first). Split over the pool by weight
 * rows, so that each weight row is read once whatever n_tok; runs the context's matmul hook
 * first (calibration). */
void elm_fw_matmul_group(elm_context *c, int layer, int n, const elm_tensor *const *w,
                         float *const *y, const float *x, int64_t n_tok, int64_t out_first);
void elm_fw_matmul(elm_context *c, int layer, const elm_tensor *w, const float *x, int64_t n_tok,
                   int64_t out_first, float *y);

/* y_i[rows_i] = W_i · x_i for n (<= ELM_FW_MAX_GROUP, <= the context's batch) products of one
 * token each, x_i being row i of x ([n, cols], every W_i cols wide): a decoded token's experts'
 * down products as one pool job. The same floats as n elm_fw_matmul calls of one token. */
void elm_fw_matmul_rows(elm_context *c, int layer, int n, const elm_tensor *const *w,
                        float *const *y, const float *x);

/* g[i] = act(g[i]) · u[i] over n by the model's gate activation (hp.ffn_act): SwiGLU, GeGLU
 * (the kernels') or gpt-oss's clamped SwiGLU. */
void elm_fw_glu(elm_context *c, float *g, const float *u, int64_t n);

/* out[n, dim] = down · glu(gate·x, up·x) over layer l's n normed tokens x = c->xb, the FFN n_ff
 * wide (a block's dense FFN, a shared expert); c->hg and c->hu hold the [n, n_ff] products; the
 * caller keeps the tokens [t0, n) (elm_matmul_args.out_first). out may be c->xb. */
void elm_fw_gated_ffn(elm_context *c, int l, const elm_tensor *gate, const elm_tensor *up,
                      const elm_tensor *down, int64_t n_ff, int32_t n, int32_t t0, float *out);

/* The attention layer kind: mixes the batch's n normed tokens c->xb into c->xb (their keys and
 * values go into layer l's cache first). */
void elm_layer_attention(elm_context *c, int l, int32_t n);

/* Layer l's mixture-of-experts FFN (ffn_moe.c) over the batch's n normed tokens c->xb, into
 * c->xb: the tokens [t0, n) routed and run through their experts, the others' rows 0 (the caller
 * keeps [t0, n), elm_matmul_args.out_first). */
void elm_ffn_moe(elm_context *c, int l, int32_t n, int32_t t0);

#endif
