/* MXFP4 (OCP microscaling FP4, GGUF type 39) as ggml stores it: blocks of 32 weights, 17 bytes
 * each, one E8M0 scale byte e then 16 bytes of packed 4-bit E2M1 codes (docs/formats.md, "MXFP4").
 * Weight j < 16 is the low nibble of qs[j], weight j >= 16 the high nibble of qs[j - 16], as in
 * Q4_0 and IQ4_NL. The codes are kept as twice their E2M1 value (integers -12..12) and the scale as
 * half of 2^(e - 127), as ggml does, so a block's products are integer dots times one float. */
#ifndef EDGELM_CODECS_MXFP4_H
#define EDGELM_CODECS_MXFP4_H

#include <stdint.h>
#include <string.h>

#define ELM_MXFP4_BLOCK_BYTES 17
/* E8M0's NaN: no block may carry it */
#define ELM_MXFP4_BAD_SCALE 0xff

/* The 16 E2M1 values doubled (ggml's kvalues_mxfp4): 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
 * negatives, code 8 being -0. */
extern const int8_t elm_mxfp4_grid[16];

/* 2^(e - 128): half the E8M0 scale e (ggml's GGML_E8M0_TO_FP32_HALF), exact for every e but 0xff;
 * e 0 and 1 give the subnormals 2^-128 and 2^-127. */
static inline float elm_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The index of the first of n_blocks MXFP4 blocks at src whose scale byte is 0xff (E8M0's NaN),
 * or -1 when there is none. */
int64_t elm_mxfp4_bad_block(const void *src, int64_t n_blocks);

#endif
