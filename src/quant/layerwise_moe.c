/* A mixture of experts' FFN in the layer-by-layer GPTQ and AWQ (layerwise_ops.h). Each expert's
 * matrix is a linear of its own, calibrated from the tokens the router sends to it: the block's
 * capture keeps, per expert, the Hessian and mean |x| of its gate/up input (the FFN norm's output
 * at those tokens) and of its down input (its gated product), all experts' in the one block pass
 * (n_expert · (dim² + expert_ffn_dim²) floats, next to the block's float copy).
 *
 * An expert that saw fewer tokens than twice a matrix's input width has a Hessian of rank below,
 * or barely above, its size: GPTQ's error feedback then rests on the damping and fits the few
 * tokens seen, and AWQ's scale search is as noisy. Such a matrix is rounded by its type's
 * importance-weighted encoder instead (llama-quantize's --imatrix rule) with the mean x² of the
 * inputs it did see as the importance, weights of 1 when it saw none (as llama-quantize weighs an
 * expert without counts), and the report names the expert and its tokens.
 *
 * AWQ: every expert's gate/up input, and the router's, is the one FFN norm's output, so no
 * expert's scale folds into it alone: gate/up keep scales of 1 and get AWQ's clipping on their own
 * inputs. Down's input is its own expert's gated product act(g) ⊙ u, whose scale folds into that
 * expert's up rows as a dense FFN's does; not through gpt-oss's clamped act(g) ⊙ (u + 1) with
 * its up bias, where down keeps scales of 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/encode.h"
#include "quant/awq.h"
#include "quant/layerwise_ops.h"

bool elm_lw_moe(const elm_layer *L) {
    return L->router && L->gate_exps && L->up_exps && L->down_exps;
}

bool elm_lw_moe_has_grid(const elm_lw_ctx *q, const elm_layer *L) {
    const elm_tensor *stacks[3] = {L->gate_exps, L->up_exps, L->down_exps};
    elm_grid g;
    for (int k = 0; k < 3; k++)
        if (elm_lw_grid_of(q, stacks[k], &g)) return true;
    return false;
}

elm_status elm_lw_moe_stats_init(const elm_layer *L, int32_t n_expert, elm_act_stats *s,
                                 elm_error *err) {
    elm_status st = ELM_OK;
    for (int32_t e = 0; e < n_expert && !st; e++) {
        st = elm_act_stats_init(&s[e], L->gate_exps, e, true, err);
        if (!st) st = elm_act_stats_init(&s[n_expert + e], L->down_exps, e, true, err);
    }
    return st;
}

/* Whether expert statistics s are too few for the matrix t reads (the rule above). */
static bool too_few(const elm_tensor *t, const elm_act_stats *s) {
    return s->n_rows < 2 * t->ne[0];
}

/* Names expert e of stack t in the run's report and in a warning. */
static elm_status note_fallback(elm_lw_ctx *q, const elm_tensor *t, int32_t e,
                                const elm_act_stats *s, elm_error *err) {
    elm_qrun *r = q->r;
    if (r->n_fallback == r->cap_fallback) {
        const int32_t cap = r->cap_fallback ? 2 * r->cap_fallback : 16;
        elm_quant_expert_fallback *f = realloc(r->fallback, sizeof *f * (size_t)cap);
        if (!f) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
        r->fallback = f;
        r->cap_fallback = cap;
    }
    elm_quant_expert_fallback *f = &r->fallback[r->n_fallback++];
    snprintf(f->name, sizeof f->name, "%s", t->name);
    f->expert = e;
    f->tokens = s->n_rows;
    f->needed = 2 * t->ne[0];
    elm_lw_warn(q, "%s: expert %d saw %lld calibration tokens, fewer than %lld (twice its input "
                "width): rounded by its importance-weighted rule, not %s", t->name, e,
                (long long)f->tokens, (long long)f->needed,
                elm_quant_method_name(q->p->method));
    return ELM_OK;
}

/* Expert e of stack t rounded by its type's importance-weighted encoder, the mean x² of the
 * inputs s saw (diag H / 2n) as the importance; the working copy takes the values. */
static elm_status emit_weighted(elm_lw_ctx *q, elm_tensor *t, int32_t e, const elm_act_stats *s,
                                elm_error *err) {
    const elm_tensor v = elm_lw_slice(t, e);
    const int64_t rows = v.ne[1], cols = v.ne[0];
    const elm_type type = q->plan[t - q->r->tensors].type;
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    const size_t rb = elm_row_bytes(type, cols);
    size_t off;
    uint8_t *b = elm_lw_bytes(q, t, e, &off);
    float *qw = malloc(sizeof(float) * (size_t)cols);
    if (!b || !qw) {
        free(qw);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory encoding '%s'", t->name);
    }
    for (int64_t j = 0; j < cols; j++)
        qw[j] = s->n_rows ? (float)(s->h[j * cols + j] / (2.0 * (double)s->n_rows)) : 1.0f;
    float *w = v.data;
    for (int64_t row = 0; row < rows; row++) {
        elm_encode_row(type, w + row * cols, b + off + (size_t)row * rb, cols, qw);
        tt->to_float(b + off + (size_t)row * rb, w + row * cols, cols);
    }
    free(qw);
    return note_fallback(q, t, e, s, err);
}

static elm_status gptq_expert(elm_lw_ctx *q, elm_tensor *t, int32_t e, const elm_act_stats *s,
                              elm_error *err) {
    return too_few(t, s) ? emit_weighted(q, t, e, s, err) : elm_lw_gptq_linear(q, t, e, s, err);
}

/* A copy of linear (t, e)'s float values (*out; free it). */
static elm_status copy_of(const elm_tensor *t, int32_t e, float **out, elm_error *err) {
    const elm_tensor v = elm_lw_slice(t, e);
    if (!(*out = malloc(v.nbytes)))
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory quantizing '%s'", t->name);
    memcpy(*out, v.data, v.nbytes);
    return ELM_OK;
}

/* AWQ of expert e: down's scale searched on its own inputs and folded into its up rows (where
 * the activation allows, the header says), then each of its matrices clipped and quantized. */
static elm_status awq_expert(elm_lw_ctx *q, elm_layer *L, int32_t e, const elm_act_stats *gu,
                             const elm_act_stats *dn, elm_error *err) {
    const int64_t ff = L->down_exps->ne[0];
    const bool fold = q->r->work.hp.ffn_act != ELM_ACT_SWIGLU_OAI && !L->up_exps_b;
    elm_tensor *mats[3] = {L->gate_exps, L->up_exps, L->down_exps};
    float *w0[3] = {0};
    double *scale = malloc(sizeof(double) * (size_t)ff);
    elm_status st = scale ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "out of memory for AWQ scales");
    for (int k = 0; k < 3 && !st; k++) st = copy_of(mats[k], e, &w0[k], err);
    for (int64_t j = 0; j < ff && !st; j++) scale[j] = 1;
    elm_grid g;
    if (!st && fold && elm_lw_grid_of(q, L->down_exps, &g) && !too_few(L->down_exps, dn)) {
        elm_tensor down = elm_lw_slice(L->down_exps, e), up = elm_lw_slice(L->up_exps, e);
        const elm_awq_linear lin = {down.data, down.ne[1], &g};
        double alpha;
        st = elm_awq_search(&lin, 1, ff, dn->h, dn->abs_mean, q->p->n_threads, scale, &alpha, err);
        if (!st) {
            elm_lw_unscale_rows(&up, scale);
            elm_lw_scale_cols(&down, scale);
        }
    }
    for (int k = 0; k < 3 && !st; k++) {
        const elm_act_stats *s = k < 2 ? gu : dn;
        if (!elm_lw_grid_of(q, mats[k], &g)) continue; /* the block's rounding */
        if (too_few(mats[k], s)) st = emit_weighted(q, mats[k], e, s, err);
        else
            st = elm_lw_awq_linear(q, mats[k], e, w0[k], s->h, k == 2 ? scale : NULL,
                                   k == 1 ? scale : NULL, err);
    }
    for (int k = 0; k < 3; k++) free(w0[k]);
    free(scale);
    return st;
}

elm_status elm_lw_moe_quantize(elm_lw_ctx *q, elm_layer *L, const elm_act_stats *s,
                               elm_error *err) {
    const int32_t n_expert = q->r->work.hp.n_expert;
    elm_status st = ELM_OK;
    if (q->p->method == ELM_QUANT_AWQ) {
        for (int32_t e = 0; e < n_expert && !st; e++)
            st = awq_expert(q, L, e, &s[e], &s[n_expert + e], err);
        return st;
    }
    elm_tensor *mats[3] = {L->gate_exps, L->up_exps, L->down_exps};
    elm_grid g;
    for (int k = 0; k < 3 && !st; k++) {
        if (!elm_lw_grid_of(q, mats[k], &g)) continue; /* the block's rounding */
        for (int32_t e = 0; e < n_expert && !st; e++)
            st = gptq_expert(q, mats[k], e, k < 2 ? &s[e] : &s[n_expert + e], err);
    }
    return st;
}
