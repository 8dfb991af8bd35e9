/* Weights packed at load run only through the kernel table that packed them:
 *  - a GGUF file read into memory has the layers' Q4_0 matrices packed by this CPU's table
 *    (elm_tensor.packed_by), the mapped file none;
 *  - a context of that table runs the packed model, with the mapped file's logits up to the float
 *    order of the tiles;
 *  - a context of another table (ggml_rounding, which packs nothing) refuses it with
 *    ELM_ERR_UNSUPPORTED, naming the file, both tables and the way out, and runs the mapped file;
 *  - so does a context of the AVX-512 table for a model the AVX2 table packed (EDGELM_ISA at
 *    load), where the CPU has both: only the table that packed a matrix reads its layout.
 * Skipped where this CPU's table packs nothing (the scalar and NEON tables). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/context.h"
#include "kernels/kernels.h"

static elm_model *load(const char *path, bool in_memory) {
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(path, &(elm_load_opts){.in_memory = in_memory}, &m, &err) == ELM_OK,
          "%s: %s", path, err.msg);
    return m;
}

/* How many of m's layer matrices are packed, and whether all of those by k. */
static int count_packed(const elm_model *m, const elm_kernels *k, bool *all_by_k) {
    int n = 0;
    *all_by_k = true;
    for (int l = 0; l < m->hp.n_layers; l++) {
        const elm_layer *L = &m->layers[l];
        const elm_tensor *w[] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            n += w[i]->packed_by != NULL;
            *all_by_k &= !w[i]->packed_by || w[i]->packed_by == k;
        }
    }
    return n;
}

/* The logits of a few tokens in a new context of m, or NULL (and st set) when it is refused. */
static float *logits(const elm_model *m, bool ggml_rounding, elm_status *st, elm_error *err) {
    static const int32_t toks[] = {1, 403, 407, 261, 378, 432};
    const int n = sizeof toks / sizeof toks[0];
    elm_context *c = NULL;
    const elm_context_params cp = {.n_ctx = 32, .n_threads = 2, .ggml_rounding = ggml_rounding};
    if ((*st = elm_context_new(m, &cp, &c, err))) {
        CHECK(c == NULL, "a refused context is handed out");
        return NULL;
    }
    float *y = malloc(sizeof(float) * (size_t)n * (size_t)m->hp.n_vocab);
    *st = elm_forward(c, toks, n, y, true, err);
    CHECK(*st == ELM_OK, "forward: %s", err->msg);
    elm_context_free(c);
    return y;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const elm_kernels *best = elm_kernels_best();
    const char *path = fixture("wide256/reference-quants/llamacpp-q4_0-pure.gguf");
    if (!best->packs || !best->packs(ELM_TYPE_Q4_0, 256, 256))
        return check_skip("this CPU's kernel table packs no Q4_0 matrix");
    elm_model *in = load(path, true), *mapped = load(path, false);
    if (!in || !mapped) return check_done();
    bool by_best, none;
    const int n_packed = count_packed(in, best, &by_best);
    CHECK(n_packed == 7 * in->hp.n_layers && by_best, "%d of %d matrices packed, by %s: %d",
          n_packed, 7 * in->hp.n_layers, best->isa, by_best);
    CHECK(count_packed(mapped, best, &none) == 0, "a mapped file's matrices are packed");

    elm_status st;
    elm_error err;
    float *y_in = logits(in, false, &st, &err), *y_map = logits(mapped, false, &st, &err);
    const size_t n = 6 * (size_t)in->hp.n_vocab;
    double worst = 0;
    for (size_t i = 0; y_in && y_map && i < n; i++)
        worst = fmax(worst, fabs((double)y_in[i] - y_map[i]));
    CHECK(y_in && y_map && worst < 1e-4, "packed and mapped logits differ by %g", worst);

    float *refused = logits(in, true, &st, &err);
    CHECK(!refused && st == ELM_ERR_UNSUPPORTED, "ggml_rounding ran weights packed by %s (%d)",
          best->isa, st);
    const char *ggml = elm_kernels_ggml()->isa;
    CHECK(strstr(err.msg, path) && strstr(err.msg, best->isa) && strstr(err.msg, ggml) &&
              strstr(err.msg, "--mmap"),
          "message: %s", err.msg);
    float *y_ggml = logits(mapped, true, &st, &err);
    CHECK(y_ggml && st == ELM_OK, "ggml_rounding on the mapped file: %s", err.msg);

    if (elm_kernels_avx2() && elm_kernels_avx512()) {
        setenv("EDGELM_ISA", "avx2", 1);
        elm_model *other = load(path, true);
        unsetenv("EDGELM_ISA");
        float *y = other ? logits(other, false, &st, &err) : NULL;
        CHECK(other && !y && st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "avx2") &&
                  strstr(err.msg, "avx512"),
              "weights packed by avx2 on avx512: %d, %s", st, err.msg);
        free(y);
        elm_model_free(other);
    }
    free(y_in), free(y_map), free(refused), free(y_ggml);
    elm_model_free(in);
    elm_model_free(mapped);
    return check_done();
}
