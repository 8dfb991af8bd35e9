/* IQ4_NL's grid for maddubs, shared by the AVX2 tiles that look it up (avx2.c's IQ4_NL tiles,
 * kquant_tile_avx2.h's IQ4_XS ones). Not a header to include elsewhere: the including file
 * includes <immintrin.h> and codecs/iquant_codec.h and defines X86_INLINE.
 *
 * The grid values + 128 (1..241, unsigned for maddubs) would overflow its int16 pair sums, so each
 * is split into its two hex digits, u = 16·a + b: a tile looks both up from a 4-bit code with
 * vpshufb and sums Σu·x = 16·Σa·x + Σb·x. */
#ifndef EDGELM_KERNELS_X86_IQ4NL_AVX2_H
#define EDGELM_KERNELS_X86_IQ4NL_AVX2_H

/* The high (*a) and low (*b) hex digits of the 16 grid values + 128, in both 128-bit lanes. */
X86_INLINE void iq4nl_hex_digits(__m256i *a, __m256i *b) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i u = _mm256_xor_si256( /* + 128: the sign bits flipped */
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)elm_iq4nl_grid)),
        _mm256_set1_epi8((char)0x80));
    *a = _mm256_and_si256(_mm256_srli_epi16(u, 4), low4);
    *b = _mm256_and_si256(u, low4);
}

#endif
