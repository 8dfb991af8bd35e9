/* A 16x16 transpose of 32-bit lanes for the AVX-512 files, which define X86_FN and X86_INLINE
 * (their own target attributes) before including it. */
#ifndef EDGELM_KERNELS_X86_TRANSPOSE512_H
#define EDGELM_KERNELS_X86_TRANSPOSE512_H

/* Index vectors of a 16x16 transpose by four rounds of butterflies: round s swaps the
 * off-diagonal halves of blocks of H = 8 >> s lanes between rows r and r + H. */
typedef struct {
    __m512i lo[4], hi[4];
} butterflies;

X86_FN static void make_butterflies(butterflies *b) {
    for (int s = 0; s < 4; s++) {
        const int H = 8 >> s;
        int32_t lo[16], hi[16];
        for (int p = 0; p < 16; p++) {
            lo[p] = (p / H) % 2 == 0 ? p : 16 + p - H;
            hi[p] = (p / H) % 2 == 0 ? p + H : 16 + p;
        }
        b->lo[s] = _mm512_loadu_si512(lo);
        b->hi[s] = _mm512_loadu_si512(hi);
    }
}

/* v[r] (16 lanes each) becomes column r of the 16x16 matrix whose rows were v. */
X86_INLINE void transpose16(__m512 v[16], const butterflies *b) {
    for (int s = 0; s < 4; s++) {
        const int H = 8 >> s;
        for (int r = 0; r < 16; r++) {
            if ((r / H) % 2) continue;
            const __m512 x = v[r], y = v[r + H];
            v[r] = _mm512_permutex2var_ps(x, b->lo[s], y);
            v[r + H] = _mm512_permutex2var_ps(x, b->hi[s], y);
        }
    }
}

#endif
