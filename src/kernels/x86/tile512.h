/* Pieces of the 16-row prefill tiles for the AVX-512 files, which define X86_FN and X86_INLINE
 * (their own target attributes) before including it: a 16x16 transpose of 32-bit lanes, and a
 * 16-token chunk's accumulators (one vector of the tile's 16 rows per token). */
#ifndef EDGELM_KERNELS_X86_TILE512_H
#define EDGELM_KERNELS_X86_TILE512_H

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

/* acc[t] = y's n_rows values of token t when add (and t < n_tok), else zeros, for all 16. */
X86_INLINE void tile512_acc_load(__m512 acc[16], const float *y, int64_t ldy, int n_tok,
                                 int n_rows, bool add) {
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    for (int t = 0; t < 16; t++)
        acc[t] = add && t < n_tok ? _mm512_maskz_loadu_ps(keep, y + t * ldy) : _mm512_setzero_ps();
}

/* y's n_rows values of token t = acc[t], t < n_tok. */
X86_INLINE void tile512_acc_store(const __m512 acc[16], float *y, int64_t ldy, int n_tok,
                                  int n_rows) {
    const __mmask16 keep = (__mmask16)((1u << n_rows) - 1);
    for (int t = 0; t < n_tok; t++) _mm512_mask_storeu_ps(y + t * ldy, keep, acc[t]);
}

#endif
