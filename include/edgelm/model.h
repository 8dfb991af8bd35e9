/* The one in-memory model type every loader produces (ARCHITECTURE.md: "loaders translate into one
 * model type"). Nothing after the loader knows which file layout the model came from.
 *
 * Tensors use GGUF names and ggml shape conventions: ne[0] is the contiguous dimension, so a
 * linear layer's weight W[out, in] (PyTorch) has ne = {in, out}. Each architecture has its RoPE
 * form (hparams.rope_style) as llama.cpp runs it: interleaved for "llama" (the HF Llama loader
 * permutes q/k rows into it), rotate-half (NEOX) for "qwen2", "qwen3", "phi3", "gemma", "gemma3",
 * "gemma4", "gemma-embedding", "qwen35", "qwen3moe", "lfm2moe" and "gpt-oss". Norm weights are stored as they multiply (Gemma's and Qwen3.5's GGUF
 * convention: HF's w + 1; Gemma 4's HF weights multiply as they are). */
#ifndef EDGELM_MODEL_H
#define EDGELM_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "edgelm/error.h"
#include "edgelm/types.h"
#include "edgelm/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELM_MAX_DIMS 4
#define ELM_NAME_MAX 96
#define ELM_MAX_LAYERS 1024
#define ELM_MAX_EXPERTS 512 /* llama.cpp's LLAMA_MAX_EXPERTS */

struct elm_kernels; /* private: a kernel table (kernels/kernels.h) */

typedef struct elm_tensor {
    char name[ELM_NAME_MAX];
    elm_type type;
    int n_dims;
    int64_t ne[ELM_MAX_DIMS]; /* ne[0] contiguous; unused dims are 1 */
    void *data;               /* points into a mapping or an owned buffer of the model */
    size_t nbytes;
    /* NULL: data is in the file's layout. Else the kernel table whose layout data was packed in
     * at load (elm_load_opts.in_memory): only the forward pass reads it, through that table. */
    const struct elm_kernels *packed_by;
} elm_tensor;

/* Pairs RoPE rotates: (x[2i], x[2i+1]) ("normal", GPT-J style) or (x[i], x[i + rope_dim/2])
 * (NEOX, rotate-half). */
typedef enum elm_rope_style { ELM_ROPE_NORM = 0, ELM_ROPE_NEOX = 1 } elm_rope_style;

/* Gate activation of the gated feed-forward block: SwiGLU (Llama, Qwen2, Phi-3), GeGLU with
 * the tanh approximation of GELU (Gemma), or gpt-oss's clamped SwiGLU (ggml_swiglu_oai, alpha
 * 1.702, limit 7): min(g, 7)·sigmoid(1.702·min(g, 7)) · (clamp(u, -7, 7) + 1). */
typedef enum elm_ffn_act {
    ELM_ACT_SILU = 0,
    ELM_ACT_GELU_TANH = 1,
    ELM_ACT_SWIGLU_OAI = 2
} elm_ffn_act;

/* What mixes the tokens in a block (docs/ARCHITECTURE.md, "Layer kinds"): attention over the KV
 * cache, or a recurrent layer that keeps a fixed-size state per sequence instead. */
typedef enum elm_layer_kind {
    ELM_LAYER_ATTENTION = 0,
    ELM_LAYER_SHORTCONV = 1, /* LFM2's gated short convolution: B·x through a causal depthwise
                              * convolution of conv_l taps, times C */
    ELM_LAYER_MAMBA2 = 2,    /* Mamba-2's selective state space (Granite 4.0-H): a causal
                              * convolution of conv_l taps, then a scan with one decay per head */
    ELM_LAYER_DELTANET = 3,  /* Qwen3.5's Gated DeltaNet: linear attention whose state per value
                              * head is a ssm_state² matrix updated by the gated delta rule */
    ELM_LAYER_KINDS
} elm_layer_kind;

/* How a mixture of experts' router turns its logits into probabilities (GGUF
 * <arch>.expert_gating_func, llama.cpp's llama_expert_gating_func_type): a softmax over the
 * experts, each one's sigmoid (both then renormalised over the chosen), or the top k of the raw
 * logits and a softmax over those k alone (SOFTMAX_WEIGHT, gpt-oss). */
enum { ELM_MOE_SOFTMAX = 1, ELM_MOE_SIGMOID = 2, ELM_MOE_SOFTMAX_WEIGHT = 3 };

typedef struct elm_hparams {
    char arch[32];         /* GGUF architecture: "llama", "qwen2", "qwen3", "phi3", "gemma",
                            * "gemma3", "gemma4", "gemma-embedding", "smollm3", "lfm2",
                            * "granitehybrid", "qwen35", "qwen3moe", "lfm2moe",
                            * "gpt-oss" */
    int32_t n_vocab;
    int32_t dim;           /* embedding length */
    int32_t n_layers;
    int32_t n_heads;
    int32_t n_kv_heads;    /* grouped-query attention: n_heads % n_kv_heads == 0 */
    int32_t head_dim;      /* per head; dim / n_heads unless the file says (Gemma: 256) */
    int32_t ffn_dim;       /* gated FFN hidden size */
    int32_t n_ctx_train;   /* trained context length, tokens */
    int32_t rope_dim;      /* rotated dimensions per head (== head_dim here) */
    float rms_eps;
    float rope_theta;
    bool tied_output;      /* output projection is the token embedding */
    /* Set by elm_model_bind from the architecture (loaders leave them 0): */
    elm_rope_style rope_style;
    elm_ffn_act ffn_act;
    float embd_scale;      /* token embeddings are multiplied by this: 1, sqrt(dim) for Gemma; the
                            * file's for Granite (GGUF embedding_scale, config.json
                            * embedding_multiplier; 1 when absent) */
    int32_t nope_every;    /* layers l with (l + 1) % nope_every == 0 skip RoPE (NoPE; SmolLM3:
                            * 4); 0: every layer rotates */
    bool v_norm;           /* values RMSNormed per head without weights (Gemma 4) */
    bool full_last_layer;  /* the last layer runs every token as llama.cpp's graph does (Gemma 4),
                            * not the logits' rows alone from its FFN on */
    /* From the file (0 = absent): */
    int32_t n_swa;         /* sliding-window attention: a token sees the last n_swa positions */
    float rope_freq_scale; /* linear RoPE scaling, angle × this (1 / factor); 0 means 1 */
    /* LongRoPE (Phi-3.5-mini, Phi-4-mini; elm_model.rope_long/rope_short) and RoPE's magnitude: */
    int32_t n_ctx_orig;    /* the context the model was pre-trained at before its extension to
                            * n_ctx_train, tokens (GGUF rope.scaling.original_context_length,
                            * config.json original_max_position_embeddings; llama.cpp's
                            * n_ctx_orig_yarn). A context of more tokens per sequence runs the
                            * long factors, one of at most this many the short ones. 0 until
                            * bound: n_ctx_train */
    float rope_attn_factor; /* RoPE's cos and sin are multiplied by this, so every attention
                             * score by its square (GGUF rope.scaling.attn_factor; for LongRoPE
                             * config.json's rope_scaling.attention_factor, else, as llama.cpp's
                             * converter computes it, sqrt(1 + ln(s) / ln(n_ctx_orig)) for
                             * s = n_ctx_train / n_ctx_orig > 1). 0 until bound: 1 */
    /* YaRN (Peng et al. 2023; GGUF rope.scaling.type "yarn", config.json rope_scaling
     * rope_type "yarn"; gpt-oss): the angles of each pair blend the interpolated (×
     * rope_freq_scale) and the original ones by ggml's ramp between the correction dimensions of
     * beta_fast and beta_slow rotations over n_ctx_orig, and cos and sin scale by
     * 1 + 0.1·ln(1 / rope_freq_scale), as llama.cpp runs it (ext_factor 1) */
    bool rope_yarn;
    float yarn_beta_fast;  /* rope.scaling.yarn_beta_fast; 0 until bound: 32 */
    float yarn_beta_slow;  /* rope.scaling.yarn_beta_slow; 0 until bound: 1 */
    /* Interleaved local and global layers (Gemma 3); elm_model_bind fills the family's defaults: */
    int32_t swa_period;    /* > 0: only layers l with l % swa_period < swa_period - 1 use the
                            * window (Gemma 3: 6, every 6th layer global); 0: all (Mistral) */
    float rope_theta_swa;  /* RoPE base of the windowed layers, which take no RoPE scaling
                            * (Gemma 3: 10000); 0: the same RoPE as the others */
    float attn_scale;      /* scores q·k × this; 0 until bound: 1/sqrt(head_dim) */
    float logit_softcap;   /* > 0: logits = softcap · tanh(logits / softcap); 0: none */
    /* Granite's multipliers (model/arch.h: elm_arch.multipliers; 0 until bound: 1): */
    float residual_scale;  /* each block's mixing and FFN outputs × this before their residual
                            * adds (GGUF residual_scale, config.json residual_multiplier) */
    float logit_scale;     /* logits × (1 / this), the reciprocal rounded to float as llama.cpp
                            * takes it (GGUF logit_scale, config.json logits_scaling) */
    bool no_rope;          /* no layer rotates q and k (Granite 4.0-H: GGUF rope.scaling.finetuned
                            * false, config.json position_embedding_type "nope") */
    int32_t first_layer;   /* a view of some layers (elm_forward_hidden): the index of its first
                            * in the whole model, which local/global and NoPE layers follow */
    /* Hybrid families (model/arch.h: elm_arch.recurrent): */
    int32_t conv_l;        /* taps of the recurrent kind's causal convolution (GGUF
                            * shortconv.l_cache, LFM2: 3; ssm.conv_kernel, Mamba-2 and Gated
                            * DeltaNet: 4) */
    /* Mamba-2 (ELM_LAYER_MAMBA2; GGUF ssm.*, config.json mamba_*) and Gated DeltaNet
     * (ELM_LAYER_DELTANET; GGUF ssm.*, llama.cpp's names; Qwen3.5 0.8B: 2048, 128, 16, 16): */
    int32_t ssm_inner;     /* d_inner: Mamba-2's channels of x, z and y, 2·dim; DeltaNet's value
                            * width, ssm_heads · ssm_state (ssm.inner_size) */
    int32_t ssm_state;     /* d_state: Mamba-2's state per channel, and the width of B and C per
                            * group (Granite 4.0-H: 128); DeltaNet's key and value head size
                            * (ssm.state_size) */
    int32_t ssm_heads;     /* Mamba-2's heads of d_inner / ssm_heads channels, each with its dt, A
                            * and D; DeltaNet's value heads, a multiple of its key heads
                            * (ssm.time_step_rank, which llama.cpp reuses for it) */
    int32_t ssm_groups;    /* Mamba-2's groups of heads sharing B and C, and of channels the gated
                            * RMSNorm normalizes together (Granite 4.0-H: 1); DeltaNet's key (and
                            * query) heads (ssm.group_count) */
    /* M-RoPE sections (GGUF rope.dimension_sections; Qwen3.5: 11, 11, 10, 0): rotated pairs per
     * position stream. A text token has one position in every stream, so the pass does not read
     * them; the writers keep them. */
    int32_t rope_sections[4];
    uint8_t recurrent[ELM_MAX_LAYERS]; /* 1 where whole-model layer l has no attention but the
                                        * family's recurrent kind (GGUF: its head_count_kv 0, or
                                        * Qwen3.5's full_attention_interval) */
    int32_t n_nextn;       /* blocks after the n_layers that predict further tokens (GGUF
                            * nextn_predict_layers: Qwen3.5's MTP), whose tensors are carried
                            * (blk.n_layers...) and never run; 0: none */
    /* Layers of two kinds and shared caches (Gemma 4, model/arch.h: elm_arch.swa_listed): */
    bool swa_listed;       /* the windowed layers are those of swa_layer, not swa_period's */
    uint8_t swa_layer[ELM_MAX_LAYERS]; /* 1 where whole-model layer l uses the window (GGUF
                                        * attention.sliding_window_pattern as bools) */
    int32_t head_dim_swa;  /* head size of the windowed layers (GGUF attention.key_length_swa;
                            * Gemma 4: 256, head_dim being the global layers' 512); 0: head_dim */
    int32_t rope_dim_swa;  /* their rotated dimensions (rope.dimension_count_swa); 0: rope_dim */
    int32_t layer_kv_heads[ELM_MAX_LAYERS]; /* > 0: KV heads of whole-model layer l where a
                                             * per-layer head_count_kv gives them, else
                                             * n_kv_heads */
    int32_t layer_ffn[ELM_MAX_LAYERS]; /* > 0: FFN size of whole-model layer l where a per-layer
                                        * feed_forward_length gives it (ffn_dim: the largest) */
    int32_t n_kv_shared;   /* the last n_kv_shared layers compute no keys and values and read
                            * those of an earlier layer (elm_layer_kv_src; Gemma 4 E2B: 20) */
    int32_t n_embd_per_layer; /* per-layer embeddings (Gemma 4's PLE): P values per layer and
                               * token (GGUF embedding_length_per_layer_input; E2B: 256), 0: none */
    /* Mixtures of experts (model/arch.h: elm_arch.moe; Qwen3-30B-A3B: 128, 8, 768;
     * LFM2-8B-A1B: 32, 4, 1792), else 0: */
    int32_t n_expert;      /* experts per layer (GGUF expert_count) */
    int32_t n_expert_used; /* experts each token is routed to, top-k (expert_used_count) */
    int32_t expert_ffn_dim; /* an expert's FFN size (expert_feed_forward_length; absent: ffn_dim
                             * / n_expert_used, as llama.cpp takes it) */
    int32_t n_dense_lead;  /* the first n_dense_lead layers have a dense FFN of ffn_dim, the
                            * others experts (leading_dense_block_count; LFM2-8B-A1B: 2) */
    int32_t moe_gating;    /* the router's probabilities from its logits, llama.cpp's numbers
                            * (expert_gating_func): ELM_MOE_SOFTMAX or ELM_MOE_SIGMOID */
    int32_t shexp_ffn_dim; /* the shared expert's FFN size, run for every token beside the
                            * routed ones (expert_shared_feed_forward_length; Granite-4.0-H-Tiny:
                            * 1024), 0: none (elm_arch.moe_shared: ffn_dim when absent) */
    /* Embedding models (include/edgelm/embed.h): */
    bool non_causal;       /* set by elm_model_bind from the family (EmbeddingGemma): every token
                            * attends to every position of its sequence in the batch, before and
                            * after it, and a window is symmetric (|p - pos| <= n_swa / 2) */
    int32_t pooling;       /* how the file says to pool the hidden states into one vector (GGUF
                            * <arch>.pooling_type, llama.cpp's enum: 0 none (or absent), 1 mean,
                            * 2 CLS, 3 last token, 4 rank; elm_pooling) */
    int32_t dense_dim;     /* sentence-transformers' Dense projections after pooling, dense_2
                            * [dense_dim, dim] then dense_3 [dim, dense_dim] (GGUF
                            * dense_2_feat_out; EmbeddingGemma 300M: 3072); 0: none */
} elm_hparams;

/* Whether layer l of hp skips RoPE (hp.no_rope, hp.nope_every). */
static inline bool elm_layer_nope(const elm_hparams *hp, int l) {
    return hp->no_rope ||
           (hp->nope_every > 0 && (hp->first_layer + l + 1) % hp->nope_every == 0);
}

/* Whether layer l of hp attends through the sliding window (hp.n_swa, hp.swa_period, or
 * hp.swa_layer where hp.swa_listed). */
static inline bool elm_layer_swa(const elm_hparams *hp, int l) {
    l += hp->first_layer;
    if (hp->swa_listed) return hp->n_swa > 0 && hp->swa_layer[l];
    return hp->n_swa > 0 && (hp->swa_period == 0 || l % hp->swa_period < hp->swa_period - 1);
}

/* Layer l's head size and rotated dimensions: the windowed layers' own where hp gives them
 * (Gemma 4: 256 and 256, the global layers' 512 and 512). */
static inline int32_t elm_layer_head_dim(const elm_hparams *hp, int l) {
    return hp->head_dim_swa > 0 && elm_layer_swa(hp, l) ? hp->head_dim_swa : hp->head_dim;
}
static inline int32_t elm_layer_rope_dim(const elm_hparams *hp, int l) {
    return hp->rope_dim_swa > 0 && elm_layer_swa(hp, l) ? hp->rope_dim_swa : hp->rope_dim;
}

/* Layer l's KV heads and FFN size (hp.layer_kv_heads, hp.layer_ffn where given). */
static inline int32_t elm_layer_kv_heads(const elm_hparams *hp, int l) {
    const int32_t n = hp->layer_kv_heads[hp->first_layer + l];
    return n > 0 ? n : hp->n_kv_heads;
}
static inline int32_t elm_layer_ffn_dim(const elm_hparams *hp, int l) {
    const int32_t n = hp->layer_ffn[hp->first_layer + l];
    return n > 0 ? n : hp->ffn_dim;
}

/* Whether layer l's FFN is a mixture of experts: a family's with experts, past its leading dense
 * layers (hp.n_dense_lead). */
static inline bool elm_layer_moe(const elm_hparams *hp, int l) {
    return hp->n_expert > 0 && hp->first_layer + l >= hp->n_dense_lead;
}

/* The layer whose keys and values layer l attends over: l itself, or for one of the last
 * hp.n_kv_shared layers, as llama.cpp fixes it, the last layer with its own cache (a global
 * layer) or the one before it (a windowed layer) (Gemma 4; elm_model_bind checks their kinds).
 * Of a whole model, not a view of some layers (hp.first_layer 0). */
static inline int elm_layer_kv_src(const elm_hparams *hp, int l) {
    const int n_kv = hp->n_layers - hp->n_kv_shared;
    return l < n_kv ? l : n_kv - (elm_layer_swa(hp, l) ? 2 : 1);
}

/* Whether layer l of hp (a view's l: hp.first_layer) is recurrent rather than attention. */
static inline bool elm_layer_recurrent(const elm_hparams *hp, int l) {
    return hp->recurrent[hp->first_layer + l] != 0;
}

typedef struct elm_layer {
    elm_layer_kind kind;
    elm_tensor *attn_norm, *wq, *wk, *wv, *wo; /* attention: NULL in a recurrent layer but its
                                                * input norm attn_norm */
    elm_tensor *ffn_norm, *w_gate, *w_up, *w_down;
    elm_tensor *bq, *bk, *bv; /* q/k/v biases (Qwen2), else NULL */
    elm_tensor *q_norm, *k_norm; /* per-head q/k RMSNorm weights [head_dim] (Qwen3), else NULL */
    elm_tensor *attn_post_norm, *ffn_post_norm; /* RMSNorm of the attention and FFN outputs
                                                 * before the residual add (Gemma 3), else NULL */
    /* A recurrent kind's input product, causal depthwise kernel [channels, conv_l] and output
     * product. ELM_LAYER_SHORTCONV: in_proj [3·dim, dim] giving B, C and x; the kernel
     * [dim, conv_l] (float); out_proj [dim, dim]. ELM_LAYER_MAMBA2 (GGUF ssm_in, ssm_conv1d,
     * ssm_out): in_proj [2·d_inner + 2·groups·d_state + heads, dim] giving z, xBC and dt, with
     * xBC = [x; B; C] of conv_dim = d_inner + 2·groups·d_state; the kernel [conv_dim, conv_l]
     * (F32); out_proj [dim, d_inner] */
    elm_tensor *conv_in, *conv_kernel, *conv_out;
    /* ELM_LAYER_MAMBA2, all F32 (GGUF ssm_conv1d.bias, ssm_dt.bias, ssm_a, ssm_d,
     * ssm_norm.weight): the kernel's bias [conv_dim]; dt's bias, A = -exp(A_log) and the skip D,
     * [heads, 1] each but the bias [heads]; the gated RMSNorm's weights [groups, d_inner / groups].
     * ELM_LAYER_DELTANET (GGUF names; K = ssm_state, C = 2·groups·K + ssm_inner channels):
     * conv_in [C, dim] (attn_qkv: q, k heads, then the value heads), dn_z [ssm_inner, dim]
     * (attn_gate: the output gate), dn_beta and dn_alpha [heads, dim] (ssm_beta, ssm_alpha: per
     * value head, the update's strength and the decay's input), conv_out [dim, ssm_inner]
     * (ssm_out); float vectors: conv_kernel [C, conv_l] (ssm_conv1d), ssm_dt_b [heads]
     * (ssm_dt.bias, added to alpha), ssm_a [heads] (-exp(A_log), the decay rate), ssm_norm [K]
     * (the RMSNorm of each head's output) */
    elm_tensor *ssm_conv_b, *ssm_dt_b, *ssm_a, *ssm_d, *ssm_norm;
    elm_tensor *dn_z, *dn_beta, *dn_alpha;
    /* Gemma 4's per-layer embeddings (hp.n_embd_per_layer P > 0): the gate inp_gate [P, dim],
     * the projection proj [dim, P] and its RMSNorm post_norm [dim]; else NULL */
    elm_tensor *ple_gate, *ple_proj, *ple_post_norm;
    elm_tensor *out_scale; /* [1] the block's output (the whole stream) × this (Gemma 4's
                            * layer_output_scale), or NULL */
    /* A mixture-of-experts FFN (hp.n_expert > 0) in place of w_gate, w_up, w_down (NULL): the
     * router ffn_gate_inp [n_expert, dim], and the experts stacked, ggml ne {cols, rows,
     * n_expert}: ffn_gate_exps and ffn_up_exps {dim, expert_ffn_dim, n_expert}, ffn_down_exps
     * {expert_ffn_dim, dim, n_expert}; expert e's matrix is rows [e·rows, (e + 1)·rows); the
     * router's selection bias exp_probs_b [n_expert] (elm_arch.moe_bias), else NULL */
    elm_tensor *router, *gate_exps, *up_exps, *down_exps, *router_bias;
    /* gpt-oss's (model/arch.h: elm_arch.sinks, moe_biases), all F32, else NULL: the attention
     * sinks attn_sinks [n_heads], one logit per head added to its softmax's denominator; the
     * attention output's bias attn_output.bias [dim]; the router's bias ffn_gate_inp.bias
     * [n_expert], added to its logits; the experts' biases ffn_{gate,up}_exps.bias
     * [n_expert, expert_ffn_dim] and ffn_down_exps.bias [n_expert, dim] (ggml ne {ff, E}) */
    elm_tensor *sinks, *bo, *router_b, *gate_exps_b, *up_exps_b, *down_exps_b;
    /* A mixture of experts' shared expert (hp.shexp_ffn_dim > 0), else NULL: ffn_gate_shexp and
     * ffn_up_shexp [shexp_ffn_dim, dim], ffn_down_shexp [dim, shexp_ffn_dim]; Qwen3.5-MoE's gate
     * ffn_gate_inp_shexp [1, dim] (its output's sigmoid weighs the shared expert's), or NULL */
    elm_tensor *shexp_gate, *shexp_up, *shexp_down, *shexp_gate_inp;
} elm_layer;

/* Every tensor slot of L (norms, matrices, biases, kernels; the slots of kinds it is not too,
 * NULL), into out[] (room for ELM_LAYER_SLOTS); returns how many. The one list of a layer's
 * tensors, for code that maps them all (the quantizers' working copy). */
#define ELM_LAYER_SLOTS 52
int elm_layer_slots(elm_layer *L, elm_tensor ***out);

/* The matrices layer L multiplies its activations by (weights of products, not norms or
 * kernels), into out[] (room for ELM_LAYER_MATRICES); returns how many. A mixture of experts'
 * stacks are among them, each ne {cols, rows, n_expert}: n_expert matrices one after another,
 * which its FFN (model/ffn_moe.c) runs over 2-D views; its router and Qwen3.5-MoE's shared
 * expert gate (F32) are not. */
#define ELM_LAYER_MATRICES 20
int elm_layer_matrices(const elm_layer *L, const elm_tensor **out);

typedef struct elm_model_storage elm_model_storage; /* private: mappings and owned buffers */

typedef struct elm_model {
    char path[512];        /* what was loaded */
    char format[16];       /* "gguf", "hf", "llama2c" */
    char name[128];        /* general.name or folder name */
    elm_hparams hp;
    int32_t n_tensors;
    elm_tensor *tensors;   /* [n_tensors], file order */
    elm_tensor *tok_embd, *output_norm, *output; /* output == tok_embd when tied */
    elm_layer *layers;     /* [hp.n_layers]; fused tensors (Phi-3 attn_qkv, gate+up ffn_up) are
                            * bound as row views that are not in `tensors` */
    elm_vocab vocab;
    uint32_t file_type;    /* general.file_type (llama.cpp ftype) when known, else 0 */
    elm_model_storage *storage;
    elm_tensor *rope_freqs; /* [rope_dim/2] RoPE frequency divisors (Llama 3.1 "llama3"
                             * scaling, GGUF rope_freqs.weight; Gemma 4's global layers: 1 for
                             * the pairs that turn, 1e30 for the others), or NULL */
    /* [rope_dim/2] float each, both or neither: LongRoPE's frequency divisors (Phi-3.5-mini,
     * Phi-4-mini; GGUF rope_factors_long/short.weight, config.json rope_scaling "longrope"
     * long_factor/short_factor), for contexts longer than hp.n_ctx_orig and the others
     * (elm_model_rope_factors); NULL when the model has none */
    elm_tensor *rope_long, *rope_short;
    /* Gemma 4's per-layer embeddings (hp.n_embd_per_layer P > 0), else NULL: the table
     * per_layer_token_embd [n_vocab, n_layers·P], the projection of the scaled embedding
     * per_layer_model_proj [n_layers·P, dim] and its RMSNorm per_layer_proj_norm [P] */
    elm_tensor *ple_embd, *ple_model_proj, *ple_proj_norm;
    /* An embedding model's projections of the pooled vector (hp.dense_dim > 0), else NULL:
     * dense_2 [dense_dim, dim] and dense_3 [dim, dense_dim] (ggml ne {dim, dense_dim} and
     * {dense_dim, dim}), applied in turn without activation (llama.cpp's build_dense_out) */
    elm_tensor *dense_2, *dense_3;
} elm_model;

typedef struct elm_load_opts {
    const char *tokenizer_path; /* llama2.c: tokenizer.bin when not beside the checkpoint */
    /* GGUF: read the file into memory (2 MiB pages where the OS allows) instead of mapping it.
     * For inference: decode streams every weight per token and measured 15-35% faster this way
     * on x86-64 Linux, for a load-time copy (about 4 GB/s). Mapping (false) loads at once and
     * shares the page cache: for tools that read a model once (inspect, quantize). In memory, the
     * layers' matrices of a type this CPU's kernels pack (kernels/packed.h) are laid out for them
     * in place (elm_tensor.packed_by), which batched decode steps and short prompts read faster;
     * a context of other kernels (elm_context_params.ggml_rounding) then refuses the model. */
    bool in_memory;
    /* For looking at a file, not running it: a GGUF file without tensors (vocab-only) or of an
     * architecture edgelm does not run is returned as read, unbound (layers NULL, derived
     * hyper-parameters unset) instead of refused. */
    bool inspect;
} elm_load_opts;

/* Loads a model from a GGUF file, a Hugging Face directory (config.json + safetensors) or a
 * llama2.c checkpoint, chosen by what `path` is (directory, "GGUF" magic, else llama2.c).
 * opts may be NULL. On success *out owns everything; free with elm_model_free. Errors name the
 * file and the problem: ELM_ERR_IO (missing), ELM_ERR_FORMAT, ELM_ERR_UNSUPPORTED. */
elm_status elm_model_load(const char *path, const elm_load_opts *opts, elm_model **out,
                          elm_error *err);

void elm_model_free(elm_model *m);

/* Whether edgelm runs GGUF architecture `arch`, and the names of those it runs ("llama, qwen2,
 * qwen3, phi3, gemma, gemma3, smollm3, lfm2, qwen35"), for messages: a static string made once from the family
 * table (thread-safe). */
bool elm_arch_supported(const char *arch);
const char *elm_arch_names(void);

/* Only the tokenizer of a GGUF file (vocab-only files such as llama.cpp's ggml-vocab-*.gguf have
 * no tensors): fills and finalizes v, to free with elm_vocab_free. Errors name the file. */
elm_status elm_vocab_load(const char *path, elm_vocab *v, elm_error *err);

/* The RoPE frequency divisors ([rope_dim/2], llama.cpp's freq_factors) a context of n_ctx_seq
 * tokens per sequence runs m with: rope_freqs when there, else LongRoPE's long factors when
 * n_ctx_seq > hp.n_ctx_orig and its short ones otherwise (llama.cpp's get_rope_factors, by its
 * n_ctx_seq); NULL when the model has none. m bound. */
const elm_tensor *elm_model_rope_factors(const elm_model *m, int32_t n_ctx_seq);

/* Tensor by name, or NULL. */
elm_tensor *elm_model_find(const elm_model *m, const char *name);

/* Total bytes of all tensors, and parameter count. */
size_t elm_model_bytes(const elm_model *m);
int64_t elm_model_params(const elm_model *m);

/* &m->vocab: the model's tokenizer, for callers that reach the struct through a binding with no
 * view of its fields (python/edgelm: grammars, chat templates' control tokens, embeddings and
 * calibration sets take the vocabulary). Valid while m is. */
const elm_vocab *elm_model_vocab(const elm_model *m);

/* A fingerprint of the weights: FNV-1a 64 of the first 4 KiB of the token embedding and of the
 * output norm. Tells models apart (a quantization of a model from the model) without reading
 * every byte; not a checksum of the file. */
uint64_t elm_model_fingerprint(const elm_model *m);

#ifdef __cplusplus
}
#endif
#endif
