/* ggml block grids (grid.h): parameters, nearest codes, decoding and packing of Q8_0, Q4_0, Q4_1,
 * Q5_0 and Q5_1 blocks, written from the layouts in docs/formats.md ("ggml blocks"), and of the
 * super-block types and IQ4_NL through their encoders' scales (codecs/kquant_codec.h). Scales are rounded
 * to f16 before any code is chosen, so codes are nearest for the stored scale. */
#include <math.h>
#include <string.h>

#include "codecs/encode.h"
#include "codecs/iquant_codec.h"
#include "core/half.h"
#include "codecs/quant_search.h"
#include "quant/grid.h"

bool elm_grid_of(elm_type type, elm_grid *g) {
    const int8_t *nl = elm_iq4nl_grid;
    switch (type) {
    case ELM_TYPE_Q8_0: *g = (elm_grid){type, ELM_QK, ELM_QK, -127, 127, 0, false, false, NULL, 1}; return true;
    case ELM_TYPE_Q4_0: *g = (elm_grid){type, ELM_QK, ELM_QK, 0, 15, 8, false, false, NULL, 1}; return true;
    case ELM_TYPE_Q5_0: *g = (elm_grid){type, ELM_QK, ELM_QK, 0, 31, 16, false, false, NULL, 1}; return true;
    case ELM_TYPE_Q4_1: *g = (elm_grid){type, ELM_QK, ELM_QK, 0, 15, 0, true, false, NULL, 1}; return true;
    case ELM_TYPE_Q5_1: *g = (elm_grid){type, ELM_QK, ELM_QK, 0, 31, 0, true, false, NULL, 1}; return true;
    case ELM_TYPE_Q2_K: *g = (elm_grid){type, ELM_QK_K, 16, 0, 3, 0, true, true, NULL, 1}; return true;
    case ELM_TYPE_Q3_K: *g = (elm_grid){type, ELM_QK_K, 16, 0, 7, 4, false, true, NULL, 1}; return true;
    case ELM_TYPE_Q4_K: *g = (elm_grid){type, ELM_QK_K, 32, 0, 15, 0, true, true, NULL, 1}; return true;
    case ELM_TYPE_Q5_K: *g = (elm_grid){type, ELM_QK_K, 32, 0, 31, 0, true, true, NULL, 1}; return true;
    case ELM_TYPE_Q6_K: *g = (elm_grid){type, ELM_QK_K, 16, 0, 63, 32, false, true, NULL, 1}; return true;
    case ELM_TYPE_IQ4_NL: *g = (elm_grid){type, ELM_QK, ELM_QK, 0, 15, 0, false, true, nl, 1}; return true;
    case ELM_TYPE_IQ4_XS: *g = (elm_grid){type, ELM_QK_K, 32, 0, 15, 0, false, true, nl, 1}; return true;
    case ELM_TYPE_TQ1_0:
    case ELM_TYPE_TQ2_0: /* d·(q - 1), sc[0] = 1: the trits */
        *g = (elm_grid){type, ELM_QK_K, ELM_QK_K, 0, 2, 1, false, true, NULL, 1};
        return true;
    case ELM_TYPE_IQ1_S:
    case ELM_TYPE_IQ1_M:
    case ELM_TYPE_IQ2_XXS:
    case ELM_TYPE_IQ2_XS:
    case ELM_TYPE_IQ2_S:
    case ELM_TYPE_IQ3_XXS:
    case ELM_TYPE_IQ3_S:
        *g = (elm_grid){type, ELM_QK_K, 16, -62, 62, 0, false, true, NULL, elm_iquant_group(type)};
        return true;
    default: return false;
    }
}

elm_block_params elm_grid_params(const elm_grid *g, const float *x, float clip) {
    elm_block_params p = {0};
    if (g->asym) {
        float lo = x[0], hi = x[0];
        for (int j = 1; j < ELM_QK; j++) {
            lo = x[j] < lo ? x[j] : lo;
            hi = x[j] > hi ? x[j] : hi;
        }
        if (clip < 1) {
            float mid = 0.5f * (lo + hi), half = 0.5f * (hi - lo) * clip;
            lo = mid - half;
            hi = mid + half;
        }
        p.d = elm_round_f16((hi - lo) / (float)g->qmax);
        p.m = elm_round_f16(lo);
    } else if (g->off == 0) {
        float amax = 0;
        for (int j = 0; j < ELM_QK; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        p.d = elm_round_f16(clip * amax / (float)g->qmax);
    } else {
        /* the weight of largest magnitude lands on code 0, as in the RTN rule: the sign of d
         * puts the block's longer half-range on the side that has it */
        float amax = 0, max = 0;
        for (int j = 0; j < ELM_QK; j++)
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        p.d = elm_round_f16(clip * max / (float)-g->off);
    }
    return p;
}

/* Parameters as the type's own encoder chooses them for the block x, weighted by qw (or not):
 * encoded, then read back from the bytes. */
static elm_block_params encoder_params(const elm_grid *g, const float *x, const float *qw) {
    uint8_t b[256];
    elm_block_params p = {0};
    elm_encode_row(g->type, x, b, g->block, qw);
    if (g->group > 1) {
        elm_iquant_scales(g->type, b, &p.k.d, p.k.sc);
        if (g->type == ELM_TYPE_IQ1_S) { /* its shift per 32 weights, set: -1/8 */
            int8_t q[ELM_QK_K];
            elm_iquant_values(g->type, elm_iq_grids_get(), b, q);
            for (int k = 0; k < 16; k++) p.k.mn[k] = ((q[16 * k] % 8) + 8) % 8 == 7;
        }
    } else if (g->kq) {
        elm_kquant_get_scales(g->type, b, &p.k);
    } else {
        p.d = elm_load_f16(b);
        if (g->asym) p.m = elm_load_f16(b + 2);
    }
    return p;
}

int elm_grid_candidates(const elm_grid *g, const float *x, const float *h, int n_clip,
                        elm_block_params *out) {
    int n = 0;
    if (g->group > 1) {
        out[0] = encoder_params(g, x, h);
        return 1;
    }
    if (g->type == ELM_TYPE_TQ1_0 || g->type == ELM_TYPE_TQ2_0) {
        /* the RTN rule (d = max|x|), then d shrunk by 0.85 each: a ternary grid's best step lies
         * far inside the range of heavy-tailed weights */
        float amax = 0;
        for (int j = 0; j < ELM_QK_K; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        for (float d = amax; n < ELM_GRID_MAX_CANDIDATES - 1 && (n == 0 || n_clip > 1); d *= 0.85f) {
            out[n] = (elm_block_params){0};
            out[n].k.d = elm_round_f16(d);
            out[n++].k.sc[0] = 1;
        }
        return n;
    }
    if (g->kq) out[n++] = encoder_params(g, x, NULL);
    else
        for (int i = 0; i < n_clip; i++) out[n++] = elm_grid_params(g, x, 1.0f - 0.05f * (float)i);
    if (h && n_clip > 1 && g->type != ELM_TYPE_Q8_0) /* (Q8_0 has no weighted search) */
        out[n++] = encoder_params(g, x, h);
    return n;
}

void elm_grid_code_group(const elm_grid *g, const elm_block_params *p, int j, const float *x,
                         const float *h, int8_t *codes) {
    const float step = p->k.d * (float)p->k.sc[j / g->sub];
    if (g->type == ELM_TYPE_IQ1_S) elm_iq1_nearest(x, h, step, p->k.mn[j / 16] ? -1 : 1, codes);
    else if (g->type == ELM_TYPE_IQ1_M) elm_iq1_nearest(x, h, step, 0, codes);
    else elm_iquant_nearest(g->type, x, h, step, codes);
}

int elm_grid_code_kq(const elm_grid *g, const elm_block_params *p, int j, float x) {
    const float step = g->block > ELM_QK ? p->k.d * (float)p->k.sc[j / g->sub] : p->k.d;
    if (step == 0) return g->off;
    if (g->levels) return elm_best_index_int8(16, g->levels, x / step);
    const double m = g->asym ? (double)p->k.dmin * p->k.mn[j / g->sub] : 0;
    const double q = floor(((double)x + m) / step + g->off + 0.5);
    if (!(q > g->qmin)) return g->qmin; /* also NaN */
    if (q > g->qmax) return g->qmax;
    return (int)q;
}

void elm_grid_pack(const elm_grid *g, const elm_block_params *p, const int8_t *codes, void *block) {
    uint8_t *b = block;
    if (g->type == ELM_TYPE_IQ1_S || g->type == ELM_TYPE_IQ1_M) {
        elm_iq1_put(g->type, p->k.d, p->k.sc, codes, block);
        return;
    }
    if (g->group > 1) {
        elm_iquant_put(g->type, p->k.d, p->k.sc, codes, block);
        return;
    }
    if (g->type == ELM_TYPE_TQ1_0 || g->type == ELM_TYPE_TQ2_0) {
        elm_tq_put(g->type, p->k.d, (const uint8_t *)codes, block);
        return;
    }
    if (g->kq) {
        uint8_t L[ELM_QK_K];
        for (int j = 0; j < g->block; j++) L[j] = (uint8_t)codes[j];
        elm_kquant_put(g->type, &p->k, L, b);
        return;
    }
    elm_store_f16(b, p->d);
    if (g->type == ELM_TYPE_Q8_0) {
        memcpy(b + 2, codes, ELM_QK);
        return;
    }
    uint8_t *after_scales = b + (g->asym ? 4 : 2);
    if (g->asym) elm_store_f16(b + 2, p->m);
    /* 5-bit types: bit 4 of code j is bit j of the little-endian u32 qh before the nibbles */
    uint8_t *qs = after_scales;
    if (g->qmax == 31) {
        uint32_t h = 0;
        for (int j = 0; j < ELM_QK; j++) h |= (uint32_t)((codes[j] >> 4) & 1) << j;
        for (int k = 0; k < 4; k++) after_scales[k] = (uint8_t)(h >> (8 * k));
        qs += 4;
    }
    /* weight j < 16 in the low nibble of qs[j], weight j + 16 in its high nibble */
    for (int j = 0; j < ELM_QK / 2; j++)
        qs[j] = (uint8_t)((codes[j] & 0x0f) | (codes[j + ELM_QK / 2] & 0x0f) << 4);
}

void elm_grid_values(const elm_grid *g, const elm_block_params *p, const float *x, float *v) {
    if (g->kq || p->d == 0) {
        for (int j = 0; j < g->block; j++) v[j] = elm_grid_value(g, p, j, elm_grid_code(g, p, j, x[j]));
        return;
    }
    /* elm_grid_code's quotient in double, then floor(t + 0.5) clamped to [qmin, qmax] (NaN to
     * qmin): the floor of the clamped point, by truncation corrected below zero; the value in
     * float as elm_grid_value */
    const double d = p->d, m = p->m, off = g->off, lo = g->qmin, hi = g->qmax;
    for (int j = 0; j < ELM_QK; j++) {
        double t = (g->asym ? ((double)x[j] - m) / d : (double)x[j] / d + off) + 0.5;
        t = t > lo ? t : lo;
        t = t < hi ? t : hi;
        int i = (int)t;
        i -= (double)i > t;
        const float q = (float)i;
        v[j] = g->asym ? p->d * q + p->m : p->d * (q - (float)g->off);
    }
}

float elm_grid_block_error(const elm_grid *g, const elm_block_params *p, const float *x,
                           const float *h) {
    float e = 0;
    if (g->kq || p->d == 0) {
        for (int j = 0; j < g->block; j++) {
            const float r = x[j] - elm_grid_value(g, p, j, elm_grid_code(g, p, j, x[j]));
            e += (h ? h[j] : 1.0f) * r * r;
        }
        return e;
    }
    /* a legacy block: elm_grid_code without branches, so that the loop vectorizes: the rounded
     * point clamped to the code range, floored by truncation after a shift to non-negative values */
    const float lo = (float)g->qmin, hi = (float)g->qmax, off = (float)g->off;
    for (int j = 0; j < ELM_QK; j++) {
        float t = (g->asym ? (x[j] - p->m) / p->d : x[j] / p->d + off) + 0.5f;
        t = t > lo ? t : lo;
        t = t < hi ? t : hi;
        const float c = (float)(int)(t - lo) + lo;
        const float v = g->asym ? p->d * c + p->m : p->d * (c - off);
        const float r = x[j] - v;
        e += (h ? h[j] : 1.0f) * r * r;
    }
    return e;
}

elm_block_params elm_grid_best_params(const elm_grid *g, const float *x, const float *h,
                                      int n_clip) {
    elm_block_params c[ELM_GRID_MAX_CANDIDATES];
    const int n = elm_grid_candidates(g, x, h, n_clip, c);
    if (n == 1) return c[0]; /* (AWQ's scale search: the RTN rule alone) */
    int best = 0;
    float best_err = elm_grid_block_error(g, &c[0], x, h);
    for (int i = 1; i < n; i++) {
        const float e = elm_grid_block_error(g, &c[i], x, h);
        if (e < best_err) {
            best_err = e;
            best = i;
        }
    }
    return c[best];
}
