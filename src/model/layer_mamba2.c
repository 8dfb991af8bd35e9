/* The Mamba-2 layer kind of Granite 4.0-H (layer_kind.h; Dao & Gu 2024, "Transformers are SSMs").
 * From the block's normed input u: [z; xBC; dt] = W_in·u. xBC goes through a causal depthwise
 * convolution of conv_l taps, its bias and SiLU, giving x (d_inner channels in `heads` heads of P),
 * B and C (d_state each per group of heads). Per head h, with d = softplus(dt_h + dt_bias_h) and
 * the decay a = exp(d·A_h), channel p's state s (d_state floats) takes s = a·s + d·x_p·B and gives
 * y_p = C·s + D_h·x_p. Then y ⊙ silu(z) is RMS-normed by groups of channels (ssm_norm's weights)
 * and W_out maps it back to dim. Its state per sequence: each convolution channel's last conv_l - 1
 * inputs (raw xBC, oldest first), then each channel's s (head-major, [heads, P, d_state]).
 *
 * Source: llama.cpp's build_mamba2_layer and its CPU ssm_conv and ssm_scan (ggml-cpu/ops.cpp),
 * whose order this follows: the scan is sequential over time, token by token, in prefill as in
 * decode (parallel over heads, the convolution over channels); the taps are summed in order
 * (fused as llama.cpp's where the kernel table says so: elm_kernels.fused_conv), and the terms of
 * C·s go into 64 partial sums added as its AVX-512 build adds them. SiLU is the kernels' (swiglu
 * with a factor 1), row by row as ggml applies it, so that --ggml-rounding rounds it as llama.cpp
 * does; the scan's sums differ from llama.cpp's fused ones in the last bits only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/builder.h"
#include "model/context_state.h"
#include "model/forward_ops.h"
#include "model/layer_kind.h"

/* Channels of xBC, the convolution's: x, then B and C of every group. */
static int64_t conv_dim(const elm_hparams *hp) {
    return hp->ssm_inner + 2 * (int64_t)hp->ssm_groups * hp->ssm_state;
}

/* W_in's rows per token: z, xBC, dt. */
static int64_t in_dim(const elm_hparams *hp) {
    return hp->ssm_inner + conv_dim(hp) + hp->ssm_heads;
}

/* The float tensor `name` of layer l, its shape checked ([rows, cols]; rows 0: a vector). */
static elm_status bind_f32(elm_model *m, elm_tensor **slot, int l, const char *suffix,
                           int64_t cols, int64_t rows, elm_error *err) {
    char name[ELM_NAME_MAX];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    elm_status st = elm_model_bind_tensor(m, slot, name, cols, rows, err);
    if (!st && (*slot)->type != ELM_TYPE_F32)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is %s (F32 expected, as llama.cpp's "
                        "ssm_conv and ssm_scan take it)", m->path, name,
                        elm_type_get((*slot)->type)->name);
    return st;
}

static elm_status bind(elm_model *m, int l, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    elm_layer *L = &m->layers[l];
    const int64_t inner = hp->ssm_inner, heads = hp->ssm_heads, groups = hp->ssm_groups;
    if (hp->conv_l < 2 || hp->conv_l > 64)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: convolution of %d taps (ssm.conv_kernel: "
                          "2..64)", m->path, hp->conv_l);
    if (inner < 1 || inner > (1 << 20) || heads < 1 || inner % heads || groups < 1 ||
        heads % groups || hp->ssm_state < 1 || hp->ssm_state > 4096)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: Mamba-2 sizes: inner %lld, %lld heads, %lld "
                          "groups, state %d (ssm.inner_size, ssm.time_step_rank, ssm.group_count, "
                          "ssm.state_size: the heads divide the inner size, the groups the heads)",
                          m->path, (long long)inner, (long long)heads, (long long)groups,
                          hp->ssm_state);
    char name[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
    elm_status st;
    if ((st = elm_model_bind_tensor(m, &L->conv_in, NAME("ssm_in.weight"), hp->dim, in_dim(hp),
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->conv_out, NAME("ssm_out.weight"), inner, hp->dim,
                                    err)) ||
        (st = bind_f32(m, &L->conv_kernel, l, "ssm_conv1d.weight", hp->conv_l, conv_dim(hp),
                       err)) ||
        (st = bind_f32(m, &L->ssm_conv_b, l, "ssm_conv1d.bias", conv_dim(hp), 0, err)) ||
        (st = bind_f32(m, &L->ssm_dt_b, l, "ssm_dt.bias", heads, 0, err)) ||
        (st = bind_f32(m, &L->ssm_a, l, "ssm_a", 1, heads, err)) ||
        (st = bind_f32(m, &L->ssm_d, l, "ssm_d", 1, heads, err)) ||
        (st = bind_f32(m, &L->ssm_norm, l, "ssm_norm.weight", inner / groups, groups, err)))
        return st;
#undef NAME
    return ELM_OK;
}

static int64_t state_floats(const elm_hparams *hp, int l) {
    (void)l;
    return (int64_t)(hp->conv_l - 1) * conv_dim(hp) + (int64_t)hp->ssm_inner * hp->ssm_state;
}

/* W_in's outputs and W_out's inputs per token, then ones for SiLU (conv_dim) */
static int64_t scratch_floats(const elm_hparams *hp, int32_t n_batch) {
    return (int64_t)n_batch * (in_dim(hp) + hp->ssm_inner) + conv_dim(hp);
}

/* What the workers of one mixing share. */
typedef struct {
    elm_context *c;
    const elm_layer *L;
    int l;
    int32_t n;
    const elm_seq_run *runs;
    int n_runs;
    float *zx;         /* [n, in_dim]: z, xBC, dt per token; xBC becomes x, B, C in place */
    float *y;          /* [n, ssm_inner] */
    const float *ones; /* [conv_dim] */
    elm_pool_work items;
} mamba_job;

enum { CONV_BLOCK = 16 }; /* channels per item: ggml's SiLU blocks of 16 lanes stay whole */

/* The convolution, its bias and SiLU of channels [c0, c1) for every run, in batch order (runs of
 * one sequence follow each other), advancing their sequences' convolution states. */
static void conv_channels(const mamba_job *j, int64_t c0, int64_t c1) {
    const elm_hparams *hp = &j->c->m->hp;
    const int64_t stride = in_dim(hp), ch0 = hp->ssm_inner;
    const int K = hp->conv_l, S = K - 1;
    const float *w = j->L->conv_kernel->data, *bias = j->L->ssm_conv_b->data;
    for (int r = 0; r < j->n_runs; r++) {
        const elm_seq_run *run = &j->runs[r];
        float *x = j->zx + (size_t)run->t0 * stride + ch0;
        elm_causal_conv(x + c0, (size_t)stride, run->n, (int)(c1 - c0), K, w + c0 * K,
                        elm_seq_state(j->c, run->seq, j->l) + c0 * S, j->c->k->fused_conv);
        for (int32_t t = 0; t < run->n; t++)
            for (int64_t ch = c0; ch < c1; ch++) x[(size_t)t * stride + ch] += bias[ch];
    }
    for (int32_t t = 0; t < j->n; t++) {
        float *v = j->zx + (size_t)t * stride + ch0 + c0;
        j->c->k->swiglu(v, v, j->ones, c1 - c0);
    }
}

static void conv_worker(void *arg, int ith, int nth) {
    (void)nth;
    mamba_job *j = arg;
    const int64_t channels = conv_dim(&j->c->m->hp);
    long i0, i1;
    while (elm_pool_work_claim(&j->items, ith, 4, &i0, &i1)) {
        const int64_t c1 = (int64_t)i1 * CONV_BLOCK;
        conv_channels(j, (int64_t)i0 * CONV_BLOCK, c1 < channels ? c1 : channels);
    }
}

/* ggml's _mm512_reduce_add_ps as gcc expands it: the halves of 16 lanes added down to one. */
static float reduce16(const float a[16]) {
    float h[8], q[4];
    for (int i = 0; i < 8; i++) h[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) q[i] = h[i + 4] + h[i];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

/* One channel's state s [n] advanced by a token, s = s·dA + B·x_dt, and C·s returned: the terms
 * of whole 64s into 64 partial sums (ggml's four accumulators of 16 lanes, added 0 + 2, 1 + 3,
 * then the two and the lanes), the rest after them in order. */
static float scan_row(float *restrict s, const float *restrict B, const float *restrict C,
                      float dA, float x_dt, int64_t n) {
    float acc[64] = {0};
    const int64_t whole = n & ~(int64_t)63;
    for (int64_t i = 0; i < whole; i += 64)
        for (int k = 0; k < 64; k++) {
            const float v = s[i + k] * dA + B[i + k] * x_dt;
            s[i + k] = v;
            acc[k] += v * C[i + k];
        }
    float lanes[16];
    for (int k = 0; k < 16; k++) lanes[k] = (acc[k] + acc[32 + k]) + (acc[16 + k] + acc[48 + k]);
    float sum = reduce16(lanes);
    for (int64_t i = whole; i < n; i++) {
        const float v = s[i] * dA + B[i] * x_dt;
        s[i] = v;
        sum += v * C[i];
    }
    return sum;
}

/* Head h's scan over every run, then its D skip and its gate silu(z), into y. */
static void scan_head(const mamba_job *j, int64_t h) {
    const elm_hparams *hp = &j->c->m->hp;
    const elm_layer *L = j->L;
    const int64_t stride = in_dim(hp), inner = hp->ssm_inner, N = hp->ssm_state;
    const int64_t P = inner / hp->ssm_heads, g = h / (hp->ssm_heads / hp->ssm_groups);
    /* in a row of zx: z, then x, the groups' B and C (the convolution's outputs), then dt */
    const int64_t x_off = inner + h * P, b_off = 2 * inner + g * N;
    const int64_t c_off = b_off + hp->ssm_groups * N, dt_off = inner + conv_dim(hp);
    const float A = ((const float *)L->ssm_a->data)[h], D = ((const float *)L->ssm_d->data)[h];
    const float dt_bias = ((const float *)L->ssm_dt_b->data)[h];
    for (int r = 0; r < j->n_runs; r++) {
        const elm_seq_run *run = &j->runs[r];
        float *state = elm_seq_state(j->c, run->seq, j->l) +
                       (size_t)(hp->conv_l - 1) * (size_t)conv_dim(hp) + (size_t)(h * P * N);
        for (int32_t t = run->t0; t < run->t0 + run->n; t++) {
            const float *row = j->zx + (size_t)t * stride;
            const float dt = row[dt_off + h] + dt_bias;
            const float d = dt > 20.0f ? dt : logf(1 + expf(dt)); /* softplus, as ggml's */
            const float dA = expf(d * A);
            const float *x = row + x_off;
            float *y = j->y + (size_t)t * inner + h * P;
            for (int64_t p = 0; p < P; p++)
                y[p] = scan_row(state + p * N, row + b_off, row + c_off, dA, x[p] * d, N) +
                       x[p] * D;
            j->c->k->swiglu(y, row + h * P, y, P);
        }
    }
}

static void scan_worker(void *arg, int ith, int nth) {
    (void)nth;
    mamba_job *j = arg;
    long h0, h1;
    while (elm_pool_work_claim(&j->items, ith, 1, &h0, &h1))
        for (long h = h0; h < h1; h++) scan_head(j, h);
}

/* The gated RMSNorm of y, each group of channels of each token on its own. */
static void norm_worker(void *arg, int ith, int nth) {
    (void)nth;
    mamba_job *j = arg;
    const elm_hparams *hp = &j->c->m->hp;
    const int64_t G = hp->ssm_groups, width = hp->ssm_inner / G;
    const float *w = j->L->ssm_norm->data;
    long i0, i1;
    while (elm_pool_work_claim(&j->items, ith, 8, &i0, &i1))
        for (long i = i0; i < i1; i++) {
            float *y = j->y + (size_t)i * (size_t)width; /* token i / G, group i % G */
            j->c->k->rmsnorm(y, y, w + (i % G) * width, width, hp->rms_eps);
        }
}

static void mix(elm_context *c, int l, int32_t n, const elm_seq_run *runs, int n_runs) {
    const elm_hparams *hp = &c->m->hp;
    const elm_layer *L = &c->m->layers[l];
    const int threads = elm_pool_size(c->pool);
    float *zx = c->mix, *y = zx + (size_t)c->n_batch * (size_t)in_dim(hp);
    float *ones = y + (size_t)c->n_batch * (size_t)hp->ssm_inner;
    for (int64_t i = 0; i < conv_dim(hp); i++) ones[i] = 1.0f;
    mamba_job j = {.c = c, .L = L, .l = l, .n = n, .runs = runs, .n_runs = n_runs, .zx = zx,
                   .y = y, .ones = ones};
    elm_fw_matmul(c, l, L->conv_in, c->xb, n, 0, zx);
    elm_pool_work_init(&j.items, (long)((conv_dim(hp) + CONV_BLOCK - 1) / CONV_BLOCK), threads);
    elm_pool_run_shared(c->pool, conv_worker, &j);
    elm_pool_work_init(&j.items, (long)hp->ssm_heads, threads);
    elm_pool_run_shared(c->pool, scan_worker, &j);
    elm_pool_work_init(&j.items, (long)n * hp->ssm_groups, threads);
    elm_pool_run_shared(c->pool, norm_worker, &j);
    elm_fw_matmul(c, l, L->conv_out, y, n, 0, c->xb);
}

const elm_layer_ops elm_layer_mamba2 = {
    .name = "Mamba-2",
    .bind = bind,
    .state_floats = state_floats,
    .scratch_floats = scratch_floats,
    .mix = mix,
};
