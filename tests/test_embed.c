/* Embeddings (edgelm/embed.h, elm_forward_embd):
 *  - pooling math on stories260K (a real tiny model): the states after the last layer from
 *    elm_forward_hidden (x_out, before the output norm), RMSNormed here in double with the
 *    model's output_norm weights and pooled here (mean, first, last), scaled to unit length here,
 *    agree with elm_embed for each pooling, in one batch and in batches of 5 (a causal model's
 *    tokens in pieces); without normalizing, the pooled vector as it is; elm_forward_embd's rows
 *    are the normed states;
 *  - elm_embed_tokenize: the BOS, then the vocabulary's EOS when it adds one;
 *  - a non-causal model (synth's tiny gemma-embedding, with Dense layers): the first token's
 *    state changes with the tokens after it (stories260K's does not); the embedding is
 *    dense_3 · dense_2 · mean computed here from elm_forward_embd's rows; two sequences in one
 *    elm_forward_seqs pass give each the logits it gets alone (each token sees its own sequence
 *    only, to its end); a text over the batch is refused;
 *  - refusals: no tokens, more than the context, pooling none and rank, a bad token id. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/embed.h"
#include "shapes/synth_tiny.h"

enum { N = 13, DIM_MAX = 1024 };

static elm_context *context(const elm_model *m, int32_t n_ctx, int32_t n_batch) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_batch = n_batch, .n_threads = 2};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static double max_diff(const float *a, const double *b, int n) {
    double d = 0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

static double length(const float *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)v[i] * v[i];
    return sqrt(s);
}

/* The hidden states of ids [n] after the output norm, computed here: elm_forward_hidden's x_out
 * (before the norm) through RMSNorm in double, into h [n, dim]. */
static void normed_states(const elm_model *m, const int32_t *ids, int n, double *h) {
    const int dim = m->hp.dim;
    elm_context *c = context(m, 64, 64);
    float *x = malloc(sizeof(float) * (size_t)n * dim), w[DIM_MAX];
    elm_error err;
    if (!c || !x) goto done;
    CHECK(elm_forward_hidden(c, ids, NULL, n, x, NULL, false, &err) == ELM_OK, "hidden: %s",
          err.msg);
    elm_type_get(m->output_norm->type)->to_float(m->output_norm->data, w, dim);
    for (int t = 0; t < n; t++) {
        double ss = 0;
        for (int i = 0; i < dim; i++) ss += (double)x[t * dim + i] * x[t * dim + i];
        const double r = 1.0 / sqrt(ss / dim + m->hp.rms_eps);
        for (int i = 0; i < dim; i++) h[t * dim + i] = x[t * dim + i] * r * w[i];
    }
done:
    free(x);
    elm_context_free(c);
}

/* The pooling of h [n, dim] into out [dim], unit length unless raw. */
static void pool_here(const double *h, int n, int dim, elm_pooling p, bool raw, double *out) {
    for (int i = 0; i < dim; i++) {
        double s = 0;
        for (int t = 0; t < n; t++) s += h[t * dim + i];
        out[i] = p == ELM_POOLING_MEAN ? s / n : p == ELM_POOLING_CLS ? h[i] : h[(n - 1) * dim + i];
    }
    double len = 0;
    for (int i = 0; i < dim && !raw; i++) len += out[i] * out[i];
    for (int i = 0; i < dim && !raw; i++) out[i] /= sqrt(len);
}

static void pooling_math(const elm_model *m, const int32_t *ids) {
    const int dim = m->hp.dim;
    double *h = malloc(sizeof(double) * N * (size_t)dim), want[DIM_MAX];
    float got[DIM_MAX], *rows = malloc(sizeof(float) * N * (size_t)dim);
    elm_error err;
    if (!h || !rows) goto done;
    normed_states(m, ids, N, h);
    elm_context *c = context(m, 32, 32);
    if (c) {
        CHECK(elm_forward_embd(c, ids, N, rows, &err) == ELM_OK, "forward_embd: %s", err.msg);
        double d = 0;
        for (int i = 0; i < N * dim; i++) d = fmax(d, fabs(rows[i] - h[i]));
        CHECK(d < 1e-5, "forward_embd rows differ from the normed states by %g", d);
    }
    elm_context_free(c);
    for (int batch = N; batch >= 5; batch -= N - 5) {
        c = context(m, 32, batch);
        for (int p = ELM_POOLING_MEAN; c && p <= ELM_POOLING_LAST; p++)
            for (int raw = 0; raw < 2; raw++) {
                const elm_embed_params ep = {.pooling = (elm_pooling)p, .no_normalize = raw};
                CHECK(elm_embed(c, ids, N, &ep, got, &err) == ELM_OK, "embed: %s", err.msg);
                pool_here(h, N, dim, (elm_pooling)p, raw, want);
                CHECK(max_diff(got, want, dim) < 1e-5, "%s pooling (batch %d, raw %d) differs by "
                      "%g", elm_pooling_name((elm_pooling)p), batch, raw, max_diff(got, want, dim));
                CHECK(raw || fabs(length(got, dim) - 1) < 1e-5, "length %g", length(got, dim));
            }
        elm_context_free(c);
    }
    /* stories260K says no pooling: mean */
    CHECK(elm_embed_pooling(m, ELM_POOLING_DEFAULT) == ELM_POOLING_MEAN, "default pooling %d",
          elm_embed_pooling(m, ELM_POOLING_DEFAULT));
done:
    free(h);
    free(rows);
}

static void refusals(const elm_model *m, const int32_t *ids) {
    elm_context *c = context(m, 8, 8);
    float v[DIM_MAX];
    elm_error err;
    if (!c) return;
    CHECK(elm_embed(c, ids, 0, NULL, v, &err) == ELM_ERR_ARG, "no tokens: %s", err.msg);
    CHECK(elm_embed(c, ids, 9, NULL, v, &err) == ELM_ERR_ARG, "over n_ctx: %s", err.msg);
    const elm_embed_params none = {.pooling = ELM_POOLING_NONE}, rank = {.pooling = ELM_POOLING_RANK};
    CHECK(elm_embed(c, ids, 4, &none, v, &err) == ELM_ERR_ARG, "none: %s", err.msg);
    CHECK(elm_embed(c, ids, 4, &rank, v, &err) == ELM_ERR_UNSUPPORTED, "rank: %s", err.msg);
    const int32_t bad[2] = {1, m->hp.n_vocab};
    CHECK(elm_embed(c, bad, 2, NULL, v, &err) == ELM_ERR_ARG, "bad id: %s", err.msg);
    elm_pooling p;
    CHECK(elm_pooling_from_name("last", &p) && p == ELM_POOLING_LAST && !elm_pooling_from_name("rank", &p),
          "pooling names");
    elm_context_free(c);
}

static void tokenize(elm_model *m) {
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_error err;
    const char *text = "Once upon a time";
    CHECK(elm_embed_tokenize(&m->vocab, text, strlen(text), &ids, &n, &err) == ELM_OK, "%s", err.msg);
    CHECK(n > 2 && ids[0] == m->vocab.bos_id && ids[n - 1] != m->vocab.eos_id, "%lld ids",
          (long long)n);
    free(ids);
    m->vocab.add_eos = true;
    CHECK(elm_embed_tokenize(&m->vocab, text, strlen(text), &ids, &n, &err) == ELM_OK, "%s", err.msg);
    CHECK(n > 2 && ids[0] == m->vocab.bos_id && ids[n - 1] == m->vocab.eos_id, "with EOS: %lld ids",
          (long long)n);
    m->vocab.add_eos = false;
    free(ids);
}

/* Whether token 0's normed state in [a, b, ...] changes when the last token does. */
static bool sees_ahead(const elm_model *m, const int32_t *ids, int n) {
    const int dim = m->hp.dim;
    float *x = malloc(sizeof(float) * (size_t)n * dim), *y = malloc(sizeof(float) * (size_t)n * dim);
    int32_t other[N];
    memcpy(other, ids, sizeof(int32_t) * (size_t)n);
    other[n - 1] = ids[n - 1] + 1;
    elm_context *c = context(m, 32, 32);
    elm_error err;
    bool differ = false;
    if (x && y && c && elm_forward_embd(c, ids, n, x, &err) == ELM_OK) {
        elm_context_reset(c);
        if (elm_forward_embd(c, other, n, y, &err) == ELM_OK) differ = memcmp(x, y, sizeof(float) * dim);
    }
    elm_context_free(c);
    free(x);
    free(y);
    return differ;
}

/* y [rows] = w x for a float weight matrix w (ggml ne {cols, rows}) */
static void project(const elm_tensor *w, const double *x, double *y) {
    const float *d = w->data;
    for (int64_t r = 0; r < w->ne[1]; r++) {
        y[r] = 0;
        for (int64_t i = 0; i < w->ne[0]; i++) y[r] += (double)d[r * w->ne[0] + i] * x[i];
    }
}

static void non_causal(const elm_model *g, const elm_model *stories, const int32_t *ids) {
    const int dim = g->hp.dim;
    CHECK(g->hp.non_causal && g->hp.pooling == ELM_POOLING_MEAN && g->dense_2 && g->dense_3,
          "tiny gemma-embedding: non-causal %d, pooling %d", g->hp.non_causal, g->hp.pooling);
    CHECK(sees_ahead(g, ids, N), "the non-causal model's first token does not see the last");
    CHECK(!sees_ahead(stories, ids, N), "the causal model's first token sees the last");
    /* dense_3 · dense_2 · mean, unit length */
    float *rows = malloc(sizeof(float) * N * (size_t)dim), got[DIM_MAX];
    double mean[DIM_MAX] = {0}, mid[4 * DIM_MAX], want[DIM_MAX];
    elm_context *c = context(g, 32, 32);
    elm_error err;
    if (rows && c && g->dense_2 && elm_forward_embd(c, ids, N, rows, &err) == ELM_OK) {
        for (int t = 0; t < N; t++)
            for (int i = 0; i < dim; i++) mean[i] += rows[t * dim + i] / (double)N;
        project(g->dense_2, mean, mid);
        project(g->dense_3, mid, want);
        double len = 0;
        for (int i = 0; i < dim; i++) len += want[i] * want[i];
        for (int i = 0; i < dim; i++) want[i] /= sqrt(len);
        CHECK(elm_embed(c, ids, N, NULL, got, &err) == ELM_OK, "embed: %s", err.msg);
        CHECK(max_diff(got, want, dim) < 1e-5, "dense projections differ by %g",
              max_diff(got, want, dim));
    }
    elm_context_free(c);
    free(rows);
    /* a text longer than the batch cannot go in pieces */
    c = context(g, 32, 8);
    CHECK(c && elm_embed(c, ids, N, NULL, got, &err) == ELM_ERR_ARG, "over the batch: %s", err.msg);
    elm_context_free(c);
}

/* Sequences A (6 tokens) and B (7) in one pass, each in its cache region, as each alone. */
static void two_sequences(const elm_model *g, const int32_t *ids) {
    const int nv = g->hp.n_vocab, na = 6, nb = N - na;
    float *both = malloc(sizeof(float) * N * (size_t)nv), *alone = malloc(sizeof(float) * N * (size_t)nv);
    int32_t pos[N], row0[N], out[N];
    for (int t = 0; t < N; t++) {
        pos[t] = t < na ? t : t - na;
        row0[t] = t < na ? 0 : 16;
        out[t] = t;
    }
    elm_context *c = context(g, 32, 32);
    elm_error err;
    if (!both || !alone || !c) goto done;
    CHECK(elm_forward_seqs(c, ids, pos, row0, N, out, N, both, &err) == ELM_OK, "both: %s", err.msg);
    CHECK(elm_forward_seqs(c, ids, pos, row0, na, out, na, alone, &err) == ELM_OK, "A: %s", err.msg);
    CHECK(elm_forward_seqs(c, ids + na, pos + na, row0 + na, nb, out, nb,
                           alone + (size_t)na * nv, &err) == ELM_OK, "B: %s", err.msg);
    double d = 0;
    for (size_t i = 0; i < (size_t)N * nv; i++) d = fmax(d, fabs(both[i] - alone[i]));
    CHECK(d < 1e-4, "two sequences in one pass differ from each alone by %g", d);
done:
    elm_context_free(c);
    free(both);
    free(alone);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *m = NULL, *g = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) == ELM_OK,
          "%s", err.msg);
    if (!m) return check_done();
    const elm_synth_tiny o = {.arch = "gemma-embedding", .seed = 3,
                              .vocab_path = fixture("stories260K/stories260K-f32.gguf")};
    CHECK(elm_synth_tiny_model(&o, &g, NULL, &err) == ELM_OK, "tiny gemma-embedding: %s", err.msg);
    int32_t ids[N];
    for (int i = 0; i < N; i++) ids[i] = i == 0 ? 1 : 100 + 29 * i % 400;
    pooling_math(m, ids);
    refusals(m, ids);
    tokenize(m);
    if (g) {
        non_causal(g, m, ids);
        two_sequences(g, ids);
    }
    elm_model_free(g);
    elm_model_free(m);
    return check_done();
}
