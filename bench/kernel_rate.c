/* kernel_rate: how fast the chosen kernel table turns weights into one token's products (decode),
 * per core, apart from a model: GB/s of weights for a matrix that stays in L2 (256 × 2048, the
 * kernel's own rate), one that streams from memory (64 MiB, one thread), and one such matrix per
 * thread on N threads at once. A model's decode reads at most min(memory, N × the kernel's rate);
 * these say which of the two holds it back. With --prefill, the same L2 matrix against 256
 * tokens at once on one thread instead, in billions of multiply-adds a second: prefill's kernels,
 * whose rate is arithmetic's.
 *
 *   make build; EDGELM_ISA=avx2 build/kernel_rate [-t N] [--cols N] [--file-layout] [--prefill]
 *                                                 [TYPE...]
 *   (default: -t 2, 2048 columns, the types below; --file-layout: never packed, as a mixture of
 *   experts' stacks are read in place from the file; --cols 768: Qwen3-30B-A3B's expert down
 *   rows, 3 super-blocks each)
 *
 * Weights are random bytes (the kernels' speed does not depend on the values: a NaN scale costs
 * what any float does), packed where the table packs that type, as a model's are at load; the
 * activations are quantized once, as the forward pass does for a group of products. Best of 7. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kernels/kernels.h"
#include "kernels/kquant.h"

typedef struct {
    const elm_kernels *k;
    elm_matmul_args a;
    void *weights, *x, *xq, *y, *scratch;
    int reps;
    double seconds;
    pthread_barrier_t *start;
} job;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A rows × cols matrix of type t with n_tok tokens' activations, ready for k->matmul. */
static void job_new(job *j, const elm_kernels *k, elm_type t, int64_t rows, int64_t cols,
                    int64_t n_tok, unsigned seed, bool packs) {
    const size_t huge = (size_t)2 << 20, bytes = elm_row_bytes(t, cols) * (size_t)rows;
    const size_t alloc = (bytes + huge - 1) / huge * huge;
    uint8_t *w = aligned_alloc(huge, alloc);
    madvise(w, alloc, MADV_HUGEPAGE); /* as a model's weights are read at load (core/fileio.h) */
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
    /* MXFP4's E8M0 scales near 1 (random bytes give subnormal and infinite products, which cost
     * more than a model's) */
    if (t == ELM_TYPE_MXFP4)
        for (size_t i = 0; i < bytes; i += ELM_MXFP4_BLOCK_BYTES) w[i] = (uint8_t)(120 + w[i] % 8);
    elm_weights wt = {t, w, rows, cols, NULL};
    j->weights = w;
    if (packs && k->packs && k->packs(t, rows, cols)) {
        void *p = aligned_alloc(4096, alloc);
        k->pack(&wt, p);
        memcpy(w, p, bytes);
        free(p);
        wt.packed_by = k;
    }
    float *x = malloc(sizeof(float) * (size_t)(cols * n_tok));
    for (int64_t i = 0; i < cols * n_tok; i++) x[i] = (float)(i % 13) * 0.1f - 0.6f;
    const size_t q8 = elm_q8_row_bytes(cols), q8k = elm_q8k_row_bytes(cols);
    j->xq = aligned_alloc(64, (size_t)n_tok * (q8k + q8));
    for (int64_t i = 0; i < n_tok; i++)
        if (elm_type_q8_act(t)) k->quantize_q8(x + i * cols, cols, (uint8_t *)j->xq + i * q8);
        else elm_quantize_q8_k(x + i * cols, cols, (uint8_t *)j->xq + i * q8k);
    j->x = x;
    j->y = malloc(sizeof(float) * (size_t)(rows * n_tok));
    j->scratch = aligned_alloc(64, (elm_matmul_scratch_bytes(cols) + 63) / 64 * 64);
    j->k = k;
    j->a = (elm_matmul_args){.w = wt, .x = x, .xq = j->xq, .n_tok = n_tok, .y = j->y};
}

static void job_free(job *j) {
    free(j->weights), free(j->x), free(j->xq), free(j->y), free(j->scratch);
}

static void *run(void *arg) {
    job *j = arg;
    if (j->start) pthread_barrier_wait(j->start);
    const double t0 = now();
    for (int r = 0; r < j->reps; r++) j->k->matmul(&j->a, 0, j->a.w.rows, j->scratch);
    j->seconds = now() - t0;
    return NULL;
}

/* Best GB/s of weights (per_token: billions of multiply-adds a second) of n jobs run at once
 * (n = 1: on this thread). */
static double rate(job *jobs, int n, bool per_token) {
    double best = 0;
    for (int trial = 0; trial < 7; trial++) {
        pthread_barrier_t start;
        pthread_t th[64];
        if (n > 1) pthread_barrier_init(&start, NULL, (unsigned)n);
        for (int i = 0; i < n; i++) jobs[i].start = n > 1 ? &start : NULL;
        if (n == 1) run(&jobs[0]);
        else {
            for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, run, &jobs[i]);
            for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
            pthread_barrier_destroy(&start);
        }
        double bytes = 0, slowest = 0;
        for (int i = 0; i < n; i++) {
            const elm_weights *w = &jobs[i].a.w;
            bytes += (per_token ? (double)w->cols * (double)jobs[i].a.n_tok
                                : (double)elm_row_bytes(w->type, w->cols)) *
                     (double)w->rows * jobs[i].reps;
            slowest = jobs[i].seconds > slowest ? jobs[i].seconds : slowest;
        }
        best = bytes / slowest / 1e9 > best ? bytes / slowest / 1e9 : best;
    }
    return best;
}

int main(int argc, char **argv) {
    static const char *defaults[] = {"q4_k", "q5_k", "q6_k", "iq4_xs", "iq4_nl", "q4_0", "q8_0"};
    int threads = 2, first = 1;
    int64_t cols = 2048;
    bool packs = true, prefill = false;
    for (;;) {
        if (argc > first + 1 && !strcmp(argv[first], "-t"))
            threads = atoi(argv[first + 1]), first += 2;
        else if (argc > first + 1 && !strcmp(argv[first], "--cols"))
            cols = atoll(argv[first + 1]), first += 2;
        else if (argc > first && !strcmp(argv[first], "--file-layout")) packs = false, first++;
        else if (argc > first && !strcmp(argv[first], "--prefill")) prefill = true, first++;
        else break;
    }
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "kernel_rate: -t takes 1 to 64 threads\n");
        return 2;
    }
    if (cols < 256 || cols > (1 << 16) || cols % 256) {
        fprintf(stderr, "kernel_rate: --cols takes a multiple of 256 from 256 to 65536\n");
        return 2;
    }
    const int n_types = argc > first ? argc - first : (int)(sizeof defaults / sizeof *defaults);
    const elm_kernels *k = elm_kernels_best();
    if (prefill) printf("| type | kernels | 256 tokens, L2, 1 thread |\n|---|---|---:|\n");
    else {
        printf("| type | kernels | L2, 1 thread | memory, 1 thread | memory, %d threads |\n",
               threads);
        printf("|---|---|---:|---:|---:|\n");
    }
    for (int ti = 0; ti < n_types; ti++) {
        const char *name = argc > first ? argv[first + ti] : defaults[ti];
        elm_type t = ELM_TYPE_COUNT;
        for (int i = 0; i < ELM_TYPE_COUNT; i++)
            if (elm_type_get((elm_type)i) && !strcmp(elm_type_get((elm_type)i)->name, name))
                t = (elm_type)i;
        if (t == ELM_TYPE_COUNT || cols % elm_type_get(t)->block_size) {
            fprintf(stderr, "kernel_rate: unknown block type '%s'\n", name);
            return 2;
        }
        const bool packed = packs && k->packs && k->packs(t, 256, cols);
        job small, big[64];
        if (prefill) {
            job_new(&small, k, t, 256, cols, 256, 1, packs);
            small.reps = 3;
            printf("| %s%s | %s | %.1f G multiply-adds/s |\n", name, packed ? " (packed)" : "",
                   k->isa, rate(&small, 1, true));
            job_free(&small);
            continue;
        }
        const int64_t big_rows = (64 << 20) / (int64_t)elm_row_bytes(t, cols) / 16 * 16;
        job_new(&small, k, t, 256, cols, 1, 1, packs);
        small.reps = 500;
        for (int i = 0; i < threads; i++)
            job_new(&big[i], k, t, big_rows, cols, 1, 2 + (unsigned)i, packs);
        for (int i = 0; i < threads; i++) big[i].reps = 4;
        const double l2 = rate(&small, 1, false), one = rate(big, 1, false);
        const double all = rate(big, threads, false);
        printf("| %s%s | %s | %.1f GB/s | %.1f GB/s | %.1f GB/s |\n", name,
               packed ? " (packed)" : "", k->isa, l2, one, all);
        job_free(&small);
        for (int i = 0; i < threads; i++) job_free(&big[i]);
    }
    return 0;
}
