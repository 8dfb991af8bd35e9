/* The k-quant/i-quant products (kernels/kquant.h) on every kernel table this CPU has:
 * - q8_K activations: |x - d·q| <= |d|/2, the value of largest magnitude maps to -127, the
 *   16-value sums match, an all-zero block gives d = 0;
 * - the scalar oracle equals Σ w·x_q in double precision, with w from the type traits' decoder
 *   and x_q the dequantized activations (so the integer dot products use the library's layouts);
 * - each SIMD table's unpacking is bit-identical to the oracle's and its matmul agrees with the
 *   oracle to float rounding (2e-6·Σ|w|·|x|), for 1..70 tokens (more than one token chunk) on row
 *   ranges not starting at 0, with the activations quantized by the product or (1, 5 and 70
 *   tokens) given as q8_K rows, as the forward pass gives them;
 * - --ggml-rounding's products (kernels/ggml_exact.h, llama.cpp's float order) agree with the
 *   oracle to float rounding too, repacked shapes (rows a multiple of 8) and not, with all tokens
 *   in llama.cpp's product or only the last (its last layer).
 * Weights are random bytes (every bit pattern is a valid block) with sane f16 scales (MXFP4: sane
 * E8M0 scale bytes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/ggml_exact.h"
#include "kernels/kquant.h"

static unsigned rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static float frand(unsigned *s) { return (rnd(s) & 0xffff) / 32768.0f - 1.0f; }

static const elm_type types[] = {ELM_TYPE_Q2_K,  ELM_TYPE_Q3_K,   ELM_TYPE_Q4_K,
                                 ELM_TYPE_Q5_K,  ELM_TYPE_Q6_K,   ELM_TYPE_IQ4_XS,
                                 ELM_TYPE_IQ4_NL, ELM_TYPE_MXFP4};

/* Byte offsets of each type's f16 scales in a block (-1: none). */
static void scale_fields(elm_type t, int off[2]) {
    off[1] = -1;
    switch (t) {
    case ELM_TYPE_Q2_K: off[0] = 80, off[1] = 82; break;
    case ELM_TYPE_Q3_K: off[0] = 108; break;
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: off[0] = 0, off[1] = 2; break;
    case ELM_TYPE_Q6_K: off[0] = 208; break;
    default: off[0] = 0; break;
    }
}

static void random_blocks(elm_type t, uint8_t *p, size_t n_blocks, unsigned *seed) {
    const size_t bb = elm_type_get(t)->block_bytes;
    int off[2];
    scale_fields(t, off);
    for (size_t i = 0; i < n_blocks * bb; i++) p[i] = (uint8_t)rnd(seed);
    /* MXFP4's E8M0 scale byte: 2^-9 .. 2^-1 (half the scale), as in weights */
    for (size_t b = 0; b < n_blocks && t == ELM_TYPE_MXFP4; b++)
        p[b * bb] = (uint8_t)(119 + rnd(seed) % 9);
    if (t == ELM_TYPE_MXFP4) return;
    for (size_t b = 0; b < n_blocks; b++)
        for (int k = 0; k < 2; k++) {
            if (off[k] < 0) continue;
            const uint16_t h = elm_f32_to_f16(((rnd(seed) & 0xff) + 1) * 1e-4f);
            memcpy(p + b * bb + off[k], &h, 2);
        }
}

static void check_q8_k(void) {
    enum { N = 3 * ELM_QK_K };
    unsigned seed = 7;
    float x[N];
    for (int i = 0; i < N; i++) x[i] = frand(&seed) * (i % 5 ? 1.0f : 9.0f);
    for (int i = ELM_QK_K; i < 2 * ELM_QK_K; i++) x[i] = 0;
    x[2 * ELM_QK_K + 3] = 40.0f; /* a positive maximum: maps to -127 */
    static uint8_t buf[4096] __attribute__((aligned(64)));
    elm_quantize_q8_k(x, N, buf);
    const elm_q8k_row r = elm_q8k_at(buf, N, 0);
    CHECK(r.d[1] == 0, "q8_K: an all-zero block has d = 0");
    CHECK(r.qs[2 * ELM_QK_K + 3] == -127, "q8_K: the largest value maps to -127 (%d)",
          r.qs[2 * ELM_QK_K + 3]);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        const float d = r.d[i / ELM_QK_K];
        bad += fabsf(x[i] - d * r.qs[i]) > fabsf(d) * 0.5001f + 1e-12f;
    }
    for (int g = 0; g < N / 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += r.qs[16 * g + i];
        bad += s != r.bsum[g];
    }
    CHECK(!bad, "q8_K: %d values off by more than d/2 or wrong group sums", bad);
}

typedef struct {
    elm_weights w;
    float *wf, *x, *xdq, *y_ref, *y;
    void *xq, *scratch;
} problem;

static void problem_new(problem *p, elm_type t, int64_t cols, int64_t rows, int64_t n_tok) {
    unsigned seed = (unsigned)(t * 1000 + cols + rows);
    const elm_type_traits *tt = elm_type_get(t);
    const size_t row_bytes = elm_row_bytes(t, cols);
    p->w = (elm_weights){t, malloc(row_bytes * rows), rows, cols, NULL};
    random_blocks(t, (uint8_t *)p->w.data, row_bytes * rows / tt->block_bytes, &seed);
    p->wf = malloc(sizeof(float) * cols * rows);
    tt->to_float(p->w.data, p->wf, cols * rows);
    p->x = malloc(sizeof(float) * cols * n_tok);
    p->xdq = malloc(sizeof(float) * cols * n_tok);
    for (int64_t i = 0; i < cols * n_tok; i++) p->x[i] = frand(&seed) * (i % 7 ? 1.0f : 4.0f);
    /* a zero block, in the second token's row: the first stays whole for the one-token checks
     * (the decode paths), which a zero first row left unchecked where cols <= 256 */
    for (int64_t i = 0; i < (cols < 256 ? cols : 256) && n_tok > 1; i++) p->x[cols + i] = 0;
    p->xq = aligned_alloc(64, elm_q8_row_bytes(cols) * n_tok + 64);
    p->y_ref = malloc(sizeof(float) * rows * n_tok);
    p->y = malloc(sizeof(float) * rows * n_tok);
    p->scratch = aligned_alloc(64, (elm_matmul_scratch_bytes(cols) + 63) / 64 * 64);
    /* the activations the products see, dequantized */
    void *row = aligned_alloc(64, elm_q8k_row_bytes(cols) + elm_q8_row_bytes(cols));
    for (int64_t t0 = 0; t0 < n_tok; t0++) {
        const float *xt = p->x + t0 * cols;
        float *o = p->xdq + t0 * cols;
        if (elm_type_q8_act(t)) {
            void *q = (char *)p->xq + t0 * elm_q8_row_bytes(cols);
            elm_scalar_quantize_q8(xt, cols, q);
            const elm_q8_row r = elm_q8_at(q, cols, 0);
            for (int64_t c = 0; c < cols; c++) o[c] = r.d[c / ELM_QK] * r.qs[c];
        } else { /* q8_K rows in xq, for the products given them (run) */
            elm_quantize_q8_k(xt, cols, row);
            memcpy((char *)p->xq + t0 * elm_q8k_row_bytes(cols), row, elm_q8k_row_bytes(cols));
            const elm_q8k_row r = elm_q8k_at(row, cols, 0);
            for (int64_t c = 0; c < cols; c++) o[c] = r.d[c / ELM_QK_K] * r.qs[c];
        }
    }
    free(row);
}

static void problem_free(problem *p) {
    free((void *)p->w.data), free(p->wf), free(p->x), free(p->xdq), free(p->xq);
    free(p->y_ref), free(p->y), free(p->scratch);
}

/* The 256-weight types quantize x themselves, or with given_q8k take xq's q8_K rows. */
static void run(const elm_kernels *k, problem *p, int64_t n_tok, float *y, bool given_q8k) {
    const bool xq = elm_type_q8_act(p->w.type) || given_q8k;
    const elm_matmul_args a = {.w = p->w, .x = p->x, .xq = xq ? p->xq : NULL, .n_tok = n_tok, .y = y};
    const int64_t cut = p->w.rows / 3 + 1;
    if (cut < p->w.rows) k->matmul(&a, cut, p->w.rows, p->scratch);
    k->matmul(&a, 0, cut < p->w.rows ? cut : p->w.rows, p->scratch);
}

static double magnitude(const problem *p, int64_t t, int64_t r) {
    double s = 0;
    for (int64_t c = 0; c < p->w.cols; c++)
        s += fabs(p->wf[r * p->w.cols + c] * p->x[t * p->w.cols + c]);
    return s;
}

/* The table's packed layout of p's weights (kernels/packed.h) against the oracle's y_ref, with
 * the rows cut where the forward pass cuts them (multiples of 16), the activations quantized by
 * the product or given. */
static void check_packed(const elm_kernels *k, problem *p, int64_t nt, bool given_q8k) {
    const int64_t rows = p->w.rows;
    void *packed = malloc(elm_row_bytes(p->w.type, p->w.cols) * (size_t)rows);
    k->pack(&p->w, packed);
    /* IQ4_NL and MXFP4 products always take the caller's q8 rows */
    const bool xq = given_q8k || elm_type_q8_act(p->w.type);
    elm_matmul_args a = {.w = p->w, .x = p->x, .xq = xq ? p->xq : NULL, .n_tok = nt, .y = p->y};
    a.w.data = packed;
    a.w.packed_by = k;
    const int64_t cut = rows > 16 ? 16 : rows;
    if (cut < rows) k->matmul(&a, cut, rows, p->scratch);
    k->matmul(&a, 0, cut, p->scratch);
    double worst = 0;
    for (int64_t tk = 0; tk < nt; tk++)
        for (int64_t r = 0; r < rows; r++)
            worst = fmax(worst, fabs(p->y[tk * rows + r] - p->y_ref[tk * rows + r]) /
                                    (2e-6 * magnitude(p, tk, r) + 1e-6));
    CHECK(worst <= 1.0, "%s packed %s [%lld x %lld] x %lld tokens: off by %.2f of the tolerance",
          k->isa, elm_type_get(p->w.type)->name, (long long)rows, (long long)p->w.cols,
          (long long)nt, worst);
    free(packed);
}

static void check_products(const elm_kernels *k, elm_type t, int64_t cols, int64_t rows) {
    const int64_t toks[] = {1, 2, 5, 21, 70};
    problem p;
    problem_new(&p, t, cols, rows, 70);
    const char *name = elm_type_get(t)->name;
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        const int64_t nt = toks[i];
        run(elm_kernels_scalar(), &p, nt, p.y_ref, false);
        double worst = 0;
        if (k == elm_kernels_scalar()) {
            for (int64_t tk = 0; tk < nt; tk++)
                for (int64_t r = 0; r < rows; r++) {
                    double exact = 0;
                    for (int64_t c = 0; c < cols; c++)
                        exact += (double)p.wf[r * cols + c] * p.xdq[tk * cols + c];
                    worst = fmax(worst, fabs(p.y_ref[tk * rows + r] - exact) /
                                            (1e-5 * magnitude(&p, tk, r) + 1e-6));
                }
        } else {
            run(k, &p, nt, p.y, i % 2 == 0);
            for (int64_t tk = 0; tk < nt; tk++)
                for (int64_t r = 0; r < rows; r++)
                    worst = fmax(worst, fabs(p.y[tk * rows + r] - p.y_ref[tk * rows + r]) /
                                            (2e-6 * magnitude(&p, tk, r) + 1e-6));
        }
        CHECK(worst <= 1.0, "%s %s [%lld x %lld] x %lld tokens: off by %.2f of the tolerance",
              k->isa, name, (long long)rows, (long long)cols, (long long)nt, worst);
        if (k->packs && k->packs(t, rows, cols)) check_packed(k, &p, nt, i % 2 == 1);
    }
    problem_free(&p);
}

/* elm_ggml_matmul against the oracle (same integers, another float order), given the q8 / q8_K
 * rows, for all tokens in llama.cpp's product (first 0) and only the last (first nt - 1). */
static void check_ggml_products(elm_type t, int64_t cols, int64_t rows) {
    const int64_t toks[] = {1, 3, 5, 21};
    problem p;
    problem_new(&p, t, cols, rows, 21);
    const elm_weights *w = &p.w;
    if (!elm_ggml_matmul_has(w)) {
        /* only the types llama.cpp repacks lack their unrepacked order (ggml_exact.h) */
        const bool repackable = t == ELM_TYPE_IQ4_NL || t == ELM_TYPE_MXFP4 ||
                                t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q2_K;
        CHECK(repackable && rows % 8, "ggml %s [%lld x %lld]: no llama.cpp order",
              elm_type_get(t)->name, (long long)rows, (long long)cols);
        problem_free(&p);
        return;
    }
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++)
        for (int last = 0; last < 2; last++) {
            const int64_t nt = toks[i];
            run(elm_kernels_scalar(), &p, nt, p.y_ref, true);
            const elm_matmul_args a = {.w = p.w, .x = p.x, .xq = p.xq, .n_tok = nt, .y = p.y,
                                       .out_first = last ? nt - 1 : 0};
            elm_ggml_matmul(&a, rows / 2, rows, p.scratch);
            elm_ggml_matmul(&a, 0, rows / 2, p.scratch);
            double worst = 0;
            for (int64_t tk = 0; tk < nt; tk++)
                for (int64_t r = 0; r < rows; r++)
                    worst = fmax(worst, fabs(p.y[tk * rows + r] - p.y_ref[tk * rows + r]) /
                                            (2e-6 * magnitude(&p, tk, r) + 1e-6));
            CHECK(worst <= 1.0, "ggml %s [%lld x %lld] x %lld tokens: off by %.2f of the tolerance",
                  elm_type_get(t)->name, (long long)rows, (long long)cols, (long long)nt, worst);
        }
    problem_free(&p);
}

/* A SIMD table's unpacking against the oracle's, byte for byte. */
static void check_unpack(const char *isa, const elm_kq_kernels *kq) {
    unsigned seed = 99;
    enum { N = 5 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const elm_type t = types[i];
        const elm_type_traits *tt = elm_type_get(t);
        static uint8_t src[N * 210];
        if (elm_type_q8_act(t)) {
            random_blocks(t, src, 8 * N, &seed);
            int8_t q0[8 * N * ELM_QK], q1[8 * N * ELM_QK];
            float d0[8 * N], d1[8 * N];
            elm_kq_scalar.unpack_grid32(t, src, 8 * N, q0, d0);
            kq->unpack_grid32(t, src, 8 * N, q1, d1);
            CHECK(!memcmp(q0, q1, sizeof q0) && !memcmp(d0, d1, sizeof d0), "%s %s unpack", isa,
                  tt->name);
            continue;
        }
        random_blocks(t, src, N, &seed);
        static elm_kq_block b0[N], b1[N];
        memset(b0, 0, sizeof b0), memset(b1, 0, sizeof b1);
        elm_kq_scalar.unpack(t, src, N, b0);
        kq->unpack(t, src, N, b1);
        CHECK(!memcmp(b0, b1, sizeof b0), "%s %s unpack differs from the oracle's", isa, tt->name);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    check_q8_k();
    const elm_kernels *tables[] = {elm_kernels_scalar(), elm_kernels_avx2(), elm_kernels_avx512(),
                                   elm_kernels_neon()};
    const char *names[] = {"scalar", "avx2", "avx512", "neon"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (!tables[i]) {
            printf("%s: not available on this CPU or build\n", names[i]);
            continue;
        }
        printf("%s: checking\n", names[i]);
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const int64_t unit = elm_type_get(types[ti])->block_size;
            /* 14 units: a 2-block tail after whole 4-block steps; the last two: whole tiles of
             * 16 rows, which a table may pack */
            const int64_t shapes[][2] = {{unit, 1},  {3 * unit, 17}, {9 * unit, 5},
                                         {14 * unit, 9}, {unit, 16}, {3 * unit, 48}};
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                check_products(tables[i], types[ti], shapes[s][0], shapes[s][1]);
        }
    }
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const int64_t unit = elm_type_get(types[ti])->block_size;
        check_ggml_products(types[ti], 3 * unit, 16);
        check_ggml_products(types[ti], unit, 5);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (elm_kernels_avx2()) check_unpack("avx2", &elm_kq_avx2);
    if (elm_kernels_avx512()) check_unpack("avx512", &elm_kq_avx512);
#endif
#if defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
    if (elm_kernels_neon()) check_unpack("neon", &elm_kq_neon);
#endif
    return check_done();
}
