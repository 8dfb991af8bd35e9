/* The sub-4-bit i-quants and ternary types unpacked into the canonical super-block (kquant.h,
 * iquant.h) in NEON; part of kquant_neon.c. As x86/iquant_unpack.h, 16 weights per vector: two
 * 8-byte grid points (IQ2, IQ1) or four 4-byte ones (IQ3) loaded by index from the expanded
 * codebooks, signs (one byte per 8 weights, ksigns for the 7-bit codes) tested against each
 * byte's bit (vtst) and applied as (g ^ m) - m; IQ1's 8·g ± 1; TQ2_0's bit fields; TQ1_0's
 * base-3 digits by byte multiplies (vmul mod 256, then the top digit of ·3 by a widening
 * multiply). The scalar oracle is elm_iquant_values; the scales are elm_iquant_scales. */
#include "codecs/iquant_codec.h"
#include "kernels/iquant.h"

NEON_INLINE uint32_t iq_u32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Two 8-byte grid points: weights 0-7 and 8-15. */
NEON_INLINE int8x16_t iq_points8(const void *grid, unsigned i0, unsigned i1) {
    const int8_t *g = grid;
    return vcombine_s8(vld1_s8(g + 8 * i0), vld1_s8(g + 8 * i1));
}

/* Four 4-byte grid points. */
NEON_INLINE int8x16_t iq_points4(const uint8_t (*g)[4], unsigned i0, unsigned i1, unsigned i2,
                                 unsigned i3) {
    const uint32_t v[4] = {iq_u32(g[i0]), iq_u32(g[i1]), iq_u32(g[i2]), iq_u32(g[i3])};
    return vreinterpretq_s8_u32(vld1q_u32(v));
}

/* Magnitudes g of 16 weights negated where bit j of sign byte k (of the low 16 bits of signs)
 * is set, for weight 8k + j. */
NEON_INLINE int8x16_t iq_signed(int8x16_t g, uint32_t signs) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t s = vcombine_u8(vdup_n_u8((uint8_t)signs), vdup_n_u8((uint8_t)(signs >> 8)));
    const int8x16_t m = vreinterpretq_s8_u8(vtstq_u8(s, vld1q_u8(bit)));
    return vsubq_s8(veorq_s8(g, m), m);
}

/* 32 weights from four 8-byte points and four sign bytes. */
NEON_INLINE void iq_store32(const void *grid, const unsigned idx[4], uint32_t signs, int8_t *q) {
    vst1q_s8(q, iq_signed(iq_points8(grid, idx[0], idx[1]), signs));
    vst1q_s8(q + 16, iq_signed(iq_points8(grid, idx[2], idx[3]), signs >> 16));
}

/* The four sign bytes of the 7-bit codes at bits 0, 7, 14, 21 of aux. */
NEON_INLINE uint32_t iq_ksigns4(const uint8_t *ksigns, uint32_t aux) {
    return (uint32_t)ksigns[aux & 127] | (uint32_t)ksigns[(aux >> 7) & 127] << 8 |
           (uint32_t)ksigns[(aux >> 14) & 127] << 16 | (uint32_t)ksigns[(aux >> 21) & 127] << 24;
}

/* IQ1's 16 weights 8·g + shift from two grid points and their groups' shift signs. */
NEON_INLINE int8x16_t iq1_values(const elm_iq_grids *G, unsigned i0, unsigned i1, bool minus0,
                                 bool minus1) {
    const int8x16_t shifts = vcombine_s8(vdup_n_s8(minus0 ? -1 : 1), vdup_n_s8(minus1 ? -1 : 1));
    return vaddq_s8(vshlq_n_s8(iq_points8(G->iq1s, i0, i1), 3), shifts);
}

/* Trit n of each byte of x minus 1, n by byte through pow = 3^n: the top base-3 digit of
 * (x·3^n mod 256). */
NEON_INLINE int8x16_t tq1_trits(uint8x16_t x, uint8x16_t pow) {
    const uint8x16_t v = vmulq_u8(x, pow), three = vdupq_n_u8(3);
    const uint8x16_t t = vcombine_u8(vshrn_n_u16(vmull_u8(vget_low_u8(v), vget_low_u8(three)), 8),
                                     vshrn_n_u16(vmull_high_u8(v, three), 8));
    return vsubq_s8(vreinterpretq_s8_u8(t), vdupq_n_s8(1));
}

NEON_INLINE void unpack_tq1_0(const uint8_t *b, int8_t *q) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8x16_t x0 = vld1q_u8(b), x1 = vld1q_u8(b + 16), x2 = vld1q_u8(b + 32);
    for (int n = 0; n < 5; n++) {
        const uint8x16_t p = vdupq_n_u8(pow3[n]);
        vst1q_s8(q + 32 * n, tq1_trits(x0, p));
        vst1q_s8(q + 32 * n + 16, tq1_trits(x1, p));
        vst1q_s8(q + 160 + 16 * n, tq1_trits(x2, p));
    }
    /* qh: byte 4n + m is byte m's trit n */
    static const uint8_t spread[16] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
    static const uint8_t ph[16] = {1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27};
    const uint8x16_t xh = vqtbl1q_u8(vreinterpretq_u8_u32(vdupq_n_u32(iq_u32(b + 48))),
                                     vld1q_u8(spread));
    vst1q_s8(q + 240, tq1_trits(xh, vld1q_u8(ph)));
}

NEON_INLINE void unpack_tq2_0(const uint8_t *b, int8_t *q) {
    const uint8x16_t m3 = vdupq_n_u8(3);
    const int8x16_t one = vdupq_n_s8(1);
    for (int h = 0; h < 2; h++)
        for (int half = 0; half < 2; half++) {
            const uint8x16_t v = vld1q_u8(b + 32 * h + 16 * half);
            const uint8x16_t f[4] = {vandq_u8(v, m3), vandq_u8(vshrq_n_u8(v, 2), m3),
                                     vandq_u8(vshrq_n_u8(v, 4), m3), vshrq_n_u8(v, 6)};
            for (int k = 0; k < 4; k++)
                vst1q_s8(q + 128 * h + 32 * k + 16 * half,
                         vsubq_s8(vreinterpretq_s8_u8(f[k]), one));
        }
}

/* The grid values q of one block of type t (elm_iquant_values' bytes), for
 * elm_iq_unpack_with. */
NEON_FN static void iq_values(elm_type t, const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    switch (t) {
    case ELM_TYPE_IQ2_XXS:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 8 * ib;
            const unsigned idx[4] = {p[0], p[1], p[2], p[3]};
            iq_store32(G->iq2xxs, idx, iq_ksigns4(G->ksigns, iq_u32(p + 4)), q + 32 * ib);
        }
        break;
    case ELM_TYPE_IQ2_XS:
        for (int ib = 0; ib < 8; ib++) {
            unsigned idx[4];
            uint32_t s = 0;
            for (int l = 0; l < 4; l++) {
                const unsigned v = b[2 + 8 * ib + 2 * l] | (unsigned)b[3 + 8 * ib + 2 * l] << 8;
                idx[l] = v & 511;
                s |= (uint32_t)G->ksigns[v >> 9] << 8 * l;
            }
            iq_store32(G->iq2xs, idx, s, q + 32 * ib);
        }
        break;
    case ELM_TYPE_IQ2_S:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 4 * ib;
            const unsigned h = b[66 + ib];
            const unsigned idx[4] = {p[0] | (h & 3) << 8, p[1] | (h & 12) << 6,
                                     p[2] | (h & 48) << 4, p[3] | (h & 192) << 2};
            iq_store32(G->iq2s, idx, iq_u32(b + 34 + 4 * ib), q + 32 * ib);
        }
        break;
    case ELM_TYPE_IQ3_XXS:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 8 * ib;
            const uint32_t s = iq_ksigns4(G->ksigns, iq_u32(b + 66 + 4 * ib));
            vst1q_s8(q + 32 * ib, iq_signed(iq_points4(G->iq3xxs, p[0], p[1], p[2], p[3]), s));
            vst1q_s8(q + 32 * ib + 16,
                     iq_signed(iq_points4(G->iq3xxs, p[4], p[5], p[6], p[7]), s >> 16));
        }
        break;
    case ELM_TYPE_IQ3_S:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 8 * ib;
            const unsigned h = b[66 + ib];
            const uint32_t s = iq_u32(b + 74 + 4 * ib);
            vst1q_s8(q + 32 * ib,
                     iq_signed(iq_points4(G->iq3s, p[0] | (h & 1) << 8, p[1] | (h & 2) << 7,
                                          p[2] | (h & 4) << 6, p[3] | (h & 8) << 5),
                               s));
            vst1q_s8(q + 32 * ib + 16,
                     iq_signed(iq_points4(G->iq3s, p[4] | (h & 16) << 4, p[5] | (h & 32) << 3,
                                          p[6] | (h & 64) << 2, p[7] | (h & 128) << 1),
                               s >> 16));
        }
        break;
    case ELM_TYPE_IQ1_S:
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 4 * ib;
            const unsigned h = (unsigned)b[34 + 2 * ib] | (unsigned)b[35 + 2 * ib] << 8;
            const bool minus = h & 0x8000;
            vst1q_s8(q + 32 * ib,
                     iq1_values(G, p[0] | (h & 7) << 8, p[1] | (h & 0x38) << 5, minus, minus));
            vst1q_s8(q + 32 * ib + 16, iq1_values(G, p[2] | (h & 0x1c0) << 2,
                                                  p[3] | (h & 0xe00) >> 1, minus, minus));
        }
        break;
    case ELM_TYPE_IQ1_M:
        for (int ib = 0; ib < 16; ib++) {
            const uint8_t *p = b + 2 * ib;
            const unsigned h = b[32 + ib];
            vst1q_s8(q + 16 * ib,
                     iq1_values(G, p[0] | (h & 7) << 8, p[1] | (h & 0x70) << 4, h & 8, h & 0x80));
        }
        break;
    case ELM_TYPE_TQ1_0: unpack_tq1_0(b, q); break;
    default: unpack_tq2_0(b, q); break;
    }
}

