/* AWQ scale and clipping searches (awq.h). Both measure candidates by the block output error
 * Σ_b Δ_b H_bb Δ_bᵀ: the weight errors of a chunk of rows are formed for a candidate, then each
 * 32-column block's errors are multiplied by that block's H_bb with one sgemm (chunk x 32 x 32),
 * rather than a scalar quadratic form per row and block. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/awq.h"

#define AWQ_CHUNK 256 /* rows whose errors are formed at once */

void elm_awq_diag_blocks(const float *H, int64_t cols, const double *cs, float *hb) {
    for (int64_t b0 = 0; b0 < cols; b0 += ELM_QK)
        for (int i = 0; i < ELM_QK; i++)
            for (int j = 0; j < ELM_QK; j++) {
                const double h = H[(b0 + i) * cols + b0 + j];
                hb[b0 * ELM_QK + i * ELM_QK + j] =
                    (float)(cs ? h / (cs[b0 + i] * cs[b0 + j]) : h);
            }
}

/* out[r * nblk + b] = Σ over the 32-weight parts of type block b (block weights from column
 * b·block) of Δ H_bb Δᵀ, for the n_rows rows of the errors D [n_rows, cols]. */
static void block_errors(const float *D, int64_t n_rows, int64_t cols, int block, const float *hb,
                         float *T, double *out) {
    const int64_t nblk = cols / block;
    for (int64_t k = 0; k < n_rows * nblk; k++) out[k] = 0;
    for (int64_t c0 = 0; c0 < cols; c0 += ELM_QK) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n_rows, ELM_QK, ELM_QK, 1.0f,
                    D + c0, (int)cols, hb + c0 * ELM_QK, ELM_QK, 0.0f, T, ELM_QK);
        for (int64_t r = 0; r < n_rows; r++) {
            double e = 0;
            for (int j = 0; j < ELM_QK; j++) e += (double)T[r * ELM_QK + j] * D[r * cols + c0 + j];
            out[r * nblk + c0 / block] += e;
        }
    }
}

typedef struct scratch {
    float *D, *T;
    double *err;
} scratch;

static bool scratch_new(scratch *s, int64_t cols) {
    s->D = malloc(sizeof(float) * AWQ_CHUNK * (size_t)cols);
    s->T = malloc(sizeof(float) * AWQ_CHUNK * ELM_QK);
    s->err = malloc(sizeof(double) * AWQ_CHUNK * (size_t)(cols / ELM_QK));
    return s->D && s->T && s->err;
}

static void scratch_free(scratch *s) {
    free(s->D);
    free(s->T);
    free(s->err);
}

/* Output error of round-to-nearest Q(w·s)/s over the rows of one linear. */
static double linear_error(const elm_awq_linear *lin, const double *s, int64_t cols,
                           const float *hb, scratch *sc) {
    const elm_grid *g = lin->g;
    const int64_t nblk = cols / g->block;
    double total = 0;
    float x[ELM_QK_K];
    for (int64_t r0 = 0; r0 < lin->rows; r0 += AWQ_CHUNK) {
        const int64_t nr = lin->rows - r0 < AWQ_CHUNK ? lin->rows - r0 : AWQ_CHUNK;
        for (int64_t r = 0; r < nr; r++) {
            const float *w = lin->w + (r0 + r) * cols;
            for (int64_t b = 0; b < cols; b += g->block) {
                for (int j = 0; j < g->block; j++) x[j] = (float)(w[b + j] * s[b + j]);
                const elm_block_params p = elm_grid_best_params(g, x, NULL, 1);
                for (int j = 0; j < g->block; j++)
                    sc->D[r * cols + b + j] =
                        (float)(w[b + j] - elm_grid_value(g, &p, j, elm_grid_code(g, &p, j, x[j])) / s[b + j]);
            }
        }
        block_errors(sc->D, nr, cols, g->block, hb, sc->T, sc->err);
        for (int64_t k = 0; k < nr * nblk; k++) total += sc->err[k];
    }
    return total;
}

elm_status elm_awq_search(const elm_awq_linear *lin, int32_t n_lin, int64_t cols, const float *H,
                          const double *abs_mean, double *s, double *alpha, elm_error *err) {
    double *cand = malloc(sizeof *cand * (size_t)cols);
    float *hb = malloc(sizeof *hb * (size_t)cols * ELM_QK);
    scratch sc;
    const bool ok = scratch_new(&sc, cols);
    if (!cand || !hb || !ok) {
        free(cand);
        free(hb);
        scratch_free(&sc);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ scale search");
    }
    elm_awq_diag_blocks(H, cols, NULL, hb);
    double best = INFINITY;
    *alpha = 0;
    for (int64_t j = 0; j < cols; j++) s[j] = 1;
    for (int i = 0; i < ELM_AWQ_GRID; i++) {
        const double a = (double)i / (ELM_AWQ_GRID - 1);
        double lo = INFINITY, hi = 0;
        for (int64_t j = 0; j < cols; j++) {
            if (abs_mean[j] <= 0) continue;
            cand[j] = fmax(pow(abs_mean[j], a), 1e-4);
            lo = fmin(lo, cand[j]);
            hi = fmax(hi, cand[j]);
        }
        const double norm = hi > 0 ? sqrt(lo * hi) : 1;
        for (int64_t j = 0; j < cols; j++) cand[j] = abs_mean[j] > 0 ? cand[j] / norm : 1;
        double total = 0;
        for (int32_t k = 0; k < n_lin; k++)
            if (lin[k].g) total += linear_error(&lin[k], cand, cols, hb, &sc);
        if (total < best) {
            best = total;
            *alpha = a;
            memcpy(s, cand, sizeof *s * (size_t)cols);
        }
    }
    free(cand);
    free(hb);
    scratch_free(&sc);
    return ELM_OK;
}

/* diag of the Hessian for the block of columns b0.. from its diagonal blocks hb, into h [block] */
static void block_diag(const float *hb, int64_t b0, int block, float *h) {
    for (int j = 0; j < block; j++) {
        const int64_t c = b0 + j;
        h[j] = hb[(c - c % ELM_QK) * ELM_QK + (c % ELM_QK) * (ELM_QK + 1)];
    }
}

elm_status elm_awq_clip_quantize(const elm_grid *g, const float *ws, int64_t rows, int64_t cols,
                                 const float *hb, int8_t *codes, elm_block_params *params, float *q,
                                 elm_error *err) {
    const int64_t nblk = cols / g->block;
    float h[ELM_QK_K];
    elm_block_params first[ELM_GRID_MAX_CANDIDATES];
    /* the legacy types keep their clips alone: with the weighted search too, stories260K's
     * AWQ q4_0 goes from KLD 0.0825 to 0.0721, but one of cli_quant_interop's greedy
     * continuations then flips at a step where edgelm and llama.cpp already differ by
     * 0.05 in logits on that model (--ggml-rounding; wide256 agrees to 1e-6) */
    const bool weighted = g->kq;
    block_diag(hb, 0, g->block, h);
    /* how many candidates a block has depends on the type alone */
    const int n_cand = elm_grid_candidates(g, ws, weighted ? h : NULL, ELM_AWQ_CLIP, first);
    scratch sc;
    double *best_err = malloc(sizeof(double) * AWQ_CHUNK * (size_t)nblk);
    elm_block_params *cand = malloc(sizeof *cand * AWQ_CHUNK * (size_t)nblk * (size_t)n_cand);
    if (!scratch_new(&sc, cols) || !best_err || !cand) {
        scratch_free(&sc);
        free(best_err);
        free(cand);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ clipping search");
    }
    for (int64_t r0 = 0; r0 < rows; r0 += AWQ_CHUNK) {
        const int64_t nr = rows - r0 < AWQ_CHUNK ? rows - r0 : AWQ_CHUNK;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t b = 0; b < nblk; b++) {
                if (weighted) block_diag(hb, b * g->block, g->block, h);
                elm_grid_candidates(g, ws + (r0 + r) * cols + b * g->block, weighted ? h : NULL,
                                    ELM_AWQ_CLIP, cand + (r * nblk + b) * n_cand);
            }
        for (int c = 0; c < n_cand; c++) {
            for (int64_t r = 0; r < nr; r++)
                for (int64_t b = 0; b < nblk; b++) {
                    const float *x = ws + (r0 + r) * cols + b * g->block;
                    const elm_block_params *p = &cand[(r * nblk + b) * n_cand + c];
                    float *d = sc.D + r * cols + b * g->block;
                    for (int j = 0; j < g->block; j++)
                        d[j] = x[j] - elm_grid_value(g, p, j, elm_grid_code(g, p, j, x[j]));
                }
            block_errors(sc.D, nr, cols, g->block, hb, sc.T, sc.err);
            for (int64_t k = 0; k < nr * nblk; k++)
                if (c == 0 || sc.err[k] < best_err[k]) {
                    best_err[k] = sc.err[k];
                    params[r0 * nblk + k] = cand[k * n_cand + c];
                }
        }
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nblk; b++) {
            const elm_block_params *p = &params[r * nblk + b];
            const int64_t b0 = r * cols + b * g->block;
            for (int j = 0; j < g->block; j++) {
                const int code = elm_grid_code(g, p, j, ws[b0 + j]);
                codes[b0 + j] = (int8_t)code;
                q[b0 + j] = elm_grid_value(g, p, j, code);
            }
        }
    scratch_free(&sc);
    free(best_err);
    free(cand);
    return ELM_OK;
}
