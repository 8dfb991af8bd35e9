/* The ggml 32-weight block types Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (docs/formats.md, "ggml blocks"):
 * decoders and the round-to-nearest reference encoders, for the type traits table.
 *
 * The encoders must write the same bytes as llama-quantize (no importance matrix), so their
 * arithmetic follows the published recipe step by step: the scale is computed in float, its
 * reciprocal multiplies each weight, and only the stored scale is rounded to f16. Blocks are
 * byte arrays read with memcpy because their sizes (18, 20, 22 bytes) leave f16 fields unaligned. */
#include <math.h>

#include "codecs/codecs.h"
#include "core/half.h"
#include "edgelm/types.h"

/* ---- block packing shared by the 4- and 5-bit types ----
 * Weight j < 16 sits in the low nibble of qs[j], weight j >= 16 in the high nibble of qs[j-16];
 * a 5-bit weight's bit 4 is bit j of the little-endian u32 qh. */

static void unpack_q(const uint8_t *qs, const uint8_t *qh, int q[ELM_QK]) {
    uint32_t h = 0;
    if (qh)
        h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    for (int j = 0; j < ELM_QK / 2; j++) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
    }
    if (qh)
        for (int j = 0; j < ELM_QK; j++) q[j] |= (int)((h >> j) & 1) << 4;
}

static void pack_q(const int q[ELM_QK], uint8_t *qs, uint8_t *qh) {
    uint32_t h = 0;
    for (int j = 0; j < ELM_QK / 2; j++) qs[j] = (uint8_t)((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
    if (!qh) return;
    for (int j = 0; j < ELM_QK; j++) h |= (uint32_t)((q[j] >> 4) & 1) << j;
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* The reference code stores (int8)(v) clamped above by qmax; in-range values truncate toward
 * zero. Out-of-range or NaN v (only from non-finite input) is pinned instead of overflowing. */
static int trunc_q(float v, int qmax) {
    if (!(v > 0)) return 0;
    if (v >= (float)qmax) return qmax;
    return (int)v;
}

/* ---- Q8_0: f16 d; i8 qs[32] ---- */

void elm_q8_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += 34, dst += ELM_QK) {
        float d = elm_load_f16(b);
        for (int j = 0; j < ELM_QK; j++) dst[j] = d * (float)(int8_t)b[2 + j];
    }
}

void elm_q8_0_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += 34, src += ELM_QK) {
        float amax = 0;
        /* fmaxf and roundf written out: on x86-64's baseline (no SSE4.1 round) both are libm
         * calls, about half of this encoder's time. The comparison skips NaN as fmaxf does. */
        for (int j = 0; j < ELM_QK; j++) {
            const float a = fabsf(src[j]);
            amax = a > amax ? a : amax;
        }
        float d = amax / 127.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        elm_store_f16(b, d);
        for (int j = 0; j < ELM_QK; j++) {
            /* roundf(x), half away from zero, as x + the float just below 1/2 truncated: the
             * same q on all 2^32 floats, NaN and inf included. |x| <= 127 for finite input;
             * NaN/inf input is pinned, not overflowed */
            const float x = src[j] * id, t = x + copysignf(0.49999997f, x);
            int8_t q = t >= 127 ? 127 : t <= -127 ? -127 : t == t ? (int8_t)(int)t : 0;
            b[2 + j] = (uint8_t)q;
        }
    }
}

/* ---- symmetric 4/5-bit (Q4_0, Q5_0): value = d * (q - 2^(bits-1)) ---- */

static void sym_to_float(const uint8_t *b, float *dst, int64_t n, size_t bytes, int bits) {
    int q[ELM_QK];
    const int off = 1 << (bits - 1);
    for (int64_t i = 0; i < n / ELM_QK; i++, b += bytes, dst += ELM_QK) {
        float d = elm_load_f16(b);
        unpack_q(b + bytes - 16, bits == 5 ? b + 2 : NULL, q);
        for (int j = 0; j < ELM_QK; j++) dst[j] = d * (float)(q[j] - off);
    }
}

/* d = (signed weight of largest magnitude, first on ties) / -2^(bits-1);
 * q = min(2^bits - 1, trunc(x/d + 2^(bits-1) + 0.5)). */
static void sym_from_float(const float *src, uint8_t *b, int64_t n, size_t bytes, int bits) {
    int q[ELM_QK];
    const int off = 1 << (bits - 1);
    const int qmax = (1 << bits) - 1;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += bytes, src += ELM_QK) {
        float amax = 0, max = 0;
        for (int j = 0; j < ELM_QK; j++)
            if (amax < fabsf(src[j])) {
                amax = fabsf(src[j]);
                max = src[j];
            }
        float d = max / (float)-off;
        float id = d != 0 ? 1.0f / d : 0.0f;
        elm_store_f16(b, d);
        for (int j = 0; j < ELM_QK; j++) q[j] = trunc_q(src[j] * id + ((float)off + 0.5f), qmax);
        pack_q(q, b + bytes - 16, bits == 5 ? b + 2 : NULL);
    }
}

/* ---- asymmetric 4/5-bit (Q4_1, Q5_1): value = d * q + m ---- */

static void asym_to_float(const uint8_t *b, float *dst, int64_t n, size_t bytes, int bits) {
    int q[ELM_QK];
    for (int64_t i = 0; i < n / ELM_QK; i++, b += bytes, dst += ELM_QK) {
        float d = elm_load_f16(b), m = elm_load_f16(b + 2);
        unpack_q(b + bytes - 16, bits == 5 ? b + 4 : NULL, q);
        for (int j = 0; j < ELM_QK; j++) dst[j] = d * (float)q[j] + m;
    }
}

/* m = block minimum, d = (max - min) / (2^bits - 1), q = min(2^bits - 1, trunc((x-m)/d + 0.5)). */
static void asym_from_float(const float *src, uint8_t *b, int64_t n, size_t bytes, int bits) {
    int q[ELM_QK];
    const int qmax = (1 << bits) - 1;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += bytes, src += ELM_QK) {
        float min = INFINITY, max = -INFINITY;
        for (int j = 0; j < ELM_QK; j++) {
            if (src[j] < min) min = src[j];
            if (src[j] > max) max = src[j];
        }
        float d = (max - min) / (float)qmax;
        float id = d != 0 ? 1.0f / d : 0.0f;
        elm_store_f16(b, d);
        elm_store_f16(b + 2, min);
        for (int j = 0; j < ELM_QK; j++) q[j] = trunc_q((src[j] - min) * id + 0.5f, qmax);
        pack_q(q, b + bytes - 16, bits == 5 ? b + 4 : NULL);
    }
}

void elm_q4_0_to_float(const void *s, float *d, int64_t n) { sym_to_float(s, d, n, 18, 4); }
void elm_q5_0_to_float(const void *s, float *d, int64_t n) { sym_to_float(s, d, n, 22, 5); }
void elm_q4_1_to_float(const void *s, float *d, int64_t n) { asym_to_float(s, d, n, 20, 4); }
void elm_q5_1_to_float(const void *s, float *d, int64_t n) { asym_to_float(s, d, n, 24, 5); }
void elm_q4_0_from_float(const float *s, void *d, int64_t n) { sym_from_float(s, d, n, 18, 4); }
void elm_q5_0_from_float(const float *s, void *d, int64_t n) { sym_from_float(s, d, n, 22, 5); }
void elm_q4_1_from_float(const float *s, void *d, int64_t n) { asym_from_float(s, d, n, 20, 4); }
void elm_q5_1_from_float(const float *s, void *d, int64_t n) { asym_from_float(s, d, n, 24, 5); }

