/* Tiny random models of each family (see synth_tiny.h). Weights come from a seeded normal
 * generator (splitmix64 + Box-Muller), so a seed names one model on every machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_write.h"
#include "formats/hf.h"
#include "formats/hf_write.h"
#include "formats/loaders.h"
#include "model/arch.h"
#include "shapes/synth_tiny.h"

enum { TINY_DIM = 64, TINY_LAYERS = 2, TINY_HEADS = 4, TINY_KV_HEADS = 2, TINY_HEAD = 16,
       TINY_FFN = 128, TINY_WINDOW = 16, TINY_LONGROPE_ORIG = 512, TINY_DENSE = 2 };

/* Llama 3.1's rope_scaling, as its config.json has it */
static const float llama31_scaling[4] = {8.0f, 1.0f, 4.0f, 8192.0f};

typedef struct rng {
    uint64_t state;
} rng;

static uint64_t next_u64(rng *r) {
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Standard normal (Box-Muller; the second value is dropped to keep the stream simple). */
static double normal(rng *r) {
    double u1 = ((next_u64(r) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
    double u2 = (next_u64(r) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Adds an F32 tensor [rows, cols] (rows 0: a vector; a stack of t->experts such matrices) of
 * v = mean + std · N(0, 1) values, or of -expf(v) for decay rates (v rounded to float first: the
 * A of an A_log, as an HF copy holds). */
static elm_status add(elm_model *m, rng *r, const elm_tensor_spec *t, double mean, double std,
                      elm_error *err) {
    const int64_t n = t->cols * (t->rows ? t->rows : 1) * (t->experts ? t->experts : 1);
    float *data = malloc((size_t)n * sizeof *data);
    if (!data) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int64_t i = 0; i < n; i++) {
        const double v = mean + std * normal(r);
        data[i] = t->kind == ELM_KIND_DECAY ? -expf((float)v) : (float)v;
    }
    elm_status st = elm_model_own_buffer(m, data, err);
    const int64_t ne[3] = {t->cols, t->rows, t->experts};
    return st ? st : elm_model_add_tensor(m, t->name, ELM_TYPE_F32, elm_spec_dims(t), ne, data,
                                          (size_t)n * sizeof *data, err);
}

/* Llama's tiny model has Llama 3.1's RoPE scaling (rope_freqs); Gemma 4's, the partial RoPE of
 * its global layers, a quarter of their head as in its real models. */
static bool llama31(const elm_arch *a) { return strcmp(a->name, "llama") == 0; }
enum { TINY_PARTIAL_DIV = 4 };

/* LongRoPE's factors, as the frequency divisors of Phi-3.5/4-mini grow: short ones
 * 1 + 0.2·|N(0, 1)|, long ones 1.5 + 6.5·i/(n - 1) + 0.2·|N(0, 1)| (up to about the extension, 8),
 * so that every long factor differs from its short one. */
static elm_status add_factors(elm_model *m, rng *r, const elm_tensor_spec *t, bool is_long,
                              elm_error *err) {
    const int64_t n = t->cols;
    float *f = malloc((size_t)n * sizeof *f);
    if (!f) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int64_t i = 0; i < n; i++)
        f[i] = (float)((is_long ? 1.5 + 6.5 * (double)i / (double)(n > 1 ? n - 1 : 1) : 1.0) +
                       0.2 * fabs(normal(r)));
    elm_status st = elm_model_own_buffer(m, f, err);
    return st ? st : elm_model_add_tensor(m, t->name, ELM_TYPE_F32, 1, &n, f,
                                          (size_t)n * sizeof *f, err);
}

/* Matrices and biases N(0, std²), norm weights (and output scales) 1 + N(0, 0.1²), decay rates
 * -exp(N(-1, 0.5²)), rope_freqs from the scaling, LongRoPE's factors drawn (add_factors). */
static elm_status add_tensors(elm_model *m, const elm_arch *a, rng *r, double std, bool longrope,
                              elm_error *err) {
    int32_t n;
    const elm_rope_tensors rope = llama31(a) || a->swa_listed ? ELM_ROPE_TENSORS_FREQS
                                  : longrope                  ? ELM_ROPE_TENSORS_LONGROPE
                                                              : ELM_ROPE_TENSORS_NONE;
    elm_tensor_spec *specs = elm_arch_layout(a, &m->hp, (elm_layout_extras){.rope = rope}, &n);
    if (!specs) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    elm_status st = ELM_OK;
    for (int32_t i = 0; i < n && !st; i++) {
        switch (specs[i].kind) {
        case ELM_KIND_MATRIX:
        case ELM_KIND_BIAS:
        case ELM_KIND_CONV: st = add(m, r, &specs[i], 0, std, err); break;
        case ELM_KIND_NORM: st = add(m, r, &specs[i], 1.0, 0.1, err); break;
        case ELM_KIND_DECAY: st = add(m, r, &specs[i], -1.0, 0.5, err); break;
        case ELM_KIND_ROPE:
            st = a->swa_listed ? elm_hf_add_partial_freqs(m, 1.0f / TINY_PARTIAL_DIV, err)
                               : elm_hf_add_llama3_freqs(m, llama31_scaling, err);
            break;
        case ELM_KIND_ROPE_LONG: st = add_factors(m, r, &specs[i], true, err); break;
        case ELM_KIND_ROPE_SHORT: st = add_factors(m, r, &specs[i], false, err); break;
        }
    }
    free(specs);
    return st;
}

/* Gemma 4 E2B's form at a tiny size: 8 layers, windowed but for 1, 4 and 7, with heads of 32
 * and the global layers' 64 (RoPE base 1e4 and 1e6, the global layers' over a quarter of the
 * head), the last 3 layers reading the KV of layer 3 (windowed) and 4 (global), their FFN
 * doubled, per-layer embeddings of 8, a logit softcap of 30. */
static void tiny_gemma4(elm_hparams *hp) {
    static const uint8_t swa[8] = {1, 0, 1, 1, 0, 1, 1, 0};
    hp->n_layers = 8;
    hp->swa_listed = true;
    memcpy(hp->swa_layer, swa, sizeof swa);
    hp->n_swa = TINY_WINDOW;
    hp->head_dim_swa = hp->rope_dim_swa = hp->head_dim;
    hp->head_dim = hp->rope_dim = 2 * hp->head_dim;
    hp->rope_theta = 1000000.0f;
    hp->rope_theta_swa = 10000.0f;
    hp->n_kv_shared = 3;
    elm_arch_double_wide_mlp(hp);
    hp->n_embd_per_layer = 8;
    hp->logit_softcap = 30.0f;
}

elm_status elm_synth_tiny_model(const elm_synth_tiny *o, elm_model **out, float llama3[4],
                                elm_error *err) {
    *out = NULL;
    const elm_arch *a = elm_arch_find(o->arch);
    if (!a)
        return elm_errorf(err, ELM_ERR_ARG, "synth: unknown architecture '%s' (%s)", o->arch,
                          elm_arch_names());
    if (o->longrope && strcmp(a->name, "phi3") != 0)
        return elm_errorf(err, ELM_ERR_ARG, "synth: LongRoPE is Phi-3's (--arch phi3), not %s's",
                          a->name);
    char path[64];
    snprintf(path, sizeof path, "tiny-%s%s", a->name, o->longrope ? "-longrope" : "");
    elm_model *m = elm_model_new(path, "synth", err);
    if (!m) return ELM_ERR_NOMEM;
    elm_status st = elm_vocab_load(o->vocab_path, &m->vocab, err);
    if (st) {
        elm_model_free(m);
        return st;
    }
    snprintf(m->name, sizeof m->name, "%s", path);
    elm_hparams *hp = &m->hp;
    snprintf(hp->arch, sizeof hp->arch, "%s", a->name);
    hp->n_vocab = m->vocab.n_tokens;
    if (o->width < 0 || o->width % TINY_DIM || o->width > 16 * TINY_DIM) {
        elm_model_free(m);
        return elm_errorf(err, ELM_ERR_ARG, "synth: width %d is not a multiple of %d up to %d",
                          o->width, TINY_DIM, 16 * TINY_DIM);
    }
    const int32_t scale = o->width ? o->width / TINY_DIM : 1; /* of every width below */
    hp->dim = TINY_DIM * scale;
    /* down to a NoPE layer, to a global layer after the windowed ones */
    hp->n_layers = a->nope_every ? a->nope_every : a->swa_period ? a->swa_period : TINY_LAYERS;
    hp->n_heads = TINY_HEADS;
    hp->n_kv_heads = TINY_KV_HEADS;
    hp->head_dim = (a->embd_scale ? 2 * TINY_HEAD : TINY_HEAD) * scale;
    hp->ffn_dim = TINY_FFN * scale;
    hp->n_ctx_train = 4096;
    hp->rms_eps = a->embd_scale ? 1e-6f : 1e-5f;
    hp->rope_theta = a->hf_permute_qk ? 500000.0f : 10000.0f;
    hp->rope_dim = hp->head_dim;
    hp->tied_output = !a->fused_qkv; /* Phi-3 keeps its output matrix, the others tie it */
    if (a->recurrent == ELM_LAYER_SHORTCONV) { /* LFM2: conv, attention, conv (its 1.2B's taps) */
        hp->n_layers = 3;
        hp->recurrent[0] = hp->recurrent[2] = 1;
        hp->conv_l = 3;
        hp->rope_theta = 1000000.0f;
    }
    if (a->recurrent == ELM_LAYER_MAMBA2) { /* Granite 4.0-H: Mamba-2, attention, Mamba-2 */
        hp->n_layers = 3;
        hp->recurrent[0] = hp->recurrent[2] = 1;
        hp->conv_l = 4;               /* its kernel, and its inner size: 2·dim */
        hp->ssm_inner = 2 * hp->dim;
        hp->ssm_heads = 8;            /* 8 heads in 2 groups of B and C */
        hp->ssm_groups = 2;
        hp->ssm_state = 64;
        hp->no_rope = true;           /* as its converter writes the hybrids */
        hp->embd_scale = 2.0f;        /* multipliers that leave the layers their say (the
                                       * 3B's, 12 and 0.22, drown them under the embedding) */
        hp->residual_scale = 0.75f;
        hp->attn_scale = 0.125f;
        hp->logit_scale = 2.0f;
    }
    if (a->recurrent == ELM_LAYER_DELTANET) {
        /* Qwen3.5: DeltaNet and attention layers in turn, 4 value heads on 2 key heads (so their
         * orders in HF and GGUF differ), a quarter of each 32-wide attention head rotated, its
         * M-RoPE sections as Qwen3.5's 11, 11, 10 of 32 pairs: every pair in one of the three
         * streams of a text position (the fourth, at 0 in llama.cpp, would leave pairs still) */
        hp->n_layers = 4;
        for (int l = 0; l < hp->n_layers; l++) hp->recurrent[l] = l % 2 == 0;
        hp->head_dim = 2 * TINY_HEAD * scale;
        hp->rope_dim = hp->head_dim / 4;
        const int32_t pairs = hp->rope_dim / 2;
        hp->rope_sections[0] = (pairs + 2) / 3;
        hp->rope_sections[1] = (pairs + 1) / 3;
        hp->rope_sections[2] = pairs / 3;
        hp->conv_l = 4;
        hp->ssm_state = TINY_HEAD * scale;
        hp->ssm_groups = 2;
        hp->ssm_heads = 4;
        hp->ssm_inner = hp->ssm_heads * hp->ssm_state;
        hp->rms_eps = 1e-6f;
        hp->rope_theta = 10000000.0f;
    }
    if (a->swa_period) hp->n_swa = TINY_WINDOW;
    if (a->sinks) { /* gpt-oss-20b's RoPE (base 150000, YaRN ×32 from 4096: over a tiny head, the
                     * ramp falls from pair 2 to 5) and its own output matrix */
        hp->rope_theta = 150000.0f;
        hp->rope_yarn = true;
        hp->rope_freq_scale = 1.0f / 32;
        hp->n_ctx_orig = 4096;
        hp->n_ctx_train = 131072;
        hp->yarn_beta_fast = 32.0f;
        hp->yarn_beta_slow = 1.0f;
        hp->tied_output = false;
    }
    if (a->swa_period && a->swa_theta) { /* Gemma 3 4B's RoPE (base 1e6, linear ×8 on global
                                          * layers only) */
        hp->rope_theta = 1000000.0f;
        hp->rope_freq_scale = 0.125f;
    }
    if (a->non_causal) { /* EmbeddingGemma's: no scaling, mean pooling, Dense layers (2·dim) */
        hp->rope_freq_scale = 0;
        hp->pooling = 1;
        hp->dense_dim = TINY_DENSE * hp->dim;
    }
    if (o->pooling < 0 || o->pooling > 3) {
        elm_model_free(m);
        return elm_errorf(err, ELM_ERR_ARG, "synth: pooling %d out of range 1..3", o->pooling);
    }
    if (o->pooling) hp->pooling = o->pooling;
    /* last-token pooling reads the EOS the tokenizer appends (Qwen3-Embedding's file says so) */
    if (hp->pooling == 3) m->vocab.add_eos = true;
    if (o->longrope) { /* Phi-4-mini's RoPE: 3/4 of each head, its context extended 8 times */
        hp->rope_dim = hp->head_dim * 3 / 4;
        hp->n_ctx_orig = TINY_LONGROPE_ORIG;
        hp->rope_attn_factor = elm_arch_longrope_attn_factor(hp->n_ctx_train, hp->n_ctx_orig);
    }
    if (a->swa_listed) tiny_gemma4(hp);
    if (o->experts && !a->moe_optional) {
        elm_model_free(m);
        return elm_errorf(err, ELM_ERR_ARG, "synth: --experts is for a family whose experts are "
                          "optional (granitehybrid), not %s", a->name);
    }
    if (a->moe && (!a->moe_optional || o->experts)) {
        /* 8 experts of 32 (a quarter of the dense FFN), 2 per token */
        hp->n_expert = 8;
        hp->n_expert_used = 2;
        hp->expert_ffn_dim = TINY_FFN / 4 * scale;
        /* a shared expert: an expert's size (Qwen3.5-35B-A3B's), twice it (Granite-4.0-H-Tiny's) */
        if (a->shexp_gated) hp->shexp_ffn_dim = hp->expert_ffn_dim;
        if (a->moe_optional) hp->shexp_ffn_dim = 2 * hp->expert_ffn_dim;
        /* gpt-oss, Granite: one intermediate_size, the experts' (their converters write it) */
        if (a->moe_biases || a->moe_optional) hp->ffn_dim = hp->expert_ffn_dim;
        /* LFM2-MoE: its first layer dense (the real models' first 2), experts in both kinds */
        if (a->recurrent == ELM_LAYER_SHORTCONV) hp->n_dense_lead = 1;
    }
    rng r = {o->seed};
    st = add_tensors(m, a, &r, o->std > 0 ? o->std : 0.3, o->longrope, err);
    if (!st && llama31(a) && llama3) memcpy(llama3, llama31_scaling, sizeof llama31_scaling);
    if (!st) st = elm_model_bind(m, err);
    if (st) {
        elm_model_free(m);
        return st;
    }
    *out = m;
    return ELM_OK;
}

const char *elm_synth_tiny_vocab(const char *arch) {
    const elm_arch *a = elm_arch_find(arch);
    return a && a->tiny_vocab ? a->tiny_vocab : "llama-spm";
}

elm_status elm_synth_tiny_write(const elm_synth_tiny *o, const char *gguf_path, const char *hf_dir,
                                int64_t *n_params, int32_t *n_vocab, elm_error *err) {
    elm_model *m = NULL;
    float llama3[4];
    elm_status st = elm_synth_tiny_model(o, &m, llama3, err);
    if (!st && hf_dir) st = elm_hf_writable(m, llama3, hf_dir, err); /* before any file */
    if (!st) st = elm_gguf_write_model(m, gguf_path, err);
    if (!st && hf_dir) st = elm_hf_write(m, llama3, hf_dir, err);
    if (!st && n_params) *n_params = elm_model_params(m);
    if (!st && n_vocab) *n_vocab = m->hp.n_vocab;
    elm_model_free(m);
    return st;
}
