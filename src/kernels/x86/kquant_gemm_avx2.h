/* Prefill products of every 256-weight type in AVX2 (part of kquant_avx2.c) but Q4_K packed at
 * load (the table's tile_kx16; IQ4_XS packed at load comes here, its rows read back from the
 * tiles): 16 weight rows at a time, two halves of 8 rows with one row per 32-bit lane, as
 * kquant_gemm_avx512.h but without vpdpbusd.
 *
 * The rows' unpacked blocks (elm_kq_block) are repacked into a tile per super-block: the codes,
 * with lane r of vector k holding row r's columns 4k..4k+3; per 16-weight group the rows' scales
 * as int16 pairs (sc, sc); per pair of groups int16 pairs of correction weights. maddubs wants
 * unsigned × signed bytes, so the codes go in as one of (kq2_codes):
 * - Q2_K's, Q4_K's and Q5_K's, unsigned already (0..3, 0..15, 0..31: a group's four vectors'
 *   pairs, each within 2·31·127, sum in int16), their mins m the correction weights:
 *   Σ_g m[g]·bsum[g] comes off in float, scaled by dmin, as in the oracle;
 * - u = q + 32 for Q6_K (-32 <= q <= 31, so u <= 63): two vectors' pairs sum in int16, the
 *   correction weights 32·sc;
 * - u = q + 64 for the IQ2 types (|q| <= 43, so u <= 107 and a pair's products stay within
 *   maddubs' int16 against any activation byte), the correction weights 64·sc:
 *   Σ_g sc[g]·Σ q·x = Σ_g sc[g]·Σ u·x - Σ_g 64·sc[g]·bsum[g], exact in int32; their odd grid
 *   values (8, 25, 43) leave no room to sum two vectors' pairs, so each takes a madd;
 * - u = q/2 + 32 for IQ3_XXS, whose grid values are even (|q| <= 62, so 1 <= u <= 63): two
 *   vectors' pairs (each within 2·63·127) sum in int16 before one madd by the scales doubled,
 *   Σ q·x = 2·Σ u·x - 64·bsum, the correction weights 64·sc as above;
 * - u = q + 16 for the types with small codes (Q3_K, IQ1_S, IQ1_M: |q| <= 9; IQ3_S, whose grid
 *   values are 1, 3, ..., 15), whose pairs (within 2·31·127) a group's four vectors sum in int16
 *   before one madd by the scales, as Q2_K's do (kq2_sum_vectors);
 * - u = q + 1 for the ternary types (TQ1_0, TQ2_0: one scale a block, every sc 1), whose pairs
 *   (within 2·2·127, q8_K's bytes being within ±127) all 64 vectors of a block sum in int16
 *   (64·508 < 2^15) before one madd by ones; the offset comes off as Σ bsum of the block;
 * - IQ4_XS's signed grid values (up to 127 in size), whose absolute value is taken once a vector
 *   and whose signs go onto each token's activations (vpsignb): one step more a token and a
 *   vector than the unsigned codes (which measured 10-35% faster prefill, 2026-12-06; TQ2_0's
 *   block sums in place of its group sums, with the unrolled loop below, 138 -> 177-201 tok/s).
 * A vector of codes is loaded once for up to 4 tokens; madd by the scale pairs sums each row's
 * pair products times its group's scale into the row's lane: the oracle's integers. What a
 * vector and token costs is its vector operations: on Zen 5 the multiplies and the adds share
 * about 2.6 of them a cycle (measured: maddubs alone 2, with adds 2.65), and maddubs, madd and
 * the add into the sum are 3 for the IQ2 codes, 2.5 for IQ3_XXS's halved ones and 2.3 for the
 * small codes (gemm16 alone, one thread: 25, 31 and 33 multiply-adds a cycle, 2026-12-07).
 * llama.cpp's AVX2 build does the same for the i-quants (iqp.cpp: 8-row int8 panels, 4 tokens);
 * IQ4_XS prefill from the file's layout (dot_packed, 2 rows by 4 tokens) ran at 0.64× of it. */

typedef struct kq_tile2_sb {
    uint32_t q[64][16];
    int32_t sc[16][16]; /* int16 pairs (sc, sc) of group g for row r */
    int32_t c[8][16];   /* int16 pairs of correction weights of groups 2h, 2h + 1 */
    float d[16], e[16];
} kq_tile2_sb;
_Static_assert(sizeof(kq_tile2_sb) == ELM_KQ_TILE_SB_BYTES, "tile layout");


/* How type t's codes go into the tile (above). */
enum { KQ2_SIGNED, KQ2_MINS, KQ2_OFFSET, KQ2_HALVED, KQ2_WIDE, KQ2_SMALL, KQ2_TERNARY };
KQ_INLINE int kq2_codes(elm_type t) {
    switch (t) {
    case ELM_TYPE_IQ4_XS: return KQ2_SIGNED;
    case ELM_TYPE_IQ3_XXS: return KQ2_HALVED;
    case ELM_TYPE_Q2_K:
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: return KQ2_MINS;
    case ELM_TYPE_Q6_K: return KQ2_WIDE;
    case ELM_TYPE_Q3_K:
    case ELM_TYPE_IQ1_S:
    case ELM_TYPE_IQ1_M:
    case ELM_TYPE_IQ3_S: return KQ2_SMALL;
    case ELM_TYPE_TQ1_0:
    case ELM_TYPE_TQ2_0: return KQ2_TERNARY;
    default: return KQ2_OFFSET;
    }
}

/* The offset of type t's codes over its values in the tile (above), 0 for none: u = q + offset,
 * and 2·u = q + 64 for IQ3_XXS's halved codes; the correction weights are offset·sc. */
KQ_INLINE int kq2_offset(int codes) {
    return codes == KQ2_OFFSET || codes == KQ2_HALVED ? 64
           : codes == KQ2_WIDE                        ? 32
           : codes == KQ2_SMALL                       ? 16
           : codes == KQ2_TERNARY                     ? 1
                                                      : 0;
}

/* How many code vectors in a row sum their maddubs pairs in int16 before one madd by the scales:
 * one (each vector's pairs go through madd) for the codes up to 127, two for those up to 63
 * (IQ3_XXS's halved ones, Q6_K's), a group's four for the unsigned codes up to 31 (pairs within
 * 2·31·128, four of them within 2^15), the whole block's 64 for the ternary ones. */
KQ_INLINE int kq2_sum_vectors(int codes) {
    return codes == KQ2_TERNARY                      ? 64
           : codes == KQ2_MINS || codes == KQ2_SMALL ? 4
           : codes == KQ2_HALVED || codes == KQ2_WIDE ? 2
                                                     : 1;
}

#include "kernels/x86/transpose.h"

/* The tile of n_rows <= 16 rows of nsb blocks each, row after row at blk (rows past n_rows are
 * zeros; their results are never stored). The codes go in 8 rows by 8 lanes at a time, through
 * transpose8: one row's u32 after another, they had been 4% of an IQ2_XS gemm16. */
KQ_FN static void kq2_repack(elm_type t, const elm_kq_block *blk, int n_rows, int64_t nsb,
                             kq_tile2_sb *tile) {
    const int codes = kq2_codes(t);
    /* the offset in each byte (IQ3_XXS's 32 on its halved codes: 2·32 off the values) */
    const __m256i o = _mm256_set1_epi8((char)(codes == KQ2_HALVED ? 32 : kq2_offset(codes)));
    const __m256i low7 = _mm256_set1_epi8(0x7f);
    const int f = codes == KQ2_MINS ? 1 : kq2_offset(codes); /* the correction weights' factor */
    if (n_rows < 16) memset(tile, 0, (size_t)nsb * sizeof *tile);
    for (int64_t s = 0; s < nsb; s++)
        for (int h = 0; 8 * h < n_rows; h++)
            for (int k = 0; k < 64; k += 8) {
                __m256 v[8];
                for (int i = 0; i < 8; i++) {
                    const int r = 8 * h + i;
                    if (r >= n_rows) {
                        v[i] = _mm256_setzero_ps();
                        continue;
                    }
                    __m256i q = kq_load(blk[r * nsb + s].q + 4 * k);
                    /* q/2 in each byte: shifted right, each byte's top bit kept */
                    if (codes == KQ2_HALVED)
                        q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 1), low7),
                                            _mm256_andnot_si256(low7, q));
                    v[i] = _mm256_castsi256_ps(_mm256_add_epi8(q, o));
                }
                transpose8(v);
                for (int j = 0; j < 8; j++)
                    _mm256_store_ps((float *)(tile[s].q[k + j] + 8 * h), v[j]);
            }
    const unsigned sc_factor = codes == KQ2_HALVED ? 2 : 1;
    for (int r = 0; r < n_rows; r++)
        for (int64_t s = 0; s < nsb; s++) {
            const elm_kq_block *b = blk + r * nsb + s;
            kq_tile2_sb *ts = tile + s;
            for (int g = 0; g < 16; g++)
                ts->sc[g][r] = (int32_t)((uint16_t)(sc_factor * b->sc[g]) * 0x10001u);
            for (int h = 0; h < 8; h++) {
                const int16_t *c = codes == KQ2_MINS ? b->m : b->sc;
                ts->c[h][r] = (int32_t)((uint32_t)(uint16_t)(f * c[2 * h]) |
                                        (uint32_t)(uint16_t)(f * c[2 * h + 1]) << 16);
            }
            ts->d[r] = b->d, ts->e[r] = b->dmin;
        }
}

/* Σ of a block's 16 bsum fields: its activations' sum. */
KQ_INLINE int32_t kq2_bsum_block(const int16_t *bsum) {
    __m256i v = _mm256_madd_epi16(kq_load(bsum), _mm256_set1_epi16(1));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
    return _mm_cvtsi128_si32(_mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1)));
}

/* maddubs of a vector of codes w (|w| for the signed ones, with w's signs on the activations)
 * and the 4 activations at x, broadcast to the 8 rows: int16 pair sums per row. */
KQ_INLINE __m256i kq2_mul(const int codes, __m256i w, __m256i aw, const int8_t *x) {
    const __m256i xb = kq_bcast32(x);
    return codes == KQ2_SIGNED ? _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xb, w))
                               : _mm256_maddubs_epi16(w, xb);
}

/* isum + one token's products with a group's four code vectors (its 16 activations at x) times
 * the group's scales sc, the pairs of kq2_sum_vectors(codes) vectors summed in int16 first. A
 * group, token after token, is one expression: gcc's reassociated sums over the rolled loops
 * went to the stack (IQ3_S's gemm16 alone, one thread: 26 -> 32 multiply-adds a cycle on Zen 5,
 * 2026-12-07). */
KQ_INLINE __m256i kq2_group(const int codes, const __m256i *w, const __m256i *aw, __m256i sc,
                            const int8_t *x, __m256i isum) {
    const __m256i p0 = kq2_mul(codes, w[0], aw[0], x), p1 = kq2_mul(codes, w[1], aw[1], x + 4);
    const __m256i p2 = kq2_mul(codes, w[2], aw[2], x + 8), p3 = kq2_mul(codes, w[3], aw[3], x + 12);
    switch (kq2_sum_vectors(codes)) {
    case 1:
        return _mm256_add_epi32(
            isum, _mm256_add_epi32(
                      _mm256_add_epi32(_mm256_madd_epi16(p0, sc), _mm256_madd_epi16(p1, sc)),
                      _mm256_add_epi32(_mm256_madd_epi16(p2, sc), _mm256_madd_epi16(p3, sc))));
    case 2:
        return _mm256_add_epi32(
            isum, _mm256_add_epi32(_mm256_madd_epi16(_mm256_add_epi16(p0, p1), sc),
                                   _mm256_madd_epi16(_mm256_add_epi16(p2, p3), sc)));
    default:
        return _mm256_add_epi32(
            isum, _mm256_madd_epi16(
                      _mm256_add_epi16(_mm256_add_epi16(p0, p1), _mm256_add_epi16(p2, p3)), sc));
    }
}

/* Token i's sums, named (as ELM_FOR_6_TOKENS): arrays of them went to the stack. */
#define KQ2_FOR_4(op) op(0) op(1) op(2) op(3)
#define KQ2_ACC(i) __m256 acc##i = _mm256_setzero_ps();
#define KQ2_ZERO(i) __m256i isum##i = _mm256_setzero_si256(), corr##i = isum##i;
#define KQ2_PART_ZERO(i) __m256i part##i = _mm256_setzero_si256();
#define KQ2_PART_SCALE(i)                                                                          \
    if (nx > i) isum##i = _mm256_add_epi32(isum##i, _mm256_madd_epi16(part##i, sc));
#define KQ2_DOT(i)                                                                                 \
    if (nx > i)                                                                                    \
        part##i = _mm256_add_epi16(part##i, kq2_mul(codes, w, w, x[i].qs + s * ELM_QK_K + 4 * k));
#define KQ2_GROUP(i)                                                                               \
    if (nx > i) isum##i = kq2_group(codes, w, aw, sc, x[i].qs + s * ELM_QK_K + 16 * g, isum##i);
#define KQ2_CORR(i)                                                                                \
    if (nx > i)                                                                                    \
        corr##i = _mm256_add_epi32(                                                                \
            corr##i, _mm256_madd_epi16(c, kq_bcast32(x[i].bsum + 16 * s + 2 * h)));
#define KQ2_CORR_BLOCK(i)                                                                          \
    if (nx > i) corr##i = _mm256_set1_epi32(kq2_bsum_block(x[i].bsum + 16 * s));
#define KQ2_FLOAT(i)                                                                               \
    if (nx > i) {                                                                                  \
        const __m256 xd = _mm256_set1_ps(x[i].d[s]);                                               \
        if (kq2_offset(codes)) isum##i = _mm256_sub_epi32(isum##i, corr##i);                       \
        acc##i = _mm256_fmadd_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(isum##i), acc##i);       \
        if (codes == KQ2_MINS)                                                                     \
            acc##i = _mm256_fnmadd_ps(_mm256_mul_ps(e, xd), _mm256_cvtepi32_ps(corr##i), acc##i);  \
    }
#define KQ2_STORE(i)                                                                               \
    if (nx > i) {                                                                                  \
        float out[8];                                                                              \
        _mm256_storeu_ps(out, acc##i);                                                             \
        memcpy(y + i * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

/* y[i·ldy + r] for nx <= 4 tokens and rows [8·half, 8·half + n_rows) of the tile; codes: the
 * type's kq2_codes. */
KQ_INLINE void kq2_tile_dot(const int codes, const kq_tile2_sb *tile, int half, int64_t nsb,
                            const elm_q8k_row *x, const int nx, int n_rows, float *y,
                            int64_t ldy) {
    KQ2_FOR_4(KQ2_ACC)
    for (int64_t s = 0; s < nsb; s++) {
        const kq_tile2_sb *o = tile + s;
        KQ2_FOR_4(KQ2_ZERO)
        if (codes == KQ2_TERNARY) { /* every pair of the block summed in int16 */
            const __m256i sc = _mm256_set1_epi16(1);
            KQ2_FOR_4(KQ2_PART_ZERO)
            /* rolled, gcc copied the sums between registers each step */
#pragma GCC unroll 4
            for (int k = 0; k < 64; k++) {
                const __m256i w = kq_load(o->q[k] + 8 * half);
                KQ2_FOR_4(KQ2_DOT)
            }
            KQ2_FOR_4(KQ2_PART_SCALE)
        }
        for (int g = 0; codes != KQ2_TERNARY && g < 16; g++) {
            /* a group's four vectors, loaded once for the tokens */
            const __m256i sc = kq_load(o->sc[g] + 8 * half);
            __m256i w[4], aw[4];
            for (int j = 0; j < 4; j++) {
                w[j] = kq_load(o->q[4 * g + j] + 8 * half);
                aw[j] = codes == KQ2_SIGNED ? _mm256_abs_epi8(w[j]) : w[j];
            }
            KQ2_FOR_4(KQ2_GROUP)
        }
        if (codes == KQ2_TERNARY) {
            KQ2_FOR_4(KQ2_CORR_BLOCK)
        }
        for (int h = 0; codes != KQ2_SIGNED && codes != KQ2_TERNARY && h < 8; h++) {
            const __m256i c = kq_load(o->c[h] + 8 * half);
            KQ2_FOR_4(KQ2_CORR)
        }
        const __m256 d = _mm256_loadu_ps(o->d + 8 * half), e = _mm256_loadu_ps(o->e + 8 * half);
        KQ2_FOR_4(KQ2_FLOAT)
    }
    KQ2_FOR_4(KQ2_STORE)
}
#undef KQ2_FOR_4
#undef KQ2_ACC
#undef KQ2_ZERO
#undef KQ2_PART_ZERO
#undef KQ2_PART_SCALE
#undef KQ2_DOT
#undef KQ2_GROUP
#undef KQ2_CORR
#undef KQ2_CORR_BLOCK
#undef KQ2_FLOAT
#undef KQ2_STORE

#define KQ2_TILE_NX(M)                                                                       \
    switch (nx) {                                                                            \
    case 1: kq2_tile_dot(M, tile, h, nsb, x, 1, nr, yh, ldy); break;                         \
    case 2: kq2_tile_dot(M, tile, h, nsb, x, 2, nr, yh, ldy); break;                         \
    case 3: kq2_tile_dot(M, tile, h, nsb, x, 3, nr, yh, ldy); break;                         \
    default: kq2_tile_dot(M, tile, h, nsb, x, 4, nr, yh, ldy); break;                        \
    }

KQ_FN static void gemm16(elm_type t, const elm_kq_block *blk, int n_rows, int64_t cols,
                         const void *xq, int64_t nt, float *y, int64_t ldy, void *scratch) {
    const int64_t nsb = cols / ELM_QK_K;
    kq_tile2_sb *tile = scratch;
    kq2_repack(t, blk, n_rows, nsb, tile);
    for (int64_t i = 0; i < nt; i += 4) {
        elm_q8k_row x[4];
        const int nx = nt - i < 4 ? (int)(nt - i) : 4;
        for (int j = 0; j < nx; j++) x[j] = elm_q8k_at(xq, cols, i + j);
        for (int h = 0; h < 2 && 8 * h < n_rows; h++) {
            const int nr = n_rows - 8 * h < 8 ? n_rows - 8 * h : 8;
            float *yh = y + i * ldy + 8 * h;
            switch (kq2_codes(t)) {
            case KQ2_SIGNED: KQ2_TILE_NX(KQ2_SIGNED) break;
            case KQ2_MINS: KQ2_TILE_NX(KQ2_MINS) break;
            case KQ2_HALVED: KQ2_TILE_NX(KQ2_HALVED) break;
            case KQ2_WIDE: KQ2_TILE_NX(KQ2_WIDE) break;
            case KQ2_SMALL: KQ2_TILE_NX(KQ2_SMALL) break;
            case KQ2_TERNARY: KQ2_TILE_NX(KQ2_TERNARY) break;
            default: KQ2_TILE_NX(KQ2_OFFSET) break;
            }
        }
    }
}
#undef KQ2_TILE_NX

/* The types gemm16 takes here: all of them. The k-quants had gone through dot_packed, 2 rows by
 * 4 tokens from the file's blocks; since the tile's loop was reworked it is 2.1-2.4x that
 * (`kernel_rate --prefill --file-layout`, 2026-12-07: Q4_K 49 -> 118, Q5_K 47 -> 117, Q6_K 53 ->
 * 111 G multiply-adds/s): the Q5_K and Q6_K weights of a dense model, and a mapped file's Q4_K
 * (a mixture's experts' stacks among them). */
#define KQ_GEMM16_TYPES                                                                        \
    (1ull << ELM_TYPE_IQ4_XS | 1ull << ELM_TYPE_Q2_K | 1ull << ELM_TYPE_Q3_K |                     \
     1ull << ELM_TYPE_Q4_K | 1ull << ELM_TYPE_Q5_K | 1ull << ELM_TYPE_Q6_K |                       \
     1ull << ELM_TYPE_IQ2_XXS | 1ull << ELM_TYPE_IQ2_XS | 1ull << ELM_TYPE_IQ2_S |                 \
     1ull << ELM_TYPE_IQ3_XXS | 1ull << ELM_TYPE_IQ3_S | 1ull << ELM_TYPE_IQ1_S |                  \
     1ull << ELM_TYPE_IQ1_M | 1ull << ELM_TYPE_TQ1_0 | 1ull << ELM_TYPE_TQ2_0)
