/* Prefill products of the 256-weight types in AVX2 (part of kquant_avx2.c) for the types without
 * a straight-from-the-file tile (IQ4_XS, Q2_K, Q3_K): 16 weight rows at a time, two halves of 8
 * rows with one row per 32-bit lane, as kquant_gemm_avx512.h but without vpdpbusd.
 *
 * The rows' unpacked blocks (elm_kq_block) are repacked into a tile per super-block: the signed
 * codes q with lane r of vector k holding row r's columns 4k..4k+3; per 16-weight group the rows'
 * scales as int16 pairs (sc, sc); per pair of groups the rows' mins as int16 pairs (Q2_K). A
 * vector of codes is loaded and its absolute value taken once for up to 4 tokens; each token's 4
 * broadcast activation bytes take the codes' signs (maddubs wants unsigned × signed, see
 * kquant_body.h), and madd by the scale pairs sums each row's pair products times its group's
 * scale into the row's lane: the oracle's integers, Σ_g sc[g]·Σ q·x - Σ_g m[g]·bsum[g].
 * llama.cpp's AVX2 build does the same for the i-quants (iqp.cpp: 8-row int8 panels, 4 tokens);
 * IQ4_XS prefill from the file's layout (dot_packed, 2 rows by 4 tokens) ran at 0.64× of it. */

typedef struct kq_tile2_sb {
    uint32_t q[64][16];
    int32_t sc[16][16]; /* int16 pairs (sc, sc) of group g for row r */
    int32_t c[8][16];   /* int16 pairs (m[2h], m[2h+1]) */
    float d[16], e[16];
} kq_tile2_sb;
_Static_assert(sizeof(kq_tile2_sb) == ELM_KQ_TILE_SB_BYTES, "tile layout");


/* The tile of n_rows <= 16 rows of nsb blocks each, row after row at blk (rows past n_rows are
 * zeros; their results are never stored). */
KQ_FN static void kq2_repack(const elm_kq_block *blk, int n_rows, int64_t nsb, kq_tile2_sb *tile) {
    if (n_rows < 16) memset(tile, 0, (size_t)nsb * sizeof *tile);
    for (int r = 0; r < n_rows; r++)
        for (int64_t s = 0; s < nsb; s++) {
            const elm_kq_block *b = blk + r * nsb + s;
            kq_tile2_sb *o = tile + s;
            for (int k = 0; k < 64; k++) memcpy(&o->q[k][r], b->q + 4 * k, 4);
            for (int g = 0; g < 16; g++)
                o->sc[g][r] = (int32_t)((uint32_t)(uint16_t)b->sc[g] * 0x10001u);
            for (int h = 0; h < 8; h++)
                o->c[h][r] = (int32_t)((uint32_t)(uint16_t)b->m[2 * h] |
                                       (uint32_t)(uint16_t)b->m[2 * h + 1] << 16);
            o->d[r] = b->d, o->e[r] = b->dmin;
        }
}


/* Token i's sums, named (as ELM_FOR_6_TOKENS): arrays of them went to the stack. */
#define KQ2_FOR_4(op) op(0) op(1) op(2) op(3)
#define KQ2_ACC(i) __m256 acc##i = _mm256_setzero_ps();
#define KQ2_ZERO(i) __m256i isum##i = _mm256_setzero_si256(), corr##i = isum##i;
#define KQ2_DOT(i)                                                                                 \
    if (nx > i)                                                                                    \
        isum##i = _mm256_add_epi32(                                                                \
            isum##i,                                                                               \
            _mm256_madd_epi16(                                                                     \
                _mm256_maddubs_epi16(                                                              \
                    aw, _mm256_sign_epi8(kq_bcast32(x[i].qs + s * ELM_QK_K + 4 * k), w)),         \
                sc));
#define KQ2_CORR(i)                                                                                \
    if (nx > i)                                                                                    \
        corr##i = _mm256_add_epi32(                                                                \
            corr##i, _mm256_madd_epi16(c, kq_bcast32(x[i].bsum + 16 * s + 2 * h)));
#define KQ2_FLOAT(i)                                                                               \
    if (nx > i) {                                                                                  \
        const __m256 xd = _mm256_set1_ps(x[i].d[s]);                                               \
        acc##i = _mm256_fmadd_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(isum##i), acc##i);       \
        if (mins)                                                                                  \
            acc##i = _mm256_fnmadd_ps(_mm256_mul_ps(e, xd), _mm256_cvtepi32_ps(corr##i), acc##i);  \
    }
#define KQ2_STORE(i)                                                                               \
    if (nx > i) {                                                                                  \
        float out[8];                                                                              \
        _mm256_storeu_ps(out, acc##i);                                                             \
        memcpy(y + i * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

/* y[i·ldy + r] for nx <= 4 tokens and rows [8·half, 8·half + n_rows) of the tile; mins: the
 * type's (elm_kq_has_mins). */
KQ_INLINE void kq2_tile_dot(const bool mins, const kq_tile2_sb *tile, int half, int64_t nsb,
                            const elm_q8k_row *x, const int nx, int n_rows, float *y,
                            int64_t ldy) {
    KQ2_FOR_4(KQ2_ACC)
    for (int64_t s = 0; s < nsb; s++) {
        const kq_tile2_sb *o = tile + s;
        KQ2_FOR_4(KQ2_ZERO)
        for (int g = 0; g < 16; g++) {
            const __m256i sc = kq_load(o->sc[g] + 8 * half);
            for (int k = 4 * g; k < 4 * g + 4; k++) {
                const __m256i w = kq_load(o->q[k] + 8 * half), aw = _mm256_abs_epi8(w);
                KQ2_FOR_4(KQ2_DOT)
            }
        }
        for (int h = 0; mins && h < 8; h++) {
            const __m256i c = kq_load(o->c[h] + 8 * half);
            KQ2_FOR_4(KQ2_CORR)
        }
        const __m256 d = _mm256_loadu_ps(o->d + 8 * half), e = _mm256_loadu_ps(o->e + 8 * half);
        KQ2_FOR_4(KQ2_FLOAT)
    }
    KQ2_FOR_4(KQ2_STORE)
}
#undef KQ2_FOR_4
#undef KQ2_ACC
#undef KQ2_ZERO
#undef KQ2_DOT
#undef KQ2_CORR
#undef KQ2_FLOAT
#undef KQ2_STORE

#define KQ2_TILE_NX(M)                                                                       \
    switch (nx) {                                                                            \
    case 1: kq2_tile_dot(M, tile, h, nsb, x, 1, nr, yh, ldy); break;                         \
    case 2: kq2_tile_dot(M, tile, h, nsb, x, 2, nr, yh, ldy); break;                         \
    case 3: kq2_tile_dot(M, tile, h, nsb, x, 3, nr, yh, ldy); break;                         \
    default: kq2_tile_dot(M, tile, h, nsb, x, 4, nr, yh, ldy); break;                        \
    }

KQ_FN static void gemm16(elm_type t, const elm_kq_block *blk, int n_rows, int64_t cols,
                         const void *xq, int64_t nt, float *y, int64_t ldy, void *scratch) {
    const int64_t nsb = cols / ELM_QK_K;
    kq_tile2_sb *tile = scratch;
    kq2_repack(blk, n_rows, nsb, tile);
    for (int64_t i = 0; i < nt; i += 4) {
        elm_q8k_row x[4];
        const int nx = nt - i < 4 ? (int)(nt - i) : 4;
        for (int j = 0; j < nx; j++) x[j] = elm_q8k_at(xq, cols, i + j);
        for (int h = 0; h < 2 && 8 * h < n_rows; h++) {
            const int nr = n_rows - 8 * h < 8 ? n_rows - 8 * h : 8;
            float *yh = y + i * ldy + 8 * h;
            if (elm_kq_has_mins(t)) KQ2_TILE_NX(true)
            else KQ2_TILE_NX(false)
        }
    }
}
#undef KQ2_TILE_NX

/* The types gemm16 takes here: the others are faster straight from the file (dot_packed). The
 * sub-4-bit i-quants (|q| <= 62, sc <= 31) keep a pair's products within maddubs' int16. */
#define KQ_GEMM16_TYPES                                                                        \
    (1ull << ELM_TYPE_IQ4_XS | 1ull << ELM_TYPE_Q2_K | 1ull << ELM_TYPE_Q3_K |                     \
     1ull << ELM_TYPE_IQ2_XXS | 1ull << ELM_TYPE_IQ2_XS | 1ull << ELM_TYPE_IQ2_S |                 \
     1ull << ELM_TYPE_IQ3_XXS | 1ull << ELM_TYPE_IQ3_S | 1ull << ELM_TYPE_IQ1_S |                  \
     1ull << ELM_TYPE_IQ1_M | 1ull << ELM_TYPE_TQ1_0 | 1ull << ELM_TYPE_TQ2_0)
