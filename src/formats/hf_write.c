/* Hugging Face folder writer (see hf_write.h): config.json with the family's keys and
 * model.safetensors (docs/formats.md, "safetensors": 8-byte header length, JSON header padded with
 * spaces to a multiple of 8, then the tensors back to back; a stack of experts as one tensor per
 * expert); an embedding model's
 * sentence-transformers modules (modules.json, pooling, Dense layers) beside them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/hf.h"
#include "formats/hf_write.h"
#include "model/arch.h"

elm_status elm_hf_write_text(const char *path, const char *text, elm_error *err) {
    elm_out o;
    elm_status st = elm_out_open(&o, path, err);
    if (!st) st = elm_out_write(&o, text, strlen(text), err);
    if (st) {
        elm_out_abort(&o);
        return st;
    }
    return elm_out_commit(&o, err);
}

static elm_status join(char *out, size_t cap, const char *dir, const char *name, elm_error *err) {
    if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    return ELM_OK;
}

/* Writes a cJSON object (consumed) to dir/name. */
static elm_status write_json(const char *dir, const char *name, cJSON *root, elm_error *err) {
    char path[1100];
    elm_status st = join(path, sizeof path, dir, name, err);
    char *text = st || !root ? NULL : cJSON_Print(root);
    cJSON_Delete(root);
    if (!st && !text) st = elm_errorf(err, ELM_ERR_NOMEM, "%s/%s: out of memory", dir, name);
    if (!st) st = elm_hf_write_text(path, text, err);
    free(text);
    return st;
}

/* A float vector tensor as a JSON list of numbers (each float's shortest exact decimal). */
static cJSON *float_list(const elm_tensor *t) {
    cJSON *list = cJSON_CreateArray();
    float v[ELM_HF_MAX_FACTORS];
    const int64_t n = t->ne[0] < ELM_HF_MAX_FACTORS ? t->ne[0] : ELM_HF_MAX_FACTORS;
    elm_type_get(t->type)->to_float(t->data, v, n);
    for (int64_t i = 0; i < n; i++) cJSON_AddItemToArray(list, cJSON_CreateNumber(v[i]));
    return list;
}

/* LongRoPE as Phi-3.5-mini's config.json has it: rope_scaling {type, long_factor, short_factor}
 * (older transformers take no other key there; original_max_position_embeddings is at the top
 * level), attention_factor only when it is not what it would be computed as. */
static void add_longrope(cJSON *c, const elm_model *m) {
    const elm_hparams *hp = &m->hp;
    cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
    cJSON_AddStringToObject(rs, "type", "longrope");
    cJSON_AddItemToObject(rs, "long_factor", float_list(m->rope_long));
    cJSON_AddItemToObject(rs, "short_factor", float_list(m->rope_short));
    if (hp->rope_attn_factor != elm_arch_longrope_attn_factor(hp->n_ctx_train, hp->n_ctx_orig))
        cJSON_AddNumberToObject(rs, "attention_factor", hp->rope_attn_factor);
}

/* Gemma 4's keys (Gemma4TextConfig) beside the common ones: layer_types, the windowed layers'
 * head_dim and the global layers' global_head_dim, rope_parameters of both kinds, the shared KV
 * layers, the per-layer embeddings, the FFN doubled in the shared layers, the softcap.
 * ELM_ERR_UNSUPPORTED for what its config.json cannot say: per-layer KV heads, other per-layer
 * FFN sizes, a rope_freqs not of a partial RoPE. */
static elm_status gemma4_config(cJSON *c, const elm_model *m, const char *dir, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const int n_kv = hp->n_layers - hp->n_kv_shared;
    const int32_t ff = elm_layer_ffn_dim(hp, 0);
    bool double_wide = elm_layer_ffn_dim(hp, hp->n_layers - 1) != ff, other = false;
    for (int l = 0; l < hp->n_layers; l++)
        other |= hp->layer_kv_heads[l] != 0 ||
                 elm_layer_ffn_dim(hp, l) != (double_wide && l >= n_kv ? 2 * ff : ff);
    float partial = 1.0f;
    if (other || (m->rope_freqs && !elm_hf_partial_of(m, &partial)))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: per-layer KV heads or FFN sizes, or RoPE "
                          "frequency factors, that Gemma 4's config.json cannot say", dir);
    cJSON_ReplaceItemInObject(c, "intermediate_size", cJSON_CreateNumber(ff));
    cJSON_ReplaceItemInObject(
        c, "head_dim", cJSON_CreateNumber(hp->head_dim_swa ? hp->head_dim_swa : hp->head_dim));
    cJSON_AddNumberToObject(c, "global_head_dim", hp->head_dim);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "rope_theta");
    cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
    for (int l = 0; l < hp->n_layers; l++)
        cJSON_AddItemToArray(types, cJSON_CreateString(elm_layer_swa(hp, l) ? "sliding_attention"
                                                                           : "full_attention"));
    cJSON *rp = cJSON_AddObjectToObject(c, "rope_parameters");
    cJSON *full = cJSON_AddObjectToObject(rp, "full_attention");
    cJSON_AddStringToObject(full, "rope_type", "proportional");
    cJSON_AddNumberToObject(full, "partial_rotary_factor", partial);
    cJSON_AddNumberToObject(full, "rope_theta", hp->rope_theta);
    cJSON *local = cJSON_AddObjectToObject(rp, "sliding_attention");
    cJSON_AddStringToObject(local, "rope_type", "default");
    cJSON_AddNumberToObject(local, "rope_theta", hp->rope_theta_swa);
    cJSON_AddNumberToObject(c, "num_kv_shared_layers", hp->n_kv_shared);
    cJSON_AddNumberToObject(c, "hidden_size_per_layer_input", hp->n_embd_per_layer);
    cJSON_AddNumberToObject(c, "vocab_size_per_layer_input", hp->n_vocab);
    cJSON_AddBoolToObject(c, "use_double_wide_mlp", double_wide);
    cJSON_AddNumberToObject(c, "final_logit_softcapping", hp->logit_softcap);
    cJSON_AddBoolToObject(c, "attention_k_eq_v", false);
    cJSON_AddBoolToObject(c, "enable_moe_block", false);
    return ELM_OK;
}

static elm_status write_config(const elm_model *m, const elm_arch *a, const float *llama3,
                               const char *dir, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    cJSON *c = cJSON_CreateObject();
    cJSON *archs = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(a->hf[0].cls));
    cJSON_AddStringToObject(c, "model_type", a->hf[0].type);
    cJSON_AddNumberToObject(c, "hidden_size", hp->dim);
    cJSON_AddNumberToObject(c, "intermediate_size", hp->ffn_dim);
    cJSON_AddNumberToObject(c, "num_hidden_layers", hp->n_layers);
    cJSON_AddNumberToObject(c, "num_attention_heads", hp->n_heads);
    cJSON_AddNumberToObject(c, "num_key_value_heads", hp->n_kv_heads);
    cJSON_AddNumberToObject(c, "head_dim", hp->head_dim);
    if (hp->rope_dim != hp->head_dim)
        cJSON_AddNumberToObject(c, "partial_rotary_factor", (double)hp->rope_dim / hp->head_dim);
    cJSON_AddNumberToObject(c, "max_position_embeddings", hp->n_ctx_train);
    /* Phi-3's configs all have it (llama.cpp's converter requires it), LongRoPE needs it */
    if (m->rope_long || !strcmp(hp->arch, "phi3"))
        cJSON_AddNumberToObject(c, "original_max_position_embeddings", hp->n_ctx_orig);
    cJSON_AddNumberToObject(c, "rms_norm_eps", hp->rms_eps);
    cJSON_AddNumberToObject(c, "rope_theta", hp->rope_theta);
    cJSON_AddNumberToObject(c, "vocab_size", hp->n_vocab);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", hp->tied_output);
    cJSON_AddStringToObject(c, a->act == ELM_ACT_GELU_TANH ? "hidden_activation" : "hidden_act",
                            a->act == ELM_ACT_GELU_TANH ? "gelu_pytorch_tanh" : "silu");
    if (a->qkv_bias && !a->sinks) cJSON_AddBoolToObject(c, "use_sliding_window", false);
    if (hp->n_swa > 0) cJSON_AddNumberToObject(c, "sliding_window", hp->n_swa);
    if (a->non_causal) cJSON_AddBoolToObject(c, "use_bidirectional_attention", true);
    if (a->swa_period && !a->swa_theta) { /* gpt-oss: windowed and global in turn */
        cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
        for (int l = 0; l < hp->n_layers; l++)
            cJSON_AddItemToArray(types, cJSON_CreateString(elm_layer_swa(hp, l)
                                                               ? "sliding_attention"
                                                               : "full_attention"));
    }
    if (a->swa_period && a->swa_theta) { /* Gemma 3 */
        cJSON_AddNumberToObject(c, "sliding_window_pattern", hp->swa_period);
        cJSON_AddNumberToObject(c, "rope_local_base_freq", hp->rope_theta_swa);
        cJSON_AddNumberToObject(c, "query_pre_attn_scalar",
                                lround(1.0 / ((double)hp->attn_scale * hp->attn_scale)));
        if (hp->logit_softcap > 0)
            cJSON_AddNumberToObject(c, "final_logit_softcapping", hp->logit_softcap);
    }
    if (a->nope_every) {
        cJSON_AddNumberToObject(c, "no_rope_layer_interval", a->nope_every);
        cJSON *nope = cJSON_AddArrayToObject(c, "no_rope_layers");
        for (int l = 0; l < hp->n_layers; l++)
            cJSON_AddItemToArray(nope, cJSON_CreateNumber((l + 1) % a->nope_every != 0));
    }
    if (a->recurrent == ELM_LAYER_SHORTCONV) { /* Lfm2Config */
        cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
        for (int l = 0; l < hp->n_layers; l++)
            cJSON_AddItemToArray(types, cJSON_CreateString(hp->recurrent[l] ? "conv"
                                                                            : "full_attention"));
        cJSON_AddNumberToObject(c, "conv_L_cache", hp->conv_l);
        cJSON_AddBoolToObject(c, "conv_bias", false);
        cJSON_AddNumberToObject(c, "norm_eps", hp->rms_eps);
        if (!a->moe) { /* Lfm2MoeConfig has intermediate_size alone */
            cJSON_AddNumberToObject(c, "block_ff_dim", hp->ffn_dim);
            cJSON_AddBoolToObject(c, "block_auto_adjust_ff_dim", false);
            cJSON_AddNumberToObject(c, "block_multiple_of", 256);
            cJSON_AddNullToObject(c, "block_ffn_dim_multiplier");
        }
    }
    if (a->recurrent == ELM_LAYER_MAMBA2) { /* GraniteMoeHybridConfig */
        if (hp->ssm_inner % hp->dim) {
            cJSON_Delete(c);
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: inner size %d is no multiple of "
                              "dim %d (config.json says mamba_expand)", dir, hp->ssm_inner,
                              hp->dim);
        }
        cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
        for (int l = 0; l < hp->n_layers; l++)
            cJSON_AddItemToArray(types, cJSON_CreateString(hp->recurrent[l] ? "mamba"
                                                                            : "attention"));
        cJSON_AddNumberToObject(c, "mamba_d_conv", hp->conv_l);
        cJSON_AddNumberToObject(c, "mamba_expand", hp->ssm_inner / hp->dim);
        cJSON_AddNumberToObject(c, "mamba_d_state", hp->ssm_state);
        cJSON_AddNumberToObject(c, "mamba_n_heads", hp->ssm_heads);
        cJSON_AddNumberToObject(c, "mamba_d_head", hp->ssm_inner / hp->ssm_heads);
        cJSON_AddNumberToObject(c, "mamba_n_groups", hp->ssm_groups);
        cJSON_AddBoolToObject(c, "mamba_conv_bias", true);
        cJSON_AddBoolToObject(c, "mamba_proj_bias", false);
        /* the dense FFN, or beside experts (of intermediate_size) the shared expert */
        cJSON_AddNumberToObject(c, "shared_intermediate_size",
                                hp->n_expert > 0 ? hp->shexp_ffn_dim : hp->ffn_dim);
        cJSON_AddNumberToObject(c, "num_local_experts", hp->n_expert);
        cJSON_AddNumberToObject(c, "num_experts_per_tok", hp->n_expert_used);
        cJSON_AddBoolToObject(c, "attention_bias", false);
    }
    if (a->multipliers) {
        cJSON_AddNumberToObject(c, "embedding_multiplier", hp->embd_scale);
        cJSON_AddNumberToObject(c, "residual_multiplier", hp->residual_scale);
        cJSON_AddNumberToObject(c, "attention_multiplier", hp->attn_scale);
        cJSON_AddNumberToObject(c, "logits_scaling", hp->logit_scale);
    }
    if (a->rope_switch)
        cJSON_AddStringToObject(c, "position_embedding_type", hp->no_rope ? "nope" : "rope");
    if (a->recurrent == ELM_LAYER_DELTANET) { /* Qwen3_5TextConfig */
        cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
        for (int l = 0; l < hp->n_layers; l++)
            cJSON_AddItemToArray(types, cJSON_CreateString(hp->recurrent[l] ? "linear_attention"
                                                                            : "full_attention"));
        cJSON_AddNumberToObject(c, "linear_conv_kernel_dim", hp->conv_l);
        cJSON_AddNumberToObject(c, "linear_key_head_dim", hp->ssm_state);
        cJSON_AddNumberToObject(c, "linear_value_head_dim", hp->ssm_state);
        cJSON_AddNumberToObject(c, "linear_num_key_heads", hp->ssm_groups);
        cJSON_AddNumberToObject(c, "linear_num_value_heads", hp->ssm_heads);
        cJSON_AddBoolToObject(c, "attn_output_gate", true);
        cJSON *rp = cJSON_AddObjectToObject(c, "rope_parameters");
        cJSON_AddStringToObject(rp, "rope_type", "default");
        cJSON_AddNumberToObject(rp, "rope_theta", hp->rope_theta);
        cJSON_AddNumberToObject(rp, "partial_rotary_factor", (double)hp->rope_dim / hp->head_dim);
        cJSON_AddBoolToObject(rp, "mrope_interleaved", true);
        cJSON *sections = cJSON_AddArrayToObject(rp, "mrope_section");
        for (int i = 0; i < 3; i++)
            cJSON_AddItemToArray(sections, cJSON_CreateNumber(hp->rope_sections[i]));
    }
    if (a->moe_biases) { /* GptOssConfig: experts of intermediate_size, biases everywhere */
        cJSON_AddNumberToObject(c, "num_local_experts", hp->n_expert);
        cJSON_AddNumberToObject(c, "num_experts_per_tok", hp->n_expert_used);
        cJSON_AddNumberToObject(c, "experts_per_token", hp->n_expert_used);
        cJSON_AddNumberToObject(c, "swiglu_limit", 7.0);
        cJSON_AddBoolToObject(c, "attention_bias", true);
    } else if (a->moe && !a->moe_optional) { /* the top experts' weights renormalised */
        cJSON_AddNumberToObject(c, "num_experts", hp->n_expert);
        cJSON_AddNumberToObject(c, "num_experts_per_tok", hp->n_expert_used);
        cJSON_AddNumberToObject(c, "moe_intermediate_size", hp->expert_ffn_dim);
        cJSON_AddBoolToObject(c, "norm_topk_prob", true);
    }
    if (a->shexp_gated) { /* Qwen3_5MoeTextConfig: a shared expert's size, no intermediate_size */
        cJSON_AddNumberToObject(c, "shared_expert_intermediate_size", hp->shexp_ffn_dim);
        cJSON_DeleteItemFromObjectCaseSensitive(c, "intermediate_size");
    }
    /* Lfm2MoeConfig: dense layers first */
    if (a->moe && a->recurrent == ELM_LAYER_SHORTCONV) {
        cJSON_AddNumberToObject(c, "num_dense_layers", hp->n_dense_lead);
        cJSON_AddBoolToObject(c, "use_expert_bias", a->moe_bias);
        cJSON_AddNumberToObject(c, "routed_scaling_factor", 1.0);
    } else if (a->moe && a->recurrent == ELM_LAYER_ATTENTION && !a->moe_biases) {
        /* Qwen3MoeConfig: every layer sparse */
        cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
        cJSON_AddArrayToObject(c, "mlp_only_layers");
        cJSON_AddBoolToObject(c, "attention_bias", false);
    }
    elm_status st = a->swa_listed ? gemma4_config(c, m, dir, err) : ELM_OK;
    if (st) {
        cJSON_Delete(c);
        return st;
    }
    if (m->vocab.bos_id >= 0) cJSON_AddNumberToObject(c, "bos_token_id", m->vocab.bos_id);
    if (m->vocab.eos_id >= 0) cJSON_AddNumberToObject(c, "eos_token_id", m->vocab.eos_id);
    cJSON_AddStringToObject(c, "torch_dtype", "float32");
    if (m->rope_freqs && !a->swa_listed) {
        cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        cJSON_AddNumberToObject(rs, "factor", llama3[0]);
        cJSON_AddNumberToObject(rs, "low_freq_factor", llama3[1]);
        cJSON_AddNumberToObject(rs, "high_freq_factor", llama3[2]);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", llama3[3]);
    } else if (m->rope_long) {
        add_longrope(c, m);
    } else if (hp->rope_yarn) {
        cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "yarn");
        cJSON_AddNumberToObject(rs, "factor", 1.0 / hp->rope_freq_scale);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", hp->n_ctx_orig);
        cJSON_AddNumberToObject(rs, "beta_fast", hp->yarn_beta_fast);
        cJSON_AddNumberToObject(rs, "beta_slow", hp->yarn_beta_slow);
        cJSON_AddBoolToObject(rs, "truncate", false);
    } else if (hp->rope_freq_scale != 1.0f) {
        cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "linear");
        cJSON_AddNumberToObject(rs, "factor", 1.0 / hp->rope_freq_scale);
    }
    return write_json(dir, "config.json", c, err);
}

/* How a tensor's values change on the way to HF (written as F32): Gemma's and Qwen3.5's norms
 * w - 1, ssm_a into A_log (Mamba-2, Qwen3.5). */
typedef enum { AS_IS, MINUS_ONE, A_LOG } value_form;

/* What goes into model.safetensors for tensor t: its HF name, and whether its rows are permuted
 * (heads), its value heads reordered (vheads), its values changed (form) or followed by another
 * tensor's rows (Granite's [gate; up]). */
typedef struct st_item {
    const elm_tensor *t;
    const elm_tensor *rows_after; /* written right after t's rows, one tensor with them */
    char name[ELM_NAME_MAX + 32];
    bool expert;       /* one expert of a stack (elm_hf_expert_name): matrix `index` of t */
    int fused;         /* gpt-oss's experts of a layer in one tensor: ELM_HF_FUSED_* + 1 (t the
                        * gate's or down's stack, pair the up's), 0: none */
    const elm_tensor *pair;
    int64_t index;
    int heads;         /* > 0: q/k rows back to rotate-half */
    bool tiled;        /* a Gated DeltaNet's value heads back to grouped order (vheads) */
    elm_hf_vheads vheads;
    value_form form;
    size_t nbytes;     /* as written */
} st_item;

static int64_t n_values(const elm_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static const char *dtype_name(elm_type t, value_form form) {
    if (form != AS_IS || t == ELM_TYPE_F32) return "F32";
    return t == ELM_TYPE_F16 ? "F16" : t == ELM_TYPE_BF16 ? "BF16" : NULL;
}

/* A_log for ssm_a = a < 0: the float whose -expf is a where one is near logf(-a), so that loading
 * gives a back (hf.c takes -expf). */
static float a_log(float a) {
    const float first = logf(-a);
    for (int k = 0; k <= 4; k++)
        for (int sign = -1; sign <= 1; sign += 2) {
            float x = first;
            for (int i = 0; i < k; i++) x = nextafterf(x, sign * INFINITY);
            if (-expf(x) == a) return x;
        }
    return first;
}

/* gpt-oss's stack t as its checkpoints fuse it (hf_experts.c), into it: the gate's and its
 * bias with the up's (it->pair), down's transposed; true for those and for the up stacks
 * (it->fused 0: written with the gate's), false for another tensor. */
static bool fused_item(const elm_model *m, const elm_tensor *t, st_item *it) {
    static const char *const gguf[ELM_HF_FUSED_KINDS] = {"ffn_gate_exps.weight",
                                                         "ffn_gate_exps.bias",
                                                         "ffn_down_exps.weight"};
    long l;
    int used = 0;
    char kind[24], up[ELM_NAME_MAX];
    if (sscanf(t->name, "blk.%ld.%23s%n", &l, kind, &used) != 2 || t->name[used] != '\0')
        return false;
    if (!strcmp(kind, "ffn_up_exps.weight") || !strcmp(kind, "ffn_up_exps.bias")) return true;
    for (int k = 0; k < ELM_HF_FUSED_KINDS; k++) {
        if (strcmp(kind, gguf[k]) != 0) continue;
        snprintf(up, sizeof up, "blk.%ld.ffn_up_exps.%s", l,
                 k == ELM_HF_FUSED_GATE_UP_BIAS ? "bias" : "weight");
        *it = (st_item){.t = t, .fused = k + 1, .pair = elm_model_find(m, up),
                        .nbytes = k == ELM_HF_FUSED_DOWN ? t->nbytes : 2 * t->nbytes};
        snprintf(it->name, sizeof it->name, "model.layers.%ld.mlp.experts.%s", l,
                 elm_hf_fused_names[k]);
        return it->fused == ELM_HF_FUSED_DOWN + 1 || it->pair;
    }
    return false;
}

static elm_status plan_items(const elm_model *m, const elm_arch *a, const char *path,
                             st_item *items, int *n_items, elm_error *err) {
    *n_items = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        st_item *it = &items[*n_items];
        memset(it, 0, sizeof *it);
        /* an up written after its gate's rows (Granite's shared_mlp.input_linear, packed
         * experts) */
        char other[ELM_NAME_MAX];
        const elm_hf_joined joined = elm_hf_joined_of(a, t->name, other, sizeof other);
        if (joined == ELM_HF_JOINED_UP || t == m->dense_2 || t == m->dense_3)
            continue; /* Dense: write_modules */
        if (a->moe_biases && fused_item(m, t, it)) {
            if (it->fused && !dtype_name(t->type, AS_IS))
                return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; Hugging "
                                  "Face checkpoints hold f32, f16 or bf16", path, t->name,
                                  elm_type_get(t->type)->name);
            if (it->fused) (*n_items)++; /* the up stacks go with the gate's */
            continue;
        }
        if (elm_hf_expert_name(m->hp.arch, t->name, 0, it->name, sizeof it->name)) {
            if (!dtype_name(t->type, AS_IS))
                return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; Hugging "
                                  "Face checkpoints hold f32, f16 or bf16", path, t->name,
                                  elm_type_get(t->type)->name);
            for (int64_t e = 0; e < t->ne[2]; e++) { /* one tensor per expert */
                it = &items[(*n_items)++];
                *it = (st_item){.t = t, .expert = true, .index = e, .nbytes = t->nbytes /
                                                                             (size_t)t->ne[2]};
                elm_hf_expert_name(m->hp.arch, t->name, e, it->name, sizeof it->name);
            }
            continue;
        }
        if (!elm_hf_name_of(m->hp.arch, t->name, it->name, sizeof it->name)) {
            if (t == m->rope_freqs || t == m->rope_long || t == m->rope_short)
                continue; /* config.json */
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' has no place in the %s "
                              "Hugging Face layout", path, t->name, a->hf[0].type);
        }
        if (a->hf_bare && !strncmp(it->name, "model.", 6)) /* Gemma3TextModel's names */
            memmove(it->name, it->name + 6, strlen(it->name + 6) + 1);
        it->t = t;
        it->form = elm_hf_norm_plus_one(a, t->name) ? MINUS_ONE
                   : elm_hf_decay(t->name)          ? A_LOG
                                                    : AS_IS;
        it->tiled = elm_hf_value_heads(&m->hp, t->name, &it->vheads);
        if (joined == ELM_HF_JOINED_GATE) {
            it->rows_after = elm_model_find(m, other);
            if (!it->rows_after || it->rows_after->type != t->type ||
                it->rows_after->ne[0] != t->ne[0] || it->rows_after->ne[2] != t->ne[2])
                return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' has no '%s' of its "
                                  "type and shape to make '%s' with", path, t->name, other,
                                  it->name);
        }
        if (a->hf_permute_qk && strstr(t->name, ".attn_q.weight")) it->heads = m->hp.n_heads;
        if (a->hf_permute_qk && strstr(t->name, ".attn_k.weight")) it->heads = m->hp.n_kv_heads;
        if (!dtype_name(t->type, it->form))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; Hugging Face "
                              "checkpoints hold f32, f16 or bf16", path, t->name,
                              elm_type_get(t->type)->name);
        it->nbytes = it->form != AS_IS ? (size_t)n_values(t) * 4
                                       : t->nbytes + (it->rows_after ? it->rows_after->nbytes : 0);
        (*n_items)++;
    }
    return ELM_OK;
}

/* The PyTorch shape of item it into shape (rows first), its dimensions returned: t's shape
 * reversed, with the rows after it ([gate; up]: each matrix's rows, then its up's), reshaped as
 * elm_hf_shape_of says. */
static int hf_shape(const elm_arch *a, const st_item *it, int64_t shape[ELM_MAX_DIMS + 1]) {
    const elm_tensor *t = it->t;
    const elm_hf_shape kind = elm_hf_shape_of(a, t->name);
    if (it->expert) {
        shape[0] = t->ne[1];
        shape[1] = t->ne[0];
        return 2;
    }
    if (it->fused == ELM_HF_FUSED_GATE_UP_BIAS + 1) { /* [E, 2·ff] */
        shape[0] = t->ne[1];
        shape[1] = 2 * t->ne[0];
        return 2;
    }
    if (it->fused) { /* [E, dim, 2·ff] and [E, ff, dim] */
        const bool down = it->fused == ELM_HF_FUSED_DOWN + 1;
        shape[0] = t->ne[2];
        shape[1] = t->ne[0];
        shape[2] = down ? t->ne[1] : 2 * t->ne[1];
        return 3;
    }
    if (kind == ELM_HF_SHAPE_FLAT) {
        shape[0] = n_values(t);
        return 1;
    }
    if (kind == ELM_HF_SHAPE_ROW) {
        shape[0] = 1;
        shape[1] = n_values(t);
        return 2;
    }
    int n = 0;
    for (int d = t->n_dims - 1; d >= 0; d--) {
        shape[n++] = t->ne[d] + (d == 1 && it->rows_after ? it->rows_after->ne[1] : 0);
        if (d == 1 && kind == ELM_HF_SHAPE_CONV) shape[n++] = 1;
    }
    return n;
}

/* The safetensors header: {name: {dtype, shape (rows first), data_offsets}}, space-padded. */
static char *header_json(const elm_arch *a, const st_item *items, int n, size_t *len) {
    cJSON *h = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const elm_tensor *t = items[i].t;
        cJSON *e = cJSON_AddObjectToObject(h, items[i].name);
        cJSON_AddStringToObject(e, "dtype", dtype_name(t->type, items[i].form));
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        int64_t hf[ELM_MAX_DIMS + 1];
        const int n_hf = hf_shape(a, &items[i], hf);
        for (int d = 0; d < n_hf; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)hf[d]));
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += items[i].nbytes;
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    }
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    if (!text) return NULL;
    size_t n_text = strlen(text), padded = (n_text + 7) / 8 * 8;
    char *out = realloc(text, padded + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    memset(out + n_text, ' ', padded - n_text);
    out[padded] = '\0';
    *len = padded;
    return out;
}

/* Tensor bytes as HF stores them, into buf or buf2 (room for it->nbytes each). */
static const void *hf_bytes(const elm_model *m, const st_item *it, void *buf, void *buf2) {
    const elm_tensor *t = it->t;
    if (it->expert) return (const char *)t->data + (size_t)it->index * it->nbytes;
    if (it->fused) {
        const size_t elem = elm_type_get(t->type)->block_bytes;
        const int64_t n = t->n_dims == 3 ? t->ne[2] : t->ne[1];
        if (it->fused == ELM_HF_FUSED_DOWN + 1)
            elm_hf_transpose_experts(buf, t->data, n, t->ne[1], t->ne[0], elem);
        else
            elm_hf_gate_up(buf, t->data, it->pair->data, n, t->n_dims == 3 ? t->ne[0] : 1,
                           t->n_dims == 3 ? t->ne[1] : t->ne[0], elem, true);
        return buf;
    }
    if (it->heads > 0) {
        elm_hf_permute_rows(buf, t->data, it->heads, m->hp.head_dim, t->nbytes / (size_t)t->ne[1],
                            false);
        return buf;
    }
    if (it->rows_after) { /* per matrix (of a stack): its rows, then the up's */
        const int64_t n = t->ne[2];
        const size_t g = t->nbytes / (size_t)n, u = it->rows_after->nbytes / (size_t)n;
        for (int64_t e = 0; e < n; e++) {
            memcpy((char *)buf + (size_t)e * (g + u), (const char *)t->data + (size_t)e * g, g);
            memcpy((char *)buf + (size_t)e * (g + u) + g,
                   (const char *)it->rows_after->data + (size_t)e * u, u);
        }
        return buf;
    }
    const void *data = t->data;
    if (it->form != AS_IS) {
        const int64_t n = n_values(t);
        float *w = buf;
        elm_type_get(t->type)->to_float(t->data, w, n);
        for (int64_t i = 0; i < n; i++) w[i] = it->form == A_LOG ? a_log(w[i]) : w[i] - 1;
        data = buf;
    }
    if (!it->tiled) return data;
    const size_t elem = it->form != AS_IS ? 4 : elm_type_get(t->type)->block_bytes;
    const bool vector = t->n_dims == 1;
    elm_hf_tile_heads(buf2, data, &m->hp, &it->vheads, vector ? t->ne[0] : t->ne[1],
                      vector ? elem : (size_t)t->ne[0] * elem, elem, false);
    return buf2;
}

/* The n items (st: a planning error, else ELM_OK) as the safetensors file path. */
static elm_status write_items(const elm_model *m, const elm_arch *a, const char *path,
                              const st_item *items, int n, elm_status st, elm_error *err) {
    size_t hlen = 0, biggest = 1;
    char *header = st ? NULL : header_json(a, items, n, &hlen);
    for (int i = 0; i < n; i++) biggest = items[i].nbytes > biggest ? items[i].nbytes : biggest;
    void *buf = header ? malloc(2 * biggest) : NULL;
    if (!st && !buf) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    elm_out o;
    if (!st) st = elm_out_open(&o, path, err);
    if (!st) {
        uint64_t hlen64 = hlen;
        st = elm_out_write(&o, &hlen64, 8, err);
        if (!st) st = elm_out_write(&o, header, hlen, err);
        for (int i = 0; i < n && !st; i++)
            st = elm_out_write(&o, hf_bytes(m, &items[i], buf, (char *)buf + biggest),
                               items[i].nbytes, err);
        st = st ? (elm_out_abort(&o), st) : elm_out_commit(&o, err);
    }
    free(buf);
    free(header);
    return st;
}

static elm_status write_safetensors(const elm_model *m, const elm_arch *a, const char *path,
                                    elm_error *err) {
    size_t n_items = (size_t)m->n_tensors + 1;
    char name[ELM_NAME_MAX + 32];
    for (int32_t i = 0; i < m->n_tensors; i++) /* a stack of experts: one item each */
        if (elm_hf_expert_name(m->hp.arch, m->tensors[i].name, 0, name, sizeof name))
            n_items += (size_t)m->tensors[i].ne[2];
    st_item *items = calloc(n_items, sizeof *items);
    if (!items) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    int n = 0;
    elm_status st = plan_items(m, a, path, items, &n, err);
    st = write_items(m, a, path, items, n, st, err);
    free(items);
    return st;
}

/* dir/sub, made if need be, into out. */
static elm_status subdir(const char *dir, const char *sub, char *out, size_t cap, elm_error *err) {
    elm_status st = join(out, cap, dir, sub, err);
    if (!st && mkdir(out, 0777) != 0 && errno != EEXIST)
        st = elm_errorf(err, ELM_ERR_IO, "%s: %s", out, strerror(errno));
    return st;
}

/* A Dense module (sentence-transformers' models.Dense, identity activation, no bias): its
 * config.json and model.safetensors with linear.weight [out, in]. */
static elm_status write_dense(const elm_model *m, const elm_arch *a, const elm_tensor *t,
                              const char *dir, const char *sub, elm_error *err) {
    char path[1100], file[1200];
    elm_status st = subdir(dir, sub, path, sizeof path, err);
    if (st) return st;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "in_features", (double)t->ne[0]);
    cJSON_AddNumberToObject(c, "out_features", (double)t->ne[1]);
    cJSON_AddBoolToObject(c, "bias", false);
    cJSON_AddStringToObject(c, "activation_function", "torch.nn.modules.linear.Identity");
    if ((st = write_json(path, "config.json", c, err))) return st;
    st_item it = {.t = t, .name = "linear.weight", .nbytes = t->nbytes};
    if (!dtype_name(t->type, AS_IS))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; Hugging Face "
                          "checkpoints hold f32, f16 or bf16", dir, t->name,
                          elm_type_get(t->type)->name);
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    return write_items(m, a, file, &it, 1, ELM_OK, err);
}

/* An embedding model's sentence-transformers modules (what hf.c's read_modules reads): the
 * transformer, its pooling (1_Pooling/config.json), its Dense layers (2_Dense, 3_Dense) and the
 * normalization, in modules.json; nothing for a model without pooling or Dense layers. */
static elm_status write_modules(const elm_model *m, const elm_arch *a, const char *dir,
                                elm_error *err) {
    const elm_hparams *hp = &m->hp;
    if (hp->pooling <= 0 && !m->dense_2) return ELM_OK;
    if (hp->pooling > 3)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pooling type %d has no "
                          "sentence-transformers module", dir, hp->pooling);
    static const struct { const char *path, *type; } all[] = {
        {"", "sentence_transformers.models.Transformer"},
        {"1_Pooling", "sentence_transformers.models.Pooling"},
        {"2_Dense", "sentence_transformers.models.Dense"},
        {"3_Dense", "sentence_transformers.models.Dense"},
        {"4_Normalize", "sentence_transformers.models.Normalize"}};
    cJSON *mods = cJSON_CreateArray();
    for (int i = 0, k = 0; i < 5; i++) {
        if ((i == 2 || i == 3) && !m->dense_2) continue;
        cJSON *e = cJSON_CreateObject();
        char name[16];
        snprintf(name, sizeof name, "%d", k);
        cJSON_AddNumberToObject(e, "idx", k++);
        cJSON_AddStringToObject(e, "name", name);
        cJSON_AddStringToObject(e, "path", all[i].path);
        cJSON_AddStringToObject(e, "type", all[i].type);
        cJSON_AddItemToArray(mods, e);
    }
    elm_status st = write_json(dir, "modules.json", mods, err);
    char path[1100];
    if (!st) st = subdir(dir, "1_Pooling", path, sizeof path, err);
    if (!st) {
        const int pool = hp->pooling > 0 ? hp->pooling : 1; /* Dense without pooling: mean */
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "word_embedding_dimension", hp->dim);
        cJSON_AddBoolToObject(c, "pooling_mode_cls_token", pool == 2);
        cJSON_AddBoolToObject(c, "pooling_mode_mean_tokens", pool == 1);
        cJSON_AddBoolToObject(c, "pooling_mode_max_tokens", false);
        cJSON_AddBoolToObject(c, "pooling_mode_mean_sqrt_len_tokens", false);
        cJSON_AddBoolToObject(c, "pooling_mode_weightedmean_tokens", false);
        cJSON_AddBoolToObject(c, "pooling_mode_lasttoken", pool == 3);
        cJSON_AddBoolToObject(c, "include_prompt", true);
        st = write_json(path, "config.json", c, err);
    }
    if (!st && m->dense_2) st = write_dense(m, a, m->dense_2, dir, "2_Dense", err);
    if (!st && m->dense_3) st = write_dense(m, a, m->dense_3, dir, "3_Dense", err);
    if (!st) st = subdir(dir, "4_Normalize", path, sizeof path, err);
    return st;
}

elm_status elm_hf_writable(const elm_model *m, const float *llama3, const char *dir,
                           elm_error *err) {
    const elm_arch *a = elm_arch_find(m->hp.arch);
    if (!a)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: no Hugging Face layout for architecture "
                          "'%s'", dir, m->hp.arch);
    if (m->rope_freqs && !llama3 && !a->swa_listed)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: RoPE frequency factors without their "
                          "llama3 rope_scaling parameters", dir);
    if (!m->rope_long && m->hp.rope_attn_factor > 0 && m->hp.rope_attn_factor != 1.0f)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: a RoPE attention factor (%g) without "
                          "LongRoPE has no place in config.json", dir, m->hp.rope_attn_factor);
    return ELM_OK;
}

elm_status elm_hf_write(const elm_model *m, const float *llama3, const char *dir, elm_error *err) {
    elm_status st = elm_hf_writable(m, llama3, dir, err);
    if (st) return st;
    const elm_arch *a = elm_arch_find(m->hp.arch);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", dir, strerror(errno));
    char path[1100];
    st = write_config(m, a, llama3, dir, err);
    if (!st) st = join(path, sizeof path, dir, "model.safetensors", err);
    if (!st) st = write_safetensors(m, a, path, err);
    if (!st) st = write_modules(m, a, dir, err);
    if (!st) st = elm_hf_write_tokenizer(&m->vocab, dir, err);
    return st;
}
