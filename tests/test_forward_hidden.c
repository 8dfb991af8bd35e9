/* elm_forward_hidden (context.h) on the stories260K fixture:
 *  - with tokens it is elm_forward: the same logits bit for bit, at prefill and at a decode step
 *    after it;
 *  - block by block: the model's layers run one at a time, each as a 1-layer view (x_out of block
 *    l fed as x to block l+1, a fresh context per block, positions from 0), then a 0-layer view
 *    for the output RMSNorm and projection, give the full pass's logits (within 1e-4; the same
 *    arithmetic, so the difference is printed and expected to be 0). A 0-layer view embeds
 *    (x_out = the embedding rows), has a KV cache of 0 bytes, and the matmul hook sees a block
 *    view's own weights;
 *  - bad arguments: both or neither of tokens and x, n out of range, a full context, a bad token
 *    id give ELM_ERR_ARG and leave the context as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/context.h"

enum { N = 24, N_CTX = 32 };

static elm_context *context(const elm_model *m, int32_t n_ctx) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 2};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context (%d layers): %s", m->hp.n_layers,
          err.msg);
    return c;
}

/* layers [first, first + n) of m as a model of their own */
static elm_model view_of(const elm_model *m, int first, int n) {
    elm_model v = *m;
    v.layers = m->layers + first;
    v.hp.n_layers = n;
    return v;
}

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void same_as_forward(const elm_model *m, const int32_t *ids) {
    const size_t nv = (size_t)m->hp.n_vocab;
    float *a = malloc(sizeof(float) * N * nv), *b = malloc(sizeof(float) * N * nv);
    elm_context *c1 = context(m, N_CTX), *c2 = context(m, N_CTX);
    elm_error err;
    if (!a || !b || !c1 || !c2) goto done;
    CHECK(elm_forward(c1, ids, N - 1, a, true, &err) == ELM_OK, "forward: %s", err.msg);
    CHECK(elm_forward_hidden(c2, ids, NULL, N - 1, NULL, b, true, &err) == ELM_OK,
          "forward_hidden: %s", err.msg);
    CHECK(!memcmp(a, b, sizeof(float) * (N - 1) * nv), "prefill logits differ by %g",
          max_diff(a, b, (N - 1) * nv));
    CHECK(elm_forward(c1, ids + N - 1, 1, a, false, &err) == ELM_OK, "decode: %s", err.msg);
    CHECK(elm_forward_hidden(c2, ids + N - 1, NULL, 1, NULL, b, false, &err) == ELM_OK,
          "decode (hidden): %s", err.msg);
    CHECK(!memcmp(a, b, sizeof(float) * nv), "decode logits differ by %g", max_diff(a, b, nv));
    CHECK(elm_context_n_past(c2) == N && elm_context_tokens(c2)[N - 1] == ids[N - 1],
          "n_past %d", elm_context_n_past(c2));
done:
    elm_context_free(c1);
    elm_context_free(c2);
    free(a);
    free(b);
}

typedef struct seen {
    const elm_layer *L;
    int n, n_own, bad_index;
} seen;

static void on_matmul(const elm_tensor *w, int layer, const float *x, int64_t n_tok, void *user) {
    (void)x;
    (void)n_tok;
    seen *s = user;
    const elm_layer *L = s->L;
    s->n++;
    s->n_own += w == L->wq || w == L->wk || w == L->wv || w == L->wo || w == L->w_gate ||
                w == L->w_up || w == L->w_down;
    s->bad_index += layer != 0;
}

static void block_by_block(const elm_model *m, const int32_t *ids) {
    const size_t nv = (size_t)m->hp.n_vocab, dim = (size_t)m->hp.dim;
    const int n_layers = m->hp.n_layers;
    float *ref = malloc(sizeof(float) * N * nv), *logits = malloc(sizeof(float) * N * nv);
    float *x = malloc(sizeof(float) * N * dim), *x_full = malloc(sizeof(float) * N * dim);
    elm_context *c = context(m, N);
    elm_error err;
    if (!ref || !logits || !x || !x_full || !c) goto done;
    CHECK(elm_forward_hidden(c, ids, NULL, N, x_full, ref, true, &err) == ELM_OK, "%s", err.msg);

    /* 0 layers from tokens: the states are the embedding rows (the fixture's scale is 1) */
    elm_model v = view_of(m, 0, 0);
    elm_context *cv = context(&v, N);
    if (!cv) goto done;
    CHECK(elm_context_kv_bytes(cv) == 0, "0-layer KV cache of %zu bytes", elm_context_kv_bytes(cv));
    CHECK(elm_forward_hidden(cv, ids, NULL, N, x, NULL, true, &err) == ELM_OK, "embed: %s",
          err.msg);
    elm_context_free(cv);
    bool embedded = m->tok_embd->type == ELM_TYPE_F32;
    for (int t = 0; t < N && embedded; t++)
        embedded = !memcmp(x + t * dim, (const float *)m->tok_embd->data + (size_t)ids[t] * dim,
                           sizeof(float) * dim);
    CHECK(embedded, "0-layer view: x_out is not the embedding rows");

    for (int l = 0; l < n_layers; l++) {
        v = view_of(m, l, 1);
        if (!(cv = context(&v, N))) goto done;
        seen s = {.L = &m->layers[l]};
        elm_context_set_hook(cv, on_matmul, &s);
        CHECK(elm_forward_hidden(cv, NULL, x, N, x, NULL, false, &err) == ELM_OK, "block %d: %s", l,
              err.msg);
        CHECK(s.n == 7 && s.n_own == 7 && !s.bad_index,
              "block %d: hook saw %d products, %d of the block's, %d with index != 0", l, s.n,
              s.n_own, s.bad_index);
        CHECK(elm_context_n_past(cv) == N && elm_context_tokens(cv)[0] == -1,
              "block %d: n_past %d, id %d", l, elm_context_n_past(cv), elm_context_tokens(cv)[0]);
        elm_context_free(cv);
    }
    const double dx = max_diff(x, x_full, N * dim);
    v = view_of(m, n_layers, 0);
    if (!(cv = context(&v, N))) goto done;
    CHECK(elm_forward_hidden(cv, NULL, x, N, NULL, logits, true, &err) == ELM_OK, "output: %s",
          err.msg);
    elm_context_free(cv);
    const double dl = max_diff(logits, ref, N * nv);
    printf("block by block vs whole model: max |diff| of final states %g, of logits %g\n", dx, dl);
    CHECK(dx <= 1e-4 && dl <= 1e-4, "states differ by %g, logits by %g", dx, dl);
done:
    elm_context_free(c);
    free(ref);
    free(logits);
    free(x);
    free(x_full);
}

static void bad_arguments(const elm_model *m, const int32_t *ids) {
    elm_context *c = context(m, N_CTX);
    float *x = calloc((size_t)N_CTX * m->hp.dim, sizeof(float));
    elm_error err;
    if (!c || !x) goto done;
    CHECK(elm_forward_hidden(c, ids, NULL, 4, NULL, NULL, false, &err) == ELM_OK, "%s", err.msg);
    const struct {
        const int32_t *tokens;
        const float *x;
        int32_t n;
        const char *what;
    } cases[] = {{ids, x, 1, "both tokens and x"},
                 {NULL, NULL, 1, "neither tokens nor x"},
                 {NULL, x, 0, "n = 0"},
                 {ids, NULL, -1, "n = -1"},
                 {NULL, x, N_CTX + 1, "n > n_batch"},
                 {ids, NULL, N_CTX - 3, "n_past + n > n_ctx"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        elm_status st = elm_forward_hidden(c, cases[i].tokens, cases[i].x, cases[i].n, x, NULL,
                                           false, &err);
        CHECK(st == ELM_ERR_ARG, "%s: status %d", cases[i].what, st);
    }
    const int32_t bad[2] = {1, m->hp.n_vocab};
    CHECK(elm_forward_hidden(c, bad, NULL, 2, NULL, NULL, false, &err) == ELM_ERR_ARG,
          "token id n_vocab accepted");
    CHECK(elm_forward(c, NULL, 1, NULL, false, &err) == ELM_ERR_ARG, "elm_forward without tokens");
    CHECK(elm_context_n_past(c) == 4, "n_past %d after refused calls", elm_context_n_past(c));
done:
    elm_context_free(c);
    free(x);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load: %s", err.msg);
        return check_done();
    }
    int32_t ids[N];
    ids[0] = m->vocab.bos_id;
    for (int t = 1; t < N; t++) ids[t] = (t * 37 + 11) % m->hp.n_vocab;
    same_as_forward(m, ids);
    block_by_block(m, ids);
    bad_arguments(m, ids);
    elm_model_free(m);
    return check_done();
}
