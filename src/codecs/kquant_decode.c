/* Decoding of ggml's 256-weight super-block types (k-quants Q2_K..Q6_K, IQ4_XS) and of the
 * 32-weight non-linear IQ4_NL, as laid out in docs/kquants.md. Each super-block holds one or two
 * f16 scales for the whole block and small integer scales (and mins) for its 16- or 32-weight
 * sub-blocks; a weight is d·sub_scale·q (minus dmin·sub_min for the types with mins). Blocks are
 * read as bytes (little-endian f16 fields), so no struct layout or alignment is assumed. */
#include <string.h>

#include "core/half.h"
#include "codecs/codecs.h"
#include "codecs/kquant_codec.h"

/* The 16 signed levels of the non-linear 4-bit grid of IQ4_NL and IQ4_XS (llama.cpp's
 * kvalues_iq4nl): denser near zero, where most weights are. */
const int8_t elm_iq4nl_grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

void elm_kquant_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

void elm_q3_k_scales(const uint8_t *s, int8_t out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

/* Q2_K, 84 bytes: u8 scales[16] (low nibble scale, high nibble min of each 16-weight
 * sub-block), u8 qs[64] (2-bit codes), f16 d, f16 dmin.
 * Weight 128h + 32k + i, i < 32 (h < 2, k < 4): code (qs[32h + i] >> 2k) & 3, sub-block
 * 8h + 2k + i/16. */
void elm_q2_k_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += 84, y += ELM_QK_K) {
        const float d = elm_load_f16(b + 80), dmin = elm_load_f16(b + 82);
        for (int w = 0; w < ELM_QK_K; w++) {
            const int h = w / 128, k = (w % 128) / 32, l = w % 32;
            const uint8_t sc = b[8 * h + 2 * k + l / 16];
            const int q = (b[16 + 32 * h + l] >> (2 * k)) & 3;
            y[w] = d * (float)(sc & 0x0f) * (float)q - dmin * (float)(sc >> 4);
        }
    }
}

/* Q3_K, 110 bytes: u8 hmask[32], u8 qs[64], u8 scales[12] (sixteen 6-bit scales, offset 32),
 * f16 d. Weight 128h + 32k + l: low bits (qs[32h + l] >> 2k) & 3, minus 4 unless bit 4h + k of
 * hmask[l] is set; sub-block 8h + 2k + l/16. */
void elm_q3_k_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += 110, y += ELM_QK_K) {
        const float d = elm_load_f16(b + 108);
        int8_t sc[16];
        elm_q3_k_scales(b + 96, sc);
        for (int w = 0; w < ELM_QK_K; w++) {
            const int h = w / 128, k = (w % 128) / 32, l = w % 32;
            int q = (b[32 + 32 * h + l] >> (2 * k)) & 3;
            if (!(b[l] & (1 << (4 * h + k)))) q -= 4;
            y[w] = d * (float)sc[8 * h + 2 * k + l / 16] * (float)q;
        }
    }
}

/* Q4_K (144 bytes: f16 d, f16 dmin, u8 scales[12], u8 qs[128]) and Q5_K (176 bytes: the same
 * with u8 qh[32] before qs). Weight 64p + 32s + l (p < 4, s < 2): low nibble of qs[32p + l] for
 * s = 0, high for s = 1; Q5_K adds 16 when bit 2p + s of qh[l] is set; sub-block 2p + s. */
static void q45_k_to_float(const uint8_t *b, float *y, int64_t n, size_t bytes, bool five) {
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += bytes, y += ELM_QK_K) {
        const float d = elm_load_f16(b), dmin = elm_load_f16(b + 2);
        const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
        for (int w = 0; w < ELM_QK_K; w++) {
            const int p = w / 64, s = (w % 64) / 32, l = w % 32;
            uint8_t sc, m;
            elm_kquant_scale_min(2 * p + s, b + 4, &sc, &m);
            int q = s ? qs[32 * p + l] >> 4 : qs[32 * p + l] & 0x0f;
            if (five && (qh[l] & (1 << (2 * p + s)))) q += 16;
            y[w] = d * (float)sc * (float)q - dmin * (float)m;
        }
    }
}

void elm_q4_k_to_float(const void *s, float *y, int64_t n) { q45_k_to_float(s, y, n, 144, false); }
void elm_q5_k_to_float(const void *s, float *y, int64_t n) { q45_k_to_float(s, y, n, 176, true); }

/* Q6_K, 210 bytes: u8 ql[128], u8 qh[64], i8 scales[16], f16 d. Weight 128h + 32k + l:
 * 4 low bits from ql[64h + l + 32(k&1)] (low nibble for k < 2, high for k >= 2), 2 high bits
 * (qh[32h + l] >> 2k) & 3, minus 32; sub-block 8h + 2k + l/16. */
void elm_q6_k_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += 210, y += ELM_QK_K) {
        const float d = elm_load_f16(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int w = 0; w < ELM_QK_K; w++) {
            const int h = w / 128, k = (w % 128) / 32, l = w % 32;
            const uint8_t lo = b[64 * h + l + 32 * (k & 1)];
            const int q = ((k < 2 ? lo & 0x0f : lo >> 4) | ((b[128 + 32 * h + l] >> (2 * k)) & 3) << 4) - 32;
            y[w] = d * (float)sc[8 * h + 2 * k + l / 16] * (float)q;
        }
    }
}

/* IQ4_NL, 18 bytes: f16 d, u8 qs[16]; weight l < 16 is grid[qs[l] & 15], l >= 16 is
 * grid[qs[l-16] >> 4], times d. */
void elm_iq4_nl_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK; i++, b += 18, y += ELM_QK) {
        const float d = elm_load_f16(b);
        for (int l = 0; l < 16; l++) {
            y[l] = d * (float)elm_iq4nl_grid[b[2 + l] & 0x0f];
            y[l + 16] = d * (float)elm_iq4nl_grid[b[2 + l] >> 4];
        }
    }
}

/* IQ4_XS, 136 bytes: f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]. Sub-block j < 8 has the
 * 6-bit scale (nibble j%2 of scales_l[j/2]) | (bits 2j..2j+1 of scales_h) << 4, offset 32, and
 * IQ4_NL's packing of its 32 weights in qs[16j..16j+15]. */
void elm_iq4_xs_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / ELM_QK_K; i++, b += 136, y += ELM_QK_K) {
        elm_kquant_scales s;
        elm_kquant_get_scales(ELM_TYPE_IQ4_XS, b, &s);
        for (int j = 0; j < 8; j++) {
            const float dl = s.d * (float)s.sc[j];
            const uint8_t *qs = b + 8 + 16 * j;
            for (int l = 0; l < 16; l++) {
                y[32 * j + l] = dl * (float)elm_iq4nl_grid[qs[l] & 0x0f];
                y[32 * j + l + 16] = dl * (float)elm_iq4nl_grid[qs[l] >> 4];
            }
        }
    }
}

void elm_kquant_get_scales(elm_type type, const void *block, elm_kquant_scales *s) {
    const uint8_t *b = block;
    memset(s, 0, sizeof *s);
    switch (type) {
    case ELM_TYPE_Q2_K:
        s->d = elm_load_f16(b + 80);
        s->dmin = elm_load_f16(b + 82);
        for (int j = 0; j < 16; j++) {
            s->sc[j] = (int8_t)(b[j] & 0x0f);
            s->mn[j] = b[j] >> 4;
        }
        break;
    case ELM_TYPE_Q3_K:
        s->d = elm_load_f16(b + 108);
        elm_q3_k_scales(b + 96, s->sc);
        break;
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K:
        s->d = elm_load_f16(b);
        s->dmin = elm_load_f16(b + 2);
        for (int j = 0; j < 8; j++) {
            uint8_t sc;
            elm_kquant_scale_min(j, b + 4, &sc, &s->mn[j]);
            s->sc[j] = (int8_t)sc;
        }
        break;
    case ELM_TYPE_Q6_K:
        s->d = elm_load_f16(b + 208);
        memcpy(s->sc, b + 192, 16);
        break;
    case ELM_TYPE_IQ4_NL: s->d = elm_load_f16(b); break;
    case ELM_TYPE_IQ4_XS: {
        s->d = elm_load_f16(b);
        const unsigned sh = (unsigned)b[2] | (unsigned)b[3] << 8;
        for (int j = 0; j < 8; j++)
            s->sc[j] = (int8_t)((((b[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | (int)((sh >> (2 * j)) & 3) << 4) - 32);
        break;
    }
    default: break;
    }
}
