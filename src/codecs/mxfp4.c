/* MXFP4's decoder and round-to-nearest encoder (codecs/mxfp4.h), byte for byte ggml's
 * dequantize_row_mxfp4 and quantize_row_mxfp4_ref (which llama-quantize runs with or without an
 * importance matrix). */
#include <math.h>

#include "codecs/codecs.h"
#include "codecs/mxfp4.h"
#include "edgelm/types.h"

const int8_t elm_mxfp4_grid[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void elm_mxfp4_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += ELM_MXFP4_BLOCK_BYTES, y += ELM_QK) {
        const float d = elm_e8m0_half(b[0]);
        for (int l = 0; l < 16; l++) {
            y[l] = (float)elm_mxfp4_grid[b[1 + l] & 0x0f] * d;
            y[l + 16] = (float)elm_mxfp4_grid[b[1 + l] >> 4] * d;
        }
    }
}

/* The grid index nearest x/d, compared as |grid·d - x| in float; the first of equals wins (so
 * 0 is +0, never code 8). */
static uint8_t nearest(float x, float d) {
    int best = 0;
    float best_err = fabsf((float)elm_mxfp4_grid[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)elm_mxfp4_grid[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

/* A block of largest magnitude amax in [2^k, 2^(k+1)) gets e = k - 2 + 127, so half its scale is
 * 2^(k-3) and the top code 12 stands for 1.5·2^k: OCP's choice, which clips the weights above
 * that to it rather than coarsen the rest. An all-zero block gets e 0. The float-to-byte cast
 * goes through int, as ggml's does on the machines it runs on, for a k outside 2..253 (weights
 * never are). */
void elm_mxfp4_from_float(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += ELM_MXFP4_BLOCK_BYTES, x += ELM_QK) {
        float amax = 0.0f;
        for (int j = 0; j < ELM_QK; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        const uint8_t e = amax > 0.0f ? (uint8_t)(int)(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = elm_e8m0_half(e);
        b[0] = e;
        for (int j = 0; j < 16; j++)
            b[1 + j] = (uint8_t)(nearest(x[j], d) | nearest(x[j + 16], d) << 4);
    }
}

int64_t elm_mxfp4_bad_block(const void *src, int64_t n_blocks) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++)
        if (b[i * ELM_MXFP4_BLOCK_BYTES] == ELM_MXFP4_BAD_SCALE) return i;
    return -1;
}
