/* Bounded memory of the calibrated quantizers (layerwise.c, issue 23) on a synthetic Llama of 16
 * small blocks (dim 256, ffn 768, F16 weights, mapped from the file) quantized by GPTQ to q4_0:
 *  - when a block is done (its progress callback) the working copy holds float32 values of that
 *    block's matrices and no other (besides the token embedding and the output), and at the end
 *    none;
 *  - the run's peak anonymous memory (elm_quantize's report, RssAnon sampled from
 *    /proc/self/status) stays below the anonymous memory before it plus a bound derived from one
 *    block: its float32 matrices, its four input Hessians, the largest linear's GPTQ scratch, the
 *    calibration states, the float32 embedding and output, and the block's encoded bytes (written
 *    to the file when the block is done), with 16 MiB for thread stacks and allocator slack. A float32 copy of the whole
 *    model (52 MiB more) exceeds it;
 *  - `edgelm plan --quantize`'s estimate of that memory (elm_quant_estimate_run) is within a factor
 *    of 2 of the peak measured above the anonymous memory the test started with;
 *  - a mixture of experts (synth --tiny qwen3moe: its router and 3-D expert stacks) is held one
 *    block at a time as well: when its block is done, exactly that block's matrices.
 * Sanitizer builds (whose allocator keeps freed memory in quarantine) check the first part only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/memstat.h"
#include "edgelm/quant.h"
#include "edgelm/shapes.h"
#include "quant/layerwise.h"
#include "shapes/synth_tiny.h"
/* the scratch-directory helpers; this test copies no fixture file */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tmpfiles.h"
#pragma GCC diagnostic pop

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static const elm_synth_preset shape = {"test-16x256", "none", "llama", 512, 256, 16, 4, 4, 768,
                                       256, 1e-5f, 10000.0f, false, false, 0, 0, 0, 0, NULL, 0, 0, {0}};

enum { N_SAMPLES = 4, SEQ = 64 };

static int64_t f32_bytes(const elm_tensor *t) {
    return 4 * t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Float32 bytes the working copy holds for matrices, beyond the embedding and the output, at
 * each progress step: worst of all, and the steps of a block where it was not that block's. */
typedef struct watch {
    const elm_qrun *r;
    int64_t block, worst;
    int calls, off;
} watch;

static int on_progress(int32_t done, int32_t total, const char *what, void *user) {
    (void)done, (void)total;
    watch *w = user;
    const elm_qrun *r = w->r;
    int64_t held = 0;
    for (int32_t i = 0; i < r->src->n_tensors; i++) {
        const elm_tensor *t = &r->tensors[i];
        if (t->n_dims >= 2 && t->data != r->src->tensors[i].data && t != r->work.tok_embd &&
            t != r->work.output)
            held += f32_bytes(t);
    }
    if (held > w->worst) w->worst = held;
    w->off += !strncmp(what, "blk.", 4) && held != w->block;
    w->calls++;
    return 0;
}

/* Float32 bytes of block l's matrices (2-D and expert stacks). */
static int64_t block_bytes(elm_layer *L) {
    elm_tensor **slots[ELM_LAYER_SLOTS];
    const int n = elm_layer_slots(L, slots);
    int64_t b = 0;
    for (int k = 0; k < n; k++)
        if (*slots[k] && (*slots[k])->n_dims >= 2) b += f32_bytes(*slots[k]);
    return b;
}

/* The working copy of a GPTQ run over synth --tiny qwen3moe holds one block's matrices at a
 * time, its expert stacks among them. */
static void moe_blocks(const elm_calib_set *cs) {
    elm_synth_tiny o = {.arch = "qwen3moe",
                        .vocab_path = fixture("stories260K/stories260K-f32.gguf"), .seed = 3,
                        .std = 0.05f, .width = 256};
    elm_model *m = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err) != ELM_OK) {
        CHECK(0, "synth qwen3moe: %s", err.msg);
        return;
    }
    const elm_quant_params p = {.policy = {.type = ELM_TYPE_Q4_K, .pure = true},
                                .method = ELM_QUANT_GPTQ, .calib = cs, .n_threads = 2};
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    elm_qrun r;
    watch w = {&r, block_bytes(&m->layers[0]), 0, 0, 0};
    const elm_quantize_callbacks cb = {.progress = on_progress, .user = &w};
    elm_status st = elm_quant_plan(m, &p.policy, plan, &err);
    if (!st) st = elm_quant_calibrated(m, &p, plan, &cb, false, &r, &err);
    CHECK(st == ELM_OK, "qwen3moe calibrated run: %s", err.msg);
    if (!st) {
        printf("qwen3moe: at most %.2f MiB of block matrices held (one block, experts included: "
               "%.2f MiB)\n", w.worst / 1048576.0, w.block / 1048576.0);
        CHECK(w.worst == w.block && w.off == 0 && m->layers[0].gate_exps,
              "qwen3moe: the working copy held up to %lld bytes of matrices, one block is %lld; "
              "%d blocks ended holding another amount", (long long)w.worst, (long long)w.block,
              w.off);
    }
    elm_qrun_free(&r);
    free(plan);
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const int64_t at_start = elm_mem_now().rss_anon;
    char *dir = tmp_dir_new();
    const char *path = tmp_path(dir, "m.gguf"), *out = tmp_path(dir, "q.gguf");
    elm_error err;
    elm_model *m = NULL;
    if (elm_synth_write(&shape, ELM_TYPE_F16, path, 7, NULL, NULL, NULL, &err) != ELM_OK ||
        elm_model_load(path, NULL, &m, &err) != ELM_OK) {
        CHECK(0, "synthetic model: %s", err.msg);
        tmp_dir_remove(dir);
        return check_done();
    }
    /* calibration: random token ids (the weights are noise too) */
    int32_t *ids[N_SAMPLES], n_ids[N_SAMPLES];
    uint64_t rng = 1;
    for (int i = 0; i < N_SAMPLES; i++) {
        ids[i] = malloc(sizeof(int32_t) * SEQ);
        n_ids[i] = SEQ;
        for (int k = 0; k < SEQ; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            ids[i][k] = (int32_t)(rng >> 33) % shape.n_vocab;
        }
    }
    const elm_calib_set cs = {N_SAMPLES, ids, n_ids, (int64_t)N_SAMPLES * SEQ};
    const elm_quant_params p = {.policy = {.type = ELM_TYPE_Q4_0, .pure = true},
                                .method = ELM_QUANT_GPTQ, .calib = &cs, .n_threads = 2};
    const elm_layer *L = &m->layers[0];
    const int64_t d = shape.dim, f = shape.ffn_dim;
    const int64_t block = f32_bytes(L->wq) + f32_bytes(L->wk) + f32_bytes(L->wv) +
                          f32_bytes(L->wo) + f32_bytes(L->w_gate) + f32_bytes(L->w_up) +
                          f32_bytes(L->w_down);

    /* 1. what the working copy holds after each block */
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    elm_qrun r;
    watch w = {&r, block, 0, 0, 0};
    const elm_quantize_callbacks cb = {.progress = on_progress, .user = &w};
    elm_status st = elm_quant_plan(m, &p.policy, plan, &err);
    if (!st) st = elm_quant_calibrated(m, &p, plan, &cb, false, &r, &err);
    CHECK(st == ELM_OK, "calibrated run: %s", err.msg);
    if (!st) {
        printf("working copy: at most %.2f MiB of block matrices held (one block: %.2f MiB, the "
               "model: %.2f MiB)\n", w.worst / 1048576.0, block / 1048576.0,
               block * shape.n_layers / 1048576.0);
        CHECK(w.calls == shape.n_layers + 1, "%d progress calls", w.calls);
        CHECK(w.worst == block && w.off == 0, "the working copy held up to %lld bytes of matrices, "
              "one block is %lld; %d blocks ended holding another amount", (long long)w.worst,
              (long long)block, w.off);
        int held = 0;
        for (int32_t i = 0; i < m->n_tensors; i++)
            held += r.tensors[i].n_dims >= 2 && r.tensors[i].data != m->tensors[i].data;
        CHECK(held == 0, "%d matrices still held after the run", held);
    }
    elm_qrun_free(&r);
    free(plan);

    /* 2. the process's peak anonymous memory during a whole quantization */
    if (!SANITIZED) {
        const int64_t before = elm_mem_now().rss_anon;
        elm_quant_report rep;
        st = elm_quantize(m, &p, out, NULL, &rep, &err);
        CHECK(st == ELM_OK, "quantize: %s", err.msg);
        if (!st) {
            const int64_t hessians = 4 * (3 * d * d + f * f);
            /* the down projection, GPTQ's widest: lin_buf (W, values, codes, block parameters,
             * the error figures' row sample and H panel) and elm_gptq's (permuted H, the
             * feedback factor, permuted W) */
            const int64_t scratch = 9 * d * f + 4 * (3 * 128 + 256) * f + 8 * f * f + 4 * d * f;
            const int64_t states = 4 * cs.n_tokens * d;
            const int64_t ends = 2 * 4 * (int64_t)shape.n_vocab * d;
            /* a block's q4_0 bytes (18 per 32 weights) until written, and the writer's copy */
            const int64_t encoded = 2 * block / 4 / 32 * 18;
            const int64_t bound = block + hessians + scratch + states + ends + encoded + (16 << 20);
            printf("peak anonymous memory %.1f MiB: %.1f MiB above the %.1f MiB before, bound "
                   "%.1f MiB; peak RSS %.1f MiB\n", rep.summary.peak_anon / 1048576.0,
                   (rep.summary.peak_anon - before) / 1048576.0, before / 1048576.0,
                   bound / 1048576.0, rep.summary.peak_rss / 1048576.0);
            if (rep.summary.peak_anon == 0) {
                printf("no /proc/self/status: the memory bound is not checked\n");
            } else {
                CHECK(rep.summary.peak_anon - before <= bound,
                      "peak anonymous memory %lld bytes above the start, bound %lld",
                      (long long)(rep.summary.peak_anon - before), (long long)bound);
                CHECK(rep.summary.peak_rss >= rep.summary.peak_anon, "peak RSS below peak RssAnon");
                const elm_quant_rates rates = {1, 1};
                elm_quant_estimate e;
                st = elm_quant_estimate_run(m, &p, N_SAMPLES, SEQ, &rates, &e, &err);
                CHECK(st == ELM_OK, "estimate: %s", err.msg);
                const double used = (double)(rep.summary.peak_anon - at_start);
                printf("plan --quantize's estimate %.1f MiB, measured %.1f MiB above the start\n",
                       e.peak_anon_bytes / 1048576.0, used / 1048576.0);
                CHECK(!st && used <= 2.0 * (double)e.peak_anon_bytes &&
                      2.0 * used >= (double)e.peak_anon_bytes,
                      "estimate %llu bytes, measured %.0f", (unsigned long long)e.peak_anon_bytes,
                      used);
            }
            elm_quant_report_free(&rep);
        }
    }
    elm_model_free(m);
    /* the same calibration ids: the tiny model has stories260K's 512 tokens too */
    moe_blocks(&cs);
    for (int i = 0; i < N_SAMPLES; i++) free(ids[i]);
    tmp_dir_remove(dir);
    return check_done();
}
