/* Whole-model quantization (edgelm/quant.h): plans each tensor's type (policy.c), lets GPTQ or
 * AWQ choose the blocks of the linear layers (layerwise.c), and pushes the tensors to the GGUF
 * writer in file order as each becomes final: a calibrated run is stepped a block at a time
 * between them, and round-to-nearest tensors are converted one at a time, their rows spread over
 * n_threads threads: decoded to float with their type's to_float, encoded with the target's
 * from_float (bit-exact with llama-quantize --pure without an importance matrix). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdatomic.h>

#include "core/clock.h"
#include "codecs/encode.h"
#include "core/memstat.h"
#include "core/threadpool.h"
#include "edgelm/quant.h"
#include "edgelm/system.h"
#include "formats/gguf_write.h"
#include "quant/budget.h"
#include "quant/checkpoint.h"
#include "quant/grid.h"
#include "quant/layerwise.h"
#include "quant/recipe.h"

typedef struct wjob {
    const elm_model *m;           /* the input model (names, error messages) */
    const elm_tensor *src;        /* [n] tensors to convert: m's, or the calibrated working copy */
    elm_qrun *run;                /* the calibrated run, stepped as the file needs, or NULL */
    const int32_t *order;         /* [n] source index of output tensor i, or NULL (the same) */
    const elm_tensor_plan *plan;
    const elm_quantize_callbacks *cb;
    bool per_tensor_progress;     /* RTN: progress counts tensors */
    elm_pool *pool;               /* the threads a tensor's rows are converted on */
    float *row;                   /* [threads][widest row]: each thread's decoded row */
    int64_t widest;
    const elm_imatrix *imatrix;   /* or NULL */
    float *qw;                    /* [widest row × matrices]: importance weights of the current
                                   * tensor, one row of them per matrix (expert) */
    uint8_t *buf;                 /* [cap] the bytes of a tensor produced here, not by the run */
    size_t cap;
} wjob;

/* One tensor's conversion, its rows claimed in chunks by the pool's threads. Rows are
 * independent, so the bytes are those of a serial run whatever thread converts them. */
typedef struct conv_job {
    const wjob *j;
    const elm_tensor *in, *t;
    const elm_type_traits *src_tt, *dst_tt;
    size_t src_row, dst_row;
    uint8_t *dst;
    const float *qw; /* importance weights, or NULL */
    elm_pool_work work;
    atomic_llong bad; /* lowest row seen with a bad scale, a NaN or an infinity; rows when none */
} conv_job;

/* Rows per claim: enough work per claim (a 2048-wide row is some 10-100 µs of search) that the
 * atomics do not show, small enough that a late thread's range is taken over. */
enum { CONV_CHUNK = 16 };

static void conv_rows(void *arg, int ith, int nth) {
    (void)nth;
    conv_job *c = arg;
    float *row = c->j->row + (size_t)ith * (size_t)c->j->widest;
    const int64_t cols = c->in->ne[0];
    long lo, hi;
    while (elm_pool_work_claim(&c->work, ith, CONV_CHUNK, &lo, &hi)) {
        for (long r = lo; r < hi; r++) {
            if (r >= atomic_load_explicit(&c->bad, memory_order_relaxed)) return;
            const uint8_t *raw = (const uint8_t *)c->in->data + (size_t)r * c->src_row;
            c->src_tt->to_float(raw, row, cols);
            if (elm_check_row(c->j->m, c->in, r, raw, row, NULL)) {
                long long cur = atomic_load(&c->bad);
                while (r < cur && !atomic_compare_exchange_weak(&c->bad, &cur, r)) {}
                return;
            }
            uint8_t *out = c->dst + (size_t)r * c->dst_row;
            /* an expert's rows take its own slice, as llama-quantize's imatrix_for_row */
            if (c->qw) elm_encode_row(c->t->type, row, out, c->t->ne[0],
                                      c->qw + (r / c->in->ne[1]) * cols);
            else c->dst_tt->from_float(row, out, c->t->ne[0]);
        }
    }
}

/* Tensor in's rows converted to t's type (RTN, importance-weighted with an imatrix) into dst. */
static elm_status convert(wjob *j, const elm_tensor *in, const elm_tensor *t, uint8_t *dst,
                          elm_error *err) {
    const int64_t rows = in->ne[1] * in->ne[2] * in->ne[3];
    const elm_imatrix_entry *e = j->imatrix ? elm_imatrix_find(j->imatrix, t->name) : NULL;
    if (e && e->n != in->ne[0] * in->ne[2] * in->ne[3]) e = NULL; /* (checked by the caller) */
    if (e) elm_imatrix_weights(e, j->qw); /* one weight per column of each matrix */
    conv_job c = {.j = j, .in = in, .t = t, .src_tt = elm_type_get(in->type),
                  .dst_tt = elm_type_get(t->type), .src_row = elm_row_bytes(in->type, in->ne[0]),
                  .dst_row = elm_row_bytes(t->type, t->ne[0]), .dst = dst, .qw = e ? j->qw : NULL};
    elm_pool_work_init(&c.work, (long)rows, elm_pool_size(j->pool));
    atomic_init(&c.bad, (long long)rows);
    elm_pool_run_shared(j->pool, conv_rows, &c);
    const long long bad = atomic_load(&c.bad);
    if (bad == rows) return ELM_OK;
    /* the first bad row, as a serial run names it: each home range is claimed in row order and
     * its thread stops only at a row past the lowest bad one seen, so every row before `bad` was
     * read and found finite */
    const uint8_t *raw = (const uint8_t *)in->data + (size_t)bad * c.src_row;
    c.src_tt->to_float(raw, j->row, in->ne[0]);
    return elm_check_row(j->m, in, bad, raw, j->row, err);
}

/* Tensor k of the output (file order, described by t) made final and written: a calibrated run
 * goes on until it is, then its bytes are written from the run (and freed) or the checkpoint;
 * the rest are converted here. */
static elm_status put_tensor(wjob *j, elm_gguf_writer *w, int32_t k, const elm_tensor *t,
                             elm_error *err) {
    const int32_t i = j->order ? j->order[k] : k;
    const elm_tensor_plan *p = &j->plan[i];
    /* warned here rather than while planning, so that an output that cannot be created fails
     * before any warning is shown */
    if (p->type != p->wanted && j->cb && j->cb->warn) {
        const elm_type_traits *wt = elm_type_get((uint32_t)p->wanted);
        char msg[256];
        snprintf(msg, sizeof msg, "tensor '%s' has rows of %lld weights, not a multiple of the %s "
                 "block size %d: written as %s", t->name, (long long)t->ne[0], wt->name,
                 wt->block_size, elm_type_get((uint32_t)p->type)->name);
        j->cb->warn(msg, j->cb->user);
    }
    while (j->run && j->run->stage < j->run->final_stage[i]) {
        elm_status st = elm_qrun_step(j->run, err);
        if (st) return st;
    }
    elm_status st;
    const bool from_ckpt = j->run && elm_ckpt_has(j->run->ckpt, i);
    if (!from_ckpt && j->run && j->run->bytes[i]) {
        st = elm_gguf_write_tensor(w, k, j->run->bytes[i], t->nbytes, err);
        free(j->run->bytes[i]);
        j->run->bytes[i] = NULL;
    } else {
        if (t->nbytes > j->cap) {
            free(j->buf);
            if (!(j->buf = malloc(t->nbytes))) {
                j->cap = 0;
                return elm_errorf(err, ELM_ERR_NOMEM, "out of memory writing '%s' (%zu bytes)",
                                  t->name, t->nbytes);
            }
            j->cap = t->nbytes;
        }
        st = from_ckpt ? elm_ckpt_read(j->run->ckpt, i, j->buf, t->nbytes, err)
                       : convert(j, &j->src[i], t, j->buf, err);
        if (!st) st = elm_gguf_write_tensor(w, k, j->buf, t->nbytes, err);
    }
    if (!st && j->per_tensor_progress)
        st = elm_quant_progress(j->cb, k + 1, j->m->n_tensors, t->name, err);
    return st;
}

void elm_quant_report_free(elm_quant_report *r) {
    free(r->tensors);
    free(r->expert_fallback);
    memset(r, 0, sizeof *r);
}

/* llama-quantize's refusal: every tensor it would stop at without importance data
 * (elm_recipe_needs_imatrix) has an imatrix entry, else one error naming the type (no imatrix) or
 * the tensor (not covered). GPTQ needs none for the tensors it quantizes into a grid type: its
 * input Hessian's diagonal gives the importances (elm_lw_gptq_reaches); those it rounds (the
 * token embedding) take the imatrix's as round-to-nearest does. AWQ rounds such a type by the
 * types table, which takes no importances, so it is refused it as a run without an imatrix is. */
static elm_status check_importances(const elm_model *m, const elm_quant_params *p,
                                    const elm_tensor_plan *plan, elm_error *err) {
    const uint32_t ftype = p->policy.recipe ? p->policy.recipe : elm_file_type_of(p->policy.type);
    const elm_imatrix *im = p->method == ELM_QUANT_AWQ ? NULL : p->imatrix;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        elm_grid g;
        if (t->n_dims < 2 || elm_recipe_keeps(t->name) ||
            !elm_recipe_needs_imatrix(t->name, plan[i].type, ftype) ||
            (p->method == ELM_QUANT_GPTQ && elm_grid_of(plan[i].type, &g) &&
             elm_lw_gptq_reaches(m, t)))
            continue;
        const char *type = elm_type_get((uint32_t)plan[i].type)->name;
        if (!im)
            return elm_errorf(err, ELM_ERR_ARG,
                              "%s: %s needs an importance matrix (--imatrix FILE), as "
                              "llama-quantize requires (tensor '%s', %s)",
                              m->path, type, t->name, plan[i].reason);
        if (!elm_imatrix_find(im, t->name))
            return elm_errorf(err, ELM_ERR_ARG,
                              "%s: no importances for tensor '%s', which %s needs "
                              "(llama-quantize aborts there)",
                              p->imatrix_path ? p->imatrix_path : "imatrix", t->name, type);
    }
    return ELM_OK;
}

/* Report of a run: the plan's types and reasons, the calibrated errors when there are, and the
 * budget's predicted costs (cost, or NULL without a budget). */
static elm_status fill_report(const elm_model *m, const elm_tensor_plan *plan, const elm_qrun *run,
                              const int32_t *order, const double *cost, elm_quant_report *rep,
                              elm_error *err) {
    rep->tensors = calloc(m->n_tensors ? (size_t)m->n_tensors : 1, sizeof *rep->tensors);
    if (!rep->tensors) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    rep->n_tensors = m->n_tensors;
    rep->n_damp_raised = run->n_damp_raised;
    if (run->n_fallback) {
        rep->expert_fallback = malloc(sizeof *rep->expert_fallback * (size_t)run->n_fallback);
        if (!rep->expert_fallback) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
        memcpy(rep->expert_fallback, run->fallback,
               sizeof *run->fallback * (size_t)run->n_fallback);
        rep->n_expert_fallback = run->n_fallback;
    }
    for (int32_t k = 0; k < m->n_tensors; k++) {
        const int32_t i = order ? order[k] : k; /* file order */
        elm_quant_tensor_info *t = &rep->tensors[k];
        if (run->info) {
            *t = run->info[i];
        } else {
            snprintf(t->name, sizeof t->name, "%s", m->tensors[i].name);
            t->type = plan[i].type;
            snprintf(t->reason, sizeof t->reason, "%s", plan[i].reason);
            t->err_before = t->err_after = -1;
        }
        t->predicted_cost = cost ? cost[i] : -1;
    }
    return ELM_OK;
}

/* The type of the most weights of the 2-D tensors: a budget's file is labelled by it. */
static elm_type main_type(const elm_model *m, const elm_tensor_plan *plan) {
    int64_t weights[ELM_TYPE_COUNT] = {0};
    elm_type best = ELM_TYPE_F32;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        if (t->n_dims < 2 || (uint32_t)plan[i].type >= ELM_TYPE_COUNT) continue;
        weights[plan[i].type] += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        if (weights[plan[i].type] > weights[best]) best = plan[i].type;
    }
    return best;
}

elm_status elm_quantize(const elm_model *m, const elm_quant_params *params,
                           const char *out_path, const elm_quantize_callbacks *cb,
                           elm_quant_report *report, elm_error *err) {
    const double t0 = elm_now_s();
    elm_mem_sampler *mem = elm_mem_sampler_start(10);
    const int32_t n = m->n_tensors;
    if (report) memset(report, 0, sizeof *report);
    elm_tensor_plan *plan = calloc(n ? (size_t)n : 1, sizeof *plan);
    elm_tensor *out = calloc(n ? (size_t)n : 1, sizeof *out);
    elm_qrun run = {0};
    wjob job = {.m = m, .src = m->tensors, .plan = plan, .cb = cb,
                .per_tensor_progress = params->method == ELM_QUANT_RTN,
                .imatrix = params->imatrix};
    elm_quant_policy policy = params->policy;
    policy.imatrix |= params->imatrix != NULL;
    elm_quantize_summary sum = {0};
    elm_status st = ELM_OK;
    if (!plan || !out) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
    if (!st && params->imatrix)
        st = elm_imatrix_check(params->imatrix, m,
                               params->imatrix_path ? params->imatrix_path : "imatrix", err);
    if (!st) st = elm_quant_plan(m, &policy, plan, err);
    double *cost = NULL;
    if (!st && (params->target_bytes || params->target_bpw > 0)) {
        if (!(cost = malloc(sizeof *cost * (n ? (size_t)n : 1))))
            st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
        if (!st) st = elm_quant_budget(m, params, plan, cost, err);
    }
    if (!st) st = check_importances(m, params, plan, err);
    int32_t *order = NULL;
    elm_tensor *outw = out;
    if (!st && params->method != ELM_QUANT_RTN) {
        st = elm_qrun_start(m, params, plan, cb, false, &run, err);
        job.src = run.tensors;
        job.run = &run;
        /* the file lists the tensors in the order they become final (stable within a stage), so
         * each block's bytes are written, and freed, when the block is done */
        order = malloc(sizeof *order * (n ? (size_t)n : 1));
        outw = malloc(sizeof *outw * (n ? (size_t)n : 1));
        if (!st && (!order || !outw)) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
        for (int32_t s = 0, k = 0; !st && s <= m->hp.n_layers + 1; s++)
            for (int32_t i = 0; i < n; i++)
                if (run.final_stage[i] == s) order[k++] = i;
        job.order = order;
    }
    int64_t widest = 1, widest_qw = 1;
    for (int32_t i = 0; i < n && !st; i++) {
        const elm_tensor *in = &m->tensors[i];
        elm_tensor *t = &out[i];
        *t = *in;
        t->data = NULL;
        t->type = plan[i].type;
        t->nbytes = elm_row_bytes(t->type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        if (in->ne[0] > widest) widest = in->ne[0];
        const int64_t n_qw = in->ne[0] * in->ne[2] * in->ne[3]; /* a row's per matrix */
        if (n_qw > widest_qw) widest_qw = n_qw;
        sum.n_fallback += plan[i].type != plan[i].wanted;
        sum.n_params += in->ne[0] * in->ne[1] * in->ne[2] * in->ne[3];
        sum.bytes_in += in->nbytes;
        sum.bytes_out += t->nbytes;
    }
    /* the threads a round-to-nearest tensor's rows are spread over (a calibrated run's blocks
     * have their own pool, idle by the time the tensors it leaves are converted here) */
    const int nth = params->n_threads > 0 ? params->n_threads : elm_online_cores();
    if (!st) st = elm_pool_new(nth, &job.pool, err);
    job.widest = widest;
    if (!st && (!(job.row = malloc((size_t)widest * (size_t)nth * sizeof(float))) ||
                !(job.qw = malloc((size_t)widest_qw * sizeof(float)))))
        st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
    for (int32_t k = 0; order && outw && k < n && !st; k++) outw[k] = out[order[k]];
    elm_gguf_writer *w = NULL;
    const uint32_t ftype = cost ? elm_file_type_of(main_type(m, plan))
                           : policy.recipe ? policy.recipe : elm_file_type_of(policy.type);
    if (!st) st = elm_gguf_begin_model(out_path, m, outw, n, ftype, &w, err);
    for (int32_t k = 0; k < n && !st; k++) st = put_tensor(&job, w, k, &outw[k], err);
    /* before the file is made whole, so that a callback asking to stop still leaves none */
    if (!st && !job.per_tensor_progress)
        st = elm_quant_progress(cb, m->hp.n_layers + 2, m->hp.n_layers + 2, "written", err);
    if (!st) st = elm_gguf_end(w, &sum.file_bytes, err);
    elm_gguf_writer_free(w);
    if (!st) {
        /* the output is whole: the checkpoint has served */
        elm_ckpt_close(run.ckpt, true);
        run.ckpt = NULL;
    }
    if (!st && report) st = fill_report(m, plan, &run, order, cost, report, err);
    elm_pool_free(job.pool);
    free(job.row);
    free(job.qw);
    free(job.buf);
    elm_qrun_free(&run);
    if (outw != out) free(outw);
    free(order);
    free(out);
    free(plan);
    free(cost);
    const elm_mem_usage mu = elm_mem_sampler_stop(mem);
    if (st) {
        if (report) elm_quant_report_free(report);
        return st;
    }
    sum.n_tensors = n;
    sum.bits_per_weight = sum.n_params ? 8.0 * (double)sum.bytes_out / (double)sum.n_params : 0;
    sum.ratio = sum.bytes_out ? (double)sum.bytes_in / (double)sum.bytes_out : 0;
    sum.seconds = elm_now_s() - t0;
    sum.peak_rss = mu.peak_rss;
    sum.peak_anon = mu.rss_anon;
    if (report) report->summary = sum;
    return ELM_OK;
}
