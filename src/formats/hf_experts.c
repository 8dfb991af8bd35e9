/* gpt-oss's experts as its Hugging Face checkpoints hold them (transformers' GptOssExperts), all
 * of a layer's in one tensor each, and GGUF's stacks, as llama.cpp's converter turns the one into
 * the other (conversion/gpt_oss.py: transposed, gate and up split by alternate columns); the
 * original checkpoint's MXFP4 experts (*_blocks, *_scales) are repacked into ggml's MXFP4 blocks,
 * byte for byte what that converter writes (repack_mxfp4), never dequantized. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/mxfp4.h"
#include "formats/hf.h"
#include "formats/loaders.h"
#include "formats/safetensors.h"
#include "model/arch.h"

const char *const elm_hf_fused_names[ELM_HF_FUSED_KINDS] = {"gate_up_proj", "gate_up_proj_bias",
                                                            "down_proj"};

/* The index in names[n] of what follows model.layers.N.mlp.experts. in hf (N in *layer), or -1. */
static int experts_kind(const char *hf, long *layer, const char *const *names, int n) {
    int used = 0;
    if (sscanf(hf, "model.layers.%ld.mlp.experts.%n", layer, &used) != 1 || used == 0 ||
        *layer < 0)
        return -1;
    for (int k = 0; k < n; k++)
        if (!strcmp(hf + used, names[k])) return k;
    return -1;
}

int elm_hf_fused_of(const char *hf, long *layer) {
    return experts_kind(hf, layer, elm_hf_fused_names, ELM_HF_FUSED_KINDS);
}

/* One element of elem bytes (2 or 4) from src[i] to dst[o]. */
static void copy_elem(char *dst, size_t o, const char *src, size_t i, size_t elem) {
    memcpy(dst + o * elem, src + i * elem, elem);
}

void elm_hf_gate_up(char *gate_up, char *gate, char *up, int64_t n, int64_t rows, int64_t ff,
                    size_t elem, bool fuse) {
    for (int64_t e = 0; e < n; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t f = 0; f < ff; f++) {
                const size_t g = (size_t)((e * ff + f) * rows + r), hf = (size_t)((e * rows + r) *
                                                                                    2 * ff + 2 * f);
                if (fuse) {
                    copy_elem(gate_up, hf, gate, g, elem);
                    copy_elem(gate_up, hf + 1, up, g, elem);
                } else {
                    copy_elem(gate, g, gate_up, hf, elem);
                    copy_elem(up, g, gate_up, hf + 1, elem);
                }
            }
}

void elm_hf_transpose_experts(char *dst, const char *src, int64_t n, int64_t rows, int64_t cols,
                              size_t elem) {
    for (int64_t e = 0; e < n; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                copy_elem(dst, (size_t)((e * cols + c) * rows + r), src,
                          (size_t)((e * rows + r) * cols + c), elem);
}

/* An owned buffer of nbytes for the model, or NULL (an error in *err). */
static char *owned(elm_model *m, const char *src, size_t nbytes, elm_error *err) {
    char *p = malloc(nbytes ? nbytes : 1);
    if (!p) {
        elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
        return NULL;
    }
    return elm_model_own_buffer(m, p, err) ? NULL : p;
}

elm_status elm_hf_add_fused(elm_model *m, const char *src, const elm_st_tensor *t, int kind,
                            long layer, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const int64_t E = hp->n_expert, dim = hp->dim, ff = hp->expert_ffn_dim;
    const int64_t want[ELM_HF_FUSED_KINDS][3] = {{E, dim, 2 * ff}, {E, 2 * ff, 0}, {E, ff, dim}};
    const int n_dims = kind == ELM_HF_FUSED_GATE_UP_BIAS ? 2 : 3;
    bool same = t->n_dims == n_dims && layer < hp->n_layers;
    for (int d = 0; same && d < n_dims; d++) same = t->shape[d] == want[kind][d];
    if (!same)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions [%lld, %lld, "
                          "...], expected [%lld, %lld%s] for layer %ld of %d (config.json's "
                          "num_local_experts, hidden_size, intermediate_size)", src, t->name,
                          t->n_dims, (long long)t->shape[0],
                          (long long)(t->n_dims > 1 ? t->shape[1] : 0), (long long)want[kind][0],
                          (long long)want[kind][1], n_dims == 3 ? ", ..." : "", layer,
                          hp->n_layers);
    char name[2][ELM_NAME_MAX];
    const char *kinds[2] = {"gate", "up"};
    for (int i = 0; i < 2; i++)
        snprintf(name[i], sizeof name[i], "blk.%ld.ffn_%s_exps.%s", layer,
                 kind == ELM_HF_FUSED_DOWN ? "down" : kinds[i],
                 kind == ELM_HF_FUSED_GATE_UP_BIAS ? "bias" : "weight");
    const elm_type type = kind == ELM_HF_FUSED_GATE_UP_BIAS ? ELM_TYPE_F32 : t->type;
    const size_t elem = elm_type_get(type)->block_bytes;
    const void *in = t->data;
    if (type != t->type) { /* biases are F32 in GGUF */
        float *f = (float *)owned(m, src, (size_t)(E * 2 * ff) * sizeof *f, err);
        if (!f) return ELM_ERR_NOMEM;
        elm_type_get(t->type)->to_float(t->data, f, E * 2 * ff);
        in = f;
    }
    if (kind == ELM_HF_FUSED_DOWN) {
        char *down = owned(m, src, t->nbytes, err);
        if (!down) return ELM_ERR_NOMEM;
        elm_hf_transpose_experts(down, in, E, ff, dim, elem);
        const int64_t ne[3] = {ff, dim, E};
        return elm_model_add_tensor(m, name[0], type, 3, ne, down, t->nbytes, err);
    }
    const int64_t rows = kind == ELM_HF_FUSED_GATE_UP ? dim : 1;
    const size_t half = (size_t)(E * rows * ff) * elem;
    char *gate = owned(m, src, half, err), *up = gate ? owned(m, src, half, err) : NULL;
    if (!up) return ELM_ERR_NOMEM;
    elm_hf_gate_up((char *)in, gate, up, E, rows, ff, elem, false);
    const int64_t ne_w[3] = {dim, ff, E}, ne_b[2] = {ff, E};
    const int64_t *ne = rows > 1 ? ne_w : ne_b;
    elm_status st = elm_model_add_tensor(m, name[0], type, rows > 1 ? 3 : 2, ne, gate, half, err);
    return st ? st : elm_model_add_tensor(m, name[1], type, rows > 1 ? 3 : 2, ne, up, half, err);
}

/* ---- the original checkpoint's MXFP4 experts ---------------------------------------------- */

const char *const elm_hf_mxfp4_names[ELM_HF_MXFP4_PARTS] = {
    "gate_up_proj_blocks", "gate_up_proj_scales", "down_proj_blocks", "down_proj_scales"};

int elm_hf_mxfp4_of(const char *hf, long *layer) {
    return experts_kind(hf, layer, elm_hf_mxfp4_names, ELM_HF_MXFP4_PARTS);
}

/* ggml's 16 code bytes from a checkpoint's: there weight n is nibble n (low nibble first, byte
 * n/2), in ggml weight j < 16 the low nibble of byte j and weight j + 16 its high nibble. */
static void repack_codes(uint8_t *dst, const uint8_t *src) {
    for (int j = 0; j < 16; j++) {
        const int a = j, b = j + 16;
        const uint8_t lo = (uint8_t)((src[a / 2] >> (4 * (a & 1))) & 0x0f);
        const uint8_t hi = (uint8_t)((src[b / 2] >> (4 * (b & 1))) & 0x0f);
        dst[j] = (uint8_t)(lo | hi << 4);
    }
}

/* GGUF's MXFP4 stack `name` [cols, rows, E], found or added zeroed (an owned buffer). */
static elm_status mxfp4_stack(elm_model *m, const char *src, const char *hf, const char *name,
                              int64_t cols, int64_t rows, elm_tensor **out, elm_error *err) {
    const int64_t E = m->hp.n_expert, ne[3] = {cols, rows, E};
    const size_t nbytes = (size_t)(E * rows * (cols / ELM_QK)) * ELM_MXFP4_BLOCK_BYTES;
    *out = elm_model_find(m, name);
    if (!*out) {
        char *p = owned(m, src, nbytes, err);
        if (!p) return ELM_ERR_NOMEM;
        memset(p, 0, nbytes); /* scale 0 and code 0 until both halves are read */
        elm_status st = elm_model_add_tensor(m, name, ELM_TYPE_MXFP4, 3, ne, p, nbytes, err);
        if (st) return st;
        *out = elm_model_find(m, name);
    } else if ((*out)->type != ELM_TYPE_MXFP4) {
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' gives '%s' in MXFP4, which the "
                          "checkpoint also holds as %s", src, hf, name,
                          elm_type_get((*out)->type)->name);
    }
    return ELM_OK;
}

elm_status elm_hf_add_mxfp4(elm_model *m, const char *src, const elm_st_tensor *t, int part,
                            long layer, uint8_t *seen, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const bool down = part >= ELM_HF_MXFP4_DOWN_BLOCKS, scales = part % 2 == 1;
    const int64_t E = hp->n_expert, dim = hp->dim, ff = hp->expert_ffn_dim;
    const int64_t rows = down ? dim : 2 * ff, cols = down ? ff : dim, nb = cols / ELM_QK;
    if (layer >= hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is for layer %ld but config.json "
                          "has %d layers", src, t->name, layer, hp->n_layers);
    if (t->type != ELM_ST_U8)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is %s, MXFP4 %s are U8", src,
                          t->name, elm_type_get(t->type)->name, scales ? "scales" : "blocks");
    if (cols % ELM_QK)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s': MXFP4 rows of %lld are not "
                          "whole 32-weight blocks (config.json's %s)", src, t->name,
                          (long long)cols, down ? "intermediate_size" : "hidden_size");
    const int64_t want[4] = {E, rows, nb, 16};
    bool same = t->n_dims == (scales ? 3 : 4);
    for (int d = 0; same && d < t->n_dims; d++) same = t->shape[d] == want[d];
    if (!same)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions [%lld, %lld, "
                          "...], expected [%lld, %lld, %lld%s] for config.json's "
                          "num_local_experts, hidden_size, intermediate_size", src, t->name,
                          t->n_dims, (long long)t->shape[0],
                          (long long)(t->n_dims > 1 ? t->shape[1] : 0), (long long)E,
                          (long long)rows, (long long)nb, scales ? "" : ", 16");
    uint8_t *done = &seen[(size_t)layer * ELM_HF_MXFP4_PARTS + (size_t)part];
    if (*done)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: duplicate tensor '%s'", src, t->name);
    const uint8_t *in = t->data;
    if (scales)
        for (int64_t i = 0; i < E * rows * nb; i++)
            if (in[i] == ELM_MXFP4_BAD_SCALE)
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' scale %lld is 0xff "
                                  "(E8M0's NaN)", src, t->name, (long long)i);
    char name[2][ELM_NAME_MAX];
    elm_tensor *stack[2] = {NULL, NULL};
    for (int i = 0; i < (down ? 1 : 2); i++) {
        snprintf(name[i], sizeof name[i], "blk.%ld.ffn_%s_exps.weight", layer,
                 down ? "down" : i ? "up" : "gate");
        elm_status st = mxfp4_stack(m, src, t->name, name[i], cols, down ? dim : ff, &stack[i],
                                    err);
        if (st) return st;
    }
    /* gate_up's rows alternate gate and up (llama.cpp's converter: [:, ::2] and [:, 1::2]) */
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < rows; r++) {
            const int64_t row = e * (down ? dim : ff) + (down ? r : r / 2);
            uint8_t *dst = (uint8_t *)stack[down ? 0 : r % 2]->data +
                           (size_t)(row * nb) * ELM_MXFP4_BLOCK_BYTES;
            for (int64_t b = 0; b < nb; b++, dst += ELM_MXFP4_BLOCK_BYTES) {
                const size_t i = (size_t)((e * rows + r) * nb + b);
                if (scales)
                    dst[0] = in[i];
                else
                    repack_codes(dst + 1, in + i * 16);
            }
        }
    *done = 1;
    return ELM_OK;
}
