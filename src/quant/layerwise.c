/* Layer-by-layer GPTQ and AWQ over a float32 working copy of the model (layerwise.h).
 *
 * Block l's linears form four groups by shared input: q/k/v (attention RMSNorm), o (attention
 * output), gate/up (FFN RMSNorm), down (gated product). The hidden states of every calibration
 * sample at block l's input are kept (they come from the already-quantized blocks 0..l-1); running
 * block l alone, in float, from them captures the four inputs, as the GPTQ and AWQ reference code
 * do per block, and running it again once quantized advances them to block l+1's input: two block
 * passes per block. (Capturing each group after the one before it is quantized, GPTQ's "true
 * sequential" option, costs four passes and measured no better on the fixture.) GPTQ
 * then quantizes each linear; AWQ searches a scale per group, folds all scales (1/s into the
 * RMSNorm weight or the rows of the linear producing the input, s into the group's columns), then
 * clips and quantizes. A linear planned at a float type (F16 fallback) is rounded to it in place. */
#include <cblas.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/encode.h"
#include "codecs/iquant_codec.h"
#include "edgelm/imatrix.h"
#include "edgelm/system.h"
#include "model/builder.h"
#include "quant/awq.h"
#include "quant/capture.h"
#include "quant/checkpoint.h"
#include "quant/errfig.h"
#include "quant/gptq.h"
#include "quant/layerwise.h"
#include "quant/layerwise_ops.h"

/* Block-scale candidates GPTQ tries (grid.h): 1 = the RTN rule. */
#define GPTQ_CLIP 10

typedef elm_lw_ctx qctx;
typedef elm_lw_group group;

static int64_t rows_of(const elm_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
static int32_t idx(const elm_qrun *r, const elm_tensor *t) { return (int32_t)(t - r->tensors); }
static float *wdata(const elm_tensor *t) { return t->data; }

bool elm_lw_grid_of(const qctx *q, const elm_tensor *t, elm_grid *g) {
    /* GPTQ's alone for the sub-4-bit types: AWQ's searches round weight by weight
     * (elm_grid_values), which the group grids do not, and were not measured on the ternary */
    const elm_type type = q->plan[idx(q->r, t)].type;
    return elm_grid_of(type, g) && (q->p->method == ELM_QUANT_GPTQ || !elm_type_iquant(type));
}

void elm_lw_warn(const qctx *q, const char *fmt, ...) {
    if (!q->cb || !q->cb->warn) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    q->cb->warn(msg, q->cb->user);
}

elm_status elm_check_row(const elm_model *m, const elm_tensor *t, int64_t row, const void *raw,
                         const float *x, elm_error *err) {
    const int64_t per_row = t->ne[0] / elm_type_get(t->type)->block_size;
    elm_status st = elm_check_block_scales(m->path, t->name, t->type, raw, per_row, row * per_row, err);
    if (st) return st;
    for (int64_t j = 0; j < t->ne[0]; j++)
        if (!isfinite(x[j]))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' holds %s at row %lld, column %lld",
                              m->path, t->name, isnan(x[j]) ? "NaN" : "an infinity",
                              (long long)row, (long long)j);
    return ELM_OK;
}

/* ------------------------------------------------------------------------ working copy */

/* The working copy of a tensor of the source; NULL for NULL, and for a row view of a fused tensor
 * (Phi-3's attn_qkv), which is not in the tensor list. */
static elm_tensor *twin(const elm_qrun *r, const elm_tensor *t) {
    const uintptr_t p = (uintptr_t)t, lo = (uintptr_t)r->src->tensors;
    if (!t || p < lo || p >= lo + sizeof *t * (size_t)r->src->n_tensors) return NULL;
    return r->tensors + (t - r->src->tensors);
}

static elm_status bind_twin(const elm_qrun *r, const elm_tensor *t, elm_tensor **slot, elm_error *err) {
    *slot = twin(r, t);
    if (t && !*slot)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: '%s' is part of a fused tensor; GPTQ and AWQ need separate "
                          "tensors (use --method rtn)", r->src->path, t->name);
    return ELM_OK;
}

/* Gives tensor t of the working copy float32 values of its own, decoded from the source (mapped,
 * read row by row) and checked finite, unless it has them already. */
static elm_status materialize(elm_qrun *r, elm_tensor *t, elm_error *err) {
    const elm_tensor *in = &r->src->tensors[t - r->tensors];
    if (t->data != in->data) return ELM_OK;
    const int64_t rows = rows_of(in), cols = in->ne[0];
    const size_t row_bytes = elm_row_bytes(in->type, cols), nbytes = sizeof(float) * (size_t)(rows * cols);
    float *x = malloc(nbytes ? nbytes : 1);
    if (!x)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for a float copy of '%s'",
                          r->src->path, in->name);
    for (int64_t row = 0; row < rows; row++) {
        const uint8_t *raw = (const uint8_t *)in->data + (size_t)row * row_bytes;
        elm_type_get(in->type)->to_float(raw, x + row * cols, cols);
        elm_status st = elm_check_row(r->src, in, row, raw, x + row * cols, err);
        if (st) {
            free(x);
            return st;
        }
    }
    t->type = ELM_TYPE_F32;
    t->nbytes = nbytes;
    t->data = x;
    return ELM_OK;
}

/* Drops the float copy of a matrix whose bytes are chosen (unless the run keeps its working
 * copy): later blocks never run it again, and the writer takes its bytes. */
static void release(elm_qrun *r, elm_tensor *t) {
    if (!t || r->keep_work || t->n_dims < 2) return;
    const int32_t i = (int32_t)(t - r->tensors);
    if (!r->bytes[i] || t->data == r->src->tensors[i].data) return;
    free(t->data);
    *t = r->src->tensors[i];
}

/* The working copy starts as the source's tensors (mapped, any type); a matrix gets its float32
 * copy when its block (or the output stage) begins and drops it when the block is done, so one
 * block's matrices (plus the embedding) are held at a time. 1-D tensors (norms, biases, which AWQ
 * folds scales into and the writer takes from here) are copied at once. */
static elm_status work_init(elm_qrun *r, const elm_model *m, elm_error *err) {
    const int32_t n = m->n_tensors;
    r->src = m;
    r->work = *m;
    r->work.storage = NULL; /* nothing of the source is owned here */
    r->tensors = calloc(n ? (size_t)n : 1, sizeof *r->tensors);
    r->layers = calloc((size_t)m->hp.n_layers, sizeof *r->layers);
    r->bytes = calloc(n ? (size_t)n : 1, sizeof *r->bytes);
    r->info = calloc(n ? (size_t)n : 1, sizeof *r->info);
    r->quads = calloc(n ? (size_t)n : 1, sizeof *r->quads);
    if (!r->tensors || !r->layers || !r->bytes || !r->info || !r->quads)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int32_t i = 0; i < n; i++) {
        r->tensors[i] = m->tensors[i];
        if (m->tensors[i].n_dims < 2) {
            elm_status st = materialize(r, &r->tensors[i], err);
            if (st) return st;
        }
    }
    elm_status st = ELM_OK;
    for (int l = 0; l < m->hp.n_layers && !st; l++) {
        /* the same layer over the working copy's tensors: every slot (layer_kind.h kinds too) */
        elm_layer a = m->layers[l];
        elm_tensor **from[ELM_LAYER_SLOTS], **to[ELM_LAYER_SLOTS];
        r->layers[l] = a;
        const int n_slots = elm_layer_slots(&a, from);
        elm_layer_slots(&r->layers[l], to);
        for (int k = 0; k < n_slots && !st; k++) st = bind_twin(r, *from[k], to[k], err);
    }
    r->work.tensors = r->tensors;
    r->work.layers = r->layers;
    if (!st) st = bind_twin(r, m->tok_embd, &r->work.tok_embd, err);
    if (!st) st = bind_twin(r, m->output, &r->work.output, err);
    if (!st) st = bind_twin(r, m->output_norm, &r->work.output_norm, err);
    if (!st) st = bind_twin(r, m->rope_freqs, &r->work.rope_freqs, err);
    if (!st) st = bind_twin(r, m->rope_long, &r->work.rope_long, err);
    if (!st) st = bind_twin(r, m->rope_short, &r->work.rope_short, err);
    return st;
}

void elm_qrun_free(elm_qrun *r) {
    for (int32_t i = 0; r->src && i < r->src->n_tensors; i++) {
        if (r->tensors && r->tensors[i].data != r->src->tensors[i].data) free(r->tensors[i].data);
        if (r->bytes) free(r->bytes[i]);
    }
    free(r->tensors);
    free(r->layers);
    free(r->bytes);
    free(r->info);
    free(r->quads);
    free(r->fallback);
    free(r->final_stage);
    free(r->x);
    elm_ckpt_close(r->ckpt, false);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------- writing results */

/* Rounds tensor t of the working copy to its planned type by the types table (RTN; a type
 * llama-quantize weights by importances, by its weighted encoder with the imatrix's when given):
 * keeps the bytes, and the working copy takes the decoded values. 1-D tensors are written from
 * the copy. ELM_ERR_ARG naming t for a type written only from importances without them. */
static elm_status emit_rtn(qctx *q, elm_tensor *t, elm_error *err) {
    const int32_t i = idx(q->r, t);
    if (t->n_dims < 2 || q->r->bytes[i]) return ELM_OK;
    elm_status st = materialize(q->r, t, err);
    if (st) return st;
    const elm_type type = q->plan[i].type;
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    const int64_t rows = rows_of(t), cols = t->ne[0];
    const size_t rb = elm_row_bytes(type, cols);
    /* a type that llama-quantize writes from importances, with the imatrix's when it has them
     * (elm_quantize let one written only from importances through only with them) */
    const elm_imatrix_entry *ie =
        tt->needs_imatrix && q->p->imatrix ? elm_imatrix_find(q->p->imatrix, t->name) : NULL;
    if (ie && ie->n != cols * t->ne[2] * t->ne[3]) ie = NULL;
    if (!tt->from_float && !ie)
        return elm_errorf(err, ELM_ERR_ARG, "'%s': %s needs importances (--imatrix) here",
                          t->name, tt->name);
    uint8_t *b = malloc(rb * (size_t)rows);
    float *qw = ie ? malloc(sizeof(float) * (size_t)ie->n) : NULL;
    if (!b || (ie && !qw)) {
        free(b);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory encoding '%s'", t->name);
    }
    if (ie) elm_imatrix_weights(ie, qw);
    for (int64_t r = 0; r < rows; r++) {
        elm_encode_row(type, wdata(t) + r * cols, b + (size_t)r * rb, cols,
                       qw ? qw + r / t->ne[1] * cols : NULL);
        tt->to_float(b + (size_t)r * rb, wdata(t) + r * cols, cols);
    }
    free(qw);
    q->r->bytes[i] = b;
    return ELM_OK;
}

elm_tensor elm_lw_slice(const elm_tensor *t, int32_t e) {
    elm_tensor v = *t;
    if (e < 0) return v;
    v.n_dims = 2;
    v.ne[2] = v.ne[3] = 1;
    v.nbytes = sizeof(float) * (size_t)(t->ne[0] * t->ne[1]);
    v.data = wdata(t) + (size_t)e * (size_t)(t->ne[0] * t->ne[1]);
    return v;
}

uint8_t *elm_lw_bytes(qctx *q, const elm_tensor *t, int32_t e, size_t *offset) {
    const int32_t i = idx(q->r, t);
    const size_t rb = elm_row_bytes(q->plan[i].type, t->ne[0]);
    if (!q->r->bytes[i]) q->r->bytes[i] = malloc(rb * (size_t)rows_of(t));
    *offset = e < 0 ? 0 : rb * (size_t)(e * t->ne[1]);
    return q->r->bytes[i];
}

/* Packs codes/params chosen by GPTQ or AWQ for linear (t, e); the working copy takes their
 * values. */
static elm_status emit_codes(qctx *q, elm_tensor *t, int32_t e, const elm_grid *g,
                             const int8_t *codes, const elm_block_params *params,
                             const float *values, elm_error *err) {
    const elm_tensor v = elm_lw_slice(t, e);
    const int64_t rows = rows_of(&v), cols = t->ne[0], nblk = cols / g->block;
    const size_t bb = elm_type_get((uint32_t)g->type)->block_bytes;
    size_t off;
    uint8_t *b = elm_lw_bytes(q, t, e, &off);
    if (!b) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory encoding '%s'", t->name);
    for (int64_t k = 0; k < rows * nblk; k++)
        elm_grid_pack(g, &params[k], codes + k * g->block, b + off + k * bb);
    memcpy(v.data, values, sizeof(float) * (size_t)(rows * cols));
    return ELM_OK;
}

/* Scratch of one linear's quantization: W the float32 weights GPTQ updates, the chosen codes,
 * block parameters and values, and the error figures' sample. */
typedef struct lin_buf {
    float *W;
    int8_t *codes;
    elm_block_params *params;
    float *values;
    elm_err_sample es;
} lin_buf;

static void lin_free(lin_buf *b) {
    free(b->W);
    free(b->codes);
    free(b->params);
    free(b->values);
    elm_err_sample_free(&b->es);
}

static elm_status lin_alloc(lin_buf *b, int64_t rows, int64_t cols, const char *name,
                            elm_error *err) {
    const size_t n = (size_t)(rows * cols);
    *b = (lin_buf){malloc(sizeof(float) * n), malloc(n),
                   malloc(sizeof(elm_block_params) * (n / ELM_QK)), malloc(sizeof(float) * n), {0}};
    if (b->W && b->codes && b->params && b->values && elm_err_sample_init(&b->es, rows, cols))
        return ELM_OK;
    lin_free(b);
    return elm_errorf(err, ELM_ERR_NOMEM, "out of memory quantizing '%s'", name);
}

/* The error figures of tensor i: relative output errors of round-to-nearest and of the method's
 * values, on the sampled rows whose original weights and errors b->es holds; a stack's summed
 * over its experts' (each on its own inputs). */
static void set_errors(qctx *q, int32_t i, lin_buf *b, const float *H) {
    double quad[3], *sum = q->r->quads[i];
    elm_err_sample_quads(&b->es, H, quad);
    for (int k = 0; k < 3; k++) sum[k] += quad[k];
    q->r->info[i].err_before = sum[0] > 0 ? sum[1] / sum[0] : 0;
    q->r->info[i].err_after = sum[0] > 0 ? sum[2] / sum[0] : 0;
}

/* ---------------------------------------------------------------------------- GPTQ */

elm_status elm_lw_gptq_linear(qctx *q, elm_tensor *t, int32_t e, const elm_act_stats *s,
                              elm_error *err) {
    elm_grid g;
    elm_lw_grid_of(q, t, &g);
    const int32_t i = idx(q->r, t);
    const elm_tensor v = elm_lw_slice(t, e);
    const int64_t rows = rows_of(&v), cols = t->ne[0];
    const float *w = wdata(&v);
    lin_buf b;
    elm_status st = lin_alloc(&b, rows, cols, t->name, err);
    if (st) return st;
    /* the baseline of a type written only from importances: diag(H)'s; the others' unweighted */
    float *dh = malloc(sizeof(float) * (size_t)cols);
    if (!dh) {
        lin_free(&b);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory quantizing '%s'", t->name);
    }
    for (int64_t j = 0; j < cols; j++) dh[j] = s->h[j * cols + j];
    elm_err_sample_weights(&b.es, g.type, w, elm_type_get((uint32_t)g.type)->from_float ? NULL : dh);
    free(dh);
    memcpy(b.W, w, sizeof(float) * (size_t)(rows * cols));
    const elm_gptq_opts o = {q->p->damp > 0 ? q->p->damp : 0.01, q->p->act_order, GPTQ_CLIP,
                             q->p->n_threads, s->n_rows};
    elm_gptq_result res;
    st = elm_gptq(&g, t->name, b.W, rows, cols, s->h, &o, b.codes, b.params, b.values, &res, err);
    if (!st) {
        elm_err_sample_values(&b.es, b.values, NULL, NULL);
        set_errors(q, i, &b, s->h);
        /* a stack's: its experts' highest */
        if (res.damp > q->r->info[i].damp) q->r->info[i].damp = res.damp;
        if (res.dead > q->r->info[i].dead_inputs) q->r->info[i].dead_inputs = res.dead;
        /* a layer calibration (nearly) never reaches is quantized almost blind */
        if (2 * res.dead > cols)
            elm_lw_warn(q, "%s%s: %lld of %lld input channels never active in calibration "
                        "(zeroed): calibrate with text that reaches this layer", t->name,
                        e < 0 ? "" : " (an expert)", (long long)res.dead, (long long)cols);
        if (res.raised) {
            q->r->n_damp_raised++;
            elm_lw_warn(q, "%s: input Hessian not positive definite with damping %g: raised "
                        "to %g", t->name, o.damp, res.damp);
        }
        st = emit_codes(q, t, e, &g, b.codes, b.params, b.values, err);
    }
    lin_free(&b);
    return st;
}

/* The four input groups of block l: the mixing's input products (q/k/v; a short convolution's
 * in_proj; a Gated DeltaNet's qkv and z, its β and α products of a few rows left to the block's
 * rounding), its output product (o; out_proj; ssm_out), gate/up, down; a mixture of experts'
 * FFN: its router (with its shared expert's gate/up), and its shared expert's down (the experts
 * are layerwise_moe.c's). */
void elm_lw_layer_groups(const elm_layer *L, group g[4]) {
    if (L->kind == ELM_LAYER_DELTANET) { /* its output gate reads the block's input too */
        g[0] = (group){{L->conv_in, L->dn_z}, 2};
        g[1] = (group){{L->conv_out}, 1};
    } else if (L->kind != ELM_LAYER_ATTENTION) {
        g[0] = (group){{L->conv_in}, 1};
        g[1] = (group){{L->conv_out}, 1};
    } else {
        g[0] = (group){{L->wq, L->wk, L->wv}, 3};
        g[1] = (group){{L->wo}, 1};
    }
    if (!elm_lw_moe(L)) {
        g[2] = (group){{L->w_gate, L->w_up}, 2};
        g[3] = (group){{L->w_down}, 1};
    } else if (L->shexp_up) { /* Qwen3.5-MoE's gate of it, a row, is left to the rounding */
        g[2] = (group){{L->router, L->shexp_gate, L->shexp_up}, 3};
        g[3] = (group){{L->shexp_down}, 1};
    } else {
        g[2] = (group){{L->router}, 1};
        g[3] = (group){{NULL}, 0};
    }
}

bool elm_lw_gptq_reaches(const elm_model *m, const elm_tensor *t) {
    if (t == m->output && m->output != m->tok_embd) return true;
    for (int l = 0; l < m->hp.n_layers; l++) {
        group g[4];
        elm_lw_layer_groups(&m->layers[l], g);
        for (int gi = 0; gi < 4; gi++)
            for (int k = 0; k < g[gi].n; k++)
                if (g[gi].m[k] == t) return true;
    }
    return false;
}

static bool group_has_grid(const qctx *q, const group *gr) {
    elm_grid g;
    for (int k = 0; k < gr->n; k++)
        if (elm_lw_grid_of(q, gr->m[k], &g)) return true;
    return false;
}

/* A block with no block-type linear needs no calibration pass: its linears are rounded. */
static bool rounded_only(qctx *q, const elm_layer *L, const group groups[4], elm_status *st,
                         elm_error *err) {
    for (int gi = 0; gi < 4; gi++)
        if (group_has_grid(q, &groups[gi])) return false;
    if (elm_lw_moe(L) && elm_lw_moe_has_grid(q, L)) return false;
    *st = ELM_OK;
    for (int gi = 0; gi < 4 && !*st; gi++)
        for (int k = 0; k < groups[gi].n && !*st; k++) *st = emit_rtn(q, groups[gi].m[k], err);
    return true;
}

/* Statistics of block l's inputs, *s [*n_s] (free with stats_free): the four groups' at s[0..3]
 * (a group without linears: none, key NULL), then a mixture of experts' per expert
 * (elm_lw_moe_stats_init); block l alone, still float, run from the states. */
static elm_status capture_block(const qctx *q, int l, const group groups[4], elm_act_stats **s,
                                int32_t *n_s, elm_error *err) {
    const elm_layer *L = &q->r->layers[l];
    const int32_t n_expert = elm_lw_moe(L) ? q->r->work.hp.n_expert : 0;
    *n_s = 4 + 2 * n_expert;
    elm_act_stats *a = *s = calloc((size_t)*n_s, sizeof *a);
    if (!a) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for calibration statistics");
    elm_status st = ELM_OK;
    for (int gi = 0; gi < 4 && !st; gi++)
        if (groups[gi].n) st = elm_act_stats_init(&a[gi], groups[gi].m[0], -1, true, err);
    if (!st && n_expert) st = elm_lw_moe_stats_init(L, n_expert, a + 4, err);
    if (!st)
        st = elm_capture(&q->r->work, l, 1, false, q->p->calib, q->p->n_threads, q->x, NULL, a,
                         *n_s, err);
    return st;
}

static void stats_free(elm_act_stats *s, int32_t n) {
    for (int32_t k = 0; s && k < n; k++) elm_act_stats_free(&s[k]);
    free(s);
}

static elm_status gptq_layer(qctx *q, int l, elm_error *err) {
    elm_layer *L = &q->r->layers[l];
    group groups[4];
    elm_lw_layer_groups(L, groups);
    elm_act_stats *s = NULL;
    int32_t n_s = 0;
    elm_status st = ELM_OK;
    if (rounded_only(q, L, groups, &st, err)) return st;
    st = capture_block(q, l, groups, &s, &n_s, err);
    for (int gi = 0; gi < 4 && !st; gi++)
        for (int k = 0; k < groups[gi].n && !st; k++) {
            elm_grid g;
            elm_tensor *t = groups[gi].m[k];
            st = elm_lw_grid_of(q, t, &g) ? elm_lw_gptq_linear(q, t, -1, &s[gi], err)
                                          : emit_rtn(q, t, err);
        }
    if (!st && elm_lw_moe(L)) st = elm_lw_moe_quantize(q, L, s + 4, err);
    stats_free(s, n_s);
    return st;
}

/* ----------------------------------------------------------------------------- AWQ */

void elm_lw_scale_cols(elm_tensor *t, const double *s) {
    const int64_t rows = rows_of(t), cols = t->ne[0];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) wdata(t)[r * cols + c] = (float)(wdata(t)[r * cols + c] * s[c]);
}

void elm_lw_unscale_rows(elm_tensor *t, const double *s) {
    const int64_t rows = t->n_dims < 2 ? t->ne[0] : rows_of(t), cols = t->n_dims < 2 ? 1 : t->ne[0];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) wdata(t)[r * cols + c] = (float)(wdata(t)[r * cols + c] / s[r]);
}


elm_status elm_lw_awq_linear(qctx *q, elm_tensor *t, int32_t e, const float *w0, const float *H,
                             const double *cs, const double *rs, elm_error *err) {
    elm_grid g;
    elm_lw_grid_of(q, t, &g);
    const int32_t i = idx(q->r, t);
    const elm_tensor v = elm_lw_slice(t, e);
    const int64_t rows = rows_of(&v), cols = t->ne[0];
    lin_buf b;
    elm_status st = lin_alloc(&b, rows, cols, t->name, err);
    float *hs = st ? NULL : malloc(sizeof(float) * (size_t)cols * ELM_QK);
    if (!st && !hs) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory quantizing '%s'", t->name);
    if (!st) {
        elm_err_sample_weights(&b.es, g.type, w0, NULL);
        elm_awq_diag_blocks(H, cols, cs, hs);
        st = elm_awq_clip_quantize(&g, wdata(&v), rows, cols, hs, q->p->n_threads, b.codes,
                                   b.params, b.values, err);
    }
    if (!st) {
        elm_err_sample_values(&b.es, b.values, rs, cs);
        set_errors(q, i, &b, H);
        st = emit_codes(q, t, e, &g, b.codes, b.params, b.values, err);
    }
    free(hs);
    lin_free(&b);
    return st;
}

/* Mean |x| of the attention output averaged over the query heads that share a KV head, so the
 * scale folded into a row of Wv is the same for every column of Wo that row feeds (GQA). */
static void tie_heads(const elm_hparams *hp, const double *abs_mean, double *tied) {
    const int hd = hp->head_dim, group = hp->n_heads / hp->n_kv_heads;
    for (int kvh = 0; kvh < hp->n_kv_heads; kvh++)
        for (int i = 0; i < hd; i++) {
            double sum = 0;
            for (int h = kvh * group; h < (kvh + 1) * group; h++) sum += abs_mean[h * hd + i];
            for (int h = kvh * group; h < (kvh + 1) * group; h++) tied[h * hd + i] = sum / group;
        }
}

static elm_status awq_search_group(qctx *q, const group *gr, const elm_act_stats *s,
                                   const double *abs_mean, double *scale, elm_error *err) {
    elm_awq_linear lin[3];
    elm_grid grids[3];
    for (int k = 0; k < gr->n; k++)
        lin[k] = (elm_awq_linear){wdata(gr->m[k]), rows_of(gr->m[k]),
                                  elm_lw_grid_of(q, gr->m[k], &grids[k]) ? &grids[k] : NULL};
    double alpha;
    return elm_awq_search(lin, gr->n, s->cols, s->h, abs_mean, q->p->n_threads, scale, &alpha, err);
}

static elm_status awq_layer(qctx *q, int l, elm_error *err) {
    elm_layer *L = &q->r->layers[l];
    const elm_hparams *hp = &q->r->work.hp;
    const bool moe = elm_lw_moe(L);
    elm_tensor *up = moe ? L->shexp_up : L->w_up; /* the rows down's scales fold into */
    group groups[4];
    elm_lw_layer_groups(L, groups);
    elm_act_stats *s = NULL;
    int32_t n_s = 0;
    double *scale[4] = {0}, *tied = NULL, *kv_scale = NULL;
    float *w0[4][3] = {{0}};
    elm_status st = ELM_OK;
    if (rounded_only(q, L, groups, &st, err)) return st;
    st = capture_block(q, l, groups, &s, &n_s, err);
    for (int gi = 0; gi < 4 && !st; gi++) {
        if (!(scale[gi] = malloc(sizeof(double) * (size_t)(s[gi].cols ? s[gi].cols : 1))))
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for AWQ scales");
        for (int k = 0; k < groups[gi].n && !st; k++) {
            const elm_tensor *t = groups[gi].m[k];
            if (!(w0[gi][k] = malloc(t->nbytes))) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
            else memcpy(w0[gi][k], t->data, t->nbytes);
        }
    }
    /* the rows whose outputs feed group 1's input, scaled back by its scales: Wv's (a KV head's
     * row feeds its query heads' columns), or in_proj's C rows (y = C ⊙ conv(B ⊙ x)); none for
     * Mamba-2, whose group 1 keeps scales of 1 */
    const bool conv = L->kind == ELM_LAYER_SHORTCONV;
    const int64_t kv_dim = conv ? 3 * (int64_t)hp->dim : (int64_t)hp->n_kv_heads * hp->head_dim;
    if (!st && (!(tied = malloc(sizeof(double) * (size_t)s[1].cols)) ||
                !(kv_scale = malloc(sizeof(double) * (size_t)kv_dim))))
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for AWQ scales");
    for (int gi = 0; gi < 4 && !st; gi++) {
        for (int64_t j = 0; j < s[gi].cols; j++) scale[gi][j] = 1;
        /* Mamba-2's out_proj keeps scales of 1: its input's weights are the gated norm's
         * [groups, width], which the working copy holds as the file's bytes; so does a router,
         * whose input is every expert's too (layerwise_moe.c) */
        if (!group_has_grid(q, &groups[gi]) || (gi == 1 && L->kind == ELM_LAYER_MAMBA2) ||
            (gi == 2 && moe))
            continue;
        const double *am = s[gi].abs_mean;
        if (gi == 1 && L->kind == ELM_LAYER_ATTENTION) {
            tie_heads(hp, am, tied);
            am = tied;
        }
        st = awq_search_group(q, &groups[gi], &s[gi], am, scale[gi], err);
    }
    if (!st) {
        /* fold: the float model computes the same function with the scaled weights */
        elm_lw_unscale_rows(L->attn_norm, scale[0]);
        for (int k = 0; k < groups[0].n; k++) elm_lw_scale_cols(groups[0].m[k], scale[0]);
        for (int64_t c = 0; c < kv_dim; c++) {
            const int hd = hp->head_dim, kvh = (int)(c / hd), i = (int)(c % hd);
            kv_scale[c] = conv ? (c / hp->dim == 1 ? scale[1][c % hp->dim] : 1.0)
                               : scale[1][(int64_t)kvh * (hp->n_heads / hp->n_kv_heads) * hd + i];
        }
        if (L->kind != ELM_LAYER_MAMBA2)
            elm_lw_unscale_rows(conv ? L->conv_in : L->wv, kv_scale);
        if (L->bv) elm_lw_unscale_rows(L->bv, kv_scale);
        elm_lw_scale_cols(groups[1].m[0], scale[1]);
        elm_lw_unscale_rows(L->ffn_norm, scale[2]);
        for (int k = 0; k < groups[2].n; k++) elm_lw_scale_cols(groups[2].m[k], scale[2]);
        if (up) {
            elm_lw_unscale_rows(up, scale[3]);
            elm_lw_scale_cols(groups[3].m[0], scale[3]);
        }
    }
    for (int gi = 0; gi < 4 && !st; gi++)
        for (int k = 0; k < groups[gi].n && !st; k++) {
            elm_tensor *t = groups[gi].m[k];
            const double *rs = t == L->wv || (conv && t == L->conv_in) ? kv_scale
                               : up && t == up                     ? scale[3]
                                                                   : NULL;
            elm_grid g;
            st = elm_lw_grid_of(q, t, &g)
                     ? elm_lw_awq_linear(q, t, -1, w0[gi][k], s[gi].h, scale[gi], rs, err)
                     : emit_rtn(q, t, err);
        }
    if (!st && moe) st = elm_lw_moe_quantize(q, L, s + 4, err);
    stats_free(s, n_s);
    for (int gi = 0; gi < 4; gi++) {
        free(scale[gi]);
        for (int k = 0; k < 3; k++) free(w0[gi][k]);
    }
    free(tied);
    free(kv_scale);
    return st;
}

/* ----------------------------------------------------------------------------- output */

static elm_status output_stage(qctx *q, elm_error *err) {
    elm_qrun *r = q->r;
    elm_tensor *out = r->work.output;
    elm_grid g;
    if (out == r->work.tok_embd) return ELM_OK; /* tied: quantized as the embedding */
    if (!elm_lw_grid_of(q, out, &g)) return emit_rtn(q, out, err);
    elm_act_stats s = {0};
    elm_status st = materialize(r, out, err);
    if (!st) st = elm_act_stats_init(&s, out, -1, true, err);
    if (!st)
        st = elm_capture(&r->work, r->work.hp.n_layers, 0, true, q->p->calib, q->p->n_threads, q->x,
                         NULL, &s, 1, err);
    if (!st && q->p->method == ELM_QUANT_GPTQ) {
        st = elm_lw_gptq_linear(q, out, -1, &s, err);
    } else if (!st) {
        double *scale = malloc(sizeof(double) * (size_t)s.cols);
        float *w0 = malloc(out->nbytes);
        if (!scale || !w0) st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory for AWQ scales");
        group gr = {{out}, 1};
        if (!st) {
            memcpy(w0, out->data, out->nbytes);
            st = awq_search_group(q, &gr, &s, s.abs_mean, scale, err);
        }
        if (!st) {
            elm_lw_unscale_rows(r->work.output_norm, scale);
            elm_lw_scale_cols(out, scale);
            st = elm_lw_awq_linear(q, out, -1, w0, s.h, scale, NULL, err);
        }
        free(scale);
        free(w0);
    }
    elm_act_stats_free(&s);
    return st;
}

/* ------------------------------------------------------------------------------ driver */

/* The tensors of block l the calibrated methods run and quantize (NULL entries for absent ones);
 * returns how many entries. */
static int block_tensors(elm_layer *L, elm_tensor *t[ELM_LAYER_SLOTS]) {
    elm_tensor **slots[ELM_LAYER_SLOTS];
    const int n = elm_layer_slots(L, slots);
    for (int k = 0; k < n; k++) t[k] = *slots[k];
    return n;
}

elm_status elm_quant_progress(const elm_quantize_callbacks *cb, int32_t done, int32_t total,
                              const char *what, elm_error *err) {
    if (cb && cb->progress && cb->progress(done, total, what, cb->user))
        return elm_errorf(err, ELM_ERR_ARG, "quantization stopped by the progress callback after "
                          "%s (%d of %d)", what, done, total);
    return ELM_OK;
}

static elm_status progress(const qctx *q, int32_t done, const char *what, elm_error *err) {
    return elm_quant_progress(q->cb, done, q->r->work.hp.n_layers + 2, what, err);
}

elm_status elm_qrun_start(const elm_model *m, const elm_quant_params *params,
                          const elm_tensor_plan *plan, const elm_quantize_callbacks *cb,
                          bool keep_work, elm_qrun *r, elm_error *err) {
    memset(r, 0, sizeof *r);
    r->keep_work = keep_work;
    r->params = params;
    r->plan = plan;
    r->cb = cb;
    if (!params->calib || params->calib->n <= 0)
        return elm_errorf(err, ELM_ERR_ARG, "%s needs calibration samples (--calib)",
                          elm_quant_method_name(params->method));
    /* AWQ's scales fold into the products before a group; a DeltaNet's output product comes
     * after a per-head RMSNorm, which no scale passes */
    for (int l = 0; l < m->hp.n_layers && params->method == ELM_QUANT_AWQ; l++)
        if (m->layers[l].kind == ELM_LAYER_DELTANET)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: AWQ does not calibrate Gated "
                              "DeltaNet layers (layer %d; use --method gptq or rtn)", m->path, l);
    /* BLAS (Hessian SYRK, GPTQ's factorizations and batch updates) on the -t threads */
    openblas_set_num_threads(params->n_threads > 0 ? params->n_threads : elm_online_cores());
    elm_status st = work_init(r, m, err);
    if (st) return st;
    if (!(r->final_stage = malloc(sizeof *r->final_stage * (size_t)(m->n_tensors ? m->n_tensors : 1))))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        elm_quant_tensor_info *in = &r->info[i];
        snprintf(in->name, sizeof in->name, "%s", m->tensors[i].name);
        in->type = plan[i].type;
        snprintf(in->reason, sizeof in->reason, "%s", plan[i].reason);
        in->err_before = in->err_after = -1;
        r->final_stage[i] = m->hp.n_layers + 1;
    }
    for (int l = 0; l < m->hp.n_layers; l++) {
        elm_tensor *bt[ELM_LAYER_SLOTS];
        const int n = block_tensors(&r->layers[l], bt);
        for (int k = 0; k < n; k++)
            if (bt[k]) r->final_stage[bt[k] - r->tensors] = l + 1;
    }
    /* The samples' hidden states, Σ n_ids × dim floats (256 samples of 512 tokens at dim 2048:
     * 1 GiB), spare the re-run of blocks 0..l-1 for each block l. */
    const elm_calib_set *cs = params->calib;
    size_t n_x = 0;
    for (int32_t i = 0; i < cs->n; i++) n_x += (size_t)cs->n_ids[i];
    n_x *= (size_t)m->hp.dim;
    if (!(r->x = malloc(sizeof(float) * (n_x ? n_x : 1))))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for the calibration states "
                          "(%zu floats)", m->path, n_x);
    r->final_stage[r->work.tok_embd - r->tensors] = 0;
    int32_t resumed = 0;
    if (params->checkpoint && !keep_work)
        st = elm_ckpt_open(params->checkpoint, r, params->resume, r->x, n_x, &resumed, &r->ckpt,
                           err);
    /* the first block's inputs come from the quantized embedding (rounded again on a resume: its
     * bytes are not in the checkpoint) */
    qctx q = {r, params, plan, cb, r->x};
    if (!st) st = emit_rtn(&q, r->work.tok_embd, err);
    if (!st && resumed == 0)
        st = elm_capture(&r->work, 0, 0, false, cs, params->n_threads, NULL, q.x, NULL, 0, err);
    if (!st && params->resume && cb && cb->note) {
        char msg[1200];
        if (resumed)
            snprintf(msg, sizeof msg, "resuming from %s: %d of %d blocks done", params->checkpoint,
                     resumed, m->hp.n_layers);
        else
            snprintf(msg, sizeof msg, "no checkpoint %s to resume from: starting at block 0",
                     params->checkpoint);
        cb->note(msg, cb->user);
    }
    r->stage = resumed;
    return st;
}

elm_status elm_qrun_step(elm_qrun *r, elm_error *err) {
    const elm_model *m = r->src;
    const elm_quant_params *params = r->params;
    qctx q = {r, params, r->plan, r->cb, r->x};
    elm_status st = ELM_OK;
    if (r->stage < m->hp.n_layers) {
        const int l = r->stage;
        elm_tensor *bt[ELM_LAYER_SLOTS];
        const int n_bt = block_tensors(&r->layers[l], bt);
        for (int k = 0; k < n_bt && !st; k++)
            if (bt[k]) st = materialize(r, bt[k], err);
        if (!st)
            st = params->method == ELM_QUANT_GPTQ ? gptq_layer(&q, l, err) : awq_layer(&q, l, err);
        /* the block's other matrices (a convolution kernel) by its rule, before they run again */
        for (int k = 0; k < n_bt && !st; k++)
            if (bt[k]) st = emit_rtn(&q, bt[k], err);
        /* block l is quantized now: its output is block l+1's input */
        if (!st)
            st = elm_capture(&r->work, l, 1, false, params->calib, params->n_threads, q.x, q.x,
                             NULL, 0, err);
        if (!st && r->ckpt) st = elm_ckpt_commit(r->ckpt, r, l + 1, q.x, err);
        char what[32];
        snprintf(what, sizeof what, "blk.%d", l);
        if (!st) st = progress(&q, l + 1, what, err);
        for (int k = 0; k < n_bt && !st; k++) release(r, bt[k]);
    } else if (r->stage == m->hp.n_layers) {
        st = output_stage(&q, err);
        for (int32_t i = 0; i < m->n_tensors && !st; i++) {
            /* the embedding's and the blocks' are done (and maybe written already) */
            if (r->final_stage[i] > m->hp.n_layers) st = emit_rtn(&q, &r->tensors[i], err);
            release(r, &r->tensors[i]);
        }
        if (!st) st = progress(&q, m->hp.n_layers + 1, "output", err);
        free(r->x);
        r->x = NULL;
    }
    if (!st) r->stage++;
    return st;
}

elm_status elm_quant_calibrated(const elm_model *m, const elm_quant_params *params,
                                const elm_tensor_plan *plan, const elm_quantize_callbacks *cb,
                                bool keep_work, elm_qrun *r, elm_error *err) {
    elm_status st = elm_qrun_start(m, params, plan, cb, keep_work, r, err);
    while (!st && r->stage <= m->hp.n_layers) st = elm_qrun_step(r, err);
    return st;
}
