/* GPTQ (gptq.h). Notation of the paper: H the (damped) input Hessian, U the upper Cholesky factor
 * of H⁻¹ = UᵀU, B = 128 columns per lazy batch. The paper pushes column i's scaled error
 * (w_i - q_i)/U_ii into the later columns through row i of U, with U from an inverse and a second
 * factorization. Here U = V⁻¹ with H = VVᵀ, V upper: one Cholesky factorization of H (with the
 * index reversed) and one triangular inverse, a third less arithmetic and no full inverse. The
 * feedback is the paper's, errors against the updated weights: the equal form with errors against
 * the original weights through V·diag(V)⁻¹ (no triangular inverse at all) lost accuracy in float32
 * (stories260K GPTQ q4_0 --pure KLD 0.0667 against 0.0644, q4_k_m with 8 samples worse than RTN).
 * Rows are independent, so each row walks the columns of a batch on its own (row-major, cache
 * friendly; the rows split over the threads); the batch's errors then update the remaining
 * columns of all rows with one sgemm. float32 throughout, as in the paper's reference code. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "edgelm/system.h"
#include "quant/gptq.h"

#define GPTQ_BLOCK 128
#define GPTQ_SUB 32
_Static_assert(ELM_QK_K % GPTQ_BLOCK == 0 && GPTQ_BLOCK % GPTQ_SUB == 0 && GPTQ_SUB % ELM_QK == 0,
               "a type block starts a batch or lies within a sub-batch");
#define GPTQ_MAX_RAISES 10

/* Columns by descending diag, ties by index (a total order keeps results reproducible). */
static int by_diag_desc(const void *a, const void *b, void *diag) {
    const double *d = diag;
    int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
    if (d[i] != d[j]) return d[i] > d[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Reverses the order of both indices of the n x n matrix a (a[i][j] <-> a[n-1-i][n-1-j]), which
 * is the reversal of its n² elements. */
static void reverse(float *a, int64_t n) {
    for (int64_t k = 0, l = n * n - 1; k < l; k++, l--) {
        const float t = a[k];
        a[k] = a[l];
        a[l] = t;
    }
}

/* The factor of the error feedback: with J the index reversal and L the Cholesky factor of
 * J(A + λI)J, A + λI = VVᵀ with V = JLJ upper (one spotrf), and U = V⁻¹ (strtri) the upper
 * Cholesky factor of (A + λI)⁻¹. Writes Vt = -diag(U)⁻¹·U off the diagonal, 1 on it (row-major,
 * lower zeroed): row i is how column i's error moves the later columns. Returns false when the
 * factorization fails or the result is not finite. LAPACK is called column-major on the
 * row-major arrays, with the triangles named the other way round (a row-major lower triangle is
 * a column-major upper one): LAPACKE's row-major entry points copy each matrix transposed in and
 * out, which took as long as the factorization itself. */
static bool feedback_factor(const float *A, int64_t n, float lambda, float *Vt) {
    memcpy(Vt, A, sizeof(float) * (size_t)(n * n));
    for (int64_t i = 0; i < n; i++) Vt[i * n + i] += lambda;
    reverse(Vt, n);
    if (LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', (lapack_int)n, Vt, (lapack_int)n) != 0) return false;
    reverse(Vt, n);
    if (LAPACKE_strtri(LAPACK_COL_MAJOR, 'L', 'N', (lapack_int)n, Vt, (lapack_int)n) != 0) return false;
    for (int64_t i = 0; i < n; i++) {
        const float d = Vt[i * n + i];
        if (!isfinite(d) || !(d > 0)) return false;
        for (int64_t j = 0; j < i; j++) Vt[i * n + j] = 0;
        for (int64_t j = i + 1; j < n; j++) {
            Vt[i * n + j] = -Vt[i * n + j] / d;
            if (!isfinite(Vt[i * n + j])) return false;
        }
        Vt[i * n + i] = 1;
    }
    return true;
}

/* The column walk of one matrix, rows split over the threads. */
typedef struct walk {
    const elm_grid *g;
    const elm_gptq_opts *o;
    const int64_t *perm;
    const float *dh;
    const float *Vt;
    float *Wp, *Err, *q;
    int8_t *codes;
    elm_block_params *params;
    int64_t rows, n;
    bool act_order; /* o->act_order where the grid allows it */
} walk;

/* Columns [i1, i2) of rows [r0, r1): codes, values and the scaled errors Err [rows of the range,
 * ld] (column i at i - i1), each error fed forward within [i1, i2) through its row of Vt. */
static void walk_cols(const walk *k, int64_t r0, int64_t r1, int64_t i1, int64_t i2, float *Err,
                      int64_t ld) {
    const int64_t n = k->n, nblk = n / k->g->block;
    for (int64_t r = r0; r < r1; r++) {
        float *w = k->Wp + r * n;
        for (int64_t i = i1; i < i2; i++) {
            const int64_t col = k->perm[i];
            const int j = (int)(col % k->g->block);
            elm_block_params *p = &k->params[r * nblk + col / k->g->block];
            /* a super-block's scales come from all its columns as the batches before this one
             * left them: it starts a batch (ELM_QK_K is a multiple of GPTQ_BLOCK) */
            if (!k->act_order && j == 0)
                *p = elm_grid_best_params(k->g, w + i, k->dh + i, k->o->n_clip);
            /* a group grid's codes for the group this column starts, from the weights as the
             * errors of the columns before it left them (its columns are consecutive: no
             * act_order); each of its columns' errors then moves the rest of the group too */
            if (k->g->group > 1 && j % k->g->group == 0)
                elm_grid_code_group(k->g, p, j, w + i, k->dh + i, k->codes + r * n + col);
            const int c = k->g->group > 1 ? k->codes[r * n + col] : elm_grid_code(k->g, p, j, w[i]);
            const float v = elm_grid_value(k->g, p, j, c);
            k->codes[r * n + col] = (int8_t)c;
            k->q[r * n + col] = v;
            /* the error against the updated weight: its feedback through row i of Vt */
            const float e = w[i] - v, *u = k->Vt + i * n;
            Err[(r - r0) * ld + (i - i1)] = e;
            for (int64_t c2 = i + 1; c2 < i2; c2++) w[c2] += e * u[c2];
        }
    }
}

/* Thread ith's rows through all the batches. Each batch in sub-batches of 32 columns: the scalar
 * walk feeds its errors forward within the sub-batch only, one sgemm takes them to the rest of the
 * batch, and one to the columns after it (the paper's lazy batch, nested once more). Rows are
 * independent, so the threads never wait for each other, and each runs its own single-threaded
 * sgemm: with BLAS's threads as well, its idle workers spun on the cores the walks needed. */
static void walk_rows(void *arg, int ith, int nth) {
    const walk *k = arg;
    const int64_t n = k->n;
    long r0, r1;
    elm_split((long)k->rows, ith, nth, &r0, &r1);
    const int nr = (int)(r1 - r0);
    if (nr == 0) return;
    float *Wp = k->Wp + r0 * n;
    for (int64_t i1 = 0; i1 < n; i1 += GPTQ_BLOCK) {
        const int64_t i2 = i1 + GPTQ_BLOCK < n ? i1 + GPTQ_BLOCK : n, nb = i2 - i1;
        float *Err = k->Err + r0 * nb; /* this thread's rows of the batch's errors [rows, nb] */
        for (int64_t s1 = i1; s1 < i2; s1 += GPTQ_SUB) {
            const int64_t s2 = s1 + GPTQ_SUB < i2 ? s1 + GPTQ_SUB : i2;
            walk_cols(k, r0, r1, s1, s2, Err + (s1 - i1), nb);
            if (s2 < i2)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, (int)(i2 - s2),
                            (int)(s2 - s1), 1.0f, Err + (s1 - i1), (int)nb, k->Vt + s1 * n + s2,
                            (int)n, 1.0f, Wp + s2, (int)n);
        }
        if (i2 < n)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, (int)(n - i2), (int)nb,
                        1.0f, Err, (int)nb, k->Vt + i1 * n + i2, (int)n, 1.0f, Wp + i2, (int)n);
    }
}

elm_status elm_gptq(const elm_grid *g, const char *name, float *W, int64_t rows, int64_t cols,
                    const float *H, const elm_gptq_opts *o, int8_t *codes, elm_block_params *params,
                    float *q, elm_gptq_result *res, elm_error *err) {
    const int64_t n = cols, nblk = cols / g->block;
    memset(res, 0, sizeof *res);
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    double *dh = malloc(sizeof *dh * (size_t)n);
    float *dhf = malloc(sizeof *dhf * (size_t)n);
    float *Hp = malloc(sizeof *Hp * (size_t)(n * n));
    float *Vt = malloc(sizeof *Vt * (size_t)(n * n));
    float *Wp = malloc(sizeof *Wp * (size_t)(rows * n));
    float *Err = malloc(sizeof *Err * (size_t)(rows * GPTQ_BLOCK));
    elm_pool *pool = NULL;
    elm_status st = ELM_OK;
    if (!perm || !dh || !dhf || !Hp || !Vt || !Wp || !Err) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for GPTQ of '%s'", name);
        goto done;
    }
    if ((st = elm_pool_new(o->n_threads > 0 ? o->n_threads : elm_online_cores(), &pool, err))) goto done;
    for (int64_t j = 0; j < n; j++) {
        dh[j] = H[j * n + j];
        if (dh[j] == 0) {
            /* never active: nothing to compensate there; a unit diagonal keeps H invertible, and
             * the weights are zeroed (as the GPTQ reference does) so that block scales come from
             * the live columns rather than from weights no calibration input ever multiplies */
            dh[j] = 1;
            for (int64_t r = 0; r < rows; r++) W[r * n + j] = 0;
            res->dead++;
        }
        dhf[j] = (float)dh[j];
        perm[j] = j;
    }
    /* a group grid's groups are runs of consecutive columns, which a permutation would split */
    const bool act_order = o->act_order && g->group == 1;
    if (act_order) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nblk; b++)
                params[r * nblk + b] = elm_grid_best_params(g, W + r * n + b * g->block,
                                                            dhf + b * g->block, o->n_clip);
        qsort_r(perm, (size_t)n, sizeof *perm, by_diag_desc, dh);
    }
    double mean_diag = 0;
    for (int64_t i = 0; i < n; i++) {
        mean_diag += dh[i];
        for (int64_t j = 0; j < n; j++) Hp[i * n + j] = H[perm[i] * n + perm[j]];
        Hp[i * n + i] = (float)dh[perm[i]];
    }
    mean_diag /= (double)n;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) Wp[r * n + i] = W[r * n + perm[i]];

    res->damp = o->damp;
    /* A Hessian that is not positive definite (fewer independent calibration inputs than
     * columns) leaves directions the calibration never saw, into which the error feedback would
     * push the rounding errors unchecked: start those at a tenfold damping. With fewer inputs
     * (plus the unit diagonals of dead channels) than columns its rank says so without a
     * factorization. */
    bool definite = !(o->n_inputs > 0 && o->n_inputs + res->dead < n);
    if (definite) {
        memcpy(Vt, Hp, sizeof(float) * (size_t)(n * n));
        definite = LAPACKE_spotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, Vt, (lapack_int)n) == 0;
    }
    if (!definite) {
        res->damp *= 10;
        res->raised++;
    }
    while (!feedback_factor(Hp, n, (float)(res->damp * mean_diag), Vt)) {
        if (res->raised == GPTQ_MAX_RAISES || !isfinite(mean_diag)) {
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "'%s': input Hessian cannot be factored even with damping %g",
                            name, res->damp);
            goto done;
        }
        res->damp *= 10;
        res->raised++;
    }

    walk k = {g, o, perm, dhf, Vt, Wp, Err, q, codes, params, rows, n, act_order};
    const int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    elm_pool_run(pool, walk_rows, &k);
    openblas_set_num_threads(blas_threads);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) W[r * n + perm[i]] = Wp[r * n + i];
done:
    elm_pool_free(pool);
    free(perm);
    free(dh);
    free(dhf);
    free(Hp);
    free(Vt);
    free(Wp);
    free(Err);
    return st;
}
