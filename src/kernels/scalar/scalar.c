/* Scalar reference kernels: portable C, the test oracle for every SIMD path. Float weight rows
 * are decoded with the type traits' to_float; block weights are read through blocks.h and
 * multiplied with q8 activations in exact integer arithmetic, so each block codec exists once. */
#include <math.h>

#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/kquant.h"

static float dot_f32(const float *a, const float *b, int64_t n) {
    /* Eight partial sums let the compiler vectorize without reassociating a single sum. */
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float s = 0;
    for (; i < n; i++) s += a[i] * b[i];
    for (int k = 0; k < 8; k++) s += acc[k];
    return s;
}

void elm_scalar_quantize_q8(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / ELM_QK;
    int8_t *qs = row;
    float *d = (float *)(qs + cols), *s = d + nb;
    int32_t *sum = (int32_t *)(s + nb);
    for (int64_t b = 0; b < nb; b++, x += ELM_QK, qs += ELM_QK) {
        float amax = 0;
        for (int j = 0; j < ELM_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float db = amax / 127.0f, id = db != 0 ? 1.0f / db : 0.0f;
        int32_t sb = 0;
        for (int j = 0; j < ELM_QK; j++) {
            /* lrintf rounds to nearest even, as the SIMD conversions do */
            qs[j] = (int8_t)lrintf(x[j] * id);
            sb += qs[j];
        }
        d[b] = db;
        s[b] = db * (float)sb;
        sum[b] = sb;
    }
}

/* Block weights: per block, d·(x.d·Σ q·x.qs) + m·x.s (blocks.h's view of the weights). */
static void matmul_q8(const elm_matmul_args *a, int64_t r0, int64_t r1) {
    const elm_weights *w = &a->w;
    const int64_t cols = w->cols, rows = w->rows, nb = cols / ELM_QK;
    const size_t bb = elm_type_get(w->type)->block_bytes;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(r * nb) * bb;
        for (int64_t t = 0; t < a->n_tok; t++) a->y[t * rows + r] = 0;
        for (int64_t b = 0; b < nb; b++) {
            int8_t q[ELM_QK];
            float d, m;
            elm_block_unpack(w->type, row + b * bb, q, &d, &m);
            for (int64_t t = 0; t < a->n_tok; t++) {
                const elm_q8_row x = elm_q8_at(a->xq, cols, t);
                int32_t dot = 0;
                for (int j = 0; j < ELM_QK; j++) dot += q[j] * x.qs[b * ELM_QK + j];
                a->y[t * rows + r] += d * (x.d[b] * (float)dot) + m * x.s[b];
            }
        }
    }
}

/* Float weights: decode each row once into scratch (F32 rows are used in place), then dot it
 * with every token. */
static void matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    const elm_weights *w = &a->w;
    if (elm_type_kquant(w->type)) {
        elm_kquant_matmul(&elm_kq_scalar, a, r0, r1, scratch);
        return;
    }
    if (elm_type_q8_act(w->type)) {
        matmul_q8(a, r0, r1);
        return;
    }
    const int64_t cols = w->cols, rows = w->rows;
    const elm_type_traits *tt = elm_type_get(w->type);
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    for (int64_t r = r0; r < r1; r++) {
        const void *src = (const char *)w->data + (size_t)r * row_bytes;
        const float *row = scratch;
        if (w->type == ELM_TYPE_F32) row = src;
        else tt->to_float(src, scratch, cols);
        for (int64_t t = 0; t < a->n_tok; t++)
            a->y[t * rows + r] = dot_f32(row, a->x + t * cols, cols);
    }
}

void elm_scalar_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

void elm_scalar_softmax_sink(float *x, int64_t n, float sink) {
    float max = sink;
    for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = expf(sink - max); /* 0 without a sink */
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void elm_scalar_softmax(float *x, int64_t n) { elm_scalar_softmax_sink(x, n, -INFINITY); }

void elm_scalar_swiglu(float *out, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void elm_scalar_rope(float *v, int n_heads, int head_dim, int rope_dim, const float *cs) {
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < rope_dim / 2; i++) {
            float *p = v + (size_t)h * head_dim + 2 * i;
            const float a = p[0], b = p[1], c = cs[2 * i], s = cs[2 * i + 1];
            p[0] = a * c - b * s;
            p[1] = a * s + b * c;
        }
}

void elm_scalar_geglu(float *out, const float *g, const float *u, int64_t n) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        out[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x))) * u[i];
    }
}

void elm_scalar_rope_neox(float *v, int n_heads, int head_dim, int rope_dim, const float *cs) {
    const int half = rope_dim / 2;
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < half; i++) {
            float *p = v + (size_t)h * head_dim + i;
            const float a = p[0], b = p[half], c = cs[2 * i], s = cs[2 * i + 1];
            p[0] = a * c - b * s;
            p[half] = a * s + b * c;
        }
}

void elm_rope_freqs_init(elm_rope_freqs *r, int rope_dim, float base, float scale,
                         const float *ff, float *inv_freq) {
    *r = (elm_rope_freqs){rope_dim, base, scale, ff, inv_freq, 1.0f, 0, 0, 0};
    for (int i = 0; i < rope_dim / 2; i++)
        inv_freq[i] = (float)(pow(base, -2.0 * i / rope_dim) * scale / (ff ? ff[i] : 1.0f));
}

/* The dimension at which n_rot rotations fit in n_ctx_orig positions (ggml_rope_yarn_corr_dim,
 * in float as ggml computes it). */
static float yarn_corr_dim(int n_dims, int32_t n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2 * (float)M_PI)) /
           (2 * logf(base));
}

float elm_rope_yarn_ramp(const elm_rope_freqs *r, int i) {
    const float y = ((float)i - r->corr_lo) / fmaxf(0.001f, r->corr_hi - r->corr_lo);
    return 1 - fminf(1, fmaxf(0, y));
}

void elm_rope_freqs_yarn(elm_rope_freqs *r, int32_t n_ctx_orig, float beta_fast, float beta_slow,
                         float *inv_freq) {
    const int n = r->rope_dim;
    r->ext_factor = 1.0f;
    r->corr_lo = fmaxf(0, floorf(yarn_corr_dim(n, n_ctx_orig, beta_fast, r->base)));
    r->corr_hi = fminf((float)(n - 1), ceilf(yarn_corr_dim(n, n_ctx_orig, beta_slow, r->base)));
    r->mscale *= 1.0f + 0.1f * logf(1.0f / r->scale);
    r->inv_freq = inv_freq;
    for (int i = 0; i < n / 2; i++) {
        const double ramp = elm_rope_yarn_ramp(r, i) * r->ext_factor;
        inv_freq[i] = (float)(pow(r->base, -2.0 * i / n) / (r->ff ? r->ff[i] : 1.0f) *
                              (r->scale * (1 - ramp) + ramp));
    }
}

void elm_scalar_rope_cs(const elm_rope_freqs *r, const int32_t *pos, int32_t n, float *cs) {
    for (int32_t t = 0; t < n; t++, cs += r->rope_dim)
        for (int i = 0; i < r->rope_dim / 2; i++) {
            const float angle = (float)pos[t] * r->inv_freq[i];
            cs[2 * i] = cosf(angle) * r->mscale;
            cs[2 * i + 1] = sinf(angle) * r->mscale;
        }
}

void elm_scalar_attention(const float *q, int n_q, const float *k, const float *v, size_t stride,
                          int32_t n_pos, int32_t pos0, int head_dim, float scale,
                          const float *sinks, int32_t n_tok, float *scores, float *out) {
    (void)n_tok;
    (void)pos0;
    for (int i = 0; i < n_q; i++, q += head_dim, out += head_dim) {
        for (int32_t p = 0; p < n_pos; p++)
            scores[p] = dot_f32(q, k + (size_t)p * stride, head_dim) * scale;
        elm_scalar_softmax_sink(scores, n_pos, sinks ? sinks[i] : -INFINITY);
        for (int d = 0; d < head_dim; d++) out[d] = 0;
        for (int32_t p = 0; p < n_pos; p++) {
            const float *vp = v + (size_t)p * stride;
            for (int d = 0; d < head_dim; d++) out[d] += scores[p] * vp[d];
        }
    }
}

static const elm_kernels scalar_kernels = {
    .isa = "scalar",
    .dot_f32 = dot_f32,
    .transpose16 = elm_transpose_x16,
    .quantize_q8 = elm_scalar_quantize_q8,
    .quantize_q8_k = elm_quantize_q8_k,
    .matmul = matmul,
    .rmsnorm = elm_scalar_rmsnorm,
    .softmax = elm_scalar_softmax,
    .swiglu = elm_scalar_swiglu,
    .geglu = elm_scalar_geglu,
    .rope_cs = elm_scalar_rope_cs,
    .rope = elm_scalar_rope,
    .rope_neox = elm_scalar_rope_neox,
    .attention = elm_scalar_attention,
};

const elm_kernels *elm_kernels_scalar(void) { return &scalar_kernels; }
