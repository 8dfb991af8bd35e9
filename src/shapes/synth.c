/* Random-weight models of real shapes (see synth.h). The shapes come from each model's Hugging
 * Face config.json; the tensor list and the metadata are what llama.cpp's converter writes for
 * that architecture, so llama.cpp runs the same files (the side-by-side benchmarks need that). */
#include "edgelm/shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/quant.h"
#include "formats/gguf_write.h"
#include "formats/hf.h"
#include "model/arch.h"
#include "model/builder.h"
#include "shapes/preset.h"

/* The sizes Qwen3.5's small dense models share (their text_config): 248320 tokens, 262144
 * positions, eps 1e-6, RoPE base 1e7 on 64 of each attention head's 256 dimensions (partial 0.25)
 * in M-RoPE sections 11, 11, 10, and Gated DeltaNet layers of 16 key heads, value heads of 128
 * and a causal convolution of 4 taps */
#define QWEN35_SHARED                                                                           \
    .arch = "qwen35", .n_vocab = 248320, .n_ctx_train = 262144, .rms_eps = 1e-6f,              \
    .rope_theta = 10000000.0f, .head_dim = 256, .rope_dim = 64, .conv_l = 4,                    \
    .extra.ssm_state = 128, .extra.ssm_groups = 16, .extra.rope_sections = {11, 11, 10, 0}
/* full_attention_interval 4: layers 3, 7, 11, ... attend */
#define QWEN35_LAYERS_6 "rrra" "rrra" "rrra" "rrra" "rrra" "rrra"
/* Gemma 4 E2B's and E4B's: 262144 tokens (the per-layer embeddings' too), 131072 positions, eps
 * 1e-6, tied; 8 heads of 256 on the windowed layers (RoPE base 1e4, a window of 512) and of 512 on
 * the global ones (base 1e6, "proportional" RoPE turning 128 of them: partial_rotary_factor
 * 0.25), per-layer embeddings of 256 */
#define GEMMA4_SHARED                                                                           \
    .arch = "gemma4", .n_vocab = 262144, .n_ctx_train = 131072, .rms_eps = 1e-6f,              \
    .rope_theta = 1000000.0f, .tied = true, .head_dim = 512, .rope_dim = 128, .n_swa = 512,    \
    .extra.head_dim_swa = 256, .extra.n_embd_per_layer = 256

/* What Granite 4.0-H's micro and tiny share: 100352 tokens, 131072 positions, 40 layers, Mamba-2
 * but at 5, 15, 25, 35 (attention without positions), kernels of 4 taps, a state of 128 in one
 * group, tied embeddings, the micro's multipliers */
#define GRANITE4H_SHARED                                                                        \
    .arch = "granitehybrid", .n_vocab = 100352, .n_layers = 40, .n_ctx_train = 131072,         \
    .rms_eps = 1e-5f, .rope_theta = 10000.0f, .tied = true, .conv_l = 4,                        \
    .layers = "rrrrrarrrr" "rrrrrarrrr" "rrrrrarrrr" "rrrrrarrrr"
#define GRANITE4H_EXTRA                                                                         \
    .ssm_state = 128, .ssm_groups = 1, .embd_scale = 12.0f, .residual_scale = 0.22f,            \
    .attn_scale = 0.015625f, .logit_scale = 8.0f, .no_rope = true

/* name, Hugging Face source, arch, n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim,
 * n_ctx_train, rms_eps, rope_theta, tied, llama3_rope, head_dim, n_swa, rope_dim, rope_scale,
 * layers, conv_l, n_ctx_orig, extra (elm_synth_preset); the rows of the newer families name
 * their fields.
 * Every preset's parameter count is the real model's (tests/test_synth.c). */
static const elm_synth_preset presets[] = {
    {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "llama",    32000, 2048, 22, 32,  4,  5632,   2048, 1e-5f,   10000.0f, false, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"llama-3.2-1b",   "meta-llama/Llama-3.2-1B",            "llama",   128256, 2048, 16, 32,  8,  8192, 131072, 1e-5f,  500000.0f,  true,  true,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"llama-2-7b",     "meta-llama/Llama-2-7b-hf",           "llama",    32000, 4096, 32, 32, 32, 11008,   4096, 1e-5f,   10000.0f, false, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"llama-2-13b",    "meta-llama/Llama-2-13b-hf",          "llama",    32000, 5120, 40, 40, 40, 13824,   4096, 1e-5f,   10000.0f, false, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"llama-3-8b",     "meta-llama/Meta-Llama-3-8B",         "llama",   128256, 4096, 32, 32,  8, 14336,   8192, 1e-5f,  500000.0f, false, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"qwen2-0.5b",     "Qwen/Qwen2-0.5B",                    "qwen2",   151936,  896, 24, 14,  2,  4864, 131072, 1e-6f, 1000000.0f,  true, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"llama-3.2-3b",   "meta-llama/Llama-3.2-3B",            "llama",   128256, 3072, 28, 24,  8,  8192, 131072, 1e-5f,  500000.0f,  true,  true,   0,    0,  0, 0, NULL, 0, 0, {0}},
    /* Llama's tensors; its NoPE layers are the architecture's, not the file's */
    {"smollm3-3b",     "HuggingFaceTB/SmolLM3-3B",           "smollm3", 128256, 2048, 36, 16,  4, 11008,  65536, 1e-6f, 5000000.0f,  true, false,   0,    0,  0, 0, NULL, 0, 0, {0}},
    {"qwen3-0.6b",     "Qwen/Qwen3-0.6B",                    "qwen3",   151936, 1024, 28, 16,  8,  3072,  40960, 1e-6f, 1000000.0f,  true, false, 128,    0,  0, 0, NULL, 0, 0, {0}},
    {"qwen3-1.7b",     "Qwen/Qwen3-1.7B",                    "qwen3",   151936, 2048, 28, 16,  8,  6144,  40960, 1e-6f, 1000000.0f,  true, false, 128,    0,  0, 0, NULL, 0, 0, {0}},
    {"qwen3-4b",       "Qwen/Qwen3-4B",                      "qwen3",   151936, 2560, 36, 32,  8,  9728,  40960, 1e-6f, 1000000.0f,  true, false, 128,    0,  0, 0, NULL, 0, 0, {0}},
    /* 5 of 6 layers see the last 512 / 1024 positions; the 4B's is its text_config */
    {"gemma-3-1b",     "google/gemma-3-1b-it",               "gemma3",  262144, 1152, 26,  4,  1,  6912,  32768, 1e-6f, 1000000.0f,  true, false, 256,  512,  0, 0, NULL, 0, 0, {0}},
    {"gemma-3-4b",     "google/gemma-3-4b-it",               "gemma3",  262208, 2560, 34,  8,  4, 10240, 131072, 1e-6f, 1000000.0f,  true, false, 256, 1024,  0, 8.0f, NULL, 0, 0, {0}},
    /* Phi-3's fused tensors, RoPE on 96 of 128 dimensions with LongRoPE factors
     * (rope_factors_long/short, 2 × 48 floats) for 131072 tokens extended from 4096 */
    {"phi-4-mini",     "microsoft/Phi-4-mini-instruct",      "phi3",    200064, 3072, 32, 24,  8,  8192, 131072, 1e-5f,   10000.0f,  true, false,   0,    0, 96, 0, NULL, 0, 4096, {0}},
    /* short-conv layers ('r') with attention at 2, 5, 8, 10, 12, 14 (full_attn_idxs); the FFN as
     * the converter sizes it (block_ff_dim · 2/3, rounded up to 256) */
    {"lfm2-350m",      "LiquidAI/LFM2-350M",                 "lfm2",     65536, 1024, 16, 16,  8,  4608, 128000, 1e-5f, 1000000.0f,  true, false,   0,    0,  0, 0, "rrarrarrararara" "r", 3, 0, {0}},
    {"lfm2-1.2b",      "LiquidAI/LFM2-1.2B",                 "lfm2",     65536, 2048, 16, 32,  8,  8192, 128000, 1e-5f, 1000000.0f,  true, false,   0,    0,  0, 0, "rrarrarrararara" "r", 3, 0, {0}},
    /* attention at 2, 5, 9, 13, 17, 21, 24, 27 (layer_types); the FFN 10752 as written
     * (block_auto_adjust_ff_dim false). Unconfirmed: the context 128000, eps 1e-5 and RoPE base
     * 1e6 are from a Liquid fine-tune's config.json (LFM2-2.6B-Transcript-ONNX), the base repo's
     * was not seen; they leave the shapes as they are */
    {"lfm2-2.6b",      "LiquidAI/LFM2-2.6B",                 "lfm2",     65536, 2048, 30, 32,  8, 10752, 128000, 1e-5f, 1000000.0f,  true, false,   0,    0,  0, 0, "rrarrarrra" "rrrarrrarr" "rarrarrarr", 3, 0, {0}},
    /* Qwen3.5's text model, three Gated DeltaNet layers to one gated attention layer (q doubled
     * for its output gate), without its vision tower and its MTP block: the file llama.cpp's
     * converter writes with --no-mtp (by default it appends the block, which edgelm carries but
     * never runs: 20,452,864 / 60,828,160 / 120,599,552 / 243,290,624 more parameters) */
    {.name = "qwen3.5-0.8b", .source = "Qwen/Qwen3.5-0.8B", QWEN35_SHARED, .dim = 1024,
     .n_layers = 24, .n_heads = 8, .n_kv_heads = 2, .ffn_dim = 3584, .tied = true,
     .layers = QWEN35_LAYERS_6, .extra.ssm_inner = 16 * 128, .extra.ssm_heads = 16},
    {.name = "qwen3.5-2b", .source = "Qwen/Qwen3.5-2B", QWEN35_SHARED, .dim = 2048,
     .n_layers = 24, .n_heads = 8, .n_kv_heads = 2, .ffn_dim = 6144, .tied = true,
     .layers = QWEN35_LAYERS_6, .extra.ssm_inner = 16 * 128, .extra.ssm_heads = 16},
    {.name = "qwen3.5-4b", .source = "Qwen/Qwen3.5-4B", QWEN35_SHARED, .dim = 2560,
     .n_layers = 32, .n_heads = 16, .n_kv_heads = 4, .ffn_dim = 9216, .tied = true,
     .layers = QWEN35_LAYERS_6 "rrra" "rrra", .extra.ssm_inner = 32 * 128, .extra.ssm_heads = 32},
    {.name = "qwen3.5-9b", .source = "Qwen/Qwen3.5-9B", QWEN35_SHARED, .dim = 4096,
     .n_layers = 32, .n_heads = 16, .n_kv_heads = 4, .ffn_dim = 12288, .tied = false,
     .layers = QWEN35_LAYERS_6 "rrra" "rrra", .extra.ssm_inner = 32 * 128, .extra.ssm_heads = 32},
    /* Mamba-2 layers with attention at 5, 15, 25, 35 (without positions), the dense shared MLP;
     * d_inner 4096 in 64 heads of 64, d_state 128 in 1 group. Unconfirmed: eps 1e-5 (its h-350m
     * sibling's) and the RoPE base 10000 (unused); NoPE from a granite4_h fixture and AWS's
     * listing, the official config.json's key not seen */
    {.name = "granite-4.0-h-micro", .source = "ibm-granite/granite-4.0-h-micro", GRANITE4H_SHARED,
     .dim = 2048, .n_heads = 32, .n_kv_heads = 8, .ffn_dim = 8192,
     .extra = {GRANITE4H_EXTRA, .ssm_inner = 4096, .ssm_heads = 64}},
    /* Granite-4.0-H-Micro's layout at 1536 (12 heads of 128 on 4 KV heads; Mamba-2 d_inner 3072
     * in 48 heads of 64), every FFN 64 experts of 512 (intermediate_size, which llama.cpp's
     * converter writes as feed_forward_length), 6 per token, beside a shared expert of 1024;
     * tied embeddings of 100352. Unconfirmed: read from a copy of its config.json quoted in a
     * third party's tests (the official file not seen); the multipliers are the micro's (they
     * leave the shapes as they are) */
    {.name = "granite-4.0-h-tiny", .source = "ibm-granite/granite-4.0-h-tiny", GRANITE4H_SHARED,
     .dim = 1536, .n_heads = 12, .n_kv_heads = 4, .ffn_dim = 512,
     .extra = {GRANITE4H_EXTRA, .ssm_inner = 3072, .ssm_heads = 48, .n_expert = 64,
               .n_expert_used = 6, .expert_ffn_dim = 512, .shexp_ffn_dim = 1024}},
    /* Gemma 4's text model (no vision or audio encoder): 4 windowed layers to 1 global one, the
     * last 20 reading the KV of layers 13 and 14, their FFN doubled (use_double_wide_mlp) */
    {.name = "gemma-4-e2b", .source = "google/gemma-4-E2B", GEMMA4_SHARED, .dim = 1536,
     .n_layers = 35, .n_heads = 8, .n_kv_heads = 1, .ffn_dim = 6144,
     .layers = "ssssa" "ssssa" "ssssa" "ssssa" "ssssa" "ssssa" "ssssa", .extra.kv_shared_from = 15,
     .extra.double_wide_mlp = true},
    /* 5 windowed layers to 1 global one, the last 18 reading the KV of layers 22 and 23 */
    {.name = "gemma-4-e4b", .source = "google/gemma-4-E4B", GEMMA4_SHARED, .dim = 2560,
     .n_layers = 42, .n_heads = 8, .n_kv_heads = 2, .ffn_dim = 10240,
     .layers = "sssssa" "sssssa" "sssssa" "sssssa" "sssssa" "sssssa" "sssssa",
     .extra.kv_shared_from = 24},
    /* every layer's FFN 128 experts of 768, 8 per token (about 3.3B of its 30.5B read a token);
     * its dense intermediate_size (6144) belongs to no layer (mlp_only_layers is empty) */
    {.name = "qwen3-30b-a3b", .source = "Qwen/Qwen3-30B-A3B", .arch = "qwen3moe",
     .n_vocab = 151936, .dim = 2048, .n_layers = 48, .n_heads = 32, .n_kv_heads = 4,
     .ffn_dim = 6144, .n_ctx_train = 40960, .rms_eps = 1e-6f, .rope_theta = 1000000.0f,
     .head_dim = 128,
     .extra = {.n_expert = 128, .n_expert_used = 8, .expert_ffn_dim = 768}},
    /* openai/gpt-oss-20b's config.json: 24 layers of 64 heads of 64 (q wider than the 2880
     * hidden) on 8 KV heads, windowed (sliding_window 128) and global in turn (layer_types), 32
     * experts of intermediate_size 2880 (the dense size llama.cpp's converter writes too), 4 per
     * token (num_experts_per_tok), YaRN ×32 from 4096 (rope_scaling), base 150000, untied; its
     * experts are MXFP4 in the checkpoint, float here */
    {.name = "gpt-oss-20b", .source = "openai/gpt-oss-20b", .arch = "gpt-oss",
     .n_vocab = 201088, .dim = 2880, .n_layers = 24, .n_heads = 64, .n_kv_heads = 8,
     .ffn_dim = 2880, .n_ctx_train = 131072, .rms_eps = 1e-5f, .rope_theta = 150000.0f,
     .head_dim = 64, .n_swa = 128, .rope_scale = 32.0f,
     .extra = {.n_expert = 32, .n_expert_used = 4, .expert_ffn_dim = 2880, .yarn_orig = 4096}},
    /* LFM2's short-conv layers with attention at 2, 6, 10, 14, 18, 21 (layer_types: 18 conv, 6
     * attention, as the model card says); the first 2 FFNs dense of 7168 (num_dense_layers,
     * intermediate_size), the other 22 32 experts of 1792 (moe_intermediate_size), 4 per token,
     * routed by a sigmoid with an expert bias. Unconfirmed: the official config.json was not
     * read; the keys are those of a fine-tune's copy (huggingface.co/Ba2han/augment-multi-ft2,
     * Lfm2MoeForCausalLM, base LiquidAI/LFM2-8B-A1B), which agree with transformers'
     * Lfm2MoeConfig defaults and the model card (8.3B parameters, 1.5B active); its Q4_K_M
     * file is 3.6 MB (the tokenizer) below LiquidAI's LFM2-8B-A1B-Q4_K_M.gguf */
    {.name = "lfm2-8b-a1b", .source = "LiquidAI/LFM2-8B-A1B", .arch = "lfm2moe",
     .n_vocab = 65536, .dim = 2048, .n_layers = 24, .n_heads = 32, .n_kv_heads = 8,
     .ffn_dim = 7168, .n_ctx_train = 128000, .rms_eps = 1e-5f, .rope_theta = 1000000.0f,
     .tied = true, .layers = "rrarrrarrrarrrarrrarrarr", .conv_l = 3,
     .extra = {.n_expert = 32, .n_expert_used = 4, .expert_ffn_dim = 1792, .n_dense_lead = 2}},
};

/* Whether family a rotates part of a head by rope_freqs, as llama.cpp's converter writes Gemma
 * 4's global layers (rope_dim all of the head, the pairs past the part divided by
 * ELM_HF_UNTURNED), rather than by rope_dim. */
static bool rope_by_freqs(const elm_arch *a) { return a && a->swa_listed; }

/* Which of p's first n_layers layers are recurrent, and which see the window (a listed 's'). */
static void preset_layer_kinds(const elm_synth_preset *p, elm_hparams *hp) {
    for (int l = 0; p->layers && l < p->n_layers && l < ELM_MAX_LAYERS && p->layers[l]; l++) {
        hp->recurrent[l] = p->layers[l] == 'r';
        hp->swa_layer[l] = p->layers[l] == 's';
        hp->swa_listed |= hp->swa_layer[l];
    }
}

/* Gemma 4's: the windowed layers' heads (rotated whole, RoPE base 1e4), the KV sharing of the
 * layers from kv_shared_from among the first n_layers and their FFN size, the per-layer
 * embeddings. */
static void preset_listed_windows(const elm_synth_preset *p, elm_hparams *hp) {
    const elm_synth_extra *x = &p->extra;
    if (!hp->swa_listed) return;
    hp->head_dim_swa = hp->rope_dim_swa = x->head_dim_swa;
    hp->rope_theta_swa = 10000.0f;
    if (x->kv_shared_from > 0 && p->n_layers > x->kv_shared_from)
        hp->n_kv_shared = p->n_layers - x->kv_shared_from;
    if (x->double_wide_mlp) elm_arch_double_wide_mlp(hp);
    hp->n_embd_per_layer = x->n_embd_per_layer;
}

void elm_preset_hparams(const elm_synth_preset *p, elm_hparams *hp) {
    const elm_arch *a = elm_arch_find(p->arch);
    snprintf(hp->arch, sizeof hp->arch, "%s", p->arch);
    hp->n_vocab = p->n_vocab, hp->dim = p->dim, hp->n_layers = p->n_layers;
    hp->n_heads = p->n_heads, hp->n_kv_heads = p->n_kv_heads, hp->ffn_dim = p->ffn_dim;
    hp->head_dim = p->head_dim ? p->head_dim : p->dim / p->n_heads;
    hp->rope_dim = p->rope_dim && !rope_by_freqs(a) ? p->rope_dim : hp->head_dim;
    memcpy(hp->rope_sections, p->extra.rope_sections, sizeof hp->rope_sections);
    hp->n_ctx_train = p->n_ctx_train, hp->rms_eps = p->rms_eps, hp->rope_theta = p->rope_theta;
    hp->tied_output = p->tied, hp->n_swa = p->n_swa;
    hp->rope_freq_scale = p->rope_scale > 0 ? 1.0f / p->rope_scale : 0;
    hp->logit_softcap = a ? a->softcap : 0; /* the family's (Gemma 4's configs: 30) */
    preset_layer_kinds(p, hp);
    preset_listed_windows(p, hp);
    hp->conv_l = p->conv_l;
    const elm_synth_extra *x = &p->extra;
    hp->ssm_inner = x->ssm_inner, hp->ssm_state = x->ssm_state;
    hp->ssm_heads = x->ssm_heads, hp->ssm_groups = x->ssm_groups;
    hp->embd_scale = x->embd_scale, hp->residual_scale = x->residual_scale;
    hp->attn_scale = x->attn_scale, hp->logit_scale = x->logit_scale;
    hp->no_rope = x->no_rope;
    hp->n_expert = x->n_expert, hp->n_expert_used = x->n_expert_used;
    hp->expert_ffn_dim = x->expert_ffn_dim, hp->n_dense_lead = x->n_dense_lead;
    hp->shexp_ffn_dim = x->shexp_ffn_dim;
    /* the family's router, which llama.cpp's loader wants named (lfm2moe.expert_gating_func) */
    if (x->n_expert > 0 && a) hp->moe_gating = a->moe_gating;
    if (x->yarn_orig > 0) {
        hp->rope_yarn = true;
        hp->n_ctx_orig = x->yarn_orig;
        hp->yarn_beta_fast = 32.0f;
        hp->yarn_beta_slow = 1.0f;
    }
    if (p->n_ctx_orig > 0) {
        hp->n_ctx_orig = p->n_ctx_orig;
        hp->rope_attn_factor = elm_arch_longrope_attn_factor(p->n_ctx_train, p->n_ctx_orig);
    }
}

elm_layout_extras elm_preset_layout_extras(const elm_synth_preset *p) {
    const bool partial = p->rope_dim > 0 && rope_by_freqs(elm_arch_find(p->arch));
    const elm_rope_tensors rope = p->llama3_rope || partial ? ELM_ROPE_TENSORS_FREQS
                                  : p->n_ctx_orig          ? ELM_ROPE_TENSORS_LONGROPE
                                                           : ELM_ROPE_TENSORS_NONE;
    return (elm_layout_extras){.rope = rope, .shared_kv_weights = p->extra.kv_shared_from > 0};
}

const elm_synth_preset *elm_synth_presets(int *n) {
    *n = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

const elm_synth_preset *elm_synth_find(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

/* What a tensor is filled with. */
typedef enum {
    FILL_RANDOM,
    FILL_ONES,
    FILL_ROPE_FREQS,
    FILL_ROPE_LONG,
    FILL_ROPE_SHORT,
    FILL_DECAY
} fill_kind;

typedef struct {
    const elm_synth_preset *p;
    uint64_t seed;
    fill_kind *kind; /* [n_tensors] */
    float *row;      /* [widest row] floats */
    elm_synth_progress progress;
    void *user;
    int32_t n_tensors;
} synth_state;

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Llama 3's frequency divisors (rope_scaling "llama3"): wavelengths shorter than original/high
 * keep their frequency, longer than original/low are divided by the factor, and the band between
 * is interpolated; as Meta's reference code and llama.cpp's converter compute them. */
static void llama3_rope_freqs(const elm_synth_preset *p, float *out, int n) {
    const double factor = 32, low = 1, high = 4, original = 8192;
    const int rope_dim = p->dim / p->n_heads;
    for (int i = 0; i < n; i++) {
        const double freq = pow(p->rope_theta, -2.0 * i / rope_dim), wavelen = 2 * M_PI / freq;
        if (wavelen < original / high) out[i] = 1.0f;
        else if (wavelen > original / low) out[i] = (float)factor;
        else {
            const double smooth = (original / wavelen - low) / (high - low);
            out[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
}

/* LongRoPE factors of the shape searched ones take, not the model's own: rising from 1 with the
 * wavelength, the short ones to 1.5, the long ones to the extension n_ctx_train / n_ctx_orig
 * (quadratically, most of the stretch on the slowest pairs). */
static void longrope_factors(const elm_synth_preset *p, bool is_long, float *out, int n) {
    const double top = is_long ? (double)p->n_ctx_train / p->n_ctx_orig : 1.5;
    for (int i = 0; i < n; i++) {
        const double x = n > 1 ? (double)i / (n - 1) : 0;
        out[i] = (float)(1 + (top - 1) * x * x);
    }
}

/* Tensor i (described by t) into dst, t->nbytes: its kind of values, encoded as t's type. */
static void fill(synth_state *s, int32_t i, const elm_tensor *t, uint8_t *dst) {
    const int64_t cols = t->ne[0], rows = t->nbytes / elm_row_bytes(t->type, cols);
    const elm_type_traits *tt = elm_type_get(t->type);
    const size_t row_bytes = elm_row_bytes(t->type, cols);
    uint64_t rng = s->seed ^ ((uint64_t)i << 32);
    for (int64_t r = 0; r < rows; r++) {
        switch (s->kind[i]) {
        case FILL_ONES:
            for (int64_t c = 0; c < cols; c++) s->row[c] = 1.0f;
            break;
        case FILL_ROPE_FREQS: /* Llama 3.1's, or Gemma 4's turning rope_dim / 2 pairs */
            if (s->p->llama3_rope) llama3_rope_freqs(s->p, s->row, (int)cols);
            else elm_hf_partial_freqs(s->row, (int)cols, s->p->rope_dim / 2);
            break;
        case FILL_ROPE_LONG: longrope_factors(s->p, true, s->row, (int)cols); break;
        case FILL_ROPE_SHORT: longrope_factors(s->p, false, s->row, (int)cols); break;
        case FILL_DECAY: /* a decay rate must be negative, or the state grows without bound */
            for (int64_t c = 0; c < cols; c++) s->row[c] = -1.0f;
            break;
        case FILL_RANDOM:
            for (int64_t c = 0; c < cols; c += 2) {
                const uint64_t v = splitmix64(&rng);
                s->row[c] = ((float)(uint32_t)v * 0x1p-32f - 0.5f) * 0.07f;
                if (c + 1 < cols)
                    s->row[c + 1] = ((float)(uint32_t)(v >> 32) * 0x1p-32f - 0.5f) * 0.07f;
            }
            break;
        }
        tt->from_float(s->row, dst + (size_t)r * row_bytes, cols);
    }
}

/* The vocabulary: llama.cpp's SentencePiece layout (<unk>, <s>, </s>, 256 byte pieces) followed
 * by placeholder pieces, so the file loads anywhere a Llama vocabulary does. */
static elm_status placeholder_vocab(elm_vocab *v, int32_t n, elm_error *err) {
    elm_status st = elm_vocab_alloc(v, n, true, err);
    for (int32_t i = 0; i < n && !st; i++) {
        char piece[32];
        int32_t type = ELM_TOKEN_NORMAL;
        if (i == 0) snprintf(piece, sizeof piece, "<unk>"), type = ELM_TOKEN_UNKNOWN;
        else if (i == 1) snprintf(piece, sizeof piece, "<s>"), type = ELM_TOKEN_CONTROL;
        else if (i == 2) snprintf(piece, sizeof piece, "</s>"), type = ELM_TOKEN_CONTROL;
        else if (i < 259) snprintf(piece, sizeof piece, "<0x%02X>", i - 3), type = ELM_TOKEN_BYTE;
        else snprintf(piece, sizeof piece, "[tok%d]", i);
        st = elm_vocab_set_piece(v, i, piece, strlen(piece), err);
        v->types[i] = type;
        v->scores[i] = -(float)i;
    }
    snprintf(v->model, sizeof v->model, "llama");
    v->unk_id = 0, v->bos_id = 1, v->eos_id = 2;
    return st;
}

/* The tensors of the family's layout (model/arch.h, the converter's): matrices of `type`,
 * norms (ones), decay rates (-1), biases and the RoPE vectors F32. */
static elm_status list_tensors(const elm_arch *a, const elm_hparams *hp, elm_layout_extras x,
                               elm_type type, elm_tensor **t, fill_kind **kind, int32_t *n) {
    elm_tensor_spec *specs = elm_arch_layout(a, hp, x, n);
    *t = specs ? calloc((size_t)*n, sizeof **t) : NULL;
    *kind = specs ? calloc((size_t)*n, sizeof **kind) : NULL;
    if (!*t || !*kind) {
        free(specs);
        return ELM_ERR_NOMEM;
    }
    for (int32_t i = 0; i < *n; i++) {
        elm_tensor *d = &(*t)[i];
        const elm_tensor_spec *sp = &specs[i];
        const bool matrix = sp->kind == ELM_KIND_MATRIX;
        snprintf(d->name, sizeof d->name, "%s", sp->name);
        d->type = matrix ? type : ELM_TYPE_F32;
        d->n_dims = elm_spec_dims(sp);
        d->ne[0] = sp->cols, d->ne[1] = sp->rows ? sp->rows : 1;
        d->ne[2] = sp->experts ? sp->experts : 1, d->ne[3] = 1;
        d->nbytes = elm_row_bytes(d->type, sp->cols) * (size_t)(d->ne[1] * d->ne[2]);
        (*kind)[i] = sp->kind == ELM_KIND_NORM         ? FILL_ONES
                     : sp->kind == ELM_KIND_ROPE       ? FILL_ROPE_FREQS
                     : sp->kind == ELM_KIND_ROPE_LONG  ? FILL_ROPE_LONG
                     : sp->kind == ELM_KIND_ROPE_SHORT ? FILL_ROPE_SHORT
                     : sp->kind == ELM_KIND_DECAY      ? FILL_DECAY
                                                       : FILL_RANDOM;
    }
    free(specs);
    return ELM_OK;
}

elm_status elm_synth_write(const elm_synth_preset *p, elm_type type, const char *path,
                           uint64_t seed, elm_synth_progress progress, void *user,
                           uint64_t *file_bytes, elm_error *err) {
    const elm_arch *arch = elm_arch_find(p->arch);
    const elm_type_traits *tt = elm_type_get(type);
    if (!tt || !tt->from_float)
        return elm_errorf(err, ELM_ERR_ARG, "%s: type %u cannot be written", path, (unsigned)type);
    if (!elm_row_bytes(type, p->dim) || !elm_row_bytes(type, p->ffn_dim))
        return elm_errorf(err, ELM_ERR_ARG, "%s: %s rows of %d and %d columns cannot be %s", path,
                          p->name, p->dim, p->ffn_dim, elm_type_get(type)->name);
    if (!arch)
        return elm_errorf(err, ELM_ERR_ARG, "%s: unknown architecture '%s' (%s)", path, p->arch,
                          elm_arch_names());
    elm_model *m = elm_model_new(path, "gguf", err);
    if (!m) return ELM_ERR_NOMEM;
    elm_hparams *hp = &m->hp;
    elm_preset_hparams(p, hp);
    elm_tensor *tensors = NULL;
    fill_kind *kind = NULL;
    int32_t n = 0;
    elm_status st = list_tensors(arch, hp, elm_preset_layout_extras(p), type, &tensors, &kind, &n);
    /* the widest row of any tensor (Gemma 4's per-layer embedding table: n_layers · 256) */
    int64_t widest = 1;
    for (int32_t i = 0; i < n; i++)
        if (tensors[i].ne[0] > widest) widest = tensors[i].ne[0];
    synth_state s = {p, seed, kind, malloc(sizeof(float) * (size_t)widest), progress, user, n};
    if (st || !s.row) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t i = 0; i < n && !st; i++) /* a matrix whose rows are not whole blocks */
        if (!tensors[i].nbytes)
            st = elm_errorf(err, ELM_ERR_ARG, "%s: %s's tensor %s has rows of %lld columns, which "
                            "cannot be %s", path, p->name, tensors[i].name,
                            (long long)tensors[i].ne[0], tt->name);
    if (!st) st = placeholder_vocab(&m->vocab, p->n_vocab, err);
    /* one tensor's bytes at a time: the largest */
    size_t max_bytes = 1;
    for (int32_t i = 0; i < n && !st; i++)
        if (tensors[i].nbytes > max_bytes) max_bytes = tensors[i].nbytes;
    uint8_t *buf = st ? NULL : malloc(max_bytes);
    if (!st && !buf) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    elm_gguf_writer *w = NULL;
    if (!st) {
        snprintf(m->name, sizeof m->name,
                 "%s random weights (for speed and memory measurement only)", p->name);
        st = elm_gguf_begin_model(path, m, tensors, n, elm_file_type_of(type), &w, err);
    }
    for (int32_t i = 0; i < n && !st; i++) {
        fill(&s, i, &tensors[i], buf);
        st = elm_gguf_write_tensor(w, i, buf, tensors[i].nbytes, err);
        if (!st && s.progress) s.progress(s.user, i + 1, s.n_tensors);
    }
    if (!st) st = elm_gguf_end(w, file_bytes, err);
    elm_gguf_writer_free(w);
    free(tensors), free(kind), free(s.row), free(buf);
    elm_model_free(m);
    return st;
}
