/* MXFP4 rows against one token in 256-bit AVX2 vectors: the AVX2 table's decode product for
 * a mixture of experts' MXFP4 stacks, read in place (kquant.h's rows_mxfp4). Not a header to
 * include elsewhere: kquant_body.h includes it for the table without KQ_DECODE512.
 *
 * Why its own loop: a block is 17 bytes (the E8M0 scale, 16 bytes of nibbles) for 32 weights,
 * so a core streaming 25 GB/s of it has about 2 cycles a block. Block by block (one grid lookup,
 * the sign moved onto the activations, a scalar scale) it ran 9-10 GB/s out of L2; this runs
 * 21-22 (`kernel_rate --file-layout mxfp4`, Zen 5). Here two blocks share a vector (block b in the low 128-bit lane): the codes are the grid + 16 (4..28, MXFP4's
 * doubled values are at most 12 in magnitude), so maddubs takes them unsigned and two pair sums
 * add in int16 (2·2·28·127 < 2^15) before one madd; 16·Σx comes off in the int32 lanes' start.
 * Four rows go at once, sharing the activations' work; a row's scales come from a table of
 * elm_e8m0_half (built in vectors from the bytes they cost twice as much). The integers are the
 * oracle's per block; the float steps one product and one fused multiply-add per block, into 8
 * float lanes. */

/* A token's activations for the blocks b, b + 1 (two: whether b + 1 is in the row): the first
 * 16 of each (the low nibbles' weights) in lo, the last 16 in hi, block b in the low lane;
 * -4·Σx in each of a block's four int32 lanes. */
typedef struct {
    __m256i lo, hi, off;
} kq_mxfp4_x;

KQ_INLINE kq_mxfp4_x kq_mxfp4_x_at(const elm_q8_row *x, int64_t b, bool two) {
    const int8_t *q = x->qs + ELM_QK * b;
    const __m128i z = _mm_setzero_si128();
    const __m256i lo = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)q)),
        two ? _mm_loadu_si128((const __m128i *)(q + ELM_QK)) : z, 1);
    const __m256i hi = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(q + 16))),
        two ? _mm_loadu_si128((const __m128i *)(q + ELM_QK + 16)) : z, 1);
    const __m256i sum = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi32(x->sum[b])),
                                                _mm_set1_epi32(two ? x->sum[b + 1] : 0), 1);
    const __m256i off = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 2));
    return (kq_mxfp4_x){lo, hi, off};
}

/* The int32 sums of blocks b, b + 1 of one row (src: block b) against xv, four lanes a block. */
KQ_INLINE __m256i kq_mxfp4_pair(const uint8_t *src, bool two, const kq_mxfp4_x *xv) {
    const __m256i grid = _mm256_add_epi8(grid_lanes(elm_mxfp4_grid), _mm256_set1_epi8(16));
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i v = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(src + 1))),
        two ? _mm_loadu_si128((const __m128i *)(src + ELM_MXFP4_BLOCK_BYTES + 1))
            : _mm_setzero_si128(),
        1);
    const __m256i wlo = _mm256_shuffle_epi8(grid, _mm256_and_si256(v, m4));
    const __m256i whi = _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    const __m256i p =
        _mm256_add_epi16(_mm256_maddubs_epi16(wlo, xv->lo), _mm256_maddubs_epi16(whi, xv->hi));
    return _mm256_add_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), xv->off);
}

/* elm_e8m0_half(e) for every byte e, as a table (its float bits: the subnormal 2^21 << e below
 * e = 2, else (e - 1) << 23; 255, the NaN, never reaches a kernel: loading refuses it). */
#define KQ_E8M0_HALF(e) ((e) < 2 ? UINT32_C(0x00200000) << ((e) & 1) : (uint32_t)((e) - 1) << 23)
#define KQ_E8M0_4(e) KQ_E8M0_HALF(e), KQ_E8M0_HALF(e + 1), KQ_E8M0_HALF(e + 2), KQ_E8M0_HALF(e + 3)
#define KQ_E8M0_16(e) KQ_E8M0_4(e), KQ_E8M0_4(e + 4), KQ_E8M0_4(e + 8), KQ_E8M0_4(e + 12)
#define KQ_E8M0_64(e) KQ_E8M0_16(e), KQ_E8M0_16(e + 16), KQ_E8M0_16(e + 32), KQ_E8M0_16(e + 48)
static const union {
    uint32_t bits[256];
    float half[256];
} kq_e8m0 = {{KQ_E8M0_64(0), KQ_E8M0_64(64), KQ_E8M0_64(128), KQ_E8M0_64(192)}};

/* R (1..4) MXFP4 rows of n blocks, row_bytes apart from src, against one token into y[R]: four
 * blocks a step (prefetching the rows two groups on, as kq512_mxfp4_rows_of), then one pair or
 * block at a time. */
KQ_INLINE void kq_mxfp4_rows_of(const uint8_t *src, size_t row_bytes, const int R,
                                const elm_q8_row *x, int64_t n, float *y) {
    const int bb = ELM_MXFP4_BLOCK_BYTES;
    const __m256i first = _mm256_set_epi32(1, 1, 1, 1, 0, 0, 0, 0);
    const __m256i second = _mm256_set_epi32(3, 3, 3, 3, 2, 2, 2, 2);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    int64_t b = 0;
    for (; b + 4 <= n; b += 4) {
        const kq_mxfp4_x x01 = kq_mxfp4_x_at(x, b, true), x23 = kq_mxfp4_x_at(x, b + 2, true);
        const __m128 xd = _mm_loadu_ps(x->d + b);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *p = src + row_bytes * (size_t)r + bb * b;
            const __m256 s = _mm256_castps128_ps256(
                _mm_mul_ps(_mm_setr_ps(kq_e8m0.half[p[0]], kq_e8m0.half[p[bb]],
                                       kq_e8m0.half[p[2 * bb]], kq_e8m0.half[p[3 * bb]]),
                           xd));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(kq_mxfp4_pair(p, true, &x01)),
                                     _mm256_permutevar8x32_ps(s, first), acc[r]);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(kq_mxfp4_pair(p + 2 * bb, true, &x23)),
                                     _mm256_permutevar8x32_ps(s, second), acc[r]);
        }
        elm_prefetch_span(src + 2 * row_bytes * (size_t)R + (size_t)(R * bb) * b, 4 * R * bb);
    }
    for (; b < n; b += 2) {
        const bool two = b + 1 < n;
        const kq_mxfp4_x xv = kq_mxfp4_x_at(x, b, two);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *p = src + row_bytes * (size_t)r + bb * b;
            const __m256 s = _mm256_insertf128_ps(
                _mm256_castps128_ps256(_mm_set1_ps(kq_e8m0.half[p[0]] * x->d[b])),
                _mm_set1_ps(two ? kq_e8m0.half[p[bb]] * x->d[b + 1] : 0.0f), 1);
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(kq_mxfp4_pair(p, two, &xv)), s, acc[r]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) y[r] = hsum256(acc[r]);
}
