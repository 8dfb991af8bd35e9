/* The tensor type traits table (types.h): block geometry, decoding to float and the
 * round-to-nearest reference encoders for F32, F16, BF16 and the ggml 32-weight block types
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (docs/formats.md, "ggml blocks"), plus IEEE half and bfloat16
 * conversions.
 *
 * The encoders must write the same bytes as llama-quantize (no importance matrix), so their
 * arithmetic follows the published recipe step by step: the scale is computed in float, its
 * reciprocal multiplies each weight, and only the stored scale is rounded to f16. Blocks are
 * byte arrays read with memcpy because their sizes (18, 20, 22 bytes) leave f16 fields unaligned. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "core/half.h"
#include "core/kquant.h"
#include "edgelm/types.h"

/* ---- half and bfloat16 ---- */

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float elm_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 is exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t elm_f32_to_f16(float f) {
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((abs >> 13) & 0x3ff)); /* quiet NaN */
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 2^16: inf */
    if (abs < 0x38800000u) {
        /* below the smallest normal half 2^-14: a subnormal half counts units of 2^-24 */
        if (abs < 0x33000000u) return sign; /* below half of 2^-24: rounds to zero */
        uint32_t e = abs >> 23;
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* value = man * 2^(e-150); units of 2^-24 -> shift 126-e */
        uint32_t q = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q); /* q == 0x400 carries into the smallest normal */
    }
    /* normal: rebias exponent, round the 13 dropped mantissa bits to nearest even; a carry
     * propagates into the exponent, which is the correct result */
    uint32_t r = abs - 0x38000000u;
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

float elm_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t elm_f32_to_bf16(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* ---- float types ---- */

static void f32_to_float(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f32_from_float(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f16_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = elm_load_f16(s + 2 * i);
}

static void f16_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) elm_store_f16(d + 2 * i, src[i]);
}

static void bf16_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *s = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, s + 2 * i, 2);
        dst[i] = elm_bf16_to_f32(h);
    }
}

static void bf16_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = elm_f32_to_bf16(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}

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

static void q8_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += 34, dst += ELM_QK) {
        float d = elm_load_f16(b);
        for (int j = 0; j < ELM_QK; j++) dst[j] = d * (float)(int8_t)b[2 + j];
    }
}

static void q8_0_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += 34, src += ELM_QK) {
        float amax = 0;
        for (int j = 0; j < ELM_QK; j++) amax = fmaxf(amax, fabsf(src[j]));
        float d = amax / 127.0f;
        float id = d != 0 ? 1.0f / d : 0.0f;
        elm_store_f16(b, d);
        for (int j = 0; j < ELM_QK; j++) {
            /* |x * id| <= 127 for finite input; NaN/inf input is pinned, not overflowed */
            float v = roundf(src[j] * id);
            int8_t q = v >= 127 ? 127 : v <= -127 ? -127 : v == v ? (int8_t)v : 0;
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

static void q4_0_to_float(const void *s, float *d, int64_t n) { sym_to_float(s, d, n, 18, 4); }
static void q5_0_to_float(const void *s, float *d, int64_t n) { sym_to_float(s, d, n, 22, 5); }
static void q4_1_to_float(const void *s, float *d, int64_t n) { asym_to_float(s, d, n, 20, 4); }
static void q5_1_to_float(const void *s, float *d, int64_t n) { asym_to_float(s, d, n, 24, 5); }
static void q4_0_from_float(const float *s, void *d, int64_t n) { sym_from_float(s, d, n, 18, 4); }
static void q5_0_from_float(const float *s, void *d, int64_t n) { sym_from_float(s, d, n, 22, 5); }
static void q4_1_from_float(const float *s, void *d, int64_t n) { asym_from_float(s, d, n, 20, 4); }
static void q5_1_from_float(const float *s, void *d, int64_t n) { asym_from_float(s, d, n, 24, 5); }

/* ---- the table ---- */

/* Block bytes as the sum of each layout's fields in their order (docs/formats.md, docs/kquants.md):
 * f16 scales d (and m, dmin) are 2 bytes each, qh the fifth bits, qs the packed codes. */
static const elm_type_traits traits[ELM_TYPE_COUNT] = {
    [ELM_TYPE_F32] = {"f32", 1, 4, 32.0, f32_to_float, f32_from_float},
    [ELM_TYPE_F16] = {"f16", 1, 2, 16.0, f16_to_float, f16_from_float},
    [ELM_TYPE_BF16] = {"bf16", 1, 2, 16.0, bf16_to_float, bf16_from_float},
    [ELM_TYPE_Q8_0] = {"q8_0", ELM_QK, 2 + 32, 8.5, q8_0_to_float, q8_0_from_float},        /* d qs */
    [ELM_TYPE_Q4_0] = {"q4_0", ELM_QK, 2 + 16, 4.5, q4_0_to_float, q4_0_from_float},        /* d qs */
    [ELM_TYPE_Q4_1] = {"q4_1", ELM_QK, 2 + 2 + 16, 5.0, q4_1_to_float, q4_1_from_float},    /* d m qs */
    [ELM_TYPE_Q5_0] = {"q5_0", ELM_QK, 2 + 4 + 16, 5.5, q5_0_to_float, q5_0_from_float},    /* d qh qs */
    [ELM_TYPE_Q5_1] = {"q5_1", ELM_QK, 2 + 2 + 4 + 16, 6.0, q5_1_to_float, q5_1_from_float}, /* d m qh qs */
    /* super-block types: kquant_decode.c, kquant_encode.c */
    [ELM_TYPE_Q2_K] = {"q2_k", ELM_QK_K, 16 + 64 + 2 + 2, 2.625, elm_q2_k_to_float,
                       elm_q2_k_from_float}, /* scales qs d dmin */
    [ELM_TYPE_Q3_K] = {"q3_k", ELM_QK_K, 32 + 64 + 12 + 2, 3.4375, elm_q3_k_to_float,
                       elm_q3_k_from_float}, /* hmask qs scales d */
    [ELM_TYPE_Q4_K] = {"q4_k", ELM_QK_K, 2 + 2 + 12 + 128, 4.5, elm_q4_k_to_float,
                       elm_q4_k_from_float}, /* d dmin scales qs */
    [ELM_TYPE_Q5_K] = {"q5_k", ELM_QK_K, 2 + 2 + 12 + 32 + 128, 5.5, elm_q5_k_to_float,
                       elm_q5_k_from_float}, /* d dmin scales qh qs */
    [ELM_TYPE_Q6_K] = {"q6_k", ELM_QK_K, 128 + 64 + 16 + 2, 6.5625, elm_q6_k_to_float,
                       elm_q6_k_from_float}, /* ql qh scales d */
    [ELM_TYPE_IQ4_NL] = {"iq4_nl", ELM_QK, 2 + 16, 4.5, elm_iq4_nl_to_float,
                         elm_iq4_nl_from_float}, /* d qs */
    [ELM_TYPE_IQ4_XS] = {"iq4_xs", ELM_QK_K, 2 + 2 + 4 + 128, 4.25, elm_iq4_xs_to_float,
                         elm_iq4_xs_from_float}, /* d scales_h scales_l qs */
};

const elm_type_traits *elm_type_get(uint32_t type) {
    if (type >= ELM_TYPE_COUNT || !traits[type].name) return NULL;
    return &traits[type];
}

bool elm_type_from_name(const char *name, elm_type *out) {
    if (!name) return false;
    for (uint32_t t = 0; t < ELM_TYPE_COUNT; t++)
        if (traits[t].name && strcasecmp(name, traits[t].name) == 0) {
            *out = (elm_type)t;
            return true;
        }
    return false;
}

size_t elm_row_bytes(elm_type type, int64_t n) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    if (!tt || n <= 0 || n % tt->block_size != 0) return 0;
    return (size_t)(n / tt->block_size) * tt->block_bytes;
}
