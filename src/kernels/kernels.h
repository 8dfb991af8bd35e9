/* Compute kernels behind one dispatch table, chosen once from CPU features (or EDGELM_ISA).
 * The scalar table is always built and is the oracle the tests compare other paths against.
 * Kernels are pure functions over caller-owned buffers and never allocate. */
#ifndef EDGELM_KERNELS_H
#define EDGELM_KERNELS_H

#include <stdint.h>
#include "edgelm/model.h"

typedef struct elm_kernels {
    const char *isa; /* "scalar", "avx2", ... */

    /* Σ a[i]·b[i] over n floats. */
    float (*dot_f32)(const float *a, const float *b, int64_t n);

    /* Rows [r0, r1) of Y = X · Wᵀ: W is a matrix [rows, cols] of any supported type (ne = {cols,
     * rows}), X [n_tok, cols] f32, Y [n_tok, rows] f32. scratch holds at least cols floats
     * (a decoded row, reused across the n_tok tokens: the weight is read once per call). */
    void (*matmul_rows)(const elm_tensor *w, const float *x, int64_t n_tok, float *y, int64_t r0,
                        int64_t r1, float *scratch);

    /* out[i] = x[i] / sqrt(mean(x²) + eps) · w[i] over n (RMSNorm, Zhang & Sennrich 2019). */
    void (*rmsnorm)(float *out, const float *x, const float *w, int64_t n, float eps);

    /* In-place softmax over n. */
    void (*softmax)(float *x, int64_t n);

    /* out[i] = silu(g[i]) · u[i] (SwiGLU, Shazeer 2020). */
    void (*swiglu)(float *out, const float *g, const float *u, int64_t n);

    /* Interleaved RoPE (Su et al. 2021): for each of n_heads heads of head_dim floats in v, pairs
     * (v[2i], v[2i+1]), i < rope_dim/2, rotate by angle pos · inv_freq[i]. */
    void (*rope)(float *v, int n_heads, int head_dim, int rope_dim, const float *inv_freq,
                 int32_t pos);

    /* One query head over n_pos cached positions: out[head_dim] = Σ_p softmax_p(q·k_p · scale)
     * v_p. k and v point at position 0 of this KV head; consecutive positions are `stride`
     * floats apart. scores holds n_pos floats of scratch. */
    void (*attention)(const float *q, const float *k, const float *v, size_t stride, int32_t n_pos,
                      int head_dim, float scale, float *scores, float *out);
} elm_kernels;

/* The table for this CPU (EDGELM_ISA=scalar forces the oracle). Never NULL. */
const elm_kernels *elm_kernels_best(void);
const elm_kernels *elm_kernels_scalar(void);

/* The x86-64 AVX2+FMA+F16C table, or NULL when this CPU (or build) lacks it. */
const elm_kernels *elm_kernels_avx2(void);

/* Scalar element-wise kernels SIMD tables reuse where vector code would not pay. */
void elm_scalar_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
void elm_scalar_softmax(float *x, int64_t n);
void elm_scalar_swiglu(float *out, const float *g, const float *u, int64_t n);
void elm_scalar_rope(float *v, int n_heads, int head_dim, int rope_dim, const float *inv_freq,
                     int32_t pos);
void elm_scalar_attention(const float *q, const float *k, const float *v, size_t stride,
                          int32_t n_pos, int head_dim, float scale, float *scores, float *out);

#endif
