/* The k-quant/i-quant pieces of kernels/kquant.h for ARM64 NEON with the dot-product extension:
 * sdot multiplies the signed unpacked weights by the signed q8_K activations directly, four
 * products into each int32 lane, one 16-weight group per instruction; the group's scale then
 * multiplies the four lanes. Unpacking is in NEON for Q4_K, Q6_K and the sub-4-bit i-quants
 * (iquant_unpack.h), the scalar oracle's for the other types. */
#include "kernels/kquant.h"

#if defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
#include <arm_neon.h>
#include <string.h>

#include "codecs/kquant_codec.h"
#include "codecs/mxfp4.h"
#include "kernels/blocks.h"
#include "kernels/targets.h"
#include "kernels/arm/iquant_unpack.h"

NEON_INLINE void unpack_q4_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b), o->dmin = elm_load_f16(b + 2);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        elm_kquant_scale_min(j, b + 4, &sc, &m);
        o->sc[2 * j] = o->sc[2 * j + 1] = sc;
        o->m[2 * j] = o->m[2 * j + 1] = m;
    }
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int p = 0; p < 4; p++)
        for (int h = 0; h < 2; h++) {
            const uint8x16_t q = vld1q_u8(b + 16 + 32 * p + 16 * h);
            vst1q_s8(o->q + 64 * p + 16 * h, vreinterpretq_s8_u8(vandq_u8(q, m4)));
            vst1q_s8(o->q + 64 * p + 32 + 16 * h, vreinterpretq_s8_u8(vshrq_n_u8(q, 4)));
        }
}

NEON_INLINE void unpack_q6_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 208), o->dmin = 0;
    const int8x16_t sc = vld1q_s8((const int8_t *)(b + 192));
    vst1q_s16(o->sc, vmovl_s8(vget_low_s8(sc)));
    vst1q_s16(o->sc + 8, vmovl_s8(vget_high_s8(sc)));
    vst1q_s16(o->m, vdupq_n_s16(0));
    vst1q_s16(o->m + 8, vdupq_n_s16(0));
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    for (int h = 0; h < 2; h++)
        for (int half = 0; half < 2; half++) {
            const uint8x16_t l0 = vld1q_u8(b + 64 * h + 16 * half);
            const uint8x16_t l1 = vld1q_u8(b + 64 * h + 32 + 16 * half);
            const uint8x16_t qh = vld1q_u8(b + 128 + 32 * h + 16 * half);
            const uint8x16_t lows[4] = {vandq_u8(l0, m4), vandq_u8(l1, m4), vshrq_n_u8(l0, 4),
                                        vshrq_n_u8(l1, 4)};
            const uint8x16_t highs[4] = {vshlq_n_u8(vandq_u8(qh, m3), 4),
                                         vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m3), 4),
                                         vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m3), 4),
                                         vshlq_n_u8(vshrq_n_u8(qh, 6), 4)};
            for (int k = 0; k < 4; k++)
                vst1q_s8(o->q + 128 * h + 32 * k + 16 * half,
                         vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lows[k], highs[k])), off));
        }
}

NEON_FN static void unpack(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out) {
    const size_t bb = elm_type_get(t)->block_bytes;
    if (t == ELM_TYPE_Q4_K)
        for (int64_t i = 0; i < n; i++) unpack_q4_k(src + i * bb, out + i);
    else if (t == ELM_TYPE_Q6_K)
        for (int64_t i = 0; i < n; i++) unpack_q6_k(src + i * bb, out + i);
    else if (elm_type_iquant(t)) elm_iq_unpack_with(iq_values, t, src, n, out);
    else elm_kq_unpack_scalar(t, src, n, out);
}

NEON_INLINE float dot1(const elm_kq_block *w, elm_q8k_row x, int64_t n, bool mins) {
    float acc = 0;
    for (int64_t s = 0; s < n; s++, w++) {
        const int8_t *xq = x.qs + s * ELM_QK_K;
        int32x4_t a0 = vdupq_n_s32(0), a1 = vdupq_n_s32(0);
        for (int g = 0; g < 16; g += 2) {
            const int32x4_t d0 =
                vdotq_s32(vdupq_n_s32(0), vld1q_s8(w->q + 16 * g), vld1q_s8(xq + 16 * g));
            const int32x4_t d1 = vdotq_s32(vdupq_n_s32(0), vld1q_s8(w->q + 16 * g + 16),
                                           vld1q_s8(xq + 16 * g + 16));
            a0 = vmlaq_n_s32(a0, d0, w->sc[g]);
            a1 = vmlaq_n_s32(a1, d1, w->sc[g + 1]);
        }
        const int32_t isum = vaddvq_s32(vaddq_s32(a0, a1));
        acc += w->d * x.d[s] * (float)isum;
        if (mins) {
            const int16_t *bs = x.bsum + 16 * s;
            int32x4_t m = vmull_s16(vld1_s16(w->m), vld1_s16(bs));
            m = vmlal_s16(m, vld1_s16(w->m + 4), vld1_s16(bs + 4));
            m = vmlal_s16(m, vld1_s16(w->m + 8), vld1_s16(bs + 8));
            m = vmlal_s16(m, vld1_s16(w->m + 12), vld1_s16(bs + 12));
            acc -= w->dmin * x.d[s] * (float)vaddvq_s32(m);
        }
    }
    return acc;
}

/* Tokens one after another: the unpacked row (at most a few KiB) stays in L1 between them. */
NEON_FN static void dot(const elm_kq_block *w, const elm_q8k_row *x, int nx, int64_t n, bool mins,
                        float *out) {
    for (int i = 0; i < nx; i++) out[i] = dot1(w, x[i], n, mins);
}

NEON_FN static void unpack_grid32(elm_type t, const uint8_t *src, int64_t n, int8_t *q,
                                  float *d) {
    const elm_grid32_layout g = elm_grid32_layout_of(t);
    const int8x16_t grid = vld1q_s8(g.grid);
    for (int64_t b = 0; b < n; b++, q += ELM_QK) {
        d[b] = elm_grid32_scale(t, src, b);
        const uint8x16_t p = vld1q_u8(src + g.block_bytes * b + g.qs_at);
        vst1q_s8(q, vqtbl1q_s8(grid, vandq_u8(p, vdupq_n_u8(0x0f))));
        vst1q_s8(q + 16, vqtbl1q_s8(grid, vshrq_n_u8(p, 4)));
    }
}

NEON_FN static float dot_iq4_nl(const int8_t *q, const float *d, elm_q8_row x, int64_t n) {
    float acc = 0;
    for (int64_t b = 0; b < n; b++) {
        int32x4_t s = vdotq_s32(vdupq_n_s32(0), vld1q_s8(q + ELM_QK * b), vld1q_s8(x.qs + ELM_QK * b));
        s = vdotq_s32(s, vld1q_s8(q + ELM_QK * b + 16), vld1q_s8(x.qs + ELM_QK * b + 16));
        acc += d[b] * x.d[b] * (float)vaddvq_s32(s);
    }
    return acc;
}

const elm_kq_kernels elm_kq_neon = {.unpack = unpack,
                                    .dot = dot,
                                    .unpack_grid32 = unpack_grid32,
                                    .dot_iq4_nl = dot_iq4_nl};
#endif
