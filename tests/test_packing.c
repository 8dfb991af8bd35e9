/* Weights packed at load run only through the kernel table that packed them:
 *  - a GGUF file read into memory has the layers' Q4_0 matrices packed by this CPU's table
 *    (elm_tensor.packed_by), the mapped file none;
 *  - a context of that table runs the packed model, with the mapped file's logits up to the float
 *    order of the tiles;
 *  - a context of another table (ggml_rounding, which packs nothing) refuses it with
 *    ELM_ERR_UNSUPPORTED, naming the file, both tables and the way out, and runs the mapped file;
 *  - so does a context of the AVX-512 table for a model the AVX2 table packed (EDGELM_ISA at
 *    load), where the AVX-512 table is this run's: only the table that packed a matrix reads its
 *    layout.
 *  - a mixture of experts read into memory has its stacks packed expert by expert (each expert's
 *    view a packed matrix), with the mapped file's logits up to the tiles' float order, and
 *    ggml_rounding refuses it: the synth --tiny qwen3moe at width 256, quantized --pure q4_k
 *    with its attention at Q3_K, which no table packs (the refusal names a stack), and the
 *    synth --tiny gpt-oss at width 256 by llama-quantize's mxfp4_moe (MXFP4 stacks);
 *  - Q8_0, IQ4_XS and (where the table packs them) Q5_K and Q6_K files' layer matrices are
 *    packed too (q8_0x16, iq4_xsx16, q5_kx16, q6_kx16), with the mapped file's logits up to the
 *    tiles' float order.
 * Skipped where this CPU's table packs nothing (the scalar and NEON tables). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/quant.h"
#include "kernels/kernels.h"
#include "shapes/synth_tiny.h"

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

/* Largest |a[i] - b[i]| over the logits of the 6 tokens above; infinity when either is NULL. */
static double worst_diff(const float *a, const float *b, const elm_model *m) {
    double worst = a && b ? 0 : INFINITY;
    for (size_t i = 0; a && b && i < 6 * (size_t)m->hp.n_vocab; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

/* A tiny mixture of experts of family arch at width 256, quantized by policy, read into memory
 * and mapped: its stacks (the gate's of type stack_type) packed by best, the logits alike, and
 * ggml_rounding refused naming a packed tensor (one whose name has `named` in it). */
static void check_experts(const elm_kernels *best, const char *arch, float std,
                          const elm_quant_policy *policy, elm_type stack_type, const char *named) {
    elm_synth_tiny o = {.arch = arch, .seed = 7, .width = 256, .std = std,
                        .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf")};
    elm_model *f32 = NULL;
    elm_error err;
    char *dir = check_tmp_dir(), path_buf[1024];
    const char *path = dir ? path_buf : NULL;
    if (dir) snprintf(path_buf, sizeof path_buf, "%s/moe.gguf", dir);
    const elm_quant_params p = {.policy = *policy, .n_threads = 2};
    elm_status st = path ? elm_synth_tiny_model(&o, &f32, NULL, &err) : ELM_ERR_IO;
    if (!st) st = elm_quantize(f32, &p, path, NULL, NULL, &err);
    CHECK(st == ELM_OK, "tiny %s: %s", arch, st ? err.msg : "");
    elm_model *in = st ? NULL : load(path, true), *mapped = st ? NULL : load(path, false);
    for (int l = 0; in && mapped && l < in->hp.n_layers; l++) {
        const elm_layer *L = &in->layers[l], *M = &mapped->layers[l];
        CHECK(L->gate_exps->type == stack_type && L->gate_exps->packed_by == best &&
                  L->up_exps->packed_by == best && L->down_exps->packed_by == best,
              "%s layer %d: stacks of types %d/%d not packed by %s", arch, l, L->gate_exps->type,
              L->down_exps->type, best->isa);
        CHECK(!M->gate_exps->packed_by && !M->down_exps->packed_by,
              "%s layer %d: a mapped file's stacks are packed", arch, l);
    }
    float *y_in = in ? logits(in, false, &st, &err) : NULL;
    float *y_map = mapped ? logits(mapped, false, &st, &err) : NULL;
    const double worst = in ? worst_diff(y_in, y_map, in) : INFINITY;
    CHECK(worst < 1e-4, "%s experts: packed and mapped logits differ by %g", arch, worst);
    float *refused = in ? logits(in, true, &st, &err) : NULL;
    CHECK(in && !refused && st == ELM_ERR_UNSUPPORTED && strstr(err.msg, named),
          "ggml_rounding ran %s packed by %s (%d): %s", arch, best->isa, st, err.msg);
    free(y_in), free(y_map), free(refused);
    elm_model_free(in), elm_model_free(mapped), elm_model_free(f32);
    if (dir) unlink(path), rmdir(dir), free(dir);
}

static void test_experts(const elm_kernels *best) {
    /* --pure q4_k (the down stack, 128 wide, falls back to Q5_0) with attention at Q3_K, which no
     * table packs: the stacks are then what a refusal must find */
    const elm_type_override q3_attn = {"blk.*.attn_*", ELM_TYPE_Q3_K};
    const elm_quant_policy q4_k = {
        .type = ELM_TYPE_Q4_K, .pure = true, .overrides = &q3_attn, .n_overrides = 1};
    check_experts(best, "qwen3moe", 0, &q4_k, ELM_TYPE_Q4_K, "exps");
    /* llama-quantize's mxfp4_moe: MXFP4 stacks, the other matrices Q8_0 (packed too). Weights
     * of std 0.1: at the default 0.3 this tiny gpt-oss's attention turns the rows' and the tiles'
     * float orders (1e-6 apart in every product) into logits 0.2 apart */
    elm_quant_policy mxfp4 = {.pure = false};
    CHECK(elm_quant_recipe_from_name("mxfp4_moe", &mxfp4.recipe, &mxfp4.type), "mxfp4_moe");
    check_experts(best, "gpt-oss", 0.1f, &mxfp4, ELM_TYPE_MXFP4, "weight");
}

/* path read into memory (*in: every layer matrix packed by best) and mapped (*mapped: none), and
 * the logits of the two (*y_in, *y_map) within 1e-4. False when either does not load. */
static bool packed_like_mapped(const char *path, const elm_kernels *best, elm_model **in,
                               elm_model **mapped, float **y_in, float **y_map) {
    *in = load(path, true), *mapped = load(path, false);
    *y_in = *y_map = NULL;
    if (!*in || !*mapped) return false;
    bool by_best, none;
    const int n_packed = count_packed(*in, best, &by_best);
    CHECK(n_packed == 7 * (*in)->hp.n_layers && by_best, "%s: %d of %d matrices packed, by %s: %d",
          path, n_packed, 7 * (*in)->hp.n_layers, best->isa, by_best);
    CHECK(count_packed(*mapped, best, &none) == 0, "%s: a mapped file's matrices are packed", path);
    elm_status st;
    elm_error err;
    *y_in = logits(*in, false, &st, &err), *y_map = logits(*mapped, false, &st, &err);
    const double worst = worst_diff(*y_in, *y_map, *in);
    CHECK(worst < 1e-4, "%s: packed and mapped logits differ by %g", path, worst);
    return true;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const elm_kernels *best = elm_kernels_best();
    const char *path = fixture("wide256/reference-quants/llamacpp-q4_0-pure.gguf");
    if (!best->packs || !best->packs(ELM_TYPE_Q4_0, 256, 256))
        return check_skip("this CPU's kernel table packs no Q4_0 matrix");
    elm_model *in, *mapped;
    float *y_in, *y_map;
    const bool loaded = packed_like_mapped(path, best, &in, &mapped, &y_in, &y_map);
    elm_status st;
    elm_error err;
    if (!loaded) return check_done();

    float *refused = logits(in, true, &st, &err);
    CHECK(!refused && st == ELM_ERR_UNSUPPORTED, "ggml_rounding ran weights packed by %s (%d)",
          best->isa, st);
    const char *ggml = elm_kernels_ggml()->isa;
    CHECK(strstr(err.msg, path) && strstr(err.msg, best->isa) && strstr(err.msg, ggml) &&
              strstr(err.msg, "--mmap"),
          "message: %s", err.msg);
    float *y_ggml = logits(mapped, true, &st, &err);
    CHECK(y_ggml && st == ELM_OK, "ggml_rounding on the mapped file: %s", err.msg);

    if (elm_kernels_avx2() && best == elm_kernels_avx512()) {
        /* this run's own EDGELM_ISA, if any, is put back for the checks after this one */
        char *isa = getenv("EDGELM_ISA") ? strdup(getenv("EDGELM_ISA")) : NULL;
        setenv("EDGELM_ISA", "avx2", 1);
        elm_model *other = load(path, true);
        if (isa) setenv("EDGELM_ISA", isa, 1);
        else unsetenv("EDGELM_ISA");
        free(isa);
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
    static const struct {
        const char *path;
        elm_type type;
    } others[] = {{"wide256/reference-quants/llamacpp-q8_0-pure.gguf", ELM_TYPE_Q8_0},
                  {"wide256/reference-quants/llamacpp-iq4_xs-pure.gguf", ELM_TYPE_IQ4_XS},
                  {"wide256/reference-quants/llamacpp-q5_k-pure.gguf", ELM_TYPE_Q5_K},
                  {"wide256/reference-quants/llamacpp-q6_k-pure.gguf", ELM_TYPE_Q6_K}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        if (!best->packs(others[i].type, 256, 256)) continue; /* Q5_K, Q6_K: AVX-512's */
        packed_like_mapped(fixture(others[i].path), best, &in, &mapped, &y_in, &y_map);
        free(y_in), free(y_map);
        elm_model_free(in), elm_model_free(mapped);
    }
    test_experts(best);
    return check_done();
}
