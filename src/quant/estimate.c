/* Cost of a GPTQ/AWQ run before it runs (edgelm/quant.h): the arithmetic and the memory of the
 * block-by-block driver (layerwise.c, gptq.c, awq.c, errfig.c, capture.c) counted from the shapes,
 * and two rates measured on this machine: OpenBLAS's float32 GEMM and the scalar code choice. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "edgelm/quant.h"
#include "edgelm/system.h"
#include "quant/awq.h"
#include "quant/errfig.h"
#include "quant/grid.h"

#define GPTQ_CLIP 10  /* as layerwise.c */
#define GPTQ_BATCH 128

elm_status elm_quant_measure_rates(int32_t n_threads, elm_quant_rates *out, elm_error *err) {
    enum { N = 768, W = 1 << 16 };
    memset(out, 0, sizeof *out);
    float *a = malloc(sizeof(float) * N * N * 3), *x = malloc(sizeof(float) * W);
    if (!a || !x) {
        free(a);
        free(x);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory measuring the GEMM rate");
    }
    uint64_t rng = 1;
    for (int i = 0; i < 3 * N * N; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (float)((double)(rng >> 40) / (double)(1 << 24) - 0.5);
    }
    for (int i = 0; i < W; i++) x[i] = a[i];
    openblas_set_num_threads(n_threads > 0 ? n_threads : elm_online_cores());
    /* one warm-up product, then as many as fit in about 0.3 s */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, a + N * N, N, 0.0f,
                a + 2 * N * N, N);
    int reps = 0;
    const double t0 = elm_now_s();
    double t = t0;
    while (t - t0 < 0.3 || reps < 2) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, a + N * N, N,
                    0.0f, a + 2 * N * N, N);
        reps++;
        t = elm_now_s();
    }
    out->gemm_gflops = 2.0 * N * N * N * reps / (t - t0) / 1e9;
    /* the scalar part: GPTQ's clip search and code choice over W weights, one thread */
    elm_grid g;
    elm_grid_of(ELM_TYPE_Q4_0, &g);
    float h[ELM_QK];
    for (int j = 0; j < ELM_QK; j++) h[j] = 1;
    volatile float sink = 0;
    const double s0 = elm_now_s();
    for (int b = 0; b < W; b += ELM_QK) {
        const elm_block_params p = elm_grid_best_params(&g, x + b, h, GPTQ_CLIP);
        for (int j = 0; j < ELM_QK; j++) sink += elm_grid_value(&g, &p, j, elm_grid_code(&g, &p, j, x[b + j]));
    }
    out->scalar_ns = (elm_now_s() - s0) * 1e9 / W;
    (void)sink;
    free(a);
    free(x);
    return ELM_OK;
}

/* One linear of a block: its rows and the width of its input group. */
typedef struct lin {
    int64_t rows, cols;
} lin;

/* Scratch of the widest linear's quantization (lin_buf, elm_gptq or AWQ's searches), bytes. */
static double scratch_bytes(elm_quant_method method, lin l) {
    const double rc = (double)l.rows * l.cols, n2 = (double)l.cols * l.cols;
    const double lin_buf = 4 * rc + rc + sizeof(elm_block_params) * rc / ELM_QK + 4 * rc +
                           4.0 * (3 * ELM_ERR_ROWS + ELM_ERR_PANEL) * l.cols;
    if (method == ELM_QUANT_GPTQ) return lin_buf + 8 * n2 + 4 * rc + 4.0 * l.rows * GPTQ_BATCH;
    /* hb, a chunk of 256 rows' errors and (legacy types, the most) their blocks' clip candidates */
    return lin_buf + 4.0 * l.cols * ELM_QK + 4.0 * 256 * l.cols +
           (double)sizeof(elm_block_params) * 256 * l.cols / ELM_QK * ELM_AWQ_CLIP;
}

/* GEMM flops, scalar weight visits and Hessian (float32 SYRK) flops of one linear whose input
 * saw n_tokens. */
static void linear_cost(elm_quant_method method, lin l, int64_t n_tokens, double *gemm,
                        double *scalar) {
    const double r = (double)l.rows, n = (double)l.cols;
    const double sample = (double)(l.rows < ELM_ERR_ROWS ? l.rows : ELM_ERR_ROWS);
    *gemm += 2 * 3 * sample * n * n; /* error figures */
    if (method == ELM_QUANT_GPTQ) {
        /* one spotrf and one strtri, one more spotrf to test definiteness when H may be of full
         * rank; the feedback */
        *gemm += n * n * n / 3 * (n_tokens >= l.cols ? 3 : 2) + r * n * n;
        *scalar += r * n;
    } else {
        /* the clipping search: 10 candidates, each block's errors times its 32 x 32 H block */
        *gemm += ELM_AWQ_CLIP * 2.0 * r * n * ELM_QK;
        *scalar += ELM_AWQ_CLIP * r * n / GPTQ_CLIP;
    }
}

/* The work and memory of one block. */
typedef struct block_cost {
    double gemm, scalar, syrk, forward; /* flops, weight visits */
    double params;                      /* matrix weights held in float32 */
    double hessians, widest;            /* bytes: its input Hessians, the widest linear's scratch */
} block_cost;

/* Block cost of a dense FFN's block (n_expert 0) or a mixture of experts' (layerwise_moe.c): its
 * router (and shared expert), and each of n_expert experts' three matrices calibrated on the
 * tokens routed to it (on average k of n_expert of them), whose Hessians are all held; a token's
 * calibration passes run its k experts only. */
static block_cost block_of(const elm_hparams *hp, elm_quant_method method, int64_t n_tokens,
                           bool moe) {
    const int64_t d = hp->dim, qd = (int64_t)hp->n_heads * hp->head_dim,
                  kvd = (int64_t)hp->n_kv_heads * hp->head_dim;
    const int64_t E = moe ? hp->n_expert : 0, k = hp->n_expert_used, fe = hp->expert_ffn_dim;
    const int64_t f = hp->ffn_dim, per_expert = E ? n_tokens * k / E : 0;
    block_cost c = {0};
    const lin mixing[4] = {{qd, d}, {kvd, d}, {kvd, d}, {d, qd}};
    const lin dense[3] = {{f, d}, {f, d}, {d, f}}, experts[3] = {{fe, d}, {fe, d}, {d, fe}};
    const lin router = {E, d};
    double active = 0; /* weights a token's pass reads */
    for (int i = 0; i < 4 + 3; i++) {
        const bool ffn = i >= 4;
        const lin l = !ffn ? mixing[i] : E ? experts[i - 4] : dense[i - 4];
        const int64_t n = ffn && E ? E : 1; /* copies of it: one per expert */
        double g = 0, s = 0;
        linear_cost(method, l, ffn && E ? per_expert : n_tokens, &g, &s);
        c.gemm += n * g;
        c.scalar += n * s;
        c.params += (double)n * l.rows * l.cols;
        active += (double)(ffn && E ? k : 1) * l.rows * l.cols;
        const double sc = scratch_bytes(method, l);
        c.widest = sc > c.widest ? sc : c.widest;
    }
    const double T = (double)n_tokens;
    /* the input groups' Hessians: q/k/v, o, then gate/up and down (or the router, and each
     * expert's two, each token summed into its k experts') */
    const double w2[2] = {(double)d * d, (double)qd * qd};
    c.syrk = T * (w2[0] + w2[1]);
    c.hessians = 4 * (w2[0] + w2[1]);
    if (E) {
        /* the router, and a shared expert's three matrices, run for every token */
        const int64_t sf = hp->shexp_ffn_dim;
        const lin every[4] = {router, {sf, d}, {sf, d}, {d, sf}};
        for (int i = 0; i < (sf > 0 ? 4 : 1); i++) {
            linear_cost(method, every[i], n_tokens, &c.gemm, &c.scalar);
            c.params += (double)every[i].rows * every[i].cols;
            active += (double)every[i].rows * every[i].cols;
        }
        c.syrk += T * (double)sf * sf;
        c.hessians += 4.0 * sf * sf;
        c.syrk += T * d * d + T * k * ((double)d * d + (double)fe * fe);
        c.hessians += 4.0 * d * d + 4.0 * E * ((double)d * d + (double)fe * fe);
    } else {
        c.syrk += T * ((double)d * d + (double)f * f);
        c.hessians += 4.0 * ((double)d * d + (double)f * f);
    }
    if (method == ELM_QUANT_AWQ) {
        /* the scale search: 20 candidates over each group's linears */
        c.gemm += ELM_AWQ_GRID * 2.0 * c.params * ELM_QK;
        c.scalar += ELM_AWQ_GRID * c.params / GPTQ_CLIP;
    }
    c.forward = 2 * 2 * active * T; /* two passes per block */
    return c;
}

elm_status elm_quant_estimate_run(const elm_model *m, const elm_quant_params *p, int32_t n_samples,
                                  int32_t seq_len, const elm_quant_rates *rates,
                                  elm_quant_estimate *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    const int64_t n_tokens = (int64_t)n_samples * seq_len;
    if (p->method == ELM_QUANT_RTN)
        return elm_errorf(err, ELM_ERR_ARG, "%s: an estimate is for gptq or awq", m->path);
    if (n_tokens < 1 || !(rates->gemm_gflops > 0))
        return elm_errorf(err, ELM_ERR_ARG, "%s: estimate needs calibration tokens and a GEMM rate",
                          m->path);
    const elm_hparams *hp = &m->hp;
    const int64_t d = hp->dim, f = hp->ffn_dim, qd = (int64_t)hp->n_heads * hp->head_dim,
                  kvd = (int64_t)hp->n_kv_heads * hp->head_dim, v = hp->n_vocab;
    elm_tensor_plan *plan = calloc(m->n_tensors ? (size_t)m->n_tensors : 1, sizeof *plan);
    if (!plan) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    elm_status st = elm_quant_plan(m, &p->policy, plan, err);
    elm_type out_type = ELM_TYPE_F16;
    for (int32_t i = 0; !st && i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, "output.weight")) out_type = plan[i].type;
    free(plan);
    if (st) return st;
    elm_grid og;
    const bool output_calibrated = !hp->tied_output && elm_grid_of(out_type, &og);
    const int threads = p->n_threads > 0 ? p->n_threads : elm_online_cores();
    const double T = (double)n_tokens;

    /* the blocks: a mixture of experts' past its leading dense ones */
    const double gflops = rates->gemm_gflops * 1e9;
    double blk_seconds = 0, block_params = 0, block_stage = 0;
    for (int l = 0; l < hp->n_layers; l++) {
        const block_cost c = block_of(hp, p->method, n_tokens, elm_layer_moe(hp, l));
        /* the scalar walk splits its rows over the threads */
        const double sec = (c.gemm + c.forward + c.syrk) / gflops +
                           c.scalar * rates->scalar_ns * 1e-9 / threads;
        out->seconds += sec;
        blk_seconds = sec > blk_seconds ? sec : blk_seconds;
        out->gemm_flop += c.gemm;
        out->forward_flop += c.forward;
        out->syrk_flop += c.syrk;
        out->scalar_weights += c.scalar;
        block_params = c.params > block_params ? c.params : block_params;
        /* the block's float32 matrices (AWQ keeps the unscaled ones too), its Hessians, the
         * widest linear's scratch */
        const double stage = 4 * c.params * (p->method == ELM_QUANT_AWQ ? 2 : 1) + c.hessians +
                             c.widest;
        block_stage = stage > block_stage ? stage : block_stage;
    }
    out->seconds_per_block = blk_seconds;

    /* the output projection, when it is calibrated */
    double out_seconds = 0, out_stage = 0;
    if (output_calibrated) {
        double g = 0, s = 0;
        linear_cost(p->method, (lin){v, d}, n_tokens, &g, &s);
        const double fw = 2.0 * v * d * T, sy = T * (double)d * d;
        out_seconds = (g + fw + sy) / gflops + s * rates->scalar_ns * 1e-9 / threads;
        out->gemm_flop += g;
        out->forward_flop += fw;
        out->syrk_flop += sy;
        out->scalar_weights += s;
        out_stage = 4.0 * v * d + 4.0 * d * d + scratch_bytes(p->method, (lin){v, d});
    }
    out->seconds += out_seconds;

    /* memory: the widest block stage (above), or at the output stage its float32 copy, Hessian
     * and scratch; both with the calibration states and the float32 embedding */
    /* ... and the forward pass's activations of one sequence, plus thread stacks and BLAS
     * buffers (16 MiB) */
    const double common = 4 * T * d + 4.0 * v * d + 4.0 * seq_len * (4 * d + 2 * qd + 4 * kvd + 2 * f) + (16 << 20);
    out->block_bytes = (uint64_t)(4 * block_params);
    out->peak_anon_bytes = (uint64_t)(common + (block_stage > out_stage ? block_stage : out_stage));
    out->n_tokens = n_tokens;
    out->rates = *rates;
    return ELM_OK;
}
