/* The sub-4-bit i-quants and ternary types unpacked into the canonical super-block (kquant.h,
 * iquant.h) in 256-bit vectors; part of kquant_body.h (the same KQ_FN and includes), so compiled
 * for the AVX2 and the AVX-512 tables. Layouts: docs/kquants.md, "Sub-4-bit i-quants"; the scalar
 * oracle is elm_iquant_values, whose bytes these give (tests/test_iquant_kernels.c).
 *
 * The lattice types build each 32 weights from grid points: four 8-byte points (IQ2, IQ1) or
 * eight 4-byte points (IQ3) loaded by index from the expanded codebooks (elm_iq_grids) into one
 * vector; then the signs, one byte per 8 weights (the 7-bit codes completed as ksigns does, a
 * block's 32 at once: iq_block_signs), are spread to the weights' bytes, tested against each
 * byte's bit and applied as (g ^ m) - m (iq_chunk). Decode takes the magnitudes and the mask one
 * 32-weight chunk at a time (iq_points, iq_sign_mask) straight into its dot products
 * (kquant_body.h's dot_packed), which put the signs on the activations instead.
 * IQ1's values are 8·g ± 1 (vpsignb of 8 by g, plus the group's shift). The ternary types are
 * bit fields (TQ2_0) or base-3 digits taken by 16-bit multiplies (TQ1_0). The scales are the
 * codec's own (elm_iquant_scales). */
#include "codecs/iquant_codec.h"
#include "kernels/iquant.h"

KQ_INLINE uint64_t iq_u64(const void *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

KQ_INLINE uint32_t iq_u32(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Four 8-byte grid points, weights 0-7, 8-15, 16-23, 24-31. */
KQ_INLINE __m256i iq_points8(const void *grid, unsigned i0, unsigned i1, unsigned i2,
                             unsigned i3) {
    const uint8_t *g = grid;
    return _mm256_set_epi64x((long long)iq_u64(g + 8 * i3), (long long)iq_u64(g + 8 * i2),
                             (long long)iq_u64(g + 8 * i1), (long long)iq_u64(g + 8 * i0));
}

/* 0xff in the bytes of the 32 weights whose sign bit is set (bit j of sign byte k of `signs`
 * for weight 8k + j), 0 elsewhere. */
KQ_INLINE __m256i iq_sign_mask(uint32_t signs) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                            2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bits = _mm256_set1_epi64x(0x8040201008040201ll);
    const __m256i s = _mm256_shuffle_epi8(_mm256_set1_epi32((int)signs), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(s, bits), bits);
}

/* Magnitudes g of 32 weights negated where iq_sign_mask(signs) is set. */
KQ_INLINE __m256i iq_signed(__m256i g, uint32_t signs) {
    const __m256i m = iq_sign_mask(signs);
    return _mm256_sub_epi8(_mm256_xor_si256(g, m), m);
}

/* IQ1's 32 weights 8·g + shift from four grid points, shifts: a byte (1 or -1) per weight. */
KQ_INLINE __m256i iq1_values(__m256i g, __m256i shifts) {
    return _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), g), shifts);
}

/* The shift bytes of one 8-weight group: -1 when minus, else +1. */
KQ_INLINE long long iq1_shift(bool minus) {
    return minus ? -1ll : 0x0101010101010101ll;
}

/* Trit n of 16 bytes widened to 16-bit lanes x, minus 1 (n by lane, through pow = 3^n): the top
 * base-3 digit of (x·3^n mod 256), as iquant_decode.c's trit. */
KQ_INLINE __m256i tq1_trits(__m256i x, __m256i pow) {
    const __m256i v = _mm256_and_si256(_mm256_mullo_epi16(x, pow), _mm256_set1_epi16(0xff));
    return _mm256_sub_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(v, _mm256_set1_epi16(3)), 8),
                            _mm256_set1_epi16(1));
}

/* 16 int16 lanes to 16 bytes. */
KQ_INLINE __m128i tq1_narrow(__m256i t) {
    return _mm_packs_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
}

KQ_INLINE void unpack_tq1_0(const uint8_t *b, int8_t *q) {
    static const int16_t pow3[5] = {1, 3, 9, 27, 81};
    const __m256i x0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)b));
    const __m256i x1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
    const __m256i x2 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + 32)));
    for (int n = 0; n < 5; n++) {
        const __m256i p = _mm256_set1_epi16(pow3[n]);
        _mm_storeu_si128((__m128i *)(q + 32 * n), tq1_narrow(tq1_trits(x0, p)));
        _mm_storeu_si128((__m128i *)(q + 32 * n + 16), tq1_narrow(tq1_trits(x1, p)));
        _mm_storeu_si128((__m128i *)(q + 160 + 16 * n), tq1_narrow(tq1_trits(x2, p)));
    }
    /* qh: lane 4n + m is byte m's trit n */
    const __m256i xh = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(
        _mm_cvtsi32_si128((int)iq_u32(b + 48)),
        _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3)));
    const __m256i ph = _mm256_setr_epi16(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
    _mm_storeu_si128((__m128i *)(q + 240), tq1_narrow(tq1_trits(xh, ph)));
}

/* Sign bytes of 32 7-bit codes c (one a byte, bit 7 clear): bit 7 set where the code has an odd
 * count of set bits (ksigns' even parity), from the parities of its nibbles by vpshufb. */
KQ_INLINE __m256i iq_ksigns32(__m256i c) {
    const __m256i par = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0));
    return _mm256_or_si256(
        c, _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(c, _mm256_set1_epi8(0x0f))),
                            _mm256_shuffle_epi8(par, kq_bits(c, 4, 0x0f))));
}

/* Whether type t's signs are 7-bit codes that iq_block_signs reads. */
KQ_INLINE bool iq_coded_signs(elm_type t) {
    return t == ELM_TYPE_IQ2_XXS || t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ3_XXS;
}

/* IQ2_XXS's second u32 of each 8-byte group (at b + 6 + 8c: 4 scale bits, 4 sign codes), the
 * odd words of the 64 bytes at b + 2, in order. */
KQ_INLINE __m256i iq2xxs_words(const uint8_t *b) {
    return _mm256_permute4x64_epi64(
        _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(kq_load(b + 2)),
                                              _mm256_castsi256_ps(kq_load(b + 34)),
                                              _MM_SHUFFLE(3, 1, 3, 1))),
        0xd8);
}

/* The sign bytes of block b's 32 groups of 8 weights (byte k: group k; s[c] those of weights
 * 32c..32c+31), all at once instead of a ksigns lookup per group: the codes are bits 9-15 of
 * IQ2_XS's u16 at 2, bits 0, 7, 14, 21 of IQ3_XXS's u32 at 66 and of IQ2_XXS's at 6 + 8c. */
KQ_INLINE void iq_block_signs(const elm_type t, const uint8_t *b, uint32_t s[8]) {
    __m256i c;
    if (t == ELM_TYPE_IQ2_XS) {
        const __m256i lo = _mm256_srli_epi16(kq_load(b + 2), 9);
        const __m256i hi = _mm256_srli_epi16(kq_load(b + 34), 9);
        c = _mm256_permute4x64_epi64(_mm256_packus_epi16(lo, hi), 0xd8);
    } else {
        const __m256i w = t == ELM_TYPE_IQ3_XXS ? kq_load(b + 66) : iq2xxs_words(b);
        /* code k (bits 7k..7k+6) to byte k */
        c = _mm256_or_si256(
            _mm256_or_si256(_mm256_and_si256(w, _mm256_set1_epi32(0x7f)),
                            _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_set1_epi32(0x7f00))),
            _mm256_or_si256(
                _mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_set1_epi32(0x7f0000)),
                _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_set1_epi32(0x7f000000))));
    }
    _mm256_storeu_si256((__m256i *)s, iq_ksigns32(c));
}

/* IQ3_S's 64 9-bit grid indices of block b (8 low bits at b + 2, the ninth bit j of byte b[66 +
 * c] for index 8c + j) as u16, 16 at a time: the scalar masks and shifts of each index had been
 * most of the AVX2 decode's instructions (`kernel_rate`, L2, one thread: 4.7 -> 5.0 GB/s). */
KQ_INLINE void iq3s_block_index(const uint8_t *b, uint16_t idx[64]) {
    const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
                                          8192, 16384, -32768);
    for (int c = 0; c < 8; c += 2) {
        uint16_t h;
        memcpy(&h, b + 66 + c, 2);
        const __m256i hb = _mm256_and_si256(_mm256_set1_epi16((short)h), bit);
        const __m256i hi = _mm256_and_si256(_mm256_cmpeq_epi16(hb, bit), _mm256_set1_epi16(256));
        const __m256i lo = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(b + 2 + 8 * c)));
        _mm256_storeu_si256((__m256i *)(idx + 8 * c), _mm256_or_si256(lo, hi));
    }
}

/* What the chunks of one lattice block share, computed once a block (iq_block_side): the sign
 * bytes of the types with 7-bit sign codes and IQ3_S's grid indices. */
typedef struct iq_side {
    uint32_t signs[8];
    uint16_t idx[64];
} __attribute__((aligned(32))) iq_side;

KQ_INLINE void iq_block_side(const elm_type t, const uint8_t *b, iq_side *s) {
    if (iq_coded_signs(t)) iq_block_signs(t, b, s->signs);
    if (t == ELM_TYPE_IQ3_S) iq3s_block_index(b, s->idx);
}

/* TQ2_0's 2-bit codes (trit + 1, 0..2) of weights 32c..32c+31: bits 2k of byte 32h + l hold
 * weight 128h + 32k + l. */
KQ_INLINE __m256i tq2_codes(const uint8_t *b, int c) {
    return kq_bits(kq_load(b + 32 * (c / 4)), 2 * (c % 4), 3);
}

/* Whether type t's values are grid magnitudes (0..62) with a sign bit per weight: the lattice
 * types, whose products take the signs onto the activations instead (iq_points). */
KQ_INLINE bool iq_sign_bits(elm_type t) {
    return t == ELM_TYPE_IQ2_XXS || t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ2_S ||
           t == ELM_TYPE_IQ3_XXS || t == ELM_TYPE_IQ3_S;
}

/* The grid magnitudes of weights 32c..32c+31 of one block of a lattice type t (iq_sign_bits),
 * and in *sw their sign bits (bit j of byte k for weight 8k + j). side: iq_block_side's of the
 * block. */
KQ_INLINE __m256i iq_points(const elm_type t, const elm_iq_grids *G, const uint8_t *b,
                            const iq_side *side, int c, uint32_t *sw) {
    switch (t) {
    case ELM_TYPE_IQ2_XXS: {
        const uint8_t *p = b + 2 + 8 * c;
        *sw = side->signs[c];
        return iq_points8(G->iq2xxs, p[0], p[1], p[2], p[3]);
    }
    case ELM_TYPE_IQ2_XS: {
        const uint64_t v = iq_u64(b + 2 + 8 * c); /* four u16: 9-bit index, 7-bit signs */
        *sw = side->signs[c];
        return iq_points8(G->iq2xs, v & 511, (v >> 16) & 511, (v >> 32) & 511, (v >> 48) & 511);
    }
    case ELM_TYPE_IQ2_S: {
        const uint8_t *p = b + 2 + 4 * c;
        const unsigned h = b[66 + c];
        *sw = iq_u32(b + 34 + 4 * c);
        return iq_points8(G->iq2s, p[0] | (h & 3) << 8, p[1] | (h & 12) << 6,
                          p[2] | (h & 48) << 4, p[3] | (h & 192) << 2);
    }
    case ELM_TYPE_IQ3_XXS: {
        const uint8_t *p = b + 2 + 8 * c;
        const uint8_t(*g)[4] = G->iq3xxs;
        *sw = side->signs[c];
        return _mm256_setr_epi32((int)iq_u32(g[p[0]]), (int)iq_u32(g[p[1]]), (int)iq_u32(g[p[2]]),
                                 (int)iq_u32(g[p[3]]), (int)iq_u32(g[p[4]]), (int)iq_u32(g[p[5]]),
                                 (int)iq_u32(g[p[6]]), (int)iq_u32(g[p[7]]));
    }
    default: { /* IQ3_S */
        const uint8_t(*g)[4] = G->iq3s;
        *sw = iq_u32(b + 74 + 4 * c);
        const uint16_t *ix = side->idx + 8 * c;
        return _mm256_setr_epi32((int)iq_u32(g[ix[0]]), (int)iq_u32(g[ix[1]]),
                                 (int)iq_u32(g[ix[2]]), (int)iq_u32(g[ix[3]]),
                                 (int)iq_u32(g[ix[4]]), (int)iq_u32(g[ix[5]]),
                                 (int)iq_u32(g[ix[6]]), (int)iq_u32(g[ix[7]]));
    }
    }
}

/* The signed grid values of weights 32c..32c+31 of one block of type t (not TQ1_0): the bytes
 * elm_iquant_values gives there. side: iq_block_side's of the block. */
KQ_INLINE __m256i iq_chunk(const elm_type t, const elm_iq_grids *G, const uint8_t *b,
                           const iq_side *side, int c) {
    if (iq_sign_bits(t)) {
        uint32_t sw;
        const __m256i g = iq_points(t, G, b, side, c, &sw);
        return iq_signed(g, sw);
    }
    switch (t) {
    case ELM_TYPE_IQ1_S: {
        const uint8_t *p = b + 2 + 4 * c;
        const unsigned h = (unsigned)b[34 + 2 * c] | (unsigned)b[35 + 2 * c] << 8;
        const __m256i g = iq_points8(G->iq1s, p[0] | (h & 7) << 8, p[1] | (h & 0x38) << 5,
                                     p[2] | (h & 0x1c0) << 2, p[3] | (h & 0xe00) >> 1);
        return iq1_values(g, _mm256_set1_epi64x(iq1_shift(h & 0x8000)));
    }
    case ELM_TYPE_IQ1_M: {
        const uint8_t *p = b + 4 * c;
        const unsigned h0 = b[32 + 2 * c], h1 = b[33 + 2 * c];
        const __m256i g = iq_points8(G->iq1s, p[0] | (h0 & 7) << 8, p[1] | (h0 & 0x70) << 4,
                                     p[2] | (h1 & 7) << 8, p[3] | (h1 & 0x70) << 4);
        const __m256i shifts = _mm256_set_epi64x(iq1_shift(h1 & 0x80), iq1_shift(h1 & 8),
                                                 iq1_shift(h0 & 0x80), iq1_shift(h0 & 8));
        return iq1_values(g, shifts);
    }
    default: return _mm256_sub_epi8(tq2_codes(b, c), _mm256_set1_epi8(1));
    }
}

/* The grid values q of one block of type t (elm_iquant_values' bytes), for
 * elm_iq_unpack_with. */
KQ_FN static void iq_values(elm_type t, const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    iq_side side;
    iq_block_side(t, b, &side);
/* iq_chunk with the type a constant */
#define IQ_VALUES(T)                                                                         \
    for (int c = 0; c < 8; c++) kq_store(q + 32 * c, iq_chunk(T, G, b, &side, c));           \
    break;
    switch (t) {
    case ELM_TYPE_IQ2_XXS: IQ_VALUES(ELM_TYPE_IQ2_XXS)
    case ELM_TYPE_IQ2_XS: IQ_VALUES(ELM_TYPE_IQ2_XS)
    case ELM_TYPE_IQ2_S: IQ_VALUES(ELM_TYPE_IQ2_S)
    case ELM_TYPE_IQ3_XXS: IQ_VALUES(ELM_TYPE_IQ3_XXS)
    case ELM_TYPE_IQ3_S: IQ_VALUES(ELM_TYPE_IQ3_S)
    case ELM_TYPE_IQ1_S: IQ_VALUES(ELM_TYPE_IQ1_S)
    case ELM_TYPE_IQ1_M: IQ_VALUES(ELM_TYPE_IQ1_M)
    case ELM_TYPE_TQ1_0: unpack_tq1_0(b, q); break;
    default: IQ_VALUES(ELM_TYPE_TQ2_0)
    }
#undef IQ_VALUES
}
