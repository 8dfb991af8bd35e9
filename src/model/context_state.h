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

/* Where a layer's keys and values lie in the context's cache (context.c lays them out layer
 * after layer, each position one row of the layer's own width). */
typedef struct elm_kv_layer {
    size_t k_off, v_off;      /* bytes into k_cache / v_cache of the layer's row 0 */
    size_t k_row, v_row;      /* bytes of one position's keys / values (dim elements) */
    int32_t dim;              /* floats per position: the layer's KV heads · its head size */
    int32_t k_block, v_block; /* elements per quantization block (kv_quant.h) */
    int32_t rows;             /* n_ctx, or for a windowed layer of an interleaved family a ring
                               * of swa_rows when that is fewer (position p at row
                               * p % swa_rows); 0: none (a recurrent layer) */
    bool own;                 /* false: the rows are those of the layer it reads
                               * (elm_layer_kv_src, Gemma 4's last layers), never written */
} elm_kv_layer;

struct elm_context {
    const elm_model *m;
    const elm_kernels *k; /* elm_kernels_best, or elm_kernels_ggml with ggml_rounding */
    elm_pool *pool;
    int32_t n_ctx, n_batch, n_past;
    int32_t kv_dim;     /* the widest layer's elm_kv_layer.dim (the buffers' width) */
    int32_t head_dim;   /* the widest layer's head size (elm_layer_head_dim; q is n_heads·this) */
    unsigned char *k_cache, *v_cache;
    elm_kv_layer *kv;   /* [n_layers] layer l's rows in k_cache and v_cache */
    size_t k_bytes, v_bytes; /* of k_cache and v_cache: the layers' own rows */
    int32_t swa_rows;   /* rows of a ring, 0 when no layer has one */
    elm_type type_k, type_v;  /* cache element types (kv_quant.h) */
    float *k_deq, *v_deq;     /* [n_ctx, kv_dim] one layer decoded for attention (a ring in
                               * position order); NULL for f32 without rings */
    int32_t *tokens;          /* [n_ctx] ids of the cached positions (kv_cache.c) */
    /* activations for up to n_batch tokens */
    float *x;        /* [n_batch, dim] residual stream */
    float *xb;       /* [n_batch, dim] normed input of a block */
    float *q;        /* [n_batch, n_heads * head_dim] (the widest layer's head_dim) */
    float *qg;       /* [n_batch, 2 · n_heads * head_dim] a gated family's q projection
                      * (elm_arch.attn_gate): each head's query, then its gate; else NULL */
    float *kb, *vb;  /* [n_batch, kv_dim] */
    float *att;      /* [n_batch, n_heads * head_dim] attention output before wo */
    float *hg, *hu;  /* [n_batch, ffn_dim] gate and up projections (the widest layer's, or an
                      * expert's expert_ffn_dim where wider) */
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
                      * ffn-post: Gemma 3; and the per-layer embedding's post_norm: Gemma 4)
                      * norms, then [dim] output norm */
    int n_norms;     /* 2, 4 with post-norms, 5 with per-layer embeddings too */
    float *qk_norms; /* float copies [n_layers, 2, head_dim] of q/k norms (Qwen3; a layer's own
                      * head size of each head_dim, a layer without k norm: zeros), else NULL */
    float *ones;     /* [head_dim] 1s: the weights of the unweighted V norm (Gemma 4), else NULL */
    float *out_scale; /* [n_layers] the blocks' output scales (Gemma 4's layer_output_scale; 1
                       * where a layer has none), NULL when none has one */
    /* Gemma 4's per-layer embeddings (model.h: ple_embd), when the model has them, else NULL: */
    float *ple;      /* [n_batch, n_layers, P] each token's input to each layer */
    float *ple_row;  /* [n_layers · P] one token's row of the table */
    float *ple_g;    /* [n_batch, P] the gate of a layer */
    float *ple_norm; /* [P] per_layer_proj_norm as floats */
    elm_rope_freqs rope; /* the layers' RoPE frequencies (kernels.h) */
    float *inv_freq; /* [rope_dim / 2] rope.inv_freq */
    float *rope_ff;  /* [rope_dim / 2] the frequency divisors for this context (rope.ff when not
                      * all 1): the model's (elm_model_rope_factors: rope_freqs, or LongRoPE's
                      * long or short factors), infinite for pairs M-RoPE stills in text
                      * (rope_sections) */
    float *rope_cs;  /* [n_batch, rope_dim] cos, sin of each pair's angle at the batch positions */
    elm_rope_freqs rope_swa; /* windowed layers with their own RoPE base (hp.rope_theta_swa) and
                              * dimensions (hp.rope_dim_swa, else rope_dim) */
    float *inv_freq_swa, *rope_cs_swa; /* their inv_freq and rope_cs, else NULL */
    int32_t *pos;    /* [n_batch] each token's position in its sequence */
    int32_t *row0;   /* [n_batch] cache row of its sequence's position 0 (elm_forward_seqs) */
    int32_t *pos_end; /* [n_batch] a non-causal model's (hp.non_causal): the last position of
                       * each token's sequence in the batch, which it attends up to; else NULL */
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
    /* A mixture of experts (hp.n_expert E > 0; k = hp.n_expert_used), else NULL (ffn_moe.c): */
    float *moe_probs;     /* [n_batch, E] the router's probabilities (the chosen: -inf) */
    int32_t *moe_ids;     /* [n_batch, k] each token's chosen experts, most probable first */
    float *moe_w;         /* [n_batch, k] their weights */
    int32_t *moe_slots;   /* [n_batch · k] the slots t·k + r grouped by expert */
    int32_t *moe_first;   /* [E + 1] where each expert's slots start in moe_slots */
    float *moe_x;         /* [n_batch, dim] an expert's tokens gathered, then its outputs; then
                           * the shared expert's outputs */
    float *moe_y;         /* [n_batch · k, dim] each slot's weighted expert output */
    float *moe_bias;      /* [n_layers, E] each layer's selection bias (elm_layer.router_bias),
                           * decoded; NULL in a family without one */
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

/* Cache rows of layer l's own of hp in a context of n_ctx: n_ctx, or the window and its spare
 * rows for a windowed layer of an interleaved family when fewer; 0 for a recurrent layer and one
 * that reads another's (kv_cache.c). */
int32_t elm_kv_layer_rows(const elm_hparams *hp, int l, int32_t n_ctx);

/* Layer l's first key / value row (elm_kv_layer: another layer's where it reads that one's), and
 * whether it is a ring. */
static inline unsigned char *elm_kv_layer_k(const elm_context *c, int l) {
    return c->k_cache + c->kv[l].k_off;
}
static inline unsigned char *elm_kv_layer_v(const elm_context *c, int l) {
    return c->v_cache + c->kv[l].v_off;
}
static inline bool elm_kv_layer_ring(const elm_context *c, int l) {
    return c->kv[l].rows < c->n_ctx;
}

#endif
