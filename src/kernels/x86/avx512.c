/* x86-64 AVX-512 kernels (F, BW, VL, DQ, VNNI and VBMI, as on Ice Lake, Sapphire Rapids and
 * Zen 4); CPUs with an older AVX-512 get the AVX2 table.
 *
 * Decode of the 4/5-bit block types works on four blocks per 512-bit vector pair. The blocks stay
 * where they lie in the file (18 to 24 bytes each, so no vector load lines up with them): two
 * plain loads cover a group of four and byte permutes across both registers (vpermt2b, VBMI) pull
 * out the quants, the fifth bits and the f16 scales, a few instructions per block where extracting
 * them one block at a time costs a dozen; the activations are laid out once per call in the order
 * the quants come out. The zero point of the unsigned codes is taken off in integers by starting
 * vpdpbusd's sums at -(o/4)·Σx.qs per lane. Q8_0 rows of a mapped file, float types and odd
 * block counts use x86_body.h, with vpdpbusd as its integer step.
 *
 * Prefill has 512-bit micro-kernels where a vector holds one column of all 16 rows of a tile: the
 * weights of a block are loaded once and multiplied with each token's activations broadcast from
 * memory. */
#include "codecs/kquant_codec.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/targets.h"
#include "kernels/x86/cpuid.h"
#include "kernels/kquant.h"
#include "kernels/packed.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define X86_FN __attribute__((target(ELM_TARGET_AVX512)))

X86_FN static inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
}

#include "kernels/x86/x86_body.h"
#include "kernels/x86/vnni512.h"
#include "kernels/x86/tile512.h"

/* Tokens per micro-kernel call: accumulators for NT tokens plus the 8 weight vectors of a block
 * (q8) fit in the 32 registers. Up to 4 tokens (a batched decode step of 4 sequences) stay in the
 * row kernels, which unpack each weight group once for all of them (row_nibbles) instead of
 * repacking the weights into tiles. */
enum { Q8_TOKENS = 8, F32_TOKENS = 16, GEMM_MIN_TOKENS = 5 };

/* The tile's signed weights become unsigned by adding 128 (xor 0x80), vpdpbusd's operand order;
 * the 128·Σx.qs this adds is taken back in integers: y = d·x.d·(dot - 128·x.sum) + m·x.s. The
 * tiles a prefill repacks (gemm.h: float d and m) and Q8_0's packed q8_0x16 tiles (packed.h: f16
 * d, no m, streamed from memory with a prefetch ahead) hold the codes alike and sum the same
 * integers in the same float steps, so a prefill keeps its bits either way. */
X86_INLINE void tile_q8_512_n(const uint8_t *tile, int64_t nb, const void *xq, float *y,
                              int64_t ldy, int n_rows, const int nt, const bool packed) {
    __m512 acc[Q8_TOKENS];
    elm_q8_row x[Q8_TOKENS];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm512_setzero_ps();
        x[t] = elm_q8_at(xq, nb * ELM_QK, t);
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const size_t bytes = packed ? ELM_Q8_0X16_BYTES : ELM_TILE_Q8_BYTES;
    const uint8_t *pf = tile + ELM_PREFETCH_AHEAD;
    for (int64_t b = 0; b < nb; b++, tile += bytes) {
        for (; packed && pf < tile + ELM_PREFETCH_AHEAD + bytes; pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
        __m512i w[ELM_QK / 4];
        for (int k = 0; k < ELM_QK / 4; k++)
            w[k] = _mm512_xor_si512(_mm512_loadu_si512(tile + 64 * k), flip);
        const uint8_t *dm = tile + ELM_TILE_ROWS * ELM_QK;
        const __m512 d = packed ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)dm))
                                : _mm512_load_ps(dm);
        const __m512 m = packed ? _mm512_setzero_ps() : _mm512_load_ps(dm + 64);
        for (int t = 0; t < nt; t++) {
            const int8_t *qs = x[t].qs + b * ELM_QK;
            __m512i sum = _mm512_set1_epi32(-128 * x[t].sum[b]);
            for (int k = 0; k < ELM_QK / 4; k++)
                sum = _mm512_dpbusd_epi32(sum, w[k], _mm512_set1_epi32(i32_at(qs + 4 * k)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                                     _mm512_mul_ps(d, _mm512_set1_ps(x[t].d[b])), acc[t]);
            if (!packed) acc[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(x[t].s[b]), acc[t]);
        }
    }
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    for (int t = 0; t < nt; t++) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

X86_INLINE void tile_q8_512_any(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                                float *y, int64_t ldy, int n_rows, const bool packed) {
    switch (n_tok) {
    case 1: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 1, packed); break;
    case 2: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 2, packed); break;
    case 3: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 3, packed); break;
    case 4: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 4, packed); break;
    case 5: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 5, packed); break;
    case 6: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 6, packed); break;
    case 7: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 7, packed); break;
    default: tile_q8_512_n(tile, nb, xq, y, ldy, n_rows, 8, packed); break;
    }
}

X86_FN static void tile_q8_512(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                               int64_t ldy, int n_rows) {
    tile_q8_512_any(tile, nb, xq, n_tok, y, ldy, n_rows, false);
}

X86_FN static void tile_q8_0x16(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                                float *y, int64_t ldy, int n_rows) {
    tile_q8_512_any(tile, nb, xq, n_tok, y, ldy, n_rows, true);
}

/* Packed Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (packed.h, q*x16): a block's four vectors of
 * the tile, masked and shifted, are the eight vectors of unsigned low nibbles; for Q5_0 and Q5_1
 * one shift of the qh vector and a ternary-logic merge add each one's fifth bits, for IQ4_NL and
 * MXFP4 one vpshufb turns them into the grid's values + 128 (unsigned, at most 241). The zero
 * point (8, 16, 128) of the symmetric types comes off in integers (the sum starts at -8·Σx.qs,
 * -16·Σx.qs or -128·Σx.qs), the offset m of the others as m·x.s. MXFP4's scales 2^(e - 128)
 * come from its E8M0 bytes by vscalefps (exact, subnormals too). The integer sums are
 * tile_q8_512_n's and so are the float steps, so a prefill gives the same bits whether its
 * weights are packed or not. */

/* Token k's accumulator and activation pointers, named (acc##k) rather than in arrays: as in
 * gemm.h's ELM_FOR_6_TOKENS, gcc kept an array of accumulators on the stack, a store after every
 * block (perf: a third of the kernel's samples at 4 tokens). */
#define QX16_FOR_TOKENS(op) op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7)
#define QX16_INIT(k)                                                                               \
    __m512 acc##k = _mm512_setzero_ps();                                                           \
    const elm_q8_row x##k = elm_q8_at(xq, nb * ELM_QK, nt > k ? k : 0);
#define QX16_DOT(k)                                                                                \
    if (nt > k) {                                                                                  \
        const int8_t *qs = x##k.qs + b * ELM_QK;                                                   \
        __m512i sum = asym ? _mm512_setzero_si512()                                                \
                           : _mm512_set1_epi32(-(grid ? 128 : five ? 16 : 8) * x##k.sum[b]);       \
        for (int i = 0; i < ELM_QK / 4; i++)                                                       \
            sum = dpbusd_bcast(sum, w[i], qs + 4 * i);                                             \
        acc##k = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),                                          \
                                 _mm512_mul_ps(d, _mm512_set1_ps(x##k.d[b])), acc##k);             \
        if (asym) acc##k = _mm512_fmadd_ps(m, _mm512_set1_ps(x##k.s[b]), acc##k);                  \
    }
#define QX16_STORE(k)                                                                              \
    if (nt > k) _mm512_mask_storeu_ps(y + k * ldy, keep, acc##k);

/* elm_e8m0_half of the 16 E8M0 bytes at e, 2^(e - 128), by vscalefps */
X86_INLINE __m512 e8m0_half16(const uint8_t *e) {
    const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)e));
    return _mm512_scalef_ps(_mm512_set1_ps(1.0f),
                            _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_set1_epi32(128))));
}

/* w |= the bits of q that bit4 selects (bit4 ? q : w, bitwise) */
#define QX16_FIFTH(w, q) _mm512_ternarylogic_epi32(w, q, bit4, 0xd8)

X86_INLINE void tile_qx16_n(const uint8_t *tile, int64_t nb, const void *xq, float *y,
                            int64_t ldy, int n_rows, const int nt, const bool asym,
                            const bool five, const int grid) {
    QX16_FOR_TOKENS(QX16_INIT)
    const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    /* the grid's values + 128: their sign bits flipped */
    const int8_t *values = grid == QX16_MXFP4 ? elm_mxfp4_grid : elm_iq4nl_grid;
    const __m512i plus128 =
        _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)values)),
                         _mm512_set1_epi8((char)0x80));
    const size_t d_at = qx16_scales_at(five, grid), bytes = qx16_tile_bytes(asym, five, grid);
    const uint8_t *pf = tile + ELM_PREFETCH_AHEAD;
    for (int64_t b = 0; b < nb; b++, tile += bytes) {
        for (; pf < tile + ELM_PREFETCH_AHEAD + bytes; pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
        __m512i w[ELM_QK / 4];
        for (int j = 0; j < 4; j++) {
            const __m512i p = _mm512_loadu_si512(tile + 64 * j);
            w[j] = _mm512_and_si512(p, low4);
            w[j + 4] = _mm512_and_si512(_mm512_srli_epi16(p, 4), low4);
        }
        if (five) {
            const __m512i q = _mm512_loadu_si512(tile + ELM_QX16_QH);
            w[0] = QX16_FIFTH(w[0], _mm512_slli_epi16(q, 4));
            w[1] = QX16_FIFTH(w[1], _mm512_slli_epi16(q, 3));
            w[2] = QX16_FIFTH(w[2], _mm512_slli_epi16(q, 2));
            w[3] = QX16_FIFTH(w[3], _mm512_slli_epi16(q, 1));
            w[4] = QX16_FIFTH(w[4], q);
            w[5] = QX16_FIFTH(w[5], _mm512_srli_epi16(q, 1));
            w[6] = QX16_FIFTH(w[6], _mm512_srli_epi16(q, 2));
            w[7] = QX16_FIFTH(w[7], _mm512_srli_epi16(q, 3));
        }
        if (grid)
            for (int j = 0; j < ELM_QK / 4; j++) w[j] = _mm512_shuffle_epi8(plus128, w[j]);
        const __m512 d = grid == QX16_MXFP4
                             ? e8m0_half16(tile + d_at)
                             : _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + d_at)));
        const __m256i *mp = (const __m256i *)(tile + d_at + 32);
        const __m512 m = asym ? _mm512_cvtph_ps(_mm256_loadu_si256(mp)) : _mm512_setzero_ps();
        QX16_FOR_TOKENS(QX16_DOT)
    }
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    QX16_FOR_TOKENS(QX16_STORE)
}
#undef QX16_FOR_TOKENS
#undef QX16_INIT
#undef QX16_DOT
#undef QX16_STORE
#undef QX16_FIFTH

X86_INLINE void tile_qx16_of(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                             float *y, int64_t ldy, int n_rows, const bool asym, const bool five,
                             const int grid) {
    switch (n_tok) {
    case 1: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 1, asym, five, grid); break;
    case 2: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 2, asym, five, grid); break;
    case 3: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 3, asym, five, grid); break;
    case 4: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 4, asym, five, grid); break;
    case 5: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 5, asym, five, grid); break;
    case 6: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 6, asym, five, grid); break;
    case 7: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 7, asym, five, grid); break;
    default: tile_qx16_n(tile, nb, xq, y, ldy, n_rows, 8, asym, five, grid); break;
    }
}

X86_QX16_KERNELS

/* All 16 tokens of the chunk (the padding ones are zeros), only n_tok stored: one weight vector
 * load and 16 fused multiply-adds with broadcast activations per column. */
X86_FN static void tile_f32_512(const float *tile, int64_t cols, const float *xt, int n_tok,
                                float *y, int64_t ldy, int n_rows, bool add) {
    __m512 acc[16];
    tile512_acc_load(acc, y, ldy, n_tok, n_rows, add);
    for (int64_t c = 0; c < cols; c++, tile += ELM_TILE_ROWS, xt += 16) {
        const __m512 w = _mm512_load_ps(tile);
        for (int t = 0; t < 16; t++) acc[t] = _mm512_fmadd_ps(w, _mm512_set1_ps(xt[t]), acc[t]);
    }
    tile512_acc_store(acc, y, ldy, n_tok, n_rows);
}

/* ---- decode of the 4/5-bit block types ---- */

X86_INLINE float hsum512(__m512 v) {
    return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

/* A group of four blocks (72 to 96 bytes) is read as two registers holding its bytes [0, 64) and
 * [64, span); the indices below pick what each lane needs out of the pair: the packed quants of
 * the four blocks (16 bytes each: low nibbles give weights 0..15, high nibbles 16..31), the qh
 * byte holding each weight's fifth bit, and per 32-bit lane its block's scale d and offset m. */
typedef struct {
    __m512i quants;   /* byte indices */
    __m512i fifth[2]; /* byte indices, for weights 0..15 and 16..31 of each block */
    __m512i scale;    /* word indices: lanes 4b..4b+3 take block b's d (16 words) */
    __m512i offset;   /* the same for m (Q4_1, Q5_1) */
    __mmask64 tail;   /* bytes of the second register that belong to the group */
    int bb, span;     /* bytes per block and per group */
} block_perm;

X86_FN static void make_perm(elm_type t, block_perm *bp) {
    const bool asym = t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_1;
    const int bb = (int)elm_type_get(t)->block_bytes;
    uint8_t q[64], h[2][64];
    uint16_t sc[32], of[32];
    for (int j = 0; j < 64; j++) {
        const int block = j / 16, k = j % 16;
        q[j] = (uint8_t)(bb * block + bb - 16 + k);
        for (int half = 0; half < 2; half++)
            h[half][j] = (uint8_t)(bb * block + (asym ? 4 : 2) + 2 * half + k / 8);
    }
    for (int w = 0; w < 32; w++) {
        sc[w] = (uint16_t)(bb * ((w % 16) / 4) / 2);
        of[w] = (uint16_t)(sc[w] + 1);
    }
    bp->quants = _mm512_loadu_si512(q);
    bp->fifth[0] = _mm512_loadu_si512(h[0]);
    bp->fifth[1] = _mm512_loadu_si512(h[1]);
    bp->scale = _mm512_loadu_si512(sc);
    bp->offset = _mm512_loadu_si512(of);
    bp->bb = bb, bp->span = 4 * bb;
    bp->tail = ((__mmask64)1 << (bp->span - 64)) - 1;
}

/* One token's activations laid out for the group kernel, once per call (all rows share it): per
 * group, the quants in the order the weights come out ([weights 0..15 of the 4 blocks | 16..31]),
 * the integer start of each lane's sum (the zero point: -o·Σx.qs spread over the block's 4 lanes),
 * x.d per lane and x.s / 4 per lane (a block's 4 lanes add up m·s). */
typedef struct {
    const int8_t *qs;    /* [groups][2][64] */
    const __m512i *init; /* [groups] */
    const __m512 *d, *s; /* [groups] */
} group_act;

/* Scratch bytes make_group_act uses for cols activations (3 vectors of 64 bytes per 128 weights,
 * and the quants), rounded up so that consecutive tokens' vectors stay 64-byte aligned. */
#define GROUP_ACT_BYTES(cols) (((size_t)(cols) / 128 * 192 + (size_t)(cols) + 63) / 64 * 64)

X86_FN static void make_group_act(const elm_q8_row *x, int64_t groups, int zero_point,
                                  void *scratch, group_act *out) {
    __m512i *init = scratch;
    __m512 *d = (__m512 *)(init + groups), *s = d + groups;
    int8_t *qs = (int8_t *)(s + groups);
    for (int64_t g = 0; g < groups; g++) {
        int32_t iv[16];
        float dv[16], sv[16];
        for (int l = 0; l < 16; l++) {
            const int64_t b = 4 * g + l / 4;
            iv[l] = -zero_point * x->sum[b] / 4;
            dv[l] = x->d[b];
            sv[l] = x->s[b] * 0.25f;
        }
        init[g] = _mm512_loadu_si512(iv);
        d[g] = _mm512_loadu_ps(dv);
        s[g] = _mm512_loadu_ps(sv);
        for (int b = 0; b < 4; b++) {
            memcpy(qs + g * 128 + 16 * b, x->qs + (4 * g + b) * ELM_QK, 16);
            memcpy(qs + g * 128 + 64 + 16 * b, x->qs + (4 * g + b) * ELM_QK + 16, 16);
        }
    }
    *out = (group_act){qs, init, d, s};
}

/* f16 words at word indices idx of the group (low 16 words used) as 16 floats. */
X86_INLINE __m512 gather_f16(__m512i lo, __m512i idx, __m512i hi) {
    return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(lo, idx, hi)));
}

/* Fifth bits of the weights whose qh bytes are picked by idx: 0x10 where set. */
X86_INLINE __m512i fifth_bits(__m512i lo, __m512i idx, __m512i hi) {
    const __m512i bit = _mm512_set1_epi64(0x8040201008040201LL);
    const __m512i h = _mm512_permutex2var_epi8(lo, idx, hi);
    return _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(h, bit), _mm512_set1_epi8(0x10));
}

/* One weight row of a 4/5-bit type against nt tokens' activations (nt <= MAX_TOK): full groups
 * of four blocks here, the rest by x86_body.h. Each group is unpacked once for all the tokens, so
 * a decode step of several sequences (elm_forward_seqs) pays the unpacking once per row. */
enum { MAX_TOK = 4 };
X86_INLINE void row_nibbles(const uint8_t *w, const group_act *a, const elm_q8_row *x, int nt,
                            int64_t nb, const block_perm *bp, bool asym, bool five, float *out) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512 acc0[MAX_TOK], acc1[MAX_TOK];
    for (int k = 0; k < nt; k++) acc0[k] = acc1[k] = _mm512_setzero_ps();
    const int64_t groups = nb / 4;
    const uint8_t *pf = w + ELM_PREFETCH_AHEAD;
    for (int64_t g = 0; g < groups; g++, w += bp->span) {
        for (; pf < w + ELM_PREFETCH_AHEAD + bp->span; pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
        const __m512i lo = _mm512_loadu_si512(w), hi = _mm512_maskz_loadu_epi8(bp->tail, w + 64);
        const __m512i packed = _mm512_permutex2var_epi8(lo, bp->quants, hi);
        __m512i q0 = _mm512_and_si512(packed, low4);
        __m512i q1 = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
        if (five) {
            q0 = _mm512_or_si512(q0, fifth_bits(lo, bp->fifth[0], hi));
            q1 = _mm512_or_si512(q1, fifth_bits(lo, bp->fifth[1], hi));
        }
        const __m512 wd = gather_f16(lo, bp->scale, hi);
        const __m512 wm = asym ? gather_f16(lo, bp->offset, hi) : _mm512_setzero_ps();
        for (int k = 0; k < nt; k++) {
            __m512i dot = _mm512_dpbusd_epi32(a[k].init[g], q0, _mm512_loadu_si512(a[k].qs + g * 128));
            dot = _mm512_dpbusd_epi32(dot, q1, _mm512_loadu_si512(a[k].qs + g * 128 + 64));
            const __m512 scale = _mm512_mul_ps(wd, a[k].d[g]);
            acc0[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc0[k]);
            if (asym) acc1[k] = _mm512_fmadd_ps(wm, a[k].s[g], acc1[k]);
        }
    }
    for (int k = 0; k < nt; k++) {
        float corr = 0;
        __m256 rest = _mm256_setzero_ps();
        const uint8_t *b = w;
        for (int64_t i = groups * 4; i < nb; i++, b += bp->bb)
            rest = block_q4q5(b, &x[k], i, rest, &corr, asym, five);
        out[k] = hsum512(_mm512_add_ps(acc0[k], acc1[k])) + hsum256(rest) + corr;
    }
}

/* row_nibbles with nt and the type's flags as constants, so each case compiles to straight code
 * with its accumulators in registers. */
X86_INLINE void row_nibbles_nt(const uint8_t *w, const group_act *a, const elm_q8_row *x, int nt,
                               int64_t nb, const block_perm *bp, bool asym, bool five, float *out) {
#define ROW_NIBBLES_FLAGS(n)                                                                      \
    do {                                                                                          \
        if (!asym && !five) row_nibbles(w, a, x, n, nb, bp, false, false, out);                   \
        else if (!five) row_nibbles(w, a, x, n, nb, bp, true, false, out);                        \
        else if (!asym) row_nibbles(w, a, x, n, nb, bp, false, true, out);                        \
        else row_nibbles(w, a, x, n, nb, bp, true, true, out);                                    \
    } while (0)
    switch (nt) {
    case 1: ROW_NIBBLES_FLAGS(1); break;
    case 2: ROW_NIBBLES_FLAGS(2); break;
    case 3: ROW_NIBBLES_FLAGS(3); break;
    default: ROW_NIBBLES_FLAGS(4); break;
    }
#undef ROW_NIBBLES_FLAGS
}

/* Few tokens: the 4/5-bit types through the group kernel; Q8_0 (32 contiguous quants a block,
 * measured faster 256 bits at a time) and float types through x86_body.h, whose 256-bit F16 loop
 * also streams faster on Zen 4 than a 512-bit one. */
X86_FN static void matvec_512(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    const elm_weights *w = &a->w;
    const elm_type t = w->type;
    if (!elm_type_q8_act(t) || t == ELM_TYPE_Q8_0) {
        matvec(a, r0, r1, row_dot_256(t));
        return;
    }
    const int64_t cols = w->cols, rows = w->rows, nb = cols / ELM_QK;
    const size_t row_bytes = elm_row_bytes(t, cols);
    const bool asym = t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_1;
    const bool five = t == ELM_TYPE_Q5_0 || t == ELM_TYPE_Q5_1;
    const int zero_point = asym ? 0 : five ? 16 : 8;
    block_perm bp;
    make_perm(t, &bp);
    group_act act[MAX_TOK];
    elm_q8_row x[MAX_TOK];
    for (int64_t t0 = 0; t0 < a->n_tok; t0 += MAX_TOK) {
        const int nt = (int)(a->n_tok - t0 < MAX_TOK ? a->n_tok - t0 : MAX_TOK);
        for (int k = 0; k < nt; k++) {
            x[k] = elm_q8_at(a->xq, cols, t0 + k);
            make_group_act(&x[k], nb / 4, zero_point, (char *)scratch + k * GROUP_ACT_BYTES(cols),
                           &act[k]);
        }
        for (int64_t r = r0; r < r1; r++) {
            float v[MAX_TOK];
            row_nibbles_nt((const uint8_t *)w->data + (size_t)r * row_bytes, act, x, nt, nb, &bp,
                           asym, five, v);
            for (int k = 0; k < nt; k++) a->y[(t0 + k) * rows + r] = v[k];
        }
    }
}

/* ---- repacking for the tiles (gemm.h) ---- */

/* 16 rows of one block, each 8 dwords of 4 weights, become the tile's 8 vectors of one dword per
 * row: a 16x8 transpose in three rounds of two-source permutes (rows in pairs, then the four
 * dwords of two row quads, then the two dwords of two row octets). */
X86_FN static void repack_q8_512(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile) {
    const elm_type t = w->type;
    const int64_t nb = w->cols / ELM_QK;
    const size_t bb = elm_type_get(t)->block_bytes, row_bytes = (size_t)nb * bb;
    int32_t ia[2][16], ib[2][16], ic[2][16];
    for (int p = 0; p < 16; p++) {
        const int kk4 = p / 4, rr4 = p % 4, kk8 = p / 8, rr8 = p % 8;
        for (int h = 0; h < 2; h++) {
            /* round 1: [k][row] for k in 4h..4h+3 of rows 4i..4i+3 (rows 2 per source) */
            ia[h][p] = (rr4 < 2 ? 0 : 16) + (rr4 % 2) * 8 + 4 * h + kk4;
            /* round 2: [k][row] for k in 2h..2h+1 (of round 1's four) of rows 8g..8g+7 */
            ib[h][p] = (rr8 < 4 ? 0 : 16) + (2 * h + kk8) * 4 + rr8 % 4;
            /* round 3: row order for k = h of round 2's two */
            ic[h][p] = (p < 8 ? 0 : 16) + h * 8 + p % 8;
        }
    }
    __m512i A[2], B[2], C[2];
    for (int h = 0; h < 2; h++) {
        A[h] = _mm512_loadu_si512(ia[h]);
        B[h] = _mm512_loadu_si512(ib[h]);
        C[h] = _mm512_loadu_si512(ic[h]);
    }
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    for (int64_t b = 0; b < nb; b++, tile += ELM_TILE_Q8_BYTES) {
        __m256i q[16];
        float d[16], m[16];
        for (int r = 0; r < 16; r++) {
            d[r] = m[r] = 0;
            q[r] = r < n_rows ? block_signed(t, base + (size_t)r * row_bytes + b * bb, &d[r], &m[r])
                              : _mm256_setzero_si256();
        }
        __m512i z[8], a[4][2], bq[2][2][2];
        for (int j = 0; j < 8; j++)
            z[j] = _mm512_inserti64x4(_mm512_castsi256_si512(q[2 * j]), q[2 * j + 1], 1);
        for (int i = 0; i < 4; i++)
            for (int h = 0; h < 2; h++)
                a[i][h] = _mm512_permutex2var_epi32(z[2 * i], A[h], z[2 * i + 1]);
        for (int g = 0; g < 2; g++)
            for (int h = 0; h < 2; h++)
                for (int k = 0; k < 2; k++)
                    bq[g][h][k] = _mm512_permutex2var_epi32(a[2 * g][h], B[k], a[2 * g + 1][h]);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 2; k++)
                for (int kk = 0; kk < 2; kk++)
                    _mm512_store_si512(tile + 64 * (4 * h + 2 * k + kk),
                                       _mm512_permutex2var_epi32(bq[0][h][k], C[kk], bq[1][h][k]));
        _mm512_store_ps(tile + ELM_TILE_ROWS * ELM_QK, _mm512_loadu_ps(d));
        _mm512_store_ps(tile + ELM_TILE_ROWS * ELM_QK + 64, _mm512_loadu_ps(m));
    }
}

/* 16 rows of float weights, 16 columns at a time, through transpose16. */
X86_FN static void repack_f32_512(const elm_weights *w, int64_t r0, int n_rows, float *tile) {
    const int64_t cols = w->cols;
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    butterflies bf;
    make_butterflies(&bf);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    int64_t c0 = 0;
    for (; c0 + 16 <= cols; c0 += 16) {
        __m512 v[16];
        for (int r = 0; r < 16; r++) {
            const uint8_t *src = base + (size_t)r * row_bytes;
            if (r >= n_rows) v[r] = _mm512_setzero_ps();
            else if (w->type == ELM_TYPE_F32) v[r] = _mm512_loadu_ps((const float *)src + c0);
            else if (w->type == ELM_TYPE_F16)
                v[r] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(src + 2 * c0)));
            else
                v[r] = _mm512_castsi512_ps(_mm512_slli_epi32(
                    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + 2 * c0))),
                    16));
        }
        transpose16(v, &bf);
        for (int c = 0; c < 16; c++) _mm512_store_ps(tile + (c0 + c) * ELM_TILE_ROWS, v[c]);
    }
    if (c0 < cols) elm_repack_f32_cols(w, r0, n_rows, c0, tile); /* the last cols % 16 */
}

/* The activations of up to 16 tokens, 16 columns at a time, through transpose16. */
X86_FN static void transpose_x_512(const float *x, int64_t ldx, int n_tok, int64_t cols,
                                   float *xt) {
    butterflies bf;
    make_butterflies(&bf);
    int64_t c0 = 0;
    for (; c0 + 16 <= cols; c0 += 16) {
        __m512 v[16];
        for (int t = 0; t < 16; t++)
            v[t] = t < n_tok ? _mm512_loadu_ps(x + t * ldx + c0) : _mm512_setzero_ps();
        transpose16(v, &bf);
        for (int c = 0; c < 16; c++) _mm512_storeu_ps(xt + (c0 + c) * 16, v[c]);
    }
    for (int64_t c = c0; c < cols; c++)
        for (int t = 0; t < 16; t++) xt[c * 16 + t] = t < n_tok ? x[t * ldx + c] : 0.0f;
}

/* float products over whole rows: the kernel takes the chunk's 16 tokens in one pass, and
 * blocking by 128 columns measured no faster on Zen 4; BF16 ones, where the CPU has them,
 * through 16-bit dot products (avx512_bf16.c) */
#define GEMM_512(bf16_pieces)                                                                      \
    {                                                                                              \
        .q8 = tile_q8_512, .q8_tokens = Q8_TOKENS, .f32 = tile_f32_512,                            \
        .f32_tokens = F32_TOKENS, .repack_q8 = repack_q8_512, .repack_f32 = repack_f32_512,        \
        .transpose = transpose_x_512, .bf16 = bf16_pieces,                                         \
    }
static const elm_gemm_kernels gemm_kernels = GEMM_512(NULL);
static const elm_gemm_kernels gemm_kernels_bf16 = GEMM_512(&elm_gemm_bf16_avx512);
#undef GEMM_512

X86_INLINE void matmul_with(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0,
                            int64_t r1, void *scratch) {
    if (elm_packed_as_qx16(&a->w))
        elm_packed_qx16_matmul(tile_qx16_for(a->w.type), Q8_TOKENS, a, r0, r1);
    else if (a->n_tok >= GEMM_MIN_TOKENS && elm_type_grid32(a->w.type))
        elm_gemm(g, a, r0, r1, scratch);
    else if (elm_type_kquant(a->w.type)) elm_kquant_matmul(&elm_kq_avx512, a, r0, r1, scratch);
    else if (a->n_tok >= GEMM_MIN_TOKENS) elm_gemm(g, a, r0, r1, scratch);
    else matvec_512(a, r0, r1, scratch);
}

X86_FN static void matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    matmul_with(&gemm_kernels, a, r0, r1, scratch);
}

X86_FN static void matmul_bf16(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    matmul_with(&gemm_kernels_bf16, a, r0, r1, scratch);
}

/* One table for both, but for matmul, bf16_act_tokens and pair16. */
#define AVX512_KERNELS(matmul_fn, bf16_tokens, pair)                                               \
    {                                                                                              \
        .isa = "avx512", .dot_f32 = dot_f32, .transpose16 = transpose_x_512,                       \
        .quantize_q8 = quantize_q8, .quantize_q8_k = quantize_q8_k, .matmul = matmul_fn,           \
        .packs = elm_packs_x16, .pack = elm_pack_x16, .bf16_act_tokens = bf16_tokens,              \
        .pair16 = pair,                                                                            \
        .rmsnorm = rmsnorm, .softmax = softmax, .swiglu = swiglu, .geglu = geglu,       \
        .rope_cs = elm_scalar_rope_cs, .rope = elm_scalar_rope, .rope_neox = elm_scalar_rope_neox, \
        .attention = attention,                                                                    \
    }
static const elm_kernels avx512_kernels = AVX512_KERNELS(matmul, 0, NULL);
static const elm_kernels avx512_bf16_kernels =
    AVX512_KERNELS(matmul_bf16, GEMM_MIN_TOKENS, elm_pair_bf16_avx512);
#undef AVX512_KERNELS

const elm_kernels *elm_kernels_avx512(void) {
    const unsigned need = ELM_X86_AVX2 | ELM_X86_FMA | ELM_X86_F16C | ELM_X86_AVX512F |
                          ELM_X86_AVX512BW | ELM_X86_AVX512VL | ELM_X86_AVX512DQ |
                          ELM_X86_AVX512VNNI | ELM_X86_AVX512VBMI;
    const unsigned f = elm_x86_features();
    if ((f & need) != need) return NULL;
    return f & ELM_X86_AVX512BF16 ? &avx512_bf16_kernels : &avx512_kernels;
}
#else
const elm_kernels *elm_kernels_avx512(void) { return NULL; }
#endif
