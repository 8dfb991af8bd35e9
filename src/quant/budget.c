/* A size budget: sensitivities measured one block at a time, then the types chosen on each
 * tensor's convex hull of (bytes, cost) points (budget.h). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/encode.h"
#include "edgelm/context.h"
#include "edgelm/system.h"
#include "quant/budget.h"
#include "quant/capture.h"
#include "quant/errfig.h"
#include "quant/layerwise_ops.h"
#include "quant/recipe.h"

enum { MENU_MAX = 16 };

/* Calibration samples the end-to-end KLD is measured on (the first ones), and their tokens (the
 * first ones: a causal model's states there do not depend on the rest): each tensor costs a pass
 * of the blocks after it over them, whose attention grows with the square of their length. */
enum { KLD_SAMPLES = 32, KLD_TOKENS = 128 };

int32_t elm_budget_default(bool with_imatrix, elm_type out[16]) {
    static const elm_type base[] = {
        ELM_TYPE_Q2_K, ELM_TYPE_Q3_K, ELM_TYPE_Q4_K, ELM_TYPE_Q5_K, ELM_TYPE_Q6_K,
        ELM_TYPE_Q8_0, ELM_TYPE_Q4_0, ELM_TYPE_Q4_1, ELM_TYPE_Q5_0, ELM_TYPE_Q5_1,
        ELM_TYPE_IQ4_NL, ELM_TYPE_IQ4_XS};
    int32_t n = 0;
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) out[n++] = base[k];
    if (with_imatrix) {
        out[n++] = ELM_TYPE_IQ2_XS;
        out[n++] = ELM_TYPE_IQ3_S;
    }
    return n;
}

/* A type a tensor may take, with its bytes and predicted cost. */
typedef struct option {
    elm_type type;
    uint64_t bytes;
    double cost;
} option;

/* The options of one tensor the budget chooses for; after hull(), the lower convex hull by
 * bytes, `at` the point taken. */
typedef struct choice {
    int32_t tensor;
    int32_t n, at;
    int32_t ref;  /* the option the KLD was measured at (the first of the fewest bytes) */
    double kld;   /* mean KLD per token with the tensor alone at opt[ref] */
    option opt[MENU_MAX];
} choice;

typedef struct budget {
    const elm_model *m;
    float *x_last;  /* [Σ KLD samples' tokens, dim] the float model's states after its last
                     * block */
    const elm_quant_params *p;
    choice *c;      /* [n_c] */
    int32_t n_c;
    int32_t *slot;  /* [m->n_tensors] index into c, or -1 */
    float *w, *qw;  /* a tensor's float weights and importances */
} budget;

static int64_t rows_of(const elm_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

static uint64_t bytes_at(elm_type type, const elm_tensor *t) {
    return (uint64_t)elm_row_bytes(type, t->ne[0]) * (uint64_t)rows_of(t);
}

/* t's importances into b->qw (with an imatrix that has t, for round-to-nearest); NULL when
 * none. */
static const float *importances(budget *b, const elm_tensor *t) {
    const elm_imatrix *im = b->p->method == ELM_QUANT_RTN ? b->p->imatrix : NULL;
    const elm_imatrix_entry *e = im ? elm_imatrix_find(im, t->name) : NULL;
    if (!e || e->n != t->ne[0]) return NULL;
    elm_imatrix_weights(e, b->qw);
    return b->qw;
}

/* The candidates t can be written in: a block that divides its rows, and importances where the
 * type cannot be written without them (llama-quantize's rule, elm_recipe_needs_imatrix). */
static void options_of(budget *b, const elm_tensor *t, const elm_type *menu, int32_t n_menu,
                       uint32_t ftype, choice *c) {
    const bool qw = importances(b, t) != NULL;
    c->n = c->at = 0;
    for (int32_t k = 0; k < n_menu; k++) {
        const elm_type_traits *tt = elm_type_get((uint32_t)menu[k]);
        if (!elm_row_bytes(menu[k], t->ne[0])) continue;
        if (!qw && (!tt->from_float || elm_recipe_needs_imatrix(t->name, menu[k], ftype))) continue;
        c->opt[c->n++] = (option){menu[k], bytes_at(menu[k], t), 0};
    }
}

/* Marks tensor t (of m) as one the budget chooses for, when it is a 2-D weight with options
 * that no --tensor-type override fixes (policy.c's reason for one: "override '...'"). */
static void add(budget *b, const elm_tensor *t, const elm_tensor_plan *plan,
                const elm_type *menu, int32_t n_menu, uint32_t ftype) {
    if (!t || t->n_dims < 2 || t->ne[2] * t->ne[3] != 1 || elm_recipe_keeps(t->name)) return;
    const int32_t i = (int32_t)(t - b->m->tensors);
    if (i < 0 || i >= b->m->n_tensors || b->slot[i] >= 0 ||
        !strncmp(plan[i].reason, "override '", 10))
        return;
    choice *c = &b->c[b->n_c];
    c->tensor = i;
    options_of(b, t, menu, n_menu, ftype, c);
    if (c->n) b->slot[i] = b->n_c++;
}

/* t's weights decoded into b->w, checked finite. */
static elm_status decode(budget *b, const elm_tensor *t, elm_error *err) {
    const int64_t cols = t->ne[0];
    const size_t rb = elm_row_bytes(t->type, cols);
    for (int64_t r = 0; r < rows_of(t); r++) {
        const uint8_t *raw = (const uint8_t *)t->data + (size_t)r * rb;
        elm_type_get(t->type)->to_float(raw, b->w + r * cols, cols);
        elm_status st = elm_check_row(b->m, t, r, raw, b->w + r * cols, err);
        if (st) return st;
    }
    return ELM_OK;
}

/* The costs of linear t with input Hessian H: ½·Σ_r e_rᵀ H e_r on errfig's row sample, scaled
 * to all rows. */
static elm_status linear_costs(budget *b, const elm_tensor *t, const float *H, elm_error *err) {
    const int32_t i = (int32_t)(t - b->m->tensors);
    if (b->slot[i] < 0) return ELM_OK;
    choice *c = &b->c[b->slot[i]];
    elm_status st = decode(b, t, err);
    if (st) return st;
    elm_err_sample e;
    if (!elm_err_sample_init(&e, rows_of(t), t->ne[0]))
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory measuring '%s'", t->name);
    const float *qw = importances(b, t);
    for (int32_t k = 0; k < c->n; k++) {
        double quad[3];
        elm_err_sample_weights(&e, c->opt[k].type, b->w, qw);
        elm_err_sample_values(&e, b->w, NULL, NULL); /* (the method's set: unused here) */
        elm_err_sample_quads(&e, H, quad);
        c->opt[k].cost = 0.5 * quad[1] * (double)e.rows / (double)e.n;
    }
    elm_err_sample_free(&e);
    return ELM_OK;
}

/* Embedding rows whose rounding is measured: every stride-th, at most about this many (the
 * costs' ratios between types are what count; a large vocabulary's rows are many). */
enum { EMBD_ROWS = 4096 };

/* The embedding's costs: Σ_v (count_v + 1)·‖e_v - ê_v‖² over its sampled rows. */
static elm_status embedding_costs(budget *b, const elm_tensor *t, elm_error *err) {
    const int32_t i = (int32_t)(t - b->m->tensors);
    if (b->slot[i] < 0) return ELM_OK;
    choice *c = &b->c[b->slot[i]];
    const int64_t rows = rows_of(t), cols = t->ne[0];
    const elm_calib_set *cs = b->p->calib;
    double *count = calloc((size_t)rows, sizeof *count);
    float *row = malloc(sizeof(float) * (size_t)cols);
    uint8_t *enc = malloc(sizeof(float) * (size_t)cols); /* any candidate's row fits */
    elm_status st = count && row && enc ? decode(b, t, err)
                    : elm_errorf(err, ELM_ERR_NOMEM, "out of memory measuring '%s'", t->name);
    for (int32_t s = 0; !st && s < cs->n; s++)
        for (int32_t j = 0; j < cs->n_ids[s]; j++)
            if (cs->ids[s][j] >= 0 && cs->ids[s][j] < rows) count[cs->ids[s][j]] += 1;
    const float *qw = st ? NULL : importances(b, t);
    for (int32_t k = 0; !st && k < c->n; k++) {
        const elm_type_traits *tt = elm_type_get((uint32_t)c->opt[k].type);
        double sum = 0;
        for (int64_t v = 0; v < rows; v += (rows + EMBD_ROWS - 1) / EMBD_ROWS) {
            const float *w = b->w + v * cols;
            elm_encode_row(c->opt[k].type, w, enc, cols, qw);
            tt->to_float(enc, row, cols);
            double e2 = 0;
            for (int64_t j = 0; j < cols; j++) e2 += (double)(w[j] - row[j]) * (w[j] - row[j]);
            sum += (count[v] + 1) * e2;
        }
        c->opt[k].cost = sum;
    }
    free(count);
    free(row);
    free(enc);
    return st;
}

/* log Σ_j exp(z[j]) of z [n], and with e non-NULL e[j] = exp(z[j] - max z) and *mx the max. */
static double log_sum_exp(const float *z, int64_t n, float *e, float *mx) {
    float m = z[0];
    for (int64_t j = 1; j < n; j++) m = z[j] > m ? z[j] : m;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        const float x = expf(z[j] - m);
        if (e) e[j] = x;
        sum += x;
    }
    if (mx) *mx = m;
    return m + log(sum);
}

/* KL(p_r ‖ p_q) of the softmaxes of logits r and q [n]; e [n] scratch. */
static double kl_logits(const float *r, const float *q, int64_t n, float *e) {
    float mr;
    const double lse_r = log_sum_exp(r, n, e, &mr), lse_q = log_sum_exp(q, n, NULL, NULL);
    const double sum = exp(lse_r - mr); /* Σ e */
    double k = 0;
    for (int64_t j = 0; j < n; j++) k += (double)e[j] * ((double)r[j] - (double)q[j]);
    return k / sum - lse_r + lse_q;
}

/* Model pm's layers first.. (all: from the tokens; else from the float states x at block first's
 * input) and output over the first KLD samples, against the float model's output from x_last:
 * the mean KL divergence per token, in nats. */
static elm_status kld_from(budget *b, const elm_model *pm, int first, const float *x,
                           double *kld, elm_error *err) {
    const elm_model *m = b->m;
    const elm_calib_set *cs = b->p->calib;
    const int32_t n_s = cs->n < KLD_SAMPLES ? cs->n : KLD_SAMPLES;
    const int64_t V = m->hp.n_vocab;
    elm_model view = *pm, ref = *m;
    view.layers = pm->layers + first;
    view.hp.n_layers = m->hp.n_layers - first;
    view.hp.first_layer = m->hp.first_layer + first;
    ref.layers = m->layers + m->hp.n_layers;
    ref.hp.n_layers = 0;
    ref.hp.first_layer = m->hp.first_layer + m->hp.n_layers;
    int32_t n_ctx = 1;
    for (int32_t i = 0; i < n_s; i++) n_ctx = cs->n_ids[i] > n_ctx ? cs->n_ids[i] : n_ctx;
    if (n_ctx > KLD_TOKENS) n_ctx = KLD_TOKENS;
    elm_context_params cp = {.n_ctx = n_ctx, .n_batch = n_ctx, .n_threads = b->p->n_threads};
    elm_context *cq = NULL, *cr = NULL;
    float *lq = malloc(sizeof(float) * (size_t)n_ctx * (size_t)V);
    float *lr = malloc(sizeof(float) * (size_t)n_ctx * (size_t)V);
    float *e = malloc(sizeof(float) * (size_t)V);
    elm_status st = lq && lr && e ? ELM_OK
                    : elm_errorf(err, ELM_ERR_NOMEM, "out of memory for logits");
    if (!st) st = elm_context_new(&view, &cp, &cq, err);
    if (!st) st = elm_context_new(&ref, &cp, &cr, err);
    double sum = 0;
    int64_t n_tok = 0;
    size_t off = 0;
    for (int32_t i = 0; i < n_s && !st; i++) {
        const int32_t n = cs->n_ids[i] < KLD_TOKENS ? cs->n_ids[i] : KLD_TOKENS;
        elm_context_reset(cq);
        elm_context_reset(cr);
        st = elm_forward_hidden(cq, first ? NULL : cs->ids[i], first ? x + off : NULL, n, NULL,
                                lq, true, err);
        if (!st) st = elm_forward_hidden(cr, NULL, b->x_last + off, n, NULL, lr, true, err);
        for (int32_t t = 0; t < n && !st; t++)
            sum += kl_logits(lr + (size_t)t * (size_t)V, lq + (size_t)t * (size_t)V, V, e);
        n_tok += n;
        off += (size_t)cs->n_ids[i] * (size_t)m->hp.dim;
    }
    elm_context_free(cq);
    elm_context_free(cr);
    free(lq);
    free(lr);
    free(e);
    *kld = n_tok ? sum / (double)n_tok : 0;
    return st;
}

/* The KLD with tensor t alone at its smallest option (first: its block, and x the float states
 * at its input; 0 and NULL for the embedding; the output: n_layers). */
static elm_status kld_measure(budget *b, const elm_tensor *t, int first, const float *x,
                              elm_error *err) {
    const elm_model *m = b->m;
    const int32_t i = (int32_t)(t - m->tensors);
    if (b->slot[i] < 0) return ELM_OK;
    choice *c = &b->c[b->slot[i]];
    int32_t lo = 0;
    for (int32_t k = 1; k < c->n; k++)
        if (c->opt[k].bytes < c->opt[lo].bytes) lo = k;
    c->ref = lo;
    const elm_type type = c->opt[lo].type;
    const int64_t rows = rows_of(t), cols = t->ne[0];
    const size_t rb = elm_row_bytes(type, cols);
    uint8_t *enc = malloc(rb * (size_t)rows);
    elm_layer *layers = malloc(sizeof *layers * (size_t)(m->hp.n_layers ? m->hp.n_layers : 1));
    elm_status st = enc && layers ? decode(b, t, err)
                    : elm_errorf(err, ELM_ERR_NOMEM, "out of memory measuring '%s'", t->name);
    const float *qw = st ? NULL : importances(b, t);
    for (int64_t r = 0; !st && r < rows; r++)
        elm_encode_row(type, b->w + r * cols, enc + (size_t)r * rb, cols, qw);
    double kld = 0;
    if (!st) {
        /* the model with t alone at `type`: its slot, wherever it is bound, points to the copy */
        elm_tensor q = *t;
        q.type = type;
        q.data = enc;
        q.nbytes = rb * (size_t)rows;
        q.packed_by = NULL;
        elm_model pm = *m;
        memcpy(layers, m->layers, sizeof *layers * (size_t)m->hp.n_layers);
        pm.layers = layers;
        if (pm.tok_embd == t) pm.tok_embd = &q;
        if (pm.output == t) pm.output = &q;
        for (int l = first; l < m->hp.n_layers; l++) {
            elm_tensor **slots[ELM_LAYER_SLOTS];
            const int n = elm_layer_slots(&layers[l], slots);
            for (int k = 0; k < n; k++)
                if (*slots[k] == t) *slots[k] = &q;
        }
        st = kld_from(b, &pm, first, x, &kld, err);
    }
    c->kld = kld;
    free(enc);
    free(layers);
    return st;
}

static void free_stats(elm_act_stats *s, int n) {
    for (int k = 0; k < n; k++) elm_act_stats_free(&s[k]);
}

/* Block l's linears: their groups' Hessians from the states x (advanced to block l+1's input). */
static elm_status block_costs(budget *b, int l, float *x, elm_error *err) {
    const elm_layer *L = &b->m->layers[l];
    elm_lw_group g[4];
    elm_lw_layer_groups(L, g);
    elm_act_stats s[4];
    memset(s, 0, sizeof s);
    elm_status st = ELM_OK;
    for (int gi = 0; gi < 4 && !st; gi++) {
        bool any = false;
        for (int k = 0; k < g[gi].n; k++)
            any |= g[gi].m[k] && b->slot[g[gi].m[k] - b->m->tensors] >= 0;
        if (any) st = elm_act_stats_init(&s[gi], g[gi].m[0], -1, true, err);
    }
    for (int gi = 0; gi < 4 && !st; gi++)
        for (int k = 0; k < g[gi].n && !st && s[gi].key; k++)
            if (g[gi].m[k]) st = kld_measure(b, g[gi].m[k], l, x, err);
    if (!st)
        st = elm_capture(b->m, l, 1, false, b->p->calib, b->p->n_threads, x, x, s, 4, err);
    for (int gi = 0; gi < 4 && !st; gi++)
        for (int k = 0; k < g[gi].n && !st && s[gi].key; k++)
            if (g[gi].m[k]) st = linear_costs(b, g[gi].m[k], s[gi].h, err);
    free_stats(s, 4);
    return st;
}

/* Every chosen tensor's costs: the float model run once over the calibration set for the
 * Hessians, and from each block on over the first KLD samples for each tensor's KLD. */
static elm_status measure(budget *b, elm_error *err) {
    const elm_model *m = b->m;
    const elm_calib_set *cs = b->p->calib;
    elm_calib_set head = *cs; /* the KLD samples */
    head.n = cs->n < KLD_SAMPLES ? cs->n : KLD_SAMPLES;
    size_t n_x = 0, n_head = 0;
    for (int32_t i = 0; i < cs->n; i++) {
        n_x += (size_t)cs->n_ids[i];
        if (i < head.n) n_head += (size_t)cs->n_ids[i];
    }
    n_x *= (size_t)m->hp.dim;
    n_head *= (size_t)m->hp.dim;
    float *x = malloc(sizeof(float) * (n_x ? n_x : 1));
    b->x_last = malloc(sizeof(float) * (n_head ? n_head : 1));
    elm_status st = x && b->x_last ? ELM_OK
                    : elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for the calibration "
                                 "states", m->path);
    if (!st) st = elm_capture(m, 0, 0, false, cs, b->p->n_threads, NULL, x, NULL, 0, err);
    if (!st)
        st = elm_capture(m, 0, m->hp.n_layers, false, &head, b->p->n_threads, x, b->x_last, NULL,
                         0, err);
    if (!st && m->tok_embd) st = embedding_costs(b, m->tok_embd, err);
    if (!st && m->tok_embd) st = kld_measure(b, m->tok_embd, 0, NULL, err);
    for (int l = 0; l < m->hp.n_layers && !st; l++) st = block_costs(b, l, x, err);
    if (!st && m->output && m->output != m->tok_embd &&
        b->slot[m->output - m->tensors] >= 0) {
        elm_act_stats s = {0};
        st = elm_act_stats_init(&s, m->output, -1, true, err);
        if (!st)
            st = elm_capture(m, m->hp.n_layers, 0, true, cs, b->p->n_threads, x, NULL, &s, 1,
                             err);
        if (!st) st = linear_costs(b, m->output, s.h, err);
        if (!st) st = kld_measure(b, m->output, m->hp.n_layers, x, err);
        elm_act_stats_free(&s);
    }
    /* the errors give the ratios between a tensor's types, its KLD the scale */
    for (int32_t k = 0; k < b->n_c && !st; k++) {
        choice *c = &b->c[k];
        const double base = c->opt[c->ref].cost;
        for (int32_t j = 0; j < c->n; j++)
            c->opt[j].cost = base > 0 ? c->kld * c->opt[j].cost / base : 0;
    }
    free(x);
    free(b->x_last);
    b->x_last = NULL;
    return st;
}

static int by_bytes(const void *a, const void *b) {
    const option *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
    return (x->cost > y->cost) - (x->cost < y->cost);
}

/* c's options reduced to the lower convex hull of (bytes, cost): ascending bytes, descending
 * cost, each step's cost saved per byte no more than the step's before it. */
static void hull(choice *c) {
    qsort(c->opt, (size_t)c->n, sizeof *c->opt, by_bytes);
    int32_t h = 0;
    for (int32_t k = 0; k < c->n; k++) {
        const option o = c->opt[k];
        if (h && o.cost >= c->opt[h - 1].cost) continue; /* dominated (also: same bytes) */
        while (h >= 2) {
            const option *a = &c->opt[h - 2], *p = &c->opt[h - 1];
            /* p lies on or above the chord a-o */
            const double lhs = (p->cost - a->cost) * (double)(o.bytes - a->bytes);
            const double rhs = (o.cost - a->cost) * (double)(p->bytes - a->bytes);
            if (lhs < rhs) break;
            h--;
        }
        c->opt[h++] = o;
    }
    c->n = h;
}

/* Greedy marginal gain over the hulls from their smallest points, within avail bytes (which
 * those points fit: the caller checked). */
static void allocate(budget *b, uint64_t avail) {
    uint64_t used = 0;
    for (int32_t k = 0; k < b->n_c; k++) {
        hull(&b->c[k]);
        used += b->c[k].opt[0].bytes;
    }
    for (;;) {
        int32_t best = -1;
        double best_gain = 0;
        for (int32_t k = 0; k < b->n_c; k++) {
            const choice *c = &b->c[k];
            if (c->at + 1 >= c->n) continue;
            const option *cur = &c->opt[c->at], *next = &c->opt[c->at + 1];
            if (used - cur->bytes + next->bytes > avail) continue;
            const double gain = (cur->cost - next->cost) / (double)(next->bytes - cur->bytes);
            if (best < 0 || gain > best_gain) {
                best = k;
                best_gain = gain;
            }
        }
        if (best < 0) return;
        choice *c = &b->c[best];
        used += c->opt[c->at + 1].bytes - c->opt[c->at].bytes;
        c->at++;
    }
}

/* The budget in bytes of tensor data. */
/* The weights of m, every tensor's. */
static int64_t n_params_of(const elm_model *m) {
    int64_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) n += m->tensors[i].ne[0] * rows_of(&m->tensors[i]);
    return n;
}

static elm_status target_of(const elm_model *m, const elm_quant_params *p, uint64_t *target,
                            elm_error *err) {
    if (p->target_bytes) {
        *target = p->target_bytes;
        return ELM_OK;
    }
    if (!(p->target_bpw > 0) || p->target_bpw > 16)
        return elm_errorf(err, ELM_ERR_ARG, "--target-bpw %g is outside (0, 16]: above F16's 16 "
                          "bits per weight no type is worth choosing", p->target_bpw);
    *target = (uint64_t)floor(p->target_bpw * (double)n_params_of(m) / 8.0);
    return ELM_OK;
}

elm_status elm_quant_budget(const elm_model *m, const elm_quant_params *p, elm_tensor_plan *plan,
                            double *cost, elm_error *err) {
    const int32_t n = m->n_tensors;
    for (int32_t i = 0; i < n; i++) cost[i] = -1;
    uint64_t target = 0;
    elm_status st = target_of(m, p, &target, err);
    if (st) return st;
    if (!p->calib || p->calib->n <= 0)
        return elm_errorf(err, ELM_ERR_ARG, "a size budget measures each tensor on calibration "
                          "text: give --calib FILE");
    elm_type menu[MENU_MAX];
    int32_t n_menu = p->candidates ? p->n_candidates : elm_budget_default(p->imatrix != NULL, menu);
    if (p->candidates) {
        if (n_menu < 1 || n_menu > MENU_MAX)
            return elm_errorf(err, ELM_ERR_ARG, "--candidates: 1 to %d types", MENU_MAX);
        memcpy(menu, p->candidates, sizeof *menu * (size_t)n_menu);
    }
    for (int32_t k = 0; k < n_menu; k++) {
        const elm_type_traits *tt = elm_type_get((uint32_t)menu[k]);
        if (!elm_type_writable(menu[k]))
            return elm_errorf(err, ELM_ERR_ARG, "--candidates: type %s is not writable",
                              tt ? tt->name : "?");
    }
    openblas_set_num_threads(p->n_threads > 0 ? p->n_threads : elm_online_cores());
    int64_t widest = 1;
    for (int32_t i = 0; i < n; i++) {
        const int64_t sz = m->tensors[i].ne[0] * rows_of(&m->tensors[i]);
        if (m->tensors[i].n_dims >= 2 && sz > widest) widest = sz;
    }
    budget b = {.m = m, .p = p, .c = calloc(n ? (size_t)n : 1, sizeof *b.c),
                .slot = malloc(sizeof *b.slot * (n ? (size_t)n : 1)),
                .w = malloc(sizeof(float) * (size_t)widest),
                .qw = malloc(sizeof(float) * (size_t)widest)};
    if (!b.c || !b.slot || !b.w || !b.qw) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    const uint32_t ftype = p->policy.recipe ? p->policy.recipe : elm_file_type_of(p->policy.type);
    for (int32_t i = 0; !st && i < n; i++) b.slot[i] = -1;
    if (!st) {
        add(&b, m->tok_embd, plan, menu, n_menu, ftype);
        add(&b, m->output, plan, menu, n_menu, ftype);
    }
    for (int l = 0; !st && l < m->hp.n_layers; l++) {
        elm_lw_group g[4];
        elm_lw_layer_groups(&m->layers[l], g);
        for (int gi = 0; gi < 4; gi++)
            for (int k = 0; k < g[gi].n; k++) add(&b, g[gi].m[k], plan, menu, n_menu, ftype);
    }
    /* the smallest file: the fixed tensors and every other at its smallest candidate */
    uint64_t least = 0;
    for (int32_t i = 0; !st && i < n; i++) {
        if (b.slot[i] < 0) {
            least += bytes_at(plan[i].type, &m->tensors[i]);
            continue;
        }
        const choice *c = &b.c[b.slot[i]];
        uint64_t lo = c->opt[0].bytes;
        for (int32_t k = 1; k < c->n; k++)
            if (c->opt[k].bytes < lo) lo = c->opt[k].bytes;
        least += lo;
    }
    if (!st && least > target)
        st = elm_errorf(err, ELM_ERR_ARG, "%s: a budget of %llu bytes of tensor data is below the "
                        "smallest these candidates give, %llu bytes (%.3f bits per weight)",
                        m->path, (unsigned long long)target, (unsigned long long)least,
                        8.0 * (double)least / (double)n_params_of(m));
    if (!st) st = measure(&b, err);
    if (!st) {
        uint64_t fixed = 0;
        for (int32_t i = 0; i < n; i++)
            if (b.slot[i] < 0) fixed += bytes_at(plan[i].type, &m->tensors[i]);
        allocate(&b, target - fixed);
    }
    for (int32_t k = 0; !st && k < b.n_c; k++) {
        const choice *c = &b.c[k];
        elm_tensor_plan *pl = &plan[c->tensor];
        pl->type = pl->wanted = c->opt[c->at].type;
        cost[c->tensor] = c->opt[c->at].cost;
        snprintf(pl->reason, sizeof pl->reason, "size budget: %d-point hull, step %d",
                 (int)c->n, (int)c->at + 1);
    }
    free(b.c);
    free(b.slot);
    free(b.w);
    free(b.qw);
    return st;
}
