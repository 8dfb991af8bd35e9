/* Products with the sub-4-bit i-quants and ternary types (kernels/iquant.h) on llama-quantize's
 * own blocks: tests/data/iquant/TYPE.gguf, cut by scripts/iquant_reference.sh from the wide256
 * reference files (blk.0.attn_k, 256 columns; the first 128 rows of blk.1.ffn_down, 768 columns).
 * For each tensor, at 1 and 7 tokens, the scalar table's matmul and the ggml-rounding one's
 * (which sums the IQ2 and IQ3 types in llama.cpp's AVX2 lanes) must equal the dot products of the
 * dequantized weights (the types table's to_float, which tests/cli_iquant.sh checks bit for bit)
 * with the q8_K-rounded activations, up to float rounding; and the ISA tables this CPU has, which
 * run these types through the scalar pieces for now, must agree with the scalar one bit for bit. */
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
        if (i && i < nk - 1) {
            CHECK(!memcmp(y, y0, sizeof(float) * (size_t)(n_tok * rows)),
                  "%s %s, %d tokens: the %s table differs from the scalar one", path, t->name,
                  n_tok, k[i]->isa);
            continue;
        }
        double worst = 0, largest = 0;
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
            check_tensor(path, t, 1);
            check_tensor(path, t, 7);
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
