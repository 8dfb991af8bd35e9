/* A 16-value grid (IQ4_NL's, MXFP4's, their derived tables) in both 128-bit lanes of a 256-bit
 * vector, for vpshufb lookups of 4-bit codes: for the x86 bodies (x86_body.h, kquant_body.h). Not
 * a header to include elsewhere: the including file includes <immintrin.h> and defines
 * X86_INLINE, the always-inline target attribute of its functions. */
#ifndef EDGELM_KERNELS_X86_GRID_LANES_H
#define EDGELM_KERNELS_X86_GRID_LANES_H

#include <stdint.h>

X86_INLINE __m256i grid_lanes(const int8_t *grid) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)grid));
}

#endif
