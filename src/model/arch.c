/* The architecture table (see arch.h) and what is derived from it. Sources: the models' Hugging
 * Face modeling code (the classes in the rows) and the GGUF files llama.cpp's converter writes
 * for them (interleaved RoPE with permuted q/k for llama, NEOX for the others; Gemma's norm
 * weights stored + 1; Phi-3's fused tensors kept). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "model/arch.h"

static const elm_arch archs[] = {
    /* Mistral is Llama with an optional sliding window, and llama.cpp converts it as "llama" */
    {.name = "llama", .rope = ELM_ROPE_NORM, .act = ELM_ACT_SILU, .hf_permute_qk = true,
     .hf = {{"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"}},
     .tiny_vocab = "llama-bpe"},
    {.name = "qwen2", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qkv_bias = true,
     .hf = {{"qwen2", "Qwen2ForCausalLM"}}, .tiny_vocab = "qwen2"},
    {.name = "qwen3", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .hf = {{"qwen3", "Qwen3ForCausalLM"}}},
    {.name = "phi3", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .fused_qkv = true,
     .fused_gate_up = true, .hf = {{"phi3", "Phi3ForCausalLM"}}, .tiny_vocab = "phi-3"},
    {.name = "gemma", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_GELU_TANH, .embd_scale = true,
     .norm_plus_one = true, .hf_tied_default = true, .hf = {{"gemma", "GemmaForCausalLM"}}},
    /* Gemma's conventions plus q/k norms, post-norms and local (windowed) layers, 5 of every 6 */
    {.name = "gemma3", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_GELU_TANH, .embd_scale = true,
     .qk_norm = true, .post_norms = true, .swa_period = 6, .swa_theta = 10000.0f,
     .norm_plus_one = true, .hf_tied_default = true,
     .hf = {{"gemma3_text", "Gemma3ForCausalLM"}, {"gemma3", "Gemma3ForConditionalGeneration"}}},
    /* EmbeddingGemma: Gemma 3's layout with bidirectional attention (symmetric windows), its
     * hidden states pooled (mean) and projected by dense_2, dense_3; HF: Gemma3TextModel, the
     * text model without the LM head, its tensors without the model. prefix */
    {.name = "gemma-embedding", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_GELU_TANH,
     .embd_scale = true, .qk_norm = true, .post_norms = true, .swa_period = 6,
     .swa_theta = 10000.0f, .norm_plus_one = true, .hf_tied_default = true, .non_causal = true,
     .hf_bare = true,
     .hf = {{"gemma3_text", "Gemma3TextModel"}}},
    /* Gemma 3's conventions (but HF norm weights as they multiply), its local layers listed one
     * by one with their own head size and RoPE (the global layers' partial by rope_freqs), the
     * last layers reading earlier layers' KV, per-layer embeddings, V norms, unscaled scores and
     * a logit softcap of 30 when the file gives none */
    {.name = "gemma4", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_GELU_TANH, .embd_scale = true,
     .qk_norm = true, .post_norms = true, .swa_listed = true, .kv_shared = true, .ple = true,
     .layer_scale = true, .v_norm = true, .unit_attn_scale = true, .full_last_layer = true,
     .swa_theta = 10000.0f, .softcap = 30.0f, .hf_tied_default = true,
     .hf = {{"gemma4_text", "Gemma4ForCausalLM"}, {"gemma4", "Gemma4ForConditionalGeneration"}},
     .tiny_vocab = "gemma-4"},
    /* Llama's layout and RoPE pairing (llama.cpp's converter permutes it like Llama's) */
    {.name = "smollm3", .rope = ELM_ROPE_NORM, .act = ELM_ACT_SILU, .nope_every = 4,
     .hf_permute_qk = true, .hf = {{"smollm3", "SmolLM3ForCausalLM"}}},
    /* short-conv layers beside GQA layers with q/k norms (those with KV heads); the final norm
     * is token_embd_norm in its GGUF (llama.cpp's name for it) */
    {.name = "lfm2", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .recurrent = ELM_LAYER_SHORTCONV, .out_norm = "token_embd_norm.weight",
     .hf_names = ELM_HF_NAMES_LFM2, .hf_tied_default = true,
     .hf = {{"lfm2", "Lfm2ForCausalLM"}}, .tiny_vocab = "llama-bpe"},
    /* Granite 4.0-H: Mamba-2 layers beside GQA layers, Granite's multipliers, RoPE as Llama's
     * unless the file turns it off (its converter does for the hybrids); dense FFNs (micro) or a
     * softmax-routed mixture of experts with a shared expert (tiny, small) */
    {.name = "granitehybrid", .rope = ELM_ROPE_NORM, .act = ELM_ACT_SILU, .hf_permute_qk = true,
     .multipliers = true, .rope_switch = true, .recurrent = ELM_LAYER_MAMBA2, .moe = true,
     .moe_optional = true, .hf_packed_experts = true,
     .hf_names = ELM_HF_NAMES_GRANITE,
     .hf = {{"granitemoehybrid", "GraniteMoeHybridForCausalLM"}}, .tiny_vocab = "llama-bpe"},
    /* Gated DeltaNet layers beside gated GQA layers (every 4th) with q/k norms and a quarter of
     * each head rotated; norms stored 1 + w (but the DeltaNet's own), the FFN's named
     * post_attention_norm; the text model of the multimodal checkpoints (text_config) */
    {.name = "qwen35", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .norm_plus_one = true, .attn_gate = true, .recurrent = ELM_LAYER_DELTANET, .attn_every = 4,
     .ffn_norm = "post_attention_norm.weight",
     .hf = {{"qwen3_5_text", "Qwen3_5ForCausalLM"}, {"qwen3_5", "Qwen3_5ForConditionalGeneration"}},
     .tiny_vocab = "qwen35"},
    /* Qwen3.5's layers with a mixture of experts for every FFN and a sigmoid-gated shared
     * expert (Qwen3.5-35B-A3B); its checkpoints pack each layer's experts (mlp.experts.*) */
    {.name = "qwen35moe", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .norm_plus_one = true, .attn_gate = true, .recurrent = ELM_LAYER_DELTANET, .attn_every = 4,
     .ffn_norm = "post_attention_norm.weight", .moe = true, .shexp_gated = true,
     .hf_packed_experts = true,
     .hf = {{"qwen3_5_moe_text", "Qwen3_5MoeForCausalLM"},
            {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration"}},
     .tiny_vocab = "qwen35"},
    /* Qwen3's attention with a mixture of experts for every FFN; its HF checkpoints hold one
     * tensor per expert (mlp.experts.E.*_proj), stacked into GGUF's ffn_*_exps (formats/hf.c) */
    {.name = "qwen3moe", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .moe = true, .hf = {{"qwen3_moe", "Qwen3MoeForCausalLM"}}, .tiny_vocab = "qwen2"},
    /* LFM2's layers with a mixture of experts for the FFNs past the leading dense ones: a
     * sigmoid router whose expert bias steers the choice only (LFM2-8B-A1B) */
    {.name = "lfm2moe", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SILU, .qk_norm = true,
     .recurrent = ELM_LAYER_SHORTCONV, .out_norm = "token_embd_norm.weight",
     .hf_names = ELM_HF_NAMES_LFM2, .hf_tied_default = true, .moe = true,
     .moe_gating = ELM_MOE_SIGMOID, .moe_bias = true,
     .hf = {{"lfm2_moe", "Lfm2MoeForCausalLM"}}, .tiny_vocab = "llama-bpe"},
    /* OpenAI's gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE): q/k/v and output biases, attention
     * sinks, windowed (128) and global layers in turn with one RoPE (YaRN in its files), the
     * FFN's norm named post_attention_norm, every FFN experts with biases, routed by the top k
     * logits and a softmax over them, gated by the clamped SwiGLU; no tied output */
    {.name = "gpt-oss", .rope = ELM_ROPE_NEOX, .act = ELM_ACT_SWIGLU_OAI, .qkv_bias = true,
     .swa_period = 2, .sinks = true, .moe = true, .moe_gating = ELM_MOE_SOFTMAX_WEIGHT,
     .moe_biases = true, .ffn_norm = "post_attention_norm.weight",
     .hf = {{"gpt_oss", "GptOssForCausalLM"}}, .tiny_vocab = "llama-bpe"},
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

const elm_arch *elm_arch_find(const char *name) {
    for (size_t i = 0; i < N_ARCHS; i++)
        if (strcmp(name, archs[i].name) == 0) return &archs[i];
    return NULL;
}

/* The HF name whose class (by_class) or model_type is key, its family in *arch; NULL if none. */
static const elm_arch_hf *hf_find(const char *key, bool by_class, const elm_arch **arch) {
    for (size_t i = 0; i < N_ARCHS; i++)
        for (const elm_arch_hf *h = archs[i].hf; h < archs[i].hf + ELM_ARCH_HF_MAX && h->type; h++)
            if (strcmp(key, by_class ? h->cls : h->type) == 0) {
                *arch = &archs[i];
                return h;
            }
    return NULL;
}

const elm_arch *elm_arch_from_hf(const char *model_type) {
    const elm_arch *a = NULL;
    hf_find(model_type, false, &a);
    return a;
}

const elm_arch *elm_arch_from_hf_class(const char *cls) {
    const elm_arch *a = NULL;
    return hf_find(cls, true, &a) ? a : NULL;
}

const char *elm_arch_hf_type(const char *cls) {
    const elm_arch *a;
    const elm_arch_hf *h = hf_find(cls, true, &a);
    return h ? h->type : NULL;
}

static void fill_names(char *buf, size_t cap) {
    for (size_t i = 0; i < N_ARCHS; i++) elm_list_add(buf, cap, archs[i].name);
}

static void fill_hf_names(char *buf, size_t cap) {
    for (size_t i = 0; i < N_ARCHS; i++)
        for (int k = 0; k < ELM_ARCH_HF_MAX && archs[i].hf[k].type; k++) {
            const elm_arch *first = elm_arch_from_hf(archs[i].hf[k].type);
            if (first == &archs[i]) elm_list_add(buf, cap, archs[i].hf[k].type); /* once */
        }
}

static void fill_moe_names(char *buf, size_t cap) {
    for (size_t i = 0; i < N_ARCHS; i++)
        if (archs[i].moe) elm_list_add(buf, cap, archs[i].name);
}

const char *elm_arch_moe_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_names_get(&names, fill_moe_names);
}

const char *elm_arch_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_names_get(&names, fill_names);
}

const char *elm_arch_hf_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_names_get(&names, fill_hf_names);
}

const char *elm_arch_out_norm(const elm_arch *a) {
    return a->out_norm ? a->out_norm : "output_norm.weight";
}

const char *elm_arch_ffn_norm(const elm_arch *a) {
    return a->ffn_norm ? a->ffn_norm : "ffn_norm.weight";
}

void elm_arch_swa_defaults(const elm_arch *a, elm_hparams *hp) {
    if ((!a->swa_period && !a->swa_listed) || hp->n_swa <= 0) return;
    if (hp->swa_period == 0) hp->swa_period = a->swa_period;
    if (hp->rope_theta_swa == 0) hp->rope_theta_swa = a->swa_theta;
}

/* Appends a spec named fmt with the block number (global names have no %d: it goes unused). */
static elm_tensor_spec *spec(elm_tensor_spec *s, int32_t *n, elm_tensor_kind kind, int64_t cols,
                             int64_t rows, const char *fmt, int layer) {
    elm_tensor_spec *t = &s[(*n)++];
    snprintf(t->name, sizeof t->name, fmt, layer);
    t->kind = kind;
    t->cols = cols;
    t->rows = rows;
    t->experts = 0;
    return t;
}

/* The feed-forward block of layer l, after the token mixing. */
static void ffn_layout(const elm_arch *a, const elm_hparams *hp, int l, elm_tensor_spec *s,
                       int32_t *n) {
    const int64_t dim = hp->dim, ff = elm_layer_ffn_dim(hp, l);
    char name[ELM_NAME_MAX];
    snprintf(name, sizeof name, "blk.%%d.%s", elm_arch_ffn_norm(a));
    spec(s, n, ELM_KIND_NORM, dim, 0, name, l);
    if (a->moe && elm_layer_moe(hp, l)) {
        /* in the order of llama.cpp's converter: router, then down, gate, up */
        const int64_t E = hp->n_expert, eff = hp->expert_ffn_dim;
        const bool b = a->moe_biases; /* each bias after its matrix */
        spec(s, n, ELM_KIND_MATRIX, dim, E, "blk.%d.ffn_gate_inp.weight", l);
        if (b) spec(s, n, ELM_KIND_BIAS, E, 0, "blk.%d.ffn_gate_inp.bias", l);
        if (a->moe_bias) spec(s, n, ELM_KIND_BIAS, E, 0, "blk.%d.exp_probs_b.bias", l);
        spec(s, n, ELM_KIND_MATRIX, eff, dim, "blk.%d.ffn_down_exps.weight", l)->experts = E;
        if (b) spec(s, n, ELM_KIND_BIAS, dim, E, "blk.%d.ffn_down_exps.bias", l);
        spec(s, n, ELM_KIND_MATRIX, dim, eff, "blk.%d.ffn_gate_exps.weight", l)->experts = E;
        if (b) spec(s, n, ELM_KIND_BIAS, eff, E, "blk.%d.ffn_gate_exps.bias", l);
        spec(s, n, ELM_KIND_MATRIX, dim, eff, "blk.%d.ffn_up_exps.weight", l)->experts = E;
        if (b) spec(s, n, ELM_KIND_BIAS, eff, E, "blk.%d.ffn_up_exps.bias", l);
        /* then the shared expert, in the order of Qwen3.5-MoE's and Granite's converters */
        const int64_t sff = hp->shexp_ffn_dim;
        if (a->shexp_gated)
            spec(s, n, ELM_KIND_BIAS, dim, 0, "blk.%d.ffn_gate_inp_shexp.weight", l);
        if (sff > 0) {
            spec(s, n, ELM_KIND_MATRIX, dim, sff, "blk.%d.ffn_gate_shexp.weight", l);
            spec(s, n, ELM_KIND_MATRIX, dim, sff, "blk.%d.ffn_up_shexp.weight", l);
            spec(s, n, ELM_KIND_MATRIX, sff, dim, "blk.%d.ffn_down_shexp.weight", l);
        }
    } else if (a->fused_gate_up) {
        spec(s, n, ELM_KIND_MATRIX, dim, 2 * ff, "blk.%d.ffn_up.weight", l);
        spec(s, n, ELM_KIND_MATRIX, ff, dim, "blk.%d.ffn_down.weight", l);
    } else {
        spec(s, n, ELM_KIND_MATRIX, dim, ff, "blk.%d.ffn_gate.weight", l);
        spec(s, n, ELM_KIND_MATRIX, dim, ff, "blk.%d.ffn_up.weight", l);
        spec(s, n, ELM_KIND_MATRIX, ff, dim, "blk.%d.ffn_down.weight", l);
    }
    if (a->post_norms) spec(s, n, ELM_KIND_NORM, dim, 0, "blk.%d.post_ffw_norm.weight", l);
}

/* The token-mixing tensors of recurrent layer l, by the family's kind. */
static void recurrent_layout(const elm_arch *a, const elm_hparams *hp, int l, elm_tensor_spec *s,
                             int32_t *n) {
    const int64_t dim = hp->dim;
    switch (a->recurrent) {
    case ELM_LAYER_SHORTCONV:
        spec(s, n, ELM_KIND_CONV, hp->conv_l, dim, "blk.%d.shortconv.conv.weight", l);
        spec(s, n, ELM_KIND_MATRIX, dim, 3 * dim, "blk.%d.shortconv.in_proj.weight", l);
        spec(s, n, ELM_KIND_MATRIX, dim, dim, "blk.%d.shortconv.out_proj.weight", l);
        break;
    case ELM_LAYER_MAMBA2: {
        const int64_t inner = hp->ssm_inner, heads = hp->ssm_heads, groups = hp->ssm_groups;
        const int64_t conv = inner + 2 * groups * hp->ssm_state;
        spec(s, n, ELM_KIND_MATRIX, dim, inner + conv + heads, "blk.%d.ssm_in.weight", l);
        spec(s, n, ELM_KIND_CONV, hp->conv_l, conv, "blk.%d.ssm_conv1d.weight", l);
        spec(s, n, ELM_KIND_BIAS, conv, 0, "blk.%d.ssm_conv1d.bias", l);
        spec(s, n, ELM_KIND_BIAS, heads, 0, "blk.%d.ssm_dt.bias", l);
        spec(s, n, ELM_KIND_DECAY, 1, heads, "blk.%d.ssm_a", l);
        spec(s, n, ELM_KIND_NORM, 1, heads, "blk.%d.ssm_d", l);
        spec(s, n, ELM_KIND_NORM, inner / groups, groups, "blk.%d.ssm_norm.weight", l);
        spec(s, n, ELM_KIND_MATRIX, inner, dim, "blk.%d.ssm_out.weight", l);
        break;
    }
    case ELM_LAYER_DELTANET: {
        const int64_t heads = hp->ssm_heads, inner = hp->ssm_inner,
                      channels = 2 * (int64_t)hp->ssm_groups * hp->ssm_state + inner;
        spec(s, n, ELM_KIND_MATRIX, dim, channels, "blk.%d.attn_qkv.weight", l);
        spec(s, n, ELM_KIND_MATRIX, dim, inner, "blk.%d.attn_gate.weight", l);
        spec(s, n, ELM_KIND_CONV, hp->conv_l, channels, "blk.%d.ssm_conv1d.weight", l);
        spec(s, n, ELM_KIND_BIAS, heads, 0, "blk.%d.ssm_dt.bias", l);
        spec(s, n, ELM_KIND_DECAY, heads, 0, "blk.%d.ssm_a", l);
        spec(s, n, ELM_KIND_MATRIX, dim, heads, "blk.%d.ssm_beta.weight", l);
        spec(s, n, ELM_KIND_MATRIX, dim, heads, "blk.%d.ssm_alpha.weight", l);
        spec(s, n, ELM_KIND_NORM, hp->ssm_state, 0, "blk.%d.ssm_norm.weight", l);
        spec(s, n, ELM_KIND_MATRIX, inner, dim, "blk.%d.ssm_out.weight", l);
        break;
    }
    default: break;
    }
}

/* The per-layer embedding's tensors after block l (Gemma 4), and its output scale. */
static void ple_layout(const elm_arch *a, const elm_hparams *hp, int l, elm_tensor_spec *s,
                       int32_t *n) {
    const int64_t dim = hp->dim, P = hp->n_embd_per_layer;
    if (P > 0) {
        spec(s, n, ELM_KIND_MATRIX, dim, P, "blk.%d.inp_gate.weight", l);
        spec(s, n, ELM_KIND_MATRIX, P, dim, "blk.%d.proj.weight", l);
        spec(s, n, ELM_KIND_NORM, dim, 0, "blk.%d.post_norm.weight", l);
    }
    if (a->layer_scale) spec(s, n, ELM_KIND_NORM, 1, 0, "blk.%d.layer_output_scale.weight", l);
}

elm_tensor_spec *elm_arch_layout(const elm_arch *a, const elm_hparams *hp, elm_layout_extras x,
                                 int32_t *n) {
    const elm_rope_tensors rope = x.rope;
    const int64_t dim = hp->dim, P = hp->n_embd_per_layer;
    elm_tensor_spec *s = malloc(((size_t)hp->n_layers * 26 + 11) * sizeof *s);
    *n = 0;
    if (!s) return NULL;
    spec(s, n, ELM_KIND_MATRIX, dim, hp->n_vocab, "token_embd.weight", 0);
    spec(s, n, ELM_KIND_NORM, dim, 0, elm_arch_out_norm(a), 0);
    if (!hp->tied_output) spec(s, n, ELM_KIND_MATRIX, dim, hp->n_vocab, "output.weight", 0);
    if (rope == ELM_ROPE_TENSORS_FREQS)
        spec(s, n, ELM_KIND_ROPE, hp->rope_dim / 2, 0, "rope_freqs.weight", 0);
    if (rope == ELM_ROPE_TENSORS_LONGROPE) {
        spec(s, n, ELM_KIND_ROPE_LONG, hp->rope_dim / 2, 0, "rope_factors_long.weight", 0);
        spec(s, n, ELM_KIND_ROPE_SHORT, hp->rope_dim / 2, 0, "rope_factors_short.weight", 0);
    }
    if (hp->dense_dim > 0) {
        spec(s, n, ELM_KIND_MATRIX, dim, hp->dense_dim, "dense_2.weight", 0);
        spec(s, n, ELM_KIND_MATRIX, hp->dense_dim, dim, "dense_3.weight", 0);
    }
    if (P > 0) {
        spec(s, n, ELM_KIND_MATRIX, P * hp->n_layers, hp->n_vocab, "per_layer_token_embd.weight",
             0);
        spec(s, n, ELM_KIND_MATRIX, dim, P * hp->n_layers, "per_layer_model_proj.weight", 0);
        spec(s, n, ELM_KIND_NORM, P, 0, "per_layer_proj_norm.weight", 0);
    }
    for (int l = 0; l < hp->n_layers; l++) {
        const int64_t hd = elm_layer_head_dim(hp, l), q = (int64_t)hp->n_heads * hd,
                      kv = (int64_t)elm_layer_kv_heads(hp, l) * hd;
        const bool own_kv = elm_layer_kv_src(hp, l) == l; /* Gemma 4's last layers: none */
        const bool kv_weights = own_kv || x.shared_kv_weights; /* theirs, kept unused */
        spec(s, n, ELM_KIND_NORM, dim, 0, "blk.%d.attn_norm.weight", l);
        if (elm_layer_recurrent(hp, l)) {
            recurrent_layout(a, hp, l, s, n);
            ffn_layout(a, hp, l, s, n);
            continue;
        }
        if (a->fused_qkv) {
            spec(s, n, ELM_KIND_MATRIX, dim, q + 2 * kv, "blk.%d.attn_qkv.weight", l);
        } else {
            /* a gated family's q rows hold each head's query, then its gate */
            spec(s, n, ELM_KIND_MATRIX, dim, a->attn_gate ? 2 * q : q, "blk.%d.attn_q.weight", l);
            if (kv_weights) spec(s, n, ELM_KIND_MATRIX, dim, kv, "blk.%d.attn_k.weight", l);
            if (kv_weights) spec(s, n, ELM_KIND_MATRIX, dim, kv, "blk.%d.attn_v.weight", l);
        }
        if (a->qkv_bias) {
            spec(s, n, ELM_KIND_BIAS, q, 0, "blk.%d.attn_q.bias", l);
            spec(s, n, ELM_KIND_BIAS, kv, 0, "blk.%d.attn_k.bias", l);
            spec(s, n, ELM_KIND_BIAS, kv, 0, "blk.%d.attn_v.bias", l);
        }
        if (a->qk_norm) {
            spec(s, n, ELM_KIND_NORM, hd, 0, "blk.%d.attn_q_norm.weight", l);
            if (kv_weights) spec(s, n, ELM_KIND_NORM, hd, 0, "blk.%d.attn_k_norm.weight", l);
        }
        spec(s, n, ELM_KIND_MATRIX, q, dim, "blk.%d.attn_output.weight", l);
        if (a->sinks) {
            spec(s, n, ELM_KIND_BIAS, dim, 0, "blk.%d.attn_output.bias", l);
            spec(s, n, ELM_KIND_BIAS, hp->n_heads, 0, "blk.%d.attn_sinks.weight", l);
        }
        if (a->post_norms) spec(s, n, ELM_KIND_NORM, dim, 0, "blk.%d.post_attention_norm.weight", l);
        ffn_layout(a, hp, l, s, n);
        ple_layout(a, hp, l, s, n);
    }
    return s;
}

void elm_arch_double_wide_mlp(elm_hparams *hp) {
    const int first_shared = hp->n_layers - hp->n_kv_shared;
    if (hp->n_kv_shared <= 0 || first_shared <= 0) return;
    for (int l = 0; l < hp->n_layers && l < ELM_MAX_LAYERS; l++)
        hp->layer_ffn[l] = l < first_shared ? hp->ffn_dim : 2 * hp->ffn_dim;
    hp->ffn_dim *= 2;
}

float elm_arch_longrope_attn_factor(int32_t n_ctx_train, int32_t n_ctx_orig) {
    if (n_ctx_orig <= 1 || n_ctx_train <= n_ctx_orig) return 1.0f;
    const double s = (double)n_ctx_train / n_ctx_orig;
    return (float)sqrt(1 + log(s) / log((double)n_ctx_orig));
}

bool elm_arch_supported(const char *arch) { return elm_arch_find(arch) != NULL; }
