/* BF16 prefill by vdpbf16ps (AVX512_BF16: Cooper Lake, Sapphire Rapids, Zen 4), the pair tiles of
 * gemm.h: one instruction multiplies 16 rows' pairs of BF16 weights with a token's pair of BF16
 * activations and adds both products to the 16 float sums, twice the multiply-adds of a float
 * FMA, from a tile half the size of a float one. The products of two BF16 values are exact in
 * float, so the only difference from the float tiles is the activations' rounding to BF16 (to
 * nearest even; the instructions treat denormal inputs as zero), as llama.cpp rounds them. */
#include "kernels/gemm.h"
#include "kernels/targets.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define X86_FN __attribute__((target(ELM_TARGET_AVX512BF16)))
#define X86_INLINE X86_FN static inline __attribute__((always_inline))

#include "kernels/x86/tile512.h"

/* All 16 tokens of the chunk (the padding ones are zeros), only n_tok stored, as tile_f32_512. */
X86_FN static void tile_bf16_512(const uint8_t *tile, int64_t pairs, const uint32_t *xp, int n_tok,
                                 float *y, int64_t ldy, int n_rows, bool add) {
    __m512 acc[16];
    tile512_acc_load(acc, y, ldy, n_tok, n_rows, add);
    for (int64_t p = 0; p < pairs; p++, tile += 64, xp += 16) {
        const __m512bh w = (__m512bh)_mm512_load_si512(tile);
        for (int t = 0; t < 16; t++)
            acc[t] = _mm512_dpbf16_ps(acc[t], w, (__m512bh)_mm512_set1_epi32((int)xp[t]));
    }
    tile512_acc_store(acc, y, ldy, n_tok, n_rows);
}

/* 16 rows, 32 columns (16 pairs, one 32-bit lane each) at a time, through transpose16. */
X86_FN static void repack_bf16_512(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile) {
    const int64_t pairs = w->cols / 2;
    const size_t row_bytes = elm_row_bytes(w->type, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    butterflies bf;
    make_butterflies(&bf);
    int64_t p0 = 0;
    for (; p0 + 16 <= pairs; p0 += 16) {
        __m512 v[16];
        for (int r = 0; r < 16; r++)
            v[r] = r < n_rows ? _mm512_loadu_ps(base + (size_t)r * row_bytes + 4 * p0)
                              : _mm512_setzero_ps();
        transpose16(v, &bf);
        for (int p = 0; p < 16; p++) _mm512_store_ps((float *)(tile + 64 * (p0 + p)), v[p]);
    }
    for (; p0 < pairs; p0++) /* the last pairs % 16 */
        for (int r = 0; r < 16; r++) {
            uint32_t v = 0;
            if (r < n_rows) memcpy(&v, base + (size_t)r * row_bytes + 4 * p0, 4);
            memcpy(tile + 64 * p0 + 4 * r, &v, 4);
        }
}

/* Columns 2p and 2p + 1 of the chunk (16 tokens each) rounded by one vcvtne2ps2bf16, then
 * interleaved by token. */
X86_FN void elm_pair_bf16_avx512(const float *xt, int64_t cols, uint32_t *xp) {
    uint16_t order[32];
    for (int j = 0; j < 32; j++) order[j] = (uint16_t)(j / 2 + 16 * (j % 2));
    const __m512i idx = _mm512_loadu_si512(order);
    for (int64_t p = 0; p < cols / 2; p++, xt += 32, xp += 16) {
        const __m512bh r = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(xt + 16), _mm512_loadu_ps(xt));
        _mm512_storeu_si512(xp, _mm512_permutexvar_epi16(idx, (__m512i)r));
    }
}

const elm_gemm_bf16 elm_gemm_bf16_avx512 = {
    .tile = tile_bf16_512, .tokens = 16, .kc = 0, .repack = repack_bf16_512, .pair = elm_pair_bf16_avx512};
#endif
