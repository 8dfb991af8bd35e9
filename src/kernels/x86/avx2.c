/* x86-64 AVX2 + FMA + F16C kernels. Compiled with per-function target attributes so the rest of
 * the build stays baseline x86-64; chosen at run time only when the CPU reports the features.
 * The kernels themselves are x86_body.h; here the integer dot step is maddubs + madd (the pair
 * sums stay below 2^15 for the operand ranges the body promises). */
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/targets.h"
#include "kernels/x86/cpuid.h"
#include "kernels/kquant.h"
#include "kernels/packed.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define X86_FN __attribute__((target(ELM_TARGET_AVX2)))

X86_FN static inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
    const __m256i pairs = _mm256_maddubs_epi16(u, s);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

#include "kernels/x86/x86_body.h"
#include "kernels/x86/iq4nl_avx2.h"
#include "kernels/x86/transpose.h"

/* Prefill micro-kernels (gemm.h): a tile's 16 rows are two vectors of 8. The tile holds signed
 * weights, so each product moves the sign to the activations as decode's Q8_0 does. One half of
 * 8 rows at a time for 3 or 4 tokens, both halves block by block for 1 or 2 (one pass over a tile
 * streamed from memory), with named accumulators (ELM_FOR_6_TOKENS): a weight vector is loaded and
 * its absolute value taken once for all the tokens, where a pass per token over both halves redid
 * both per token. The tiles of 5-bit codes u = q + 16 (small: gemm.h's q8_small, 1..31,
 * unsigned) skip the abs and sign steps: maddubs takes them as they are, four vectors' pair sums
 * stay within 4·2·31·127 < 2^15 in 16 bits before a madd, and the 16 comes off as 16·Σx.qs, two
 * madds a block and token where the signed tiles take eight. Both sum the same integers. Q8_0's
 * packed q8_0x16 tiles (packed.h) hold the codes as the repacked ones do, with f16 scales and no
 * offsets, and are prefetched as they stream: the same integers and float steps. */
#define Q8_FOR_TOKENS(op, h) op(0, h) op(1, h) op(2, h) op(3, h)
#define Q8_INIT(t, h) __m256 acc##t##h = _mm256_setzero_ps();
#define Q8_ZERO(t, h)                                                                              \
    __m256i s##t##h, lo##t##h, hi##t##h;                                                           \
    s##t##h = lo##t##h = hi##t##h = _mm256_setzero_si256();
#define Q8_DOT(t, h)                                                                               \
    if (nt > t) {                                                                                  \
        const __m256i a = _mm256_set1_epi32(i32_at(x[t].qs + b * ELM_QK + 4 * k));                 \
        if (!small) s##t##h = dot_u8s8(s##t##h, aw##h, _mm256_sign_epi8(a, w##h));                 \
        else if (k < 4) lo##t##h = _mm256_add_epi16(lo##t##h, _mm256_maddubs_epi16(w##h, a));     \
        else hi##t##h = _mm256_add_epi16(hi##t##h, _mm256_maddubs_epi16(w##h, a));                 \
    }
#define Q8_ACC(t, h)                                                                               \
    if (nt > t) {                                                                                  \
        if (small)                                                                                 \
            s##t##h = _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo##t##h, one),          \
                                                        _mm256_madd_epi16(hi##t##h, one)),         \
                                       _mm256_set1_epi32(16 * x[t].sum[b]));                       \
        const __m256 sc = _mm256_mul_ps(d##h, _mm256_set1_ps(x[t].d[b]));                          \
        acc##t##h = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s##t##h), sc, acc##t##h);                   \
        if (!packed) acc##t##h = _mm256_fmadd_ps(m##h, _mm256_set1_ps(x[t].s[b]), acc##t##h);      \
    }
#define Q8_STORE(t, h)                                                                             \
    if (nt > t && 8 * h < n_rows) {                                                                \
        const int nr = n_rows - 8 * h < 8 ? n_rows - 8 * h : 8;                                    \
        float out[8];                                                                              \
        _mm256_storeu_ps(out, acc##t##h);                                                          \
        memcpy(y + t * ldy + 8 * h, out, sizeof(float) * (size_t)nr);                              \
    }
/* half h's weight vector k (w##h, aw##h) and the block's scales (d##h, m##h) */
#define Q8_LOAD(h)                                                                                 \
    const __m256i w##h = _mm256_loadu_si256((const __m256i *)(tile + 64 * k + 32 * (half + h)));   \
    const __m256i aw##h = small ? w##h : _mm256_abs_epi8(w##h);
#define Q8_SCALES(h)                                                                               \
    const __m256 d##h =                                                                            \
        packed ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dm + 16 * (half + h))))        \
               : _mm256_loadu_ps((const float *)dm + 8 * (half + h));                              \
    const __m256 m##h = packed ? _mm256_setzero_ps()                                               \
                               : _mm256_loadu_ps((const float *)dm + 16 + 8 * (half + h));

/* Rows [8·half, 8·half + 8) of the tile (nh 1) or all 16 (nh 2, half 0, for at most 2 tokens):
 * y[t·ldy + r] for r < n_rows, counted from the first row taken. */
X86_INLINE void tile_q8_rows(const uint8_t *tile, int half, const int nh, int64_t nb,
                             const elm_q8_row *x, float *y, int64_t ldy, int n_rows, const int nt,
                             const bool small, const bool packed) {
    const __m256i one = _mm256_set1_epi16(1);
    Q8_FOR_TOKENS(Q8_INIT, 0)
    Q8_FOR_TOKENS(Q8_INIT, 1)
    const size_t bytes = packed ? ELM_Q8_0X16_BYTES : ELM_TILE_Q8_BYTES;
    const size_t pf_step = nh == 2 ? bytes : bytes / 2;
    const uint8_t *pf = tile + ELM_PREFETCH_AHEAD;
    for (int64_t b = 0; b < nb; b++, tile += bytes) {
        for (; packed && pf < tile + ELM_PREFETCH_AHEAD + pf_step; pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
        Q8_FOR_TOKENS(Q8_ZERO, 0)
        Q8_FOR_TOKENS(Q8_ZERO, 1)
#pragma GCC unroll 8
        for (int k = 0; k < ELM_QK / 4; k++) {
            Q8_LOAD(0)
            Q8_FOR_TOKENS(Q8_DOT, 0)
            if (nh == 2) {
                Q8_LOAD(1)
                Q8_FOR_TOKENS(Q8_DOT, 1)
            }
        }
        const uint8_t *dm = tile + ELM_TILE_ROWS * ELM_QK;
        Q8_SCALES(0)
        Q8_FOR_TOKENS(Q8_ACC, 0)
        if (nh == 2) {
            Q8_SCALES(1)
            Q8_FOR_TOKENS(Q8_ACC, 1)
        }
    }
    Q8_FOR_TOKENS(Q8_STORE, 0)
    if (nh == 2) Q8_FOR_TOKENS(Q8_STORE, 1)
}
#undef Q8_FOR_TOKENS
#undef Q8_INIT
#undef Q8_ZERO
#undef Q8_DOT
#undef Q8_ACC
#undef Q8_STORE
#undef Q8_LOAD
#undef Q8_SCALES

X86_INLINE void tile_q8_n(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                          int64_t ldy, int n_rows, const bool small, const bool packed) {
    elm_q8_row x[4];
    for (int t = 0; t < n_tok && t < 4; t++) x[t] = elm_q8_at(xq, nb * ELM_QK, t);
    if (n_tok == 1) tile_q8_rows(tile, 0, 2, nb, x, y, ldy, n_rows, 1, small, packed);
    else if (n_tok == 2) tile_q8_rows(tile, 0, 2, nb, x, y, ldy, n_rows, 2, small, packed);
    else for (int h = 0; h < 2 && 8 * h < n_rows; h++) {
        const int nr = n_rows - 8 * h < 8 ? n_rows - 8 * h : 8;
        if (n_tok == 3) tile_q8_rows(tile, h, 1, nb, x, y + 8 * h, ldy, nr, 3, small, packed);
        else tile_q8_rows(tile, h, 1, nb, x, y + 8 * h, ldy, nr, 4, small, packed);
    }
}

X86_FN static void tile_q8_256(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                               int64_t ldy, int n_rows) {
    tile_q8_n(tile, nb, xq, n_tok, y, ldy, n_rows, false, false);
}

X86_FN static void tile_q8s_256(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                                float *y, int64_t ldy, int n_rows) {
    tile_q8_n(tile, nb, xq, n_tok, y, ldy, n_rows, true, false);
}

X86_FN static void tile_q8_0x16(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                                float *y, int64_t ldy, int n_rows) {
    tile_q8_n(tile, nb, xq, n_tok, y, ldy, n_rows, false, true);
}

/* Packed Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (packed.h, q*x16). A tile is two halves of 8
 * rows, a 32-bit lane each; one or two tokens take both halves block by block (one pass over the
 * tile: a pass per half had the tile read from memory by the first and from L2 by the second, the
 * memory idle meanwhile), three or four one half at a time, so that its eight code vectors, four
 * tokens' accumulators and the temporaries fit the 16 registers. The codes are unsigned (0..31), so
 * maddubs takes them as they are (the tiles of signed weights need abs and sign first); four pair
 * sums of a row stay within 4·2·31·127 < 2^15 and add up in 16 bits (eight for 4-bit codes) before
 * a madd. IQ4_NL's grid values + 128 (1..241) would overflow those sums, so each is split as
 * g + 139 = 16·v + r(v) (iq4nl_avx2.h): the codes v sum as Q4_0's do, the residues r (0..26, one
 * vpshufb) as 5-bit codes, and the zero point 139 comes off as Q4_0's 8 does.
 * MXFP4's grid values + 16 (4..28) are codes as Q5_0's are, and its scales 2^(e - 128) are built
 * from the E8M0 bytes' bits. The integers and the float steps are tile_q8_256_n's, so a prefill
 * keeps its bits. */
#define QX16_PAIRS(v, i) _mm256_maddubs_epi16(v[i], _mm256_set1_epi32(i32_at(qs + 4 * (i))))
/* elm_e8m0_half of the 8 E8M0 bytes at e, 2^(e - 128), as float bits: (e - 1) << 23, below
 * e = 2 the subnormal 2^21 << e. */
X86_INLINE __m256 e8m0_half8(const uint8_t *e) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)e));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
    return _mm256_castsi256_ps(
        _mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), v)));
}
/* Σ over a block of the codes v (0..31) times its q8 values qs, per row (32-bit lanes). */
X86_INLINE __m256i qx16_sum(const __m256i v[ELM_QK / 4], const int8_t *qs, const bool five) {
    const __m256i one = _mm256_set1_epi16(1);
    __m256i lo = QX16_PAIRS(v, 0), hi = QX16_PAIRS(v, 4);
    for (int i = 1; i < 4; i++) {
        lo = _mm256_add_epi16(lo, QX16_PAIRS(v, i));
        hi = _mm256_add_epi16(hi, QX16_PAIRS(v, i + 4));
    }
    return five ? _mm256_add_epi32(_mm256_madd_epi16(lo, one), _mm256_madd_epi16(hi, one))
                : _mm256_madd_epi16(_mm256_add_epi16(lo, hi), one);
}
/* Σ over a block of (lut[v] + 16·v)·x (codes) or lut[v]·x for one token, from the codes v
 * (0..15), lut a grid of values up to 31 looked up as their pair sums are taken: with more tokens
 * the tile looks the codes up once, into vectors that for one token only spilled beside the codes
 * (IQ4_NL with codes: its residues; MXFP4: its grid + 16). Summing both in one loop, not as two
 * sums, is what lets the two halves of a tile overlap (IQ4_NL 27 against 34 GB/s). */
X86_INLINE __m256i qx16_sum_lut(const __m256i v[ELM_QK / 4], const __m256i lut, const int8_t *qs,
                                const bool codes) {
    const __m256i one = _mm256_set1_epi16(1);
    __m256i c = _mm256_setzero_si256(), lo = c, hi = c;
    for (int i = 0; i < 4; i++) {
        const __m256i xl = _mm256_set1_epi32(i32_at(qs + 4 * i));
        const __m256i xh = _mm256_set1_epi32(i32_at(qs + 4 * (i + 4)));
        if (codes)
            c = _mm256_add_epi16(c, _mm256_add_epi16(_mm256_maddubs_epi16(v[i], xl),
                                                     _mm256_maddubs_epi16(v[i + 4], xh)));
        lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, v[i]), xl));
        hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(_mm256_shuffle_epi8(lut, v[i + 4]), xh));
    }
    const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(lo, one), _mm256_madd_epi16(hi, one));
    return codes ? _mm256_add_epi32(_mm256_slli_epi32(_mm256_madd_epi16(c, one), 4), sum) : sum;
}
#define QX16_FOR_TOKENS(op) op(0) op(1) op(2) op(3)
#define QX16_INIT(k)                                                                               \
    __m256 acc##k##0 = _mm256_setzero_ps(), acc##k##1 = acc##k##0;                                 \
    const elm_q8_row x##k = elm_q8_at(xq, nb * ELM_QK, nt > k ? k : 0);
#define QX16_DOT(k, h)                                                                             \
    if (nt > k) {                                                                                  \
        const int8_t *qs = x##k.qs + b * ELM_QK;                                                   \
        __m256i sum;                                                                               \
        if (grid == QX16_MXFP4 && nt == 1) sum = qx16_sum_lut(w, mx_plus16, qs, false);            \
        else if (grid == QX16_IQ4_NL && nt == 1) sum = qx16_sum_lut(w, residues, qs, true);        \
        else if (grid == QX16_IQ4_NL)                                                              \
            sum = _mm256_add_epi32(_mm256_slli_epi32(qx16_sum(w, qs, false), 4),                   \
                                   qx16_sum(wr, qs, true));                                        \
        else sum = qx16_sum(w, qs, wide);                                                          \
        const int zero_point = grid == QX16_IQ4_NL ? IQ4NL_SPLIT_ZERO : wide ? 16 : 8;             \
        if (!asym) sum = _mm256_add_epi32(sum, _mm256_set1_epi32(-zero_point * x##k.sum[b]));      \
        acc##k##h = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum),                                       \
                                    _mm256_mul_ps(d, _mm256_set1_ps(x##k.d[b])), acc##k##h);       \
        if (asym) acc##k##h = _mm256_fmadd_ps(m, _mm256_set1_ps(x##k.s[b]), acc##k##h);            \
    }
#define QX16_HALF(h)                                                                               \
    {                                                                                              \
        const int hh = nh == 2 ? h : half;                                                         \
        const uint8_t *t = tile + 32 * hh;                                                         \
        __m256i w[ELM_QK / 4];                                                                     \
        for (int j = 0; j < 4; j++) {                                                              \
            const __m256i p = _mm256_loadu_si256((const __m256i *)(t + 64 * j));                   \
            w[j] = _mm256_and_si256(p, low4);                                                      \
            w[j + 4] = _mm256_and_si256(_mm256_srli_epi16(p, 4), low4);                            \
        }                                                                                          \
        if (five) {                                                                                \
            const __m256i q = _mm256_loadu_si256((const __m256i *)(t + ELM_QX16_QH));                      \
            w[0] = _mm256_or_si256(w[0], _mm256_and_si256(_mm256_slli_epi16(q, 4), bit4));         \
            w[1] = _mm256_or_si256(w[1], _mm256_and_si256(_mm256_slli_epi16(q, 3), bit4));         \
            w[2] = _mm256_or_si256(w[2], _mm256_and_si256(_mm256_slli_epi16(q, 2), bit4));         \
            w[3] = _mm256_or_si256(w[3], _mm256_and_si256(_mm256_slli_epi16(q, 1), bit4));         \
            w[4] = _mm256_or_si256(w[4], _mm256_and_si256(q, bit4));                               \
            w[5] = _mm256_or_si256(w[5], _mm256_and_si256(_mm256_srli_epi16(q, 1), bit4));         \
            w[6] = _mm256_or_si256(w[6], _mm256_and_si256(_mm256_srli_epi16(q, 2), bit4));         \
            w[7] = _mm256_or_si256(w[7], _mm256_and_si256(_mm256_srli_epi16(q, 3), bit4));         \
        }                                                                                          \
        __m256i wr[ELM_QK / 4];                                                                    \
        if (grid == QX16_IQ4_NL && nt > 1)                                                         \
            for (int j = 0; j < ELM_QK / 4; j++) wr[j] = _mm256_shuffle_epi8(residues, w[j]);      \
        if (grid == QX16_MXFP4 && nt > 1)                                                          \
            for (int j = 0; j < ELM_QK / 4; j++) w[j] = _mm256_shuffle_epi8(mx_plus16, w[j]);      \
        const uint8_t *dm = tile + d_at + 16 * hh;                                                 \
        const __m256 d = grid == QX16_MXFP4                                                        \
                             ? e8m0_half8(tile + d_at + 8 * hh)                                    \
                             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dm));              \
        const __m256 m = asym ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dm + 32)))       \
                              : _mm256_setzero_ps();                                               \
        QX16_DOT(0, h) QX16_DOT(1, h) QX16_DOT(2, h) QX16_DOT(3, h)                                \
    }
#define QX16_STORE(k)                                                                              \
    if (nt > k) {                                                                                  \
        float out[ELM_TILE_ROWS];                                                                  \
        _mm256_storeu_ps(out, acc##k##0);                                                          \
        _mm256_storeu_ps(out + 8, acc##k##1);                                                      \
        memcpy(y + k * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

/* Rows [8·half, 8·half + 8) of the tile (nh 1) or all 16 (nh 2, for at most 2 tokens): y[t·ldy + r]
 * for r < n_rows, counted from the first row taken. */
X86_INLINE void qx16_n(const uint8_t *tile, int half, const int nh, int64_t nb, const void *xq,
                       float *y, int64_t ldy, int n_rows, const int nt, const bool asym,
                       const bool five, const int grid) {
    QX16_FOR_TOKENS(QX16_INIT)
    const bool wide = five || grid == QX16_MXFP4; /* codes up to 31 */
    const __m256i low4 = _mm256_set1_epi8(0x0f), bit4 = _mm256_set1_epi8(0x10);
    const __m256i residues = iq4nl_residues(); /* IQ4_NL's */
    /* MXFP4's (at most 12 in magnitude) + 16: 4..28, codes as Q5_0's */
    const __m256i mx_plus16 = _mm256_add_epi8(grid_lanes(elm_mxfp4_grid), _mm256_set1_epi8(16));
    const size_t d_at = qx16_scales_at(five, grid), bytes = qx16_tile_bytes(asym, five, grid);
    const uint8_t *pf = tile + ELM_PREFETCH_AHEAD;
    const size_t pf_step = nh == 2 ? bytes : bytes / 2;
    for (int64_t b = 0; b < nb; b++, tile += bytes) {
        for (; pf < tile + ELM_PREFETCH_AHEAD + pf_step; pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
        QX16_HALF(0)
        if (nh == 2) QX16_HALF(1)
    }
    QX16_FOR_TOKENS(QX16_STORE)
}
#undef QX16_FOR_TOKENS
#undef QX16_INIT
#undef QX16_PAIRS
#undef QX16_DOT
#undef QX16_HALF
#undef QX16_STORE

X86_INLINE void tile_qx16_of(const uint8_t *tile, int64_t nb, const void *xq, int n_tok,
                             float *y, int64_t ldy, int n_rows, const bool asym, const bool five,
                             const int grid) {
    if (n_tok == 1) qx16_n(tile, 0, 2, nb, xq, y, ldy, n_rows, 1, asym, five, grid);
    else if (n_tok == 2) qx16_n(tile, 0, 2, nb, xq, y, ldy, n_rows, 2, asym, five, grid);
    else for (int h = 0; h < 2 && 8 * h < n_rows; h++) {
        const int nr = n_rows - 8 * h < 8 ? n_rows - 8 * h : 8;
        if (n_tok == 3) qx16_n(tile, h, 1, nb, xq, y + 8 * h, ldy, nr, 3, asym, five, grid);
        else qx16_n(tile, h, 1, nb, xq, y + 8 * h, ldy, nr, 4, asym, five, grid);
    }
}

X86_QX16_KERNELS

/* Up to 6 tokens of 16 rows: 12 accumulators, 2 weight vectors and a broadcast in the 16
 * registers (ELM_FOR_6_TOKENS). A call covers one block of 128 columns, so a whole tile's
 * accumulators load and store as vectors: through memcpy (a call each, as the row count varies)
 * they had taken a quarter of the time. */
#define F32_INIT(k)                                                                                \
    if (nt > k && add && n_rows == ELM_TILE_ROWS) {                                                \
        a##k##0 = _mm256_loadu_ps(y + k * ldy);                                                    \
        a##k##1 = _mm256_loadu_ps(y + k * ldy + 8);                                                \
    } else if (nt > k && add) {                                                                    \
        float in[ELM_TILE_ROWS] = {0};                                                             \
        memcpy(in, y + k * ldy, sizeof(float) * (size_t)n_rows);                                   \
        a##k##0 = _mm256_loadu_ps(in);                                                             \
        a##k##1 = _mm256_loadu_ps(in + 8);                                                         \
    }
#define F32_FMA(k)                                                                                 \
    if (nt > k) {                                                                                  \
        const __m256 xv = _mm256_broadcast_ss(xt + k);                                             \
        a##k##0 = _mm256_fmadd_ps(w0, xv, a##k##0);                                                \
        a##k##1 = _mm256_fmadd_ps(w1, xv, a##k##1);                                                \
    }
#define F32_STORE(k)                                                                               \
    if (nt > k && n_rows == ELM_TILE_ROWS) {                                                       \
        _mm256_storeu_ps(y + k * ldy, a##k##0);                                                    \
        _mm256_storeu_ps(y + k * ldy + 8, a##k##1);                                                \
    } else if (nt > k) {                                                                           \
        float out[ELM_TILE_ROWS];                                                                  \
        _mm256_storeu_ps(out, a##k##0);                                                            \
        _mm256_storeu_ps(out + 8, a##k##1);                                                        \
        memcpy(y + k * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

X86_INLINE void tile_f32_256_n(const float *tile, int64_t cols, const float *xt, float *y,
                               int64_t ldy, int n_rows, bool add, const int nt) {
    __m256 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51;
    a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = _mm256_setzero_ps();
    ELM_FOR_6_TOKENS(F32_INIT)
    for (int64_t c = 0; c < cols; c++, tile += ELM_TILE_ROWS, xt += 16) {
        const __m256 w0 = _mm256_load_ps(tile), w1 = _mm256_load_ps(tile + 8);
        ELM_FOR_6_TOKENS(F32_FMA)
    }
    ELM_FOR_6_TOKENS(F32_STORE)
}

X86_FN static void tile_f32_256(const float *tile, int64_t cols, const float *xt, int n_tok,
                                float *y, int64_t ldy, int n_rows, bool add) {
    ELM_CALL_6_TOKENS(n_tok, tile_f32_256_n, tile, cols, xt, y, ldy, n_rows, add)
}

/* 16 rows of float weights, 8 columns of 8 rows at a time (F16 through F16C), through
 * transpose8: the repacking is a pass over all a prefill's weights. */
X86_FN static void repack_f32_256(const elm_weights *w, int64_t r0, int n_rows, float *tile) {
    const int64_t cols = w->cols;
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    const size_t es = w->type == ELM_TYPE_F32 ? 4 : 2;
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    int64_t c0 = 0;
    for (; c0 + 8 <= cols; c0 += 8)
        for (int h = 0; h < 2; h++) {
            __m256 v[8];
            for (int r = 0; r < 8; r++)
                v[r] = 8 * h + r < n_rows
                           ? load8_weights(w->type, base + (size_t)(8 * h + r) * row_bytes + es * c0)
                           : _mm256_setzero_ps();
            transpose8(v);
            for (int c = 0; c < 8; c++) _mm256_store_ps(tile + (c0 + c) * ELM_TILE_ROWS + 8 * h, v[c]);
        }
    if (c0 < cols) elm_repack_f32_cols(w, r0, n_rows, c0, tile); /* the last cols % 8 */
}

/* The q8 tiles of rows [r0, r0 + 16) of w, IQ4_NL packed at load (packed.h's iq4_nlx16: r0 a
 * multiple of 16): each vector of nibbles, 8 rows' words, gives two words of grid values by
 * vpshufb, the tile's codes already in place. */
X86_FN static void repack_q8_iq4_nlx16(const elm_weights *w, int64_t r0, uint8_t *tile) {
    const int64_t nb = w->cols / ELM_QK;
    const size_t bytes = elm_qx16_bytes(false, false);
    const uint8_t *src = (const uint8_t *)w->data + (size_t)(r0 / ELM_TILE_ROWS * nb) * bytes;
    const __m256i grid = grid_lanes(elm_iq4nl_grid);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++, src += bytes, tile += ELM_TILE_Q8_BYTES) {
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(src + 64 * j + 32 * h));
                const __m256i lo = _mm256_shuffle_epi8(grid, _mm256_and_si256(v, low4));
                const __m256i hi =
                    _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
                _mm256_storeu_si256((__m256i *)(tile + 64 * j + 32 * h), lo);
                _mm256_storeu_si256((__m256i *)(tile + 64 * (j + 4) + 32 * h), hi);
            }
        const uint8_t *d = src + elm_qx16_d_at(false);
        _mm256_storeu_ps((float *)(tile + ELM_TILE_ROWS * ELM_QK),
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d)));
        _mm256_storeu_ps((float *)(tile + ELM_TILE_ROWS * ELM_QK + 32),
                         _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(d + 16))));
        memset(tile + ELM_TILE_ROWS * ELM_QK + 64, 0, 64);
    }
}

/* 16 rows of one block, each 8 dwords of 4 weights, become the tile's 8 vectors of one dword per
 * row, a half of 8 rows at a time through transpose8: the scalar repacking (elm_repack_q8_tile)
 * took more time than the tiles' products in an MXFP4 expert's prefill, whose rows are repacked
 * for only the tokens routed to the expert. */
X86_FN static void repack_q8_256(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile) {
    const elm_type t = w->type;
    const int64_t nb = w->cols / ELM_QK;
    if (w->packed_by) { /* IQ4_NL packed at load (matmul) */
        repack_q8_iq4_nlx16(w, r0, tile);
        return;
    }
    const size_t bb = elm_type_get(t)->block_bytes, row_bytes = (size_t)nb * bb;
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    for (int64_t b = 0; b < nb; b++, tile += ELM_TILE_Q8_BYTES) {
        float d[16], m[16];
        for (int h = 0; h < 2; h++) {
            __m256 v[8];
            for (int i = 0; i < 8; i++) {
                const int r = 8 * h + i;
                const uint8_t *blk = base + (size_t)r * row_bytes + b * bb;
                d[r] = m[r] = 0;
                v[i] = _mm256_castsi256_ps(r < n_rows ? block_signed(t, blk, &d[r], &m[r])
                                                      : _mm256_setzero_si256());
            }
            transpose8(v);
            for (int k = 0; k < 8; k++) _mm256_store_ps((float *)(tile + 64 * k + 32 * h), v[k]);
        }
        memcpy(tile + ELM_TILE_ROWS * ELM_QK, d, sizeof d);
        memcpy(tile + ELM_TILE_ROWS * ELM_QK + 64, m, sizeof m);
    }
}

/* Below this many tokens the decode kernels beat repacking into tiles. */
enum { GEMM_MIN_TOKENS = 4 };

/* float products by blocks of 128 columns (gemm.c): the 6-token kernel passes over each block
 * of a tile 3 times per chunk of 16 tokens */
static const elm_gemm_kernels gemm_kernels = {.q8 = tile_q8_256,
                                              .q8_tokens = 4,
                                              .q8_small = tile_q8s_256,
                                              .f32 = tile_f32_256,
                                              .f32_tokens = 6,
                                              .f32_kc = 128,
                                              .repack_q8 = repack_q8_256,
                                              .repack_f32 = repack_f32_256};

/* What this table packs: the x86 layouts but Q5_K's and Q6_K's, whose 8-row tiles (tried) read
 * slower than their rows from the file in a model's decode while the VM's neighbours held the
 * memory at 45-50 GB/s, though faster alone out of L2 (TinyLlama-shaped files, Zen 5, 2 threads,
 * 2026-12-07, alternating: Q6_K 36-58 against 55-69 tok/s, Q5_K_M 46-47 against 63-72; at 70+
 * GB/s Q5_K_M 73 against 72). */
static bool packs(elm_type t, int64_t rows, int64_t cols) {
    return t != ELM_TYPE_Q5_K && t != ELM_TYPE_Q6_K && elm_packs_x16(t, rows, cols);
}

X86_FN static void matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    /* IQ4_NL's prefill repacks its tiles into the q8 tiles (repack_q8_iq4_nlx16): the q*x16
     * tile's lookups on every pass (then two a vector) made it 0.8x (pp256, TinyLlama
     * shapes, Zen 5, 2 threads, 2026-12-08: 121 against 150 tok/s from the file's layout) */
    const bool nl_prefill = a->w.type == ELM_TYPE_IQ4_NL && a->n_tok >= GEMM_MIN_TOKENS;
    if (elm_packed_as_qx16(&a->w) && !nl_prefill)
        elm_packed_qx16_matmul(tile_qx16_for(a->w.type), 4, a, r0, r1);
    else if (a->n_tok >= GEMM_MIN_TOKENS && elm_type_grid32(a->w.type))
        elm_gemm(&gemm_kernels, a, r0, r1, scratch);
    else if (elm_type_kquant(a->w.type)) elm_kquant_matmul(&elm_kq_avx2, a, r0, r1, scratch);
    else if (a->n_tok >= GEMM_MIN_TOKENS) elm_gemm(&gemm_kernels, a, r0, r1, scratch);
    else matvec(a, r0, r1, row_dot_256(a->w.type));
}

static const elm_kernels avx2_kernels = {
    .isa = "avx2",
    .dot_f32 = dot_f32,
    .transpose16 = elm_transpose_x16,
    .quantize_q8 = quantize_q8,
    .quantize_q8_k = quantize_q8_k,
    .matmul = matmul,
    .packs = packs,
    .pack = elm_pack_x16,
    .rmsnorm = rmsnorm,
    .softmax = softmax,
    .swiglu = swiglu,
    .geglu = geglu,
    .rope_cs = elm_scalar_rope_cs,
    .rope = elm_scalar_rope,
    .rope_neox = elm_scalar_rope_neox,
    .attention = attention,
};

const elm_kernels *elm_kernels_avx2(void) {
    const unsigned need = ELM_X86_AVX2 | ELM_X86_FMA | ELM_X86_F16C;
    return (elm_x86_features() & need) == need ? &avx2_kernels : NULL;
}
#else
const elm_kernels *elm_kernels_avx2(void) { return NULL; }
#endif
