/* GPTQ for one linear layer (Frantar et al. 2022, arXiv:2210.17323, Algorithm 1) on a ggml
 * block grid. */
#ifndef EDGELM_QUANT_GPTQ_H
#define EDGELM_QUANT_GPTQ_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/error.h"
#include "quant/grid.h"

typedef struct elm_gptq_opts {
    double damp;    /* λ = damp · mean(diag H) added to the diagonal (paper: 1%) */
    bool act_order; /* columns by descending diag H; block scales fixed beforehand (not for
                     * group grids, whose groups are consecutive columns) */
    int n_clip;     /* n_clip of elm_grid_best_params (1 = the RTN rule) */
    int n_threads;  /* threads for the column walk of a batch (rows split); BLAS has its own */
    int64_t n_inputs; /* input vectors H was summed from (0: unknown): fewer than the columns
                       * means H is singular, known without factoring it */
} elm_gptq_opts;

typedef struct elm_gptq_result {
    double damp;  /* the damping that factored */
    int raised;   /* times it was raised (x10 each) */
    int64_t dead; /* input channels with H_ii = 0 */
} elm_gptq_result;

/* Quantizes W [rows, cols] (row-major, float32, cols a multiple of g->block; overwritten by the
 * error-updated weights) given its input Hessian H [cols, cols] (symmetric, 2·XᵀX, float32 as
 * captured; not modified). The factorization and the error feedback run
 * in float32 (as the paper's reference code does): one LAPACK spotrf and one strtri (gptq.c says
 * why no full inverse is needed), one sgemm per batch.
 * Dead channels (H_ii = 0) are taken as H_ii = 1 and their weights set to 0 (reference GPTQ). The Cholesky
 * factor U of (H + λI)⁻¹ = UᵀU drives the
 * error feedback: columns in batches of 128, each column's rounding error pushed into
 * the rest of its batch at once and into later batches by one matrix product per batch. A
 * type block's parameters (scale and min; a super-block's f16 scales and sub-block scales and
 * mins) come from the error-updated weights when the pass reaches its first column, or with
 * act_order from the original weights before the pass: among the candidates of
 * elm_grid_candidates (n_clip shrunk ranges, or the type's reference encoder, and its
 * importance-weighted search with diag(H) as the importance) the one with the least
 * diag(H)-weighted rounding error is taken; each column is then rounded to the nearest code under
 * those fixed parameters; a group grid's (the lattice i-quants) g->group columns at once when
 * the pass reaches the first of them: the codebook point (and signs) nearest, weighted by
 * diag(H), to the weights as the errors fed forward so far left them, each of its columns'
 * errors then fed forward in turn as for single columns. When H itself is not positive definite
 * (rank-deficient: fewer independent inputs than columns) the damping starts 10x higher, and when
 * a factorization of the damped H fails it is raised x10 and redone (up to 10 times).
 * Writes codes [rows, cols] and params [rows, cols/g->block] in the original column order, and q
 * [rows, cols], the values they decode to. ELM_ERR_FORMAT naming `name` if H cannot be factored
 * (non-finite H), ELM_ERR_NOMEM. */
elm_status elm_gptq(const elm_grid *g, const char *name, float *W, int64_t rows, int64_t cols,
                    const float *H, const elm_gptq_opts *o, int8_t *codes, elm_block_params *params,
                    float *q, elm_gptq_result *res, elm_error *err);

#endif
