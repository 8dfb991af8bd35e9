/* Error figures on a sample of rows (errfig.h). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/encode.h"
#include "quant/errfig.h"

bool elm_err_sample_init(elm_err_sample *e, int64_t rows, int64_t cols) {
    memset(e, 0, sizeof *e);
    e->rows = rows;
    e->cols = cols;
    e->stride = (rows + ELM_ERR_ROWS - 1) / ELM_ERR_ROWS;
    if (e->stride < 1) e->stride = 1;
    e->n = (rows + e->stride - 1) / e->stride;
    const size_t m = 3 * (size_t)e->n;
    e->S = malloc(sizeof(float) * m * (size_t)cols);
    e->panel = malloc(sizeof(float) * (size_t)cols * ELM_ERR_PANEL);
    e->SH = malloc(sizeof(float) * m * ELM_ERR_PANEL);
    e->row = malloc(sizeof(float) * (size_t)cols);
    if (e->S && e->panel && e->SH && e->row) return true;
    elm_err_sample_free(e);
    return false;
}

void elm_err_sample_free(elm_err_sample *e) {
    free(e->S);
    free(e->panel);
    free(e->SH);
    free(e->row);
    memset(e, 0, sizeof *e);
}

void elm_err_sample_weights(elm_err_sample *e, elm_type type, const float *w, const float *qw) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    const int64_t cols = e->cols;
    uint8_t *enc = (uint8_t *)e->panel; /* a row's blocks fit in cols floats */
    for (int64_t k = 0; k < e->n; k++) {
        const float *src = w + k * e->stride * cols;
        float *orig = e->S + k * cols, *rtn = e->S + (e->n + k) * cols;
        memcpy(orig, src, sizeof(float) * (size_t)cols);
        elm_encode_row(type, src, enc, cols, qw);
        tt->to_float(enc, e->row, cols);
        for (int64_t j = 0; j < cols; j++) rtn[j] = src[j] - e->row[j];
    }
}

void elm_err_sample_values(elm_err_sample *e, const float *values, const double *rs,
                           const double *cs) {
    const int64_t cols = e->cols;
    for (int64_t k = 0; k < e->n; k++) {
        const int64_t r = k * e->stride;
        const float *orig = e->S + k * cols, *v = values + r * cols;
        float *out = e->S + (2 * e->n + k) * cols;
        for (int64_t j = 0; j < cols; j++)
            out[j] = (float)(orig[j] - v[j] * (rs ? rs[r] : 1.0) / (cs ? cs[j] : 1.0));
    }
}

void elm_err_sample_quads(elm_err_sample *e, const float *H, double quad[3]) {
    const int64_t cols = e->cols, m = 3 * e->n;
    quad[0] = quad[1] = quad[2] = 0;
    for (int64_t c0 = 0; c0 < cols; c0 += ELM_ERR_PANEL) {
        const int64_t np = cols - c0 < ELM_ERR_PANEL ? cols - c0 : ELM_ERR_PANEL;
        for (int64_t i = 0; i < cols; i++)
            memcpy(e->panel + i * np, H + i * cols + c0, sizeof(float) * (size_t)np);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)np, (int)cols, 1.0f,
                    e->S, (int)cols, e->panel, (int)np, 0.0f, e->SH, (int)np);
        for (int64_t r = 0; r < m; r++) {
            double sum = 0;
            for (int64_t j = 0; j < np; j++) sum += (double)e->SH[r * np + j] * e->S[r * cols + c0 + j];
            quad[r / e->n] += sum;
        }
    }
}
