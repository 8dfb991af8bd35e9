/* IQ4_NL's grid for maddubs, shared by the AVX2 tiles that look it up (avx2.c's IQ4_NL tiles,
 * kquant_tile_avx2.h's IQ4_XS ones). Not a header to include elsewhere: the including file
 * includes <immintrin.h> and codecs/iquant_codec.h and defines X86_INLINE.
 *
 * maddubs takes one operand unsigned, and the grid values + 128 (1..241) would overflow its
 * int16 pair sums. So each value g is split with the 4-bit code v itself as the high digit,
 * g + IQ4NL_SPLIT_ZERO = 16·v + r(v), r(v) in 0..26 (g - 16·v spans -139..-113 over the grid):
 * a tile sums Σv·x as Q4_0's codes, looks r up with one vpshufb, and Σ(g + 139)·x = 16·Σv·x +
 * Σr·x. Four pair sums of r stay within 4·2·26·127 < 2^15. (The split into two hex digits of
 * g + 128, which it replaced, took two lookups.) */
#ifndef EDGELM_KERNELS_X86_IQ4NL_AVX2_H
#define EDGELM_KERNELS_X86_IQ4NL_AVX2_H

enum { IQ4NL_SPLIT_ZERO = 139 };

/* The 16 residues r(v) in both 128-bit lanes, for vpshufb. */
X86_INLINE __m256i iq4nl_residues(void) {
    const __m256i g = grid_lanes(elm_iq4nl_grid);
    const __m256i v16 = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        0, 16, 32, 48, 64, 80, 96, 112, (char)128, (char)144, (char)160, (char)176, (char)192,
        (char)208, (char)224, (char)240));
    /* bytewise mod 256, exact as every r(v) fits 0..255 */
    return _mm256_sub_epi8(_mm256_add_epi8(g, _mm256_set1_epi8((char)IQ4NL_SPLIT_ZERO)), v16);
}

#endif
