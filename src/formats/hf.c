/* Hugging Face directory loader for the families of model/arch.h: config.json, model.safetensors
 * (or shards listed in model.safetensors.index.json) and tokenizer.json (docs/formats.md, "Hugging Face
 * Llama checkpoints").
 *
 * Tensors are renamed to GGUF names and mapped in place, except where the GGUF convention differs
 * and an owned copy is made, as llama.cpp's converter does: Llama's q_proj and k_proj rows are
 * un-permuted from rotate-half into the interleaved order its GGUF uses (the other families run
 * rotate-half RoPE as HF stores it), Gemma's and Qwen3.5's norm weights w become 1 + w (F32),
 * Mamba-2's and Qwen3.5's A_log becomes ssm_a = -exp(A_log) and Qwen3.5's Gated DeltaNet's value
 * heads go from grouped to tiled order. A multimodal checkpoint's language model (Gemma 3 4B,
 * Qwen3.5) is read from under its prefix. Phi-3's fused qkv_proj and gate_up_proj stay fused
 * (attn_qkv, ffn_up); Granite's shared_mlp.input_linear [gate; up] is split (ffn_gate, ffn_up, in
 * place; with experts the shared expert's ffn_gate_shexp, ffn_up_shexp), and its Mamba-2 A, D,
 * convolution and norm are F32 and reshaped as in GGUF; Qwen3-MoE's and LFM2-MoE's experts, one
 * tensor each, are copied into GGUF's three stacks per layer (none in LFM2-MoE's leading dense
 * layers); Qwen3.5-MoE's and Granite's, packed ([gate; up] per expert, and down), have their
 * gate and up halves copied apart, down mapped as it is. Llama 3.1's
 * rope_scaling becomes the rope_freqs tensor, LongRoPE's the rope_factors_long/short tensors, and
 * Gemma 4's "proportional" RoPE of its global layers rope_freqs. Dtypes are kept (F32, F16, BF16)
 * but for biases and those. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/hf.h"
#include "formats/json_file.h"
#include "formats/loaders.h"
#include "formats/safetensors.h"
#include "model/arch.h"

/* Which families have a tensor (see needed), and in which layers (on: of a hybrid's kinds, of
 * the layers with a cache of their own, when the model has per-layer embeddings, never
 * required). */
enum { ALL, SPLIT_QKV, FUSED_QKV, QKV_BIAS, QK_NORM, SPLIT_FFN, FUSED_FFN, MOE, MOE_BIAS,
       MOE_FUSED, MOE_PACKED, SHEXP_GATED, SINKS, PRE_NORMS, POST_NORMS, DELTANET, PLE,
       LAYER_SCALE };
enum { ANY_LAYER, ATTN_LAYER, REC_LAYER, KV_LAYER, PLE_LAYER, DENSE_LAYER, MOE_LAYER, OPTIONAL };

/* HF names and their GGUF counterparts, by the family's naming (elm_arch.hf_names; ANY_NAMES:
 * every family's). */
enum { ANY_NAMES = -1 };
static const struct { const char *hf, *gguf; int when, names; } global_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight", ALL, ANY_NAMES},
    {"model.norm.weight", "output_norm.weight", ALL, ELM_HF_NAMES_LLAMA},
    {"model.embedding_norm.weight", "token_embd_norm.weight", ALL, ELM_HF_NAMES_LFM2},
    {"model.norm.weight", "output_norm.weight", ALL, ELM_HF_NAMES_GRANITE},
    {"lm_head.weight", "output.weight", ALL, ANY_NAMES},
    /* Gemma 4's per-layer embeddings */
    {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight", PLE, ANY_NAMES},
    {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight", PLE, ANY_NAMES},
    {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight", PLE, ANY_NAMES}};

static const struct { const char *hf, *gguf; int when, names, on; } layer_names[] = {
    {"input_layernorm.weight", "attn_norm.weight", ALL, ELM_HF_NAMES_LLAMA, ANY_LAYER},
    {"self_attn.q_proj.weight", "attn_q.weight", SPLIT_QKV, ANY_NAMES, ATTN_LAYER},
    {"self_attn.k_proj.weight", "attn_k.weight", SPLIT_QKV, ANY_NAMES, KV_LAYER},
    {"self_attn.v_proj.weight", "attn_v.weight", SPLIT_QKV, ANY_NAMES, KV_LAYER},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight", FUSED_QKV, ANY_NAMES, ATTN_LAYER},
    {"self_attn.q_proj.bias", "attn_q.bias", QKV_BIAS, ANY_NAMES, ATTN_LAYER},
    {"self_attn.k_proj.bias", "attn_k.bias", QKV_BIAS, ANY_NAMES, ATTN_LAYER},
    {"self_attn.v_proj.bias", "attn_v.bias", QKV_BIAS, ANY_NAMES, ATTN_LAYER},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", QK_NORM, ELM_HF_NAMES_LLAMA, ATTN_LAYER},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", QK_NORM, ELM_HF_NAMES_LLAMA, KV_LAYER},
    {"self_attn.o_proj.weight", "attn_output.weight", ALL, ELM_HF_NAMES_LLAMA, ATTN_LAYER},
    /* the FFN's norm: under the family's GGUF name (Qwen3.5: post_attention_norm, row_gguf) */
    {"post_attention_layernorm.weight", "ffn_norm.weight", PRE_NORMS, ELM_HF_NAMES_LLAMA,
     ANY_LAYER},
    /* Gemma 3 names its four norms by place: post_attention is the attention output's */
    {"post_attention_layernorm.weight", "post_attention_norm.weight", POST_NORMS,
     ELM_HF_NAMES_LLAMA, ANY_LAYER},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", POST_NORMS, ELM_HF_NAMES_LLAMA,
     ANY_LAYER},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", POST_NORMS, ELM_HF_NAMES_LLAMA,
     ANY_LAYER},
    {"mlp.gate_proj.weight", "ffn_gate.weight", SPLIT_FFN, ELM_HF_NAMES_LLAMA, DENSE_LAYER},
    {"mlp.up_proj.weight", "ffn_up.weight", SPLIT_FFN, ELM_HF_NAMES_LLAMA, DENSE_LAYER},
    {"mlp.gate_up_proj.weight", "ffn_up.weight", FUSED_FFN, ELM_HF_NAMES_LLAMA, DENSE_LAYER},
    {"mlp.down_proj.weight", "ffn_down.weight", ALL, ELM_HF_NAMES_LLAMA, DENSE_LAYER},
    /* Qwen3-MoE's and Qwen3.5-MoE's router (Qwen3-MoE's experts, one tensor each: add_expert) */
    {"mlp.gate.weight", "ffn_gate_inp.weight", MOE, ELM_HF_NAMES_LLAMA, MOE_LAYER},
    /* Qwen3.5-MoE's experts packed (gate_up_proj [E, 2·ff, dim], [gate; up] per expert: add_gate_up)
     * and its shared expert, weighed by sigmoid(shared_expert_gate·x) */
    {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", MOE_PACKED, ELM_HF_NAMES_LLAMA,
     MOE_LAYER},
    {"mlp.experts.down_proj", "ffn_down_exps.weight", MOE_PACKED, ELM_HF_NAMES_LLAMA, MOE_LAYER},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", SHEXP_GATED,
     ELM_HF_NAMES_LLAMA, MOE_LAYER},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", SHEXP_GATED, ELM_HF_NAMES_LLAMA,
     MOE_LAYER},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", SHEXP_GATED,
     ELM_HF_NAMES_LLAMA, MOE_LAYER},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", SHEXP_GATED,
     ELM_HF_NAMES_LLAMA, MOE_LAYER},
    /* gpt-oss: its router and biases, sinks, and the down projections' biases (its experts'
     * matrices and gate/up biases, fused: elm_hf_add_fused) */
    {"mlp.router.weight", "ffn_gate_inp.weight", MOE_FUSED, ELM_HF_NAMES_LLAMA, MOE_LAYER},
    {"mlp.router.bias", "ffn_gate_inp.bias", MOE_FUSED, ELM_HF_NAMES_LLAMA, MOE_LAYER},
    {"mlp.experts.down_proj_bias", "ffn_down_exps.bias", MOE_FUSED, ELM_HF_NAMES_LLAMA,
     MOE_LAYER},
    {"self_attn.o_proj.bias", "attn_output.bias", SINKS, ELM_HF_NAMES_LLAMA, ATTN_LAYER},
    {"self_attn.sinks", "attn_sinks.weight", SINKS, ELM_HF_NAMES_LLAMA, ATTN_LAYER},
    /* Gemma 4: the per-layer embedding's gate, projection and norm; layer_scalar, a buffer */
    {"per_layer_input_gate.weight", "inp_gate.weight", PLE, ELM_HF_NAMES_LLAMA, PLE_LAYER},
    {"per_layer_projection.weight", "proj.weight", PLE, ELM_HF_NAMES_LLAMA, PLE_LAYER},
    {"post_per_layer_input_norm.weight", "post_norm.weight", PLE, ELM_HF_NAMES_LLAMA, PLE_LAYER},
    {"layer_scalar", "layer_output_scale.weight", LAYER_SCALE, ELM_HF_NAMES_LLAMA, OPTIONAL},
    /* LFM2 (Lfm2DecoderLayer): operator_norm before the mixing, feed_forward w1/w3/w2 */
    {"operator_norm.weight", "attn_norm.weight", ALL, ELM_HF_NAMES_LFM2, ANY_LAYER},
    {"self_attn.out_proj.weight", "attn_output.weight", ALL, ELM_HF_NAMES_LFM2, ATTN_LAYER},
    {"self_attn.q_layernorm.weight", "attn_q_norm.weight", QK_NORM, ELM_HF_NAMES_LFM2,
     ATTN_LAYER},
    {"self_attn.k_layernorm.weight", "attn_k_norm.weight", QK_NORM, ELM_HF_NAMES_LFM2,
     ATTN_LAYER},
    {"conv.conv.weight", "shortconv.conv.weight", ALL, ELM_HF_NAMES_LFM2, REC_LAYER},
    {"conv.in_proj.weight", "shortconv.in_proj.weight", ALL, ELM_HF_NAMES_LFM2, REC_LAYER},
    {"conv.out_proj.weight", "shortconv.out_proj.weight", ALL, ELM_HF_NAMES_LFM2, REC_LAYER},
    {"ffn_norm.weight", "ffn_norm.weight", ALL, ELM_HF_NAMES_LFM2, ANY_LAYER},
    {"feed_forward.w1.weight", "ffn_gate.weight", ALL, ELM_HF_NAMES_LFM2, DENSE_LAYER},
    {"feed_forward.w3.weight", "ffn_up.weight", ALL, ELM_HF_NAMES_LFM2, DENSE_LAYER},
    {"feed_forward.w2.weight", "ffn_down.weight", ALL, ELM_HF_NAMES_LFM2, DENSE_LAYER},
    /* LFM2-MoE's router and its selection bias (its experts, one tensor each: add_expert) */
    {"feed_forward.gate.weight", "ffn_gate_inp.weight", MOE, ELM_HF_NAMES_LFM2, MOE_LAYER},
    {"feed_forward.expert_bias", "exp_probs_b.bias", MOE_BIAS, ELM_HF_NAMES_LFM2, MOE_LAYER},
    /* Granite 4.0-H (GraniteMoeHybridDecoderLayer): Llama's norms and o_proj, the dense FFN as
     * shared_mlp, whose input_linear is [gate; up] (add_gate_up splits it, the writer joins it),
     * the shared expert when the model has experts, which are packed as Qwen3.5-MoE's (under
     * block_sparse_moe, with its router), and the Mamba-2 mixer as mamba.* (add_tensor: A_log
     * becomes A = -exp(A_log)) */
    {"input_layernorm.weight", "attn_norm.weight", ALL, ELM_HF_NAMES_GRANITE, ANY_LAYER},
    {"self_attn.o_proj.weight", "attn_output.weight", ALL, ELM_HF_NAMES_GRANITE, ATTN_LAYER},
    {"post_attention_layernorm.weight", "ffn_norm.weight", ALL, ELM_HF_NAMES_GRANITE, ANY_LAYER},
    {"shared_mlp.input_linear.weight", "ffn_gate.weight", ALL, ELM_HF_NAMES_GRANITE, DENSE_LAYER},
    {"shared_mlp.output_linear.weight", "ffn_down.weight", ALL, ELM_HF_NAMES_GRANITE, DENSE_LAYER},
    {"shared_mlp.input_linear.weight", "ffn_gate_shexp.weight", ALL, ELM_HF_NAMES_GRANITE,
     MOE_LAYER},
    {"shared_mlp.output_linear.weight", "ffn_down_shexp.weight", ALL, ELM_HF_NAMES_GRANITE,
     MOE_LAYER},
    {"block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight", ALL, ELM_HF_NAMES_GRANITE,
     MOE_LAYER},
    {"block_sparse_moe.input_linear.weight", "ffn_gate_exps.weight", MOE_PACKED,
     ELM_HF_NAMES_GRANITE, MOE_LAYER},
    {"block_sparse_moe.output_linear.weight", "ffn_down_exps.weight", MOE_PACKED,
     ELM_HF_NAMES_GRANITE, MOE_LAYER},
    {"mamba.in_proj.weight", "ssm_in.weight", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.conv1d.weight", "ssm_conv1d.weight", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.conv1d.bias", "ssm_conv1d.bias", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.dt_bias", "ssm_dt.bias", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.A_log", "ssm_a", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.D", "ssm_d", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.norm.weight", "ssm_norm.weight", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    {"mamba.out_proj.weight", "ssm_out.weight", ALL, ELM_HF_NAMES_GRANITE, REC_LAYER},
    /* Qwen3.5's Gated DeltaNet (Qwen3NextGatedDeltaNet), as llama.cpp's converter names it */
    {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.in_proj_z.weight", "attn_gate.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.in_proj_b.weight", "ssm_beta.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.in_proj_a.weight", "ssm_alpha.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.dt_bias", "ssm_dt.bias", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.A_log", "ssm_a", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.norm.weight", "ssm_norm.weight", DELTANET, ANY_NAMES, REC_LAYER},
    {"linear_attn.out_proj.weight", "ssm_out.weight", DELTANET, ANY_NAMES, REC_LAYER}};
#define N_LAYER_NAMES (sizeof layer_names / sizeof layer_names[0])
#define N_GLOBAL_NAMES (sizeof global_names / sizeof global_names[0])

/* Whether family a has the block tensor of condition `when` under naming `names`. */
static bool needed(const elm_arch *a, int when, int names) {
    if (names != ANY_NAMES && names != (int)a->hf_names) return false;
    switch (when) {
    case SPLIT_QKV: return !a->fused_qkv;
    case FUSED_QKV: return a->fused_qkv;
    case QKV_BIAS: return a->qkv_bias;
    case QK_NORM: return a->qk_norm;
    case SPLIT_FFN: return !a->fused_gate_up;
    case FUSED_FFN: return a->fused_gate_up;
    case MOE: return a->moe && !a->moe_biases;
    case MOE_FUSED: return a->moe_biases;
    case MOE_PACKED: return a->hf_packed_experts;
    case SHEXP_GATED: return a->shexp_gated;
    case SINKS: return a->sinks;
    case MOE_BIAS: return a->moe_bias;
    case PRE_NORMS: return !a->post_norms;
    case POST_NORMS: return a->post_norms;
    case DELTANET: return a->recurrent == ELM_LAYER_DELTANET;
    case PLE: return a->ple;
    case LAYER_SCALE: return a->layer_scale;
    default: return true;
    }
}

/* Row i's GGUF name in family a: the FFN's norm under the family's (elm_arch_ffn_norm). */
static const char *row_gguf(const elm_arch *a, size_t i) {
    return strcmp(layer_names[i].gguf, "ffn_norm.weight") == 0 ? elm_arch_ffn_norm(a)
                                                                : layer_names[i].gguf;
}

/* Whether layer l of hp must have the tensors of the rows marked `on`. */
static bool in_layer(const elm_hparams *hp, int l, int on) {
    switch (on) {
    case ANY_LAYER: return true;
    case REC_LAYER: return elm_layer_recurrent(hp, l);
    case ATTN_LAYER: return !elm_layer_recurrent(hp, l);
    case KV_LAYER: return !elm_layer_recurrent(hp, l) && elm_layer_kv_src(hp, l) == l;
    case PLE_LAYER: return hp->n_embd_per_layer > 0;
    case DENSE_LAYER: return !elm_layer_moe(hp, l);
    case MOE_LAYER: return elm_layer_moe(hp, l);
    default: return false;
    }
}

static elm_status join(char *out, size_t cap, const char *dir, const char *name, elm_error *err) {
    if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    return ELM_OK;
}

/* GGUF name of an HF tensor of family a into out; *layer is its block (-1 for global tensors).
 * A name whose tensor differs by the layer's FFN (Granite's shared_mlp: the dense FFN, or the
 * shared expert beside experts) is read as hp's layer has it. Returns false for names that are
 * not part of the family's layout (e.g. rotary_emb.inv_freq), which are ignored. */
static bool gguf_name(const elm_arch *a, const elm_hparams *hp, const char *hf, char *out,
                      size_t cap, long *layer) {
    *layer = -1;
    /* a multimodal checkpoint's language model (Gemma 3 4B: either transformers' naming); the
     * vision tower's tensors match nothing and are ignored */
    static const char *const lm[] = {"language_model.", "model.language_model."};
    char buf[ELM_NAME_MAX + 32];
    for (size_t i = 0; i < 2; i++)
        if (strncmp(hf, lm[i], strlen(lm[i])) == 0) {
            const char *rest = hf + strlen(lm[i]);
            if (i == 1) snprintf(buf, sizeof buf, "model.%s", rest);
            else snprintf(buf, sizeof buf, "%s", rest);
            hf = buf;
            break;
        }
    /* a bare text model's (Gemma3TextModel: EmbeddingGemma) tensors have no "model." */
    static const char *const bare[] = {"layers.", "embed_tokens.", "norm."};
    for (size_t i = 0; i < 3 && hf != buf; i++)
        if (strncmp(hf, bare[i], strlen(bare[i])) == 0) {
            snprintf(buf, sizeof buf, "model.%s", hf);
            hf = buf;
        }
    for (size_t i = 0; i < N_GLOBAL_NAMES; i++)
        if (needed(a, global_names[i].when, global_names[i].names) &&
            strcmp(hf, global_names[i].hf) == 0) {
            snprintf(out, cap, "%s", global_names[i].gguf);
            return true;
        }
    const char *pre = "model.layers.";
    if (strncmp(hf, pre, strlen(pre)) != 0) return false;
    const char *p = hf + strlen(pre);
    char *end;
    if (*p < '0' || *p > '9') return false;
    long l = strtol(p, &end, 10);
    if (*end != '.' || l > INT32_MAX) return false;
    for (size_t i = 0; i < N_LAYER_NAMES; i++) {
        const int on = layer_names[i].on;
        if ((on == DENSE_LAYER || on == MOE_LAYER) && !in_layer(hp, (int)l, on)) continue;
        if (needed(a, layer_names[i].when, layer_names[i].names) &&
            strcmp(end + 1, layer_names[i].hf) == 0) {
            snprintf(out, cap, "blk.%ld.%s", l, row_gguf(a, i));
            *layer = l;
            return true;
        }
    }
    return false;
}

bool elm_hf_name_of(const char *arch, const char *gguf, char *out, size_t cap) {
    const elm_arch *a = elm_arch_find(arch);
    if (!a) return false;
    for (size_t i = 0; i < N_GLOBAL_NAMES; i++)
        if (needed(a, global_names[i].when, global_names[i].names) &&
            strcmp(gguf, global_names[i].gguf) == 0) {
            snprintf(out, cap, "%s", global_names[i].hf);
            return true;
        }
    long l;
    int used = 0;
    if (sscanf(gguf, "blk.%ld.%n", &l, &used) != 1 || used == 0) return false;
    for (size_t i = 0; i < N_LAYER_NAMES; i++)
        if (needed(a, layer_names[i].when, layer_names[i].names) &&
            strcmp(gguf + used, row_gguf(a, i)) == 0) {
            snprintf(out, cap, "model.layers.%ld.%s", l, layer_names[i].hf);
            return true;
        }
    return false;
}

const char *const elm_hf_expert_kinds[ELM_HF_EXPERT_KINDS] = {"gate", "up", "down"};

/* How a family's checkpoints name expert E's matrices of each kind (elm_hf_expert_kinds) after
 * "model.layers.L." (elm_arch.hf_names): Qwen3-MoE's mlp.experts.E.{gate,up,down}_proj.weight
 * (Qwen3.5-MoE's too, as llama.cpp's converter reads them, though its checkpoints pack them),
 * LFM2-MoE's feed_forward.experts.E.{w1,w3,w2}.weight; Granite's none (packed only). */
static const struct { const char *under, *kinds[ELM_HF_EXPERT_KINDS]; } expert_names[] = {
    [ELM_HF_NAMES_LLAMA] = {"mlp.experts.", {"gate_proj", "up_proj", "down_proj"}},
    [ELM_HF_NAMES_LFM2] = {"feed_forward.experts.", {"w1", "w3", "w2"}},
    [ELM_HF_NAMES_GRANITE] = {NULL, {NULL}}};

/* The HF name of expert e of kind k in layer l of family a into out. */
static void expert_hf_name(const elm_arch *a, long l, long e, int k, char *out, size_t cap) {
    snprintf(out, cap, "model.layers.%ld.%s%ld.%s.weight", l, expert_names[a->hf_names].under, e,
             expert_names[a->hf_names].kinds[k]);
}

/* The kind (elm_hf_expert_kinds) of GGUF stack `gguf` of experts, its block in *layer; -1 for
 * another tensor. */
static int expert_stack(const char *gguf, long *layer) {
    char kind[8];
    int used = 0;
    if (sscanf(gguf, "blk.%ld.ffn_%7[a-z]_exps.weight%n", layer, kind, &used) != 2 ||
        gguf[used] != '\0')
        return -1;
    for (int k = 0; k < ELM_HF_EXPERT_KINDS; k++)
        if (!strcmp(kind, elm_hf_expert_kinds[k])) return k;
    return -1;
}

bool elm_hf_expert_name(const char *arch, const char *gguf, int64_t e, char *out, size_t cap) {
    const elm_arch *a = elm_arch_find(arch);
    long l;
    const int k = expert_stack(gguf, &l);
    /* gpt-oss's are fused, the others packed */
    if (!a || !a->moe || a->moe_biases || a->hf_packed_experts || k < 0) return false;
    expert_hf_name(a, l, (long)e, k, out, cap);
    return true;
}

/* Expert *e's tensor of kind (returned) in layer *layer for HF name hf of family a (with
 * experts); -1 for another tensor. */
static int expert_of(const elm_arch *a, const char *hf, long *layer, long *e) {
    const char *under = expert_names[a->hf_names].under;
    int used = 0;
    if (!under || sscanf(hf, "model.layers.%ld.%n", layer, &used) != 1 || used == 0 || *layer < 0 ||
        strncmp(hf + used, under, strlen(under)) != 0)
        return -1;
    const char *p = hf + used + strlen(under);
    char *end;
    if (*p < '0' || *p > '9') return -1;
    *e = strtol(p, &end, 10);
    if (*end != '.' || *e < 0 || *e > INT32_MAX) return -1;
    for (int k = 0; k < ELM_HF_EXPERT_KINDS; k++) {
        const char *kind = expert_names[a->hf_names].kinds[k];
        const size_t n = strlen(kind);
        if (!strncmp(end + 1, kind, n) && !strcmp(end + 1 + n, ".weight")) return k;
    }
    return -1;
}

void elm_hf_permute_rows(char *dst, const char *src, int64_t heads, int64_t hd, size_t row_bytes,
                         bool to_interleaved) {
    for (int64_t h = 0; h < heads; h++)
        for (int64_t p = 0; p < 2; p++)
            for (int64_t i = 0; i < hd / 2; i++) {
                const size_t hf = (size_t)(h * hd + p * (hd / 2) + i) * row_bytes;
                const size_t il = (size_t)(h * hd + 2 * i + p) * row_bytes;
                memcpy(dst + (to_interleaved ? il : hf), src + (to_interleaved ? hf : il), row_bytes);
            }
}

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool elm_hf_norm_plus_one(const elm_arch *a, const char *gguf) {
    const size_t len = strlen(gguf);
    return a->norm_plus_one && len > 11 && strcmp(gguf + len - 11, "norm.weight") == 0 &&
           !strstr(gguf, ".ssm_norm.");
}

bool elm_hf_decay(const char *gguf) {
    return ends_with(gguf, ".ssm_a");
}

bool elm_hf_value_heads(const elm_hparams *hp, const char *gguf, elm_hf_vheads *v) {
    const int64_t S = hp->ssm_state, qk = 2 * (int64_t)hp->ssm_groups * S;
    const elm_arch *a = elm_arch_find(hp->arch);
    if (!a || a->recurrent != ELM_LAYER_DELTANET || hp->ssm_groups <= 0 ||
        hp->ssm_heads == hp->ssm_groups)
        return false;
    static const struct { const char *suffix; int first, unit; bool cols; } t[] = {
        {".attn_qkv.weight", 1, 1, false}, {".ssm_conv1d.weight", 1, 1, false},
        {".attn_gate.weight", 0, 1, false}, {".ssm_out.weight", 0, 1, true},
        {".ssm_beta.weight", 0, 0, false}, {".ssm_alpha.weight", 0, 0, false},
        {".ssm_a", 0, 0, false},            {".ssm_dt.bias", 0, 0, false}};
    const size_t len = strlen(gguf);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const size_t n = strlen(t[i].suffix);
        if (len > n && strcmp(gguf + len - n, t[i].suffix) == 0) {
            *v = (elm_hf_vheads){t[i].first ? qk : 0, t[i].unit ? S : 1, t[i].cols};
            return true;
        }
    }
    return false;
}

void elm_hf_tile_heads(char *dst, const char *src, const elm_hparams *hp, const elm_hf_vheads *v,
                       int64_t rows, size_t row_bytes, size_t elem_bytes, bool to_tiled) {
    memcpy(dst, src, (size_t)rows * row_bytes);
    const int64_t n_k = hp->ssm_groups, r = hp->ssm_heads / hp->ssm_groups;
    for (int64_t k = 0; k < n_k; k++)
        for (int64_t j = 0; j < r; j++) {
            const int64_t grouped = k * r + j, tiled = j * n_k + k;
            const int64_t from = v->first + (to_tiled ? grouped : tiled) * v->unit;
            const int64_t to = v->first + (to_tiled ? tiled : grouped) * v->unit;
            if (!v->cols) {
                memcpy(dst + (size_t)to * row_bytes, src + (size_t)from * row_bytes,
                       (size_t)v->unit * row_bytes);
                continue;
            }
            for (int64_t row = 0; row < rows; row++)
                memcpy(dst + (size_t)row * row_bytes + (size_t)to * elem_bytes,
                       src + (size_t)row * row_bytes + (size_t)from * elem_bytes,
                       (size_t)v->unit * elem_bytes);
        }
}

/* What f32_copy does to each value w. */
typedef enum { F32_AS_IS, F32_PLUS_ONE, F32_NEG_EXP } f32_op;

/* A tensor as F32 (owned), its values w as they are, or 1 + w (Gemma's and Qwen3.5's norm weights
 * in GGUF), or -exp(w) (ssm_a from A_log, computed in float); biases and Mamba-2's small tensors
 * are F32 in GGUF whatever the checkpoint's dtype. */
static elm_status f32_copy(elm_model *m, const char *src, const elm_st_tensor *t, f32_op op,
                           void **out, elm_error *err) {
    const int64_t n = (int64_t)(t->nbytes / (t->type == ELM_TYPE_F32 ? 4 : 2));
    float *w = malloc((size_t)(n ? n : 1) * sizeof *w);
    if (!w) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    elm_type_get(t->type)->to_float(t->data, w, n);
    for (int64_t i = 0; i < n; i++)
        w[i] = op == F32_PLUS_ONE ? w[i] + 1.0f : op == F32_NEG_EXP ? -expf(w[i]) : w[i];
    *out = w;
    return elm_model_own_buffer(m, w, err);
}

/* The value heads of a Gated DeltaNet tensor (ne as GGUF has it) into GGUF's tiled order: an
 * owned copy of *data, which then points at it. */
static elm_status tile_heads(elm_model *m, const char *src, const elm_hf_vheads *v, elm_type type,
                             const int64_t *ne, int n_dims, void **data, elm_error *err) {
    const int64_t rows = n_dims > 1 ? ne[1] : ne[0];
    const size_t elem = elm_type_get(type)->block_bytes, row = n_dims > 1 ? (size_t)ne[0] * elem
                                                                           : elem;
    if ((v->cols ? ne[0] : rows) < v->first + (int64_t)m->hp.ssm_heads * v->unit)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: a Gated DeltaNet tensor too small for %d "
                          "value heads of %lld", src, m->hp.ssm_heads, (long long)v->unit);
    char *dst = malloc((size_t)rows * row);
    if (!dst) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    elm_hf_tile_heads(dst, *data, &m->hp, v, rows, row, elem, true);
    *data = dst;
    return elm_model_own_buffer(m, dst, err);
}

/* Copy of a q/k projection [heads*hd, cols] with rows moved from rotate-half to interleaved
 * order: for head h, HF row h*hd + p*(hd/2) + i becomes row h*hd + 2*i + p (docs/formats.md). */
static elm_status unpermute(elm_model *m, const char *src, const elm_st_tensor *t, int heads,
                            void **out, elm_error *err) {
    int64_t rows = t->shape[0];
    if (t->n_dims != 2 || heads <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' cannot be split into %d heads of even size", src,
                          t->name, heads);
    char *dst = malloc(t->nbytes);
    if (!dst) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    elm_hf_permute_rows(dst, t->data, heads, rows / heads, t->nbytes / (size_t)rows, true);
    *out = dst;
    return elm_model_own_buffer(m, dst, err);
}

/* Data a model tensor can point at: the mapping itself when aligned for the element type (a
 * header of odd length can leave it unaligned), else an owned copy. */
static elm_status aligned_data(elm_model *m, const char *src, const elm_st_tensor *t,
                               void **out, elm_error *err) {
    size_t esize = t->type == ELM_TYPE_F32 ? 4 : 2;
    if ((uintptr_t)t->data % esize == 0) {
        *out = (void *)t->data;
        return ELM_OK;
    }
    void *copy = malloc(t->nbytes);
    if (!copy) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    memcpy(copy, t->data, t->nbytes);
    *out = copy;
    return elm_model_own_buffer(m, copy, err);
}

elm_hf_joined elm_hf_joined_of(const elm_arch *a, const char *gguf, char *other, size_t cap) {
    static const struct { const char *gate, *up; bool packed; } pairs[] = {
        {".ffn_gate.weight", ".ffn_up.weight", false},
        {".ffn_gate_shexp.weight", ".ffn_up_shexp.weight", false},
        {".ffn_gate_exps.weight", ".ffn_up_exps.weight", true}};
    const size_t len = strlen(gguf);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (pairs[i].packed ? !a->hf_packed_experts : a->hf_names != ELM_HF_NAMES_GRANITE)
            continue;
        for (int up = 0; up < 2; up++) {
            const char *have = up ? pairs[i].up : pairs[i].gate, *want = up ? pairs[i].gate
                                                                          : pairs[i].up;
            const size_t n = strlen(have);
            if (len <= n || strcmp(gguf + len - n, have) != 0) continue;
            snprintf(other, cap, "%.*s%s", (int)(len - n), gguf, want);
            return up ? ELM_HF_JOINED_UP : ELM_HF_JOINED_GATE;
        }
    }
    return ELM_HF_JOINED_NONE;
}

elm_hf_shape elm_hf_shape_of(const elm_arch *a, const char *gguf) {
    if (strstr(gguf, ".shortconv.conv.") || strstr(gguf, ".ssm_conv1d.weight"))
        return ELM_HF_SHAPE_CONV;
    if (ends_with(gguf, ".ffn_gate_inp_shexp.weight")) return ELM_HF_SHAPE_ROW;
    if (a->recurrent == ELM_LAYER_MAMBA2 &&
        (ends_with(gguf, ".ssm_a") || ends_with(gguf, ".ssm_d") || strstr(gguf, ".ssm_norm.")))
        return ELM_HF_SHAPE_FLAT;
    return ELM_HF_SHAPE_SAME;
}

/* The GGUF shape of HF tensor t renamed `name` into ne, its dimensions returned: t's shape
 * reversed, reshaped as elm_hf_shape_of says (a flat norm into hp's groups). */
static int gguf_shape(const elm_arch *a, const elm_hparams *hp, const char *name,
                      const elm_st_tensor *t,
                      int64_t ne[ELM_MAX_DIMS]) {
    int n_dims = 0;
    for (int i = 0; i < t->n_dims; i++) ne[n_dims++] = t->shape[t->n_dims - 1 - i];
    const elm_hf_shape shape = elm_hf_shape_of(a, name);
    if (shape == ELM_HF_SHAPE_CONV && n_dims == 3 && ne[1] == 1) {
        ne[1] = ne[2];
        n_dims = 2;
    } else if (shape == ELM_HF_SHAPE_ROW && n_dims == 2 && ne[1] == 1) {
        n_dims = 1;
    } else if (shape == ELM_HF_SHAPE_FLAT && n_dims == 1) {
        const int64_t rows = strstr(name, ".ssm_norm.") ? hp->ssm_groups : ne[0];
        if (rows > 0 && ne[0] % rows == 0) {
            ne[0] /= rows;
            ne[1] = rows;
            n_dims = 2;
        }
    }
    return n_dims;
}

/* Whether packed experts' tensor t, renamed `gguf` (ffn_gate_exps for [gate; up], else
 * ffn_down_exps), has config.json's shape: [experts, 2·ff, dim] or [experts, dim, ff]. */
static elm_status check_packed(const elm_hparams *hp, const char *src, const elm_st_tensor *t,
                               const char *gguf, elm_error *err) {
    const bool down = strstr(gguf, ".ffn_down_exps.") != NULL;
    const int64_t E = hp->n_expert, ff = hp->expert_ffn_dim, dim = hp->dim;
    const int64_t want[3] = {E, down ? dim : 2 * ff, down ? ff : dim};
    if (t->n_dims == 3 && t->shape[0] == want[0] && t->shape[1] == want[1] &&
        t->shape[2] == want[2])
        return ELM_OK;
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions [%lld, %lld, ...], "
                      "expected [%lld, %lld, %lld] (config.json's experts, %shidden_size%s)",
                      src, t->name, t->n_dims, (long long)t->shape[0],
                      (long long)(t->n_dims > 1 ? t->shape[1] : 0), (long long)want[0],
                      (long long)want[1], (long long)want[2], down ? "" : "2 × their size, ",
                      down ? ", their size" : "");
}

/* A [gate; up] tensor t renamed `gate` (elm_hf_joined_of: Granite's shared_mlp.input_linear;
 * packed experts, [gate; up] per expert) as the two GGUF tensors, gate and up: a matrix's halves
 * in place, a stack's copied apart, as llama.cpp's converter splits them. */
static elm_status add_gate_up(elm_model *m, const char *src, const elm_st_tensor *t,
                              const char *gate, elm_error *err) {
    const int n = t->n_dims;
    if ((n != 2 && n != 3) || t->shape[n - 2] % 2)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is not [gate; up] rows", src,
                          t->name);
    char up[ELM_NAME_MAX];
    elm_hf_joined_of(elm_arch_find(m->hp.arch), gate, up, sizeof up);
    const int64_t E = n == 3 ? t->shape[0] : 1, ne[3] = {t->shape[n - 1], t->shape[n - 2] / 2, E};
    const size_t half = t->nbytes / (size_t)E / 2;
    void *data = NULL;
    elm_status st = ELM_OK;
    char *halves[2];
    if (E == 1) {
        if ((st = aligned_data(m, src, t, &data, err))) return st;
        halves[0] = data;
        halves[1] = halves[0] + half;
    } else {
        halves[0] = malloc(t->nbytes);
        if (!halves[0]) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
        st = elm_model_own_buffer(m, halves[0], err);
        halves[1] = halves[0] + t->nbytes / 2;
        for (int64_t e = 0; e < E && !st; e++)
            for (int k = 0; k < 2; k++)
                memcpy(halves[k] + (size_t)e * half, (const char *)t->data + (size_t)(2 * e + k) *
                                                                            half, half);
    }
    for (int k = 0; k < 2 && !st; k++)
        st = elm_model_add_tensor(m, k ? up : gate, t->type, n, ne, halves[k], half * (size_t)E,
                                  err);
    return st;
}

/* Expert e's [rows, cols] tensor t of kind k (elm_hf_expert_kinds) in layer `layer`, copied into
 * its place in the stack blk.L.ffn_K_exps.weight (ne {cols, rows, n_expert}, owned, made at the
 * first of its experts), as llama.cpp's converter stacks them; seen[(layer·3 + k)·n_expert + e]
 * is set. */
static elm_status add_expert(elm_model *m, const char *src, const elm_st_tensor *t, long layer,
                             long e, int k, uint8_t *seen, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    if (layer >= hp->n_layers || e >= hp->n_expert || !elm_layer_moe(hp, (int)layer))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is for layer %ld, expert %ld but "
                          "config.json has %d layers (the first %d dense) of %d experts", src,
                          t->name, layer, e, hp->n_layers, hp->n_dense_lead, hp->n_expert);
    const int64_t rows = k == 2 ? hp->dim : hp->expert_ffn_dim;
    const int64_t cols = k == 2 ? hp->expert_ffn_dim : hp->dim;
    if (t->n_dims != 2 || t->shape[0] != rows || t->shape[1] != cols)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is not [%lld, %lld] "
                          "(config.json's hidden_size and moe_intermediate_size)", src, t->name,
                          (long long)rows, (long long)cols);
    char name[ELM_NAME_MAX];
    snprintf(name, sizeof name, "blk.%ld.ffn_%s_exps.weight", layer, elm_hf_expert_kinds[k]);
    elm_tensor *stack = elm_model_find(m, name);
    if (!stack) {
        char *data = malloc(t->nbytes * (size_t)hp->n_expert);
        if (!data) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
        elm_status st = elm_model_own_buffer(m, data, err);
        const int64_t ne[3] = {cols, rows, hp->n_expert};
        if (!st) st = elm_model_add_tensor(m, name, t->type, 3, ne, data,
                                           t->nbytes * (size_t)hp->n_expert, err);
        if (st) return st;
        stack = elm_model_find(m, name);
    }
    if (stack->type != t->type)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is %s, its layer's other experts "
                          "%s", src, t->name, elm_type_get(t->type)->name,
                          elm_type_get(stack->type)->name);
    memcpy((char *)stack->data + (size_t)e * t->nbytes, t->data, t->nbytes);
    seen[((size_t)layer * ELM_HF_EXPERT_KINDS + (size_t)k) * (size_t)hp->n_expert + (size_t)e] = 1;
    return ELM_OK;
}

/* Adds one safetensors tensor under its GGUF name (src names the file for errors; seen: the
 * experts added so far, add_expert). */
static elm_status add_tensor(elm_model *m, const char *src, const elm_st_tensor *t,
                             uint8_t *seen, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const elm_arch *a = elm_arch_find(hp->arch);
    char name[ELM_NAME_MAX];
    long layer, e;
    const int fused = a->moe_biases ? elm_hf_fused_of(t->name, &layer) : -1;
    if (fused >= 0) return elm_hf_add_fused(m, src, t, fused, layer, err);
    const int part = a->moe_biases ? elm_hf_mxfp4_of(t->name, &layer) : -1;
    if (part >= 0) return elm_hf_add_mxfp4(m, src, t, part, layer, seen, err);
    const int kind = a->moe && !a->moe_biases ? expert_of(a, t->name, &layer, &e) : -1;
    if (kind >= 0) return add_expert(m, src, t, layer, e, kind, seen, err);
    if (!gguf_name(a, hp, t->name, name, sizeof name, &layer)) return ELM_OK;
    if (layer >= hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is for layer %ld but config.json "
                          "has %d layers", src, t->name, layer, hp->n_layers);
    if (hp->tied_output && strcmp(name, "output.weight") == 0) return ELM_OK;
    if (t->type == ELM_ST_U8)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is U8 (only gpt-oss's MXFP4 "
                          "experts, *_blocks and *_scales, may be)", src, t->name);
    void *data;
    elm_status st;
    elm_type type = t->type;
    size_t nbytes = t->nbytes;
    const size_t len = strlen(name);
    const bool plus_one = elm_hf_norm_plus_one(a, name), decay = elm_hf_decay(name);
    /* biases, gpt-oss's sinks (a logit a head) and Qwen3.5-MoE's shared expert gate are F32 in
     * GGUF */
    const bool bias = (len > 5 && strcmp(name + len - 5, ".bias") == 0) ||
                      ends_with(name, ".attn_sinks.weight") ||
                      ends_with(name, ".ffn_gate_inp_shexp.weight");
    /* Mamba-2's tensors but its two products */
    const bool ssm_small = a->recurrent == ELM_LAYER_MAMBA2 && strstr(name, ".ssm_") &&
                           !strstr(name, ".ssm_in.") && !strstr(name, ".ssm_out.");
    if (a->hf_packed_experts && strstr(name, "_exps.weight") &&
        (st = check_packed(hp, src, t, name, err)))
        return st;
    char up[ELM_NAME_MAX];
    if (elm_hf_joined_of(a, name, up, sizeof up) == ELM_HF_JOINED_GATE)
        return add_gate_up(m, src, t, name, err);
    if (a->hf_permute_qk && layer >= 0 && strstr(name, ".attn_q.weight"))
        st = unpermute(m, src, t, hp->n_heads, &data, err);
    else if (a->hf_permute_qk && layer >= 0 && strstr(name, ".attn_k.weight"))
        st = unpermute(m, src, t, hp->n_kv_heads, &data, err);
    else if (plus_one || bias || decay || ssm_small) {
        const f32_op op = plus_one ? F32_PLUS_ONE : decay ? F32_NEG_EXP : F32_AS_IS;
        st = f32_copy(m, src, t, op, &data, err);
        type = ELM_TYPE_F32;
        nbytes = t->nbytes / (t->type == ELM_TYPE_F32 ? 4 : 2) * 4;
    } else
        st = aligned_data(m, src, t, &data, err);
    if (st) return st;
    int64_t ne[ELM_MAX_DIMS];
    const int n_dims = gguf_shape(a, hp, name, t, ne);
    elm_hf_vheads v;
    if (elm_hf_value_heads(hp, name, &v) && n_dims <= 2 &&
        (st = tile_heads(m, src, &v, type, ne, n_dims, &data, err)))
        return st;
    return elm_model_add_tensor(m, name, type, n_dims, ne, data, nbytes, err);
}

/* Opens a safetensors file and hands its mapping to the model (freed with it). */
static elm_status open_shard(elm_model *m, const char *path, elm_st_file *f, elm_error *err) {
    elm_status st = elm_st_open(f, path, err);
    if (st) return st;
    st = elm_model_own_mapping(m, f->map, f->map_size, err);
    f->map = NULL; /* the model owns (or, on failure, has already unmapped) it */
    return st;
}

static elm_status load_single(elm_model *m, const char *path, uint8_t *seen, elm_error *err) {
    elm_st_file f;
    elm_status st = open_shard(m, path, &f, err);
    for (int32_t i = 0; !st && i < f.n_tensors; i++)
        st = add_tensor(m, path, &f.tensors[i], seen, err);
    elm_st_close(&f);
    return st;
}

/* Shard file names are plain names inside the directory. */
static bool plain_name(const char *s) {
    return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Walks weight_map {tensor: file}, opening each shard once. */
static elm_status load_shards(elm_model *m, const char *dir, const char *index,
                              const cJSON *map, uint8_t *seen, elm_error *err) {
    int n = cJSON_GetArraySize(map), n_open = 0;
    elm_st_file *files = calloc((size_t)n + 1, sizeof *files);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    elm_status st = files && names ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory",
                                                         index);
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (st) break;
        if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: weight_map entry '%.96s' is not a file name",
                            index, e->string);
            break;
        }
        int k = 0;
        while (k < n_open && strcmp(names[k], e->valuestring) != 0) k++;
        char path[1100];
        if ((st = join(path, sizeof path, dir, e->valuestring, err))) break;
        if (k == n_open) {
            names[n_open++] = e->valuestring;
            if ((st = open_shard(m, path, &files[k], err))) break;
        }
        const elm_st_tensor *t = elm_st_find(&files[k], e->string);
        if (!t)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%.96s' listed in %s is missing",
                            path, e->string, index);
        else
            st = add_tensor(m, path, t, seen, err);
    }
    for (int k = 0; files && k < n_open; k++) elm_st_close(&files[k]);
    free(files);
    free(names);
    return st;
}

static elm_status load_index(elm_model *m, const char *dir, const char *index, uint8_t *seen,
                             elm_error *err) {
    cJSON *root;
    elm_status st = elm_json_read_object(index, ELM_HF_MAX_JSON, &root, err);
    if (st) return st;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map) || !map->child)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: no weight_map object", index);
    else
        st = load_shards(m, dir, index, map, seen, err);
    cJSON_Delete(root);
    return st;
}

/* Every tensor the family's layout needs is present (each expert's: seen); errors give the HF
 * name. */
static elm_status check_complete(const elm_model *m, const char *src, const uint8_t *seen,
                                 elm_error *err) {
    const elm_arch *a = elm_arch_find(m->hp.arch);
    char gguf[ELM_NAME_MAX];
    for (size_t i = 0; i < N_GLOBAL_NAMES; i++) {
        if (strcmp(global_names[i].gguf, "output.weight") == 0 && m->hp.tied_output) continue;
        if (!needed(a, global_names[i].when, global_names[i].names)) continue;
        if (global_names[i].when == PLE && m->hp.n_embd_per_layer == 0) continue;
        if (!elm_model_find(m, global_names[i].gguf))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor '%s'", src,
                              global_names[i].hf);
    }
    for (int l = 0; l < m->hp.n_layers; l++)
        for (size_t i = 0; i < N_LAYER_NAMES; i++) {
            snprintf(gguf, sizeof gguf, "blk.%d.%s", l, row_gguf(a, i));
            if (needed(a, layer_names[i].when, layer_names[i].names) &&
                in_layer(&m->hp, l, layer_names[i].on) && !elm_model_find(m, gguf))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor 'model.layers.%d.%s'",
                                  src, l, layer_names[i].hf);
        }
    /* gpt-oss's fused experts: each kind's first GGUF stack */
    static const char *const fused_gguf[ELM_HF_FUSED_KINDS] = {
        "ffn_gate_exps.weight", "ffn_gate_exps.bias", "ffn_down_exps.weight"};
    for (int l = 0; a->moe_biases && l < m->hp.n_layers; l++)
        for (int k = 0; k < ELM_HF_FUSED_KINDS; k++) {
            snprintf(gguf, sizeof gguf, "blk.%d.%s", l, fused_gguf[k]);
            if (!elm_model_find(m, gguf))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor "
                                  "'model.layers.%d.mlp.experts.%s'", src, l,
                                  elm_hf_fused_names[k]);
        }
    /* the original checkpoint's MXFP4 experts: both parts of each matrix (elm_hf_add_mxfp4) */
    for (int l = 0; a->moe_biases && l < m->hp.n_layers; l++)
        for (int k = 0; k < ELM_HF_MXFP4_PARTS; k++) {
            const uint8_t *p = &seen[(size_t)l * ELM_HF_MXFP4_PARTS + (size_t)(k & ~1)];
            if ((p[0] || p[1]) && !seen[(size_t)l * ELM_HF_MXFP4_PARTS + (size_t)k])
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor "
                                  "'model.layers.%d.mlp.experts.%s'", src, l,
                                  elm_hf_mxfp4_names[k]);
        }
    /* one tensor per expert: each of a stack's (a packed family's stacks, none of whose experts
     * came one by one, were checked whole above) */
    const size_t E = (size_t)(a->moe && !a->moe_biases ? m->hp.n_expert : 0);
    for (size_t i = 0; i < (size_t)m->hp.n_layers * ELM_HF_EXPERT_KINDS * E; i++) {
        const long l = (long)(i / E / ELM_HF_EXPERT_KINDS);
        if (seen[i] || !elm_layer_moe(&m->hp, (int)l)) continue; /* a dense layer has none */
        const uint8_t *stack = &seen[i - i % E];
        if (a->hf_packed_experts && !memchr(stack, 1, E)) continue;
        char hf[ELM_NAME_MAX + 32];
        expert_hf_name(a, l, (long)(i % E), (int)(i / E % ELM_HF_EXPERT_KINDS), hf, sizeof hf);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor '%s'", src, hf);
    }
    return ELM_OK;
}

/* A sentence-transformers Dense module's linear.weight [out, in] (no bias, no activation: an
 * identity's, as EmbeddingGemma's) from folder `sub` of dir, as GGUF tensor `name` (llama.cpp's
 * converter: 2_Dense -> dense_2, the other -> dense_3). */
static elm_status read_dense(elm_model *m, const char *dir, const char *sub, const char *name,
                             elm_error *err) {
    char path[1100];
    cJSON *cfg = NULL;
    elm_status st = ELM_OK;
    if (snprintf(path, sizeof path, "%s/%s/config.json", dir, sub) >= (int)sizeof path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    if (elm_file_exists(path) && (st = elm_json_read_object(path, ELM_HF_MAX_JSON, &cfg, err)))
        return st;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(cfg, "activation_function");
    const bool bias = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "bias"));
    if (bias || (cJSON_IsString(act) && !strstr(act->valuestring, "Identity")))
        st = elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: a Dense layer with a bias or an activation "
                        "(%s) is not supported", path,
                        cJSON_IsString(act) ? act->valuestring : "bias");
    cJSON_Delete(cfg);
    if (st) return st;
    snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, sub);
    elm_st_file f;
    if ((st = open_shard(m, path, &f, err))) return st;
    const elm_st_tensor *t = elm_st_find(&f, "linear.weight");
    void *data = NULL;
    if (!t || t->n_dims != 2 || t->type == ELM_ST_U8)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: no 2-D float tensor 'linear.weight'", path);
    else if (!(st = aligned_data(m, path, t, &data, err))) {
        const int64_t ne[2] = {t->shape[1], t->shape[0]};
        st = elm_model_add_tensor(m, name, t->type, 2, ne, data, t->nbytes, err);
    }
    elm_st_close(&f);
    return st;
}

/* A sentence-transformers folder's modules.json: its Pooling module's mode (1_Pooling/config.json)
 * as hp.pooling (llama.cpp's converter's _try_set_pooling_type), its Dense modules as dense_2 and
 * dense_3. No modules.json: nothing. */
static elm_status read_modules(elm_model *m, const char *dir, elm_error *err) {
    char path[1100];
    cJSON *mods = NULL, *pool = NULL;
    elm_status st = join(path, sizeof path, dir, "modules.json", err);
    if (st || !elm_file_exists(path)) return st;
    if ((st = elm_json_read_array(path, ELM_HF_MAX_JSON, &mods, err))) return st;
    const cJSON *mod;
    cJSON_ArrayForEach(mod, mods) {
        if (st) break;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(mod, "type");
        const cJSON *sub = cJSON_GetObjectItemCaseSensitive(mod, "path");
        if (!cJSON_IsString(type) || !cJSON_IsString(sub) || !plain_name(sub->valuestring))
            continue;
        if (ends_with(type->valuestring, "Dense")) {
            st = read_dense(m, dir, sub->valuestring,
                            !strcmp(sub->valuestring, "2_Dense") ? "dense_2.weight"
                                                                  : "dense_3.weight", err);
            continue;
        }
        if (!ends_with(type->valuestring, "Pooling") || pool) continue;
        char cfg[1100];
        if (snprintf(cfg, sizeof cfg, "%s/%s/config.json", dir, sub->valuestring) >=
            (int)sizeof cfg) {
            st = elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
            break;
        }
        if ((st = elm_json_read_object(cfg, ELM_HF_MAX_JSON, &pool, err))) break;
        static const struct { const char *key, *mode; int32_t type; } modes[] = {
            {"pooling_mode_mean_tokens", "mean", 1}, {"pooling_mode_cls_token", "cls", 2},
            {"pooling_mode_lasttoken", "lasttoken", 3}};
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(pool, "pooling_mode");
        m->hp.pooling = -1;
        for (size_t i = 0; i < 3 && m->hp.pooling < 0; i++)
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pool, modes[i].key)) ||
                (cJSON_IsString(mode) && !strcmp(mode->valuestring, modes[i].mode)))
                m->hp.pooling = modes[i].type;
        if (m->hp.pooling < 0)
            st = elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: only mean, CLS and last-token pooling "
                            "are supported", cfg);
    }
    cJSON_Delete(mods);
    cJSON_Delete(pool);
    return st;
}

/* Llama 3.1's rope_scaling "llama3" as the divisor of each RoPE frequency (transformers'
 * _compute_llama3_parameters; llama.cpp's converter stores the same as rope_freqs.weight):
 * frequencies whose wavelength is below original_len / high_freq_factor keep their value, those
 * above original_len / low_freq_factor are divided by factor, and those between are blended. */
elm_status elm_hf_add_llama3_freqs(elm_model *m, const float llama3[4], elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const int hd = hp->head_dim ? hp->head_dim : hp->dim / hp->n_heads, n = hd / 2;
    const double factor = llama3[0], lo = llama3[1], hi = llama3[2], orig = llama3[3];
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int i = 0; i < n; i++) {
        const double freq = pow(hp->rope_theta, -2.0 * i / hd), wavelen = 2 * M_PI / freq;
        if (wavelen < orig / hi) {
            f[i] = 1.0f;
        } else if (wavelen > orig / lo) {
            f[i] = (float)factor;
        } else {
            const double smooth = (orig / wavelen - lo) / (hi - lo);
            f[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
    elm_status st = elm_model_own_buffer(m, f, err);
    const int64_t ne[1] = {n};
    return st ? st : elm_model_add_tensor(m, "rope_freqs.weight", ELM_TYPE_F32, 1, ne, f,
                                          (size_t)n * sizeof *f, err);
}

elm_status elm_hf_add_longrope(elm_model *m, const elm_hf_config *c, elm_error *err) {
    const int64_t ne[1] = {c->n_longrope};
    const float *src[2] = {c->long_factor, c->short_factor};
    const char *names[2] = {"rope_factors_long.weight", "rope_factors_short.weight"};
    elm_status st = ELM_OK;
    for (int k = 0; k < 2 && !st; k++) {
        float *f = malloc(sizeof *f * (size_t)c->n_longrope);
        if (!f) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
        memcpy(f, src[k], sizeof *f * (size_t)c->n_longrope);
        st = elm_model_own_buffer(m, f, err);
        if (!st)
            st = elm_model_add_tensor(m, names[k], ELM_TYPE_F32, 1, ne, f,
                                      sizeof *f * (size_t)c->n_longrope, err);
    }
    return st;
}

elm_status elm_hf_add_partial_freqs(elm_model *m, float partial, elm_error *err) {
    const int n = m->hp.head_dim / 2, turning = (int)((float)m->hp.head_dim * partial / 2);
    float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
    if (!f) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    elm_hf_partial_freqs(f, n, turning);
    elm_status st = elm_model_own_buffer(m, f, err);
    const int64_t ne[1] = {n};
    return st ? st : elm_model_add_tensor(m, "rope_freqs.weight", ELM_TYPE_F32, 1, ne, f,
                                          (size_t)n * sizeof *f, err);
}

void elm_hf_partial_freqs(float *f, int n, int turning) {
    for (int i = 0; i < n; i++) f[i] = i < turning ? 1.0f : ELM_HF_UNTURNED;
}

bool elm_hf_partial_of(const elm_model *m, float *partial) {
    const elm_tensor *t = m->rope_freqs;
    if (!t || t->type != ELM_TYPE_F32) return false;
    const float *f = t->data;
    int64_t turning = 0;
    while (turning < t->ne[0] && f[turning] == 1.0f) turning++;
    for (int64_t i = turning; i < t->ne[0]; i++)
        if (f[i] != ELM_HF_UNTURNED) return false;
    *partial = (float)(2 * turning) / (float)m->hp.head_dim;
    return (int)((float)m->hp.head_dim * *partial / 2) == turning;
}

/* llama.cpp's file type for a checkpoint stored in one float type; 0 (all F32) otherwise. */
static uint32_t file_type_of(const elm_model *m) {
    for (int32_t i = 1; i < m->n_tensors; i++)
        if (m->tensors[i].type != m->tensors[0].type) return 0;
    return m->n_tensors ? elm_type_get(m->tensors[0].type)->file_type : 0;
}

/* Folder name without trailing slashes, as the model's display name. */
static void set_name(elm_model *m, const char *dir) {
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(m->name, sizeof m->name, "%.*s", (int)(end - start), dir + start);
}

elm_status elm_load_hf(elm_model *m, const char *dir, elm_error *err) {
    char path[1100], weights[1100];
    elm_hf_config c = {0};
    elm_status st = join(path, sizeof path, dir, "config.json", err);
    if (!st && !elm_file_exists(path))
        return elm_errorf(err, ELM_ERR_IO, "%s: no config.json (not a Hugging Face model folder)",
                          dir);
    if (!st) st = elm_hf_read_config(path, &c, err);
    if (st) {
        if (c.hp.arch[0]) m->hp = c.hp;
        return st;
    }
    m->hp = c.hp;
    set_name(m, dir);
    if ((st = join(weights, sizeof weights, dir, "model.safetensors", err))) return st;
    /* which experts each layer's stacks have (add_expert) */
    const elm_arch *a = elm_arch_find(m->hp.arch);
    const size_t n_seen = !a || !a->moe ? 0
                          : a->moe_biases ? (size_t)m->hp.n_layers * ELM_HF_MXFP4_PARTS
                                          : (size_t)m->hp.n_layers * ELM_HF_EXPERT_KINDS *
                                                (size_t)m->hp.n_expert;
    uint8_t *seen = calloc(n_seen + 1, 1);
    if (!seen) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", dir);
    if (elm_file_exists(weights)) {
        st = load_single(m, weights, seen, err);
    } else if (!(st = join(weights, sizeof weights, dir, "model.safetensors.index.json", err))) {
        if (!elm_file_exists(weights))
            st = elm_errorf(err, ELM_ERR_IO, "%s: no model.safetensors or "
                            "model.safetensors.index.json", dir);
        else
            st = load_index(m, dir, weights, seen, err);
    }
    if (!st) st = check_complete(m, weights, seen, err);
    free(seen);
    if (!st) st = read_modules(m, dir, err);
    if (!st && c.llama3[0] > 0) st = elm_hf_add_llama3_freqs(m, c.llama3, err);
    if (!st && c.n_longrope > 0) st = elm_hf_add_longrope(m, &c, err);
    if (!st && c.partial_rope > 0) st = elm_hf_add_partial_freqs(m, c.partial_rope, err);
    if (!st) st = elm_hf_read_tokenizer(dir, &c, &m->vocab, err);
    m->file_type = file_type_of(m);
    return st;
}
