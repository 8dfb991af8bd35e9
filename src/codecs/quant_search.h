/* The scale searches behind ggml's k-quant, i-quant and importance-weighted encoders (llama.cpp's
 * ggml-quants.c: nearest_int, make_qx_quants, make_q3_quants, make_qkx2/3_quants, make_qp_quants,
 * best_index_int8), shared by kquant_encode.c and quant_weighted.c. Their float operations are
 * done in the reference order, term by term, so that the encoders write llama-quantize's bytes;
 * this relies on no FMA contraction (GCC's default in ISO C mode, which the build uses). */
#ifndef EDGELM_CODECS_QUANT_SEARCH_H
#define EDGELM_CODECS_QUANT_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/clones.h"

/* The searches' lane loops are written for the compiler to vectorize. On x86 Linux they are also
 * built for AVX2 and AVX-512 (core/clones.h), where the baseline build's SSE2 gives 4 lanes;
 * -ffp-contract=off keeps each lane's operations those of the scalar code, so every version
 * writes the same bytes. */
#define ELM_SEARCH_CLONES ELM_CLONES("avx512f", "avx2", "default")

/* Amax below which a group counts as all zeros. */
#define ELM_GROUP_EPS 1e-15f

/* Round to nearest, ties to even, for |v| < 2^22 (ggml's nearest_int: adding 1.5·2^23 leaves the
 * rounded integer in the low mantissa bits). Outside that range the result is unspecified but
 * defined. */
static inline int elm_nearest_int(float v) {
    const float f = v + 12582912.f;
    int32_t i;
    memcpy(&i, &f, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* Lanes of the neighbour-list searches of the lattice i-quants: lists are padded to a multiple. */
enum { ELM_NB_LANES = 8 };

/* The place of the first d[j] strictly below FLT_MAX and every earlier d (a sequential scan's
 * `if (d[j] < best)` from best = FLT_MAX), or -1 when none is; n a multiple of ELM_NB_LANES. The
 * least by lanes, in a loop the compiler vectorizes, then its first place: the same answer for
 * any floats, NaN included (never taken); +0 and -0 tie, as in the scan. */
static inline int elm_first_least(const float *d, int n) {
    float lane[ELM_NB_LANES], best = 3.40282347e38f;
    for (int k = 0; k < ELM_NB_LANES; k++) lane[k] = best;
    for (int j = 0; j < n; j += ELM_NB_LANES)
        for (int k = 0; k < ELM_NB_LANES; k++) lane[k] = d[j + k] < lane[k] ? d[j + k] : lane[k];
    for (int k = 0; k < ELM_NB_LANES; k++) best = lane[k] < best ? lane[k] : best;
    if (!(best < 3.40282347e38f)) return -1;
    int j = 0;
    while (d[j] != best) j++;
    return j;
}

/* Symmetric codes L[i] = l + nmax, l in [-nmax, nmax-1], for n values x, with the scale that
 * minimises Σ w·(x - scale·l)², w = qw[i] (or x² when qw is NULL), over 19 candidate inverse
 * scales (nmax + 0.1·k)/-max, k = -9..9; n <= 32. Returns the scale (0 for an all-zero group). */
float elm_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *qw);

/* Q3_K's variant: w = x², after the first rounding up to 5 rounds of moving single codes while
 * that lowers the error. L[i] = l + nmax. */
float elm_make_q3_quants(int n, int nmax, const float *x, int8_t *L);

/* Largest group count and group size of elm_make_qkx_quants. */
enum { ELM_QKX_MAX_GROUPS = 16, ELM_QKX_MAX_N = 32 };

/* Asymmetric codes for each of ng groups of n values (group j: x[n·j ..], weights w[n·j ..]):
 * L[n·j + i] in [0, nmax] with x ≈ scale[j]·L - neg_min[j] (neg_min[j] >= 0), the weighted error
 * (|d| when use_mad, else d²) minimised over nstep+1 inverse scales (rmin + rdelta·k + nmax) /
 * (max - min), each followed by a weighted least-squares fit of scale and min
 * (make_qkx2_quants and make_qkx3_quants with weights, group by group). ng <=
 * ELM_QKX_MAX_GROUPS, n <= ELM_QKX_MAX_N. */
void elm_make_qkx_quants(int ng, int n, int nmax, const float *x, const float *w, uint8_t *L,
                         float *scale, float *neg_min, float rmin, float rdelta, int nstep,
                         bool use_mad);

/* Codes L[i] in [0, nmax] of the non-negative values x (sub-block scales or mins), weighted by
 * qw, as make_qp_quants: 9 candidate scales, then up to 5 rounds of single-code moves. Returns
 * the scale. */
float elm_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *qw);

/* Index of the entry of the ascending table val[n] nearest to x (the upper one on ties), as
 * ggml's best_index_int8 (a binary search) returns it. */
int elm_best_index_int8(int n, const int8_t *val, float x);

/* elm_best_index_int8(nval, val, x[j]) into idx[j] for n values at once (nval <= 256). */
void elm_best_index_int8_n(int nval, const int8_t *val, int n, const float *x, uint8_t *idx);

#endif
