/* Text embeddings (include/edgelm/embed.h): the normed hidden states of a text's tokens
 * (elm_forward_embd) pooled into one vector, projected by an embedding model's Dense layers and
 * scaled to unit length, as llama.cpp's build_pooling, build_dense_out and llama-server's
 * common_embd_normalize do. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/embed.h"

static const char *const pooling_names[] = {"none", "mean", "cls", "last", "rank"};

const char *elm_pooling_name(elm_pooling p) {
    if (p == ELM_POOLING_DEFAULT) return "default";
    return p >= ELM_POOLING_NONE && p <= ELM_POOLING_RANK ? pooling_names[p] : "?";
}

bool elm_pooling_from_name(const char *name, elm_pooling *out) {
    for (int p = ELM_POOLING_MEAN; p <= ELM_POOLING_LAST; p++)
        if (strcmp(name, pooling_names[p]) == 0) {
            *out = (elm_pooling)p;
            return true;
        }
    return false;
}

elm_pooling elm_embed_pooling(const elm_model *m, elm_pooling requested) {
    if (requested != ELM_POOLING_DEFAULT) return requested;
    return m->hp.pooling > ELM_POOLING_NONE ? (elm_pooling)m->hp.pooling : ELM_POOLING_MEAN;
}

int32_t elm_embed_dim(const elm_model *m) {
    return m->dense_3 ? (int32_t)m->dense_3->ne[1] : m->hp.dim;
}

elm_status elm_embed_tokenize(const elm_vocab *v, const char *text, size_t len, int32_t **ids,
                              int64_t *n, elm_error *err) {
    *ids = NULL;
    *n = 0;
    int32_t *t = NULL;
    int64_t k = 0;
    elm_status st = elm_tokenize_alloc(v, text, len, v->add_bos, true, &t, &k, err);
    if (st) return st;
    if (v->add_eos && v->eos_id >= 0) {
        int32_t *grown = realloc(t, sizeof *t * (size_t)(k + 1));
        if (!grown) {
            free(t);
            return elm_errorf(err, ELM_ERR_NOMEM, "embed: out of memory for %lld tokens",
                              (long long)k + 1);
        }
        t = grown;
        t[k++] = v->eos_id;
    }
    *ids = t;
    *n = k;
    return ELM_OK;
}

/* y [rows] = w x for a matrix w (ggml ne {cols, rows}) of any readable type, row by row through
 * its type's decoder into row [cols]; sums in double. */
static void project(const elm_tensor *w, const float *x, float *row, float *y) {
    const elm_type_traits *tt = elm_type_get(w->type);
    const int64_t cols = w->ne[0];
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    for (int64_t r = 0; r < w->ne[1]; r++) {
        tt->to_float((const char *)w->data + (size_t)r * row_bytes, row, cols);
        double s = 0;
        for (int64_t i = 0; i < cols; i++) s += (double)row[i] * x[i];
        y[r] = (float)s;
    }
}

/* The model's Dense projections of the pooled vector v [dim] in place (dense_2 into scratch
 * [dense_dim], dense_3 back into v); row is [max(dim, dense_dim)] scratch. */
static void dense_out(const elm_model *m, float *v, float *mid, float *row) {
    if (!m->dense_2) return;
    project(m->dense_2, v, row, mid);
    project(m->dense_3, mid, row, v);
}

/* v [n] / its Euclidean length (llama.cpp's common_embd_normalize with 2: the sum in double,
 * zeros stay zeros). */
static void normalize(float *v, int32_t n) {
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += (double)v[i] * v[i];
    const double len = sqrt(sum);
    const float scale = len > 0 ? (float)(1.0 / len) : 0.0f;
    for (int32_t i = 0; i < n; i++) v[i] *= scale;
}

elm_status elm_embed(elm_context *c, const int32_t *tokens, int32_t n, const elm_embed_params *p,
                     float *out, elm_error *err) {
    const elm_model *m = elm_context_model(c);
    const elm_hparams *hp = &m->hp;
    const elm_embed_params def = {.pooling = ELM_POOLING_DEFAULT};
    if (!p) p = &def;
    const elm_pooling pool = elm_embed_pooling(m, p->pooling);
    const int32_t n_batch = elm_context_n_batch(c), dim = hp->dim;
    if (pool == ELM_POOLING_RANK)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rank pooling (a reranker's score) is "
                          "not an embedding", m->path);
    if (pool < ELM_POOLING_MEAN || pool > ELM_POOLING_LAST)
        return elm_errorf(err, ELM_ERR_ARG, "embed: pooling %s gives no single vector (mean, cls "
                          "or last)", elm_pooling_name(pool));
    if (n <= 0) return elm_errorf(err, ELM_ERR_ARG, "embed: no tokens to embed");
    if (n > elm_context_n_ctx(c))
        return elm_errorf(err, ELM_ERR_ARG, "embed: %d tokens over the context's %d", n,
                          elm_context_n_ctx(c));
    if (hp->non_causal && n > n_batch)
        return elm_errorf(err, ELM_ERR_ARG, "embed: %d tokens over the batch of %d that a "
                          "non-causal model (%s) takes them in, all at once", n, n_batch,
                          hp->arch);
    const int32_t wide = hp->dense_dim > dim ? hp->dense_dim : dim;
    float *h = malloc(sizeof *h * ((size_t)n_batch * (size_t)dim + 2 * (size_t)wide));
    double *sum = calloc((size_t)dim, sizeof *sum);
    if (!h || !sum) {
        free(h);
        free(sum);
        return elm_errorf(err, ELM_ERR_NOMEM, "embed: out of memory for %d hidden states",
                          n_batch);
    }
    float *mid = h + (size_t)n_batch * (size_t)dim, *row = mid + wide;
    elm_context_reset(c);
    elm_status st = ELM_OK;
    for (int32_t off = 0; off < n && !st; off += n_batch) {
        const int32_t nb = n - off < n_batch ? n - off : n_batch;
        if ((st = elm_forward_embd(c, tokens + off, nb, h, err))) break;
        if (pool == ELM_POOLING_MEAN)
            for (int32_t t = 0; t < nb; t++)
                for (int32_t i = 0; i < dim; i++) sum[i] += h[(size_t)t * dim + i];
        else if (pool == ELM_POOLING_CLS && off == 0)
            for (int32_t i = 0; i < dim; i++) sum[i] = h[i];
        else if (pool == ELM_POOLING_LAST && off + nb == n)
            for (int32_t i = 0; i < dim; i++) sum[i] = h[(size_t)(nb - 1) * dim + i];
    }
    if (!st) {
        const double scale = pool == ELM_POOLING_MEAN ? 1.0 / n : 1.0;
        for (int32_t i = 0; i < dim; i++) out[i] = (float)(sum[i] * scale);
        dense_out(m, out, mid, row);
        if (!p->no_normalize) normalize(out, elm_embed_dim(m));
    }
    free(h);
    free(sum);
    return st;
}

elm_status elm_embed_text(elm_context *c, const char *text, size_t len, const elm_embed_params *p,
                          float *out, elm_error *err) {
    const elm_model *m = elm_context_model(c);
    int32_t *ids;
    int64_t n;
    elm_status s = elm_embed_tokenize(&m->vocab, text, len, &ids, &n, err);
    if (s) return s;
    const int32_t limit = m->hp.non_causal && elm_context_n_batch(c) < elm_context_n_ctx(c)
                              ? elm_context_n_batch(c) : elm_context_n_ctx(c);
    if (n == 0) s = elm_errorf(err, ELM_ERR_ARG, "the text has no tokens (and %s adds no BOS or "
                               "EOS)", m->path);
    else if (n > limit)
        s = elm_errorf(err, ELM_ERR_ARG, "%lld tokens, over the %d the context of %s takes",
                       (long long)n, limit, m->path);
    else s = elm_embed(c, ids, (int32_t)n, p, out, err);
    free(ids);
    return s;
}

double elm_embed_cosine(const float *a, const float *b, int32_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (int32_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0;
}
