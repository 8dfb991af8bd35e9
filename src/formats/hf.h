/* Private interface between the parts of the Hugging Face directory loader: hf_config.c reads
 * config.json, hf_tokenizer.c reads tokenizer.json (+ tokenizer_config.json), hf.c maps the
 * safetensors weights and puts it together (docs/formats.md, "Hugging Face Llama checkpoints"). */
#ifndef EDGELM_FORMATS_HF_H
#define EDGELM_FORMATS_HF_H

#include "edgelm/model.h"

/* Largest config.json / tokenizer.json read, bytes (a big vocabulary's tokenizer.json: ~10 MB). */
#define ELM_HF_MAX_JSON (256u << 20)

/* Most LongRoPE factors of each kind config.json may hold: rope_dim / 2 of the largest head size
 * elm_model_bind takes (4096). */
#define ELM_HF_MAX_FACTORS 2048

typedef struct elm_hf_config {
    elm_hparams hp;          /* arch is the GGUF name (mistral -> llama); tied_output from
                              * tie_word_embeddings (default false, Gemma true) */
    int32_t bos_id, eos_id;  /* bos_token_id / first eos_token_id, -1 when absent */
    /* rope_scaling "llama3" (Llama 3.1): factor, low_freq_factor, high_freq_factor,
     * original_max_position_embeddings; llama3[0] == 0 when absent */
    float llama3[4];
    /* rope_scaling "longrope" (or its old name "su"; Phi-3.5-mini, Phi-4-mini): long_factor and
     * short_factor, n_longrope (= rope_dim / 2) of each; 0 when absent. hp.n_ctx_orig and
     * hp.rope_attn_factor are set with them. */
    int32_t n_longrope;
    float long_factor[ELM_HF_MAX_FACTORS], short_factor[ELM_HF_MAX_FACTORS];
    /* Gemma 4's global layers' "proportional" RoPE: the part of the head that turns
     * (rope_parameters.full_attention.partial_rotary_factor, 0.25); 0 when not Gemma 4 */
    float partial_rope;
} elm_hf_config;

/* Reads `path` (config.json). Required keys: hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, vocab_size (ELM_ERR_FORMAT "PATH: missing required key 'X'"). Defaults:
 * num_key_value_heads = heads, rms_norm_eps 1e-6 and max_position_embeddings 2048 (as
 * transformers' LlamaConfig), rope_theta 10000, tie_word_embeddings false (Gemma: true);
 * head_dim when given (Gemma), partial_rotary_factor, Mistral's sliding_window; Gemma 3's
 * sliding_window (required), sliding_window_pattern, rope_local_base_freq, query_pre_attn_scalar
 * and final_logit_softcapping, read from text_config in a multimodal config; Gemma 4's
 * (hf_config.c: read_gemma4; layer_types and sliding_window required); a hybrid's layer_types
 * and its recurrent kind's keys (LFM2's conv_L_cache, block_*; Granite 4.0-H's mamba_*,
 * shared_intermediate_size, multipliers and position_embedding_type; Qwen3.5's linear_*,
 * rope_parameters); Qwen3-MoE's and LFM2-MoE's num_experts, num_experts_per_tok and
 * moe_intermediate_size (required; norm_topk_prob false refused; Qwen3-MoE's dense layers
 * refused, LFM2-MoE's num_dense_layers required, use_expert_bias false and a
 * routed_scaling_factor other than 1 refused). model_type (or architectures[0])
 * must be one of elm_arch_hf_names (llama, mistral, qwen2, qwen3, phi3, gemma, gemma3_text,
 * gemma3, gemma4_text, gemma4, smollm3, lfm2, granitemoehybrid, qwen3_5_text, qwen3_5,
 * qwen3_moe, lfm2_moe); another sets hp.arch to it and
 * returns ELM_ERR_UNSUPPORTED, as do Llama's attention/MLP biases, an activation the family does
 * not use, Qwen2's use_sliding_window, and a rope_scaling other than none, "linear", "llama3" and
 * "longrope" ("su"). LongRoPE needs long_factor and short_factor of rope_dim / 2 numbers each
 * (ELM_ERR_FORMAT otherwise) and original_max_position_embeddings (in rope_scaling or at the top
 * level, as Phi-3's configs have it; required); its attention factor is rope_scaling's
 * attention_factor when given, else elm_arch_longrope_attn_factor's. Phi-3's top-level
 * original_max_position_embeddings is read without LongRoPE too (hp.n_ctx_orig). */
elm_status elm_hf_read_config(const char *path, elm_hf_config *c, elm_error *err);

/* Fills and finalizes v from DIR/tokenizer.json (BPE with merges, SentencePiece-style or
 * byte-level with a known pre-tokenizer regex; ELM_ERR_UNSUPPORTED otherwise) and the optional
 * DIR/tokenizer_config.json (bos/eos token strings, add_bos_token, add_eos_token, chat_template;
 * without a chat_template there, the optional DIR/chat_template.jinja); ids it lacks come from
 * config c, and ids from the tokenizer's size up to c->hp.n_vocab become
 * unused "[PAD<id>]" tokens. */
elm_status elm_hf_read_tokenizer(const char *dir, const elm_hf_config *c, elm_vocab *v,
                                 elm_error *err);

/* Adds rope_freqs.weight [head_dim / 2] F32 to m (hparams set): Llama 3.1's rope_scaling "llama3"
 * {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings} as the divisor of
 * each RoPE frequency, the form llama.cpp's GGUF files carry it in. */
elm_status elm_hf_add_llama3_freqs(elm_model *m, const float llama3[4], elm_error *err);

/* Adds rope_factors_long.weight and rope_factors_short.weight [c->n_longrope] F32 to m: LongRoPE's
 * factors of config c (n_longrope > 0), the tensors llama.cpp's converter writes for them. */
elm_status elm_hf_add_longrope(elm_model *m, const elm_hf_config *c, elm_error *err);

/* The frequency divisor of a pair that does not turn in Gemma 4's rope_freqs (llama.cpp's
 * converter: 1e30, angles of about 1e-26 radians per position). */
#define ELM_HF_UNTURNED 1e30f

/* Adds rope_freqs.weight [head_dim / 2] F32 to m (hparams set) as llama.cpp's converter makes
 * it for Gemma 4's "proportional" RoPE of its global layers (transformers' partial_rotary_factor
 * of rope_parameters.full_attention): 1 for the first int(head_dim · partial / 2) pairs, which
 * turn as in a full RoPE of head_dim, ELM_HF_UNTURNED for the others. */
elm_status elm_hf_add_partial_freqs(elm_model *m, float partial, elm_error *err);

/* Those divisors into f [n pairs]: 1 for the first `turning`, ELM_HF_UNTURNED for the others. */
void elm_hf_partial_freqs(float *f, int n, int turning);

/* Whether m's rope_freqs is of that form, and its partial_rotary_factor into *partial. */
bool elm_hf_partial_of(const elm_model *m, float *partial);

/* The Hugging Face name of GGUF tensor `gguf` in architecture `arch`'s layout
 * ("blk.3.attn_qkv.weight" -> "model.layers.3.self_attn.qkv_proj.weight" for phi3); false when
 * the family has no such tensor (rope_freqs.weight, rope_factors_long/short.weight: config.json's
 * rope_scaling). */
bool elm_hf_name_of(const char *arch, const char *gguf, char *out, size_t cap);

/* Which of a mixture of experts' three stacks (GGUF blk.N.ffn_{gate,up,down}_exps.weight, ne
 * {cols, rows, experts}) a Hugging Face checkpoint holds as one [rows, cols] tensor per expert,
 * model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight (Qwen3-MoE) or
 * model.layers.N.feed_forward.experts.E.{w1,w3,w2}.weight (LFM2-MoE); llama.cpp's converter
 * stacks them in expert order. */
#define ELM_HF_EXPERT_KINDS 3
extern const char *const elm_hf_expert_kinds[ELM_HF_EXPERT_KINDS]; /* "gate", "up", "down" */

/* The HF name of expert e of GGUF stack `gguf` of family `arch` into out; false when gguf is no
 * stack of experts (or arch no family that writes one tensor per expert). */
bool elm_hf_expert_name(const char *arch, const char *gguf, int64_t e, char *out, size_t cap);

/* What an HF checkpoint of family a holds with GGUF tensor `gguf` in one tensor, [gate; up]
 * (rows of the gate's, then the up's; per expert in a stack): ELM_HF_JOINED_GATE for the gate
 * (Granite's ffn_gate and ffn_gate_shexp, shared_mlp.input_linear; the packed experts'
 * ffn_gate_exps, elm_arch.hf_packed_experts), its up's name in other; ELM_HF_JOINED_UP for that
 * up, its gate's name in other; ELM_HF_JOINED_NONE for another tensor. */
typedef enum { ELM_HF_JOINED_NONE, ELM_HF_JOINED_GATE, ELM_HF_JOINED_UP } elm_hf_joined;
struct elm_arch; /* model/arch.h */
elm_hf_joined elm_hf_joined_of(const struct elm_arch *a, const char *gguf, char *other,
                               size_t cap);

/* gpt-oss's experts (elm_arch.moe_biases), all of a layer's in one tensor of each kind
 * (model.layers.N.mlp.experts.<kind>): gate_up_proj [E, dim, 2·ff] with gate and up in
 * alternate columns, its bias gate_up_proj_bias [E, 2·ff] likewise, and down_proj [E, ff, dim],
 * each expert's matrix transposed from GGUF's; down_proj_bias [E, dim] is GGUF's
 * ffn_down_exps.bias as it is (a plain rename). */
enum { ELM_HF_FUSED_GATE_UP, ELM_HF_FUSED_GATE_UP_BIAS, ELM_HF_FUSED_DOWN, ELM_HF_FUSED_KINDS };
extern const char *const elm_hf_fused_names[ELM_HF_FUSED_KINDS]; /* "gate_up_proj", ... */

/* The fused kind of HF tensor name hf, its layer in *layer; -1 for another name. */
int elm_hf_fused_of(const char *hf, long *layer);

/* Adds GGUF's stacks from fused HF tensor t of that kind in that layer (F32 biases, the
 * matrices in t's type), owned by m; a shape not of config.json's sizes is an error naming
 * src and the tensor. */
struct elm_st_tensor; /* formats/safetensors.h */
elm_status elm_hf_add_fused(elm_model *m, const char *src, const struct elm_st_tensor *t,
                            int kind, long layer, elm_error *err);

/* gpt-oss's original checkpoint (config.json's quantization_config {"quant_method": "mxfp4"})
 * holds each expert matrix as U8 MXFP4 in two parts, model.layers.N.mlp.experts.<part>:
 * gate_up_proj_blocks [E, 2·ff, dim/32, 16] (16 code bytes a block of 32 weights, weight n the
 * n-th nibble, low nibble first) with gate_up_proj_scales [E, 2·ff, dim/32] (E8M0 bytes), gate
 * and up in alternate rows; down_proj_blocks [E, dim, ff/32, 16] with down_proj_scales. */
enum { ELM_HF_MXFP4_GATE_UP_BLOCKS, ELM_HF_MXFP4_GATE_UP_SCALES, ELM_HF_MXFP4_DOWN_BLOCKS,
       ELM_HF_MXFP4_DOWN_SCALES, ELM_HF_MXFP4_PARTS };
extern const char *const elm_hf_mxfp4_names[ELM_HF_MXFP4_PARTS]; /* "gate_up_proj_blocks", ... */

/* The MXFP4 part of HF tensor name hf, its layer in *layer; -1 for another name. */
int elm_hf_mxfp4_of(const char *hf, long *layer);

/* Fills GGUF's MXFP4 stacks blk.N.ffn_{gate,up,down}_exps.weight ([cols, rows, E], added zeroed
 * by whichever part comes first, owned by m) with part `part` of layer `layer` from U8 tensor t:
 * the scale bytes as they are, the codes reordered to ggml's nibble order, gate and up
 * de-interleaved, as llama.cpp's converter (conversion/gpt_oss.py, repack_mxfp4) writes them.
 * seen[layer·ELM_HF_MXFP4_PARTS + part] marks the part read. Errors name src and the tensor: a
 * dtype other than U8, a shape not of config.json's sizes, a scale byte 0xff (E8M0's NaN), a part
 * read twice, a stack the checkpoint also holds unquantized. */
elm_status elm_hf_add_mxfp4(elm_model *m, const char *src, const struct elm_st_tensor *t,
                            int part, long layer, uint8_t *seen, elm_error *err);

/* Between n experts' gate_up [n, rows, 2·ff] (gate and up in alternate columns: HF) and GGUF's
 * gate and up [n, ff, rows] (fuse: into gate_up, else out of it); elements of elem bytes. */
void elm_hf_gate_up(char *gate_up, char *gate, char *up, int64_t n, int64_t rows, int64_t ff,
                    size_t elem, bool fuse);

/* dst[e] = src[e]ᵀ for n matrices [rows, cols] of elements of elem bytes. */
void elm_hf_transpose_experts(char *dst, const char *src, int64_t n, int64_t rows, int64_t cols,
                              size_t elem);

/* How GGUF tensor `gguf`'s shape differs in an HF checkpoint: a depthwise convolution kernel
 * [channels, taps] is stored [channels, 1, taps] (LFM2's shortconv.conv, Mamba-2's and Qwen3.5's
 * ssm_conv1d);
 * Mamba-2's A and D [heads, 1] and norm [groups, inner / groups] are stored flat, as llama.cpp's
 * converter reshapes them; Qwen3.5-MoE's shared expert gate, a vector [dim] in GGUF, is one row
 * [1, dim] (ELM_HF_SHAPE_ROW: mlp.shared_expert_gate, an nn.Linear to one output). */
typedef enum { ELM_HF_SHAPE_SAME, ELM_HF_SHAPE_CONV, ELM_HF_SHAPE_FLAT, ELM_HF_SHAPE_ROW } elm_hf_shape;
elm_hf_shape elm_hf_shape_of(const struct elm_arch *a, const char *gguf);

/* Whether GGUF tensor `gguf` of family a holds norm weights stored 1 + w, HF's w (Gemma,
 * Qwen3.5; not the Gated DeltaNet's ssm_norm, stored as it multiplies). */
bool elm_hf_norm_plus_one(const struct elm_arch *a, const char *gguf);

/* Whether GGUF tensor `gguf` is ssm_a = -exp(A_log), HF's A_log (Mamba-2, Qwen3.5). */
bool elm_hf_decay(const char *gguf);

/* Where a Gated DeltaNet tensor's value heads lie: from row (or, with cols, column) `first` on,
 * unit rows (columns) per head. */
typedef struct elm_hf_vheads {
    int64_t first, unit;
    bool cols;
} elm_hf_vheads;

/* Whether GGUF tensor `gguf` of a model of hp (a Gated DeltaNet family) has its value heads in
 * another order in HF than in GGUF, and where they lie (*v): when the value heads outnumber the
 * key heads, HF keeps the
 * value heads of each key head together (grouped: head k·r + j of key head k) and llama.cpp's
 * converter tiles them (head j·n_k + k), the order its broadcast reads. attn_qkv and ssm_conv1d
 * (their v rows), attn_gate, ssm_beta, ssm_alpha, ssm_a, ssm_dt (rows), ssm_out (columns). */
bool elm_hf_value_heads(const elm_hparams *hp, const char *gguf, elm_hf_vheads *v);

/* A copy of rows × row_bytes bytes at src with the value heads where v says moved from grouped
 * to tiled order (to_tiled) or back; elem_bytes: one column's bytes. dst and src do not
 * overlap. */
void elm_hf_tile_heads(char *dst, const char *src, const elm_hparams *hp, const elm_hf_vheads *v,
                       int64_t rows, size_t row_bytes, size_t elem_bytes, bool to_tiled);

/* Moves the rows of a q/k projection of `heads` heads of hd rows (row_bytes each) between HF's
 * rotate-half order and the interleaved order: HF row h*hd + p*(hd/2) + i is interleaved row
 * h*hd + 2*i + p (docs/formats.md). dst and src do not overlap. */
void elm_hf_permute_rows(char *dst, const char *src, int64_t heads, int64_t hd, size_t row_bytes,
                         bool to_interleaved);

#endif
