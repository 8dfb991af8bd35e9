/* The x86-64 kernels written once in 256-bit vectors and compiled twice: by avx2.c for
 * AVX2+FMA+F16C and by avx512.c for AVX-512 (VL, VNNI), which changes only the integer dot step
 * and adds its own 512-bit prefill micro-kernels. Not a header to include elsewhere: before it
 * the including file includes <immintrin.h> and defines
 *   X86_FN                           the target attribute of every function here
 *   __m256i dot_u8s8(acc, u, s)      acc[i] += Σ_{j<4} u[4i+j]·s[4i+j], u unsigned (at most 128),
 *                                    s signed (at least -127): no pair can overflow 16 bits
 *
 * Decode (few tokens) reads each weight block where it lies in the file: a block of 32 weights
 * becomes one vector of 32 unsigned bytes in natural order, its integer dot with the token's q8
 * block gives 8 partial sums, and one fused multiply-add per block applies the two scales. The
 * zero point (8 or 16) and the offset m of the asymmetric types are applied once per block through
 * the q8 block's s = d·Σq: Σ d(q - o)·x = d·x.d·Σ q·x.qs - o·d·s. */
#include <math.h>
#include <string.h>

#include "kernels/gemm.h"
#include "kernels/packed.h"

#define X86_INLINE X86_FN static inline __attribute__((always_inline))

/* What a q*x16 tile's 4-bit codes are (tile_qx16_of's grid): offsets from the zero point (the
 * codes of Q4_0 ... Q5_1), or indices into IQ4_NL's or MXFP4's grid. */
enum { QX16_CODES, QX16_IQ4_NL, QX16_MXFP4 };

/* The packed 32-weight types' micro-kernels (packed.h's q*x16), one per 4/5-bit type over the
 * including file's tile_qx16_of(tile, nb, xq, n_tok, y, ldy, n_rows, asym, five, grid), and
 * tile_qx16_for(type), Q8_0's the including file's tile_q8_0x16: expanded by each table after
 * both. */
#define X86_QX16_KERNEL(name, asym, five, grid)                                                    \
    X86_FN static void name(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,  \
                            int64_t ldy, int n_rows) {                                             \
        tile_qx16_of(tile, nb, xq, n_tok, y, ldy, n_rows, asym, five, grid);                       \
    }
#define X86_QX16_KERNELS                                                                           \
    X86_QX16_KERNEL(tile_q4_0x16, false, false, QX16_CODES)                                        \
    X86_QX16_KERNEL(tile_q4_1x16, true, false, QX16_CODES)                                         \
    X86_QX16_KERNEL(tile_q5_0x16, false, true, QX16_CODES)                                         \
    X86_QX16_KERNEL(tile_q5_1x16, true, true, QX16_CODES)                                          \
    X86_QX16_KERNEL(tile_iq4_nlx16, false, false, QX16_IQ4_NL)                                     \
    X86_QX16_KERNEL(tile_mxfp4x16, false, false, QX16_MXFP4)                                       \
    static elm_tile_q8_fn tile_qx16_for(elm_type t) {                                              \
        return t == ELM_TYPE_Q4_0 ? tile_q4_0x16 : t == ELM_TYPE_Q4_1 ? tile_q4_1x16               \
               : t == ELM_TYPE_Q5_0 ? tile_q5_0x16 : t == ELM_TYPE_Q5_1 ? tile_q5_1x16             \
               : t == ELM_TYPE_Q8_0  ? tile_q8_0x16                                                \
               : t == ELM_TYPE_MXFP4 ? tile_mxfp4x16                                               \
                                     : tile_iq4_nlx16;                                             \
    }

/* A q*x16 tile's bytes per block and where its scales lie. */
X86_INLINE size_t qx16_tile_bytes(bool asym, bool five, int grid) {
    return grid == QX16_MXFP4 ? ELM_MXFP4X16_BYTES : elm_qx16_bytes(asym, five);
}
X86_INLINE size_t qx16_scales_at(bool five, int grid) {
    return grid == QX16_MXFP4 ? ELM_MXFP4X16_E : elm_qx16_d_at(five);
}

/* ---- helpers ---- */

#include "kernels/x86/grid_lanes.h"
#include "kernels/x86/reduce.h"

X86_INLINE float f16_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

X86_INLINE int32_t i32_at(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* e^x for float lanes: x = n·ln2 + r, |r| <= ln2/2, e^r by the Cephes expf polynomial (about one
 * ulp), 2^n through the exponent bits. Inputs are clamped to the range where 2^n is normal. */
X86_INLINE __m256 exp256(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* ---- float dot products ---- */

X86_FN static float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Eight 16-bit floats (F16 or BF16) from p as float lanes. */
X86_INLINE __m256 load8_f16(const uint8_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

X86_INLINE __m256 load8_bf16(const uint8_t *p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* The F16 and BF16 row dots differ only in the loader; always_inline makes two loops. */
X86_INLINE float dot_half(const uint8_t *w, const float *x, int64_t n, bool bf16) {
    __m256 acc[8];
    for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_ps();
    int64_t i = 0;
#define LOAD8(off) (bf16 ? load8_bf16(w + 2 * (i + (off))) : load8_f16(w + 2 * (i + (off))))
    for (; i + 64 <= n; i += 64) {
        elm_prefetch_span(w + 2 * i + ELM_PREFETCH_AHEAD, 128);
        for (int k = 0; k < 8; k++)
            acc[k] = _mm256_fmadd_ps(LOAD8(8 * k), _mm256_loadu_ps(x + i + 8 * k), acc[k]);
    }
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(LOAD8(0), _mm256_loadu_ps(x + i), acc[0]);
#undef LOAD8
    for (int k = 1; k < 8; k++) acc[0] = _mm256_add_ps(acc[0], acc[k]);
    float s = hsum256(acc[0]);
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, w + 2 * i, 2);
        s += (bf16 ? elm_bf16_to_f32(h) : _cvtsh_ss(h)) * x[i];
    }
    return s;
}

/* Four rows of a float type (stride bytes apart) against one x: each x vector is loaded once
 * for the four rows, which keeps the L1 traffic of long rows (FFN down: 5632 columns, a 22 KB
 * x) from evicting x while the weights stream through. */
X86_INLINE __m256 load8_weights(elm_type t, const uint8_t *p) {
    return t == ELM_TYPE_F32   ? _mm256_loadu_ps((const float *)p)
           : t == ELM_TYPE_F16 ? load8_f16(p)
                               : load8_bf16(p);
}

X86_INLINE void dot_float4(elm_type t, const uint8_t *w, size_t stride, const float *x, int64_t n,
                           float out[4]) {
    const size_t es = t == ELM_TYPE_F32 ? 4 : 2;
    __m256 acc[4][2];
    for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int r = 0; r < 4; r++)
            elm_prefetch_span(w + r * stride + es * i + ELM_PREFETCH_AHEAD, 32 * es);
        for (int h = 0; h < 32; h += 16) {
            const __m256 x0 = _mm256_loadu_ps(x + i + h), x1 = _mm256_loadu_ps(x + i + h + 8);
            for (int r = 0; r < 4; r++) {
                const uint8_t *p = w + r * stride + es * (i + h);
                acc[r][0] = _mm256_fmadd_ps(load8_weights(t, p), x0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(load8_weights(t, p + 8 * es), x1, acc[r][1]);
            }
        }
    }
    for (; i + 16 <= n; i += 16) {
        const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        for (int r = 0; r < 4; r++) {
            const uint8_t *p = w + r * stride + es * i;
            acc[r][0] = _mm256_fmadd_ps(load8_weights(t, p), x0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(load8_weights(t, p + 8 * es), x1, acc[r][1]);
        }
    }
    for (int r = 0; r < 4; r++) {
        out[r] = hsum256(_mm256_add_ps(acc[r][0], acc[r][1]));
        const uint8_t *p = w + r * stride;
        for (int64_t j = i; j < n; j++) {
            uint16_t h;
            memcpy(&h, p + 2 * j, 2);
            const float v = t == ELM_TYPE_F32   ? ((const float *)p)[j]
                            : t == ELM_TYPE_F16 ? _cvtsh_ss(h)
                                                : elm_bf16_to_f32(h);
            out[r] += v * x[j];
        }
    }
}

typedef void (*rows4_fn)(const uint8_t *w, size_t stride, const float *x, int64_t n, float out[4]);

#define ROWS4(name, type)                                                                          \
    X86_FN static void name(const uint8_t *w, size_t stride, const float *x, int64_t n,            \
                            float out[4]) {                                                        \
        dot_float4(type, w, stride, x, n, out);                                                    \
    }
ROWS4(rows4_f32, ELM_TYPE_F32)
ROWS4(rows4_f16, ELM_TYPE_F16)
ROWS4(rows4_bf16, ELM_TYPE_BF16)
#undef ROWS4

/* ---- q8 activations ---- */

X86_FN static void quantize_q8(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / ELM_QK;
    int8_t *qs = row;
    float *d = (float *)(qs + cols), *s = d + nb;
    int32_t *sum = (int32_t *)(s + nb);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < nb; b++, x += ELM_QK) {
        __m256 v[4], amax = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
        }
        const float db = hmax256(amax) / 127.0f, id = db != 0 ? 1.0f / db : 0.0f;
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], _mm256_set1_ps(id)));
        const __m256i total =
            _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        /* the packs interleave 128-bit lanes; the permutation restores element order */
        const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
        const __m256i p8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p16a, p16b), order);
        _mm256_storeu_si256((__m256i *)(qs + b * ELM_QK), p8);
        d[b] = db;
        sum[b] = hsum256_epi32(total);
        s[b] = db * (float)sum[b];
    }
}

/* The int32 sums of s[0..7]'s 8 lanes each, in lanes 0..7. */
X86_INLINE __m256i hsum8x8_epi32(const __m256i s[8]) {
    const __m256i a =
        _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    const __m256i b =
        _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
    /* a's low lane: the low halves' sums of s[0..3], its high lane their high halves' */
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                            _mm256_permute2x128_si256(a, b, 0x31));
}

/* A q8_K row: elm_quantize_q8_k's bytes (llama.cpp's quantize_row_q8_K_ref). Its rounding is
 * the float adder's round to nearest even of iscale·x, which vcvtps2dq does alike; a super-block
 * with a NaN or an infinity, whose products that trick turns into 0, goes to the oracle. */
X86_FN static void quantize_q8_k(const float *x, int64_t cols, void *row) {
    const int64_t nsb = cols / ELM_QK_K;
    int8_t *qs = row;
    float *d = (float *)(qs + cols);
    int16_t *bsum = (int16_t *)(d + nsb);
    const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(INFINITY);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t s = 0; s < nsb; s++, x += ELM_QK_K, qs += ELM_QK_K, bsum += ELM_QK_K / 16) {
        __m256 amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
        for (int j = 0; j < ELM_QK_K; j += 8) {
            const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j));
            amax = _mm256_max_ps(a, amax); /* a NaN left out, as the oracle's > does */
            bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));
        }
        const float am = hmax256(amax);
        if (am == 0 || _mm256_movemask_ps(bad)) {
            elm_quantize_q8_k_block(x, qs, &d[s], bsum);
            continue;
        }
        /* the first value of largest magnitude */
        float max = 0;
        for (int j = 0; j < ELM_QK_K; j += 8) {
            const int eq = _mm256_movemask_ps(_mm256_cmp_ps(
                _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), _mm256_set1_ps(am), _CMP_EQ_OQ));
            if (eq) {
                max = x[j + __builtin_ctz((unsigned)eq)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 is = _mm256_set1_ps(iscale);
        __m256i gsum[16];
        for (int k = 0; k < ELM_QK_K / 32; k++) {
            __m256i q[4];
            /* |iscale·x| <= 127 within an ulp: no clamp */
            for (int i = 0; i < 4; i++)
                q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * k + 8 * i)));
            gsum[2 * k] = _mm256_add_epi32(q[0], q[1]);
            gsum[2 * k + 1] = _mm256_add_epi32(q[2], q[3]);
            /* the packs interleave 128-bit lanes; the permutation restores element order */
            const __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                                  _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(qs + 32 * k), _mm256_permutevar8x32_epi32(p8, order));
        }
        /* at most 16·127 in magnitude: the int16 packing is exact */
        const __m256i b16 = _mm256_packs_epi32(hsum8x8_epi32(gsum), hsum8x8_epi32(gsum + 8));
        _mm256_storeu_si256((__m256i *)bsum,
                            _mm256_permute4x64_epi64(b16, _MM_SHUFFLE(3, 1, 2, 0)));
        d[s] = 1 / iscale;
    }
}

/* ---- block weights · q8 activations (decode) ---- */

/* 16 bytes of nibbles -> 32 bytes: low nibbles (weights 0..15), then high (16..31). */
X86_INLINE __m256i load_nibbles(const uint8_t *qs) {
    const __m128i v = _mm_loadu_si128((const __m128i *)qs);
    const __m256i both =
        _mm256_inserti128_si256(_mm256_castsi128_si256(v), _mm_srli_epi16(v, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

/* The fifth bits of a 5-bit block: byte j is 0x10 where bit j of the little-endian u32 qh is
 * set. */
X86_INLINE __m256i load_fifth_bits(const uint8_t *qh) {
    uint32_t h;
    memcpy(&h, qh, 4);
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                            2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), spread);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* One block's 32 weights as signed bytes in natural order (blocks.h's q), with d and m: the
 * tiles' repacking. */
X86_INLINE __m256i block_signed(elm_type t, const uint8_t *b, float *d, float *m) {
    *m = 0;
    if (elm_type_grid32(t)) { /* the codes' grid values by one lookup */
        const elm_grid32_layout g = elm_grid32_layout_of(t);
        *d = elm_grid32_scale(t, b, 0);
        const __m256i grid = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)g.grid));
        return _mm256_shuffle_epi8(grid, load_nibbles(b + g.qs_at));
    }
    *d = f16_at(b);
    switch (t) {
    case ELM_TYPE_Q8_0: return _mm256_loadu_si256((const __m256i *)(b + 2));
    case ELM_TYPE_Q4_0: return _mm256_sub_epi8(load_nibbles(b + 2), _mm256_set1_epi8(8));
    case ELM_TYPE_Q4_1: *m = f16_at(b + 2); return load_nibbles(b + 4);
    case ELM_TYPE_Q5_0:
        return _mm256_sub_epi8(_mm256_or_si256(load_nibbles(b + 6), load_fifth_bits(b + 2)),
                               _mm256_set1_epi8(16));
    default:
        *m = f16_at(b + 2);
        return _mm256_or_si256(load_nibbles(b + 8), load_fifth_bits(b + 4));
    }
}

/* Block i of a 4/5-bit row against the token: acc += d·x.d[i]·Σ(q - o)·x.qs, the zero point o
 * taken off in integers by starting the 8 lane sums at -(o/8)·Σx.qs; *corr += m·x.s[i]. */
X86_INLINE __m256 block_q4q5(const uint8_t *b, const elm_q8_row *x, int64_t i, __m256 acc,
                             float *corr, bool asym, bool five) {
    const float d = f16_at(b);
    const uint8_t *p = b + (asym ? 4 : 2);
    __m256i q = load_nibbles(p + (five ? 4 : 0));
    if (five) q = _mm256_or_si256(q, load_fifth_bits(p));
    const int zero_point_per_lane = asym ? 0 : five ? 2 : 1;
    const __m256i init = _mm256_set1_epi32(-zero_point_per_lane * x->sum[i]);
    const __m256i dot =
        dot_u8s8(init, q, _mm256_loadu_si256((const __m256i *)(x->qs + i * ELM_QK)));
    if (asym) *corr += f16_at(b + 2) * x->s[i];
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * x->d[i]), acc);
}

X86_INLINE float dot_q4q5(const uint8_t *b, const elm_q8_row *x, int64_t nb, bool asym, bool five) {
    const size_t bb = 18 + (asym ? 2 : 0) + (five ? 4 : 0);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float corr0 = 0, corr1 = 0;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2, b += 2 * bb) {
        acc0 = block_q4q5(b, x, i, acc0, &corr0, asym, five);
        acc1 = block_q4q5(b + bb, x, i + 1, acc1, &corr1, asym, five);
    }
    if (i < nb) acc0 = block_q4q5(b, x, i, acc0, &corr0, asym, five);
    return hsum256(_mm256_add_ps(acc0, acc1)) + corr0 + corr1;
}

/* Q8_0: signed weights, so the sign moves to the activations (|w| unsigned, x·sign(w)). */
X86_INLINE __m256 block_q8_0(const uint8_t *b, const elm_q8_row *x, int64_t i, __m256 acc) {
    const __m256i w = _mm256_loadu_si256((const __m256i *)(b + 2));
    const __m256i a = _mm256_loadu_si256((const __m256i *)(x->qs + i * ELM_QK));
    const __m256i dot =
        dot_u8s8(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(f16_at(b) * x->d[i]), acc);
}

/* One weight row against one token: x [cols] floats for float types, xq a q8 row for the block
 * types. */
typedef float (*row_dot_fn)(const void *w, const float *x, const elm_q8_row *xq, int64_t cols);

X86_FN static float row_q8_0(const void *w, const float *unused, const elm_q8_row *x,
                             int64_t cols) {
    (void)unused;
    const uint8_t *b = w;
    const int64_t nb = cols / ELM_QK;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2, b += 68) {
        _mm_prefetch((const char *)b + ELM_PREFETCH_AHEAD, _MM_HINT_T0);
        acc0 = block_q8_0(b, x, i, acc0);
        acc1 = block_q8_0(b + 34, x, i + 1, acc1);
    }
    if (i < nb) acc0 = block_q8_0(b, x, i, acc0);
    return hsum256(_mm256_add_ps(acc0, acc1));
}

#define ROW_Q4Q5(name, asym, five)                                                                 \
    X86_FN static float name(const void *w, const float *unused, const elm_q8_row *x,              \
                             int64_t cols) {                                                       \
        (void)unused;                                                                              \
        return dot_q4q5(w, x, cols / ELM_QK, asym, five);                                          \
    }
ROW_Q4Q5(row_q4_0, false, false)
ROW_Q4Q5(row_q4_1, true, false)
ROW_Q4Q5(row_q5_0, false, true)
ROW_Q4Q5(row_q5_1, true, true)
#undef ROW_Q4Q5

X86_FN static float row_f32(const void *w, const float *x, const elm_q8_row *unused, int64_t cols) {
    (void)unused;
    return dot_f32(w, x, cols);
}
X86_FN static float row_f16(const void *w, const float *x, const elm_q8_row *unused, int64_t cols) {
    (void)unused;
    return dot_half(w, x, cols, false);
}
X86_FN static float row_bf16(const void *w, const float *x, const elm_q8_row *unused,
                             int64_t cols) {
    (void)unused;
    return dot_half(w, x, cols, true);
}

static row_dot_fn row_dot_256(elm_type t) {
    switch (t) {
    case ELM_TYPE_F32: return row_f32;
    case ELM_TYPE_F16: return row_f16;
    case ELM_TYPE_BF16: return row_bf16;
    case ELM_TYPE_Q8_0: return row_q8_0;
    case ELM_TYPE_Q4_0: return row_q4_0;
    case ELM_TYPE_Q4_1: return row_q4_1;
    case ELM_TYPE_Q5_0: return row_q5_0;
    case ELM_TYPE_Q5_1: return row_q5_1;
    default: return NULL;
    }
}

/* Few tokens: each weight row is read from memory once and stays in L1 for the other tokens. */
X86_FN static void matvec(const elm_matmul_args *a, int64_t r0, int64_t r1, row_dot_fn dot) {
    const elm_weights *w = &a->w;
    const int64_t cols = w->cols, rows = w->rows;
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    const bool q8 = elm_type_q8_act(w->type);
    /* rows of a long x in fours (see dot_float4); shorter ones one by one, which streams the
     * weights strictly in order (measured faster when x fits in L1 with room to spare) */
    const bool long_x = cols * sizeof(float) > 16384;
    const rows4_fn four = !long_x                    ? NULL
                          : w->type == ELM_TYPE_F32  ? rows4_f32
                          : w->type == ELM_TYPE_F16  ? rows4_f16
                          : w->type == ELM_TYPE_BF16 ? rows4_bf16
                                                     : NULL;
    for (; four && r0 + 4 <= r1; r0 += 4) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
        for (int64_t t = 0; t < a->n_tok; t++) {
            float out[4];
            four(row, row_bytes, a->x + t * cols, cols, out);
            for (int k = 0; k < 4; k++) a->y[t * rows + r0 + k] = out[k];
        }
    }
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)w->data + (size_t)r * row_bytes;
        for (int64_t t = 0; t < a->n_tok; t++) {
            elm_q8_row xq = {0};
            if (q8) xq = elm_q8_at(a->xq, cols, t);
            a->y[t * rows + r] = dot(row, a->x + t * cols, &xq, cols);
        }
    }
}

/* ---- element-wise pieces of a layer ---- */

X86_FN static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        acc0 = _mm256_fmadd_ps(a, a, acc0);
        acc1 = _mm256_fmadd_ps(b, b, acc1);
    }
    double ss = hsum256(_mm256_add_ps(acc0, acc1));
    for (; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    const __m256 sv = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), sv),
                                                _mm256_loadu_ps(w + i)));
    for (; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* The softmax of x[0..n) and one more logit, sink (-INFINITY: none), whose share is dropped. */
X86_FN static void softmax_sink(float *x, int64_t n, float sink) {
    __m256 mv = _mm256_set1_ps(sink);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
    float max = hmax256(mv);
    for (; i < n; i++) max = x[i] > max ? x[i] : max;
    const __m256 m = _mm256_set1_ps(max);
    __m256 sv = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        sv = _mm256_add_ps(sv, e);
    }
    double sum = hsum256(sv) + (double)expf(sink - max);
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const __m256 inv = _mm256_set1_ps((float)(1.0 / sum));
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    for (; i < n; i++) x[i] *= (float)(1.0 / sum);
}

X86_FN static void softmax(float *x, int64_t n) { softmax_sink(x, n, -INFINITY); }

X86_FN static void swiglu(float *out, const float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gv = _mm256_loadu_ps(g + i);
        const __m256 den =
            _mm256_add_ps(_mm256_set1_ps(1.0f), exp256(_mm256_sub_ps(_mm256_setzero_ps(), gv)));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(gv, den), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GeGLU with the tanh approximation of GELU, 0.5·g·(1 + tanh(z)) = g·sigmoid(2z) with
 * z = sqrt(2/π)·(g + 0.044715·g³): the scalar oracle's value without its cancellation in 1 + tanh
 * for very negative g. */
X86_FN static void geglu(float *out, const float *g, const float *u, int64_t n) {
    const __m256 k2 = _mm256_set1_ps(-2.0f * 0.7978845608028654f), c = _mm256_set1_ps(0.044715f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        const __m256 e = exp256(_mm256_mul_ps(k2, _mm256_fmadd_ps(c, x3, x)));
        const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(x, den), _mm256_loadu_ps(u + i)));
    }
    if (i < n) elm_scalar_geglu(out + i, g + i, u + i, n - i);
}

/* Four dot products of q with k rows (stride floats apart) of head_dim = 8·n8 floats, reduced
 * together: one horizontal sum for four positions. */
X86_INLINE __m128 dot4_q(const float *q, const float *k, size_t stride, int n8) {
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int j = 0; j < n8; j++) {
        const __m256 qv = _mm256_loadu_ps(q + 8 * j);
        for (int r = 0; r < 4; r++)
            a[r] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + r * stride + 8 * j), a[r]);
    }
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* dot4_q for eight positions, the same sums in the same order: eight chains of multiply-adds in
 * flight (four left every second cycle of the two FMA pipes idle, waiting on the latency). */
X86_INLINE __m256 dot8_q(const float *q, const float *k, size_t stride, int n8) {
    __m256 a[8];
    for (int r = 0; r < 8; r++) a[r] = _mm256_setzero_ps();
    for (int j = 0; j < n8; j++) {
        const __m256 qv = _mm256_loadu_ps(q + 8 * j);
        for (int r = 0; r < 8; r++)
            a[r] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + r * stride + 8 * j), a[r]);
    }
    const __m256 lo = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 hi = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20),
                         _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* out[d] (+)= Σ_p s[p]·v_p[d] over positions [p0, p1), d < 8·n8 (n8 <= 8: the sums stay in
 * registers where n8 is a constant), in position order. */
X86_INLINE void attention_pv(const float *s, const float *v, size_t stride, int32_t p0, int32_t p1,
                             const int n8, bool add, float *out) {
    __m256 o[8];
    for (int j = 0; j < n8; j++) o[j] = add ? _mm256_loadu_ps(out + 8 * j) : _mm256_setzero_ps();
    for (int32_t p = p0; p < p1; p++) {
        const float *vp = v + (size_t)p * stride;
        const __m256 sp = _mm256_set1_ps(s[p]);
        for (int j = 0; j < n8; j++) o[j] = _mm256_fmadd_ps(sp, _mm256_loadu_ps(vp + 8 * j), o[j]);
    }
    for (int j = 0; j < n8; j++) _mm256_storeu_ps(out + 8 * j, o[j]);
}

/* Blocks of positions for a group's heads: 8 positions' k rows (at most 16 KiB) serve every head
 * from L1 before the next 8 are read; 32 positions' v rows likewise, each head's 64-dimension
 * slices of the output in registers over a block (loaded and stored between blocks, so each
 * output is the same chain of multiply-adds in position order as one head at a time). */
enum { ATT_K_BLOCK = 8, ATT_V_BLOCK = 32 };

/* Heads of up to 512 dimensions in multiples of 8 (Llama's 64 and 128, Gemma's 256, Gemma 4's
 * global 512); other sizes take the scalar oracle. */
X86_FN static void attention(const float *q, int n_q, const float *k, const float *v,
                             size_t stride, int32_t n_pos, int32_t pos0, int head_dim,
                             float scale, const float *sinks, int32_t n_tok, float *scores,
                             float *out) {
    if (head_dim % 8 || head_dim > 512) {
        elm_scalar_attention(q, n_q, k, v, stride, n_pos, pos0, head_dim, scale, sinks, n_tok,
                             scores, out);
        return;
    }
    const int n8 = head_dim / 8;
    const __m256 sv = _mm256_set1_ps(scale);
    int32_t p = 0;
    for (; p + ATT_K_BLOCK <= n_pos; p += ATT_K_BLOCK)
        for (int i = 0; i < n_q; i++)
            _mm256_storeu_ps(
                scores + (size_t)i * n_pos + p,
                _mm256_mul_ps(dot8_q(q + i * head_dim, k + (size_t)p * stride, stride, n8), sv));
    for (int i = 0; i < n_q; i++) {
        const float *qi = q + i * head_dim;
        float *si = scores + (size_t)i * n_pos;
        int32_t r = p;
        for (; r + 4 <= n_pos; r += 4)
            _mm_storeu_ps(si + r, _mm_mul_ps(dot4_q(qi, k + (size_t)r * stride, stride, n8),
                                             _mm_set1_ps(scale)));
        for (; r < n_pos; r++) si[r] = dot_f32(qi, k + (size_t)r * stride, head_dim) * scale;
        softmax_sink(si, n_pos, sinks ? sinks[i] : -INFINITY);
    }
    for (int32_t p0 = 0; p0 < n_pos; p0 += ATT_V_BLOCK) {
        const int32_t p1 = n_pos - p0 < ATT_V_BLOCK ? n_pos : p0 + ATT_V_BLOCK;
        for (int i = 0; i < n_q; i++)
            for (int d = 0; d < head_dim; d += 64) {
                const float *s = scores + (size_t)i * n_pos;
                float *o = out + i * head_dim + d;
                if (head_dim - d >= 64) attention_pv(s, v + d, stride, p0, p1, 8, p0 > 0, o);
                else attention_pv(s, v + d, stride, p0, p1, (head_dim - d) / 8, p0 > 0, o);
            }
    }
}
