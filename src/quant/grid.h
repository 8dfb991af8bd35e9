/* The value grid of a ggml 32-weight block type (docs/formats.md, "ggml blocks"): the scale (and min)
 * of a block, the integer code nearest to a weight, the value a code decodes to, and the packing
 * of codes into the block's bytes. GPTQ and AWQ choose codes themselves (error feedback, clipped
 * ranges), so they need the grid as separate steps rather than the all-in-one RTN encoder of the
 * types table; what they write decodes with that table's to_float to exactly elm_grid_value. */
#ifndef EDGELM_QUANT_GRID_H
#define EDGELM_QUANT_GRID_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/types.h"

typedef struct elm_grid {
    elm_type type;
    int qmin, qmax; /* code range */
    int off;        /* symmetric types: value = d * (q - off) */
    bool asym;      /* Q4_1, Q5_1: value = d * q + m */
} elm_grid;

/* Scale d and minimum m of one block, already rounded to f16 (the values decoding uses). */
typedef struct elm_block_params {
    float d, m;
} elm_block_params;

/* The grid of a block type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0); false for float types. */
bool elm_grid_of(elm_type type, elm_grid *g);

/* Block parameters from the 32 weights x by the round-to-nearest rule of the type, with the range
 * shrunk by clip in (0, 1] (1 = the plain RTN range): Q8_0 d = clip*max|x|/127; Q4_0/Q5_0
 * d = clip*x_max/-off with x_max the weight of largest magnitude; Q4_1/Q5_1 the [min, max] range
 * shrunk about its centre by clip, d = range/qmax, m = its low end. */
elm_block_params elm_grid_params(const elm_grid *g, const float *x, float clip);

/* Code of the grid point nearest to x (clamped to the code range; halves round up). Inline and in
 * float: GPTQ and AWQ call it for every weight and every clip candidate. */
static inline int elm_grid_code(const elm_grid *g, elm_block_params p, float x) {
    if (p.d == 0) return g->asym ? 0 : g->off;
    const float t = (g->asym ? (x - p.m) / p.d : x / p.d + (float)g->off) + 0.5f;
    if (!(t >= (float)(g->qmin + 1))) return g->qmin; /* also NaN */
    if (t >= (float)g->qmax) return g->qmax;
    const int q = (int)t; /* truncated: one less below zero (Q8_0's negative codes) */
    return q - (t < (float)q);
}

/* Value of code q, computed exactly as the type's to_float computes it. */
static inline float elm_grid_value(const elm_grid *g, elm_block_params p, int q) {
    if (g->asym) {
        float v = p.d * (float)q;
        return v + p.m;
    }
    return p.d * (float)(q - g->off);
}

/* Writes one block (the type's block_bytes) from its parameters and 32 codes. */
void elm_grid_pack(const elm_grid *g, elm_block_params p, const int8_t *codes, void *block);

/* Sum over the block of h[j] * (x[j] - value(code(x[j])))^2: the weighted rounding error that
 * clip searches minimise (h = diagonal of the input Hessian, or NULL for 1), in float32. d must be
 * non-zero. */
float elm_grid_block_error(const elm_grid *g, elm_block_params p, const float *x, const float *h);

/* The clip in {1, 0.95, ..., 1 - 0.05*(n_clip-1)} whose parameters give the smallest
 * elm_grid_block_error (the first on ties), and those parameters. n_clip >= 1. */
elm_block_params elm_grid_best_params(const elm_grid *g, const float *x, const float *h,
                                      int n_clip);

#endif
