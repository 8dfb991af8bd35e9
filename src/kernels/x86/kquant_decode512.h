/* Weight rows of Q4_K, Q5_K, Q6_K or IQ4_XS (and the other types of kq512_serves) against one
 * token in 512-bit vectors, reduced four at a time: the AVX-512 table's decode step
 * (kquant_body.h's decode_rows, kq512_rows); and the rows of MXFP4 and IQ4_NL, four at a time
 * (rows_mxfp4 and rows_iq4_nl, at the end). Not a header to include elsewhere: kquant_body.h
 * includes it after packed_scales.
 *
 * Why its own loop: at 2 threads each core has to turn about 29 GB/s of weights into products to
 * keep up with this machine's memory (AMD Zen 5, `bench --membw` 58 GB/s), 15-23 cycles per
 * super-block, and the 256-bit loop spent 25-35 on the 5-bit, 6-bit and IQ4_XS types.
 * Here a super-block is four vectors of 64 unsigned codes in weight order (c_j: weights
 * 64j..64j+63, built with masks, per-lane shifts, lane shuffles and, for IQ4_XS, a grid lookup),
 * each against 64 activations: maddubs (pair sums in int16) and one vpdpwssd by its 16-weight
 * groups' scales, spread over the int16 lanes by one vpermw (lane i of c_j's pairs is group
 * 4j + i/8; Q4_K's and Q5_K's, one per 32 weights, by one vpshufb); IQ4_XS's grid values
 * + 128 would overflow those pairs, so vpdpbusd and vpmulld.
 * The integers are the oracle's per super-block (kquant.h); the float steps are one fused
 * multiply-add per super-block into 16 float lanes, as the 256-bit decode's lanes. */

/* The scale of group 4j + i/8 in int16 lane i, for vpermw of j = 0..3. */
KQ_INLINE __m512i kq512_scale_index(int j) {
    return _mm512_add_epi16(_mm512_set1_epi16((short)(4 * j)),
                            _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23,
                                                               22, 21, 20, 19, 18, 17, 16, 15, 14,
                                                               13, 12, 11, 10, 9, 8, 7, 6, 5, 4,
                                                               3, 2, 1, 0),
                                              3));
}

/* The low and high nibbles of 64 bytes. */
KQ_INLINE void kq512_nibbles(const uint8_t *p, __m512i *lo, __m512i *hi) {
    const __m512i v = _mm512_loadu_si512(p), m4 = _mm512_set1_epi8(0x0f);
    *lo = _mm512_and_si512(v, m4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
}

/* a | (b & m) in one vpternlog. */
KQ_INLINE __m512i kq512_or_masked(__m512i a, __m512i b, __m512i m) {
    return _mm512_ternarylogic_epi32(a, b, m, 0xf8);
}

/* The four code vectors of super-block b (see above), unsigned: Q4_K's and Q5_K's codes, Q6_K's
 * and IQ4_XS's before their offsets (32; 128 added to the signed grid values). */
KQ_INLINE void kq512_codes(const elm_type t, const uint8_t *b, __m512i c[4]) {
    switch (t) {
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: {
        /* 32 code bytes hold weights 64p..64p+31 (low nibbles) and 64p+32.. (high): a 64-byte
         * load has 128k+0..31 | 128k+64..95 in its low nibbles and the +32 runs in its high */
        const uint8_t *qs = b + (t == ELM_TYPE_Q5_K ? 48 : 16);
        for (int k = 0; k < 2; k++) {
            __m512i lo, hi;
            kq512_nibbles(qs + 64 * k, &lo, &hi);
            c[2 * k] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
            c[2 * k + 1] = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
        }
        if (t == ELM_TYPE_Q5_K) {
            /* the fifth bit of weight 32c + l is bit c of qh[l]: c_j's halves take bits 2j and
             * 2j+1 to bit 4 (16-bit shifts, the mask drops what crossed a byte) */
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b + 16)));
            const __m512i bit4 = _mm512_set1_epi8(0x10);
            for (int j = 0; j < 4; j++) {
                const int a = 4 - 2 * j, z = a - 1; /* left shifts of the two halves (< 0: right) */
                const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16((short)(a > 0 ? a : 0)),
                                                      _mm256_set1_epi16((short)(z > 0 ? z : 0)), 1);
                const __m512i down = _mm512_inserti64x4(_mm512_set1_epi16((short)(a < 0 ? -a : 0)),
                                                        _mm256_set1_epi16((short)(z < 0 ? -z : 0)), 1);
                const __m512i h = _mm512_srlv_epi16(_mm512_sllv_epi16(qh, up), down);
                c[j] = kq512_or_masked(c[j], h, bit4);
            }
        }
        break;
    }
    case ELM_TYPE_Q6_K: {
        /* 64 low-bit bytes per 128 weights, already in weight order by nibble; the high two bits
         * of weight 128h + 32k + l are bits 2k, 2k+1 of qh[32h + l], moved to bits 4, 5 */
        const __m512i m2 = _mm512_set1_epi8(0x30);
        const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
        const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
        for (int h = 0; h < 2; h++) {
            __m512i lo, hi;
            kq512_nibbles(b + 64 * h, &lo, &hi);
            const __m512i qh =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h)));
            c[2 * h] = kq512_or_masked(lo, _mm512_sllv_epi16(qh, up), m2);
            c[2 * h + 1] = kq512_or_masked(hi, _mm512_srlv_epi16(qh, down), m2);
        }
        break;
    }
    case ELM_TYPE_TQ2_0: {
        /* weight 128h + 32k + l is bits 2k, 2k+1 of byte 32h + l: c_j's halves take k = 2(j%2)
         * and k + 1 of h = j/2 */
        for (int j = 0; j < 4; j++) {
            const __m512i v =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b + 32 * (j / 2))));
            const int k = 2 * (j % 2);
            const __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * k)),
                                                  _mm256_set1_epi16((short)(2 * k + 2)), 1);
            c[j] = _mm512_and_si512(_mm512_srlv_epi16(v, sh), _mm512_set1_epi8(3));
        }
        break;
    }
    default: { /* IQ4_XS: sub-block j's 16 bytes give weights 32j+l (low nibble), 32j+16+l (high) */
        /* the grid values + 128 (unsigned, for vpdpbusd): their sign bit flipped */
        const __m512i grid = _mm512_xor_si512(
            _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)elm_iq4nl_grid)),
            _mm512_set1_epi8((char)0x80));
        const __m512i even = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
        const __m512i odd = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
        for (int k = 0; k < 2; k++) {
            __m512i lo, hi;
            kq512_nibbles(b + 8 + 64 * k, &lo, &hi);
            lo = _mm512_shuffle_epi8(grid, lo), hi = _mm512_shuffle_epi8(grid, hi);
            c[2 * k] = _mm512_permutex2var_epi64(lo, even, hi);
            c[2 * k + 1] = _mm512_permutex2var_epi64(lo, odd, hi);
        }
        break;
    }
    }
}

/* Whether kq512_rows serves type t (the others take the 256-bit row). */
KQ_INLINE bool kq512_serves(elm_type t) {
    return t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K || t == ELM_TYPE_Q6_K ||
           t == ELM_TYPE_IQ4_XS || t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ3_XXS ||
           t == ELM_TYPE_IQ3_S || t == ELM_TYPE_TQ2_0;
}

/* 64 bytes of the 256-byte table tab, by the 64 bytes of idx: vpermi2b takes 7 index bits
 * (two 64-byte halves), the eighth picks between two such lookups. */
KQ_INLINE __m512i kq512_lut256(const uint8_t *tab, __m512i idx) {
    const __m512i a =
        _mm512_permutex2var_epi8(_mm512_loadu_si512(tab), idx, _mm512_loadu_si512(tab + 64));
    const __m512i b = _mm512_permutex2var_epi8(_mm512_loadu_si512(tab + 128), idx,
                                               _mm512_loadu_si512(tab + 192));
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), a, b);
}

/* The same in a 512-byte table, bit 8 of index i being bit i of hi. */
KQ_INLINE __m512i kq512_lut512(const uint8_t *tab, __m512i idx, __mmask64 hi) {
    return _mm512_mask_blend_epi8(hi, kq512_lut256(tab, idx), kq512_lut256(tab + 256, idx));
}

/* Where byte k of c_j's codes comes from (vpermi2b over the codes' low bytes, then 64 + their
 * high bytes), for j = 0 (the others add a point count per vector): IQ3's point i (weights
 * 4i..4i+3) its code in bytes 4i, 4i + 1; IQ2's point i (8i..8i+7) in bytes 8i, 8i + 1. */
static const uint8_t kq512_iq3_pick[64] = {0, 64, 0, 0, 1, 65, 1, 1, 2, 66, 2, 2, 3, 67, 3, 3, 4, 68, 4, 4, 5, 69, 5, 5, 6, 70, 6, 6, 7, 71, 7, 7, 8, 72, 8, 8, 9, 73, 9, 9, 10, 74, 10, 10, 11, 75, 11, 11, 12, 76, 12, 12, 13, 77, 13, 13, 14, 78, 14, 14, 15, 79, 15, 15};
static const uint8_t kq512_iq2_pick[64] = {0, 64, 0, 0, 0, 0, 0, 0, 1, 65, 1, 1, 1, 1, 1, 1, 2, 66, 2, 2, 2, 2, 2, 2, 3, 67, 3, 3, 3, 3, 3, 3, 4, 68, 4, 4, 4, 4, 4, 4, 5, 69, 5, 5, 5, 5, 5, 5, 6, 70, 6, 6, 6, 6, 6, 6, 7, 71, 7, 7, 7, 7, 7, 7};

/* The lattice i-quants' four vectors of block b (IQ2_XS, IQ3_XXS, IQ3_S): the grid points'
 * magnitudes of weights 64j..64j+63 in c[j], and in neg[j] bit i set where weight 64j + i is
 * negative. No gathers (which took most of the time): the block's 64 (IQ2_XS: 32) point
 * indices look up their codes' low and high bytes in G's split tables at once (kq512_lut*),
 * then each vector places its points' two code bytes with one vpermi2b, cuts out the level
 * indices (2 or 3 bits per coordinate) with vpmultishiftqb and a mask, and turns them into
 * magnitudes with vpshufb. The 7-bit sign codes become sign bytes through ksigns, all 128
 * entries looked up at once by vpermi2b. */
KQ_INLINE void kq512_lattice(const elm_type t, const elm_iq_grids *G, const uint8_t *b,
                             __m512i c[4], __mmask64 neg[4]) {
    const bool iq2 = t == ELM_TYPE_IQ2_XS;
    uint64_t signs[4];
    __m512i lo, hi;
    if (t == ELM_TYPE_IQ3_S) {
        /* index i: byte i of the 64 at 2, bit 8 from bit i of the 64 at 66 */
        memcpy(signs, b + 74, 32);
        uint64_t h;
        memcpy(&h, b + 66, 8);
        const __m512i idx = _mm512_loadu_si512(b + 2);
        lo = kq512_lut512(G->iq3s_lo, idx, h), hi = kq512_lut512(G->iq3s_hi, idx, h);
    } else {
        const __m512i ks0 = _mm512_loadu_si512(G->ksigns), ks1 = _mm512_loadu_si512(G->ksigns + 64);
        __m256i codes;
        if (iq2) {
            /* 32 u16 at 2: a 9-bit index and a 7-bit sign code per 8 weights */
            const __m512i v = _mm512_loadu_si512(b + 2);
            codes = _mm512_cvtepi16_epi8(_mm512_srli_epi16(v, 9));
            const __m512i idx = _mm512_castsi256_si512(_mm512_cvtepi16_epi8(v));
            const __mmask64 h = _mm512_test_epi16_mask(v, _mm512_set1_epi16(0x100));
            lo = kq512_lut512(G->iq2xs_lo, idx, h), hi = kq512_lut512(G->iq2xs_hi, idx, h);
        } else { /* IQ3_XXS: 64 index bytes at 2, a u32 per 32 weights at 66 with 4 sign codes at
                  * bits 0, 7, 14, 21 */
            const __m256i ctrl = _mm256_set1_epi64x(0x352e2720150e0700ll); /* bits 0, 7, .. 53 */
            codes = _mm256_multishift_epi64_epi8(ctrl, _mm256_loadu_si256((const __m256i *)(b + 66)));
            const __m512i idx = _mm512_loadu_si512(b + 2);
            lo = kq512_lut256(G->iq3xxs_lo, idx), hi = kq512_lut256(G->iq3xxs_hi, idx);
        }
        _mm256_storeu_si256((__m256i *)signs,
                            _mm512_castsi512_si256(_mm512_permutex2var_epi8(
                                ks0, _mm512_castsi256_si512(codes), ks1)));
    }
    /* the level indices' bit offsets in each 64-bit lane (two IQ3 codes or one IQ2 code) */
    const __m512i ctrl = _mm512_set1_epi64(iq2 ? 0x0e0c0a0806040200ll : 0x2926232009060300ll);
    const __m512i mask = _mm512_set1_epi8(iq2 ? 3 : 7);
    const __m512i levels = _mm512_broadcast_i32x4(
        iq2 ? _mm_setr_epi8(8, 25, 43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        : t == ELM_TYPE_IQ3_S ? _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0)
                              : _mm_setr_epi8(4, 12, 20, 28, 36, 44, 52, 62, 0, 0, 0, 0, 0, 0, 0, 0));
    const __m512i pick = _mm512_loadu_si512(iq2 ? kq512_iq2_pick : kq512_iq3_pick);
    for (int j = 0; j < 4; j++) {
        const __m512i at = _mm512_add_epi8(pick, _mm512_set1_epi8((char)((iq2 ? 8 : 16) * j)));
        const __m512i code = _mm512_permutex2var_epi8(lo, at, hi);
        c[j] = _mm512_shuffle_epi8(levels,
                                   _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, code), mask));
        neg[j] = (__mmask64)signs[j];
    }
}

/* The constants of kq512_block, set up once per call of kq512_rows. */
typedef struct {
    __m512i idx[4], idx32[4], sub_idx[4];
    const elm_iq_grids *G;
} kq512_consts;

KQ_INLINE kq512_consts kq512_consts_of(const elm_type t) {
    kq512_consts k;
    for (int j = 0; j < 4; j++) {
        k.idx[j] = kq512_scale_index(j);
        /* Q4_K/Q5_K: c_j's 128-bit lanes 0-1 are sub-block 2j, lanes 2-3 sub-block 2j + 1; each
         * int16 lane takes that scale byte, zero-extended (index 0xff picks a zero) */
        k.sub_idx[j] =
            _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16((short)(0xff00 | 2 * j)),
                                    _mm512_set1_epi16((short)(0xff00 | (2 * j + 1))));
        /* int32 lane i of c_j's vpdpbusd sums: group 4j + i/4 */
        k.idx32[j] = _mm512_add_epi32(_mm512_set1_epi32(4 * j),
                                      _mm512_srli_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9,
                                                                         8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                        2));
    }
    k.G = t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ3_XXS || t == ELM_TYPE_IQ3_S ? elm_iq_grids_get()
                                                                              : NULL;
    return k;
}

/* A row's sums so far: 16 float lanes; Q4_K/Q5_K's mins apart (8 lanes, subtracted at the end);
 * TQ2_0's exact sum of its blocks. */
typedef struct {
    __m512 acc;
    __m256 acc_m;
    float exact;
} kq512_acc;

/* Super-block s of one row (its bytes at src) against token x, into a. */
KQ_INLINE void kq512_block(const elm_type t, const kq512_consts *k, const uint8_t *src,
                           const elm_q8k_row *x, int64_t s, kq512_acc *a) {
    const bool mins = t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K;
    /* the lattice types: magnitudes as codes, their signs moved onto the activations */
    const bool lattice = t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ3_XXS || t == ELM_TYPE_IQ3_S;
    kq_scales sm;
    float d, dmin;
    __m256i sc16 = _mm256_setzero_si256();
    __m512i sm8 = _mm512_setzero_si512();
    packed_scales(t, src, &sm, &d, &dmin);
    /* Q4_K, Q5_K: the sub-blocks' scales (bytes 0-7) in every 128-bit lane, for sub_idx's byte
     * shuffles */
    if (mins) sm8 = _mm512_broadcast_i64x4(sm.sm8);
    else sc16 = _mm256_load_si256((const __m256i *)sm.sc);
    __m512i c[4];
    __mmask64 neg[4] = {0, 0, 0, 0};
    if (lattice) kq512_lattice(t, k->G, src, c, neg);
    else kq512_codes(t, src, c);
    const int8_t *xq = x->qs + s * ELM_QK_K;
    __m512i isum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    /* IQ4_XS: codes up to 241 would overflow maddubs' int16 pairs, so vpdpbusd's int32 sums of
     * 4 products, times their group's scale in int32 */
    const __m512i sc32 =
        t == ELM_TYPE_IQ4_XS ? _mm512_cvtepi16_epi32(sc16) : _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) {
        __m512i xv = _mm512_loadu_si512(xq + 64 * j);
        if (lattice) /* |x| <= 127: the negation is exact */
            xv = _mm512_mask_sub_epi8(xv, neg[j], _mm512_setzero_si512(), xv);
        if (t == ELM_TYPE_IQ4_XS) {
            const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), c[j], xv);
            const __m512i scv = _mm512_permutexvar_epi32(k->idx32[j], sc32);
            isum[j % 2] = _mm512_add_epi32(isum[j % 2], _mm512_mullo_epi32(p, scv));
        } else {
            const __m512i scv =
                mins ? _mm512_shuffle_epi8(sm8, k->sub_idx[j])
                     : _mm512_permutexvar_epi16(k->idx[j], _mm512_castsi256_si512(sc16));
            isum[j % 2] = _mm512_dpwssd_epi32(isum[j % 2], _mm512_maddubs_epi16(c[j], xv), scv);
        }
    }
    __m512i sum = _mm512_add_epi32(isum[0], isum[1]);
    const __m256i bsum = _mm256_loadu_si256((const __m256i *)(x->bsum + 16 * s));
    /* the codes' offsets: 32 (Q6_K), 128 (IQ4_XS) or 1 (TQ2_0) times Σ_g sc[g]·bsum[g] */
    if (t == ELM_TYPE_Q6_K || t == ELM_TYPE_IQ4_XS || t == ELM_TYPE_TQ2_0)
        sum = _mm512_sub_epi32(sum, _mm512_zextsi256_si512(_mm256_slli_epi32(
                                        _mm256_madd_epi16(sc16, bsum),
                                        t == ELM_TYPE_Q6_K ? 5 : t == ELM_TYPE_IQ4_XS ? 7 : 0)));
    const float xd = x->d[s];
    /* TQ2_0's lanes hold sums of the codes (0..2), far larger than the ternary values' sum they
     * leave after the offset: their float rounding would swamp it, so the block's exact integer
     * goes into float alone, as in the oracle */
    if (t == ELM_TYPE_TQ2_0) a->exact += d * xd * (float)_mm512_reduce_add_epi32(sum);
    else if (mins) {
        const __m128 f = kq_d_dmin(src, xd);
        a->acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_broadcastss_ps(f), a->acc);
        a->acc_m = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(kq_mins(&sm), bsum)),
                                   _mm256_broadcastss_ps(_mm_movehdup_ps(f)), a->acc_m);
    } else a->acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(d * xd), a->acc);
}

/* The sums of a[0..3]'s 16 lanes, in lanes 0..3: one tree for the four (12 operations, where
 * four _mm512_reduce_add_ps take 32). */
KQ_INLINE __m128 kq512_hsum4(const __m512 a[4]) {
    /* 128-bit lanes 0-1: a[0]'s halves added, 2-3: a[1]'s (s23: a[2]'s, a[3]'s) */
    const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                     _mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
    /* 128-bit lane r: four partial sums of a[r] */
    __m512 v = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(s01, s23, _MM_SHUFFLE(3, 1, 3, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, v));
}

/* R (1..4) rows of type t (row_bytes apart from src), n super-blocks each, against token x into
 * y[R], one row after another, their sums reduced together (kq512_hsum4), which a row of 3
 * super-blocks (Qwen3-30B-A3B's expert down rows) otherwise spends a sixth of its time on
 * (kernel_rate --file-layout --cols 768, Zen 5, one thread out of L2: Q4_K 29 -> 36 GB/s, Q6_K
 * 52 -> 58; two from memory: Q4_K 54 -> 62). A super-block of each row in turn instead, the
 * activations loaded once for the four, was as fast out of L2 but read 15-20% slower in a
 * model's decode (TinyLlama Q6_K, 59 -> 48-52 tok/s), even with the group two on prefetched:
 * the prefetcher follows one stream a page, not four. */
KQ_INLINE void kq512_rows_of(const elm_type t, const kq512_consts *k, const uint8_t *src,
                             size_t row_bytes, const int R, const elm_q8k_row *x, int64_t n,
                             float *y) {
    const size_t bb = row_bytes / (size_t)n;
    kq512_acc a[4];
    for (int r = 0; r < 4; r++)
        a[r] = (kq512_acc){_mm512_setzero_ps(), _mm256_setzero_ps(), 0.0f};
    for (int r = 0; r < R; r++)
        for (int64_t s = 0; s < n; s++)
            kq512_block(t, k, src + row_bytes * (size_t)r + bb * (size_t)s, x, s, &a[r]);
    if (t == ELM_TYPE_TQ2_0) {
        for (int r = 0; r < R; r++) y[r] = a[r].exact;
        return;
    }
    __m512 v[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
        v[r] = _mm512_sub_ps(a[r].acc, _mm512_zextps256_ps512(a[r].acc_m));
    if (R == 4) _mm_storeu_ps(y, kq512_hsum4(v));
    else
        for (int r = 0; r < R; r++) y[r] = _mm512_reduce_add_ps(v[r]);
}

/* n_rows rows of type t (one of kq512_serves), n super-blocks each, against one token into
 * y[n_rows], four rows at a time. */
KQ_INLINE void kq512_rows(const elm_type t, const uint8_t *src, size_t row_bytes, int64_t n_rows,
                          const elm_q8k_row *x, int64_t n, float *y) {
    const kq512_consts k = kq512_consts_of(t);
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4)
        kq512_rows_of(t, &k, src + row_bytes * r, row_bytes, 4, x, n, y + r);
    for (; r < n_rows; r++) kq512_rows_of(t, &k, src + row_bytes * r, row_bytes, 1, x, n, y + r);
}

/* Where four blocks' bytes of a 32-weight grid type go (MXFP4's 17 bytes each, the E8M0 scale
 * and 16 bytes of nibbles; IQ4_NL's 18, the f16 scale and the nibbles; at 0..71 of two 64-byte
 * registers, vpermi2b: 64 + i is byte i of the second): [0] and [1] gather MXFP4's and IQ4_NL's
 * 64 nibble bytes, block after block; [2] and [3] gather the activations (128 bytes in two
 * registers) the low and the high nibbles multiply: each block's first and last 16. */
static const uint8_t kq512_grid32_pick[4][64] = {
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
     18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33,
     35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50,
     52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67},
    {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
     20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
     38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,
     56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
     32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
     64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
     96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111},
    {16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
     48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63,
     80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
     112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127}};

/* A token's activations for blocks b..b + m - 1 (m 1..4) of grid32 rows (kq512_grid32_step):
 * gathered to match the nibbles (kq512_grid32_pick[2], [3]), -128·Σx (the grid's offset, a
 * quarter in each of a block's four int32 lanes) and the scales (four lanes a block); zeros for
 * missing blocks. */
typedef struct {
    __m512i lo, hi, off;
    __m512 d;
} kq512_grid32_x;

KQ_INLINE kq512_grid32_x kq512_grid32_x_at(const elm_q8_row *x, int64_t b, int m) {
    /* int32 lane i belongs to block i/4 */
    const __m512i quad = _mm512_srli_epi32(
        _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), 2);
    const int8_t *xq = x->qs + ELM_QK * b;
    const __m512i xa = _mm512_maskz_loadu_epi8(m >= 2 ? ~0ull : 0xffffffffull, xq);
    const __m512i xb =
        _mm512_maskz_loadu_epi8(m == 4 ? ~0ull : m == 3 ? 0xffffffffull : 0, xq + 64);
    const __mmask8 blocks = (__mmask8)((1u << m) - 1);
    const __m512i sum = _mm512_permutexvar_epi32(
        quad, _mm512_castsi128_si512(_mm_maskz_loadu_epi32(blocks, x->sum + b)));
    return (kq512_grid32_x){
        .lo = _mm512_permutex2var_epi8(xa, _mm512_loadu_si512(kq512_grid32_pick[2]), xb),
        .hi = _mm512_permutex2var_epi8(xa, _mm512_loadu_si512(kq512_grid32_pick[3]), xb),
        .off = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 5)),
        .d = _mm512_permutexvar_ps(quad,
                                   _mm512_castps128_ps512(_mm_maskz_loadu_ps(blocks, x->d + b)))};
}

/* m blocks (1..4) of one row of grid32 type t at src against xv, added to acc: the nibbles
 * gathered (kq512_grid32_pick[0] or [1]) and looked up in the grid + 128 (unsigned, for
 * vpdpbusd), each block's int32 sum times its activation scale times its own: MXFP4's E8M0
 * exponent by vscalefps (exact, as elm_e8m0_half's product is), IQ4_NL's f16 (word 9k of the
 * four blocks' bytes, k the block, spread by one vpermw and converted). Missing blocks read
 * zeros. */
KQ_INLINE __m512 kq512_grid32_step(const elm_type t, const uint8_t *src, int m,
                                   const kq512_grid32_x *xv, __m512 acc) {
    const elm_grid32_layout g = elm_grid32_layout_of(t);
    const int bb = g.block_bytes;
    const bool mxfp4 = t == ELM_TYPE_MXFP4;
    const __m512i grid = _mm512_broadcast_i32x4(
        _mm_xor_si128(_mm_loadu_si128((const __m128i *)g.grid), _mm_set1_epi8((char)0x80)));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i r0 = _mm512_maskz_loadu_epi8(m == 4 ? ~0ull : (1ull << (bb * m)) - 1, src);
    /* bytes 64..67 (MXFP4) or 64..71 (IQ4_NL) */
    const __m512i r1 =
        _mm512_maskz_loadu_epi8(m == 4 ? (1ull << (4 * bb - 64)) - 1 : 0, src + 64);
    const __m512i q =
        _mm512_permutex2var_epi8(r0, _mm512_loadu_si512(kq512_grid32_pick[mxfp4 ? 0 : 1]), r1);
    const __m512i wlo = _mm512_shuffle_epi8(grid, _mm512_and_si512(q, m4));
    const __m512i whi = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(xv->off, wlo, xv->lo), whi, xv->hi);
    __m512 s;
    if (mxfp4) {
        /* block k's scale byte (at 17k) is byte k of 128-bit lane k: into that lane's dwords */
        const __m512i scale_at = _mm512_set_epi32(
            0x80808003, 0x80808003, 0x80808003, 0x80808003, 0x80808002, 0x80808002, 0x80808002,
            0x80808002, 0x80808001, 0x80808001, 0x80808001, 0x80808001, 0x80808000, 0x80808000,
            0x80808000, 0x80808000);
        const __m512i e = _mm512_shuffle_epi8(r0, scale_at);
        s = _mm512_scalef_ps(xv->d,
                             _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(128))));
    } else {
        const __m256i f16_at =
            _mm256_setr_epi16(0, 0, 0, 0, 9, 9, 9, 9, 18, 18, 18, 18, 27, 27, 27, 27);
        const __m256i h = _mm512_castsi512_si256(
            _mm512_permutexvar_epi16(_mm512_castsi256_si512(f16_at), r0));
        s = _mm512_mul_ps(xv->d, _mm512_cvtph_ps(h));
    }
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), s, acc);
}

/* R (1..4) rows of grid32 type t, n blocks each (row_bytes apart from src), against one token
 * into y[R], four blocks (68 or 72 bytes a row) a step: the activations gathered once a step
 * for the R rows. Each step prefetches its share of the R rows two groups on: with four
 * streams a page, the hardware's prefetcher alone left one thread at 18-21 GB/s from memory
 * (MXFP4; 27-33 with this). */
KQ_INLINE void kq512_grid32_rows_of(const elm_type t, const uint8_t *src, size_t row_bytes,
                                    const int R, const elm_q8_row *x, int64_t n, float *y) {
    const int bb = elm_grid32_layout_of(t).block_bytes;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t b = 0;
    for (; b + 4 <= n; b += 4) {
        const kq512_grid32_x xv = kq512_grid32_x_at(x, b, 4);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = kq512_grid32_step(t, src + row_bytes * (size_t)r + bb * b, 4, &xv, acc[r]);
        elm_prefetch_span(src + 2 * row_bytes * (size_t)R + (size_t)(R * bb) * b, 4 * R * bb);
    }
    if (b < n) {
        const int m = (int)(n - b);
        const kq512_grid32_x xv = kq512_grid32_x_at(x, b, m);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            acc[r] = kq512_grid32_step(t, src + row_bytes * (size_t)r + bb * b, m, &xv, acc[r]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) y[r] = _mm512_reduce_add_ps(acc[r]);
}

/* n_rows rows of grid32 type t, n blocks each, against one token into y[n_rows], four rows at
 * a time. */
KQ_INLINE void kq512_grid32_rows(const elm_type t, const uint8_t *src, size_t row_bytes,
                                 int64_t n_rows, const elm_q8_row *x, int64_t n, float *y) {
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4)
        kq512_grid32_rows_of(t, src + row_bytes * r, row_bytes, 4, x, n, y + r);
    for (; r < n_rows; r++)
        kq512_grid32_rows_of(t, src + row_bytes * r, row_bytes, 1, x, n, y + r);
}
