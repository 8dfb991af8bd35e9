/* The ternary encoders (codecs.h): TQ1_0 and TQ2_0, for BitNet b1.58-style weights, bit-exact with
 * llama.cpp's quantize_row_tq1_0_ref and quantize_row_tq2_0_ref (llama-quantize takes no importance
 * for them). Each 256-weight block keeps its largest magnitude as the f16 scale d and every weight
 * as the trit round(x/d) in {-1, 0, 1}, stored as t + 1 in {0, 1, 2}; the layouts, and how a byte
 * holds five trits as a base-3 fraction, are in docs/kquants.md ("Sub-4-bit i-quants"). */
#include <math.h>
#include <string.h>

#include "codecs/codecs.h"
#include "codecs/iquant_codec.h"
#include "edgelm/types.h"

/* the block's largest |x| and its inverse (0 for an all-zero block) */
static float block_amax(const float *x, float *id) {
    float amax = 0.0f;
    for (int j = 0; j < ELM_QK_K; j++) amax = fmaxf(amax, fabsf(x[j]));
    *id = amax ? 1.0f / amax : 0.0f;
    return amax;
}

static void put_f16(uint8_t *p, float f) {
    const uint16_t h = elm_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* trit of x (scaled by id) stored as 0, 1, 2 */
static uint8_t trit(float x, float id) { return (uint8_t)(lroundf(x * id) + 1); }

/* k trits t (the first one most significant), each `stride` apart, as a byte: the base-3 number
 * padded to 5 trits, times 256/243 rounded up, so that a decoder multiplying the byte by 3 and
 * keeping the carry above 8 bits reads the trits back first to last */
static uint8_t pack_trits(const uint8_t *t, int stride, int k) {
    uint8_t q = 0;
    for (int n = 0; n < k; n++) q = (uint8_t)(q * 3 + t[n * stride]);
    for (int n = k; n < 5; n++) q = (uint8_t)(q * 3);
    return (uint8_t)(((uint16_t)q * 256 + 242) / 243);
}

void elm_tq_put(elm_type type, float d, const uint8_t t[256], void *dst) {
    uint8_t *b = dst;
    if (type == ELM_TYPE_TQ1_0) {
        /* qs[48] (five trits per byte: bytes 0-31 over weights 0-159, 32 apart; bytes 32-47
         * over weights 160-239, 16 apart), qh[4] (four trits per byte over weights 240-255, 4
         * apart), f16 d */
        for (int m = 0; m < 32; m++) b[m] = pack_trits(t + m, 32, 5);
        for (int m = 0; m < 16; m++) b[32 + m] = pack_trits(t + 160 + m, 16, 5);
        for (int m = 0; m < 4; m++) b[48 + m] = pack_trits(t + 240 + m, 4, 4);
        put_f16(b + 52, d);
        return;
    }
    /* TQ2_0: qs[64] (four 2-bit codes per byte, weight m + 32·s of each 128 in bits 2s..2s+1 of
     * byte m), f16 d */
    for (int half = 0; half < 2; half++)
        for (int m = 0; m < 32; m++) {
            uint8_t q = 0;
            for (int s = 0; s < 4; s++) q |= (uint8_t)((t[128 * half + m + 32 * s] & 3) << (2 * s));
            b[32 * half + m] = q;
        }
    put_f16(b + 64, d);
}

/* Blocks of type from x: d the largest magnitude, each weight's trit round(x/d). */
static void tq_from_float(elm_type type, const float *x, void *dst, int64_t n) {
    const size_t bytes = elm_type_get((uint32_t)type)->block_bytes;
    uint8_t t[ELM_QK_K];
    for (uint8_t *b = dst; n > 0; n -= ELM_QK_K, x += ELM_QK_K, b += bytes) {
        float id;
        const float d = block_amax(x, &id);
        for (int j = 0; j < ELM_QK_K; j++) t[j] = trit(x[j], id);
        elm_tq_put(type, d, t, b);
    }
}

void elm_tq1_0_from_float(const float *x, void *dst, int64_t n) {
    tq_from_float(ELM_TYPE_TQ1_0, x, dst, n);
}

void elm_tq2_0_from_float(const float *x, void *dst, int64_t n) {
    tq_from_float(ELM_TYPE_TQ2_0, x, dst, n);
}
