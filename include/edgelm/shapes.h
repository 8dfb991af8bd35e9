/* Model shapes without a checkpoint: random-weight GGUF files with the exact shapes of real
 * models (`edgelm synth`), tiny random models of each family for cross-runtime tests, and
 * deployability plans (`edgelm plan`): weights, KV cache and peak memory per type and the decode
 * speed a device's memory bandwidth allows. Synthetic weights are noise: for speed and memory
 * measurement only, never for text. */
#ifndef EDGELM_SHAPES_H
#define EDGELM_SHAPES_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelm/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- synth: real shapes */

/* A preset's sizes beyond the Llama-like ones (elm_synth_preset.extra). */
typedef struct elm_synth_extra {
    /* Mamba-2 and Gated DeltaNet sizes (elm_hparams.ssm_*): Granite 4.0-H's d_inner, d_state,
     * heads and groups (mamba_*); Qwen3.5's value width (value heads x head size), key/value head
     * size, value heads and key heads (linear_*) */
    int32_t ssm_inner, ssm_state, ssm_heads, ssm_groups;
    int32_t rope_sections[4]; /* M-RoPE pairs per position stream (Qwen3.5: 11, 11, 10, 0) */
    /* Granite's multipliers (embedding_multiplier, residual_multiplier, attention_multiplier,
     * logits_scaling) and its attention without positions (position_embedding_type "nope") */
    float embd_scale, residual_scale, attn_scale, logit_scale;
    bool no_rope;
    /* Gemma 4: head_dim is the global layers' ('a'), head_dim_swa the windowed layers' ('s'), and
     * rope_dim the global layers' rotated dimensions (partial_rotary_factor x head_dim, written as
     * llama.cpp's converter does: rope_freqs.weight turning the first rope_dim / 2 pairs) */
    int32_t head_dim_swa;
    int32_t n_embd_per_layer; /* per-layer embeddings (hidden_size_per_layer_input), else 0 */
    /* The first layer that reads an earlier layer's keys and values instead of its own
     * (num_hidden_layers - num_kv_shared_layers; E2B: 15), 0: none. Its checkpoints still carry
     * those layers' attn_k, attn_v and attn_k_norm, unused, and so do the preset's files. */
    int32_t kv_shared_from;
    bool double_wide_mlp; /* the FFN is 2 x ffn_dim from kv_shared_from on (use_double_wide_mlp) */
    /* A mixture of experts (Qwen3-MoE): experts a layer (num_experts), those each token uses
     * (num_experts_per_tok), an expert's FFN size (moe_intermediate_size) and the leading layers
     * with a dense FFN of ffn_dim instead; n_expert 0: dense */
    int32_t n_expert, n_expert_used, expert_ffn_dim, n_dense_lead;
    int32_t shexp_ffn_dim; /* a shared expert's FFN size (shared_intermediate_size), 0: none */
    /* YaRN RoPE (rope_scaling rope_type "yarn", gpt-oss): the context it extends,
     * original_max_position_embeddings, by the factor rope_scale (beta_fast 32, beta_slow 1);
     * 0: none */
    int32_t yarn_orig;
} elm_synth_extra;

typedef struct elm_synth_preset {
    const char *name;   /* "tinyllama-1.1b", ... */
    const char *source; /* the Hugging Face config the shapes come from */
    const char *arch;   /* GGUF general.architecture (model/arch.h) */
    int32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim, n_ctx_train;
    float rms_eps, rope_theta;
    bool tied;        /* tie_word_embeddings: no output.weight */
    bool llama3_rope; /* rope_scaling "llama3" (factor 32, low 1, high 4, original 8192),
                              * written as llama.cpp does: a rope_freqs.weight tensor */
    int32_t head_dim; /* per head when config.json's head_dim is not dim / heads (Qwen3), else 0 */
    int32_t n_swa;    /* sliding_window of the local layers (Gemma 3), else 0 */
    int32_t rope_dim; /* rotated dimensions per head when partial (Phi-4-mini: 96), else 0 */
    float rope_scale; /* linear rope_scaling factor (Gemma 3 4B: 8), else 0 */
    /* One letter per layer (the first n_layers are used): 'a' attention, 's' attention through the
     * sliding window of n_swa (listed layers, Gemma 4: config.json layer_types), 'r' the family's
     * recurrent kind (hybrids; model/arch.h: elm_arch.recurrent); NULL: all attention (Gemma 3's
     * window by its family's period) */
    const char *layers;
    int32_t conv_l; /* causal convolution taps of the recurrent kind (LFM2: 3; Mamba-2, DeltaNet: 4) */
    /* LongRoPE (Phi-4-mini: 4096, extended to n_ctx_train): the context before the extension,
     * written as llama.cpp's converter does (rope_factors_long/short.weight tensors of
     * rope_dim / 2 illustrative factors, rope.scaling.original_context_length and attn_factor);
     * 0: none */
    int32_t n_ctx_orig;
    /* The sizes only the newer families have (Qwen3.5, Granite 4.0-H, Gemma 4); {0} for the
     * others */
    elm_synth_extra extra;
} elm_synth_preset;

/* The presets, *n of them. */
const elm_synth_preset *elm_synth_presets(int *n);

/* The preset called name, or NULL. */
const elm_synth_preset *elm_synth_find(const char *name);

/* Called after each tensor is written: done of total tensors. */
typedef void (*elm_synth_progress)(void *user, int32_t done, int32_t total);

/* Writes preset p as a GGUF file at path: every matrix (embedding and output included, like
 * llama-quantize --pure) of `type`, norms and biases F32, weights uniform in ±0.035 (about the
 * spread of trained Llama weights) from seed. general.name says the file is random. The model's
 * bytes go to *file_bytes (may be NULL). Errors: ELM_ERR_ARG when the shapes do not fit `type`
 * (columns not a multiple of its block), ELM_ERR_IO / ELM_ERR_NOMEM naming path. */
elm_status elm_synth_write(const elm_synth_preset *p, elm_type type, const char *path,
                           uint64_t seed, elm_synth_progress progress, void *user,
                           uint64_t *file_bytes, elm_error *err);

/* ---------------------------------------------------------------- synth: tiny families */

typedef struct elm_synth_tiny {
    const char *arch;       /* GGUF architecture, one of elm_arch_names() */
    const char *vocab_path; /* a GGUF file with a tokenizer (vocab-only files work) */
    uint64_t seed;
    float std;              /* standard deviation of the weights; 0 means 0.3 */
    int32_t width;          /* dim, a multiple of 64 (0: 64); heads and FFN grow with it (256:
                             * rows of whole k-quant super-blocks, for the recipe checks) */
    bool longrope;          /* phi3 only: Phi-4-mini's RoPE in small, LongRoPE factors (long !=
                             * short) for a context of 4096 extended from 512, on 3/4 of each
                             * head (synth_tiny.h) */
    int32_t pooling;        /* the pooling_type written (embed.h's elm_pooling: 1 mean, 2 cls,
                             * 3 last), making an embedding model of it; 0: the family's (mean
                             * for gemma-embedding, none for the others) */
    bool experts;           /* a family whose experts are optional (granitehybrid): its
                             * mixture-of-experts form with a shared expert (Granite-4.0-H-Tiny's) */
} elm_synth_tiny;

/* Writes the tiny model of o (see elm_synth_tiny_model in src/shapes/synth_tiny.h for its shapes)
 * as GGUF at gguf_path and, when hf_dir is not NULL, as a Hugging Face folder there. Its parameter
 * count and vocabulary size go to *n_params and *n_vocab (may be NULL). Errors: ELM_ERR_ARG for an
 * unknown arch, the vocab loader's and the writers' (naming the path). */
elm_status elm_synth_tiny_write(const elm_synth_tiny *o, const char *gguf_path, const char *hf_dir,
                                int64_t *n_params, int32_t *n_vocab, elm_error *err);

/* The tokenizer family arch's tiny model takes by default: the V of llama.cpp's vocab fixture
 * ggml-vocab-V.gguf ("llama-bpe" for llama, "qwen2", "phi-3"), "llama-spm" for the other
 * families and for a name that is none. */
const char *elm_synth_tiny_vocab(const char *arch);

/* ---------------------------------------------------------------- plan */

/* A device profile: figures practitioners quote (vendor specifications; docs/bench.md). */
typedef struct elm_device {
    const char *name;         /* "x2-elite", ... */
    const char *desc;
    double bandwidth_gbs;     /* memory bandwidth, GB/s (10^9 bytes per second) */
    double ram_gib;           /* RAM, GiB */
} elm_device;

/* The profiles (data, plan_devices.c), *n of them; elm_device_find: by name or NULL. */
const elm_device *elm_devices(int *n);
const elm_device *elm_device_find(const char *name);


/* A model whose tensors have shapes but no data (F32), for planning: from a Hugging Face
 * config.json (the keys elm_model_load reads), or from a synth preset. Free with elm_model_free.
 * Errors name the file and key, or the preset: ELM_ERR_FORMAT, ELM_ERR_UNSUPPORTED for an
 * architecture edgelm does not run. */
elm_status elm_plan_shape_config(const char *config_path, elm_model **out, elm_error *err);
elm_status elm_plan_shape_preset(const elm_synth_preset *p, elm_model **out, elm_error *err);


enum { ELM_PLAN_ROWS = 12, ELM_PLAN_FIRST_RECIPE = 5 };

typedef struct elm_plan_row {
    char label[8];            /* "f16", "q8_0", "q4_0", "q4_1": every matrix of that type, as
                               * llama-quantize --pure; "mixed": quantize's default policy (q4_0,
                               * embedding and output q8_0); from ELM_PLAN_FIRST_RECIPE on
                               * "q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k", "iq4_xs":
                               * llama-quantize's recipe of that name (without an imatrix) */
    uint64_t weight_bytes;    /* all tensors */
    uint64_t read_bytes;      /* weights + KV cache read per decoded token at a full context
                               * (an untied embedding contributes one row) */
    uint64_t peak_bytes;      /* weights + KV cache + recurrent state + compute buffers */
    double tokens_per_s;      /* upper bound: bandwidth / read_bytes (0 without a bandwidth) */
    int64_t headroom_bytes;   /* RAM - peak; negative: does not fit (0 without a RAM size) */
} elm_plan_row;

typedef struct elm_plan {
    int32_t n_ctx, n_batch, n_threads;
    int64_t n_params;
    int64_t n_active_params; /* those decode reads a token: a mixture of experts' routed ones only
                              * (hp.n_expert_used of each stack), else n_params */
    uint64_t kv_f16, kv_q8_0, kv_int8; /* KV cache at n_ctx: 2, 34/32 (ggml q8_0), 1 bytes */
    uint64_t kv_bytes;        /* the one the rows use (kv_cache_q8: kv_q8_0, else kv_f16) */
    uint64_t compute_bytes;   /* edgelm's activations for an n_batch batch, the attention scores
                               * of n_threads threads and one token's logits */
    uint64_t state_bytes;     /* a hybrid's recurrent state of one sequence with its checkpoints
                               * (elm_state_bytes), whatever n_ctx; 0 for attention-only models */
    elm_plan_row rows[ELM_PLAN_ROWS];
} elm_plan;

/* Plans model m (its tensors' shapes; data is not read) at n_ctx tokens, prompt batches of
 * n_batch, n_threads threads (0: elm_online_cores), a KV cache of F16 or (kv_cache_q8) Q8_0, for a device of
 * bandwidth_gbs GB/s and ram_gib GiB (0: unknown, no speed bound or headroom). ELM_ERR_ARG for
 * sizes out of range. */
elm_status elm_plan_make(const elm_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                         bool kv_cache_q8, double bandwidth_gbs, double ram_gib, elm_plan *out,
                         elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
