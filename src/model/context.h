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
    float *k_cache, *v_cache; /* [n_layers, n_ctx, kv_dim] each */
    /* activations for up to n_batch tokens */
    float *x;        /* [n_batch, dim] residual stream */
    float *xb;       /* [n_batch, dim] normed input of a block */
    float *q;        /* [n_batch, dim] */
    float *kb, *vb;  /* [n_batch, kv_dim] */
    float *att;      /* [n_batch, dim] attention output before wo */
    float *hg, *hu;  /* [n_batch, ffn_dim] gate and up projections */
    float *scores;   /* [n_threads, n_ctx] attention weights per thread */
    float *scratch;  /* [n_threads, scratch_cols] decoded weight rows per thread */
    int64_t scratch_cols;
    float *norms;    /* float copies: [n_layers, 2, dim] attn/ffn norms, then [dim] output norm */
    float *inv_freq; /* [rope_dim / 2] RoPE frequencies */
    elm_matmul_hook hook;
    void *hook_user;
};

#endif
