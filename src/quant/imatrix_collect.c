/* elm_imatrix_compute (edgelm/imatrix.h): the forward pass's matmul hook adds x² of every input
 * column of every block linear, summed in float64 per weight, over llama-imatrix's chunks. A
 * mixture of experts' stacks get one row of sums and one count per expert, from the tokens routed
 * to it (llama-imatrix's MUL_MAT_ID rule): the hook sees each expert's product over its tokens as
 * a view into the stack (elm_expert_of). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/context.h"
#include "edgelm/imatrix.h"
#include "edgelm/system.h"
#include "quant/capture.h"

typedef struct collector {
    const elm_model *m;
    double **sum2;   /* [m->n_tensors] per-column sums [n_mat, cols], NULL for tensors not
                      * collected */
    int64_t **count; /* [m->n_tensors] tokens seen [n_mat] */
} collector;

/* The matrices a weight holds: a stack's experts, else 1. */
static int64_t n_mat(const elm_tensor *t) { return t->n_dims == 3 ? t->ne[2] : 1; }

static void on_matmul(const elm_tensor *w, int layer, const float *x, int64_t n_tok, void *user) {
    collector *c = user;
    int32_t e = 0;
    const elm_tensor *stack = layer >= 0 ? elm_expert_of(&c->m->layers[layer], w, &e) : NULL;
    const ptrdiff_t i = (stack ? stack : w) - c->m->tensors;
    if (i < 0 || i >= c->m->n_tensors || !c->sum2[i]) return;
    const int64_t cols = w->ne[0];
    double *s = c->sum2[i] + e * cols;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t j = 0; j < cols; j++) s[j] += (double)x[t * cols + j] * x[t * cols + j];
    c->count[i][e] += n_tok;
}

/* The blocks' tensors: those the hook sees as weights get entries (a one-row weight too, such as
 * Qwen3.5-MoE's ffn_gate_inp_shexp, stored 1-D). */
static bool collected(const elm_tensor *t) { return !strncmp(t->name, "blk.", 4); }

/* Whether any matrix of tensor i saw a token. */
static bool seen(const collector *c, int32_t i) {
    for (int64_t k = 0; c->count[i] && k < n_mat(&c->m->tensors[i]); k++)
        if (c->count[i][k]) return true;
    return false;
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
    collector c = {m, calloc(nt, sizeof(double *)), calloc(nt, sizeof(int64_t *))};
    int32_t *window = malloc(sizeof(int32_t) * (size_t)n_ctx);
    elm_context *ctx = NULL;
    elm_status st = ELM_OK;
    if (!c.sum2 || !c.count || !window) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < m->n_tensors && !st; i++) {
        const elm_tensor *t = &m->tensors[i];
        if (collected(t) && (!(c.sum2[i] = calloc((size_t)(t->ne[0] * n_mat(t)), sizeof(double))) ||
                             !(c.count[i] = calloc((size_t)n_mat(t), sizeof(int64_t)))))
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
    for (int32_t i = 0; i < m->n_tensors && !st; i++) n += seen(&c, i);
    if (!st && !(im->entries = calloc(n ? (size_t)n : 1, sizeof *im->entries)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; i < m->n_tensors && !st; i++) {
        if (!seen(&c, i)) continue; /* an expert stack some experts of which saw nothing is kept,
                                     * as llama-imatrix keeps its partial entries */
        const elm_tensor *t = &m->tensors[i];
        elm_imatrix_entry *e = &im->entries[im->n++];
        snprintf(e->name, sizeof e->name, "%s", t->name);
        e->n_mat = n_mat(t);
        e->n = t->ne[0] * e->n_mat;
        e->sum2 = malloc((size_t)e->n * sizeof(float));
        e->count = malloc((size_t)e->n_mat * sizeof(float));
        if (!e->sum2 || !e->count) {
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
            break;
        }
        for (int64_t j = 0; j < e->n; j++) e->sum2[j] = (float)c.sum2[i][j];
        for (int64_t k = 0; k < e->n_mat; k++) e->count[k] = (float)c.count[i][k];
    }
    for (int32_t i = 0; c.sum2 && c.count && i < m->n_tensors; i++) {
        free(c.sum2[i]);
        free(c.count[i]);
    }
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
