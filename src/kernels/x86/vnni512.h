/* VNNI multiply-adds with a broadcast memory operand, for the AVX-512 micro-kernels (avx512.c,
 * kquant_tile_avx512.h). Not a header to include elsewhere: the including file includes
 * <immintrin.h> and defines X86_INLINE, the always-inline target attribute of its functions.
 *
 * gcc 12 does not fold _mm512_set1_epi32 of a loaded word into the instruction's {1to16}
 * operand: it emits a separate vpbroadcastd for each, a third of a micro-kernel's instructions. */
#ifndef EDGELM_KERNELS_X86_VNNI512_H
#define EDGELM_KERNELS_X86_VNNI512_H

#include <stdint.h>

/* acc + Σ4 u8(w)·s8(the four bytes at p, in every lane) (vpdpbusd). */
X86_INLINE __m512i dpbusd_bcast(__m512i acc, __m512i w, const void *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

/* acc + Σ2 s16(w)·s16(the two int16 at p, in every lane) (vpdpwssd). */
X86_INLINE __m512i dpwssd_bcast(__m512i acc, __m512i w, const void *p) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

#endif
