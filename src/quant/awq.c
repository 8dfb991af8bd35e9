/* AWQ scale and clipping searches (awq.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/awq.h"

/* Δᵀ Hbb Δ for the block starting at column b0 of an n-column Hessian. */
static double block_quad(const double *H, int64_t n, int64_t b0, const double *delta) {
    double sum = 0;
    for (int i = 0; i < ELM_QK; i++) {
        const double *hrow = H + (b0 + i) * n + b0;
        double t = 0;
        for (int j = 0; j < ELM_QK; j++) t += hrow[j] * delta[j];
        sum += delta[i] * t;
    }
    return sum;
}

/* Output error of round-to-nearest Q(w·s)/s for one row w [cols]: Σ_b Δ_bᵀ H_bb Δ_b. */
static double row_error(const elm_grid *g, const float *w, const double *s, int64_t cols,
                        const double *H) {
    double total = 0, delta[ELM_QK];
    float x[ELM_QK];
    for (int64_t b = 0; b < cols; b += ELM_QK) {
        for (int j = 0; j < ELM_QK; j++) x[j] = (float)(w[b + j] * s[b + j]);
        const elm_block_params p = elm_grid_params(g, x, 1.0f);
        for (int j = 0; j < ELM_QK; j++)
            delta[j] = w[b + j] - elm_grid_value(g, p, elm_grid_code(g, p, x[j])) / s[b + j];
        total += block_quad(H, cols, b, delta);
    }
    return total;
}

elm_status elm_awq_search(const elm_awq_linear *lin, int32_t n_lin, int64_t cols, const double *H,
                          const double *abs_mean, double *s, double *alpha, elm_error *err) {
    double *cand = malloc(sizeof *cand * (size_t)cols);
    if (!cand) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ scale search");
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
            for (int64_t r = 0; lin[k].g && r < lin[k].rows; r++)
                total += row_error(lin[k].g, lin[k].w + r * cols, cand, cols, H);
        if (total < best) {
            best = total;
            *alpha = a;
            memcpy(s, cand, sizeof *s * (size_t)cols);
        }
    }
    free(cand);
    return ELM_OK;
}

void elm_awq_clip_quantize(const elm_grid *g, const float *ws, int64_t rows, int64_t cols,
                           const double *Hs, int8_t *codes, elm_block_params *params, float *q) {
    const int64_t nblk = cols / ELM_QK;
    double delta[ELM_QK];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nblk; b++) {
            const float *x = ws + r * cols + b * ELM_QK;
            elm_block_params best = {0, 0};
            double best_err = INFINITY;
            for (int c = 0; c < ELM_AWQ_CLIP; c++) {
                elm_block_params p = elm_grid_params(g, x, 1.0f - 0.05f * (float)c);
                for (int j = 0; j < ELM_QK; j++)
                    delta[j] = x[j] - elm_grid_value(g, p, elm_grid_code(g, p, x[j]));
                double e = block_quad(Hs, cols, b * ELM_QK, delta);
                if (c == 0 || e < best_err) {
                    best_err = e;
                    best = p;
                }
            }
            params[r * nblk + b] = best;
            for (int j = 0; j < ELM_QK; j++) {
                int code = elm_grid_code(g, best, x[j]);
                codes[r * cols + b * ELM_QK + j] = (int8_t)code;
                q[r * cols + b * ELM_QK + j] = elm_grid_value(g, best, code);
            }
        }
}
