/* The model families edgelm runs, as data: one row per family says what distinguishes it in the
 * forward pass, in GGUF (tensor names and keys use llama.cpp's architecture name) and in its
 * Hugging Face layout (config.json model_type and class, tensor names, conventions). Loaders, the
 * binder, the GGUF and HF writers, `synth` and `plan` all read this one table, and the lists of
 * names in messages are made from it. */
#ifndef EDGELM_MODEL_ARCH_H
#define EDGELM_MODEL_ARCH_H

#include <stdbool.h>
#include "edgelm/model.h"

/* How a family's Hugging Face checkpoints name it. */
typedef struct elm_arch_hf {
    const char *type; /* config.json model_type */
    const char *cls;  /* config.json architectures[0] */
} elm_arch_hf;

#define ELM_ARCH_HF_MAX 2

/* How a family's HF checkpoints name their block tensors (formats/hf.c): as Llama does
 * (input_layernorm, self_attn.o_proj, mlp.gate_proj, model.norm), as LFM2 does (operator_norm,
 * self_attn.out_proj, q_layernorm, feed_forward.w1/w3/w2, conv.*, model.embedding_norm), or as
 * Granite 4.0-H does (Llama's norms and attention, shared_mlp.input_linear [gate; up] and
 * output_linear, mamba.*). */
typedef enum elm_hf_names {
    ELM_HF_NAMES_LLAMA = 0,
    ELM_HF_NAMES_LFM2,
    ELM_HF_NAMES_GRANITE
} elm_hf_names;

typedef struct elm_arch {
    const char *name;        /* GGUF general.architecture */
    elm_rope_style rope;     /* as llama.cpp runs the GGUF */
    elm_ffn_act act;
    bool embd_scale;         /* embeddings × sqrt(dim) (Gemma) */
    bool qkv_bias;           /* q/k/v projections have biases (Qwen2) */
    bool qk_norm;            /* per-head RMSNorm of q and k before RoPE (Qwen3) */
    int nope_every;          /* every nope_every-th layer has no RoPE (SmolLM3: 4), 0: none */
    bool post_norms;         /* RMSNorm after attention and after the FFN too (Gemma 3) */
    int swa_period;          /* with a window: every swa_period-th layer global (Gemma 3: 6;
                              * gpt-oss: 2, layer 0 windowed) */
    float swa_theta;         /* the windowed layers' own RoPE base, without scaling, when the file
                              * gives none (Gemma 3, 4: 10000); 0: they rotate as the others
                              * (gpt-oss) */
    bool fused_qkv;          /* one attn_qkv [q; k; v] projection (Phi-3) */
    bool fused_gate_up;      /* ffn_up holds [gate; up], no ffn_gate (Phi-3) */
    bool norm_plus_one;      /* HF norm weights w multiply as (1 + w); GGUF stores 1 + w (Gemma) */
    bool hf_permute_qk;      /* HF q/k rows are rotate-half, the GGUF interleaved (Llama) */
    bool hf_tied_default;    /* HF tie_word_embeddings default (Gemma: true) */
    bool hf_bare;            /* its HF class is the bare text model, no LM head (Gemma3TextModel:
                              * EmbeddingGemma): tensors named without "model." */
    /* Granite's multipliers from the file: embeddings, block outputs before the residual adds,
     * attention scores and logits (hparams embd_scale, residual_scale, attn_scale, logit_scale;
     * GGUF embedding_scale, residual_scale, attention.scale, logit_scale) */
    bool multipliers;
    bool rope_switch;        /* GGUF rope.scaling.finetuned false turns RoPE off in every layer
                              * (hparams.no_rope), as llama.cpp reads it for Granite */
    /* its HF names: hf[0] is what edgelm writes; the others read as this family too (Mistral's
     * as Llama; Gemma 3's multimodal checkpoints, the text model's config in text_config) */
    elm_arch_hf hf[ELM_ARCH_HF_MAX];
    const char *tiny_vocab;  /* synth --tiny's default tokenizer fixture, ggml-vocab-<this>.gguf;
                              * NULL: llama-spm */
    /* Hybrids: the kind of the layers without attention (hparams.recurrent), else ATTENTION */
    elm_layer_kind recurrent;
    /* A hybrid whose GGUF says which layers attend by full_attention_interval (every
     * attn_every-th layer; or attention.recurrent_layers, one flag per layer): the interval when
     * the file says neither (Qwen3.5: 4, llama.cpp's default). 0: by a head_count_kv of 0 per
     * recurrent layer (LFM2). */
    int attn_every;
    bool attn_gate;          /* q_proj gives each head's query and then its output gate: the
                              * attention output × sigmoid(gate) goes into Wo (Qwen3.5) */
    const char *out_norm;    /* GGUF name of the final norm; NULL: output_norm.weight */
    const char *ffn_norm;    /* GGUF name of a block's FFN input norm after "blk.N."; NULL:
                              * ffn_norm.weight (Qwen3.5: post_attention_norm.weight) */
    elm_hf_names hf_names;
    /* Gemma 4 (llama.cpp's src/models/gemma4.cpp): */
    bool swa_listed;         /* the windowed layers listed one by one (GGUF
                              * attention.sliding_window_pattern as bools, config.json
                              * layer_types), with their own head size and RoPE (key_length_swa,
                              * rope.dimension_count_swa, rope.freq_base_swa) */
    bool kv_shared;          /* the last attention.shared_kv_layers layers read an earlier
                              * layer's keys and values (elm_layer_kv_src) */
    bool ple;                /* per-layer embeddings (embedding_length_per_layer_input) */
    bool layer_scale;        /* blk.N.layer_output_scale, when present, scales the block's output */
    bool v_norm;             /* values RMSNormed per head, without weights, like k */
    bool unit_attn_scale;    /* scores q·k unscaled (the q/k norms size them): attn_scale 1 */
    bool full_last_layer;    /* llama.cpp takes every token through the last layer (the others:
                              * the logits' rows alone from its attention output on) */
    float softcap;           /* the final logits' softcap when the file gives none (30), 0: none */
    /* Every layer's FFN past the file's leading dense ones (hp.n_dense_lead) a mixture of
     * experts (model/ffn_moe.c): a router over hp.n_expert, the top hp.n_expert_used, their
     * weights renormalised to sum 1 (Qwen3-MoE's and LFM2-MoE's norm_topk_prob, llama.cpp's
     * build_moe_ffn with norm_w) */
    bool moe;
    int moe_gating;          /* the router's function when the file names none, and the one
                              * written (hp.moe_gating): 0 softmax (Qwen3-MoE, not written),
                              * ELM_MOE_SIGMOID (LFM2-MoE) */
    bool moe_bias;           /* blk.N.exp_probs_b.bias [n_expert] added to the probabilities to
                              * choose the experts, not to weigh them (LFM2-MoE's expert_bias) */
    bool moe_biases;         /* the router's logits and every expert's three products have biases
                              * (gpt-oss: ffn_gate_inp.bias, ffn_{gate,up,down}_exps.bias) */
    bool moe_optional;       /* experts only where the file counts them (hp.n_expert > 0; GGUF
                              * expert_count, config.json num_local_experts), dense FFNs otherwise
                              * (Granite 4.0-H: micro dense, tiny with experts) */
    bool hf_packed_experts;  /* its HF checkpoints pack a layer's experts in two 3-D tensors,
                              * [gate; up] per expert [E, 2·ff, dim] and down [E, dim, ff]
                              * (Qwen3.5-MoE's mlp.experts.gate_up_proj and down_proj, Granite's
                              * block_sparse_moe.input_linear and output_linear); else one tensor
                              * per expert (Qwen3-MoE, LFM2-MoE), or gpt-oss's own (moe_biases) */
    bool shexp_gated;        /* a shared expert in every mixture (its size ffn_dim when the file
                              * gives none) whose output is weighed by the sigmoid of
                              * ffn_gate_inp_shexp·x (Qwen3.5-MoE); other families have one where
                              * the file gives its size (hp.shexp_ffn_dim, Granite 4.0-H) */
    bool sinks;              /* attention sinks (blk.N.attn_sinks.weight [n_heads]) and a bias on
                              * the attention output (attn_output.bias) (gpt-oss) */
    /* An embedding model's bidirectional attention (EmbeddingGemma, llama.cpp's
     * gemma-embedding: causal_attn false): every token of a sequence sees all of it, a window
     * symmetric around the token (LLAMA_SWA_TYPE_SYMMETRIC); hparams.non_causal */
    bool non_causal;
} elm_arch;

/* The GGUF name of family a's final norm, and of a block's FFN norm without its "blk.N.". */
const char *elm_arch_out_norm(const elm_arch *a);
const char *elm_arch_ffn_norm(const elm_arch *a);

/* The architecture of GGUF name `name`, or NULL. */
const elm_arch *elm_arch_find(const char *name);

/* The architecture for a config.json model_type (any of a row's hf[].type: "mistral" -> llama,
 * "gemma3_text" and "gemma3" -> gemma3), or NULL. */
const elm_arch *elm_arch_from_hf(const char *model_type);

/* The architecture of HF class `cls` (config.json architectures[0]) when a row names that class,
 * else NULL: what tells apart two families of one model_type (Gemma3TextModel, EmbeddingGemma, is
 * gemma-embedding; Gemma3ForCausalLM gemma3). */
const elm_arch *elm_arch_from_hf_class(const char *cls);

/* The config.json model_type of HF class `cls` (architectures[0], "Qwen2ForCausalLM" -> "qwen2"),
 * or NULL for a class of no family edgelm runs. */
const char *elm_arch_hf_type(const char *cls);

/* The families with a mixture of experts ("qwen3moe, lfm2moe"), for messages: a static string,
 * built once (thread-safe). */
const char *elm_arch_moe_names(void);

/* The model_types elm_arch_from_hf takes ("llama, mistral, qwen2, ..."), for messages: a static
 * string, built once (thread-safe). */
const char *elm_arch_hf_names(void);

/* Fills hp's family defaults that files leave out: the windowed layers' period (Gemma 3: 5 of
 * every 6; gpt-oss: every other one from layer 0) and their own RoPE base (elm_arch.swa_theta:
 * Gemma 3's and 4's 10000; gpt-oss's none), as llama.cpp assumes when its converter writes
 * neither. */
void elm_arch_swa_defaults(const elm_arch *a, elm_hparams *hp);

/* What a tensor of a family's layout holds (how synth fills it). */
typedef enum elm_tensor_kind {
    ELM_KIND_MATRIX, /* a weight matrix [rows, cols] */
    ELM_KIND_NORM,   /* RMSNorm weights [cols] (or [rows, cols]), and weights near 1 as they
                      * are (Mamba-2's skip D, Gemma 4's layer_output_scale [1]) */
    ELM_KIND_BIAS,   /* [cols] */
    ELM_KIND_ROPE,   /* rope_freqs [cols] */
    ELM_KIND_CONV,   /* a depthwise convolution kernel [channels (rows), taps (cols)], F32 */
    ELM_KIND_ROPE_LONG,  /* LongRoPE's rope_factors_long [cols] */
    ELM_KIND_ROPE_SHORT, /* LongRoPE's rope_factors_short [cols] */
    ELM_KIND_DECAY       /* negative decay rates -exp(A_log), F32: Mamba-2's A [rows, 1],
                          * Qwen3.5's ssm_a [cols] */
} elm_tensor_kind;

/* Which RoPE frequency divisors a layout has (elm_model.rope_freqs, rope_long/rope_short). */
typedef enum elm_rope_tensors {
    ELM_ROPE_TENSORS_NONE = 0,
    ELM_ROPE_TENSORS_FREQS,   /* rope_freqs.weight (Llama 3.1, Gemma 4) */
    ELM_ROPE_TENSORS_LONGROPE /* rope_factors_long.weight and rope_factors_short.weight */
} elm_rope_tensors;

/* What a file holds beyond its family's tensors: RoPE vectors, and (shared_kv_weights) the keys
 * and values of the layers that read another layer's (elm_layer_kv_src): attn_k, attn_v and
 * attn_k_norm, which Gemma 4's checkpoints carry, llama.cpp's converter keeps and nothing runs. */
typedef struct elm_layout_extras {
    elm_rope_tensors rope;
    bool shared_kv_weights;
} elm_layout_extras;

typedef struct elm_tensor_spec {
    char name[ELM_NAME_MAX];
    elm_tensor_kind kind;
    int64_t cols, rows; /* rows 0: a vector of cols */
    int64_t experts;    /* > 0: a stack of that many [rows, cols] matrices (ggml ne[2]); 0: none */
} elm_tensor_spec;

/* The dimensions of a tensor of spec t: 1 (a vector), 2 (a matrix) or 3 (a stack of experts). */
static inline int elm_spec_dims(const elm_tensor_spec *t) {
    return t->experts ? 3 : t->rows ? 2 : 1;
}

/* The GGUF tensors of a model of family a with hyper-parameters hp (head_dim and rope_dim set; a
 * tied output has no output.weight; x.rope adds rope_freqs.weight or LongRoPE's two factor
 * vectors, [rope_dim/2] each), in the order llama.cpp's converter writes them: token_embd,
 * output_norm, output, the RoPE vectors, an embedding model's dense_2 and dense_3
 * (hp.dense_dim), the per-layer embeddings' (hp.n_embd_per_layer), then
 * block by block, a recurrent layer (hp.recurrent) with its kind's tensors in place of
 * attention's, a mixture of experts' router and stacked experts (elm_arch.moe) in place of the
 * FFN's matrices, each layer with its own head size, KV heads and FFN size (elm_layer_head_dim...),
 * a layer reading another's KV without attn_k, attn_v and attn_k_norm unless
 * x.shared_kv_weights. Returns a malloc'd array of *n specs, NULL when out of memory. */
elm_tensor_spec *elm_arch_layout(const elm_arch *a, const elm_hparams *hp, elm_layout_extras x,
                                 int32_t *n);

/* Gemma 4's use_double_wide_mlp: the FFN of the layers that read another layer's KV (the last
 * hp.n_kv_shared) twice hp.ffn_dim, as per-layer sizes (hp.layer_ffn), hp.ffn_dim then the
 * largest; nothing when no layer shares. */
void elm_arch_double_wide_mlp(elm_hparams *hp);

/* LongRoPE's attention factor as llama.cpp's converter computes it from config.json (Phi3MiniModel;
 * transformers' default attention_factor): sqrt(1 + ln(s) / ln(n_ctx_orig)) for the extension
 * s = n_ctx_train / n_ctx_orig when s > 1, else 1. Rounded to float as GGUF stores it. */
float elm_arch_longrope_attn_factor(int32_t n_ctx_train, int32_t n_ctx_orig);

#endif
