/* AWQ scale and clipping searches (awq.h). Both measure candidates by the block output error
 * Σ_b Δ_b H_bb Δ_bᵀ: the weight errors of a chunk of rows are formed for a candidate, then each
 * 32-column block's errors are multiplied by that block's H_bb with one sgemm (chunk x 32 x 32),
 * rather than a scalar quadratic form per row and block. The chunks of rows go to the threads
 * (each with its own scratch) and their errors are kept per chunk and added up in row order, so
 * sums and choices do not depend on the thread count. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/threadpool.h"
#include "edgelm/system.h"
#include "quant/awq.h"

#define AWQ_CHUNK 64 /* rows whose errors are formed at once (a K/V projection of 256 rows: 4 chunks) */

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

/* The threads' scratch, one each. */
static bool scratches_new(scratch *s, int n, int64_t cols) {
    bool ok = true;
    for (int i = 0; i < n; i++) ok = scratch_new(&s[i], cols) && ok;
    return ok;
}

static void scratches_free(scratch *s, int n) {
    for (int i = 0; i < n; i++) scratch_free(&s[i]);
}

/* One candidate scale s of the search, over the rows of one linear, by chunks. */
typedef struct scale_job {
    const elm_awq_linear *lin;
    const double *s;
    int64_t cols;
    const float *hb;
    scratch *sc;  /* [threads] */
    double *errs; /* [rows, cols / block]: each type block's output error */
} scale_job;

/* Block output errors of round-to-nearest Q(w·s)/s for thread ith's chunks of rows. */
static void scale_chunks(void *arg, int ith, int nth) {
    const scale_job *j = arg;
    const elm_grid *g = j->lin->g;
    const int64_t cols = j->cols, nblk = cols / g->block;
    const long n_chunks = (long)((j->lin->rows + AWQ_CHUNK - 1) / AWQ_CHUNK);
    scratch *sc = &j->sc[ith];
    float x[ELM_QK_K], v[ELM_QK_K];
    long c0, c1;
    elm_split(n_chunks, ith, nth, &c0, &c1);
    for (int64_t r0 = c0 * AWQ_CHUNK; r0 < c1 * AWQ_CHUNK; r0 += AWQ_CHUNK) {
        const int64_t nr = j->lin->rows - r0 < AWQ_CHUNK ? j->lin->rows - r0 : AWQ_CHUNK;
        for (int64_t r = 0; r < nr; r++) {
            const float *w = j->lin->w + (r0 + r) * cols;
            for (int64_t b = 0; b < cols; b += g->block) {
                for (int k = 0; k < g->block; k++) x[k] = (float)(w[b + k] * j->s[b + k]);
                const elm_block_params p = elm_grid_best_params(g, x, NULL, 1);
                elm_grid_values(g, &p, x, v);
                for (int k = 0; k < g->block; k++)
                    sc->D[r * cols + b + k] = (float)(w[b + k] - v[k] / j->s[b + k]);
            }
        }
        block_errors(sc->D, nr, cols, g->block, j->hb, sc->T, j->errs + r0 * nblk);
    }
}

/* Output error of round-to-nearest Q(w·s)/s over the rows of one linear. */
static double linear_error(elm_pool *pool, const elm_awq_linear *lin, const double *s,
                           int64_t cols, const float *hb, scratch *sc, double *errs) {
    scale_job j = {lin, s, cols, hb, sc, errs};
    elm_pool_run(pool, scale_chunks, &j);
    double total = 0;
    for (int64_t k = 0; k < lin->rows * (cols / lin->g->block); k++) total += errs[k];
    return total;
}

/* A pool of n_threads (0: all online cores) with a scratch per thread, or an error. */
static elm_status workers_new(int n_threads, int64_t cols, elm_pool **pool, scratch **sc,
                              const char *what, elm_error *err) {
    *sc = NULL;
    elm_status st = elm_pool_new(n_threads > 0 ? n_threads : elm_online_cores(), pool, err);
    if (st) return st;
    const int n = elm_pool_size(*pool);
    *sc = calloc((size_t)n, sizeof **sc);
    if (*sc && scratches_new(*sc, n, cols)) return ELM_OK;
    return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ %s", what);
}

static void workers_free(elm_pool *pool, scratch *sc) {
    if (sc) scratches_free(sc, elm_pool_size(pool));
    free(sc);
    elm_pool_free(pool);
}

elm_status elm_awq_search(const elm_awq_linear *lin, int32_t n_lin, int64_t cols, const float *H,
                          const double *abs_mean, int n_threads, double *s, double *alpha,
                          elm_error *err) {
    int64_t most_rows = 0;
    for (int32_t k = 0; k < n_lin; k++) most_rows = lin[k].rows > most_rows ? lin[k].rows : most_rows;
    double *cand = malloc(sizeof *cand * (size_t)cols);
    float *hb = malloc(sizeof *hb * (size_t)cols * ELM_QK);
    double *errs = malloc(sizeof *errs * (size_t)(most_rows * (cols / ELM_QK)));
    elm_pool *pool = NULL;
    scratch *sc = NULL;
    elm_status st = workers_new(n_threads, cols, &pool, &sc, "scale search", err);
    if (!st && (!cand || !hb || !errs))
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ scale search");
    if (st) goto done;
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
            if (lin[k].g) total += linear_error(pool, &lin[k], cand, cols, hb, sc, errs);
        if (total < best) {
            best = total;
            *alpha = a;
            memcpy(s, cand, sizeof *s * (size_t)cols);
        }
    }
done:
    workers_free(pool, sc);
    free(cand);
    free(hb);
    free(errs);
    return st;
}

/* The clipping search over the rows of one linear, by chunks. */
typedef struct clip_job {
    const elm_grid *g;
    const float *ws, *hb;
    int64_t rows, cols;
    int n_cand;
    scratch *sc;              /* [threads] */
    double *best_err;         /* [threads][AWQ_CHUNK · blocks per row] */
    elm_block_params *cand;   /* [threads][AWQ_CHUNK · blocks per row · n_cand] */
    elm_block_params *params; /* the result, [rows, blocks per row] */
} clip_job;

/* diag of the Hessian for the block of columns b0.. from its diagonal blocks hb, into h [block] */
static void block_diag(const float *hb, int64_t b0, int block, float *h) {
    for (int j = 0; j < block; j++) {
        const int64_t c = b0 + j;
        h[j] = hb[(c - c % ELM_QK) * ELM_QK + (c % ELM_QK) * (ELM_QK + 1)];
    }
}

/* Each block's candidate of least output error (the first on ties), for thread ith's chunks. */
static void clip_chunks(void *arg, int ith, int nth) {
    const clip_job *j = arg;
    const elm_grid *g = j->g;
    const int64_t cols = j->cols, nblk = cols / g->block;
    const int n_cand = j->n_cand;
    const bool weighted = g->kq; /* see elm_awq_clip_quantize */
    scratch *sc = &j->sc[ith];
    double *best_err = j->best_err + (size_t)ith * AWQ_CHUNK * (size_t)nblk;
    elm_block_params *cand = j->cand + (size_t)ith * AWQ_CHUNK * (size_t)(nblk * n_cand);
    float h[ELM_QK_K], v[ELM_QK_K];
    long c0, c1;
    elm_split((long)((j->rows + AWQ_CHUNK - 1) / AWQ_CHUNK), ith, nth, &c0, &c1);
    for (int64_t r0 = c0 * AWQ_CHUNK; r0 < c1 * AWQ_CHUNK; r0 += AWQ_CHUNK) {
        const int64_t nr = j->rows - r0 < AWQ_CHUNK ? j->rows - r0 : AWQ_CHUNK;
        for (int64_t r = 0; r < nr; r++)
            for (int64_t b = 0; b < nblk; b++) {
                if (weighted) block_diag(j->hb, b * g->block, g->block, h);
                elm_grid_candidates(g, j->ws + (r0 + r) * cols + b * g->block, weighted ? h : NULL,
                                    ELM_AWQ_CLIP, cand + (r * nblk + b) * n_cand);
            }
        for (int c = 0; c < n_cand; c++) {
            for (int64_t r = 0; r < nr; r++)
                for (int64_t b = 0; b < nblk; b++) {
                    const float *x = j->ws + (r0 + r) * cols + b * g->block;
                    const elm_block_params *p = &cand[(r * nblk + b) * n_cand + c];
                    float *d = sc->D + r * cols + b * g->block;
                    elm_grid_values(g, p, x, v);
                    for (int k = 0; k < g->block; k++) d[k] = x[k] - v[k];
                }
            block_errors(sc->D, nr, cols, g->block, j->hb, sc->T, sc->err);
            for (int64_t k = 0; k < nr * nblk; k++)
                if (c == 0 || sc->err[k] < best_err[k]) {
                    best_err[k] = sc->err[k];
                    j->params[r0 * nblk + k] = cand[k * n_cand + c];
                }
        }
    }
}

elm_status elm_awq_clip_quantize(const elm_grid *g, const float *ws, int64_t rows, int64_t cols,
                                 const float *hb, int n_threads, int8_t *codes,
                                 elm_block_params *params, float *q, elm_error *err) {
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
    elm_pool *pool = NULL;
    scratch *sc = NULL;
    double *best_err = NULL;
    elm_block_params *cand = NULL;
    elm_status st = workers_new(n_threads, cols, &pool, &sc, "clipping search", err);
    if (!st) {
        const size_t n = (size_t)elm_pool_size(pool) * AWQ_CHUNK * (size_t)nblk;
        best_err = malloc(sizeof *best_err * n);
        cand = malloc(sizeof *cand * n * (size_t)n_cand);
        if (!best_err || !cand)
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the AWQ clipping search");
    }
    if (!st) {
        clip_job j = {g, ws, hb, rows, cols, n_cand, sc, best_err, cand, params};
        elm_pool_run(pool, clip_chunks, &j);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nblk; b++) {
                const elm_block_params *p = &params[r * nblk + b];
                const int64_t b0 = r * cols + b * g->block;
                for (int k = 0; k < g->block; k++) {
                    const int code = elm_grid_code(g, p, k, ws[b0 + k]);
                    codes[b0 + k] = (int8_t)code;
                    q[b0 + k] = elm_grid_value(g, p, k, code);
                }
            }
    }
    workers_free(pool, sc);
    free(best_err);
    free(cand);
    return st;
}
