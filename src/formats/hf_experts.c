/* gpt-oss's experts as its Hugging Face checkpoints hold them (transformers' GptOssExperts), all
 * of a layer's in one tensor each, and GGUF's stacks, as llama.cpp's converter turns the one into
 * the other (conversion/gpt_oss.py: transposed, gate and up split by alternate columns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/hf.h"
#include "formats/loaders.h"
#include "formats/safetensors.h"
#include "model/arch.h"

const char *const elm_hf_fused_names[ELM_HF_FUSED_KINDS] = {"gate_up_proj", "gate_up_proj_bias",
                                                            "down_proj"};

int elm_hf_fused_of(const char *hf, long *layer) {
    int used = 0;
    if (sscanf(hf, "model.layers.%ld.mlp.experts.%n", layer, &used) != 1 || used == 0 ||
        *layer < 0)
        return -1;
    for (int k = 0; k < ELM_HF_FUSED_KINDS; k++)
        if (!strcmp(hf + used, elm_hf_fused_names[k])) return k;
    return -1;
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
