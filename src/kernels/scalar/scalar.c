/* Scalar reference kernels: portable C, the test oracle for every SIMD path. Weight rows of any
 * type are decoded with the type traits' to_float, so each block codec exists once. */
#include <math.h>

#include "kernels/kernels.h"
#include "kernels/matmul_rows.h"

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

ELM_DEFINE_MATMUL_ROWS(matmul_rows, dot_f32, )

void elm_scalar_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

void elm_scalar_softmax(float *x, int64_t n) {
    float max = x[0];
    for (int64_t i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void elm_scalar_swiglu(float *out, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void elm_scalar_rope(float *v, int n_heads, int head_dim, int rope_dim, const float *inv_freq,
                     int32_t pos) {
    for (int i = 0; i < rope_dim / 2; i++) {
        const float angle = (float)pos * inv_freq[i];
        const float cs = cosf(angle), sn = sinf(angle);
        for (int h = 0; h < n_heads; h++) {
            float *p = v + (size_t)h * head_dim + 2 * i;
            const float a = p[0], b = p[1];
            p[0] = a * cs - b * sn;
            p[1] = a * sn + b * cs;
        }
    }
}

void elm_scalar_attention(const float *q, const float *k, const float *v, size_t stride,
                          int32_t n_pos, int head_dim, float scale, float *scores, float *out) {
    for (int32_t p = 0; p < n_pos; p++) scores[p] = dot_f32(q, k + (size_t)p * stride, head_dim) * scale;
    elm_scalar_softmax(scores, n_pos);
    for (int d = 0; d < head_dim; d++) out[d] = 0;
    for (int32_t p = 0; p < n_pos; p++) {
        const float *vp = v + (size_t)p * stride;
        for (int d = 0; d < head_dim; d++) out[d] += scores[p] * vp[d];
    }
}

static const elm_kernels scalar_kernels = {
    .isa = "scalar",
    .dot_f32 = dot_f32,
    .matmul_rows = matmul_rows,
    .rmsnorm = elm_scalar_rmsnorm,
    .softmax = elm_scalar_softmax,
    .swiglu = elm_scalar_swiglu,
    .rope = elm_scalar_rope,
    .attention = elm_scalar_attention,
};

const elm_kernels *elm_kernels_scalar(void) { return &scalar_kernels; }
