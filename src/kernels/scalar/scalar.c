/* Scalar reference kernels: portable C, the test oracle for every SIMD path. Weight rows of any
 * type are decoded with the type traits' to_float, so each block codec exists once. */
#include <math.h>

#include "kernels/kernels.h"

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

static void matmul_rows(const elm_tensor *w, const float *x, int64_t n_tok, float *y, int64_t r0,
                        int64_t r1, float *scratch) {
    const int64_t cols = w->ne[0], rows = w->ne[1];
    const elm_type_traits *tt = elm_type_get(w->type);
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    for (int64_t r = r0; r < r1; r++) {
        const void *src = (const char *)w->data + (size_t)r * row_bytes;
        const float *row = scratch;
        if (w->type == ELM_TYPE_F32) row = src;
        else tt->to_float(src, scratch, cols);
        for (int64_t t = 0; t < n_tok; t++) y[t * rows + r] = dot_f32(row, x + t * cols, cols);
    }
}

static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

static void softmax(float *x, int64_t n) {
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

static void swiglu(float *out, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static const elm_kernels scalar_kernels = {
    .isa = "scalar",
    .dot_f32 = dot_f32,
    .matmul_rows = matmul_rows,
    .rmsnorm = rmsnorm,
    .softmax = softmax,
    .swiglu = swiglu,
};

const elm_kernels *elm_kernels_scalar(void) { return &scalar_kernels; }
