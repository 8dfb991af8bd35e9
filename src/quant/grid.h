/* The value grid of a ggml block type (docs/formats.md "ggml blocks", docs/kquants.md): the
 * parameters (scales, mins) a block's weights share, the integer code nearest to a weight, the
 * value a code decodes to, and the packing of codes into the block's bytes. GPTQ and AWQ choose
 * codes themselves (error feedback, clipped ranges), so they need the grid as separate steps
 * rather than the all-in-one encoders of the types table; what they write decodes with that
 * table's to_float to exactly elm_grid_value.
 *
 * A block is 32 weights for the legacy types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and IQ4_NL, 256 for
 * the super-block types (Q2_K..Q6_K, IQ4_XS), whose sub-blocks of 16 or 32 weights each have an
 * integer scale (and min) under the block's f16 scales.
 *
 * The lattice i-quants IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S
 * (codecs/iquant_codec.h) are kq grids of 256 weights whose codes are signed grid values
 * (|q| <= 62, value = d·sc·q, sc per 16 weights) chosen a group of 8 or 4 at a time (a point of
 * the codebook with its signs, or IQ1's with its shift): elm_grid_code_group, never
 * elm_grid_code. IQ1_S's shift per 32 weights is a parameter (mn[k] set: -1/8, per 16). */
#ifndef EDGELM_QUANT_GRID_H
#define EDGELM_QUANT_GRID_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include "codecs/kquant_codec.h"
#include "edgelm/types.h"

typedef struct elm_grid {
    elm_type type;
    int block;            /* weights sharing one elm_block_params: ELM_QK or ELM_QK_K */
    int sub;              /* weights per sub-block (block for the 32-weight types) */
    int qmin, qmax;       /* code range as stored */
    int off;              /* value = step·(q - off) (+ min) */
    bool asym;            /* a min per block (Q4_1, Q5_1) or sub-block (Q2_K, Q4_K, Q5_K) */
    bool kq;              /* parameters are elm_kquant_scales: the super-block types and IQ4_NL */
    const int8_t *levels; /* IQ4_NL, IQ4_XS: value = step·levels[q] */
    int group;            /* weights one code choice covers: 1, or the lattice i-quants' 8 or 4
                           * (elm_grid_code_group) */
} elm_grid;

/* The parameters of one block, as stored (f16 scales already rounded): d and m for the legacy
 * types (Q4_1/Q5_1: value = d·q + m, the others d·(q - off)), k for the kq types. */
typedef struct elm_block_params {
    float d, m;
    elm_kquant_scales k;
} elm_block_params;

/* Most candidates elm_grid_candidates gives: the n_clip of the legacy rule, plus one. */
#define ELM_GRID_MAX_CANDIDATES 16

/* The grid of a block type (the legacy types, Q2_K..Q6_K, IQ4_NL, IQ4_XS, the lattice i-quants,
 * TQ1_0 and TQ2_0: codes 0..2 for the trits -1..1 under one step per 256 weights); false for the
 * others (float types, MXFP4). */
bool elm_grid_of(elm_type type, elm_grid *g);

/* Legacy types: block parameters from the 32 weights x by the round-to-nearest rule of the type,
 * with the range shrunk by clip in (0, 1] (1 = the plain RTN range): Q8_0 d = clip*max|x|/127;
 * Q4_0/Q5_0 d = clip*x_max/-off with x_max the weight of largest magnitude; Q4_1/Q5_1 the
 * [min, max] range shrunk about its centre by clip, d = range/qmax, m = its low end. */
elm_block_params elm_grid_params(const elm_grid *g, const float *x, float clip);

/* Candidate parameters for the block of g->block weights x, into out[ELM_GRID_MAX_CANDIDATES];
 * returns how many (>= 1), the type's round-to-nearest choice first. Legacy types: the clips
 * {1, 0.95, ..., 1 - 0.05*(n_clip-1)} of elm_grid_params; kq types: the reference encoder's
 * scales (llama-quantize without an importance matrix). With importances h [g->block] and
 * n_clip > 1, one more for every type but Q8_0: the scales of llama.cpp's importance-weighted
 * search of the type (elm_encode_row with h as quant_weights; on stories260K's GPTQ q4_0 it
 * lowers KLD from 0.0696 to 0.0656). 1 <= n_clip < ELM_GRID_MAX_CANDIDATES. Group grids: one,
 * the scales of llama-quantize's encoder of the type weighted by h (h required for IQ1_S,
 * IQ2_XXS and IQ2_XS, which have no encoder without; IQ1_S's shifts too). TQ1_0, TQ2_0: the
 * RTN step max|x|, and with n_clip > 1 that step times 0.85^i for i < ELM_GRID_MAX_CANDIDATES
 * - 1. */
int elm_grid_candidates(const elm_grid *g, const float *x, const float *h, int n_clip,
                        elm_block_params *out);

/* Group grids (g->group > 1): the codes of the g->group weights x starting at weight j of the
 * block (j a multiple of g->group) under the parameters p, of least Σ h·(x - value)² (h NULL:
 * 1) among the codebook's points and the signs the type can store (elm_iquant_nearest). */
void elm_grid_code_group(const elm_grid *g, const elm_block_params *p, int j, const float *x,
                         const float *h, int8_t *codes);

/* The kq types' part of elm_grid_code. */
int elm_grid_code_kq(const elm_grid *g, const elm_block_params *p, int j, float x);

/* Code of the grid point nearest to x, weight j of its block (clamped to the code range; halves
 * round up). Inline: GPTQ and AWQ call it for every weight and every candidate. The legacy types'
 * quotient x/d is taken in double: in float, ties rounding the other way moved stories260K's AWQ
 * q4_0 --pure from KLD 0.084397 to 0.088443 (512-token calibration; 128-token: unchanged). */
static inline int elm_grid_code(const elm_grid *g, const elm_block_params *p, int j, float x) {
    if (g->kq) return elm_grid_code_kq(g, p, j, x);
    if (p->d == 0) return g->asym ? 0 : g->off;
    const double q = floor((g->asym ? ((double)x - p->m) / p->d : (double)x / p->d + g->off) + 0.5);
    if (!(q > g->qmin)) return g->qmin; /* also NaN */
    if (q > g->qmax) return g->qmax;
    return (int)q;
}

/* Value of code q at weight j of the block, computed exactly as the type's to_float does. */
static inline float elm_grid_value(const elm_grid *g, const elm_block_params *p, int j, int q) {
    if (g->kq) {
        /* the step of weight j's (sub-)block: d times the sub-block's integer scale */
        const float step = g->block > ELM_QK ? p->k.d * (float)p->k.sc[j / g->sub] : p->k.d;
        if (g->levels) return step * (float)g->levels[q];
        const float v = step * (float)(q - g->off);
        return g->asym ? v - p->k.dmin * (float)p->k.mn[j / g->sub] : v;
    }
    if (g->asym) {
        float v = p->d * (float)q;
        return v + p->m;
    }
    return p->d * (float)(q - g->off);
}

/* v[j] = elm_grid_value(g, p, j, elm_grid_code(g, p, j, x[j])) for the g->block weights x of one
 * block: the values of the nearest codes, bit for bit; for the legacy types without branches, so
 * that the loop vectorizes (AWQ's searches call it for every candidate of every block). */
void elm_grid_values(const elm_grid *g, const elm_block_params *p, const float *x, float *v);

/* Writes one block (the type's block_bytes) from its parameters and g->block codes. */
void elm_grid_pack(const elm_grid *g, const elm_block_params *p, const int8_t *codes, void *block);

/* Sum over the block of h[j] * (x[j] - value(code(x[j])))^2: the weighted rounding error that
 * the parameter choice minimises (h = diagonal of the input Hessian, or NULL for 1), in float32. */
float elm_grid_block_error(const elm_grid *g, const elm_block_params *p, const float *x,
                           const float *h);

/* The candidate of elm_grid_candidates with the smallest elm_grid_block_error (the first on
 * ties). */
elm_block_params elm_grid_best_params(const elm_grid *g, const float *x, const float *h,
                                      int n_clip);

#endif
