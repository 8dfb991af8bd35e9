/* Decode of Q8_0 rows in 512-bit vectors for the AVX-512 table: rows_q8_0, four rows at a time,
 * four blocks (136 bytes a row) a step. Not a header to include elsewhere: avx512.c includes it
 * after x86_body.h.
 *
 * Why its own loop: the 256-bit block step (x86_body.h's row_q8_0) spends about 12 operations on
 * each 34-byte block (its scale converted and multiplied alone, the signs moved onto the
 * activations), 30 GB/s a core out of L2 on Zen 5, where two cores need 29 GB/s each to keep up
 * with the memory. Here a step loads a row's four blocks in three vectors, picks their quants
 * with two vpermt2b and their four f16 scales with one vpermt2w; the quants + 128 (unsigned, for
 * vpdpbusd) are corrected by sums that start at -128·Σx of each block (in its first lane), and
 * the token's part (its quants, those sums, its scales) is laid out once a step for the rows. */

/* A token's blocks b..b + 3 as a step wants them: the quants of blocks 0-1 and 2-3, the int32
 * start of each (-128·Σx in lane 0 of each block's 8), the scales (block i/8 in lane i). */
typedef struct {
    __m512i x[2], off[2];
    __m512 d[2];
} q8_0_x;

X86_INLINE q8_0_x q8_0_x_at(const elm_q8_row *x, int64_t b) {
    const __m512i lanes = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2);
    const __m512i half = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i sum = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(x->sum + b)));
    const __m512 d = _mm512_castps128_ps512(_mm_loadu_ps(x->d + b));
    q8_0_x v;
    for (int h = 0; h < 2; h++) {
        const __m512i at = h ? lanes : half;
        v.x[h] = _mm512_loadu_si512(x->qs + ELM_QK * b + 64 * h);
        v.off[h] = _mm512_maskz_permutexvar_epi32(0x0101, at, _mm512_slli_epi32(sum, 7));
        v.off[h] = _mm512_sub_epi32(_mm512_setzero_si512(), v.off[h]);
        v.d[h] = _mm512_permutexvar_ps(at, d);
    }
    return v;
}

/* Four blocks of one row at src against xv, added to acc. */
X86_INLINE __m512 q8_0_step(const uint8_t *src, const q8_0_x *xv, __m512 acc) {
    /* quant i of blocks 0-1 at byte 2 + i (i < 32) or 4 + i of the first two loads, of blocks
     * 2-3 at 6 + i or 8 + i of the last two (64 + j: byte j of the second source) */
    const __m512i iota = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41,
        40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
        17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i skip = _mm512_mask_blend_epi8(0xffffffff00000000ull, _mm512_set1_epi8(2),
                                                _mm512_set1_epi8(4));
    const __m512i pick01 = _mm512_add_epi8(iota, skip);
    const __m512i pick23 = _mm512_add_epi8(pick01, _mm512_set1_epi8(4));
    /* the scales: words 0 and 17 of the first load, 2 and 19 of the second (32 + w) */
    const __m512i scale_at = _mm512_set_epi16(51, 51, 51, 51, 51, 51, 51, 51, 34, 34, 34, 34, 34,
                                              34, 34, 34, 17, 17, 17, 17, 17, 17, 17, 17, 0, 0, 0,
                                              0, 0, 0, 0, 0);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i r0 = _mm512_loadu_si512(src), r1 = _mm512_loadu_si512(src + 64);
    const __m512i r2 = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(src + 128)));
    const __m512i q01 = _mm512_xor_si512(_mm512_permutex2var_epi8(r0, pick01, r1), flip);
    const __m512i q23 = _mm512_xor_si512(_mm512_permutex2var_epi8(r1, pick23, r2), flip);
    const __m512i h = _mm512_permutex2var_epi16(r0, scale_at, r1);
    const __m512 s01 = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)), xv->d[0]);
    const __m512 s23 = _mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), xv->d[1]);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(xv->off[0], q01, xv->x[0])), s01,
                          acc);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(xv->off[1], q23, xv->x[1])),
                           s23, acc);
}

/* R (1..4) rows of n Q8_0 blocks (row_bytes apart from src) against one token into y[R]; the
 * last n % 4 blocks by x86_body.h's block step. Each step prefetches its share of the R rows two
 * groups on, as the k-quant rows do (kquant_decode512.h). */
X86_INLINE void rows_q8_0_of(const uint8_t *src, size_t row_bytes, const int R,
                             const elm_q8_row *x, int64_t n, float *y) {
    const size_t bb = 2 + ELM_QK; /* the f16 scale, the quants */
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t b = 0;
    for (; b + 4 <= n; b += 4) {
        const q8_0_x xv = q8_0_x_at(x, b);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = q8_0_step(src + row_bytes * (size_t)r + bb * b, &xv, acc[r]);
        if (R > 1)
            elm_prefetch_span(src + 2 * row_bytes * (size_t)R + (size_t)R * bb * (size_t)b,
                              4 * (size_t)R * bb);
    }
    for (int r = 0; r < R; r++) {
        __m256 tail = _mm256_setzero_ps();
        for (int64_t i = b; i < n; i++)
            tail = block_q8_0(src + row_bytes * (size_t)r + bb * i, x, i, tail);
        y[r] = _mm512_reduce_add_ps(acc[r]) + hsum256(tail);
    }
}

/* n_rows rows of n Q8_0 blocks against one token into y[n_rows], four at a time. */
X86_FN static void rows_q8_0(const uint8_t *src, size_t row_bytes, int64_t n_rows,
                             const elm_q8_row *x, int64_t n, float *y) {
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) rows_q8_0_of(src + row_bytes * r, row_bytes, 4, x, n, y + r);
    for (; r < n_rows; r++) rows_q8_0_of(src + row_bytes * r, row_bytes, 1, x, n, y + r);
}
