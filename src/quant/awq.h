/* AWQ, activation-aware weight quantization (Lin et al. 2023, arXiv:2306.00978, section 3.2):
 * the per-input-channel scale search of a group of linears sharing an input, and the clipping
 * search that quantizes one scaled linear. Errors are measured on the calibration inputs through
 * their Hessian H = 2·Σ x xᵀ, so no activations are stored: ‖(W - Ŵ)X‖² = ½ Σ_r e_rᵀ H e_r,
 * summed over the 32-weight blocks (sub-blocks of a super-block type's 256) with H's 32 x 32
 * diagonal blocks (float32, one sgemm per block and chunk of rows). The cross-block terms pair
 * rounding errors of different blocks, which are independent and average out; dropping them
 * costs rows·cols·32 per candidate instead of rows·cols² (for a 2048 x 5632 matrix, 176x less)
 * and chose scales as good as the full sum on the fixture (q4_0 KLD 0.0825 vs 0.0850, q4_1
 * 0.0674 vs 0.0647). */
#ifndef EDGELM_QUANT_AWQ_H
#define EDGELM_QUANT_AWQ_H

#include <stdint.h>
#include "edgelm/error.h"
#include "quant/grid.h"

#define ELM_AWQ_GRID 20 /* α candidates i/19, i = 0..19: [0, 1] in 20 points */
#define ELM_AWQ_CLIP 10 /* clip candidates 1, 0.95, ..., 0.55 (range shrunk by up to 45%) */

typedef struct elm_awq_linear {
    const float *w;      /* [rows, cols] weights as in the model */
    int64_t rows;
    const elm_grid *g;   /* its block grid, NULL when it is not written as a block type */
} elm_awq_linear;

/* Scales s [cols] for the linears lin [n_lin] reading one input with mean |x| abs_mean [cols]
 * and Hessian H [cols, cols]: s = abs_mean^α normalised by sqrt(max s · min s) over live
 * channels (dead channels, mean |x| = 0, get 1), α from ELM_AWQ_GRID minimising the summed
 * block output error of round-to-nearest Q(W·diag s)·diag(1/s). *alpha receives the chosen α.
 * The rows go over n_threads threads (0: all online cores); the result does not depend on how many.
 * ELM_ERR_NOMEM. */
elm_status elm_awq_search(const elm_awq_linear *lin, int32_t n_lin, int64_t cols, const float *H,
                          const double *abs_mean, int n_threads, double *s, double *alpha,
                          elm_error *err);

/* The 32 x 32 diagonal blocks of the Hessian H [cols, cols] in the coordinates scaled by cs
 * (H_ij / (cs_i cs_j); cs NULL for 1), rounded to float32: hb [cols / 32][32][32]. */
void elm_awq_diag_blocks(const float *H, int64_t cols, const double *cs, float *hb);

/* Quantizes the scaled weights ws [rows, cols] whose input Hessian's diagonal blocks (in the scaled
 * coordinates) are hb (elm_awq_diag_blocks): for each type block, the candidate of
 * elm_grid_candidates (the ELM_AWQ_CLIP clips of a legacy type; a kq type's reference encoder and
 * its search weighted by the diagonal of hb) whose parameters minimise the block's output error
 * Σ Δ H_bb Δᵀ over its 32-weight parts (the first on ties), then nearest codes. Writes codes
 * [rows, cols], params [rows, cols/g->block] and their values q [rows, cols]. Threads as
 * elm_awq_search. ELM_ERR_NOMEM. */
elm_status elm_awq_clip_quantize(const elm_grid *g, const float *ws, int64_t rows, int64_t cols,
                                 const float *hb, int n_threads, int8_t *codes,
                                 elm_block_params *params, float *q, elm_error *err);

#endif
