/* Activation capture (capture.h): a matmul hook adds each observed input batch X [n_tok, cols] to
 * H += 2·XᵀX with one BLAS rank-k update (ssyrk, upper triangle) when H is kept, to per-channel |x|
 * sums and maxima, and to the signed range. Keys are matched by tensor pointer, not by the hook's
 * layer index, which counts from the first layer of the model view run. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/context.h"
#include "quant/capture.h"

const elm_tensor *elm_expert_of(const elm_layer *L, const elm_tensor *w, int32_t *expert) {
    const elm_tensor *stacks[3] = {L->gate_exps, L->up_exps, L->down_exps};
    const uintptr_t p = (uintptr_t)w->data;
    for (int k = 0; k < 3; k++) {
        const elm_tensor *s = stacks[k];
        const uintptr_t lo = s ? (uintptr_t)s->data : 0;
        if (!s || w == s || !w->nbytes || p < lo || p >= lo + s->nbytes) continue;
        *expert = (int32_t)((p - lo) / w->nbytes);
        return s;
    }
    return NULL;
}

elm_status elm_act_stats_init(elm_act_stats *s, const elm_tensor *key, int32_t expert,
                              bool hessian, elm_error *err) {
    memset(s, 0, sizeof *s);
    s->key = key;
    s->expert = expert;
    s->cols = key->ne[0];
    s->lo = INFINITY;
    s->hi = -INFINITY;
    s->h = hessian ? calloc((size_t)(s->cols * s->cols), sizeof *s->h) : NULL;
    s->abs_mean = calloc((size_t)s->cols, sizeof *s->abs_mean);
    s->abs_max = calloc((size_t)s->cols, sizeof *s->abs_max);
    if ((hessian && !s->h) || !s->abs_mean || !s->abs_max) {
        elm_act_stats_free(s);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for the %lld x %lld Hessian of '%s'",
                          (long long)s->cols, (long long)s->cols, key->name);
    }
    return ELM_OK;
}

void elm_act_stats_free(elm_act_stats *s) {
    free(s->h);
    free(s->abs_mean);
    free(s->abs_max);
    memset(s, 0, sizeof *s);
}

typedef struct capture {
    const elm_model *view; /* the layers run: the hook's layer index is into view->layers */
    elm_act_stats *stats;
    int32_t n_stats;
} capture;

static void on_matmul(const elm_tensor *w, int layer, const float *x, int64_t n_tok, void *user) {
    capture *c = user;
    int32_t e = -1;
    const elm_tensor *stack = layer >= 0 ? elm_expert_of(&c->view->layers[layer], w, &e) : NULL;
    const elm_tensor *key = stack ? stack : w;
    for (int32_t k = 0; k < c->n_stats; k++) {
        elm_act_stats *s = &c->stats[k];
        if (s->key != key || s->expert != e) continue;
        const int64_t cols = s->cols;
        for (int64_t t = 0; t < n_tok; t++)
            for (int64_t j = 0; j < cols; j++) {
                const float v = x[t * cols + j], a = fabsf(v);
                s->abs_mean[j] += a;
                if (!(a <= s->abs_max[j])) s->abs_max[j] = a; /* keeps a NaN for the check */
                s->lo = v < s->lo ? v : s->lo;
                s->hi = v > s->hi ? v : s->hi;
            }
        if (s->h)
            cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)cols, (int)n_tok, 2.0f, x,
                        (int)cols, 1.0f, s->h, (int)cols);
        s->n_rows += n_tok;
    }
}

elm_status elm_capture(const elm_model *m, int32_t first, int32_t n_layers, bool with_output,
                       const elm_calib_set *cs, int32_t n_threads, const float *x_in,
                       float *x_out, elm_act_stats *stats, int32_t n_stats, elm_error *err) {
    if (first < 0 || n_layers < 0 || first + n_layers > m->hp.n_layers ||
        (with_output && first + n_layers != m->hp.n_layers))
        return elm_errorf(err, ELM_ERR_ARG, "%s: capture of layers %d..%d%s of %d", m->path,
                          first, first + n_layers - 1, with_output ? " and the output" : "",
                          m->hp.n_layers);
    /* Gemma 4's per-layer embeddings and shared caches span the whole model */
    if ((m->hp.n_embd_per_layer || m->hp.n_kv_shared) && (first || n_layers != m->hp.n_layers))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: calibration block by block: %s's "
                          "per-layer embeddings and shared KV layers need the whole model",
                          m->path, m->hp.arch);
    elm_model view = *m; /* the layers asked for only: the others are not run */
    view.layers = m->layers + first;
    view.hp.n_layers = n_layers;
    view.hp.first_layer = m->hp.first_layer + first; /* NoPE and windowed layers go by index */
    int32_t n_ctx = 1;
    for (int32_t i = 0; i < cs->n; i++) n_ctx = cs->n_ids[i] > n_ctx ? cs->n_ids[i] : n_ctx;
    capture c = {&view, stats, n_stats};
    float *logits = with_output ? malloc(sizeof(float) * (size_t)n_ctx * (size_t)m->hp.n_vocab) : NULL;
    elm_context *ctx = NULL;
    elm_status st = ELM_OK;
    if (with_output && !logits)
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for calibration activations");
    elm_context_params cp = {.n_ctx = n_ctx, .n_batch = n_ctx, .n_threads = n_threads};
    if (!st) st = elm_context_new(&view, &cp, &ctx, err);
    if (!st) elm_context_set_hook(ctx, on_matmul, &c);
    size_t off = 0; /* of sample i's states in x_in and x_out */
    for (int32_t i = 0; i < cs->n && !st; i++) {
        elm_context_reset(ctx);
        st = elm_forward_hidden(ctx, x_in ? NULL : cs->ids[i], x_in ? x_in + off : NULL,
                                cs->n_ids[i], x_out ? x_out + off : NULL, logits, true, err);
        off += (size_t)cs->n_ids[i] * (size_t)m->hp.dim;
    }
    elm_context_free(ctx);
    free(logits);
    for (int32_t k = 0; k < n_stats && !st; k++) {
        elm_act_stats *s = &stats[k];
        const int64_t n = s->cols;
        if (!s->key) continue;
        bool finite = true;
        for (int64_t j = 0; j < n; j++) {
            finite &= isfinite(s->abs_max[j]) && (!s->h || isfinite(s->h[j * n + j]));
            if (s->n_rows) s->abs_mean[j] /= (double)s->n_rows;
            for (int64_t i = 0; s->h && i < j; i++) s->h[j * n + i] = s->h[i * n + j];
        }
        if (!finite)
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "%s: non-finite activations at the input of '%s' (weights too large?)",
                            m->path, s->key->name);
        else if (s->n_rows == 0 && cs->n > 0 && s->expert < 0)
            st = elm_errorf(err, ELM_ERR_ARG, "%s: the forward pass never reached '%s'", m->path,
                            s->key->name);
    }
    return st;
}
