/* The 8x8 transpose of 256-bit vectors' 32-bit lanes, for the AVX2 bodies (avx2.c's repacking of
 * float and q8 tiles, kquant_gemm_avx2.h's of the k-quant tiles; integer lanes go through it
 * cast). Not a header to include elsewhere: the including file includes <immintrin.h> and
 * defines X86_INLINE, the always-inline target attribute of its functions. */
#ifndef EDGELM_KERNELS_X86_TRANSPOSE_H
#define EDGELM_KERNELS_X86_TRANSPOSE_H

/* An 8x8 transpose of float lanes (unpack pairs, then quads, then swap 128-bit halves). */
X86_INLINE void transpose8(__m256 v[8]) {
    __m256 a[8], b[8];
    for (int i = 0; i < 8; i += 2) {
        a[i] = _mm256_unpacklo_ps(v[i], v[i + 1]);
        a[i + 1] = _mm256_unpackhi_ps(v[i], v[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; j++) {
            b[i + j] = _mm256_shuffle_ps(a[i + j], a[i + j + 2], 0x44);
            b[i + j + 2] = _mm256_shuffle_ps(a[i + j], a[i + j + 2], 0xee);
        }
    /* b[0..3]: columns 0, 2, 1, 3 of rows 0-3 in the low halves, columns 4, 6, 5, 7 in the high
     * ones; b[4..7] the same of rows 4-7 */
    static const int order[4] = {0, 2, 1, 3};
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_permute2f128_ps(b[order[k]], b[4 + order[k]], 0x20);
        v[k + 4] = _mm256_permute2f128_ps(b[order[k]], b[4 + order[k]], 0x31);
    }
}

#endif
