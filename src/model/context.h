/* Private layout of elm_context, shared by context.c (allocation) and forward.c (the pass). */
#ifndef EDGELM_MODEL_CONTEXT_H
#define EDGELM_MODEL_CONTEXT_H

#include "core/threadpool.h"
#include "edgelm/context.h"
#include "kernels/kernels.h"

struct elm_context {
    const elm_model *m;
    const elm_kernels *k;
    elm_pool *pool;
    int32_t n_ctx, n_batch, n_past;
    int32_t kv_dim;
    unsigned char *k_cache, *v_cache; /* [n_layers, n_ctx, k_row / v_row bytes] */
    elm_type type_k, type_v;  /* cache element types (kv_quant.h) */
    bool ggml_rounding;       /* elm_context_params.ggml_rounding */
    int32_t k_block, v_block; /* elements per quantization block */
    size_t k_row, v_row;      /* bytes of one position's keys / values (kv_dim elements) */
    float *k_deq, *v_deq;     /* [n_ctx, kv_dim] one layer decoded for attention; NULL for f32 */
    int32_t *tokens;          /* [n_ctx] ids of the cached positions (kv_cache.c) */
    /* activations for up to n_batch tokens */
    float *x;        /* [n_batch, dim] residual stream */
    float *xb;       /* [n_batch, dim] normed input of a block */
    float *q;        /* [n_batch, n_heads * head_dim] */
    float *kb, *vb;  /* [n_batch, kv_dim] */
    float *att;      /* [n_batch, n_heads * head_dim] attention output before wo */
    float *hg, *hu;  /* [n_batch, ffn_dim] gate and up projections */
    void *xq;        /* [n_batch] q8 rows (kernels.h) of a product's input, max_cols wide */
    float *xt;       /* [n_batch rounded up to 16, max_cols] a product's input by 16-token chunks,
                      * transposed (elm_matmul_args.xt) */
    float *xr;       /* [n_batch, max_cols] with ggml_rounding: an F16/BF16 product's input
                      * rounded to its weights' type, else NULL */
    float *scores;   /* [n_threads, n_ctx] attention weights per thread */
    unsigned char *scratch; /* [n_threads, scratch_bytes] matmul scratch, 64-byte aligned */
    size_t scratch_bytes;
    float *norms;    /* float copies: [n_layers, 2, dim] attn/ffn norms, then [dim] output norm */
    float *qk_norms; /* float copies [n_layers, 2, head_dim] of q/k norms (Qwen3), else NULL */
    float *inv_freq; /* [rope_dim / 2] RoPE frequencies */
    float *rope_cs;  /* [n_batch, rope_dim] cos, sin of each pair's angle at the batch positions */
    int32_t *pos;    /* [n_batch] each token's position in its sequence */
    int32_t *row0;   /* [n_batch] cache row of its sequence's position 0 (elm_forward_seqs) */
    elm_matmul_hook hook;
    void *hook_user;
};

#endif
