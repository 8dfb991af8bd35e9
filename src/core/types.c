/* The tensor type traits table (types.h): block geometry, each type's decoder and
 * round-to-nearest encoder (the block types' codecs are in codecs/), its llama.cpp file type and
 * fallback, plus the F32, F16 and BF16 rows and the IEEE half and bfloat16 conversions. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "codecs/codecs.h"
#include "codecs/mxfp4.h"
#include "core/half.h"
#include "core/strbuf.h"
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

/* ---- the table ---- */

/* Block bytes as the sum of each layout's fields in their order (docs/formats.md, docs/kquants.md):
 * f16 scales d (and m, dmin) are 2 bytes each, qh the fifth bits, qs the packed codes. Then
 * llama.cpp's file type (LLAMA_FTYPE_MOSTLY_*) and llama-quantize's fallback type. */
#define ROW(nm, bs, bytes, bpw, to, from, ftype, fb)                                               \
    {.name = nm, .block_size = bs, .block_bytes = bytes, .bits_per_weight = bpw, .to_float = to,  \
     .from_float = from, .file_type = ftype, .fallback = fb}
static const elm_type_traits traits[ELM_TYPE_COUNT] = {
    [ELM_TYPE_F32] = ROW("f32", 1, 4, 32.0, f32_to_float, f32_from_float, 0, ELM_TYPE_F32),
    [ELM_TYPE_F16] = ROW("f16", 1, 2, 16.0, f16_to_float, f16_from_float, 1, ELM_TYPE_F16),
    [ELM_TYPE_BF16] = ROW("bf16", 1, 2, 16.0, bf16_to_float, bf16_from_float, 32, ELM_TYPE_BF16),
    [ELM_TYPE_Q8_0] = ROW("q8_0", ELM_QK, 2 + 32, 8.5, elm_q8_0_to_float, elm_q8_0_from_float, 7,
                          ELM_TYPE_F16), /* d qs */
    [ELM_TYPE_Q4_0] = ROW("q4_0", ELM_QK, 2 + 16, 4.5, elm_q4_0_to_float, elm_q4_0_from_float, 2,
                          ELM_TYPE_F16), /* d qs */
    [ELM_TYPE_Q4_1] = ROW("q4_1", ELM_QK, 2 + 2 + 16, 5.0, elm_q4_1_to_float, elm_q4_1_from_float,
                          3, ELM_TYPE_F16), /* d m qs */
    [ELM_TYPE_Q5_0] = ROW("q5_0", ELM_QK, 2 + 4 + 16, 5.5, elm_q5_0_to_float, elm_q5_0_from_float,
                          8, ELM_TYPE_F16), /* d qh qs */
    [ELM_TYPE_Q5_1] = ROW("q5_1", ELM_QK, 2 + 2 + 4 + 16, 6.0, elm_q5_1_to_float,
                          elm_q5_1_from_float, 9, ELM_TYPE_F16), /* d m qh qs */
    /* super-block types: kquant_decode.c, kquant_encode.c */
    [ELM_TYPE_Q2_K] = ROW("q2_k", ELM_QK_K, 16 + 64 + 2 + 2, 2.625, elm_q2_k_to_float,
                          elm_q2_k_from_float, 10, ELM_TYPE_Q4_0), /* scales qs d dmin */
    [ELM_TYPE_Q3_K] = ROW("q3_k", ELM_QK_K, 32 + 64 + 12 + 2, 3.4375, elm_q3_k_to_float,
                          elm_q3_k_from_float, 12, ELM_TYPE_Q4_0), /* hmask qs scales d */
    [ELM_TYPE_Q4_K] = ROW("q4_k", ELM_QK_K, 2 + 2 + 12 + 128, 4.5, elm_q4_k_to_float,
                          elm_q4_k_from_float, 15, ELM_TYPE_Q5_0), /* d dmin scales qs */
    [ELM_TYPE_Q5_K] = ROW("q5_k", ELM_QK_K, 2 + 2 + 12 + 32 + 128, 5.5, elm_q5_k_to_float,
                          elm_q5_k_from_float, 17, ELM_TYPE_Q5_1), /* d dmin scales qh qs */
    [ELM_TYPE_Q6_K] = ROW("q6_k", ELM_QK_K, 128 + 64 + 16 + 2, 6.5625, elm_q6_k_to_float,
                          elm_q6_k_from_float, 18, ELM_TYPE_Q8_0), /* ql qh scales d */
    [ELM_TYPE_IQ4_NL] = ROW("iq4_nl", ELM_QK, 2 + 16, 4.5, elm_iq4_nl_to_float,
                            elm_iq4_nl_from_float, 25, ELM_TYPE_F16), /* d qs */
    [ELM_TYPE_IQ4_XS] = ROW("iq4_xs", ELM_QK_K, 2 + 2 + 4 + 128, 4.25, elm_iq4_xs_to_float,
                            elm_iq4_xs_from_float, 30, ELM_TYPE_IQ4_NL), /* d scales_h scales_l qs */
    /* sub-4-bit i-quants and ternary types (iquant_decode.c), refused at load when a block's
     * f16 scale is NaN or infinite; IQ2 and IQ3 written by iquant_encode_grid.c, from importances
     * only where llama.cpp has no encoder without (from_float NULL) */
#define IQW(nm, type, bytes, bpw, ftype, fb, from, imat)                                           \
    [ELM_TYPE_##type] = {.name = #nm, .block_size = ELM_QK_K, .block_bytes = bytes,                \
                         .bits_per_weight = bpw, .to_float = elm_##nm##_to_float,                  \
                         .from_float = from, .file_type = ftype, .fallback = fb,                   \
                         .bad_block = elm_##nm##_bad_block, .needs_imatrix = imat}
#define IQ(nm, type, bytes, bpw, ftype, fb) IQW(nm, type, bytes, bpw, ftype, fb, NULL, false)
    /* d qs | d qs scales | d qs+signs qh scales | d qs scales_and_signs | d qs qh signs scales */
    IQW(iq2_xxs, IQ2_XXS, 2 + 64, 2.0625, 19, ELM_TYPE_IQ4_NL, NULL, true),
    IQW(iq2_xs, IQ2_XS, 2 + 64 + 8, 2.3125, 20, ELM_TYPE_IQ4_NL, NULL, true),
    IQW(iq2_s, IQ2_S, 2 + 64 + 8 + 8, 2.5625, 28, ELM_TYPE_IQ4_NL, elm_iq2_s_from_float, true),
    IQW(iq3_xxs, IQ3_XXS, 2 + 96, 3.0625, 23, ELM_TYPE_IQ4_NL, elm_iq3_xxs_from_float, true),
    IQW(iq3_s, IQ3_S, 2 + 64 + 8 + 32 + 4, 3.4375, 26, ELM_TYPE_IQ4_NL, elm_iq3_s_from_float,
        false),
    IQ(iq1_s, IQ1_S, 2 + 32 + 16, 1.5625, 24, ELM_TYPE_IQ4_NL),       /* d qs qh */
    IQ(iq1_m, IQ1_M, 32 + 16 + 8, 1.75, 31, ELM_TYPE_IQ4_NL),         /* qs qh scales */
    IQ(tq1_0, TQ1_0, 48 + 4 + 2, 1.6875, 36, ELM_TYPE_Q4_0),          /* qs qh d */
    IQ(tq2_0, TQ2_0, 64 + 2, 2.0625, 37, ELM_TYPE_Q4_0),              /* qs d */
#undef IQ
#undef IQW
    /* file type 38: llama.cpp's one MXFP4 file type, MOSTLY_MXFP4_MOE */
    [ELM_TYPE_MXFP4] = {.name = "mxfp4", .block_size = ELM_QK, .block_bytes = 1 + 16,
                        .bits_per_weight = 4.25, .to_float = elm_mxfp4_to_float,
                        .from_float = elm_mxfp4_from_float, .file_type = 38,
                        .fallback = ELM_TYPE_F16, .bad_block = elm_mxfp4_bad_block}, /* e qs */
};
#undef ROW

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

static void fill_names(char *buf, size_t cap, bool writable) {
    for (uint32_t t = 0; t < ELM_TYPE_COUNT; t++)
        if (traits[t].name && (!writable || elm_type_writable((elm_type)t)))
            elm_list_add(buf, cap, traits[t].name);
}

static void fill_read(char *buf, size_t cap) { fill_names(buf, cap, false); }
static void fill_write(char *buf, size_t cap) { fill_names(buf, cap, true); }

bool elm_type_writable(elm_type type) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    return tt && (tt->from_float || tt->needs_imatrix);
}

const char *elm_type_names(bool writable) {
    static elm_names read = ELM_NAMES_INIT, write = ELM_NAMES_INIT;
    return writable ? elm_names_get(&write, fill_write) : elm_names_get(&read, fill_read);
}

size_t elm_row_bytes(elm_type type, int64_t n) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    if (!tt || n <= 0 || n % tt->block_size != 0) return 0;
    return (size_t)(n / tt->block_size) * tt->block_bytes;
}
