/* Packed Q4_K and IQ4_XS (packed.h, q4_kx16 and iq4_xsx16) in AVX2 (part of kquant_avx2.c): the
 * AVX2 table's micro-kernels for every token count, decode included, over 16 rows as two halves
 * of 8, one row per 32-bit lane (kquant_tile_avx512.h is the AVX-512 table's). */
#include "kernels/x86/iq4nl_avx2.h"

/* ---- Q4_K ----
 * One half of a tile (8 rows, a 32-bit lane each) at a time, up to 2 tokens, so that a pair of
 * sub-blocks' int16 sums, the int32 isum and the float sum of each token fit the 16 registers.
 * The halves take turns every KH_CHUNK super-blocks (the second reads them from L1): a pass of
 * one half over the whole tile, then of the other, left the memory idle while the second ran.
 * The codes are unsigned (0..15), so maddubs takes them as they are, and a sub-block's eight
 * pair sums stay within 8·2·15·127 < 2^15 in 16 bits before one madd by its scale (an int16
 * pair, both halves the scale); the mins' Σ m·bsum is a madd of each min, paired alike, with two
 * adjacent 16-weight sums. The integers are the oracle's; the float steps are fused.
 * The first half prefetches the super-block ELM_Q4_KX16_PREFETCH ahead a line per vector it
 * reads, not two super-blocks' 72 lines at once: the burst filled the miss buffers and stalled
 * the core (16% of the kernel's samples on the prefetches; LFM2-1.2B AVX2 decode, Zen 5, 2
 * threads, 2026-12-07: 53-57 -> 63-65 tok/s, alternating). */

/* Byte k of every 32-bit lane of v as an int32 (pair: as two int16, both that byte). */
KQ_INLINE __m256i kq_byte_lanes(__m256i v, int k, bool pair) {
    const int z = pair ? (int)0x80008000u : (int)0x80808000u; /* 0x80: a zero byte */
    const int dup = pair ? 0x10001 : 1;
    const __m128i c = _mm_setr_epi32(z | k * dup, z | (4 + k) * dup, z | (8 + k) * dup,
                                     z | (12 + k) * dup);
    return _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(c));
}

KQ_INLINE __m256i kq_bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

#define KH_FOR_TOKENS(op) op(0) op(1)
#define KH_INIT(k)                                                                                 \
    __m256 acc##k = accs[k];                                                                       \
    const elm_q8k_row x##k = elm_q8k_at(xq, nb * ELM_QK_K, nt > k ? k : 0);
#define KH_ZERO(k) __m256i isum##k = _mm256_setzero_si256(), msum##k = _mm256_setzero_si256();
#define KH_PAIR_ZERO(k) __m256i lo##k = _mm256_setzero_si256(), hi##k = _mm256_setzero_si256();
/* The empty asm keeps each sum a serial chain: gcc otherwise reassociated the eight adds into
 * trees over values it had hoisted, more of them live than the 16 registers (a third of the
 * kernel's instructions were stack moves). */
#define KH_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        const int8_t *q = x##k.qs + s * ELM_QK_K + 64 * p + 4 * e;                                 \
        lo##k = _mm256_add_epi16(lo##k, _mm256_maddubs_epi16(wl, kq_bcast32(q)));                  \
        hi##k = _mm256_add_epi16(hi##k, _mm256_maddubs_epi16(wh, kq_bcast32(q + 32)));             \
        __asm__("" : "+x"(lo##k), "+x"(hi##k));                                                    \
    }
/* the pair's scales times its sums, its mins times its two 32-weight activation sums (each
 * two adjacent 16-weight sums) */
#define KH_SCALE(k)                                                                                \
    if (nt > k) {                                                                                  \
        const int16_t *bs = x##k.bsum + 16 * s + 4 * p;                                            \
        isum##k = _mm256_add_epi32(isum##k, _mm256_add_epi32(_mm256_madd_epi16(lo##k, sa),         \
                                                             _mm256_madd_epi16(hi##k, sb)));       \
        msum##k = _mm256_add_epi32(msum##k, _mm256_add_epi32(_mm256_madd_epi16(ma, kq_bcast32(bs)),\
                                                             _mm256_madd_epi16(mb, kq_bcast32(bs + 2))));\
        __asm__("" : "+x"(isum##k), "+x"(msum##k));                                                \
    }
#define KH_FINISH(k)                                                                               \
    if (nt > k) {                                                                                  \
        const __m256 xd = _mm256_set1_ps(x##k.d[s]);                                               \
        acc##k = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum##k), _mm256_mul_ps(d, xd), acc##k);       \
        acc##k = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum##k), _mm256_mul_ps(dmin, xd), acc##k);   \
    }
#define KH_STORE(k) accs[k] = acc##k;

/* Super-blocks [s0, s1) of one half of the tile, added to accs[t] for t < nt. */
KQ_INLINE void half_q4_kx16_n(const uint8_t *tile, int half, int64_t s0, int64_t s1, int64_t nb,
                              const void *xq, __m256 accs[2], const int nt) {
    KH_FOR_TOKENS(KH_INIT)
    const __m256i low4 = _mm256_set1_epi8(0x0f), low6 = _mm256_set1_epi8(0x3f);
    const __m256i two = _mm256_set1_epi8(0x03);
    tile += s0 * ELM_Q4_KX16_BYTES;
    for (int64_t s = s0; s < s1; s++, tile += ELM_Q4_KX16_BYTES) {
        const uint8_t *h = tile + 32 * half;
        /* unpack_scale_min's words, 8 rows at once: scales 0-3, mins 0-3, scales 4-7, mins 4-7 */
        const __m256i u0 = kq_load(h + 2048), u1 = kq_load(h + 2112), u2 = kq_load(h + 2176);
        const __m256i sc0 = _mm256_and_si256(u0, low6), m0 = _mm256_and_si256(u1, low6);
        const __m256i sc1 = _mm256_or_si256(
            _mm256_and_si256(u2, low4),
            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), two), 4));
        const __m256i m1 = _mm256_or_si256(
            _mm256_and_si256(_mm256_srli_epi32(u2, 4), low4),
            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), two), 4));
        KH_FOR_TOKENS(KH_ZERO)
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            KH_FOR_TOKENS(KH_PAIR_ZERO)
#pragma GCC unroll 8
            for (int e = 0; e < 8; e++) {
                if (half == 0) elm_prefetch_line(tile + ELM_Q4_KX16_PREFETCH + 64 * (8 * p + e));
                const __m256i w = kq_load(h + 64 * (8 * p + e));
                const __m256i wl = _mm256_and_si256(w, low4), wh = kq_bits(w, 4, 0x0f);
                KH_FOR_TOKENS(KH_DOT)
            }
            if (half == 0) elm_prefetch_line(tile + ELM_Q4_KX16_PREFETCH + 2048 + 64 * p);
            const int k = 2 * (p % 2);
            const __m256i sa = kq_byte_lanes(p < 2 ? sc0 : sc1, k, true);
            const __m256i sb = kq_byte_lanes(p < 2 ? sc0 : sc1, k + 1, true);
            const __m256i ma = kq_byte_lanes(p < 2 ? m0 : m1, k, true);
            const __m256i mb = kq_byte_lanes(p < 2 ? m0 : m1, k + 1, true);
            KH_FOR_TOKENS(KH_SCALE)
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + 2240 + 16 * half)));
        const __m256 dmin =
            _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + 2272 + 16 * half)));
        KH_FOR_TOKENS(KH_FINISH)
    }
    KH_FOR_TOKENS(KH_STORE)
}
#undef KH_FOR_TOKENS
#undef KH_INIT
#undef KH_ZERO
#undef KH_PAIR_ZERO
#undef KH_DOT
#undef KH_SCALE
#undef KH_FINISH
#undef KH_STORE

/* ---- IQ4_XS ----
 * The same halves, turns and prefetches as Q4_K's. Its grid values g would not fit maddubs'
 * unsigned operand, so each is split as g + 139 = 16·v + r(v) (iq4nl_avx2.h, as avx2.c's IQ4_NL
 * tiles), v the 4-bit code itself and r(v) in 0..26 looked up by one vpshufb: a sub-block's eight
 * pair sums of the codes stay within 8·2·15·127 < 2^15 in 16 bits and go through one madd by 16·sc;
 * the residues' through a madd by sc every four pair sums (4·2·26·127 < 2^15). That gives
 * Σ sc·(g + 139)·x in int32; the offset comes off as 139·sc times the sub-block's two 16-weight
 * activation sums (a madd with the bsum pair). The integers are the oracle's (Σ sc·g·x); the
 * float step is fused. */
#define KX_FOR_TOKENS(op) op(0) op(1)
#define KX_INIT(k)                                                                                 \
    __m256 acc##k = accs[k];                                                                       \
    const elm_q8k_row x##k = elm_q8k_at(xq, nb * ELM_QK_K, nt > k ? k : 0);
#define KX_ZERO(k) __m256i isum##k = _mm256_setzero_si256(), osum##k = isum##k;
#define KX_SUB_ZERO(k) __m256i a##k = _mm256_setzero_si256(), b##k = a##k;
#define KX_RESIDUES(k)                                                                             \
    if (nt > k) {                                                                                  \
        isum##k = _mm256_add_epi32(isum##k, _mm256_madd_epi16(b##k, sc));                          \
        b##k = _mm256_setzero_si256();                                                             \
    }
#define KX_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        const int8_t *q = x##k.qs + s * ELM_QK_K + 32 * j + 4 * e;                                 \
        const __m256i xl = kq_bcast32(q), xh = kq_bcast32(q + 16);                                 \
        a##k = _mm256_add_epi16(a##k, _mm256_add_epi16(_mm256_maddubs_epi16(cl, xl),               \
                                                       _mm256_maddubs_epi16(ch, xh)));             \
        b##k = _mm256_add_epi16(b##k, _mm256_add_epi16(_mm256_maddubs_epi16(rl, xl),               \
                                                       _mm256_maddubs_epi16(rh, xh)));             \
        __asm__("" : "+x"(a##k), "+x"(b##k));                                                      \
    }
#define KX_SCALE(k)                                                                                \
    if (nt > k) {                                                                                  \
        isum##k = _mm256_add_epi32(isum##k, _mm256_madd_epi16(a##k, sc16));                        \
        osum##k = _mm256_add_epi32(                                                                \
            osum##k, _mm256_madd_epi16(sc, kq_bcast32(x##k.bsum + 16 * s + 2 * j)));               \
        __asm__("" : "+x"(isum##k), "+x"(osum##k));                                                \
    }
#define KX_FINISH(k)                                                                               \
    if (nt > k) {                                                                                  \
        const __m256i v = _mm256_sub_epi32(                                                        \
            isum##k, _mm256_mullo_epi32(osum##k, _mm256_set1_epi32(IQ4NL_SPLIT_ZERO)));            \
        const __m256 dx = _mm256_mul_ps(d, _mm256_set1_ps(x##k.d[s]));                             \
        acc##k = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), dx, acc##k);                               \
    }
#define KX_STORE(k) accs[k] = acc##k;

/* Super-blocks [s0, s1) of one half of the tile, added to accs[t] for t < nt. */
KQ_INLINE void half_iq4_xsx16_n(const uint8_t *tile, int half, int64_t s0, int64_t s1, int64_t nb,
                                const void *xq, __m256 accs[2], const int nt) {
    KX_FOR_TOKENS(KX_INIT)
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i residues = iq4nl_residues();
    tile += s0 * ELM_IQ4_XSX16_BYTES;
    for (int64_t s = s0; s < s1; s++, tile += ELM_IQ4_XSX16_BYTES) {
        const uint8_t *h = tile + 32 * half;
        const __m256i sl = kq_load(tile + ELM_IQ4_XSX16_SL + 32 * half);
        const __m256i sh4 = _mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(tile + ELM_IQ4_XSX16_SH +
                                                                    16 * half))),
            4);
        KX_FOR_TOKENS(KX_ZERO)
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            /* sub-block j's scale of each row, - 32, as an int16 pair (and 16 times it) */
            const __m256i ls = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi32(sl, 4 * j), _mm256_set1_epi32(0x0f)),
                _mm256_and_si256(_mm256_srli_epi32(sh4, 2 * j), _mm256_set1_epi32(0x30)));
            const __m256i s32 = _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
            const __m256i sc = _mm256_or_si256(_mm256_and_si256(s32, _mm256_set1_epi32(0xffff)),
                                               _mm256_slli_epi32(s32, 16));
            const __m256i sc16 = _mm256_slli_epi16(sc, 4);
            KX_FOR_TOKENS(KX_SUB_ZERO)
#pragma GCC unroll 4
            for (int e = 0; e < 4; e++) {
                if (half == 0) elm_prefetch_line(tile + ELM_IQ4_XSX16_PREFETCH + 64 * (4 * j + e));
                const __m256i w = kq_load(h + 64 * (4 * j + e));
                const __m256i cl = _mm256_and_si256(w, low4), ch = kq_bits(w, 4, 0x0f);
                const __m256i rl = _mm256_shuffle_epi8(residues, cl);
                const __m256i rh = _mm256_shuffle_epi8(residues, ch);
                KX_FOR_TOKENS(KX_DOT)
                if (e % 2 == 1) KX_FOR_TOKENS(KX_RESIDUES)
            }
            KX_FOR_TOKENS(KX_SCALE)
        }
        if (half == 0) {
            elm_prefetch_line(tile + ELM_IQ4_XSX16_PREFETCH + ELM_IQ4_XSX16_SL);
            elm_prefetch_line(tile + ELM_IQ4_XSX16_PREFETCH + ELM_IQ4_XSX16_SH);
        }
        const __m256 d = _mm256_cvtph_ps(
            _mm_loadu_si128((const __m128i *)(tile + ELM_IQ4_XSX16_D + 16 * half)));
        KX_FOR_TOKENS(KX_FINISH)
    }
    KX_FOR_TOKENS(KX_STORE)
}
#undef KX_FOR_TOKENS
#undef KX_INIT
#undef KX_ZERO
#undef KX_SUB_ZERO
#undef KX_RESIDUES
#undef KX_DOT
#undef KX_SCALE
#undef KX_FINISH
#undef KX_STORE

enum { KH_CHUNK = 2 };

/* A whole tile of Q4_K or IQ4_XS (t) for n_tok <= 2 tokens, the halves taking turns. */
KQ_INLINE void tile_kx16_of(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                            int64_t ldy, int n_rows, const elm_type t) {
    __m256 accs[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()},
                         {_mm256_setzero_ps(), _mm256_setzero_ps()}};
#define KH_CALL(n)                                                                                 \
    if (t == ELM_TYPE_IQ4_XS) half_iq4_xsx16_n(tile, h, s0, s1, nb, xq, accs[h], n);               \
    else half_q4_kx16_n(tile, h, s0, s1, nb, xq, accs[h], n);
    for (int64_t s0 = 0; s0 < nb; s0 += KH_CHUNK) {
        const int64_t s1 = s0 + KH_CHUNK < nb ? s0 + KH_CHUNK : nb;
        for (int h = 0; h < 2 && 8 * h < n_rows; h++) {
            if (n_tok == 1) {
                KH_CALL(1)
            } else {
                KH_CALL(2)
            }
        }
    }
#undef KH_CALL
    for (int h = 0; h < 2 && 8 * h < n_rows; h++)
        for (int t = 0; t < n_tok; t++) {
            float o[8];
            _mm256_storeu_ps(o, accs[h][t]);
            memcpy(y + t * ldy + 8 * h, o,
                   sizeof(float) * (size_t)(n_rows - 8 * h < 8 ? n_rows - 8 * h : 8));
        }
}
#define KT_TOKENS 2
/* IQ4_XS prefill: its tiles' lookups, on every pass of two tokens, made it 0.68x gemm16's (pp256,
 * TinyLlama-shaped IQ4_XS, Zen 5, 2 threads, 2026-12-07: 128 against 187 tok/s) */
#define KQ_GEMM16_PACKED_TYPES (1ull << ELM_TYPE_IQ4_XS)
