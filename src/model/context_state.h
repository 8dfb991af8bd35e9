/* Private layout of elm_context, shared by context.c (allocation) and forward.c (the pass). */
#ifndef EDGELM_MODEL_CONTEXT_STATE_H
#define EDGELM_MODEL_CONTEXT_STATE_H

#include "core/threadpool.h"
#include "edgelm/context.h"
#include "kernels/kernels.h"

/* Consecutive tokens of one sequence in a batch: [t0, t0 + n), positions rising by one. */
typedef struct elm_seq_run {
    int32_t t0, n, seq;
} elm_seq_run;

/* Checkpoints of the recurrent state kept per sequence (seq_state.c): at the start and end of
 * each multi-token run, so a speculative draft's rejection or a shared prompt prefix goes back to
 * one and replays the tokens after it. */
enum { ELM_STATE_CKPTS = 4 };

struct elm_context {
    const elm_model *m;
    const elm_kernels *k; /* elm_kernels_best, or elm_kernels_ggml with ggml_rounding */
    elm_pool *pool;
    int32_t n_ctx, n_batch, n_past;
    int32_t kv_dim;
    /* Layer l's keys and values are cache rows [layer_row[l], layer_row[l + 1]) of k_row / v_row
     * bytes: n_ctx rows, or for a windowed layer of an interleaved family (hp.swa_period) a ring
     * of swa_rows rows when that is fewer, position p at row p % swa_rows (kv_ring_rows). */
    unsigned char *k_cache, *v_cache;
    int32_t *layer_row; /* [n_layers + 1] */
    int32_t swa_rows;   /* rows of a ring, 0 when no layer has one */
    elm_type type_k, type_v;  /* cache element types (kv_quant.h) */
    int32_t k_block, v_block; /* elements per quantization block */
    size_t k_row, v_row;      /* bytes of one position's keys / values (kv_dim elements) */
    float *k_deq, *v_deq;     /* [n_ctx, kv_dim] one layer decoded for attention (a ring in
                               * position order); NULL for f32 without rings */
    int32_t *tokens;          /* [n_ctx] ids of the cached positions (kv_cache.c) */
    /* activations for up to n_batch tokens */
    float *x;        /* [n_batch, dim] residual stream */
    float *xb;       /* [n_batch, dim] normed input of a block */
    float *q;        /* [n_batch, n_heads * head_dim] */
    float *qg;       /* [n_batch, 2 · n_heads * head_dim] a gated family's q projection
                      * (elm_arch.attn_gate): each head's query, then its gate; else NULL */
    float *kb, *vb;  /* [n_batch, kv_dim] */
    float *att;      /* [n_batch, n_heads * head_dim] attention output before wo */
    float *hg, *hu;  /* [n_batch, ffn_dim] gate and up projections */
    void *xq;        /* [n_batch] q8 rows (kernels.h) of a product's input, max_cols wide */
    float *xt;       /* [n_batch rounded up to 16, max_cols] a product's input by 16-token chunks,
                      * transposed (elm_matmul_args.xt) */
    uint32_t *xp;    /* [n_batch rounded up to 16, max_cols / 2] xt rounded to BF16 and paired
                      * (elm_matmul_args.xp), for BF16 weights where the table pairs; else NULL */
    float *xr;       /* [n_batch, max_cols] where the table rounds float inputs (round_float_act):
                      * an F16/BF16 product's input rounded to its weights' type, else NULL */
    float *scores;   /* [n_threads, n_ctx] attention weights per thread */
    unsigned char *scratch; /* [n_threads, scratch_bytes] matmul scratch, 64-byte aligned */
    size_t scratch_bytes;
    float *norms;    /* float copies: [n_layers, n_norms, dim] attn, ffn (and attn-post,
                      * ffn-post: Gemma 3) norms, then [dim] output norm */
    int n_norms;     /* 2, or 4 with post-norms */
    float *qk_norms; /* float copies [n_layers, 2, head_dim] of q/k norms (Qwen3), else NULL */
    elm_rope_freqs rope; /* the layers' RoPE frequencies (kernels.h) */
    float *inv_freq; /* [rope_dim / 2] rope.inv_freq */
    float *rope_ff;  /* [rope_dim / 2] the frequency divisors for this context (rope.ff when not
                      * all 1): the model's (elm_model_rope_factors: rope_freqs, or LongRoPE's
                      * long or short factors), infinite for pairs M-RoPE stills in text
                      * (rope_sections) */
    float *rope_cs;  /* [n_batch, rope_dim] cos, sin of each pair's angle at the batch positions */
    elm_rope_freqs rope_swa; /* windowed layers with their own RoPE base (hp.rope_theta_swa) */
    float *inv_freq_swa, *rope_cs_swa; /* their inv_freq and rope_cs, else NULL */
    int32_t *pos;    /* [n_batch] each token's position in its sequence */
    int32_t *row0;   /* [n_batch] cache row of its sequence's position 0 (elm_forward_seqs) */
    elm_matmul_hook hook;
    void *hook_user;
    /* Recurrent layers (layer_kind.h), when the model has any (state_floats > 0): */
    int64_t state_floats; /* per sequence, all layers */
    int64_t *state_off;   /* [n_layers] where layer l's state starts in a sequence's */
    float *state;         /* [n_seq, state_floats] */
    int32_t n_seq;        /* sequences with a state (elm_context_params.n_seq) */
    int32_t seq_rows;     /* cache rows per sequence: a token of row0 r is sequence r / seq_rows */
    int32_t *seq_pos;     /* [n_seq] tokens the sequence's state has taken in */
    float *ckpt;          /* [n_seq, ELM_STATE_CKPTS, state_floats] */
    int32_t *ckpt_pos;    /* [n_seq, ELM_STATE_CKPTS] the position of each, -1: empty */
    elm_seq_run *runs;    /* [n_batch] the batch's runs, n_runs of them (elm_seq_begin) */
    int n_runs;
    float *mix;           /* [n_batch, the kinds' scratch_floats] */
};

/* Sequence seq's state of layer l. */
static inline float *elm_seq_state(const elm_context *c, int seq, int l) {
    return c->state + (size_t)seq * (size_t)c->state_floats + (size_t)c->state_off[l];
}

/* Before the layers of a batch whose c->pos and c->row0 are set: cuts it into runs of one
 * sequence (c->runs), zeroes the state of a run starting at position 0 and checkpoints the state
 * a multi-token run starts from. ELM_ERR_ARG when a run does not continue where its sequence's
 * state stopped (elm_seq_restore first). No-op without recurrent layers. */
elm_status elm_seq_begin(elm_context *c, int32_t n, elm_error *err);

/* After the layers: the runs' sequences stand at their last positions + 1, checkpointed at the
 * end of multi-token runs. */
void elm_seq_end(elm_context *c);

/* Puts sequence seq back at its checkpoint of the largest position <= n_max (0: the empty
 * state), drops its checkpoints beyond, and returns that position. */
int32_t elm_seq_restore(elm_context *c, int seq, int32_t n_max);

/* The ring of a windowed layer holds the window plus spare rows, max(n_swa / 2, ELM_SWA_SPARE):
 * room for a chunk of spare + 1 new tokens (a prefill goes through a ring layer chunk by chunk)
 * and for rolling back (elm_context_truncate) up to spare + 1 tokens. Half the window keeps a
 * real model's prefill in few chunks (Gemma 3 1B: 256 rows, 6 MiB of f16 cache in all). */
enum { ELM_SWA_SPARE = 32 };

/* Cache rows of layer l of hp in a context of n_ctx: n_ctx, or the window and its spare rows for
 * a windowed layer of an interleaved family when fewer (kv_cache.c). */
int32_t elm_kv_layer_rows(const elm_hparams *hp, int l, int32_t n_ctx);

/* Layer l's first key / value row (context.h: layer_row), and whether it is a ring. */
static inline unsigned char *elm_kv_layer_k(const elm_context *c, int l) {
    return c->k_cache + (size_t)c->layer_row[l] * c->k_row;
}
static inline unsigned char *elm_kv_layer_v(const elm_context *c, int l) {
    return c->v_cache + (size_t)c->layer_row[l] * c->v_row;
}
static inline bool elm_kv_layer_ring(const elm_context *c, int l) {
    return c->layer_row[l + 1] - c->layer_row[l] < c->n_ctx;
}

#endif
