/* Products with the sub-4-bit i-quants and ternary types (kernels/iquant.h) on llama-quantize's
 * own blocks: tests/data/iquant/TYPE.gguf, cut by scripts/iquant_reference.sh from the wide256
 * reference files (blk.0.attn_k, 256 columns; the first 128 rows of blk.1.ffn_down, 768 columns).
 * For each tensor, at 1 token (decode: the SIMD tables' row kernels straight from the file's
 * blocks), 2 and 3 tokens (their two-row tiles of those blocks), 7 and 20 tokens (prefill: the
 * 16-row tiles from 4 tokens on), the scalar table's matmul and the ggml-rounding one's (which sums the IQ2
 * and IQ3 types in llama.cpp's AVX2 lanes) must equal the dot products of the dequantized
 * weights (the types table's to_float, which tests/cli_iquant.sh checks bit for bit) with the
 * q8_K-rounded activations, up to float rounding; the ISA tables this CPU has (SIMD unpacking,
 * dot products and tiles: the same integers, summed in another float order) must agree with the
 * scalar one to 2e-6 of the products' magnitude. Each SIMD table's unpacking must give the
 * oracle's canonical blocks byte for byte, on these blocks and on random bytes (every index,
 * sign and scale bit pattern); the products too are checked on random blocks (their f16 scales
 * kept finite), which reach the grid indices and sign codes the encoder never writes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codecs/iquant_codec.h"
#include "formats/gguf_parse.h"
#include "kernels/kquant.h"

static const char *const files[] = {"iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s",
                                    "iq1_s",   "iq1_m",  "tq1_0", "tq2_0"};

static const int tokens[] = {1, 2, 3, 7, 20};

/* The SIMD tables' kquant pieces built for this machine and present on this CPU. */
static int simd_pieces(const elm_kq_kernels **out, const char **isa) {
    int n = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (elm_kernels_avx2()) out[n] = &elm_kq_avx2, isa[n++] = "avx2";
    if (elm_kernels_avx512()) out[n] = &elm_kq_avx512, isa[n++] = "avx512";
#endif
#if defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
    if (elm_kernels_neon()) out[n] = &elm_kq_neon, isa[n++] = "neon";
#endif
    (void)out, (void)isa;
    return n;
}

/* Each SIMD table's unpacking of n blocks at src against the oracle's, byte for byte. */
static void check_unpack_blocks(elm_type t, const uint8_t *src, int64_t n, const char *what) {
    const elm_kq_kernels *k[3];
    const char *isa[3];
    const int nk = simd_pieces(k, isa);
    elm_kq_block *b0 = aligned_alloc(32, sizeof *b0 * (size_t)n);
    elm_kq_block *b1 = aligned_alloc(32, sizeof *b1 * (size_t)n);
    memset(b0, 0, sizeof *b0 * (size_t)n);
    elm_kq_scalar.unpack(t, src, n, b0);
    for (int i = 0; i < nk; i++) {
        memset(b1, 0x5a, sizeof *b1 * (size_t)n);
        k[i]->unpack(t, src, n, b1);
        int64_t bad = -1;
        for (int64_t j = 0; j < n && bad < 0; j++)
            if (memcmp(b0[j].q, b1[j].q, sizeof b0[j].q) ||
                memcmp(b0[j].sc, b1[j].sc, sizeof b0[j].sc) ||
                memcmp(b0[j].m, b1[j].m, sizeof b0[j].m) || memcmp(&b0[j].d, &b1[j].d, 4) ||
                memcmp(&b0[j].dmin, &b1[j].dmin, 4))
                bad = j;
        CHECK(bad < 0, "%s %s: the %s unpacking of block %lld differs from the oracle's",
              elm_type_get(t)->name, what, isa[i], (long long)bad);
    }
    free(b0), free(b1);
}

/* n random blocks of type t; seed: the random sequence's. */
static uint8_t *random_blocks(elm_type t, int64_t n, unsigned seed) {
    const size_t bb = elm_type_get(t)->block_bytes;
    uint8_t *r = malloc(bb * (size_t)n);
    for (size_t i = 0; i < bb * (size_t)n; i++) {
        seed = seed * 1103515245u + 12345u;
        r[i] = (uint8_t)(seed >> 16);
    }
    return r;
}

/* Clears bit 14 of each block's f16 scale (its exponent's top bit), so that the scale is finite
 * (|d| < 2) and the products comparable: IQ1_M keeps that bit at bit 14 of its u16 at byte 54
 * (the top nibbles of the four u16 at 48..55 form its scale). */
static void tame_scales(elm_type t, uint8_t *p, int64_t n) {
    const size_t bb = elm_type_get(t)->block_bytes;
    const size_t at = t == ELM_TYPE_IQ1_M   ? 55
                      : t == ELM_TYPE_TQ1_0 ? 53
                      : t == ELM_TYPE_TQ2_0 ? 65
                                            : 1; /* the high byte of the f16 at 0, 52 or 64 */
    for (int64_t b = 0; b < n; b++) p[bb * (size_t)b + at] &= (uint8_t)~0x40;
}

/* The tensor's own blocks, then as many random ones. */
static void check_unpack(const elm_gguf_tensor *t) {
    const int64_t n = t->ne[0] * t->ne[1] / ELM_QK_K;
    uint8_t *r = random_blocks(t->type, n, 12345u + (unsigned)t->type);
    check_unpack_blocks(t->type, t->data, n, t->name);
    check_unpack_blocks(t->type, r, n, "random blocks");
    free(r);
}

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* The tables to compare: the scalar oracle first, the ggml-rounding one last. */
static int tables(const elm_kernels **out) {
    const elm_kernels *all[] = {elm_kernels_scalar(), elm_kernels_avx2(), elm_kernels_avx512(),
                                elm_kernels_neon(),   elm_kernels_best(), elm_kernels_ggml()};
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) out[n++] = all[i];
    return n;
}

static void check_tensor(const char *path, const elm_gguf_tensor *t, int n_tok) {
    const int64_t rows = t->ne[1], cols = t->ne[0];
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    float *x = malloc(sizeof(float) * (size_t)(n_tok * cols));
    float *xr = malloc(sizeof(float) * (size_t)(n_tok * cols));
    float *y0 = malloc(sizeof(float) * (size_t)(n_tok * rows));
    float *y = malloc(sizeof(float) * (size_t)(n_tok * rows));
    void *row = aligned_alloc(64, elm_q8k_row_bytes(cols));
    void *scratch = aligned_alloc(64, (elm_matmul_scratch_bytes(cols) + 63) / 64 * 64);
    unsigned seed = 7u + (unsigned)n_tok;
    elm_type_get(t->type)->to_float(t->data, w, rows * cols);
    for (int64_t i = 0; i < n_tok * cols; i++) x[i] = frand(&seed) * (i % 7 ? 1.0f : 5.0f);
    /* the activations as the products see them: q8_K rows, dequantized */
    for (int tk = 0; tk < n_tok; tk++) {
        elm_quantize_q8_k(x + tk * cols, cols, row);
        const elm_q8k_row r = elm_q8k_at(row, cols, 0);
        for (int64_t c = 0; c < cols; c++) xr[tk * cols + c] = r.d[c / ELM_QK_K] * r.qs[c];
    }
    const elm_kernels *k[8];
    const int nk = tables(k);
    const elm_matmul_args a = {.w = {.type = t->type, .data = t->data, .rows = rows, .cols = cols},
                               .x = x, .n_tok = n_tok};
    for (int i = 0; i < nk; i++) {
        elm_matmul_args ai = a;
        ai.y = i ? y : y0;
        /* cut where a thread split would */
        k[i]->matmul(&ai, 48, rows, scratch);
        k[i]->matmul(&ai, 0, 48, scratch);
        double worst = 0, largest = 0;
        if (i && i < nk - 1) {
            for (int tk = 0; tk < n_tok; tk++)
                for (int64_t r = 0; r < rows; r++) {
                    double mag = 0;
                    for (int64_t c = 0; c < cols; c++)
                        mag += fabs((double)w[r * cols + c] * xr[tk * cols + c]);
                    worst = fmax(worst, fabs(y[tk * rows + r] - y0[tk * rows + r]) /
                                            (2e-6 * mag + 1e-12));
                }
            CHECK(worst <= 1.0, "%s %s, %d tokens: the %s table off the scalar one by %.2f of the "
                  "tolerance", path, t->name, n_tok, k[i]->isa, worst);
            continue;
        }
        for (int tk = 0; tk < n_tok; tk++)
            for (int64_t r = 0; r < rows; r++) {
                double ref = 0, mag = 0;
                for (int64_t c = 0; c < cols; c++) {
                    ref += (double)w[r * cols + c] * xr[tk * cols + c];
                    mag += fabs((double)w[r * cols + c] * xr[tk * cols + c]);
                }
                worst = fmax(worst, fabs(ai.y[tk * rows + r] - ref) / (4e-7 * mag + 1e-12));
                largest = fmax(largest, fabs(ref));
            }
        CHECK(worst <= 1.0 && largest > 0,
              "%s %s [%lld x %lld], %d tokens: the %s product off by %.2f of the tolerance", path,
              t->name, (long long)rows, (long long)cols, n_tok, k[i]->isa, worst);
    }
    free(w), free(x), free(xr), free(y0), free(y), free(row), free(scratch);
}

/* The products of a random 64 × 512 matrix of type t (check_tensor's tests). */
static void check_random(elm_type t) {
    elm_gguf_tensor r = {.n_dims = 2, .ne = {512, 64, 1, 1}, .type = t};
    snprintf(r.name, sizeof r.name, "random %s blocks", elm_type_get(t)->name);
    uint8_t *blocks = random_blocks(t, 64 * 2, 777u + (unsigned)t);
    tame_scales(t, blocks, 64 * 2);
    r.data = blocks;
    for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++)
        check_tensor("random blocks", &r, tokens[k]);
    free(blocks);
}

static int check_file(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/iquant/%s.gguf", name);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    rewind(f);
    uint8_t *buf = malloc((size_t)size);
    const bool read = fread(buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    elm_gguf g = {0};
    elm_error err = {0};
    int n = 0;
    if (read && elm_gguf_open(&g, path, buf, (size_t)size, &err) == ELM_OK &&
        elm_gguf_read_tensors(&g, ELM_GGUF_NAME_MAX, &err) == ELM_OK) {
        for (uint64_t i = 0; i < g.n_tensors; i++) {
            const elm_gguf_tensor *t = &g.tensors[i];
            if (!elm_type_iquant(t->type) || strcmp(elm_type_get(t->type)->name, name)) continue;
            for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++)
                check_tensor(path, t, tokens[k]);
            check_unpack(t);
            if (!n) check_random(t->type);
            n++;
        }
    } else
        CHECK(false, "%s: %s", path, read ? err.msg : "short read");
    elm_gguf_close(&g);
    free(buf);
    return n;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        CHECK(check_file(files[i]) == 2, "%s: not the two tensors of its type", files[i]);
    return check_done();
}
