/* Packed Q4_K, Q5_K, IQ4_XS and Q6_K (packed.h's q4_kx16, q5_kx16, iq4_xsx16 and q6_kx16) in
 * AVX-512 (part of kquant_avx512.c): one micro-kernel each for every token count, decode included,
 * over 16 rows at a time, one row per 32-bit lane.
 *
 * Per super-block: the three vectors of 6-bit fields decode into every row's eight scales and
 * mins (the shifts and masks of unpack_scale_min, on 16 rows at once); each code vector, masked
 * and shifted, gives four codes of two sub-blocks, multiplied by vpdpbusd with four activation
 * bytes broadcast from memory; a sub-block's sums times its scale (vpmulld) add up to the
 * oracle's exact isum, and the mins' Σ m·bsum comes from vpdpwssd with each min as an int16
 * pair against two adjacent 16-weight sums. Only the float steps differ from the oracle: one
 * fused multiply-add each. Q5_K's tile is Q4_K's with the fifth bits or-ed into the codes
 * (0..31), each shifted to bit 4 from its qh vector. */
#include "kernels/x86/vnni512.h"

/* Byte k of every 32-bit lane of v, as an int32 (pair: as two int16, both that byte). */
KQ_INLINE __m512i kt_byte(__m512i v, int k, bool pair) {
    const int z = pair ? (int)0x80008000u : (int)0x80808000u; /* 0x80: a zero byte */
    const int dup = pair ? 0x10001 : 1;
    return _mm512_shuffle_epi8(v, _mm512_set4_epi32(z | (12 + k) * dup, z | (8 + k) * dup,
                                                    z | (4 + k) * dup, z | k * dup));
}

/* Token k's state, named (as Q4X16_FOR_TOKENS in avx512.c: gcc keeps arrays of accumulators on
 * the stack). */
#define KT_FOR_TOKENS(op) op(0) op(1) op(2) op(3)
#define KT_INIT(k)                                                                                 \
    __m512 acc##k = _mm512_setzero_ps();                                                           \
    const elm_q8k_row x##k = elm_q8k_at(xq, nb * ELM_QK_K, nt > k ? k : 0);
#define KT_ZERO(k) __m512i isum##k = _mm512_setzero_si512();
#define KT_PAIR_ZERO(k) __m512i lo##k = _mm512_setzero_si512(), hi##k = _mm512_setzero_si512();
#define KT_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        const int8_t *q = x##k.qs + s * ELM_QK_K + 64 * p + 4 * e;                                 \
        lo##k = dpbusd_bcast(lo##k, wl, q);                                                        \
        hi##k = dpbusd_bcast(hi##k, wh, q + 32);                                                   \
    }
#define KT_SCALE(k)                                                                                \
    if (nt > k)                                                                                    \
        isum##k = _mm512_add_epi32(isum##k, _mm512_add_epi32(_mm512_mullo_epi32(lo##k, sa),       \
                                                             _mm512_mullo_epi32(hi##k, sb)));
#define KT_FINISH(k)                                                                               \
    if (nt > k) {                                                                                  \
        const int16_t *bs = x##k.bsum + 16 * s;                                                    \
        __m512i msum = _mm512_setzero_si512();                                                     \
        for (int j = 0; j < 8; j++) msum = dpwssd_bcast(msum, mp[j], bs + 2 * j);                  \
        const __m512 xd = _mm512_set1_ps(x##k.d[s]);                                               \
        acc##k = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum##k), _mm512_mul_ps(d, xd), acc##k);       \
        acc##k = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, xd), acc##k);      \
    }
#define KT_STORE(k)                                                                                \
    if (nt > k) _mm512_mask_storeu_ps(y + k * ldy, keep, acc##k);

/* The fifth bits of weights 64p + 4e + k (low nibbles) and 64p + 32 + 4e + k (high) from qh
 * vector e (packed.h's q5_kx16), at bit 4 of each byte. */
KQ_INLINE __m512i kt_bit4(__m512i qh, int bit) {
    const __m512i v = bit <= 4 ? _mm512_slli_epi16(qh, 4 - bit) : _mm512_srli_epi16(qh, bit - 4);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x10));
}

/* Q4_K's tile, or (five) Q5_K's. */
KQ_INLINE void tile_q45_kx16_n(const uint8_t *tile, int64_t nb, const void *xq, float *y,
                               int64_t ldy, int n_rows, const int nt, const bool five) {
    KT_FOR_TOKENS(KT_INIT)
    const __m512i low4 = _mm512_set1_epi8(0x0f), low6 = _mm512_set1_epi8(0x3f);
    const __m512i two = _mm512_set1_epi8(0x03);
    const size_t bytes = five ? ELM_Q5_KX16_BYTES : ELM_Q4_KX16_BYTES, sm = elm_kx16_sm_at(five);
    for (int64_t s = 0; s < nb; s++, tile += bytes) {
        elm_prefetch_span(tile + 4 * bytes, bytes);
        /* unpack_scale_min's words, 16 rows at once: scales 0-3, mins 0-3, scales 4-7, mins 4-7 */
        const __m512i u0 = _mm512_loadu_si512(tile + sm), u1 = _mm512_loadu_si512(tile + sm + 64);
        const __m512i u2 = _mm512_loadu_si512(tile + sm + 128);
        const __m512i sc[2] = {
            _mm512_and_si512(u0, low6),
            _mm512_or_si512(_mm512_and_si512(u2, low4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), two), 4))};
        KT_FOR_TOKENS(KT_ZERO)
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            KT_FOR_TOKENS(KT_PAIR_ZERO)
#pragma GCC unroll 8
            for (int e = 0; e < 8; e++) {
                const __m512i w = _mm512_loadu_si512(tile + 64 * (8 * p + e));
                __m512i wl = _mm512_and_si512(w, low4);
                __m512i wh = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
                if (five) {
                    const __m512i qh = _mm512_loadu_si512(tile + ELM_Q5_KX16_QH + 64 * e);
                    wl = _mm512_or_si512(wl, kt_bit4(qh, 2 * p));
                    wh = _mm512_or_si512(wh, kt_bit4(qh, 2 * p + 1));
                }
                KT_FOR_TOKENS(KT_DOT)
            }
            const __m512i sa = kt_byte(sc[p / 2], 2 * (p % 2), false);
            const __m512i sb = kt_byte(sc[p / 2], 2 * (p % 2) + 1, false);
            KT_FOR_TOKENS(KT_SCALE)
        }
        const __m512i m[2] = {
            _mm512_and_si512(u1, low6),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), two), 4))};
        __m512i mp[8];
        for (int j = 0; j < 8; j++) mp[j] = kt_byte(m[j / 4], j % 4, true);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + sm + 192)));
        const __m512 dmin =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + sm + 224)));
        KT_FOR_TOKENS(KT_FINISH)
    }
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    KT_FOR_TOKENS(KT_STORE)
}
#undef KT_INIT
#undef KT_ZERO
#undef KT_PAIR_ZERO
#undef KT_DOT
#undef KT_SCALE
#undef KT_FINISH

/* Packed IQ4_XS (packed.h, iq4_xsx16), as Q4_K's above: each code vector, masked and shifted,
 * gives four codes of one sub-block from each nibble, looked up in the grid + 128 (1..241, for
 * vpdpbusd's unsigned bytes) with one vpshufb; a sub-block's int32 sums start from -128 times
 * its activations' sum (its two 16-weight sums) and, times the sub-block's scale (vpmulld), add
 * up to the oracle's exact isum. */
#define KX_FOR_TOKENS(op) op(0) op(1) op(2) op(3)
#define KX_INIT(k)                                                                                 \
    __m512 acc##k = _mm512_setzero_ps();                                                           \
    const elm_q8k_row x##k = elm_q8k_at(xq, nb * ELM_QK_K, nt > k ? k : 0);
#define KX_ZERO(k) __m512i isum##k = _mm512_setzero_si512();
#define KX_SUB_INIT(k)                                                                             \
    __m512i p##k = _mm512_setzero_si512();                                                         \
    if (nt > k) {                                                                                  \
        const int16_t *bs = x##k.bsum + 16 * s + 2 * j;                                            \
        p##k = _mm512_set1_epi32(-128 * (bs[0] + bs[1]));                                          \
    }
#define KX_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        const int8_t *q = x##k.qs + s * ELM_QK_K + 32 * j + 4 * e;                                 \
        p##k = dpbusd_bcast(dpbusd_bcast(p##k, wl, q), wh, q + 16);                                \
    }
#define KX_SCALE(k)                                                                                \
    if (nt > k) isum##k = _mm512_add_epi32(isum##k, _mm512_mullo_epi32(p##k, sc));
#define KX_FINISH(k)                                                                               \
    if (nt > k)                                                                                    \
        acc##k = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum##k),                                      \
                                 _mm512_mul_ps(d, _mm512_set1_ps(x##k.d[s])), acc##k);

KQ_INLINE void tile_iq4_xsx16_n(const uint8_t *tile, int64_t nb, const void *xq, float *y,
                                int64_t ldy, int n_rows, const int nt) {
    KX_FOR_TOKENS(KX_INIT)
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i grid = _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)elm_iq4nl_grid)),
        _mm512_set1_epi8((char)0x80));
    for (int64_t s = 0; s < nb; s++, tile += ELM_IQ4_XSX16_BYTES) {
        elm_prefetch_span(tile + ELM_IQ4_XSX16_PREFETCH, ELM_IQ4_XSX16_BYTES);
        const __m512i sl = _mm512_loadu_si512(tile + ELM_IQ4_XSX16_SL);
        const __m512i sh4 = _mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(tile + ELM_IQ4_XSX16_SH))),
            4);
        KX_FOR_TOKENS(KX_ZERO)
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            KX_FOR_TOKENS(KX_SUB_INIT)
#pragma GCC unroll 4
            for (int e = 0; e < 4; e++) {
                const __m512i w = _mm512_loadu_si512(tile + 64 * (4 * j + e));
                const __m512i wl = _mm512_shuffle_epi8(grid, _mm512_and_si512(w, low4));
                const __m512i wh =
                    _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(w, 4), low4));
                KX_FOR_TOKENS(KX_DOT)
            }
            /* sub-block j's scale of each row: its 6 bits - 32 */
            const __m512i sc = _mm512_sub_epi32(
                _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi32(sl, 4 * j), _mm512_set1_epi32(0x0f)),
                    _mm512_and_si512(_mm512_srli_epi32(sh4, 2 * j), _mm512_set1_epi32(0x30))),
                _mm512_set1_epi32(32));
            KX_FOR_TOKENS(KX_SCALE)
        }
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + ELM_IQ4_XSX16_D)));
        KX_FOR_TOKENS(KX_FINISH)
    }
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    KT_FOR_TOKENS(KT_STORE)
}

/* Packed Q6_K (packed.h, q6_kx16): per super-block half h and m < 8, one ql vector of each
 * parity and one qh vector give the codes u = q + 32 (0..63) of four 32-weight runs, four
 * codes of 16 rows each, for vpdpbusd against four broadcast activation bytes; a 16-weight
 * group's int32 sums start from -32 times its activations' sum and, times its scale (the
 * int8 sign-extended, vpmulld), add up to the oracle's exact isum. */
#define K6_GROUP(k, c)                                                                             \
    __m512i p##c##k = _mm512_setzero_si512();                                                      \
    if (nt > k) p##c##k = _mm512_set1_epi32(-32 * bs##k[2 * c]);
#define K6_INIT(k)                                                                                 \
    const int16_t *bs##k = x##k.bsum + 16 * s + 8 * h + mh;                                        \
    K6_GROUP(k, 0) K6_GROUP(k, 1) K6_GROUP(k, 2) K6_GROUP(k, 3)
#define K6_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        const int8_t *q = x##k.qs + s * ELM_QK_K + 128 * h + 4 * m;                                \
        p0##k = dpbusd_bcast(p0##k, c0, q), p1##k = dpbusd_bcast(p1##k, c1, q + 32);               \
        p2##k = dpbusd_bcast(p2##k, c2, q + 64), p3##k = dpbusd_bcast(p3##k, c3, q + 96);          \
    }
#define K6_SCALE(k)                                                                                \
    if (nt > k)                                                                                    \
        isum##k = _mm512_add_epi32(                                                                \
            isum##k, _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(p0##k, s0),             \
                                                       _mm512_mullo_epi32(p1##k, s1)),            \
                                      _mm512_add_epi32(_mm512_mullo_epi32(p2##k, s2),             \
                                                       _mm512_mullo_epi32(p3##k, s3))));

/* Byte b of every 32-bit lane of v, sign-extended to int32. */
KQ_INLINE __m512i kt_sbyte(__m512i v, int b) {
    const int z = 0x808080; /* 0x80: a zero byte; byte b goes to the top and shifts back down */
    return _mm512_srai_epi32(_mm512_shuffle_epi8(v, _mm512_set4_epi32((12 + b) << 24 | z,
                                                                      (8 + b) << 24 | z,
                                                                      (4 + b) << 24 | z,
                                                                      b << 24 | z)),
                             24);
}

KQ_INLINE void tile_q6_kx16_n(const uint8_t *tile, int64_t nb, const void *xq, float *y,
                              int64_t ldy, int n_rows, const int nt) {
    KX_FOR_TOKENS(KX_INIT)
    const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
    for (int64_t s = 0; s < nb; s++, tile += ELM_Q6_KX16_BYTES) {
        elm_prefetch_span(tile + ELM_Q6_KX16_PREFETCH, ELM_Q6_KX16_BYTES);
        KX_FOR_TOKENS(KX_ZERO)
        __m512i sc[4];
        for (int w = 0; w < 4; w++) sc[w] = _mm512_loadu_si512(tile + ELM_Q6_KX16_SC + 64 * w);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
            for (int mh = 0; mh < 2; mh++) {
                KX_FOR_TOKENS(K6_INIT)
#pragma GCC unroll 4
                for (int m = 4 * mh; m < 4 * mh + 4; m++) {
                    const uint8_t *t = tile + 64 * (16 * h + m);
                    const __m512i la = _mm512_loadu_si512(t), lb = _mm512_loadu_si512(t + 512);
                    const __m512i qh =
                        _mm512_loadu_si512(tile + ELM_Q6_KX16_QH + 64 * (8 * h + m));
                    const __m512i c0 = _mm512_or_si512(
                        _mm512_and_si512(la, low4),
                        _mm512_and_si512(_mm512_slli_epi16(qh, 4), bits45));
                    const __m512i c1 = _mm512_or_si512(
                        _mm512_and_si512(lb, low4),
                        _mm512_and_si512(_mm512_slli_epi16(qh, 2), bits45));
                    const __m512i c2 = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi16(la, 4), low4),
                        _mm512_and_si512(qh, bits45));
                    const __m512i c3 = _mm512_or_si512(
                        _mm512_and_si512(_mm512_srli_epi16(lb, 4), low4),
                        _mm512_and_si512(_mm512_srli_epi16(qh, 2), bits45));
                    KX_FOR_TOKENS(K6_DOT)
                }
                /* group 8h + 2c + mh's scales, c < 4 */
                const __m512i s0 = kt_sbyte(sc[2 * h], mh), s1 = kt_sbyte(sc[2 * h], 2 + mh);
                const __m512i s2 = kt_sbyte(sc[2 * h + 1], mh);
                const __m512i s3 = kt_sbyte(sc[2 * h + 1], 2 + mh);
                KX_FOR_TOKENS(K6_SCALE)
            }
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + ELM_Q6_KX16_D)));
        KX_FOR_TOKENS(KX_FINISH)
    }
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    KT_FOR_TOKENS(KT_STORE)
}
#undef K6_GROUP
#undef K6_INIT
#undef K6_DOT
#undef K6_SCALE
#undef KX_FOR_TOKENS
#undef KX_INIT
#undef KX_ZERO
#undef KX_SUB_INIT
#undef KX_DOT
#undef KX_SCALE
#undef KX_FINISH
#undef KT_FOR_TOKENS
#undef KT_STORE

#define KT_TOKENS 4

/* A tile of Q4_K, Q5_K, Q6_K or IQ4_XS (t) for n_tok <= 4 tokens. */
KQ_INLINE void tile_kx16_of(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                            int64_t ldy, int n_rows, const elm_type t) {
#define KT_CALL(n)                                                                                 \
    if (t == ELM_TYPE_IQ4_XS) tile_iq4_xsx16_n(tile, nb, xq, y, ldy, n_rows, n);                   \
    else if (t == ELM_TYPE_Q6_K) tile_q6_kx16_n(tile, nb, xq, y, ldy, n_rows, n);                  \
    else tile_q45_kx16_n(tile, nb, xq, y, ldy, n_rows, n, t == ELM_TYPE_Q5_K);
    switch (n_tok) {
    case 1: KT_CALL(1) break;
    case 2: KT_CALL(2) break;
    case 3: KT_CALL(3) break;
    default: KT_CALL(4) break;
    }
#undef KT_CALL
}
