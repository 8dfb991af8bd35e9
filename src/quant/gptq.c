/* GPTQ (gptq.h). Notation of the paper: H the input Hessian, U the upper Cholesky factor of H⁻¹,
 * B = 128 columns per lazy batch. Rows are independent given U, so each row walks the columns of a
 * batch on its own (row-major, cache friendly); the batch's errors then update the remaining
 * columns of all rows with one dgemm. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/gptq.h"

#define GPTQ_BLOCK 128
#define GPTQ_MAX_RAISES 10

/* Columns by descending diag, ties by index (a total order keeps results reproducible). */
static int by_diag_desc(const void *a, const void *b, void *diag) {
    const double *d = diag;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (d[i] != d[j]) return d[i] > d[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* U with (A + λI)⁻¹ = UᵀU, upper triangle of U (row-major), lower zeroed. Returns false when a
 * Cholesky factorization fails or the result is not finite. */
static bool inverse_cholesky(const double *A, int64_t n, double lambda, double *U) {
    memcpy(U, A, sizeof(double) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) U[i * n + i] += lambda;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, U, (lapack_int)n) != 0) return false;
    if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, U, (lapack_int)n) != 0) return false;
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, U, (lapack_int)n) != 0) return false;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t j = 0; j < i; j++) U[i * n + j] = 0;
        if (!isfinite(U[i * n + i]) || !(U[i * n + i] > 0)) return false;
    }
    return true;
}

static void block_params(const elm_grid *g, const double *w, const double *h, int n_clip,
                         elm_block_params *out) {
    float x[ELM_QK];
    for (int j = 0; j < ELM_QK; j++) x[j] = (float)w[j];
    *out = elm_grid_best_params(g, x, h, n_clip);
}

elm_status elm_gptq(const elm_grid *g, const char *name, double *W, int64_t rows, int64_t cols,
                    double *H, const elm_gptq_opts *o, int8_t *codes, elm_block_params *params,
                    float *q, elm_gptq_result *res, elm_error *err) {
    const int64_t n = cols, nblk = cols / ELM_QK;
    memset(res, 0, sizeof *res);
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    double *dh = malloc(sizeof *dh * (size_t)n);
    double *Hp = malloc(sizeof *Hp * (size_t)(n * n));
    double *U = malloc(sizeof *U * (size_t)(n * n));
    double *Wp = malloc(sizeof *Wp * (size_t)(rows * n));
    double *Err = malloc(sizeof *Err * (size_t)(rows * GPTQ_BLOCK));
    elm_status st = ELM_OK;
    if (!perm || !dh || !Hp || !U || !Wp || !Err) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for GPTQ of '%s'", name);
        goto done;
    }
    for (int64_t j = 0; j < n; j++) {
        if (H[j * n + j] == 0) {
            /* never active: nothing to compensate there; a unit diagonal keeps H invertible, and
             * the weights are zeroed (as the GPTQ reference does) so that block scales come from
             * the live columns rather than from weights no calibration input ever multiplies */
            H[j * n + j] = 1;
            for (int64_t r = 0; r < rows; r++) W[r * n + j] = 0;
            res->dead++;
        }
        dh[j] = H[j * n + j];
        perm[j] = j;
    }
    if (o->act_order) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nblk; b++)
                block_params(g, W + r * n + b * ELM_QK, dh + b * ELM_QK, o->n_clip,
                             &params[r * nblk + b]);
        qsort_r(perm, (size_t)n, sizeof *perm, by_diag_desc, dh);
    }
    double mean_diag = 0;
    for (int64_t i = 0; i < n; i++) {
        mean_diag += dh[i];
        for (int64_t j = 0; j < n; j++) Hp[i * n + j] = H[perm[i] * n + perm[j]];
    }
    mean_diag /= (double)n;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) Wp[r * n + i] = W[r * n + perm[i]];

    res->damp = o->damp;
    /* A Hessian that is not positive definite (fewer independent calibration inputs than
     * columns) leaves directions the calibration never saw, into which the error feedback would
     * push the rounding errors unchecked: start those at a tenfold damping. */
    memcpy(U, Hp, sizeof(double) * (size_t)(n * n));
    if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)n, U, (lapack_int)n) != 0) {
        res->damp *= 10;
        res->raised++;
    }
    while (!inverse_cholesky(Hp, n, res->damp * mean_diag, U)) {
        if (res->raised == GPTQ_MAX_RAISES || !isfinite(mean_diag)) {
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "'%s': input Hessian cannot be factored even with damping %g",
                            name, res->damp);
            goto done;
        }
        res->damp *= 10;
        res->raised++;
    }

    for (int64_t i1 = 0; i1 < n; i1 += GPTQ_BLOCK) {
        const int64_t i2 = i1 + GPTQ_BLOCK < n ? i1 + GPTQ_BLOCK : n, nb = i2 - i1;
        for (int64_t r = 0; r < rows; r++) {
            double *w = Wp + r * n;
            for (int64_t i = i1; i < i2; i++) {
                const int64_t col = perm[i], b = col / ELM_QK;
                elm_block_params *p = &params[r * nblk + b];
                if (!o->act_order && col % ELM_QK == 0) block_params(g, w + i, dh + i, o->n_clip, p);
                const int c = elm_grid_code(g, *p, (float)w[i]);
                const float v = elm_grid_value(g, *p, c);
                codes[r * n + col] = (int8_t)c;
                q[r * n + col] = v;
                const double e = (w[i] - v) / U[i * n + i];
                Err[r * nb + (i - i1)] = e;
                for (int64_t j = i + 1; j < i2; j++) w[j] -= e * U[i * n + j];
            }
        }
        if (i2 < n)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)(n - i2), (int)nb,
                        -1.0, Err, (int)nb, U + i1 * n + i2, (int)n, 1.0, Wp + i2, (int)n);
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) W[r * n + perm[i]] = Wp[r * n + i];
done:
    free(perm);
    free(dh);
    free(Hp);
    free(U);
    free(Wp);
    free(Err);
    return st;
}
