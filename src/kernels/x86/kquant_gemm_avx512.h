/* Prefill products for every 256-weight super-block type in AVX-512 (part of kquant_avx512.c):
 * 16 weight rows at a time, one row per 32-bit lane, as gemm.c's tiles for the 32-weight types.
 *
 * The rows' unpacked blocks (elm_kq_block) are repacked into a tile: per super-block, the codes as
 * unsigned bytes u = q + o (o = 4 for Q3_K, 32 for Q6_K, 128 for IQ4_XS and the sub-4-bit
 * i-quants, else 0) with lane r of vector k holding row r's columns 4k..4k+3; per 16-weight group
 * the rows' scales as int32; and per pair of groups int16 pairs of the correction weights (the
 * mins m, or o·sc). Then vpdpbusd
 * multiplies a vector of codes by 4 broadcast activation bytes: 64 products per instruction,
 * with nothing to sign-correct, and the exact integers of the oracle:
 *   Σ_g sc[g]·Σ q·x = Σ_g sc[g]·Σ u·x - Σ_g o·sc[g]·bsum[g],
 * each row's in its own lane, scaled in the oracle's float order: the oracle's bits. */

/* One super-block of a tile (ELM_KQ_TILE_SB_BYTES). */
typedef struct kq_tile_sb {
    uint32_t q[64][16];
    int32_t sc[16][16];
    int32_t c[8][16]; /* int16 pairs: groups 2h, 2h+1 */
    float d[16], e[16];
} kq_tile_sb;
_Static_assert(sizeof(kq_tile_sb) == ELM_KQ_TILE_SB_BYTES, "tile layout");

KQ_INLINE int kq_offset(elm_type t) {
    return t == ELM_TYPE_Q3_K                             ? 4
           : t == ELM_TYPE_Q6_K                           ? 32
           : t == ELM_TYPE_IQ4_XS || elm_type_iquant(t) ? 128
                                                          : 0;
}


/* The tile of n_rows <= 16 rows of nsb blocks each, row after row at blk (rows past n_rows
 * repeat row 0; their results are never stored). */
KQ_FN static void kq_repack(elm_type t, const elm_kq_block *blk, int n_rows, int64_t nsb,
                            kq_tile_sb *tile) {
    int32_t off[16];
    for (int r = 0; r < 16; r++) off[r] = r < n_rows ? (int32_t)(r * nsb * sizeof *blk) : 0;
    const __m512i idx = _mm512_loadu_si512(off);
    const __m512i o8 = _mm512_set1_epi8((char)kq_offset(t));
    const __m512i o16 = _mm512_set1_epi16((short)kq_offset(t));
    const bool mins = elm_kq_has_mins(t);
    for (int64_t s = 0; s < nsb; s++) {
        const elm_kq_block *b = blk + s;
        kq_tile_sb *o = tile + s;
        for (int k = 0; k < 64; k++)
            _mm512_store_si512(o->q[k],
                               _mm512_add_epi8(_mm512_i32gather_epi32(idx, b->q + 4 * k, 1), o8));
        for (int h = 0; h < 8; h++) {
            const __m512i p = _mm512_i32gather_epi32(idx, b->sc + 2 * h, 1);
            _mm512_store_si512(o->sc[2 * h], _mm512_srai_epi32(_mm512_slli_epi32(p, 16), 16));
            _mm512_store_si512(o->sc[2 * h + 1], _mm512_srai_epi32(p, 16));
            _mm512_store_si512(o->c[h], mins ? _mm512_i32gather_epi32(idx, b->m + 2 * h, 1)
                                             : _mm512_mullo_epi16(p, o16));
        }
        const __m512 d = _mm512_i32gather_ps(idx, &b->d, 1);
        _mm512_store_ps(o->d, d);
        _mm512_store_ps(o->e, mins ? _mm512_i32gather_ps(idx, &b->dmin, 1) : d);
    }
}

KQ_INLINE __m512i kq_bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* y[i·ldy + r] for nx <= 4 tokens and the tile's rows (mask: the rows to store). */
KQ_INLINE void kq_tile_dot(const elm_type t, const kq_tile_sb *tile, int64_t nsb,
                           const elm_q8k_row *x, const int nx, __mmask16 mask, float *y,
                           int64_t ldy) {
    const bool mins = elm_kq_has_mins(t);
    __m512 acc[4];
    for (int i = 0; i < nx; i++) acc[i] = _mm512_setzero_ps();
    for (int64_t s = 0; s < nsb; s++) {
        const kq_tile_sb *o = tile + s;
        __m512i isum[4], corr[4];
        for (int i = 0; i < nx; i++) isum[i] = corr[i] = _mm512_setzero_si512();
        for (int g = 0; g < 16; g++) {
            __m512i part[4];
            for (int i = 0; i < nx; i++) part[i] = _mm512_setzero_si512();
            for (int k = 4 * g; k < 4 * g + 4; k++) {
                const __m512i w = _mm512_load_si512(o->q[k]);
                for (int i = 0; i < nx; i++)
                    part[i] = _mm512_dpbusd_epi32(part[i], w,
                                                  kq_bcast32(x[i].qs + s * ELM_QK_K + 4 * k));
            }
            const __m512i sc = _mm512_load_si512(o->sc[g]);
            for (int i = 0; i < nx; i++)
                isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(part[i], sc));
        }
        for (int h = 0; h < 8; h++) {
            const __m512i c = _mm512_load_si512(o->c[h]);
            for (int i = 0; i < nx; i++)
                corr[i] = _mm512_dpwssd_epi32(corr[i], c, kq_bcast32(x[i].bsum + 16 * s + 2 * h));
        }
        const __m512 d = _mm512_load_ps(o->d), e = _mm512_load_ps(o->e);
        for (int i = 0; i < nx; i++) {
            const __m512 xd = _mm512_set1_ps(x[i].d[s]);
            /* the oracle's float steps in its order (no fused multiply-add) */
            if (mins) {
                acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(_mm512_mul_ps(d, xd),
                                                             _mm512_cvtepi32_ps(isum[i])));
                acc[i] = _mm512_sub_ps(acc[i], _mm512_mul_ps(_mm512_mul_ps(e, xd),
                                                             _mm512_cvtepi32_ps(corr[i])));
            } else {
                acc[i] = _mm512_add_ps(acc[i], _mm512_mul_ps(_mm512_mul_ps(d, xd),
                                                             _mm512_cvtepi32_ps(_mm512_sub_epi32(
                                                                 isum[i], corr[i]))));
            }
        }
    }
    for (int i = 0; i < nx; i++) _mm512_mask_storeu_ps(y + i * ldy, mask, acc[i]);
}

#define KQ_TILE_NX(T)                                                                        \
    for (int64_t i = 0; i < nt; i += 4) {                                                    \
        elm_q8k_row x[4];                                                                    \
        const int nx = nt - i < 4 ? (int)(nt - i) : 4;                                       \
        for (int j = 0; j < nx; j++) x[j] = elm_q8k_at(xq, cols, i + j);                     \
        float *yi = y + i * ldy;                                                             \
        switch (nx) {                                                                        \
        case 1: kq_tile_dot(T, tile, nsb, x, 1, mask, yi, ldy); break;                      \
        case 2: kq_tile_dot(T, tile, nsb, x, 2, mask, yi, ldy); break;                      \
        case 3: kq_tile_dot(T, tile, nsb, x, 3, mask, yi, ldy); break;                      \
        default: kq_tile_dot(T, tile, nsb, x, 4, mask, yi, ldy); break;                     \
        }                                                                                    \
    }

KQ_FN static void gemm16(elm_type t, const elm_kq_block *blk, int n_rows, int64_t cols,
                         const void *xq, int64_t nt, float *y, int64_t ldy, void *scratch) {
    const int64_t nsb = cols / ELM_QK_K;
    kq_tile_sb *tile = scratch;
    const __mmask16 mask = (__mmask16)((1u << n_rows) - 1);
    kq_repack(t, blk, n_rows, nsb, tile);
    switch (t) {
    case ELM_TYPE_Q2_K: KQ_TILE_NX(ELM_TYPE_Q2_K) break;
    case ELM_TYPE_Q3_K: KQ_TILE_NX(ELM_TYPE_Q3_K) break;
    case ELM_TYPE_Q4_K: KQ_TILE_NX(ELM_TYPE_Q4_K) break;
    case ELM_TYPE_Q5_K: KQ_TILE_NX(ELM_TYPE_Q5_K) break;
    case ELM_TYPE_Q6_K: KQ_TILE_NX(ELM_TYPE_Q6_K) break;
    default: KQ_TILE_NX(ELM_TYPE_IQ4_XS) break;
    }
}
#undef KQ_TILE_NX
