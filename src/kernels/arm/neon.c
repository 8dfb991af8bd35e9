/* ARM64 NEON kernels with the dot-product extension (ARMv8.2 sdot: four int8 products summed
 * into each int32 lane), as on every Snapdragon since the 855. Compiled for ELM_TARGET_NEON
 * (targets.h) while the rest of the build stays baseline ARMv8; chosen at run time from the
 * kernel's HWCAP.
 *
 * sdot multiplies signed by signed, so unlike x86 no sign juggling is needed: 4/5-bit codes go in
 * as they are (0..15, 0..31) and their zero point comes off in integers by starting the lane sums
 * at -(o/4)·Σx.qs; Q8_0 quants multiply directly. Prefill uses the tiles of gemm.h: 4 vectors of
 * 4 rows per 4 columns, with sdot's lane form broadcasting 4 activation bytes from a register. */
#include "kernels/kernels.h"
#include "kernels/targets.h"
#include "kernels/kquant.h"

#if defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>
#include <sys/auxv.h>

#include "kernels/gemm.h"


/* ---- floats ---- */

NEON_FN static float dot_f32(const float *a, const float *b, int64_t n) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), acc2 = vdupq_n_f32(0),
                acc3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        acc2 = vfmaq_f32(acc2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        acc3 = vfmaq_f32(acc3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Four 16-bit floats (F16 or BF16) as float lanes. */
NEON_INLINE float32x4_t load4_half(const uint8_t *p, bool bf16) {
    const uint16x4_t h = vld1_u16((const uint16_t *)p);
    if (bf16) return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

NEON_INLINE float dot_half(const uint8_t *w, const float *x, int64_t n, bool bf16) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0), acc2 = vdupq_n_f32(0),
                acc3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = vfmaq_f32(acc0, load4_half(w + 2 * i, bf16), vld1q_f32(x + i));
        acc1 = vfmaq_f32(acc1, load4_half(w + 2 * i + 8, bf16), vld1q_f32(x + i + 4));
        acc2 = vfmaq_f32(acc2, load4_half(w + 2 * i + 16, bf16), vld1q_f32(x + i + 8));
        acc3 = vfmaq_f32(acc3, load4_half(w + 2 * i + 24, bf16), vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        acc0 = vfmaq_f32(acc0, load4_half(w + 2 * i, bf16), vld1q_f32(x + i));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, w + 2 * i, 2);
        s += (bf16 ? elm_bf16_to_f32(h) : elm_f16_to_f32(h)) * x[i];
    }
    return s;
}

/* e^x, as x86_body.h's exp256: Cephes expf polynomial after x = n·ln2 + r. */
NEON_INLINE float32x4_t exp4(float32x4_t x) {
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
    const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), vmulq_f32(p, r), r);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

/* The softmax of x[0..n) and one more logit, sink (-INFINITY: none), whose share is dropped. */
NEON_FN static void softmax_sink(float *x, int64_t n, float sink) {
    float max = sink;
    for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    int64_t i = 0;
    float32x4_t sv = vdupq_n_f32(0);
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(max)));
        vst1q_f32(x + i, e);
        sv = vaddq_f32(sv, e);
    }
    double sum = vaddvq_f32(sv) + (double)expf(sink - max);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}

NEON_FN static void softmax(float *x, int64_t n) { softmax_sink(x, n, -INFINITY); }

NEON_FN static void swiglu(float *out, const float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t gv = vld1q_f32(g + i);
        const float32x4_t den = vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(gv)));
        vst1q_f32(out + i, vmulq_f32(vdivq_f32(gv, den), vld1q_f32(u + i)));
    }
    for (; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

NEON_FN static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    float32x4_t acc = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) acc = vfmaq_f32(acc, vld1q_f32(x + i), vld1q_f32(x + i));
    double ss = vaddvq_f32(acc);
    for (; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(out + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
    for (; i < n; i++) out[i] = x[i] * scale * w[i];
}

NEON_FN static void attention_head(const float *q, const float *k, const float *v, size_t stride,
                                   int32_t n_pos, int head_dim, float scale, float sink,
                                   float *scores, float *out) {
    for (int32_t p = 0; p < n_pos; p++)
        scores[p] = dot_f32(q, k + (size_t)p * stride, head_dim) * scale;
    softmax_sink(scores, n_pos, sink);
    int d = 0;
    for (; d + 16 <= head_dim; d += 16) {
        float32x4_t o0 = vdupq_n_f32(0), o1 = vdupq_n_f32(0), o2 = vdupq_n_f32(0),
                    o3 = vdupq_n_f32(0);
        for (int32_t p = 0; p < n_pos; p++) {
            const float *vp = v + (size_t)p * stride + d;
            o0 = vfmaq_n_f32(o0, vld1q_f32(vp), scores[p]);
            o1 = vfmaq_n_f32(o1, vld1q_f32(vp + 4), scores[p]);
            o2 = vfmaq_n_f32(o2, vld1q_f32(vp + 8), scores[p]);
            o3 = vfmaq_n_f32(o3, vld1q_f32(vp + 12), scores[p]);
        }
        vst1q_f32(out + d, o0), vst1q_f32(out + d + 4, o1);
        vst1q_f32(out + d + 8, o2), vst1q_f32(out + d + 12, o3);
    }
    for (; d < head_dim; d++) {
        float o = 0;
        for (int32_t p = 0; p < n_pos; p++) o += scores[p] * v[(size_t)p * stride + d];
        out[d] = o;
    }
}

NEON_FN static void attention(const float *q, int n_q, const float *k, const float *v,
                              size_t stride, int32_t n_pos, int32_t pos0, int head_dim,
                              float scale, const float *sinks, int32_t n_tok, float *scores,
                              float *out) {
    (void)n_tok;
    (void)pos0;
    for (int i = 0; i < n_q; i++)
        attention_head(q + i * head_dim, k, v, stride, n_pos, head_dim, scale,
                       sinks ? sinks[i] : -INFINITY, scores, out + i * head_dim);
}

/* ---- q8 activations ---- */

NEON_FN static void quantize_q8(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / ELM_QK;
    int8_t *qs = row;
    float *d = (float *)(qs + cols), *s = d + nb;
    int32_t *sum = (int32_t *)(s + nb);
    for (int64_t b = 0; b < nb; b++, x += ELM_QK) {
        float32x4_t v[8], amax = vdupq_n_f32(0);
        for (int k = 0; k < 8; k++) {
            v[k] = vld1q_f32(x + 4 * k);
            amax = vmaxq_f32(amax, vabsq_f32(v[k]));
        }
        const float db = vmaxvq_f32(amax) / 127.0f, id = db != 0 ? 1.0f / db : 0.0f;
        int32x4_t total = vdupq_n_s32(0);
        int16x8_t h[4];
        for (int k = 0; k < 4; k++) {
            /* vcvtnq rounds to nearest even, as lrintf does */
            const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[2 * k], id));
            const int32x4_t c = vcvtnq_s32_f32(vmulq_n_f32(v[2 * k + 1], id));
            total = vaddq_s32(total, vaddq_s32(a, c));
            h[k] = vcombine_s16(vmovn_s32(a), vmovn_s32(c));
        }
        vst1q_s8(qs + b * ELM_QK, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
        vst1q_s8(qs + b * ELM_QK + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
        d[b] = db;
        sum[b] = vaddvq_s32(total);
        s[b] = db * (float)sum[b];
    }
}

/* A q8_K row: elm_quantize_q8_k's bytes (llama.cpp's quantize_row_q8_K_ref). vcvtnq rounds
 * iscale·x to nearest even, as the oracle's float adder does; a super-block with a NaN or an
 * infinity, whose products that trick turns into 0, goes to the oracle. */
NEON_FN static void quantize_q8_k(const float *x, int64_t cols, void *row) {
    const int64_t nsb = cols / ELM_QK_K;
    int8_t *qs = row;
    float *d = (float *)(qs + cols);
    int16_t *bsum = (int16_t *)(d + nsb);
    const float32x4_t inf = vdupq_n_f32(INFINITY);
    for (int64_t s = 0; s < nsb; s++, x += ELM_QK_K, qs += ELM_QK_K, bsum += ELM_QK_K / 16) {
        float32x4_t amax = vdupq_n_f32(0);
        uint32x4_t finite = vdupq_n_u32(~0u);
        for (int j = 0; j < ELM_QK_K; j += 4) {
            const float32x4_t a = vabsq_f32(vld1q_f32(x + j));
            amax = vmaxq_f32(amax, a);
            finite = vandq_u32(finite, vcltq_f32(a, inf)); /* false for NaN and ±inf */
        }
        const float am = vmaxvq_f32(amax);
        if (am == 0 || vminvq_u32(finite) == 0) {
            elm_quantize_q8_k_block(x, qs, &d[s], bsum);
            continue;
        }
        /* the first value of largest magnitude */
        float max = 0;
        for (int j = 0; j < ELM_QK_K && max == 0; j += 4)
            if (vmaxvq_u32(vceqq_f32(vabsq_f32(vld1q_f32(x + j)), vdupq_n_f32(am))))
                for (int i = 3; i >= 0; i--)
                    if (fabsf(x[j + i]) == am) max = x[j + i];
        const float iscale = -127.0f / max;
        for (int g = 0; g < ELM_QK_K / 16; g++) {
            int32x4_t q[4];
            for (int k = 0; k < 4; k++)
                q[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale));
            bsum[g] = (int16_t)vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3])));
            /* |q| <= 127: the narrowing is exact */
            const int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
            const int16x8_t h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
            vst1q_s8(qs + 16 * g, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
        }
        d[s] = 1 / iscale;
    }
}

/* ---- block weights · q8 activations (decode) ---- */

/* A block's f16 scale: one fcvt (ARMv8 base). elm_f16_to_f32 is a call, which in the block loops
 * cost more than the block's own arithmetic and made the compiler spill the accumulators. */
NEON_INLINE float f16_at(const uint8_t *p) {
    __fp16 h;
    memcpy(&h, p, 2);
    return (float)h;
}

/* Fifth bits of weights 0..15 (half 0) or 16..31 (half 1): 0x10 where bit j of qh is set. */
NEON_INLINE uint8x16_t fifth_bits(const uint8_t *qh, int half) {
    static const uint8_t spread[2][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
                                          {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3}};
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint32_t h;
    memcpy(&h, qh, 4);
    const uint8x16_t bytes =
        vqtbl1q_u8(vreinterpretq_u8_u32(vdupq_n_u32(h)), vld1q_u8(spread[half]));
    return vandq_u8(vtstq_u8(bytes, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

/* One 4/5-bit block: the integer dot with the zero point taken off, d·x.d and m·x.s applied. */
NEON_INLINE float32x4_t block_q4q5(const uint8_t *b, const elm_q8_row *x, int64_t i,
                                   float32x4_t acc, float *corr, bool asym, bool five) {
    const float d = f16_at(b);
    const uint8_t *p = b + (asym ? 4 : 2);
    const uint8x16_t v = vld1q_u8(p + (five ? 4 : 0));
    uint8x16_t lo = vandq_u8(v, vdupq_n_u8(0x0f)), hi = vshrq_n_u8(v, 4);
    if (five) {
        lo = vorrq_u8(lo, fifth_bits(p, 0));
        hi = vorrq_u8(hi, fifth_bits(p, 1));
    }
    const int zero_point_per_lane = asym ? 0 : five ? 4 : 2;
    int32x4_t dot = vdupq_n_s32(-zero_point_per_lane * x->sum[i]);
    dot = vdotq_s32(dot, vreinterpretq_s8_u8(lo), vld1q_s8(x->qs + i * ELM_QK));
    dot = vdotq_s32(dot, vreinterpretq_s8_u8(hi), vld1q_s8(x->qs + i * ELM_QK + 16));
    if (asym) *corr += f16_at(b + 2) * x->s[i];
    return vfmaq_n_f32(acc, vcvtq_f32_s32(dot), d * x->d[i]);
}

NEON_INLINE float dot_q4q5(const uint8_t *b, const elm_q8_row *x, int64_t nb, bool asym,
                           bool five) {
    const size_t bb = 18 + (asym ? 2 : 0) + (five ? 4 : 0);
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    float corr = 0;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2, b += 2 * bb) {
        acc0 = block_q4q5(b, x, i, acc0, &corr, asym, five);
        acc1 = block_q4q5(b + bb, x, i + 1, acc1, &corr, asym, five);
    }
    if (i < nb) acc0 = block_q4q5(b, x, i, acc0, &corr, asym, five);
    return vaddvq_f32(vaddq_f32(acc0, acc1)) + corr;
}

NEON_INLINE float32x4_t block_q8_0(const uint8_t *b, const elm_q8_row *x, int64_t i,
                                   float32x4_t acc) {
    int32x4_t dot =
        vdotq_s32(vdupq_n_s32(0), vld1q_s8((const int8_t *)b + 2), vld1q_s8(x->qs + i * ELM_QK));
    dot = vdotq_s32(dot, vld1q_s8((const int8_t *)b + 18), vld1q_s8(x->qs + i * ELM_QK + 16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(dot),
                       f16_at(b) * x->d[i]);
}

NEON_FN static float row_q8_0(const uint8_t *b, const elm_q8_row *x, int64_t nb) {
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2, b += 68) {
        acc0 = block_q8_0(b, x, i, acc0);
        acc1 = block_q8_0(b + 34, x, i + 1, acc1);
    }
    if (i < nb) acc0 = block_q8_0(b, x, i, acc0);
    return vaddvq_f32(vaddq_f32(acc0, acc1));
}

/* One weight row against token t (float or q8 activations by type). */
NEON_FN static float row_dot(const elm_matmul_args *a, const uint8_t *row, int64_t t) {
    const int64_t cols = a->w.cols, nb = cols / ELM_QK;
    const float *x = a->x + t * cols;
    elm_q8_row q = {0};
    if (elm_type_q8_act(a->w.type)) q = elm_q8_at(a->xq, cols, t);
    switch (a->w.type) {
    case ELM_TYPE_F32: return dot_f32((const float *)row, x, cols);
    case ELM_TYPE_F16: return dot_half(row, x, cols, false);
    case ELM_TYPE_BF16: return dot_half(row, x, cols, true);
    case ELM_TYPE_Q8_0: return row_q8_0(row, &q, nb);
    case ELM_TYPE_Q4_0: return dot_q4q5(row, &q, nb, false, false);
    case ELM_TYPE_Q4_1: return dot_q4q5(row, &q, nb, true, false);
    case ELM_TYPE_Q5_0: return dot_q4q5(row, &q, nb, false, true);
    default: return dot_q4q5(row, &q, nb, true, true);
    }
}

NEON_FN static void matvec(const elm_matmul_args *a, int64_t r0, int64_t r1) {
    const int64_t cols = a->w.cols, rows = a->w.rows;
    const size_t row_bytes = elm_row_bytes(a->w.type, cols);
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)a->w.data + (size_t)r * row_bytes;
        for (int64_t t = 0; t < a->n_tok; t++) a->y[t * rows + r] = row_dot(a, row, t);
    }
}

/* ---- prefill micro-kernels (gemm.h): a tile's 16 rows are four vectors of 4 ---- */

enum { Q8_TOKENS = 4, F32_TOKENS = 6, GEMM_MIN_TOKENS = 4 };

NEON_INLINE void tile_q8_n(const uint8_t *tile, int64_t nb, const void *xq, float *y, int64_t ldy,
                           int n_rows, const int nt) {
    float32x4_t acc[Q8_TOKENS][4];
    elm_q8_row x[Q8_TOKENS];
    for (int t = 0; t < nt; t++) {
        for (int h = 0; h < 4; h++) acc[t][h] = vdupq_n_f32(0);
        x[t] = elm_q8_at(xq, nb * ELM_QK, t);
    }
    for (int64_t b = 0; b < nb; b++, tile += ELM_TILE_Q8_BYTES) {
        const float *dm = (const float *)(tile + ELM_TILE_ROWS * ELM_QK);
        for (int t = 0; t < nt; t++) {
            const int8x16_t a0 = vld1q_s8(x[t].qs + b * ELM_QK),
                            a1 = vld1q_s8(x[t].qs + b * ELM_QK + 16);
            int32x4_t s[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
            for (int h = 0; h < 4; h++) {
                const int8_t *w = (const int8_t *)tile + 16 * h;
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 0 * 64), a0, 0);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 1 * 64), a0, 1);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 2 * 64), a0, 2);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 3 * 64), a0, 3);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 4 * 64), a1, 0);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 5 * 64), a1, 1);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 6 * 64), a1, 2);
                s[h] = vdotq_laneq_s32(s[h], vld1q_s8(w + 7 * 64), a1, 3);
                const float32x4_t sc = vmulq_n_f32(vld1q_f32(dm + 4 * h), x[t].d[b]);
                acc[t][h] = vfmaq_f32(acc[t][h], vcvtq_f32_s32(s[h]), sc);
                acc[t][h] = vfmaq_n_f32(acc[t][h], vld1q_f32(dm + 16 + 4 * h), x[t].s[b]);
            }
        }
    }
    for (int t = 0; t < nt; t++) {
        float out[ELM_TILE_ROWS];
        for (int h = 0; h < 4; h++) vst1q_f32(out + 4 * h, acc[t][h]);
        memcpy(y + t * ldy, out, sizeof(float) * (size_t)n_rows);
    }
}

NEON_FN static void tile_q8(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                            int64_t ldy, int n_rows) {
    switch (n_tok) {
    case 1: tile_q8_n(tile, nb, xq, y, ldy, n_rows, 1); break;
    case 2: tile_q8_n(tile, nb, xq, y, ldy, n_rows, 2); break;
    case 3: tile_q8_n(tile, nb, xq, y, ldy, n_rows, 3); break;
    default: tile_q8_n(tile, nb, xq, y, ldy, n_rows, 4); break;
    }
}

/* Up to 6 tokens of 16 rows: 24 accumulators, 4 weight vectors and the broadcasts in the 32
 * registers (ELM_FOR_6_TOKENS). */
#define F32_INIT(k)                                                                                \
    if (nt > k) {                                                                                  \
        float in[ELM_TILE_ROWS] = {0};                                                             \
        if (add) memcpy(in, y + k * ldy, sizeof(float) * (size_t)n_rows);                          \
        a##k##0 = vld1q_f32(in), a##k##1 = vld1q_f32(in + 4);                                      \
        a##k##2 = vld1q_f32(in + 8), a##k##3 = vld1q_f32(in + 12);                                 \
    }
#define F32_FMA(k)                                                                                 \
    if (nt > k) {                                                                                  \
        a##k##0 = vfmaq_n_f32(a##k##0, w0, xt[k]), a##k##1 = vfmaq_n_f32(a##k##1, w1, xt[k]);      \
        a##k##2 = vfmaq_n_f32(a##k##2, w2, xt[k]), a##k##3 = vfmaq_n_f32(a##k##3, w3, xt[k]);      \
    }
#define F32_STORE(k)                                                                               \
    if (nt > k) {                                                                                  \
        float out[ELM_TILE_ROWS];                                                                  \
        vst1q_f32(out, a##k##0), vst1q_f32(out + 4, a##k##1);                                      \
        vst1q_f32(out + 8, a##k##2), vst1q_f32(out + 12, a##k##3);                                 \
        memcpy(y + k * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

NEON_INLINE void tile_f32_n(const float *tile, int64_t cols, const float *xt, float *y, int64_t ldy,
                            int n_rows, bool add, const int nt) {
    const float32x4_t z = vdupq_n_f32(0);
    float32x4_t a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
    float32x4_t a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
    float32x4_t a40 = z, a41 = z, a42 = z, a43 = z, a50 = z, a51 = z, a52 = z, a53 = z;
    ELM_FOR_6_TOKENS(F32_INIT)
    for (int64_t c = 0; c < cols; c++, tile += ELM_TILE_ROWS, xt += 16) {
        const float32x4_t w0 = vld1q_f32(tile), w1 = vld1q_f32(tile + 4);
        const float32x4_t w2 = vld1q_f32(tile + 8), w3 = vld1q_f32(tile + 12);
        ELM_FOR_6_TOKENS(F32_FMA)
    }
    ELM_FOR_6_TOKENS(F32_STORE)
}

NEON_FN static void tile_f32(const float *tile, int64_t cols, const float *xt, int n_tok, float *y,
                             int64_t ldy, int n_rows, bool add) {
    ELM_CALL_6_TOKENS(n_tok, tile_f32_n, tile, cols, xt, y, ldy, n_rows, add)
}

/* Two sets, but for the BF16 pair tiles of CPUs with FEAT_BF16 (neon_bf16.c); f32_kc as avx2.c. */
#define NEON_GEMM(bf16_pieces)                                                                     \
    {                                                                                              \
        .q8 = tile_q8, .q8_tokens = Q8_TOKENS, .f32 = tile_f32, .f32_tokens = F32_TOKENS,          \
        .f32_kc = 128, .bf16 = bf16_pieces,                                                        \
    }
static const elm_gemm_kernels gemm_kernels = NEON_GEMM(NULL);
static const elm_gemm_kernels gemm_kernels_bf16 = NEON_GEMM(&elm_gemm_bf16_neon);
#undef NEON_GEMM

NEON_INLINE void matmul_with(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0,
                             int64_t r1, void *scratch) {
    if (elm_type_kquant(a->w.type)) elm_kquant_matmul(&elm_kq_neon, a, r0, r1, scratch);
    else if (a->n_tok >= GEMM_MIN_TOKENS) elm_gemm(g, a, r0, r1, scratch);
    else matvec(a, r0, r1);
}

NEON_FN static void matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    matmul_with(&gemm_kernels, a, r0, r1, scratch);
}

NEON_FN static void matmul_bf16(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    matmul_with(&gemm_kernels_bf16, a, r0, r1, scratch);
}

/* One table for both, but for matmul, bf16_act_tokens and pair16. */
#define NEON_KERNELS(matmul_fn, bf16_tokens, pair)                                                 \
    {                                                                                              \
        .isa = "neon", .dot_f32 = dot_f32, .transpose16 = elm_transpose_x16,                       \
        .quantize_q8 = quantize_q8, .quantize_q8_k = quantize_q8_k, .matmul = matmul_fn,           \
        .bf16_act_tokens = bf16_tokens,                                                            \
        .pair16 = pair, .rmsnorm = rmsnorm, .softmax = softmax, .swiglu = swiglu,                  \
        .geglu = elm_scalar_geglu, .rope_cs = elm_scalar_rope_cs, .rope = elm_scalar_rope,        \
        .rope_neox = elm_scalar_rope_neox, .attention = attention,                                 \
    }
static const elm_kernels neon_kernels = NEON_KERNELS(matmul, 0, NULL);
static const elm_kernels neon_bf16_kernels =
    NEON_KERNELS(matmul_bf16, GEMM_MIN_TOKENS, elm_pair_bf16_neon);
#undef NEON_KERNELS

const elm_kernels *elm_kernels_neon(void) {
    if (!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP)) return NULL;
#ifdef HWCAP2_BF16
    if (getauxval(AT_HWCAP2) & HWCAP2_BF16) return &neon_bf16_kernels;
#endif
    return &neon_kernels;
}
#else
const elm_kernels *elm_kernels_neon(void) { return NULL; }
#endif
