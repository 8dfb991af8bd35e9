/* Encoders of ggml's super-block types (layouts: docs/kquants.md), bit-exact with llama.cpp's
 * quantize_row_q*_K_ref (llama-quantize without an importance matrix) and with its importance-
 * weighted quantize_row_q*_K_impl / quantize_row_iq4_nl_impl (with one). Each super-block gets
 * per-sub-block scales (and mins) from a scale search (quant_search.c); those are quantized to 4,
 * 6 or 8 bits against one or two f16 super-block scales, and the weights are then re-rounded
 * against the scales as stored, so that the codes fit what a decoder will multiply them by. */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "codecs/codecs.h"
#include "codecs/kquant_codec.h"
#include "codecs/quant_search.h"

/* Four 2-bit codes of weights 128h + 32k + l (k = 0..3) in byte 32h + l, k-th bit pair. */
static void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < ELM_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 |
                                      L[j + l + 96] << 6);
}

/* Q4_K/Q5_K's twelve scale bytes: 6-bit scale and min of the eight 32-weight sub-blocks. */
static void pack_scale_min(const int8_t ls[8], const uint8_t lm[8], uint8_t *s) {
    memset(s, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] = (uint8_t)ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 0xF) | (lm[j] & 0xF) << 4);
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

/* IQ4 codes of 32 weights into 16 bytes: weight l in the low nibble of byte l, l + 16 high. */
static void pack_iq4(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | L[16 + j] << 4);
}

void elm_kquant_put(elm_type type, const elm_kquant_scales *s, const uint8_t *L, void *block) {
    uint8_t *b = block;
    switch (type) {
    case ELM_TYPE_Q2_K: /* u8 scales[16], u8 qs[64], f16 d, f16 dmin (84 bytes) */
        for (int j = 0; j < 16; j++) b[j] = (uint8_t)(s->sc[j] | s->mn[j] << 4);
        pack_2bit(L, b + 16);
        elm_store_f16(b + 80, s->d);
        elm_store_f16(b + 82, s->dmin);
        break;
    case ELM_TYPE_Q3_K: { /* u8 hmask[32], u8 qs[64], u8 scales[12], f16 d (110 bytes) */
        uint8_t *sc = b + 96, U[ELM_QK_K];
        memset(sc, 0, 12);
        for (int j = 0; j < 16; j++) { /* the 6-bit scales, offset 32 (docs/kquants.md) */
            const int l = s->sc[j] + 32;
            if (j < 8) sc[j] = (uint8_t)(l & 0xF);
            else sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
            sc[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        /* bit k of hmask[m] is the high bit of weight 32k + m */
        memset(b, 0, 32);
        for (int j = 0; j < ELM_QK_K; j++) {
            U[j] = L[j] & 3;
            if (L[j] > 3) b[j % 32] |= (uint8_t)(1 << (j / 32));
        }
        pack_2bit(U, b + 32);
        elm_store_f16(b + 108, s->d);
        break;
    }
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: {
        /* f16 d, f16 dmin, u8 scales[12], (Q5_K: u8 qh[32]), u8 qs[128]: codes of weights 64p + l
         * and 64p + 32 + l share byte 32p + l (low, high nibble); Q5_K's fifth bits go to bits
         * 2p and 2p + 1 of qh[l] */
        const bool five = type == ELM_TYPE_Q5_K;
        elm_store_f16(b, s->d);
        elm_store_f16(b + 2, s->dmin);
        pack_scale_min(s->sc, s->mn, b + 4);
        uint8_t *qh = b + 16, *ql = b + (five ? 48 : 16);
        if (five) memset(qh, 0, 32);
        for (int p = 0; p < 4; p++)
            for (int l = 0; l < 32; l++) {
                const int l1 = L[64 * p + l], l2 = L[64 * p + l + 32];
                if (l1 > 15) qh[l] |= (uint8_t)(1 << (2 * p));
                if (l2 > 15) qh[l] |= (uint8_t)(2 << (2 * p));
                ql[32 * p + l] = (uint8_t)((l1 & 15) | (l2 & 15) << 4);
            }
        break;
    }
    case ELM_TYPE_Q6_K: { /* u8 ql[128], u8 qh[64], i8 scales[16], f16 d (210 bytes) */
        uint8_t *ql = b, *qh = b + 128;
        for (int h = 0; h < 2; h++, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                const uint8_t *q = L + 128 * h + l;
                ql[l] = (uint8_t)((q[0] & 0xF) | (q[64] & 0xF) << 4);
                ql[l + 32] = (uint8_t)((q[32] & 0xF) | (q[96] & 0xF) << 4);
                qh[l] = (uint8_t)((q[0] >> 4) | (q[32] >> 4) << 2 | (q[64] >> 4) << 4 | (q[96] >> 4) << 6);
            }
        memcpy(b + 192, s->sc, 16);
        elm_store_f16(b + 208, s->d);
        break;
    }
    case ELM_TYPE_IQ4_NL: /* f16 d, u8 qs[16] (18 bytes) */
        elm_store_f16(b, s->d);
        pack_iq4(L, b + 2);
        break;
    case ELM_TYPE_IQ4_XS: { /* f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128] (136 bytes) */
        uint16_t sh = 0;
        elm_store_f16(b, s->d);
        for (int ib = 0; ib < 8; ib++) {
            const int l = s->sc[ib] + 32;
            if (ib % 2 == 0) b[4 + ib / 2] = (uint8_t)(l & 0xf);
            else b[4 + ib / 2] |= (uint8_t)((l & 0xf) << 4);
            sh |= (uint16_t)((l >> 4) << (2 * ib));
            pack_iq4(L + 32 * ib, b + 8 + 16 * ib);
        }
        b[2] = (uint8_t)sh;
        b[3] = (uint8_t)(sh >> 8);
        break;
    }
    default: break;
    }
}

/* The importance weights of n values with an importance matrix, w[l] = qw[l]·sqrt(σ² + x[l]²)
 * (σ² from the whole super-block); returns their sum. */
static float imatrix_weights(const float *x, const float *qw, float sigma2, int n, float *w) {
    float sum = 0;
    for (int l = 0; l < n; l++) w[l] = qw[l] * sqrtf(sigma2 + x[l] * x[l]);
    for (int l = 0; l < n; l++) sum += w[l];
    return sum;
}

/* Codes of x against the scales s: L = round((x + dmin·m)/(d·sc)) in [0, nmax] per sub-block of
 * `sub` weights (sub-blocks whose scale is 0 keep the codes of the search). */
static void requant_k(const float *x, const elm_kquant_scales *s, int sub, uint8_t *L, int nmax) {
    for (int j = 0; j < ELM_QK_K / sub; j++) {
        const float dl = s->d * (float)s->sc[j];
        if (!dl) continue;
        const float dm = s->dmin * (float)s->mn[j];
        for (int i = 0; i < sub; i++) {
            int l = elm_nearest_int((x[sub * j + i] + dm) / dl);
            L[sub * j + i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        }
    }
}

/* Symmetric codes of x against s: L = round(x/(d·sc)) clamped to [-off, off-1], plus off. */
static void requant_sym(const float *x, const elm_kquant_scales *s, int8_t *L, int off) {
    for (int j = 0; j < 16; j++) {
        const float dl = s->d * (float)s->sc[j];
        if (!dl) continue;
        for (int i = 0; i < 16; i++) {
            const int l = elm_nearest_int(x[16 * j + i] / dl);
            L[16 * j + i] = (int8_t)((l < -off ? -off : l > off - 1 ? off - 1 : l) + off);
        }
    }
}

/* ---- Q2_K ---- */

static void q2_k_block(const float *x, uint8_t *b, const float *qw) {
    uint8_t L[ELM_QK_K];
    float w[ELM_QK_K], mins[16], scales[16];
    elm_kquant_scales s = {0};
    if (!qw) {
        float max_scale = 0, max_min = 0;
        for (int l = 0; l < ELM_QK_K; l++) w[l] = fabsf(x[l]);
        elm_make_qkx_quants(16, 16, 3, x, w, L, scales, mins, -0.5f, 0.1f, 15, true);
        for (int j = 0; j < 16; j++) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) s.sc[j] = (int8_t)elm_nearest_int(iscale * scales[j]);
            s.d = elm_round_f16(max_scale / 15.f);
        }
        if (max_min > 0) {
            const float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++) s.mn[j] = (uint8_t)elm_nearest_int(iscale * mins[j]);
            s.dmin = elm_round_f16(max_min / 15.f);
        }
    } else {
        float sw[16], sumx2 = 0;
        uint8_t Ls[16];
        for (int j = 0; j < ELM_QK_K; j++) sumx2 += x[j] * x[j];
        const float sigma2 = sumx2 / ELM_QK_K;
        for (int j = 0; j < 16; j++)
            sw[j] = imatrix_weights(x + 16 * j, qw + 16 * j, sigma2, 16, w + 16 * j);
        elm_make_qkx_quants(16, 16, 3, x, w, L, scales, mins, -0.9f, 0.05f, 36, false);
        s.d = elm_round_f16(elm_make_qp_quants(16, 15, scales, Ls, sw));
        s.dmin = elm_round_f16(elm_make_qp_quants(16, 15, mins, s.mn, sw));
        for (int j = 0; j < 16; j++) s.sc[j] = (int8_t)Ls[j];
    }
    requant_k(x, &s, 16, L, 3);
    elm_kquant_put(ELM_TYPE_Q2_K, &s, L, b);
}

/* ---- Q3_K ---- */

static void q3_k_block(const float *x, uint8_t *b, const float *qw) {
    int8_t L[ELM_QK_K], Ls[16];
    float scales[16];
    elm_kquant_scales s = {0};
    if (!qw) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = elm_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            const float a = fabsf(scales[j]);
            if (a > amax) {
                amax = a;
                max_scale = scales[j];
            }
        }
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                const int8_t l = (int8_t)elm_nearest_int(iscale * scales[j]);
                Ls[j] = (int8_t)((l < -32 ? -32 : l > 31 ? 31 : l) + 32);
            }
            s.d = elm_round_f16(1 / iscale);
        } else {
            memset(Ls, 0, sizeof Ls);
        }
    } else {
        float w[16], sw[16], sumx2 = 0;
        for (int j = 0; j < ELM_QK_K; j++) sumx2 += x[j] * x[j];
        const float sigma2 = 2 * sumx2 / ELM_QK_K;
        for (int j = 0; j < 16; j++) {
            sw[j] = imatrix_weights(x + 16 * j, qw + 16 * j, sigma2, 16, w);
            scales[j] = elm_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, w);
        }
        s.d = elm_round_f16(elm_make_qx_quants(16, 32, scales, Ls, sw));
    }
    for (int j = 0; j < 16; j++) s.sc[j] = (int8_t)(Ls[j] - 32);
    requant_sym(x, &s, L, 4);
    elm_kquant_put(ELM_TYPE_Q3_K, &s, (const uint8_t *)L, b);
}

/* ---- Q4_K and Q5_K ---- */

static void q45_k_block(const float *x, uint8_t *b, const float *qw, bool five) {
    const int nmax = five ? 31 : 15;
    uint8_t L[ELM_QK_K], Ls[8];
    float w[ELM_QK_K], mins[8], scales[8];
    elm_kquant_scales s = {0};
    if (!qw) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
            const float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++) w[32 * j + l] = av_x + fabsf(x[32 * j + l]);
        }
        elm_make_qkx_quants(8, 32, nmax, x, w, L, scales, mins, five ? -0.5f : -1.f, 0.1f,
                            five ? 15 : 20, false);
        for (int j = 0; j < 8; j++) {
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < 8; j++) {
            const uint8_t ls = (uint8_t)elm_nearest_int(inv_scale * scales[j]);
            const uint8_t lm = (uint8_t)elm_nearest_int(inv_min * mins[j]);
            Ls[j] = ls < 63 ? ls : 63;
            s.mn[j] = lm < 63 ? lm : 63;
        }
        s.d = elm_round_f16(max_scale / 63.f);
        s.dmin = elm_round_f16(max_min / 63.f);
    } else {
        float sw[8], sum_x2 = 0;
        for (int l = 0; l < ELM_QK_K; l++) sum_x2 += x[l] * x[l];
        const float sigma2 = 2 * sum_x2 / ELM_QK_K;
        for (int j = 0; j < 8; j++)
            sw[j] = imatrix_weights(x + 32 * j, qw + 32 * j, sigma2, 32, w + 32 * j);
        elm_make_qkx_quants(8, 32, nmax, x, w, L, scales, mins, -0.9f, 0.05f, 36, false);
        s.d = elm_round_f16(elm_make_qp_quants(8, 63, scales, Ls, sw));
        s.dmin = elm_round_f16(elm_make_qp_quants(8, 63, mins, s.mn, sw));
    }
    for (int j = 0; j < 8; j++) s.sc[j] = (int8_t)Ls[j];
    requant_k(x, &s, 32, L, nmax);
    elm_kquant_put(five ? ELM_TYPE_Q5_K : ELM_TYPE_Q4_K, &s, L, b);
}

/* ---- Q6_K ---- */

static void q6_k_block(const float *x, uint8_t *b, const float *qw) {
    int8_t L[ELM_QK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; j++) {
        /* the weighted variant takes the importance weights as they are */
        scales[j] = elm_make_qx_quants(16, 32, x + 16 * j, L + 16 * j, qw ? qw + 16 * j : NULL);
        const float a = fabsf(scales[j]);
        if (a > max_abs_scale) {
            max_abs_scale = a;
            max_scale = scales[j];
        }
    }
    if (max_abs_scale < ELM_GROUP_EPS) {
        memset(b, 0, 210);
        return;
    }
    const float iscale = -128.f / max_scale;
    elm_kquant_scales s = {.d = elm_round_f16(1 / iscale)};
    for (int j = 0; j < 16; j++) {
        const int l = elm_nearest_int(iscale * scales[j]);
        s.sc[j] = (int8_t)(l < 127 ? l : 127);
    }
    requant_sym(x, &s, L, 32);
    elm_kquant_put(ELM_TYPE_Q6_K, &s, (const uint8_t *)L, b);
}

/* ---- IQ4_NL and IQ4_XS ----
 * Each 32-weight block: the scale maximising the weighted fit (Σwqx)²/Σwq² over 15 candidates
 * around max/grid[0], codes the nearest grid entries. IQ4_XS then quantizes the eight block scales
 * to 6 bits against d = -max_scale/32 and re-picks the codes (against the unrounded d, as
 * llama.cpp does). Weights are x² without an importance matrix, qw·sqrt(σ² + x²) with one
 * (σ² = 2·mean x² of the super-block). The 15 candidates are independent: their codes are picked
 * for all at once, and their sums run side by side in one walk over the block (IQ4_LANES, the
 * padding lane a copy of the last candidate's and never chosen), each still in the reference's
 * order, so that the loops vectorize and the result is the reference's. */
enum { IQ4_TRIES = 7, IQ4_LANES = 16 };

ELM_SEARCH_CLONES static void iq4_block(const float *x, int n, uint8_t *b, const float *qw) {
    const int8_t *values = elm_iq4nl_grid;
    uint8_t L[ELM_QK_K], Lt[32 * IQ4_LANES];
    float w[32], scales[8], v[32 * IQ4_LANES];
    float sigma2 = 0;
    for (int j = 0; j < n; j++) sigma2 += x[j] * x[j];
    sigma2 *= 2.f / n;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < n / 32; ib++) {
        const float *xb = x + 32 * ib;
        uint8_t *Lb = L + 32 * ib;
        for (int j = 0; j < 32; j++)
            w[j] = qw ? qw[32 * ib + j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++)
            if (fabsf(xb[j]) > amax) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        if (amax < ELM_GROUP_EPS) {
            scales[ib] = 0;
            continue;
        }
        float d = -max / values[0];
        float id = 1 / d;
        for (int j = 0; j < 32; j++) v[j] = id * xb[j];
        elm_best_index_int8_n(16, values, 32, v, Lb);
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            const float q = values[Lb[j]];
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        float idt[IQ4_LANES], sqx[IQ4_LANES] = {0}, sq2[IQ4_LANES] = {0};
        for (int k = 0; k < IQ4_LANES; k++)
            idt[k] = (float)((k < 2 * IQ4_TRIES ? k : 2 * IQ4_TRIES) - IQ4_TRIES + values[0]) / max;
        for (int j = 0; j < 32; j++)
            for (int k = 0; k < IQ4_LANES; k++) v[IQ4_LANES * j + k] = idt[k] * xb[j];
        elm_best_index_int8_n(16, values, 32 * IQ4_LANES, v, Lt);
        for (int j = 0; j < 32; j++)
            for (int k = 0; k < IQ4_LANES; k++) {
                const float q = values[Lt[IQ4_LANES * j + k]];
                sqx[k] += w[j] * q * xb[j];
                sq2[k] += w[j] * q * q;
            }
        for (int k = 0; k <= 2 * IQ4_TRIES; k++)
            if (sq2[k] > 0 && sqx[k] * sqx[k] > best * sq2[k]) {
                d = sqx[k] / sq2[k];
                best = d * sqx[k];
            }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }
    elm_kquant_scales s = {0};
    if (n > 32) {
        const float d = -max_scale / 32;
        s.d = elm_round_f16(d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < n / 32; ib++) {
            int l = elm_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            const float dl = d * l;
            const float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) v[32 * ib + j] = idl * x[32 * ib + j];
            s.sc[ib] = (int8_t)l;
        }
    } else {
        s.d = elm_round_f16(scales[0]);
        const float id = scales[0] ? 1 / scales[0] : 0;
        for (int j = 0; j < 32; j++) v[j] = id * x[j];
    }
    elm_best_index_int8_n(16, values, n, v, L);
    elm_kquant_put(n > 32 ? ELM_TYPE_IQ4_XS : ELM_TYPE_IQ4_NL, &s, L, b);
}

/* ---- entry points ---- */

void elm_kquant_encode(elm_type type, const float *x, void *dst, int64_t n, const float *qw) {
    uint8_t *b = dst;
    const int bs = type == ELM_TYPE_IQ4_NL ? ELM_QK : ELM_QK_K;
    for (int64_t i = 0; i < n / bs; i++, x += bs, qw = qw ? qw + bs : NULL) {
        switch (type) {
        case ELM_TYPE_Q2_K: q2_k_block(x, b, qw); b += 84; break;
        case ELM_TYPE_Q3_K: q3_k_block(x, b, qw); b += 110; break;
        case ELM_TYPE_Q4_K: q45_k_block(x, b, qw, false); b += 144; break;
        case ELM_TYPE_Q5_K: q45_k_block(x, b, qw, true); b += 176; break;
        case ELM_TYPE_Q6_K: q6_k_block(x, b, qw); b += 210; break;
        case ELM_TYPE_IQ4_NL: iq4_block(x, 32, b, qw); b += 18; break;
        case ELM_TYPE_IQ4_XS: iq4_block(x, 256, b, qw); b += 136; break;
        default: return;
        }
    }
}

void elm_q2_k_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_Q2_K, s, d, n, NULL); }
void elm_q3_k_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_Q3_K, s, d, n, NULL); }
void elm_q4_k_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_Q4_K, s, d, n, NULL); }
void elm_q5_k_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_Q5_K, s, d, n, NULL); }
void elm_q6_k_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_Q6_K, s, d, n, NULL); }
void elm_iq4_nl_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_IQ4_NL, s, d, n, NULL); }
void elm_iq4_xs_from_float(const float *s, void *d, int64_t n) { elm_kquant_encode(ELM_TYPE_IQ4_XS, s, d, n, NULL); }
