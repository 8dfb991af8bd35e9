/* The short-convolution layer kind of LFM2 (layer_kind.h). From the block's normed input x:
 * [B; C; x̃] = W_in·x, then y = W_out·(C ⊙ conv(B ⊙ x̃)), conv a causal depthwise convolution
 * over time with conv_l taps per channel. Its state per sequence is each channel's last
 * conv_l - 1 inputs B ⊙ x̃, oldest first. Sources: Liquid AI's LFM2 modeling code
 * (Lfm2ShortConv) and llama.cpp's graph of it, whose ssm_conv sums the taps in order in float,
 * each multiply-add fused by its compiler: the same order, fused under --ggml-rounding, gives
 * llama.cpp's bits (the products rounded, a bit off now and then, moved an activation code of
 * a later product and lfm2-8b-a1b's logits by 0.03 after 7 layers of Q4_K). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/builder.h"
#include "model/context_state.h"
#include "model/forward_ops.h"
#include "model/layer_kind.h"

static elm_status bind(elm_model *m, int l, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    elm_layer *L = &m->layers[l];
    char name[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.shortconv.%s", l, suffix), name)
    if (hp->conv_l < 2 || hp->conv_l > 64)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: short convolution of %d taps (shortconv.l_cache: 2..64)", m->path,
                          hp->conv_l);
    elm_status st;
    if ((st = elm_model_bind_tensor(m, &L->conv_kernel, NAME("conv.weight"), hp->conv_l, hp->dim,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->conv_in, NAME("in_proj.weight"), hp->dim, 3 * hp->dim,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->conv_out, NAME("out_proj.weight"), hp->dim, hp->dim,
                                    err)))
        return st;
#undef NAME
    if (elm_type_get(L->conv_kernel->type)->block_size != 1)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is quantized (a float kernel "
                          "expected)", m->path, L->conv_kernel->name);
    return ELM_OK;
}

static int64_t state_floats(const elm_hparams *hp, int l) {
    (void)l;
    return (int64_t)(hp->conv_l - 1) * hp->dim;
}

/* W_in's output [B; C; x̃] and W_out's input per token, then the kernel as floats */
static int64_t scratch_floats(const elm_hparams *hp, int32_t n_batch) {
    return (int64_t)n_batch * 4 * hp->dim + (int64_t)hp->dim * hp->conv_l;
}

void elm_causal_conv(float *x, size_t stride, int32_t n, int channels, int taps, const float *w,
                     float *state, bool fused) {
    const int S = taps - 1;
    float win[64]; /* a channel's last taps inputs, oldest first */
    for (int ch = 0; ch < channels; ch++) {
        float *s = state + (size_t)ch * S;
        const float *wc = w + (size_t)ch * taps;
        memcpy(win, s, sizeof(float) * (size_t)S);
        for (int32_t t = 0; t < n; t++) {
            float *v = x + (size_t)t * stride + ch;
            win[S] = *v;
            float sum = 0.0f;
            for (int k = 0; k < taps; k++)
                sum = fused ? fmaf(win[k], wc[k], sum) : sum + win[k] * wc[k];
            *v = sum;
            memmove(win, win + 1, sizeof(float) * (size_t)S);
        }
        memcpy(s, win, sizeof(float) * (size_t)S);
    }
}

/* One run: the products are done; bcx [n, 3·dim] holds B, C, x̃ per token. Writes C ⊙ conv into
 * bcx's x̃ slots and advances the state [dim, conv_l - 1] (fused: elm_causal_conv's). */
static void conv_run(const elm_hparams *hp, float *bcx, int32_t n, const float *w, float *state,
                     bool fused) {
    const int dim = hp->dim;
    for (int32_t t = 0; t < n; t++) {
        float *row = bcx + (size_t)t * 3 * dim;
        for (int ch = 0; ch < dim; ch++) row[2 * dim + ch] *= row[ch];
    }
    elm_causal_conv(bcx + 2 * dim, (size_t)3 * dim, n, dim, hp->conv_l, w, state, fused);
    for (int32_t t = 0; t < n; t++) {
        float *row = bcx + (size_t)t * 3 * dim;
        for (int ch = 0; ch < dim; ch++) row[2 * dim + ch] *= row[dim + ch];
    }
}

static void mix(elm_context *c, int l, int32_t n, const elm_seq_run *runs, int n_runs) {
    const elm_hparams *hp = &c->m->hp;
    const elm_layer *L = &c->m->layers[l];
    const int dim = hp->dim;
    float *bcx = c->mix, *y = bcx + (size_t)c->n_batch * 3 * dim, *w = y + (size_t)c->n_batch * dim;
    elm_fw_matmul(c, l, L->conv_in, c->xb, n, 0, bcx);
    elm_type_get(L->conv_kernel->type)
        ->to_float(L->conv_kernel->data, w, (int64_t)dim * hp->conv_l);
    for (int i = 0; i < n_runs; i++)
        conv_run(hp, bcx + (size_t)runs[i].t0 * 3 * dim, runs[i].n, w,
                 elm_seq_state(c, runs[i].seq, l), c->k->fused_conv);
    /* out_proj reads the x̃ slots: rows of 3·dim, gathered first */
    for (int32_t t = 0; t < n; t++)
        memcpy(y + (size_t)t * dim, bcx + (size_t)t * 3 * dim + 2 * dim, sizeof(float) * dim);
    elm_fw_matmul(c, l, L->conv_out, y, n, 0, c->xb);
}

const elm_layer_ops elm_layer_shortconv = {
    .name = "short conv",
    .bind = bind,
    .state_floats = state_floats,
    .scratch_floats = scratch_floats,
    .mix = mix,
};
