/* The k-quant/i-quant pieces of kernels/kquant.h in 256-bit AVX2 vectors, compiled twice: by
 * kquant_avx2.c (AVX2+FMA+F16C) and kquant_avx512.c (the same code with AVX-512VL encodings).
 * Not a header to include elsewhere: the including file includes <immintrin.h> and defines
 *   KQ_FN     the target attribute of every function here
 *   KQ_TABLE  the name of the elm_kq_kernels table to define
 *
 * Unpacking turns each super-block's bit fields into bytes with shifts, masks and (for the
 * non-linear grid) one table lookup per 32 weights; the sub-4-bit i-quants load grid points by
 * index instead (iquant_unpack.h). The dot products use maddubs, which wants
 * unsigned × signed bytes: the sign of each weight moves onto the activation (|q|·sign(x, q)),
 * exact since |q| and |x| are at most 127, so a pair of products stays below 2^15. The pair
 * sums are then multiplied by the 16-weight group's scale with madd. */
#include <string.h>

#include "codecs/kquant_codec.h"
#include "codecs/mxfp4.h"
#include "kernels/blocks.h"
#include "kernels/kquant.h"
#include "kernels/packed.h"

#define KQ_INLINE KQ_FN static inline __attribute__((always_inline))

#define X86_INLINE KQ_INLINE
#include "kernels/x86/grid_lanes.h"
#include "kernels/x86/reduce.h"

KQ_INLINE __m256i kq_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
KQ_INLINE void kq_store(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* Σ q·x over 32 signed bytes as 16 int16 pair sums (see above). */
KQ_INLINE __m256i kq_pairs(__m256i q, __m256i x) {
    return _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(x, q));
}

/* (x >> shift) & mask on bytes (AVX2 shifts 16-bit lanes; the mask drops what crossed over). */
KQ_INLINE __m256i kq_bits(__m256i x, int shift, int mask) {
    return _mm256_and_si256(_mm256_srli_epi16(x, shift), _mm256_set1_epi8((char)mask));
}

KQ_INLINE void unpack_q2_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 80), o->dmin = elm_load_f16(b + 82);
    const __m128i s = _mm_loadu_si128((const __m128i *)b);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    _mm256_store_si256((__m256i *)o->sc, _mm256_cvtepu8_epi16(_mm_and_si128(s, m4)));
    _mm256_store_si256((__m256i *)o->m,
                       _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4)));
    for (int h = 0; h < 2; h++) {
        const __m256i q = kq_load(b + 16 + 32 * h);
        for (int k = 0; k < 4; k++) kq_store(o->q + 128 * h + 32 * k, kq_bits(q, 2 * k, 3));
    }
}

KQ_INLINE void unpack_q3_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 108), o->dmin = 0;
    int8_t sc[16];
    elm_q3_k_scales(b + 96, sc);
    _mm256_store_si256((__m256i *)o->sc, _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc)));
    _mm256_store_si256((__m256i *)o->m, _mm256_setzero_si256());
    const __m256i hm = kq_load(b), four = _mm256_set1_epi8(4);
    for (int h = 0; h < 2; h++) {
        const __m256i q = kq_load(b + 32 + 32 * h);
        for (int k = 0; k < 4; k++) {
            /* the high bit set means no offset: q = low + 4·bit - 4 */
            const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * h + k)));
            const __m256i hi = _mm256_and_si256(
                _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four);
            kq_store(o->q + 128 * h + 32 * k,
                     _mm256_sub_epi8(_mm256_or_si256(kq_bits(q, 2 * k, 3), hi), four));
        }
    }
}

/* Q4_K/Q5_K's eight 6-bit scales and eight mins from their 12 bytes at s (elm_kquant_scale_min)
 * as 16 bytes in one register, the scales in 0-7 and the mins in 8-15, never through memory
 * (16 bytes are read: the last 4 are the block's next field). ((u >> 6) & 3) << 4 of each byte
 * is (u >> 2) & 0x30 of its 32-bit word. */
KQ_INLINE __m128i kq_scale_min(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s); /* u0 u1 u2 - */
    const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x3f)); /* scales 0-3, mins 0-3 */
    const __m128i u2 = _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2)),
                                      _mm_setr_epi32(0, 4, 0, 0));
    const __m128i hi = _mm_or_si128(_mm_and_si128(u2, _mm_set1_epi8(0x0f)),
                                    _mm_and_si128(_mm_srli_epi32(v, 2), _mm_set1_epi8(0x30)));
    return _mm_unpacklo_epi32(lo, hi); /* sc_lo sc_hi m_lo m_hi */
}

/* The same widened to two 16-weight groups each: sc16[g] = scale g/2, m16[g] = min g/2. */
KQ_INLINE void unpack_scale_min(const uint8_t *s, int16_t *sc16, int16_t *m16) {
    const __m128i v = kq_scale_min(s);
    _mm256_store_si256((__m256i *)sc16, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v, v)));
    _mm256_store_si256((__m256i *)m16, _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v)));
}

KQ_INLINE void unpack_q45_k(const uint8_t *b, elm_kq_block *o, bool five) {
    o->d = elm_load_f16(b), o->dmin = elm_load_f16(b + 2);
    unpack_scale_min(b + 4, o->sc, o->m);
    const uint8_t *qs = b + (five ? 48 : 16);
    const __m256i qh = kq_load(b + 16), sixteen = _mm256_set1_epi8(16);
    for (int p = 0; p < 4; p++) {
        const __m256i q = kq_load(qs + 32 * p);
        __m256i lo = _mm256_and_si256(q, _mm256_set1_epi8(0x0f)), hi = kq_bits(q, 4, 0x0f);
        if (five) {
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * p)));
            const __m256i b1 = _mm256_set1_epi8((char)(1 << (2 * p + 1)));
            lo = _mm256_or_si256(
                lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen));
            hi = _mm256_or_si256(
                hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen));
        }
        kq_store(o->q + 64 * p, lo);
        kq_store(o->q + 64 * p + 32, hi);
    }
}

KQ_INLINE void unpack_q6_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 208), o->dmin = 0;
    _mm256_store_si256((__m256i *)o->sc,
                       _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 192))));
    _mm256_store_si256((__m256i *)o->m, _mm256_setzero_si256());
    const __m256i m4 = _mm256_set1_epi8(0x0f), off = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; h++) {
        const __m256i l0 = kq_load(b + 64 * h), l1 = kq_load(b + 64 * h + 32);
        const __m256i qh = kq_load(b + 128 + 32 * h);
        const __m256i lows[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                                 kq_bits(l0, 4, 0x0f), kq_bits(l1, 4, 0x0f)};
        for (int k = 0; k < 4; k++) {
            const __m256i high = _mm256_slli_epi16(kq_bits(qh, 2 * k, 3), 4);
            kq_store(o->q + 128 * h + 32 * k, _mm256_sub_epi8(_mm256_or_si256(lows[k], high), off));
        }
    }
}

/* The grid lookups of 32 packed bytes: low nibbles and high nibbles, in byte order. */
KQ_INLINE void kq_grid(__m256i packed, __m256i *lo, __m256i *hi) {
    const __m256i grid = grid_lanes(elm_iq4nl_grid);
    *lo = _mm256_shuffle_epi8(grid, _mm256_and_si256(packed, _mm256_set1_epi8(0x0f)));
    *hi = _mm256_shuffle_epi8(grid, kq_bits(packed, 4, 0x0f));
}

KQ_INLINE void unpack_iq4_xs(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b), o->dmin = 0;
    const unsigned sh = (unsigned)b[2] | (unsigned)b[3] << 8;
    for (int j = 0; j < 8; j++) {
        const int ls = ((b[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | (int)((sh >> (2 * j)) & 3) << 4;
        o->sc[2 * j] = o->sc[2 * j + 1] = (int16_t)(ls - 32);
    }
    _mm256_store_si256((__m256i *)o->m, _mm256_setzero_si256());
    for (int j = 0; j < 8; j += 2) {
        /* sub-blocks j and j+1: each 128-bit lane holds one sub-block's 16 packed bytes */
        __m256i lo, hi;
        kq_grid(kq_load(b + 8 + 16 * j), &lo, &hi);
        kq_store(o->q + 32 * j, _mm256_permute2x128_si256(lo, hi, 0x20));
        kq_store(o->q + 32 * j + 32, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
}

#include "kernels/x86/iquant_unpack.h"

KQ_FN static void unpack(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out) {
    const size_t bb = elm_type_get(t)->block_bytes;
    if (elm_type_iquant(t)) {
        elm_iq_unpack_with(iq_values, t, src, n, out);
        return;
    }
    switch (t) {
    case ELM_TYPE_Q2_K:
        for (int64_t i = 0; i < n; i++) unpack_q2_k(src + i * bb, out + i);
        break;
    case ELM_TYPE_Q3_K:
        for (int64_t i = 0; i < n; i++) unpack_q3_k(src + i * bb, out + i);
        break;
    case ELM_TYPE_Q4_K:
        for (int64_t i = 0; i < n; i++) unpack_q45_k(src + i * bb, out + i, false);
        break;
    case ELM_TYPE_Q5_K:
        for (int64_t i = 0; i < n; i++) unpack_q45_k(src + i * bb, out + i, true);
        break;
    case ELM_TYPE_Q6_K:
        for (int64_t i = 0; i < n; i++) unpack_q6_k(src + i * bb, out + i);
        break;
    default:
        for (int64_t i = 0; i < n; i++) unpack_iq4_xs(src + i * bb, out + i);
        break;
    }
}

/* Up to 4 tokens per pass over the weights: the weight bytes, their absolute values and the
 * spread scales are computed once and used for every token. */
KQ_INLINE void dot_n(const elm_kq_block *w, const elm_q8k_row *x, const int nx, int64_t n,
                     bool mins, float *out) {
    /* byte pairs (0,1) of the scale pair in the low lane, (2,3) in the high lane */
    const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                                            3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    __m256 acc[4];
    for (int i = 0; i < nx; i++) acc[i] = _mm256_setzero_ps();
    for (int64_t s = 0; s < n; s++, w++) {
        __m256i a[4];
        for (int i = 0; i < nx; i++) a[i] = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            int32_t sc;
            memcpy(&sc, w->sc + 2 * g, 4);
            const __m256i q = _mm256_load_si256((const __m256i *)(w->q + 32 * g));
            const __m256i aq = _mm256_abs_epi8(q);
            const __m256i scv = _mm256_shuffle_epi8(_mm256_set1_epi32(sc), spread);
            for (int i = 0; i < nx; i++) {
                const __m256i xv = kq_load(x[i].qs + s * ELM_QK_K + 32 * g);
                const __m256i p = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(xv, q));
                a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(p, scv));
            }
        }
        const __m256i m = _mm256_load_si256((const __m256i *)w->m);
        /* the lanes' integer sums are exact; only their float sum is left to the end */
        for (int i = 0; i < nx; i++) {
            const float xd = x[i].d[s];
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a[i]), _mm256_set1_ps(w->d * xd), acc[i]);
            if (mins)
                acc[i] = _mm256_fnmadd_ps(
                    _mm256_cvtepi32_ps(_mm256_madd_epi16(m, kq_load(x[i].bsum + 16 * s))),
                    _mm256_set1_ps(w->dmin * xd), acc[i]);
        }
    }
    for (int i = 0; i < nx; i++) out[i] = hsum256(acc[i]);
}

KQ_FN static void dot(const elm_kq_block *w, const elm_q8k_row *x, int nx, int64_t n, bool mins,
                      float *out) {
    switch (nx) {
    case 1: dot_n(w, x, 1, n, mins, out); break;
    case 2: dot_n(w, x, 2, n, mins, out); break;
    case 3: dot_n(w, x, 3, n, mins, out); break;
    default: dot_n(w, x, 4, n, mins, out); break;
    }
}

/* ---- products straight from the packed super-blocks (decode, and products of under 4 tokens) ----
 * Each 32-weight chunk is decoded in registers and dotted with up to 4 tokens; nothing is stored.
 * Q4_K, Q5_K, Q6_K and TQ2_0 codes are unsigned, so maddubs takes them as they are (no sign
 * transfer); Q6_K's offset of 32 (TQ2_0's of 1) is taken out in integers afterwards as
 * 32·Σ_g sc[g]·bsum[g]. IQ4_XS's grid values and IQ1's (iq_chunk, from
 * iquant_unpack.h) are signed: maddubs takes |q| and the activations with q's signs. The lattice
 * types' grid magnitudes (iq_points) are unsigned already: maddubs takes them with the
 * activations signed by the sign bits' mask, two vector steps a chunk fewer than signing the
 * codes and taking |q| again (AVX2 decode out of L2, one thread, 2026-12-06: IQ2_XS 4.5 -> 4.9,
 * IQ3_S 4.3 -> 4.7, IQ3_XXS 5.1 -> 5.5 GB/s). The integers are the oracle's (kquant.h), and so,
 * summed per block and scaled in the oracle's float order, are the results. */

/* A block's scales: spread to one int16 per 16 weights in sc (as in elm_kq_block), and laid out
 * for kq_chunk_scale's one shuffle in sm8. */
typedef struct kq_scales {
    int16_t sc[16];
    /* Q4_K/Q5_K: kq_scale_min's 8 scales and 8 mins (bytes 0-15) in both lanes; IQ4_XS: its 8
     * sub-blocks' scales as int16 in both lanes; Q6_K: its even groups' scales as int16 in the
     * low lane, the odd groups' in the high lane */
    __m256i sm8;
    iq_side side; /* the lattice i-quants' signs and indices, where packed_chunk wants them */
} __attribute__((aligned(32))) kq_scales;

/* An f16 field through F16C (elm_load_f16 calls out of line). */
KQ_INLINE float kq_f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* The i-quants' odd scales 2·f + 1 of 16 int16 fields f. */
KQ_INLINE __m256i iq_odd16(__m256i f) {
    return _mm256_add_epi16(_mm256_add_epi16(f, f), _mm256_set1_epi16(1));
}

/* The same of 16 byte fields f, widened into sc. */
KQ_INLINE void iq_odd_scales(__m128i f, int16_t *sc) {
    _mm256_store_si256((__m256i *)sc, iq_odd16(_mm256_cvtepu8_epi16(f)));
}

/* The nibbles of the 8 bytes in the low half of l, low one first: 16 bytes. */
KQ_INLINE __m128i iq_nibbles(__m128i l) {
    const __m128i m4 = _mm_set1_epi8(0x0f);
    return _mm_unpacklo_epi8(_mm_and_si128(l, m4), _mm_and_si128(_mm_srli_epi16(l, 4), m4));
}

KQ_INLINE void packed_scales(elm_type t, const uint8_t *b, kq_scales *s, float *d, float *dmin) {
    switch (t) {
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: { /* no sc, m: kq_chunk_scale and kq_mins take them from sm8 */
        *d = kq_f16(b), *dmin = kq_f16(b + 2);
        const __m128i v = kq_scale_min(b + 4);
        s->sm8 = _mm256_broadcastsi128_si256(v);
        break;
    }
    case ELM_TYPE_Q6_K: { /* in sm8 the even groups' scales in the low lane, the odd groups' in
                           * the high lane, for kq_chunk_scale */
        *d = kq_f16(b + 208), *dmin = 0;
        const __m128i raw = _mm_loadu_si128((const __m128i *)(b + 192));
        _mm256_store_si256((__m256i *)s->sc, _mm256_cvtepi8_epi16(raw));
        s->sm8 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(
            raw, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)));
        break;
    }
    case ELM_TYPE_IQ4_XS: { /* 4 low bits of sub-block j at nibble j of b[4..7], 2 high bits at
                             * bits 2j of the u16 at b[2] */
        *d = kq_f16(b), *dmin = 0;
        uint32_t lo;
        uint16_t sh;
        memcpy(&lo, b + 4, 4);
        memcpy(&sh, b + 2, 2);
        /* the eight 2-bit fields of sh into the bytes of h */
        uint64_t h = sh;
        h = (h | h << 24) & 0x000000ff000000ffull;
        h = (h | h << 12) & 0x000f000f000f000full;
        h = (h | h << 6) & 0x0303030303030303ull;
        const __m128i l = _mm_cvtsi32_si128((int)lo), m4 = _mm_set1_epi8(0x0f);
        const __m128i ls = _mm_or_si128(
            _mm_unpacklo_epi8(_mm_and_si128(l, m4), _mm_and_si128(_mm_srli_epi16(l, 4), m4)),
            _mm_slli_epi16(_mm_cvtsi64_si128((long long)h), 4));
        /* sub-block j's scale in int16 lane j, in both lanes of sm8 (kq_chunk_scale) and twice
         * in sc (the 512-bit rows) */
        const __m128i s16 = _mm_sub_epi16(_mm_cvtepu8_epi16(ls), _mm_set1_epi16(32));
        s->sm8 = _mm256_broadcastsi128_si256(s16);
        _mm256_store_si256((__m256i *)s->sc, _mm256_set_m128i(_mm_unpackhi_epi16(s16, s16),
                                                              _mm_unpacklo_epi16(s16, s16)));
        break;
    }
    /* the sub-4-bit i-quants: elm_iquant_scales' d (the f16 times a power of two) and sc */
    case ELM_TYPE_IQ2_XS: /* a nibble per 16 weights, at 66 (IQ2_S: 74); sm8 as Q6_K's */
    case ELM_TYPE_IQ2_S: {
        *d = kq_f16(b) * 0.125f, *dmin = 0;
        const __m128i f =
            iq_nibbles(_mm_loadl_epi64((const __m128i *)(b + (t == ELM_TYPE_IQ2_S ? 74 : 66))));
        iq_odd_scales(f, s->sc);
        s->sm8 = iq_odd16(_mm256_cvtepu8_epi16(_mm_shuffle_epi8(
            f, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15))));
        break;
    }
    case ELM_TYPE_IQ3_S: { /* a nibble per 32 weights; sm8 as IQ4_XS's */
        *d = kq_f16(b), *dmin = 0;
        const __m128i f = iq_nibbles(_mm_cvtsi32_si128((int)iq_u32(b + 106)));
        iq_odd_scales(_mm_unpacklo_epi8(f, f), s->sc);
        s->sm8 = iq_odd16(_mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(f)));
        break;
    }
    case ELM_TYPE_IQ2_XXS: /* bits 28-31 of each 32 weights' u32 (at b + 66; IQ2_XXS: b + 6 + 8c),
                            * both its int16 */
    case ELM_TYPE_IQ3_XXS: {
        *d = kq_f16(b) * (t == ELM_TYPE_IQ3_XXS ? 0.25f : 0.125f), *dmin = 0;
        const __m256i w = t == ELM_TYPE_IQ3_XXS ? kq_load(b + 66) : iq2xxs_words(b);
        __m256i f = _mm256_srli_epi32(w, 28);
        f = iq_odd16(_mm256_or_si256(f, _mm256_slli_epi32(f, 16)));
        _mm256_store_si256((__m256i *)s->sc, f);
        /* sm8 as IQ4_XS's: the low int16 of each 32-bit lane, lanes 0-3 then 4-7, in both */
        const __m256i low16 = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1,
                                               -1, -1, 0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1,
                                               -1, -1, -1, -1);
        s->sm8 = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(f, low16), _MM_SHUFFLE(2, 0, 2, 0));
        break;
    }
    case ELM_TYPE_TQ2_0:
        *d = kq_f16(b + 64), *dmin = 0;
        _mm256_store_si256((__m256i *)s->sc, _mm256_set1_epi16(1));
        break;
    default: { /* the other i-quants: the codec's own scales */
        int8_t sc[16];
        elm_iquant_scales(t, b, d, sc);
        *dmin = 0;
        _mm256_store_si256((__m256i *)s->sc,
                           _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc)));
        break;
    }
    }
}

/* x << n for n >= 0, x >> -n otherwise, on 16-bit lanes (n is a constant after unrolling). */
KQ_INLINE __m256i kq_shift(__m256i x, int n) {
    return n >= 0 ? _mm256_slli_epi16(x, n) : _mm256_srli_epi16(x, -n);
}

/* The 32 codes of chunk c (weights 32c..32c+31) of block b; G: the i-quants' codebooks, sm the
 * block's packed_scales (and iq_block_side). */
KQ_INLINE __m256i packed_chunk(elm_type t, const elm_iq_grids *G, const uint8_t *b,
                               const kq_scales *sm, int c) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    switch (t) {
    case ELM_TYPE_Q4_K: {
        const __m256i v = kq_load(b + 16 + 32 * (c / 2));
        return c % 2 ? kq_bits(v, 4, 0x0f) : _mm256_and_si256(v, m4);
    }
    case ELM_TYPE_Q5_K: {
        const __m256i v = kq_load(b + 48 + 32 * (c / 2));
        const __m256i lo = c % 2 ? kq_bits(v, 4, 0x0f) : _mm256_and_si256(v, m4);
        /* high bit c of each qh byte moved to bit 4 */
        const __m256i hi =
            _mm256_and_si256(kq_shift(kq_load(b + 16), 4 - c), _mm256_set1_epi8(0x10));
        return _mm256_or_si256(lo, hi);
    }
    case ELM_TYPE_Q6_K: {
        const int h = c / 4, k = c % 4;
        const __m256i v = kq_load(b + 64 * h + 32 * (k & 1));
        const __m256i lo = k < 2 ? _mm256_and_si256(v, m4) : kq_bits(v, 4, 0x0f);
        /* bits 2k, 2k+1 of each qh byte moved to bits 4, 5 */
        const __m256i hi =
            _mm256_and_si256(kq_shift(kq_load(b + 128 + 32 * h), 4 - 2 * k), _mm256_set1_epi8(0x30));
        return _mm256_or_si256(lo, hi);
    }
    case ELM_TYPE_IQ4_XS: { /* sub-block c's 16 bytes, low nibbles then high nibbles; the load,
                             * masks and lookups of sub-blocks c and c ^ 1 are the same
                             * expressions, computed once for both when unrolled */
        __m256i lo, hi;
        kq_grid(kq_load(b + 8 + 32 * (c / 2)), &lo, &hi);
        return c % 2 ? _mm256_permute2x128_si256(lo, hi, 0x31)
                     : _mm256_permute2x128_si256(lo, hi, 0x20);
    }
    case ELM_TYPE_TQ2_0: return tq2_codes(b, c); /* unsigned; the offset of 1 comes off later */
    default: return iq_chunk(t, G, b, &sm->side, c);
    }
}

/* The scales of chunk c's two 16-weight groups as int16, the first group's in the low lane:
 * Q4_K's, Q5_K's, IQ4_XS's and Q6_K's by one byte shuffle of sm8 (the 256-bit decode spent three
 * vector steps a chunk on them when they went through sc: gcc took each 4-byte reload from the
 * stored vector), the others' from sc. */
KQ_INLINE __m256i kq_chunk_scale(elm_type t, const kq_scales *sm, int c) {
    if (t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K)
        return _mm256_shuffle_epi8(sm->sm8, _mm256_set1_epi16((short)(0xff00 | c)));
    if (t == ELM_TYPE_IQ4_XS || t == ELM_TYPE_Q6_K || t == ELM_TYPE_IQ2_XS ||
        t == ELM_TYPE_IQ2_S || t == ELM_TYPE_IQ3_S || t == ELM_TYPE_IQ2_XXS ||
        t == ELM_TYPE_IQ3_XXS) /* int16 lane c of sm8's lanes */
        return _mm256_shuffle_epi8(sm->sm8, _mm256_set1_epi16((short)((2 * c + 1) << 8 | 2 * c)));
    /* byte pairs (0,1) of the scale pair in the low lane, (2,3) in the high lane */
    const __m256i spread = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2,
                                            3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    int32_t sc;
    memcpy(&sc, sm->sc + 2 * c, 4);
    return _mm256_shuffle_epi8(_mm256_set1_epi32(sc), spread);
}

/* Q4_K's and Q5_K's mins, each as the int16 of both its 16-weight groups (the low lane mins 0-3,
 * the high lane 4-7), by one byte shuffle of sm8. */
KQ_INLINE __m256i kq_mins(const kq_scales *sm) {
    return _mm256_shuffle_epi8(sm->sm8, _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1,
                                                         11, -1, 11, -1, 12, -1, 12, -1, 13, -1, 13,
                                                         -1, 14, -1, 14, -1, 15, -1, 15, -1));
}

/* Q4_K's and Q5_K's d and dmin (the block's first 4 bytes at b) times xd, in lanes 0 and 1: one
 * F16C conversion for both. */
KQ_INLINE __m128 kq_d_dmin(const uint8_t *b, float xd) {
    uint32_t dd;
    memcpy(&dd, b, 4);
    return _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dd)), _mm_set1_ps(xd));
}

/* Whether packed_chunk's codes for type t are signed (through kq_pairs' sign transfer). */
KQ_INLINE bool packed_signed(elm_type t) {
    return t == ELM_TYPE_IQ4_XS || (elm_type_iquant(t) && t != ELM_TYPE_TQ2_0);
}

/* The offset packed_chunk's codes carry over the values, as a left shift of 1 (-1: none): Q6_K's
 * 32, TQ2_0's 1; taken out of a block's integers as offset·Σ_g sc[g]·bsum[g]. */
KQ_INLINE int packed_offset_shift(elm_type t) {
    return t == ELM_TYPE_Q6_K ? 5 : t == ELM_TYPE_TQ2_0 ? 0 : -1;
}

/* a + the int16 pairs of p times the int16 scales s, summed in pairs into int32 lanes. */
KQ_INLINE __m256i kq_scaled_add(__m256i a, __m256i p, __m256i s) {
#ifdef KQ_VNNI
    return _mm256_dpwssd_epi32(a, p, s);
#else
    return _mm256_add_epi32(a, _mm256_madd_epi16(p, s));
#endif
}

/* A tile of nr <= 2 weight rows (row_bytes apart, n super-blocks each) by nx <= 4 tokens: each
 * chunk of codes is decoded once for all tokens and each chunk of activations loaded once for
 * both rows. */
KQ_INLINE void dot_packed_n(const elm_type t, const uint8_t *src, size_t row_bytes, const int nr,
                            const elm_q8k_row *x, const int nx, int64_t n, float *out) {
    /* not elm_type_get's: a call a row, which also spilled the vector constants around it */
    const size_t bb = row_bytes / (size_t)n;
    const bool mins = t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K;
    const elm_iq_grids *G = elm_type_iquant(t) ? elm_iq_grids_get() : NULL;
    const int off = packed_offset_shift(t);
    /* with fewer than 4 sums in flight, two per pair (even and odd chunks), so that the
     * multiply-adds (5 cycles each with VNNI) do not wait on each other; without VNNI the chain
     * is a 1-cycle add, and the second sum only took a register (gcc spilled it) */
#ifdef KQ_VNNI
    const bool split = nr * nx < 4;
#else
    const bool split = false;
#endif
    /* decode (one or two row-token pairs): each block's integers go into float lanes with one
     * multiply-add, summed once per row, instead of a horizontal sum and a serial float chain per
     * block (the oracle's order, kept for the wider tiles, where lanes would not fit the
     * registers); single-thread decode out of cache 10-25% faster on Zen 4 (Q4_K, Q6_K,
     * IQ4_XS) */
    /* not TQ2_0: its lanes hold sums of the codes (0..2), far larger than the ternary result left
     * after the offset, whose float rounding would swamp it; its blocks' exact integers go into
     * float one by one, as in the oracle */
    const bool lanes = nr * nx <= 2 && t != ELM_TYPE_TQ2_0;
    float acc[2][4] = {{0}};
    __m256 lane_acc[2][4];
    for (int r = 0; r < nr; r++)
        for (int i = 0; i < nx; i++) lane_acc[r][i] = _mm256_setzero_ps();
    for (int64_t s = 0; s < n; s++, src += bb) {
        kq_scales sm[2];
        float d[2], dmin[2];
        for (int r = 0; r < nr; r++) {
            elm_prefetch_span(src + r * row_bytes + ELM_PREFETCH_AHEAD, bb);
            packed_scales(t, src + r * row_bytes, &sm[r], &d[r], &dmin[r]);
            if (iq_sign_bits(t)) iq_block_side(t, src + r * row_bytes, &sm[r].side);
        }
        __m256i a[2][4], a2[2][4];
        for (int r = 0; r < nr; r++)
            for (int i = 0; i < nx; i++) a[r][i] = a2[r][i] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            __m256i q[2], aq[2], scv[2];
            for (int r = 0; r < nr; r++) {
                scv[r] = kq_chunk_scale(t, &sm[r], c);
                if (iq_sign_bits(t)) { /* magnitudes aq, the signs ±1 in q for the activations */
                    uint32_t sw;
                    aq[r] = iq_points(t, G, src + r * row_bytes, &sm[r].side, c, &sw);
                    q[r] = _mm256_or_si256(iq_sign_mask(sw), _mm256_set1_epi8(1));
                    continue;
                }
                q[r] = packed_chunk(t, G, src + r * row_bytes, &sm[r], c);
                if (packed_signed(t)) aq[r] = _mm256_abs_epi8(q[r]);
            }
            for (int i = 0; i < nx; i++) {
                const __m256i xv = kq_load(x[i].qs + s * ELM_QK_K + 32 * c);
                for (int r = 0; r < nr; r++) {
                    const __m256i p =
                        packed_signed(t) ? _mm256_maddubs_epi16(aq[r], _mm256_sign_epi8(xv, q[r]))
                                             : _mm256_maddubs_epi16(q[r], xv);
                    if (split && c % 2) a2[r][i] = kq_scaled_add(a2[r][i], p, scv[r]);
                    else a[r][i] = kq_scaled_add(a[r][i], p, scv[r]);
                }
            }
        }
        for (int i = 0; i < nx; i++) {
            const float xd = x[i].d[s];
            const __m256i bsum = kq_load(x[i].bsum + 16 * s);
            for (int r = 0; r < nr; r++) {
                __m256i ai = split ? _mm256_add_epi32(a[r][i], a2[r][i]) : a[r][i];
                if (off >= 0) /* the codes' offset */
                    ai = _mm256_sub_epi32(
                        ai, _mm256_slli_epi32(
                                _mm256_madd_epi16(_mm256_load_si256((const __m256i *)sm[r].sc), bsum),
                                off));
                const __m256i mi =
                    mins ? _mm256_madd_epi16(kq_mins(&sm[r]), bsum)
                         : _mm256_setzero_si256();
                if (lanes && mins) {
                    const __m256 f = _mm256_castps128_ps256(kq_d_dmin(src + r * row_bytes, xd));
                    lane_acc[r][i] = _mm256_fmadd_ps(
                        _mm256_cvtepi32_ps(ai), _mm256_permutevar8x32_ps(f, _mm256_setzero_si256()),
                        lane_acc[r][i]);
                    lane_acc[r][i] = _mm256_fnmadd_ps(
                        _mm256_cvtepi32_ps(mi),
                        _mm256_permutevar8x32_ps(f, _mm256_set1_epi32(1)), lane_acc[r][i]);
                    continue;
                }
                if (lanes) {
                    lane_acc[r][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ai),
                                                     _mm256_set1_ps(d[r] * xd), lane_acc[r][i]);
                    continue;
                }
                /* the block's exact integers, then the oracle's float steps in its order */
                acc[r][i] += d[r] * xd * (float)hsum256_epi32(ai);
                if (mins) acc[r][i] -= dmin[r] * xd * (float)hsum256_epi32(mi);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int i = 0; i < nx; i++) out[4 * r + i] = lanes ? hsum256(lane_acc[r][i]) : acc[r][i];
}

/* dot_packed_n with the type and the tile's shape as constants. */
#define KQ_PACKED_NX(T, NR)                                                                  \
    switch (nx) {                                                                            \
    case 1: dot_packed_n(T, src, row_bytes, NR, x, 1, n, out); break;                        \
    case 2: dot_packed_n(T, src, row_bytes, NR, x, 2, n, out); break;                        \
    case 3: dot_packed_n(T, src, row_bytes, NR, x, 3, n, out); break;                        \
    default: dot_packed_n(T, src, row_bytes, NR, x, 4, n, out); break;                       \
    }
#define KQ_PACKED_TYPE(T)                                                                    \
    if (nr == 1) {                                                                           \
        KQ_PACKED_NX(T, 1)                                                                   \
    } else {                                                                                 \
        KQ_PACKED_NX(T, 2)                                                                   \
    }

/* The types dot_packed and decode_rows serve (packed_types), as X(T): all 256-weight types but
 * Q2_K, Q3_K and TQ1_0, whose unpacking stays the cheaper path. */
#define KQ_DIRECT_TYPES(X)                                                                   \
    X(ELM_TYPE_Q4_K) X(ELM_TYPE_Q5_K) X(ELM_TYPE_Q6_K) X(ELM_TYPE_IQ4_XS) X(ELM_TYPE_IQ2_XXS)  \
    X(ELM_TYPE_IQ2_XS) X(ELM_TYPE_IQ2_S) X(ELM_TYPE_IQ3_XXS) X(ELM_TYPE_IQ3_S)               \
    X(ELM_TYPE_IQ1_S) X(ELM_TYPE_IQ1_M) X(ELM_TYPE_TQ2_0)

KQ_FN static void dot_packed(elm_type t, const uint8_t *src, size_t row_bytes, int nr,
                             const elm_q8k_row *x, int nx, int64_t n, float *out) {
#define KQ_PACKED_CASE(T)                                                                    \
    case T: KQ_PACKED_TYPE(T) break;
    switch (t) {
        KQ_DIRECT_TYPES(KQ_PACKED_CASE)
    default: break;
    }
#undef KQ_PACKED_CASE
}
#undef KQ_PACKED_NX
#undef KQ_PACKED_TYPE

/* Decode: one token against n_rows rows, the loop over rows here so that the row kernel's
 * constants are set up once per call, not once per row (a TinyLlama row is 8 super-blocks). */
KQ_INLINE float kq256_row(const elm_type t, const uint8_t *src, size_t row_bytes,
                          const elm_q8k_row *x, int64_t n) {
    float out[4];
    dot_packed_n(t, src, row_bytes, 1, x, 1, n, out);
    return out[0];
}
#ifdef KQ_DECODE512
#include "kernels/x86/kquant_decode512.h"
#endif

/* n_rows rows against one token: the 512-bit rows where the table has them for type t. */
KQ_INLINE void kq_rows(const elm_type t, const uint8_t *src, size_t row_bytes, int64_t n_rows,
                       const elm_q8k_row *x, int64_t n, float *y) {
#ifdef KQ_DECODE512
    if (kq512_serves(t)) {
        kq512_rows(t, src, row_bytes, n_rows, x, n, y);
        return;
    }
#endif
    for (int64_t r = 0; r < n_rows; r++)
        y[r] = kq256_row(t, src + (size_t)r * row_bytes, row_bytes, x, n);
}

KQ_FN static void decode_rows(elm_type t, const uint8_t *src, size_t row_bytes, int64_t n_rows,
                              elm_q8k_row x, int64_t n, float *y) {
#define KQ_ROWS_CASE(T)                                                                      \
    case T: kq_rows(T, src, row_bytes, n_rows, &x, n, y); break;
    switch (t) {
        KQ_DIRECT_TYPES(KQ_ROWS_CASE)
    default: break;
    }
#undef KQ_ROWS_CASE
}

KQ_FN static void unpack_grid32(elm_type t, const uint8_t *src, int64_t n, int8_t *q, float *d) {
    const elm_grid32_layout g = elm_grid32_layout_of(t);
    const __m256i grid = grid_lanes(g.grid);
    for (int64_t b = 0; b < n; b++, q += ELM_QK) {
        d[b] = elm_grid32_scale(t, src, b);
        const __m128i v = _mm_loadu_si128((const __m128i *)(src + g.block_bytes * b + g.qs_at));
        const __m256i idx = _mm256_and_si256(
            _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1),
            _mm256_set1_epi8(0x0f));
        kq_store(q, _mm256_shuffle_epi8(grid, idx));
    }
}

/* One 32-weight grid block (its 16 packed bytes at qs, its scale dw) against the token's q8
 * block i, added to acc: 32 grid lookups of the block's nibbles (low then high, in weight
 * order), and with VNNI one vpdpbusd of the values + 128 (unsigned), the 128·Σx taken off in the
 * lanes' start values; without, the sign moved onto the activations (kq_pairs). */
KQ_INLINE __m256 kq_block_grid(const uint8_t *qs, __m256i grid, float dw, const elm_q8_row *x,
                               int64_t i, __m256 acc) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs);
    const __m256i idx = _mm256_and_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1),
        _mm256_set1_epi8(0x0f));
    const __m256i xv = kq_load(x->qs + i * ELM_QK);
#ifdef KQ_VNNI
    const __m256i dot = _mm256_dpbusd_epi32(
        _mm256_set1_epi32(-16 * x->sum[i]), /* 128·Σx over the 8 lanes */
        _mm256_shuffle_epi8(_mm256_xor_si256(grid, _mm256_set1_epi8((char)0x80)), idx), xv);
#else
    const __m256i dot =
        _mm256_madd_epi16(kq_pairs(_mm256_shuffle_epi8(grid, idx), xv), _mm256_set1_epi16(1));
#endif
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * x->d[i]), acc);
}

/* One IQ4_NL row of n blocks at src against one token, straight from the file's blocks. */
KQ_INLINE float row_iq4_nl(const uint8_t *src, const elm_q8_row *x, int64_t n) {
    const __m256i grid = grid_lanes(elm_iq4nl_grid);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= n; b += 2, src += 36) {
        _mm_prefetch((const char *)src + ELM_PREFETCH_AHEAD, _MM_HINT_T0);
        acc0 = kq_block_grid(src + 2, grid, kq_f16(src), x, b, acc0);
        acc1 = kq_block_grid(src + 20, grid, kq_f16(src + 18), x, b + 1, acc1);
    }
    if (b < n) acc0 = kq_block_grid(src + 2, grid, kq_f16(src), x, b, acc0);
    return hsum256(_mm256_add_ps(acc0, acc1));
}

KQ_FN static void rows_iq4_nl(const uint8_t *src, size_t row_bytes, int64_t n_rows, elm_q8_row x,
                              int64_t n, float *y) {
#ifdef KQ_DECODE512
    kq512_grid32_rows(ELM_TYPE_IQ4_NL, src, row_bytes, n_rows, &x, n, y);
#else
    for (int64_t r = 0; r < n_rows; r++) y[r] = row_iq4_nl(src + row_bytes * r, &x, n);
#endif
}

#ifndef KQ_DECODE512
#include "kernels/x86/mxfp4_avx2.h"
#endif

/* The same for MXFP4 rows (17-byte blocks: the E8M0 scale byte, then the nibbles), four at a
 * time. */
KQ_FN static void rows_mxfp4(const uint8_t *src, size_t row_bytes, int64_t n_rows, elm_q8_row x,
                             int64_t n, float *y) {
#ifdef KQ_DECODE512
    kq512_grid32_rows(ELM_TYPE_MXFP4, src, row_bytes, n_rows, &x, n, y);
#else
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4)
        kq_mxfp4_rows_of(src + row_bytes * r, row_bytes, 4, &x, n, y + r);
    for (; r < n_rows; r++) kq_mxfp4_rows_of(src + row_bytes * r, row_bytes, 1, &x, n, y + r);
#endif
}

KQ_FN static float dot_iq4_nl(const int8_t *q, const float *d, elm_q8_row x, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n; b++) {
        const __m256i p = kq_pairs(kq_load(q + ELM_QK * b), kq_load(x.qs + ELM_QK * b));
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(d[b] * x.d[b]), acc);
    }
    return hsum256(acc);
}

#ifdef KQ_TILES
#include "kernels/x86/kquant_gemm_avx512.h"
#include "kernels/x86/kquant_tile_avx512.h"
#define KQ_GEMM16_TYPES (~0ull)
/* Q6_K prefill: its tiles' code assembly on every pass of four tokens made it 0.8x gemm16's
 * (pp256, TinyLlama-shaped Q6_K, Zen 5, 2 threads, 2026-12-07: 284-287 against 357 tok/s) */
#define KQ_GEMM16_PACKED_TYPES (1ull << ELM_TYPE_Q6_K)
#else
#include "kernels/x86/kquant_tile_avx2.h"
#include "kernels/x86/kquant_gemm_avx2.h"
#endif

/* The packed 256-weight types' micro-kernels, over the tile header's tile_kx16_of. */
#define KQ_KX16_KERNEL(name, type)                                                                 \
    KQ_FN static void name(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,   \
                           int64_t ldy, int n_rows) {                                              \
        tile_kx16_of(tile, nb, xq, n_tok, y, ldy, n_rows, type);                                   \
    }
KQ_KX16_KERNEL(tile_q4_kx16, ELM_TYPE_Q4_K)
KQ_KX16_KERNEL(tile_iq4_xsx16, ELM_TYPE_IQ4_XS)
#ifdef KQ_TILES /* the AVX2 table packs neither (avx2.c's packs) */
KQ_KX16_KERNEL(tile_q5_kx16, ELM_TYPE_Q5_K)
KQ_KX16_KERNEL(tile_q6_kx16, ELM_TYPE_Q6_K)
#endif
#undef KQ_KX16_KERNEL

static elm_tile_q8_fn tile_kx16(elm_type t) {
    switch (t) {
    case ELM_TYPE_Q4_K: return tile_q4_kx16;
    case ELM_TYPE_IQ4_XS: return tile_iq4_xsx16;
#ifdef KQ_TILES
    case ELM_TYPE_Q5_K: return tile_q5_kx16;
    case ELM_TYPE_Q6_K: return tile_q6_kx16;
#endif
    default: return NULL;
    }
}

const elm_kq_kernels KQ_TABLE = {
    .unpack = unpack,
    .dot = dot,
    .unpack_grid32 = unpack_grid32,
    .dot_iq4_nl = dot_iq4_nl,
    .rows_iq4_nl = rows_iq4_nl,
    .rows_mxfp4 = rows_mxfp4,
    .dot_packed = dot_packed,
    .decode_rows = decode_rows,
#define KQ_TYPE_BIT(T) | 1ull << T
    .packed_types = 0 KQ_DIRECT_TYPES(KQ_TYPE_BIT),
#undef KQ_TYPE_BIT
    .gemm16 = gemm16,
    .gemm16_types = KQ_GEMM16_TYPES,
    .tile_kx16 = tile_kx16,
    .tile_kx16_tokens = KT_TOKENS,
    .gemm16_packed_types = KQ_GEMM16_PACKED_TYPES};
