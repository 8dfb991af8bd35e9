/* Decoding of the sub-4-bit i-quants and ternary types (iquant_codec.h; layouts and codebooks:
 * docs/kquants.md, "Sub-4-bit i-quants"). Each block is first read into integers (an f16 scale
 * with the type's power-of-two factor, odd sub-block scales, signed grid values); floats are
 * (d·sc)·q, which rounds exactly as ggml's dequantize_row_* does, since its factors 1/2, 1/4 and
 * 1/8 and IQ1's ±1/8 shift only move exponents. Blocks are read as bytes (little-endian fields).
 * No field can be out of range: every index addresses its whole grid, and TQ1_0's bytes above
 * 242 (no 5-trit value) decode as ggml decodes them, to the trits of their top digits. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "codecs/codecs.h"
#include "codecs/iquant_codec.h"
#include "core/half.h"

/* ---- the codebooks ---- */

static elm_iq_grids grids;
static pthread_once_t grids_once = PTHREAD_ONCE_INIT;

static void expand(const uint16_t *codes, int n, int n_coord, int bits, const int8_t *levels,
                   int8_t *out) {
    for (int i = 0; i < n; i++)
        for (int c = 0; c < n_coord; c++)
            out[i * n_coord + c] = levels[(codes[i] >> (bits * c)) & ((1 << bits) - 1)];
}

static void split(const uint16_t *codes, int n, uint8_t *lo, uint8_t *hi) {
    for (int i = 0; i < n; i++) lo[i] = (uint8_t)codes[i], hi[i] = (uint8_t)(codes[i] >> 8);
}

static void build_grids(void) {
    static const int8_t iq2[3] = {8, 25, 43}, iq1[3] = {-1, 0, 1};
    static const int8_t iq3xxs[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    static const int8_t iq3s[8] = {1, 3, 5, 7, 9, 11, 13, 15};
    expand(elm_iq2xxs_codes, 256, 8, 2, iq2, (int8_t *)grids.iq2xxs);
    expand(elm_iq2xs_codes, 512, 8, 2, iq2, (int8_t *)grids.iq2xs);
    expand(elm_iq2s_codes, 1024, 8, 2, iq2, (int8_t *)grids.iq2s);
    expand(elm_iq3xxs_codes, 256, 4, 3, iq3xxs, (int8_t *)grids.iq3xxs);
    expand(elm_iq3s_codes, 512, 4, 3, iq3s, (int8_t *)grids.iq3s);
    expand(elm_iq1s_codes, 2048, 8, 2, iq1, &grids.iq1s[0][0]);
    /* 7 stored sign bits; the eighth makes the count of minus signs even */
    for (int i = 0; i < 128; i++) grids.ksigns[i] = (uint8_t)(i | (__builtin_parity(i) << 7));
    split(elm_iq2xs_codes, 512, grids.iq2xs_lo, grids.iq2xs_hi);
    split(elm_iq3xxs_codes, 256, grids.iq3xxs_lo, grids.iq3xxs_hi);
    split(elm_iq3s_codes, 512, grids.iq3s_lo, grids.iq3s_hi);
}

const elm_iq_grids *elm_iq_grids_get(void) {
    pthread_once(&grids_once, build_grids);
    return &grids;
}

/* ---- blocks into integers ---- */

static uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static unsigned load16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* Eight weights q[0..8) = grid point g's magnitudes with sign bit j of `signs` negating q[j]. */
static void signed8(const uint8_t *g, unsigned signs, int8_t *q) {
    for (int j = 0; j < 8; j++) q[j] = (int8_t)(signs >> j & 1 ? -g[j] : g[j]);
}

/* IQ2_XXS, 66 bytes: f16 d, then per 32 weights 8 bytes: four grid indices (one byte each, 8
 * weights each) and a u32 of four 7-bit sign codes (bits 7l..7l+6) and the scale (bits 28-31). */
static void iq2_xxs(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *p = b + 2 + 8 * ib;
        const uint32_t aux = load32(p + 4);
        for (int l = 0; l < 4; l++)
            signed8(G->iq2xxs[p[l]], G->ksigns[(aux >> 7 * l) & 127], q + 32 * ib + 8 * l);
    }
}

/* IQ2_XS, 74 bytes: f16 d, u16 qs[32] (9-bit grid index, 7-bit sign code per 8 weights), u8
 * scales[8] (a 4-bit scale per 16 weights, low nibble first). */
static void iq2_xs(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int i = 0; i < 32; i++) {
        const unsigned v = load16(b + 2 + 2 * i);
        signed8(G->iq2xs[v & 511], G->ksigns[v >> 9], q + 8 * i);
    }
}

/* IQ2_S, 82 bytes: f16 d, u8 qs[32] (grid index low bits), u8 signs[32] (one explicit sign byte
 * per 8 weights), u8 qh[8] (2 high index bits per 8 weights), u8 scales[8] as IQ2_XS. */
static void iq2_s(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int i = 0; i < 32; i++) {
        const unsigned idx = b[2 + i] | ((b[66 + i / 4] >> 2 * (i % 4)) & 3) << 8;
        signed8(G->iq2s[idx], b[34 + i], q + 8 * i);
    }
}

/* IQ3_XXS, 98 bytes: f16 d, u8 qs[64] (grid index per 4 weights), then per 32 weights a u32 of
 * four 7-bit sign codes and the scale (bits 28-31), as IQ2_XXS. */
static void iq3_xxs(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int ib = 0; ib < 8; ib++) {
        const uint32_t aux = load32(b + 66 + 4 * ib);
        for (int l = 0; l < 4; l++) {
            uint8_t g[8];
            memcpy(g, G->iq3xxs[b[2 + 8 * ib + 2 * l]], 4);
            memcpy(g + 4, G->iq3xxs[b[2 + 8 * ib + 2 * l + 1]], 4);
            signed8(g, G->ksigns[(aux >> 7 * l) & 127], q + 32 * ib + 8 * l);
        }
    }
}

/* IQ3_S, 110 bytes: f16 d, u8 qs[64] (grid index low bits per 4 weights), u8 qh[8] (the ninth
 * index bits, one byte per 32 weights), u8 signs[32] (explicit), u8 scales[4] (a 4-bit scale
 * per 32 weights, low nibble first). */
static void iq3_s(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int ib = 0; ib < 8; ib++) {
        for (int l = 0; l < 4; l++) {
            uint8_t g[8];
            for (int h = 0; h < 2; h++) {
                const int k = 2 * l + h;
                memcpy(g + 4 * h, G->iq3s[b[2 + 8 * ib + k] | ((b[66 + ib] >> k) & 1) << 8], 4);
            }
            signed8(g, b[74 + 4 * ib + l], q + 32 * ib + 8 * l);
        }
    }
}

/* An IQ1 grid point shifted by +1/8 (or -1/8 when `minus`), in eighths. */
static void iq1_point(const elm_iq_grids *G, unsigned idx, bool minus, int8_t *q) {
    for (int j = 0; j < 8; j++) q[j] = (int8_t)(8 * G->iq1s[idx][j] + (minus ? -1 : 1));
}

/* IQ1_S, 50 bytes: f16 d, u8 qs[32] (grid index low bits per 8 weights), u16 qh[8] per 32
 * weights: 3 high index bits for each of its four 8-weight groups (bits 3l..3l+2), the scale
 * (bits 12-14) and the shift's sign (bit 15). */
static void iq1_s(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int ib = 0; ib < 8; ib++) {
        const unsigned h = load16(b + 34 + 2 * ib);
        for (int l = 0; l < 4; l++)
            iq1_point(G, b[2 + 4 * ib + l] | ((h >> 3 * l) & 7) << 8, h & 0x8000,
                      q + 32 * ib + 8 * l);
    }
}

/* IQ1_M's f16 super-block scale, kept in the top nibbles of its four scale words. */
static float iq1_m_scale(const uint8_t *b) {
    unsigned w[4];
    for (int i = 0; i < 4; i++) w[i] = load16(b + 48 + 2 * i);
    return elm_f16_to_f32((uint16_t)(w[0] >> 12 | (w[1] >> 8 & 0xf0) | (w[2] >> 4 & 0xf00) |
                                     (w[3] & 0xf000)));
}

/* IQ1_M, 56 bytes, no stored f16: u8 qs[32] (grid index low bits), u8 qh[16] (per 8 weights a
 * nibble: 3 high index bits and the shift's sign at bit 3), u16 scales[4]: a 3-bit scale per 16
 * weights (bits 3k..3k+2 of word k/4), the f16 super-block scale in the four top nibbles. */
static void iq1_m(const elm_iq_grids *G, const uint8_t *b, int8_t *q) {
    for (int i = 0; i < 32; i++) {
        const unsigned nib = (b[32 + i / 2] >> 4 * (i % 2)) & 15;
        iq1_point(G, b[i] | (nib & 7) << 8, nib & 8, q + 8 * i);
    }
}

/* Trit n (0 first), minus 1, of a TQ1_0 byte: the byte is a base-3 fraction of 256, so trit n is
 * the top base-3 digit of byte·3^n kept to 8 bits (ggml's fixed-point unpacking). */
static int8_t trit(uint8_t byte, int n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    return (int8_t)((((uint8_t)(byte * pow3[n])) * 3 >> 8) - 1);
}

/* TQ1_0, 54 bytes: u8 qs[48] (5 trits each), u8 qh[4] (4 trits each), f16 d. Byte m of a
 * chunk of c bytes (qs[0..32), qs[32..48), qh) holds trit n of weight base + c·n + m. */
static void tq1_0(const uint8_t *b, int8_t *q) {
    for (int m = 0; m < 32; m++)
        for (int n = 0; n < 5; n++) q[32 * n + m] = trit(b[m], n);
    for (int m = 0; m < 16; m++)
        for (int n = 0; n < 5; n++) q[160 + 16 * n + m] = trit(b[32 + m], n);
    for (int m = 0; m < 4; m++)
        for (int n = 0; n < 4; n++) q[240 + 4 * n + m] = trit(b[48 + m], n);
}

/* TQ2_0, 66 bytes: u8 qs[64] (4 codes of 2 bits each), f16 d. Bits 2l..2l+1 of byte 32h + m
 * are weight 128h + 32l + m's code c, the weight (c - 1)·d. */
static void tq2_0(const uint8_t *b, int8_t *q) {
    for (int w = 0; w < ELM_QK_K; w++)
        q[w] = (int8_t)(((b[32 * (w / 128) + w % 32] >> 2 * (w % 128 / 32)) & 3) - 1);
}

/* sc[k] = 2·f_k + 1 for the 4-bit fields f of the scale bytes s (low nibble first), one field
 * per `per` 16-weight groups. */
static void nibble_scales(const uint8_t *s, int per, int8_t sc[16]) {
    for (int k = 0; k < 16; k++) {
        const int j = k / per;
        sc[k] = (int8_t)(2 * ((s[j / 2] >> 4 * (j % 2)) & 15) + 1);
    }
}

/* sc[2ib] = sc[2ib+1] = 2·f + 1 for the 3- or 4-bit field f at bit `at` of 32-weight group ib's
 * scale word at b + stride·ib (a u32 for a stride of 4 or more, else a u16). */
static void word_scales(const uint8_t *b, int stride, int at, unsigned mask, int8_t sc[16]) {
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *w = b + stride * ib;
        const uint32_t v = stride >= 4 ? load32(w) : load16(w);
        sc[2 * ib] = sc[2 * ib + 1] = (int8_t)(2 * ((v >> at) & mask) + 1);
    }
}

void elm_iquant_scales(elm_type t, const uint8_t *b, float *d, int8_t sc[16]) {
    switch (t) {
    case ELM_TYPE_IQ2_XXS: *d = elm_load_f16(b) * 0.125f, word_scales(b + 6, 8, 28, 15, sc); break;
    case ELM_TYPE_IQ2_XS: *d = elm_load_f16(b) * 0.125f, nibble_scales(b + 66, 1, sc); break;
    case ELM_TYPE_IQ2_S: *d = elm_load_f16(b) * 0.125f, nibble_scales(b + 74, 1, sc); break;
    case ELM_TYPE_IQ3_XXS: *d = elm_load_f16(b) * 0.25f, word_scales(b + 66, 4, 28, 15, sc); break;
    case ELM_TYPE_IQ3_S: *d = elm_load_f16(b), nibble_scales(b + 106, 2, sc); break;
    case ELM_TYPE_IQ1_S: *d = elm_load_f16(b) * 0.125f, word_scales(b + 34, 2, 12, 7, sc); break;
    case ELM_TYPE_IQ1_M: {
        *d = iq1_m_scale(b) * 0.125f;
        for (int k = 0; k < 16; k++)
            sc[k] = (int8_t)(2 * ((load16(b + 48 + 2 * (k / 4)) >> 3 * (k % 4)) & 7) + 1);
        break;
    }
    case ELM_TYPE_TQ1_0: *d = elm_load_f16(b + 52), memset(sc, 1, 16); break;
    default: *d = elm_load_f16(b + 64), memset(sc, 1, 16); break;
    }
}

void elm_iquant_values(elm_type t, const elm_iq_grids *G, const uint8_t *b, int8_t q[256]) {
    switch (t) {
    case ELM_TYPE_IQ2_XXS: iq2_xxs(G, b, q); break;
    case ELM_TYPE_IQ2_XS: iq2_xs(G, b, q); break;
    case ELM_TYPE_IQ2_S: iq2_s(G, b, q); break;
    case ELM_TYPE_IQ3_XXS: iq3_xxs(G, b, q); break;
    case ELM_TYPE_IQ3_S: iq3_s(G, b, q); break;
    case ELM_TYPE_IQ1_S: iq1_s(G, b, q); break;
    case ELM_TYPE_IQ1_M: iq1_m(G, b, q); break;
    case ELM_TYPE_TQ1_0: tq1_0(b, q); break;
    default: tq2_0(b, q); break;
    }
}

void elm_iquant_ints(elm_type t, const uint8_t *b, float *d, int8_t sc[16], int8_t q[256]) {
    elm_iquant_scales(t, b, d, sc);
    elm_iquant_values(t, elm_iq_grids_get(), b, q);
}

static void iquant_to_float(elm_type t, const uint8_t *b, float *y, int64_t n) {
    const size_t bytes = elm_type_get(t)->block_bytes;
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += bytes, y += ELM_QK_K) {
        float d;
        int8_t sc[16], q[ELM_QK_K];
        elm_iquant_ints(t, b, &d, sc, q);
        for (int j = 0; j < ELM_QK_K; j++) y[j] = d * (float)sc[j / 16] * (float)q[j];
    }
}

/* The first of n blocks whose f16 scale is NaN or infinite (llama.cpp's row validation refuses
 * them), or -1. */
static int64_t iquant_bad_block(elm_type t, const uint8_t *b, int64_t n) {
    const size_t bytes = elm_type_get(t)->block_bytes;
    for (int64_t i = 0; i < n; i++, b += bytes) {
        const float d = t == ELM_TYPE_IQ1_M ? iq1_m_scale(b)
                                            : elm_load_f16(b + (t == ELM_TYPE_TQ1_0   ? 52
                                                                : t == ELM_TYPE_TQ2_0 ? 64
                                                                                      : 0));
        if (!isfinite(d)) return i;
    }
    return -1;
}

#define TO_FLOAT(name, type)                                                                       \
    void elm_##name##_to_float(const void *src, float *dst, int64_t n) {                           \
        iquant_to_float(type, src, dst, n);                                                        \
    }                                                                                              \
    int64_t elm_##name##_bad_block(const void *src, int64_t n_blocks) {                            \
        return iquant_bad_block(type, src, n_blocks);                                              \
    }
TO_FLOAT(iq2_xxs, ELM_TYPE_IQ2_XXS)
TO_FLOAT(iq2_xs, ELM_TYPE_IQ2_XS)
TO_FLOAT(iq2_s, ELM_TYPE_IQ2_S)
TO_FLOAT(iq3_xxs, ELM_TYPE_IQ3_XXS)
TO_FLOAT(iq3_s, ELM_TYPE_IQ3_S)
TO_FLOAT(iq1_s, ELM_TYPE_IQ1_S)
TO_FLOAT(iq1_m, ELM_TYPE_IQ1_M)
TO_FLOAT(tq1_0, ELM_TYPE_TQ1_0)
TO_FLOAT(tq2_0, ELM_TYPE_TQ2_0)
#undef TO_FLOAT
