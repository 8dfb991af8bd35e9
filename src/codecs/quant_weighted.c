/* Importance-weighted encoding (encode.h): the k-quants and i-quants in kquant_encode.c, and here
 * llama.cpp's weighted variants of the 32-weight legacy types. Those search each block's scale (and
 * min) for the smallest Σ w·(x - x̂)², with w = qw·sqrt(σ² + x²) where σ² is the row's mean x²,
 * instead of taking it from the block's extreme. Bit-exact with llama-quantize --imatrix. */
#include <math.h>
#include <string.h>

#include "codecs/encode.h"
#include "codecs/iquant_codec.h"
#include "codecs/kquant_codec.h"
#include "codecs/quant_search.h"

static void put_f16(uint8_t *p, float f) {
    const uint16_t h = elm_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* codes q[32] into qs[16] (weights j and j+16 share byte j) and, for 5 bits, qh (bit j) */
static void pack32(const uint8_t *q, uint8_t *qs, uint8_t *qh) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
        h |= (uint32_t)((q[j] >> 4) & 1) << j;
        h |= (uint32_t)((q[j + 16] >> 4) & 1) << (j + 16);
    }
    if (qh)
        for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* Q4_0 (f16 d, qs[16]), Q5_0 (f16 d, qh[4], qs[16]), Q4_1 (f16 d, f16 m, qs[16]),
 * Q5_1 (f16 d, f16 m, qh[4], qs[16]) */
static void legacy_weighted(elm_type type, const float *x, uint8_t *b, int64_t n,
                            const float *qw) {
    const bool five = type == ELM_TYPE_Q5_0 || type == ELM_TYPE_Q5_1;
    const bool with_min = type == ELM_TYPE_Q4_1 || type == ELM_TYPE_Q5_1;
    const size_t bytes = elm_type_get((uint32_t)type)->block_bytes;
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; j++) sum_x2 += x[j] * x[j];
    const float sigma2 = sum_x2 / n;
    /* blocks in runs of up to ELM_QKX_MAX_GROUPS, whose searches run side by side */
    const int64_t nb = n / ELM_QK;
    for (int64_t ib0 = 0; ib0 < nb; ib0 += ELM_QKX_MAX_GROUPS) {
        const int ng = (int)(nb - ib0 < ELM_QKX_MAX_GROUPS ? nb - ib0 : ELM_QKX_MAX_GROUPS);
        const float *xr = x + ELM_QK * ib0, *q = qw + ELM_QK * ib0;
        float w[ELM_QKX_MAX_GROUPS * ELM_QK], d[ELM_QKX_MAX_GROUPS], min[ELM_QKX_MAX_GROUPS];
        uint8_t L[ELM_QKX_MAX_GROUPS * ELM_QK];
        for (int j = 0; j < ELM_QK * ng; j++) w[j] = q[j] * sqrtf(sigma2 + xr[j] * xr[j]);
        if (with_min)
            elm_make_qkx_quants(ng, ELM_QK, five ? 31 : 15, xr, w, L, d, min, -0.9f, 0.05f, 36,
                                false);
        for (int g = 0; g < ng; g++, b += bytes) {
            uint8_t *Lg = L + ELM_QK * g;
            if (with_min) {
                put_f16(b, d[g]);
                put_f16(b + 2, -min[g]);
            } else {
                int8_t Ls[ELM_QK];
                put_f16(b, elm_make_qx_quants(ELM_QK, five ? 16 : 8, xr + ELM_QK * g, Ls,
                                              w + ELM_QK * g));
                for (int j = 0; j < ELM_QK; j++) Lg[j] = (uint8_t)Ls[j];
            }
            const size_t head = with_min ? 4 : 2;
            pack32(Lg, b + head + (five ? 4 : 0), five ? b + head : NULL);
        }
    }
}

void elm_encode_row(elm_type type, const float *x, void *dst, int64_t n, const float *qw) {
    switch (qw ? type : ELM_TYPE_COUNT) {
    case ELM_TYPE_Q4_0:
    case ELM_TYPE_Q4_1:
    case ELM_TYPE_Q5_0:
    case ELM_TYPE_Q5_1: legacy_weighted(type, x, dst, n, qw); return;
    case ELM_TYPE_Q2_K:
    case ELM_TYPE_Q3_K:
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K:
    case ELM_TYPE_Q6_K:
    case ELM_TYPE_IQ4_NL:
    case ELM_TYPE_IQ4_XS: elm_kquant_encode(type, x, dst, n, qw); return;
    case ELM_TYPE_IQ2_XXS:
    case ELM_TYPE_IQ2_XS:
    case ELM_TYPE_IQ2_S:
    case ELM_TYPE_IQ3_XXS:
    case ELM_TYPE_IQ3_S: elm_iquant_grid_encode(type, x, dst, n, qw); return;
    default: elm_type_get((uint32_t)type)->from_float(x, dst, n); return;
    }
}
