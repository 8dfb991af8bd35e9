/* Every kernel table this CPU has agrees with the scalar oracle, and the oracle with plain float
 * arithmetic:
 * - q8 and q8_K activation blocks are bit-identical across tables (q8_K's with a zero block, a
 *   largest magnitude of both signs, halves of the grid, NaN and infinity);
 * - matmul for every weight type on odd shapes (1 row, rows not a multiple of the SIMD width or
 *   of the 16-row tiles, K not a multiple of 256, 1 column and long odd rows for float types),
 *   for 1..21 tokens (decode kernels and prefill tiles, partial token chunks), on row ranges
 *   not starting at 0, and with the weights in the table's packed layout where it has one;
 * - dot, RMSNorm, softmax, SwiGLU, RoPE and attention on lengths that leave vector tails;
 * - RoPE's angles (rope_cs) against the formula in double, with scaling and frequency divisors.
 * The ggml-rounding table (elm_kernels_ggml: llama.cpp's float order, no oracle's bits) wraps the
 * chosen table: the kernels it keeps are that table's, it packs nothing, and its own agree with
 * the oracle within the same tolerances (GeGLU within its f16 table's step).
 * Tolerances: float sums in another order differ by a few ulps of Σ|w·x|, so products are
 * compared to 2e-6·Σ|w|·|x| (a wrong block, row or offset is off by O(|w|·|x|)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/kquant.h"

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static const elm_type all_types[] = {ELM_TYPE_F32,  ELM_TYPE_F16,  ELM_TYPE_BF16, ELM_TYPE_Q8_0,
                                     ELM_TYPE_Q4_0, ELM_TYPE_Q4_1, ELM_TYPE_Q5_0, ELM_TYPE_Q5_1};

typedef struct {
    elm_weights w;
    float *wf;        /* the weights as decoded floats [rows, cols] */
    float *x;         /* [n_tok, cols] */
    void *xq;         /* n_tok q8 rows */
    float *xt;        /* x by transposed 16-token chunks */
    float *y_ref, *y; /* [n_tok, rows] */
    void *scratch;
} problem;

/* The transposed chunks of p->x, as the forward pass lays them out. */
static void transpose_problem(problem *p, int64_t n_tok) {
    const int64_t cols = p->w.cols;
    for (int64_t t0 = 0; t0 < n_tok; t0 += 16)
        elm_transpose_x16(p->x + t0 * cols, cols, (int)(n_tok - t0 < 16 ? n_tok - t0 : 16), cols,
                          p->xt + t0 * cols);
}

static bool problem_new(problem *p, elm_type type, int64_t cols, int64_t rows, int64_t n_tok,
                        unsigned seed) {
    memset(p, 0, sizeof *p);
    const elm_type_traits *tt = elm_type_get(type);
    const size_t row_bytes = elm_row_bytes(type, cols);
    if (!row_bytes) return false;
    float *src = malloc(sizeof(float) * cols * rows);
    p->wf = malloc(sizeof(float) * cols * rows);
    p->x = malloc(sizeof(float) * cols * n_tok);
    p->xq = aligned_alloc(64, elm_q8_row_bytes(cols) * n_tok + 64);
    p->xt = malloc(sizeof(float) * cols * (size_t)((n_tok + 15) / 16 * 16));
    p->y_ref = malloc(sizeof(float) * rows * n_tok);
    p->y = malloc(sizeof(float) * rows * n_tok);
    p->scratch = aligned_alloc(64, (elm_matmul_scratch_bytes(cols) + 63) / 64 * 64);
    p->w = (elm_weights){.type = type, .data = malloc(row_bytes * rows), .rows = rows, .cols = cols};
    for (int64_t i = 0; i < cols * rows; i++) src[i] = frand(&seed);
    /* one all-zero block and one block of large values exercise d = 0 and wide scales */
    if (cols * rows >= 64) {
        memset(src, 0, sizeof(float) * 32);
        for (int i = 32; i < 64; i++) src[i] *= 300.0f;
    }
    for (int64_t i = 0; i < cols * n_tok; i++) p->x[i] = frand(&seed) * (i % 7 == 0 ? 4.0f : 1.0f);
    tt->from_float(src, (void *)p->w.data, cols * rows);
    tt->to_float(p->w.data, p->wf, cols * rows);
    free(src);
    transpose_problem(p, n_tok);
    if (elm_type_q8_act(type))
        for (int64_t t = 0; t < n_tok; t++)
            elm_scalar_quantize_q8(p->x + t * cols, cols,
                                   (char *)p->xq + t * elm_q8_row_bytes(cols));
    return true;
}

static void problem_free(problem *p) {
    free((void *)p->w.data), free(p->wf), free(p->x), free(p->xq), free(p->xt), free(p->y_ref), free(p->y);
    free(p->scratch);
}

/* Σ|w|·|x| for output (t, r): the scale of the rounding error of any summation order. */
static double magnitude(const problem *p, int64_t t, int64_t r) {
    const int64_t cols = p->w.cols;
    double s = 0;
    for (int64_t c = 0; c < cols; c++) s += fabs(p->wf[r * cols + c] * p->x[t * cols + c]);
    return s;
}

/* split: two row ranges, the first not starting at 0, and the transposed activations given (for
 * float types) as the forward pass gives them, paired too where the table pairs them (pair16),
 * so both ways of getting them are exercised. */
static void run_matmul(const elm_kernels *k, problem *p, int64_t n_tok, float *y, bool split) {
    const int64_t rows = p->w.rows, cols = p->w.cols, chunks = (n_tok + 15) / 16;
    const bool q8 = elm_type_q8_act(p->w.type);
    uint32_t *xp = NULL;
    if (split && k->pair16 && p->w.type == ELM_TYPE_BF16 && cols % 2 == 0 &&
        n_tok >= k->bf16_act_tokens && (xp = malloc(sizeof *xp * 8 * (size_t)(cols * chunks))))
        for (int64_t i = 0; i < chunks; i++) k->pair16(p->xt + i * 16 * cols, cols, xp + i * 8 * cols);
    elm_matmul_args a = {.w = p->w,
                         .x = p->x,
                         .xq = q8 ? p->xq : NULL,
                         .xt = !q8 && split ? p->xt : NULL,
                         .xp = xp,
                         .n_tok = n_tok,
                         .y = y};
    const int64_t cut = split ? rows / 3 + 1 : rows; /* a range not starting at 0 */
    if (cut < rows) k->matmul(&a, cut, rows, p->scratch);
    k->matmul(&a, 0, cut < rows ? cut : rows, p->scratch);
    free(xp);
}

/* The oracle itself: its q8 products equal float products up to the activation rounding,
 * |Σ w·(x - x_q)| <= Σ|w|·d/2 per block. */
static void check_oracle(problem *p, int64_t n_tok) {
    const int64_t cols = p->w.cols, rows = p->w.rows;
    const elm_type_traits *tt = elm_type_get(p->w.type);
    run_matmul(elm_kernels_scalar(), p, n_tok, p->y_ref, false);
    double worst = 0;
    for (int64_t t = 0; t < n_tok; t++)
        for (int64_t r = 0; r < rows; r++) {
            double exact = 0, bound = 1e-5 * magnitude(p, t, r) + 1e-6;
            for (int64_t c = 0; c < cols; c++) {
                exact += (double)p->wf[r * cols + c] * p->x[t * cols + c];
                if (elm_type_q8_act(p->w.type))
                    bound +=
                        fabs(p->wf[r * cols + c]) * elm_q8_at(p->xq, cols, t).d[c / ELM_QK] * 0.5;
            }
            worst = fmax(worst, fabs(p->y_ref[t * rows + r] - exact) / bound);
        }
    CHECK(worst <= 1.0, "scalar %s [%lld x %lld] x %lld tokens: off by %.2f of the bound", tt->name,
          (long long)rows, (long long)cols, (long long)n_tok, worst);
}

/* The table's packed layout of p's weights (kernels/packed.h) against the oracle, with the rows
 * cut where the forward pass cuts them (multiples of 16); from 8 tokens on, where the row-major
 * weights go through the tiles, bit for bit what the table gives for them unpacked (p->y). */
static void compare_packed(const elm_kernels *k, problem *p, int64_t nt) {
    const int64_t rows = p->w.rows;
    const size_t bytes = elm_row_bytes(p->w.type, p->w.cols) * (size_t)rows;
    void *packed = malloc(bytes);
    float *y = malloc(sizeof(float) * (size_t)(rows * nt));
    k->pack(&p->w, packed);
    elm_matmul_args a = {.w = p->w, .xq = p->xq, .n_tok = nt, .y = y};
    a.w.data = packed;
    a.w.packed_by = k;
    const int64_t cut = rows > 16 ? 16 : rows;
    if (cut < rows) k->matmul(&a, cut, rows, p->scratch);
    k->matmul(&a, 0, cut, p->scratch);
    double worst = 0;
    bool same = true;
    for (int64_t t = 0; t < nt; t++)
        for (int64_t r = 0; r < rows; r++) {
            worst = fmax(worst, fabs(y[t * rows + r] - p->y_ref[t * rows + r]) /
                                    (2e-6 * magnitude(p, t, r) + 1e-6));
            same &= y[t * rows + r] == p->y[t * rows + r];
        }
    CHECK(worst <= 1.0, "%s packed %s [%lld x %lld] x %lld tokens: off by %.2f of the tolerance",
          k->isa, elm_type_get(p->w.type)->name, (long long)rows, (long long)p->w.cols,
          (long long)nt, worst);
    CHECK(nt < 8 || same, "%s packed %s x %lld tokens: not the bits of the tiles", k->isa,
          elm_type_get(p->w.type)->name, (long long)nt);
    free(packed), free(y);
}

/* p with its activations rounded to BF16: the oracle of a table's BF16 dot products. */
static bool problem_bf16_act(problem *p, int64_t cols, int64_t rows, int64_t n_tok, unsigned seed) {
    if (!problem_new(p, ELM_TYPE_BF16, cols, rows, n_tok, seed)) return false;
    for (int64_t i = 0; i < cols * n_tok; i++) p->x[i] = elm_bf16_to_f32(elm_f32_to_bf16(p->x[i]));
    transpose_problem(p, n_tok);
    return true;
}

static void compare_matmul(const elm_kernels *k, elm_type type, int64_t cols, int64_t rows,
                           int64_t max_tok) {
    problem p, pr;
    const unsigned seed = (unsigned)(cols * 31 + rows);
    if (!problem_new(&p, type, cols, rows, max_tok, seed)) return;
    /* a table with BF16 dot products rounds the activations from bf16_act_tokens on */
    const bool bf16_act = type == ELM_TYPE_BF16 && k->bf16_act_tokens > 0 && cols % 2 == 0 &&
                          problem_bf16_act(&pr, cols, rows, max_tok, seed);
    const int64_t toks[] = {1, 2, 3, 4, 5, 8, 11, 21};
    for (size_t i = 0; i < sizeof toks / sizeof toks[0] && toks[i] <= max_tok; i++) {
        const int64_t nt = toks[i];
        if (k == elm_kernels_scalar()) {
            check_oracle(&p, nt);
            continue;
        }
        const bool rounded = bf16_act && nt >= k->bf16_act_tokens;
        run_matmul(elm_kernels_scalar(), rounded ? &pr : &p, nt, p.y_ref, false);
        /* rounded: also with the kernel pairing the activations itself (no xt, no xp) */
        for (int way = 0; way < (rounded ? 2 : 1); way++) {
            run_matmul(k, &p, nt, p.y, way == 0);
            double worst = 0;
            for (int64_t t = 0; t < nt; t++)
                for (int64_t r = 0; r < rows; r++)
                    worst = fmax(worst, fabs(p.y[t * rows + r] - p.y_ref[t * rows + r]) /
                                            (2e-6 * magnitude(&p, t, r) + 1e-6));
            CHECK(worst <= 1.0, "%s %s [%lld x %lld] x %lld tokens%s: off by %.2f of the tolerance",
                  k->isa, elm_type_get(type)->name, (long long)rows, (long long)cols,
                  (long long)nt, way ? " (paired by the kernel)" : "", worst);
        }
        if (k->packs && k->packs(type, rows, cols)) compare_packed(k, &p, nt);
    }
    problem_free(&p);
    if (bf16_act) problem_free(&pr);
}

static void check_quantize(const elm_kernels *k) {
    enum { N = 32 * 9 };
    float x[N];
    unsigned seed = 3;
    for (int i = 0; i < N; i++)
        x[i] = frand(&seed) * (float)(1 + i / 32) * (i / 32 == 4 ? 1e-3f : 1.0f);
    for (int i = 64; i < 96; i++) x[i] = 0; /* a zero block */
    x[100] = 127.5f;                        /* a tie on the grid */
    const size_t bytes = elm_q8_row_bytes(N);
    char *a = calloc(1, bytes), *b = calloc(1, bytes);
    elm_scalar_quantize_q8(x, N, a);
    k->quantize_q8(x, N, b);
    CHECK(memcmp(a, b, bytes) == 0, "%s quantize_q8 differs from the oracle", k->isa);
    /* the oracle: d = max|x|/127, q = x/d rounded to nearest even, s = d·Σq, sum = Σq */
    const elm_q8_row q = elm_q8_at(a, N, 0);
    bool ok = true;
    for (int blk = 0; blk < N / 32; blk++) {
        float amax = 0;
        int sum = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[blk * 32 + j]));
        const float d = amax / 127.0f;
        for (int j = 0; j < 32; j++) {
            ok &= q.qs[blk * 32 + j] == (int8_t)lrintf(x[blk * 32 + j] * (d != 0 ? 1.0f / d : 0));
            sum += q.qs[blk * 32 + j];
        }
        ok &= q.d[blk] == d && q.sum[blk] == sum && q.s[blk] == d * (float)sum;
    }
    CHECK(ok, "quantize_q8 rounding and sums");
    free(a), free(b);
}

static void check_quantize_q8_k(const elm_kernels *k) {
    enum { SB = 8, N = 256 * SB };
    float x[N];
    unsigned seed = 5;
    for (int i = 0; i < N; i++) x[i] = frand(&seed) * (float)(1 + i / 256) * (i < 256 ? 1e-3f : 1);
    for (int i = 256; i < 512; i++) x[i] = 0; /* a zero super-block */
    /* the first of the largest magnitudes is negative; in the next block iscale is -1, and the
     * halves round to even; in the last the two largest share a vector (the first maps to -127) */
    x[600] = -9.0f, x[700] = 9.0f;
    x[800] = 127.0f, x[801] = 0.5f, x[802] = -1.5f;
    x[1900] = 200.0f, x[1902] = -200.0f;
    /* the oracle's products with NaN are 0; with an infinity iscale is -0 */
    x[1100] = NAN;
    x[1400] = INFINITY;
    x[1700] = -INFINITY, x[1701] = NAN;
    const size_t bytes = elm_q8k_row_bytes(N);
    char *a = calloc(1, bytes), *b = calloc(1, bytes);
    elm_quantize_q8_k(x, N, a);
    k->quantize_q8_k(x, N, b);
    CHECK(memcmp(a, b, bytes) == 0, "%s quantize_q8_k differs from the oracle", k->isa);
    /* and on 256 columns alone, the block of the two largest magnitudes: the first maps to -127 */
    k->quantize_q8_k(x + 512, 256, b);
    elm_quantize_q8_k(x + 512, 256, a);
    const elm_q8k_row q = elm_q8k_at(a, 256, 0);
    CHECK(memcmp(a, b, elm_q8k_row_bytes(256)) == 0 && q.qs[600 - 512] == -127 &&
              q.qs[700 - 512] == 127,
          "%s quantize_q8_k of one super-block", k->isa);
    free(a), free(b);
}

static void compare_elementwise(const elm_kernels *k, const elm_kernels *ref) {
    enum { N = 203 };
    float x[N], w[N], a[N], b[N];
    unsigned seed = 11;
    for (int i = 0; i < N; i++) x[i] = frand(&seed) * 6, w[i] = frand(&seed);
    for (int n = 1; n <= N; n += 29) {
        CHECK(fabsf(k->dot_f32(x, w, n) - ref->dot_f32(x, w, n)) < 1e-5f * n, "%s dot n %d", k->isa,
              n);
        memcpy(a, x, sizeof a), memcpy(b, x, sizeof b);
        k->softmax(a, n), ref->softmax(b, n);
        float worst = 0;
        for (int i = 0; i < n; i++) worst = fmaxf(worst, fabsf(a[i] - b[i]) / (b[i] + 1e-30f));
        CHECK(worst < 1e-5f, "%s softmax n %d: relative error %g", k->isa, n, worst);
        k->rmsnorm(a, x, w, n, 1e-5f), ref->rmsnorm(b, x, w, n, 1e-5f);
        worst = 0;
        for (int i = 0; i < n; i++) worst = fmaxf(worst, fabsf(a[i] - b[i]));
        CHECK(worst < 1e-5f, "%s rmsnorm n %d: %g", k->isa, n, worst);
        k->swiglu(a, x, w, n), ref->swiglu(b, x, w, n);
        worst = 0;
        for (int i = 0; i < n; i++)
            worst = fmaxf(worst, fabsf(a[i] - b[i]) / (fabsf(b[i]) + 1e-6f));
        CHECK(worst < 1e-5f, "%s swiglu n %d: relative error %g", k->isa, n, worst);
        /* the oracle's 1 + tanh loses what the gate keeps for very negative x: an absolute
         * 1e-6 of the gate beside the relative error (ggml's rounding of GELU: below) */
        if (strstr(k->isa, "ggml")) continue;
        k->geglu(a, x, w, n), ref->geglu(b, x, w, n);
        worst = 0;
        for (int i = 0; i < n; i++)
            worst = fmaxf(worst, fabsf(a[i] - b[i]) / (1e-5f * fabsf(b[i]) + 1e-6f * fabsf(w[i])
                                                       + 1e-30f));
        CHECK(worst <= 1.0f, "%s geglu n %d: off by %.2f of the tolerance", k->isa, n, worst);
    }
    /* RoPE over 3 heads of 20 with 16 rotated dims (the last 4 of each head untouched) */
    float cs[16];
    for (int i = 0; i < 8; i++) cs[2 * i] = cosf(0.3f * i), cs[2 * i + 1] = sinf(0.3f * i);
    memcpy(a, x, sizeof a), memcpy(b, x, sizeof b);
    k->rope(a, 3, 20, 16, cs), ref->rope(b, 3, 20, 16, cs);
    CHECK(memcmp(a + 60, x + 60, sizeof(float) * (N - 60)) == 0, "%s rope wrote past the heads",
          k->isa);
    float worst = 0;
    for (int i = 0; i < 60; i++) worst = fmaxf(worst, fabsf(a[i] - b[i]));
    CHECK(worst < 1e-6f && b[18] == x[18], "%s rope: %g", k->isa, worst);
    /* attention: 1 and 3 heads of a group; head_dim 72 (a block of 64 dimensions and a tail), 128,
     * 256 and 512 (Gemma's, Gemma 4's global heads: the widest the x86 kernel takes), stride 520;
     * 1, 37 and 70 positions (past blocks of 8 and 32); without and with sinks (gpt-oss) */
    enum { KV_STRIDE = 520 };
    static float kv[2][70 * KV_STRIDE], qs[3 * 512], oa[3 * 512], ob[3 * 512], scores[3 * 70];
    for (int i = 0; i < 70 * KV_STRIDE; i++) kv[0][i] = frand(&seed), kv[1][i] = frand(&seed);
    for (int i = 0; i < 3 * 512; i++) qs[i] = frand(&seed);
    static const int head_dims[] = {72, 128, 256, 512};
    static const float sink_logits[3] = {0.7f, -1.3f, 2.5f};
    for (int h = 0; h < 8; h++)
        for (int n_q = 1; n_q <= 3; n_q += 2)
            for (int n_pos = 1; n_pos <= 70; n_pos = n_pos == 1 ? 37 : n_pos == 37 ? 70 : 71) {
                const int hd = head_dims[h % 4];
                const float *sinks = h >= 4 ? sink_logits : NULL;
                k->attention(qs, n_q, kv[0], kv[1], KV_STRIDE, n_pos, 0, hd, 0.12f, sinks, 1,
                             scores, oa);
                ref->attention(qs, n_q, kv[0], kv[1], KV_STRIDE, n_pos, 0, hd, 0.12f, sinks, 1,
                               scores, ob);
                worst = 0;
                for (int i = 0; i < n_q * hd; i++) worst = fmaxf(worst, fabsf(oa[i] - ob[i]));
                CHECK(worst < 1e-5f, "%s attention head_dim %d, %d heads, n_pos %d%s: %g",
                      k->isa, hd, n_q, n_pos, sinks ? ", sinks" : "", worst);
            }
    /* one position and a sink s: the value's share is 1 / (1 + e^(s - q·k·scale)) */
    k->attention(qs, 1, kv[0], kv[1], KV_STRIDE, 1, 0, 72, 0.12f, sink_logits + 2, 1, scores, oa);
    float qk = 0;
    for (int d = 0; d < 72; d++) qk += qs[d] * kv[0][d];
    const float share = 1.0f / (1.0f + expf(sink_logits[2] - qk * 0.12f));
    worst = 0;
    for (int d = 0; d < 72; d++) worst = fmaxf(worst, fabsf(oa[d] - kv[1][d] * share));
    CHECK(worst < 1e-5f, "%s attention with a sink over one position: %g off", k->isa, worst);
}

static void check_transpose(const elm_kernels *k) {
    enum { COLS = 37 };
    float x[11 * COLS], a[16 * COLS], b[16 * COLS];
    unsigned seed = 5;
    for (int i = 0; i < 11 * COLS; i++) x[i] = frand(&seed);
    elm_transpose_x16(x, COLS, 11, COLS, a);
    k->transpose16(x, COLS, 11, COLS, b);
    CHECK(memcmp(a, b, sizeof a) == 0 && a[16 * 5 + 3] == x[3 * COLS + 5] && a[16 * 5 + 12] == 0.0f,
          "%s transpose16", k->isa);
}

/* The cos and sin of k's angles for positions 0..200 against pos · base^(-2i/d) · scale / ff[i]
 * in double: each running float product adds half an ulp (ggml's angles), so the angle is off
 * by at most (i + 2) · 2^-24 of itself; scaled, both times mscale (LongRoPE's attention factor). */
static void check_rope_cs(const elm_kernels *k) {
    enum { D = 24, NPOS = 201 };
    static int32_t pos[NPOS];
    static float cs[NPOS * D];
    float ff[D / 2], inv_freq[D / 2];
    for (int i = 0; i < D / 2; i++) ff[i] = 1.0f + 0.37f * (float)i;
    for (int32_t t = 0; t < NPOS; t++) pos[t] = t;
    /* YaRN ×32 from 512 positions (betas 32, 1): the correction dimensions of 32 and 1 turns,
     * 24·ln(512 / (2π·b)) / (2·ln 10000) = 1.22 and 5.73, floored and ceiled to pairs 1 and 6;
     * pairs below keep their angle, pairs from 6 on are scaled, those between blended by
     * ggml's ramp; cos and sin × 1 + 0.1·ln 32 */
    const double yarn_lo = 1, yarn_hi = 6, yarn_mscale = 1 + 0.1 * log(32.0);
    for (int scaled = 0; scaled < 3; scaled++) {
        elm_rope_freqs r;
        const bool yarn = scaled == 2;
        const float scale = yarn ? 1.0f / 32 : scaled ? 0.25f : 1.0f;
        elm_rope_freqs_init(&r, D, 10000.0f, scale, scaled == 1 ? ff : NULL, inv_freq);
        const double mscale = yarn ? yarn_mscale : scaled ? 1.1547005 : 1.0;
        CHECK(r.mscale == 1.0f, "%s: elm_rope_freqs_init's mscale %g", k->isa, r.mscale);
        r.mscale = yarn ? 1.0f : (float)mscale;
        if (yarn) elm_rope_freqs_yarn(&r, 512, 32.0f, 1.0f, inv_freq);
        k->rope_cs(&r, pos, NPOS, cs);
        double worst = 0;
        for (int32_t t = 0; t < NPOS; t++)
            for (int i = 0; i < D / 2; i++) {
                const double ramp = 1 - fmin(1, fmax(0, (i - yarn_lo) / (yarn_hi - yarn_lo)));
                const double angle =
                    t * pow(10000.0, -2.0 * i / D) *
                    (yarn ? scale * (1 - ramp) + ramp : scale / (scaled ? ff[i] : 1.0));
                const double tol = ((i + 2) * ldexp(fabs(angle), -24) + 1e-6) * mscale;
                const double c = cos(angle) * (float)mscale, sn = sin(angle) * (float)mscale;
                worst = fmax(worst, fmax(fabs(cs[t * D + 2 * i] - c),
                                         fabs(cs[t * D + 2 * i + 1] - sn)) / tol);
            }
        CHECK(worst <= 1.0, "%s rope_cs%s: off by %.2f of the tolerance", k->isa,
              yarn ? " (YaRN)" : scaled ? " (scaled, divisors, mscale)" : "", worst);
    }
}

static void check_table(const elm_kernels *k) {
    check_quantize(k);
    check_quantize_q8_k(k);
    check_transpose(k);
    check_rope_cs(k);
    compare_elementwise(k, elm_kernels_scalar());
    /* and multiples of 16 rows, which a table may pack */
    const int64_t shapes[][2] = {{32, 1},  {96, 37}, {288, 17}, {64, 100},
                                 {1056, 21}, {96, 48}, {2048, 16}};
    for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            compare_matmul(k, all_types[ti], shapes[s][0], shapes[s][1], 21);
    /* float types take any column count; past 4096 columns decode takes rows in fours */
    const int64_t odd_cols[] = {1, 7, 33, 172, 4109};
    for (int ti = 0; ti < 3; ti++)
        for (size_t s = 0; s < sizeof odd_cols / sizeof odd_cols[0]; s++)
            compare_matmul(k, all_types[ti], odd_cols[s], 19, 11);
}

/* The ggml-rounding table around the chosen one. */
static void check_ggml_table(const elm_kernels *const *tables, size_t n_tables) {
    const elm_kernels *g = elm_kernels_ggml(), *best = elm_kernels_best();
    CHECK(g == elm_kernels_ggml() && g != best, "one ggml-rounding table");
    CHECK(g->dot_f32 == best->dot_f32 && g->transpose16 == best->transpose16 &&
              g->softmax == best->softmax && g->pair16 == best->pair16 &&
              g->bf16_act_tokens == best->bf16_act_tokens,
          "the ggml-rounding table keeps %s's other kernels", best->isa);
    CHECK(!g->packs && !g->pack && g->round_float_act && g->fused_conv,
          "ggml-rounding: packs, round_float_act, fused_conv");
    for (size_t i = 0; i < n_tables; i++)
        CHECK(!tables[i] || (!tables[i]->round_float_act && !tables[i]->fused_conv),
              "%s rounds float inputs or fuses the convolution", tables[i]->isa);
    check_rope_cs(g);
    compare_elementwise(g, elm_kernels_scalar());
    /* GELU from ggml's table of f16 values, of the gate rounded to f16: two f16 steps (2^-11
     * relative) of the gate or of GELU, whose slope is at most 1.13 */
    enum { N = 301 };
    float x[N], u[N], a[N], b[N];
    for (int i = 0; i < N; i++) x[i] = -12.0f + 0.08f * (float)i, u[i] = 1.0f - 0.004f * (float)i;
    g->geglu(a, x, u, N);
    elm_kernels_scalar()->geglu(b, x, u, N);
    double worst = 0;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / (ldexp(fabs(x[i]) + 1.0, -9) * fabs(u[i]) + 1e-6));
    CHECK(worst <= 1.0, "ggml-rounding geglu: off by %.2f of the tolerance", worst);
    /* F16 products in llama.cpp's order (ggml_vec_dot_f16, its last values past a multiple of
     * 64 added in double; tinyBLAS from 2 tokens on rows of 4): the oracle's up to the order */
    compare_matmul(g, ELM_TYPE_F16, 4109, 19, 5);
    compare_matmul(g, ELM_TYPE_F16, 256, 32, 21);
    /* a table's matmul on the weights it has no llama.cpp order for: the wrapped one's bits */
    problem p;
    if (problem_new(&p, ELM_TYPE_Q4_0, 256, 32, 5, 7)) {
        run_matmul(best, &p, 5, p.y_ref, false);
        run_matmul(g, &p, 5, p.y, false);
        CHECK(!memcmp(p.y, p.y_ref, sizeof(float) * 5 * 32), "ggml-rounding q4_0: not %s's bits",
              best->isa);
        problem_free(&p);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const elm_kernels *ref = elm_kernels_scalar();
    float a[] = {1, 2, 3}, b[] = {4, 5, 6};
    CHECK(ref->dot_f32(a, b, 3) == 32.0f, "scalar dot");
    float g[] = {0.0f, 1.0f}, u[] = {2.0f, 3.0f}, o[2];
    ref->swiglu(o, g, u, 2);
    CHECK(o[0] == 0.0f && fabsf(o[1] - 3.0f / (1.0f + expf(-1.0f))) < 1e-6f, "swiglu");
    const elm_kernels *tables[] = {ref, elm_kernels_avx2(), elm_kernels_avx512(),
                                   elm_kernels_neon()};
    const char *names[] = {"scalar", "avx2", "avx512", "neon"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (!tables[i]) {
            printf("%s: not available on this CPU or build\n", names[i]);
            continue;
        }
        printf("%s: checking\n", names[i]);
        check_table(tables[i]);
    }
    check_ggml_table(tables, sizeof tables / sizeof tables[0]);
    char features[256];
    elm_cpu_features(features, sizeof features);
    printf("cpu features: %s; chosen: %s\n", features, elm_kernels_best()->isa);
    return check_done();
}
