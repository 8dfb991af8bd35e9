/* elm_imatrix_compute (edgelm/imatrix.h): the forward pass's matmul hook adds x² of every input
 * column of every block linear, summed in float64 per weight, over llama-imatrix's chunks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/context.h"
#include "edgelm/imatrix.h"
#include "edgelm/system.h"

typedef struct collector {
    const elm_model *m;
    double **sum2;   /* [m->n_tensors] per-column sums, NULL for tensors not collected */
    int64_t *count;  /* [m->n_tensors] tokens seen */
} collector;

static void on_matmul(const elm_tensor *w, int layer, const float *x, int64_t n_tok, void *user) {
    collector *c = user;
    (void)layer;
    const ptrdiff_t i = w - c->m->tensors;
    if (i < 0 || i >= c->m->n_tensors || !c->sum2[i]) return;
    const int64_t cols = w->ne[0];
    double *s = c->sum2[i];
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t j = 0; j < cols; j++) s[j] += (double)x[t * cols + j] * x[t * cols + j];
    c->count[i] += n_tok;
}

elm_status elm_imatrix_compute(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                               int32_t n_ctx, int32_t n_threads, const char *dataset,
                               elm_imatrix_progress_fn progress, void *user, elm_imatrix *im,
                               elm_error *err) {
    memset(im, 0, sizeof *im);
    if (n_ctx < 2 || n_tokens < 2 * (int64_t)n_ctx)
        return elm_errorf(err, ELM_ERR_ARG, "imatrix: %lld tokens, need at least %d for a context "
                          "of %d", (long long)n_tokens, 2 * n_ctx, n_ctx);
    const int32_t n_chunks = (int32_t)(n_tokens / n_ctx);
    const size_t nt = m->n_tensors ? (size_t)m->n_tensors : 1;
    collector c = {m, calloc(nt, sizeof(double *)), calloc(nt, sizeof(int64_t))};
    int32_t *window = malloc(sizeof(int32_t) * (size_t)n_ctx);
    elm_context *ctx = NULL;
    elm_status st = ELM_OK;
    if (!c.sum2 || !c.count || !window) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < m->n_tensors && !st; i++) {
        const elm_tensor *t = &m->tensors[i];
        if (t->n_dims == 2 && !strncmp(t->name, "blk.", 4) &&
            !(c.sum2[i] = calloc((size_t)t->ne[0], sizeof(double))))
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    }
    elm_context_params cp = {.n_ctx = n_ctx, .n_batch = n_ctx,
                             .n_threads = n_threads > 0 ? n_threads : elm_online_cores()};
    if (!st) st = elm_context_new(m, &cp, &ctx, err);
    if (!st) elm_context_set_hook(ctx, on_matmul, &c);
    for (int32_t ch = 0; ch < n_chunks && !st; ch++) {
        memcpy(window, tokens + (int64_t)ch * n_ctx, sizeof(int32_t) * (size_t)n_ctx);
        if (m->vocab.add_bos && m->vocab.bos_id >= 0) window[0] = m->vocab.bos_id;
        elm_context_reset(ctx);
        st = elm_forward(ctx, window, n_ctx, NULL, false, err);
        if (!st && progress) progress(ch + 1, n_chunks, user);
    }
    elm_context_free(ctx);
    free(window);
    int32_t n = 0;
    for (int32_t i = 0; i < m->n_tensors && !st; i++) n += c.sum2[i] && c.count[i];
    if (!st && !(im->entries = calloc(n ? (size_t)n : 1, sizeof *im->entries)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < m->n_tensors && !st; i++) {
        if (!c.sum2[i] || !c.count[i]) continue;
        const elm_tensor *t = &m->tensors[i];
        elm_imatrix_entry *e = &im->entries[im->n++];
        snprintf(e->name, sizeof e->name, "%s", t->name);
        e->n = t->ne[0];
        e->n_mat = 1;
        e->sum2 = malloc((size_t)e->n * sizeof(float));
        e->count = malloc(sizeof(float));
        if (!e->sum2 || !e->count) {
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
            break;
        }
        for (int64_t j = 0; j < e->n; j++) e->sum2[j] = (float)c.sum2[i][j];
        e->count[0] = (float)c.count[i];
    }
    for (int32_t i = 0; c.sum2 && i < m->n_tensors; i++) free(c.sum2[i]);
    free(c.sum2);
    free(c.count);
    if (st) {
        elm_imatrix_free(im);
        return st;
    }
    snprintf(im->dataset, sizeof im->dataset, "%s", dataset ? dataset : "");
    im->chunk_count = (uint32_t)n_chunks;
    im->chunk_size = (uint32_t)n_ctx;
    return ELM_OK;
}
