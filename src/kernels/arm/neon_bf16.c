/* BF16 prefill by BFDOT (FEAT_BF16: Cortex-A710/X2 and later, Snapdragon 8 Gen 1 on, Apple M2
 * on), the pair tiles of gemm.h: one instruction multiplies 4 rows' pairs of BF16 weights with a
 * token's pair of BF16 activations (a 32-bit lane of a register) and adds both products to the 4
 * float sums, twice the multiply-adds of a float FMLA, from a tile half the size of a float one.
 * Products of two BF16 values are exact in float; the activations are rounded to BF16 (BFCVT,
 * to nearest even) as on x86 (avx512_bf16.c). Without FEAT_EBF16 the instruction rounds its sums
 * to odd and flushes denormals to zero: within the tests' 2e-6·Σ|w·x| of the oracle.
 *
 * F16 weights keep the float tiles: FMLAL (FEAT_FHM) widens F16 products into float lanes but
 * does 4 multiply-adds per instruction, no more than the float FMLA on the repacked tile, and
 * the 8-lane F16 FMLA accumulates in F16, which the oracle's tolerance rules out. */
#include "kernels/gemm.h"
#include "kernels/targets.h"

#if defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
#include <arm_neon.h>
#include <string.h>

/* A chunk's tokens are taken 6 at a time: 24 accumulators, 4 weight vectors and the 2 vectors of
 * activation pairs in the 32 registers (ELM_FOR_6_TOKENS); columns by blocks of 128 (64 pairs:
 * 4 KiB of a tile and of the chunk's pairs stay in L1 over the tokens' passes), as the float
 * tiles. */
enum { BF16_TOKENS = 6, BF16_KC = 128 };

#define XV0 xa
#define XV1 xa
#define XV2 xa
#define XV3 xa
#define XV4 xb
#define XV5 xb
#define BF_INIT(k)                                                                                 \
    if (nt > k) {                                                                                  \
        float in[ELM_TILE_ROWS] = {0};                                                             \
        if (add) memcpy(in, y + k * ldy, sizeof(float) * (size_t)n_rows);                          \
        a##k##0 = vld1q_f32(in), a##k##1 = vld1q_f32(in + 4);                                      \
        a##k##2 = vld1q_f32(in + 8), a##k##3 = vld1q_f32(in + 12);                                 \
    }
#define BF_DOT(k)                                                                                  \
    if (nt > k) {                                                                                  \
        a##k##0 = vbfdotq_laneq_f32(a##k##0, w0, XV##k, (k) % 4);                                  \
        a##k##1 = vbfdotq_laneq_f32(a##k##1, w1, XV##k, (k) % 4);                                  \
        a##k##2 = vbfdotq_laneq_f32(a##k##2, w2, XV##k, (k) % 4);                                  \
        a##k##3 = vbfdotq_laneq_f32(a##k##3, w3, XV##k, (k) % 4);                                  \
    }
#define BF_STORE(k)                                                                                \
    if (nt > k) {                                                                                  \
        float out[ELM_TILE_ROWS];                                                                  \
        vst1q_f32(out, a##k##0), vst1q_f32(out + 4, a##k##1);                                      \
        vst1q_f32(out + 8, a##k##2), vst1q_f32(out + 12, a##k##3);                                 \
        memcpy(y + k * ldy, out, sizeof(float) * (size_t)n_rows);                                  \
    }

NEON_BF16_INLINE void tile_bf16_n(const uint8_t *tile, int64_t pairs, const uint32_t *xp,
                                  float *y, int64_t ldy, int n_rows, bool add, const int nt) {
    const float32x4_t z = vdupq_n_f32(0);
    float32x4_t a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
    float32x4_t a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
    float32x4_t a40 = z, a41 = z, a42 = z, a43 = z, a50 = z, a51 = z, a52 = z, a53 = z;
    ELM_FOR_6_TOKENS(BF_INIT)
    for (int64_t p = 0; p < pairs; p++, tile += 64, xp += 16) {
        const bfloat16_t *w = (const bfloat16_t *)tile;
        const bfloat16x8_t w0 = vld1q_bf16(w), w1 = vld1q_bf16(w + 8);
        const bfloat16x8_t w2 = vld1q_bf16(w + 16), w3 = vld1q_bf16(w + 24);
        const bfloat16x8_t xa = vreinterpretq_bf16_u32(vld1q_u32(xp));
        bfloat16x8_t xb = xa; /* tokens 4 and 5 (not loaded past the chunk's last pair) */
        if (nt > 4) xb = vreinterpretq_bf16_u32(vld1q_u32(xp + 4));
        ELM_FOR_6_TOKENS(BF_DOT)
    }
    ELM_FOR_6_TOKENS(BF_STORE)
}

NEON_BF16_FN static void tile_bf16(const uint8_t *tile, int64_t pairs, const uint32_t *xp,
                                   int n_tok, float *y, int64_t ldy, int n_rows, bool add) {
    ELM_CALL_6_TOKENS(n_tok, tile_bf16_n, tile, pairs, xp, y, ldy, n_rows, add)
}

/* 4 rows by 4 pairs (32-bit lanes) at a time, transposed by trn1/trn2 on 32 and 64 bits. */
NEON_BF16_FN static void repack_bf16(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile) {
    const int64_t pairs = w->cols / 2;
    const size_t row_bytes = elm_row_bytes(w->type, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
    int64_t p0 = 0;
    for (; p0 + 4 <= pairs; p0 += 4)
        for (int h = 0; h < 4; h++) {
            uint32x4_t r[4];
            for (int i = 0; i < 4; i++)
                r[i] = 4 * h + i < n_rows
                           ? vld1q_u32((const uint32_t *)(base + (size_t)(4 * h + i) * row_bytes +
                                                          4 * p0))
                           : vdupq_n_u32(0);
            const uint64x2_t t0 = vreinterpretq_u64_u32(vtrn1q_u32(r[0], r[1]));
            const uint64x2_t t1 = vreinterpretq_u64_u32(vtrn2q_u32(r[0], r[1]));
            const uint64x2_t t2 = vreinterpretq_u64_u32(vtrn1q_u32(r[2], r[3]));
            const uint64x2_t t3 = vreinterpretq_u64_u32(vtrn2q_u32(r[2], r[3]));
            uint8_t *out = tile + 64 * p0 + 16 * h;
            vst1q_u8(out, vreinterpretq_u8_u64(vtrn1q_u64(t0, t2)));
            vst1q_u8(out + 64, vreinterpretq_u8_u64(vtrn1q_u64(t1, t3)));
            vst1q_u8(out + 128, vreinterpretq_u8_u64(vtrn2q_u64(t0, t2)));
            vst1q_u8(out + 192, vreinterpretq_u8_u64(vtrn2q_u64(t1, t3)));
        }
    for (; p0 < pairs; p0++) /* the last pairs % 4 */
        for (int r = 0; r < ELM_TILE_ROWS; r++) {
            uint32_t v = 0;
            if (r < n_rows) memcpy(&v, base + (size_t)r * row_bytes + 4 * p0, 4);
            memcpy(tile + 64 * p0 + 4 * r, &v, 4);
        }
}

/* Columns 2p and 2p + 1 of the chunk (16 tokens each) rounded by BFCVTN, 4 tokens at a time,
 * and interleaved by zip1: the low half of a token's lane is column 2p. */
NEON_BF16_FN void elm_pair_bf16_neon(const float *xt, int64_t cols, uint32_t *xp) {
    for (int64_t p = 0; p < cols / 2; p++, xt += 32, xp += 16)
        for (int t = 0; t < 16; t += 4) {
            const uint16x8_t lo = vreinterpretq_u16_bf16(vcvtq_low_bf16_f32(vld1q_f32(xt + t)));
            const uint16x8_t hi =
                vreinterpretq_u16_bf16(vcvtq_low_bf16_f32(vld1q_f32(xt + 16 + t)));
            vst1q_u32(xp + t, vreinterpretq_u32_u16(vzip1q_u16(lo, hi)));
        }
}

const elm_gemm_bf16 elm_gemm_bf16_neon = {.tile = tile_bf16,
                                          .tokens = BF16_TOKENS,
                                          .kc = BF16_KC,
                                          .repack = repack_bf16,
                                          .pair = elm_pair_bf16_neon};
#endif
