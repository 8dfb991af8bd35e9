/* The error figures of a quantized linear (edgelm/quant.h: err_before, err_after): relative output
 * error on the calibration inputs, Σ_r e_rᵀ H e_r / Σ_r w_rᵀ H w_r with H = 2·Σ x xᵀ, of
 * round-to-nearest and of the method. Measured on a sample of the rows (every stride-th, at most
 * ELM_ERR_ROWS of them, all of a linear with fewer): one product of the sample's three row sets
 * with H costs 2·3·ELM_ERR_ROWS·cols² flops, while over all rows the three would cost 6·rows·cols²,
 * more than GPTQ itself (rows·cols² for its error feedback). */
#ifndef EDGELM_QUANT_ERRFIG_H
#define EDGELM_QUANT_ERRFIG_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/types.h"

#define ELM_ERR_ROWS 128

typedef struct elm_err_sample {
    int64_t rows, cols, stride, n; /* rows 0, stride, 2·stride, ...: n of them */
    float *S;                      /* [3n, cols]: the original weights, their round-to-nearest
                                    * error, the method's error */
    float *panel, *SH, *row;       /* scratch */
} elm_err_sample;

/* Allocates the sample of a [rows, cols] linear; false when out of memory (e is then freed). */
bool elm_err_sample_init(elm_err_sample *e, int64_t rows, int64_t cols);
void elm_err_sample_free(elm_err_sample *e);

/* Takes the sampled rows of the original weights w [rows, cols] and their round-to-nearest error
 * at `type`: the types table's from_float, or with importances qw [cols] (may be NULL) the
 * type's weighted encoder (elm_encode_row), then to_float. */
void elm_err_sample_weights(elm_err_sample *e, elm_type type, const float *w, const float *qw);

/* Takes the method's error: original weight minus values[r, c] · rs[r] / cs[c] (rs, cs NULL for
 * 1: AWQ's values are in scaled coordinates). */
void elm_err_sample_values(elm_err_sample *e, const float *values, const double *rs,
                           const double *cs);

/* quad[k] = Σ over the sample's row set k of e_rᵀ H e_r, H [cols, cols] symmetric: one sgemm per
 * panel of ELM_ERR_PANEL columns of H, sums in float64. */
#define ELM_ERR_PANEL 256
void elm_err_sample_quads(elm_err_sample *e, const float *H, double quad[3]);

#endif
