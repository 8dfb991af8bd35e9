/* The super-block encoders against llama-quantize: quantizing wide256's F32 model to each k-quant
 * and i-quant with --pure writes, tensor for tensor, the bytes of
 * wide256/reference-quants/llamacpp-TYPE-pure.gguf, and general.file_type as llama.cpp sets it;
 * the recipes (q2_k, q3_k_m, q4_k_s, q4_k_m, q5_k_m, q6_k) pick llama.cpp's type for every tensor
 * and write llamacpp-RECIPE.gguf's bytes; with llama-imatrix's importance matrix, Q4_K_M and IQ4_XS
 * (wide256) and Q4_0 --pure (stories260K) write the bytes of llama-quantize --imatrix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "quant_pure.h"
#include "codecs/encode.h"
#include "edgelm/model.h"
#include "edgelm/quant.h"

/* Every tensor of ref_rel is in the file at path with the same type, shape and bytes. */
static void compare_file(const char *path, const char *ref_rel, const char *what) {
    elm_model *ours = NULL, *ref = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &ours, &err) || elm_model_load(fixture(ref_rel), NULL, &ref, &err)) {
        CHECK(0, "%s: load: %s", what, err.msg);
        elm_model_free(ours);
        return;
    }
    CHECK(ours->n_tensors == ref->n_tensors, "%s: %d tensors, reference has %d", what,
          ours->n_tensors, ref->n_tensors);
    int bad = 0;
    for (int32_t i = 0; i < ref->n_tensors; i++) {
        const elm_tensor *r = &ref->tensors[i], *t = elm_model_find(ours, r->name);
        bool same = t && t->type == r->type && !memcmp(t->ne, r->ne, sizeof t->ne) &&
                    t->nbytes == r->nbytes && !memcmp(t->data, r->data, r->nbytes);
        if (!same && bad++ < 4) {
            size_t first = 0;
            if (t && t->nbytes == r->nbytes)
                while (first < r->nbytes && ((const uint8_t *)t->data)[first] ==
                                                ((const uint8_t *)r->data)[first])
                    first++;
            CHECK(0, "%s: tensor '%s' differs (type %d vs %d, first differing byte %zu)", what,
                  r->name, t ? (int)t->type : -1, (int)r->type, first);
        }
    }
    CHECK(bad == 0, "%s: %d of %d tensors differ from llama-quantize's", what, bad, ref->n_tensors);
    CHECK(ours->file_type == ref->file_type, "%s: file_type %u, reference %u", what,
          ours->file_type, ref->file_type);
    elm_model_free(ours);
    elm_model_free(ref);
}

/* Degenerate rows (zeros, one spike, a constant, tiny and huge magnitudes), with and without
 * importance weights: every encoder writes blocks that decode to finite values, zeros to zeros,
 * and a constant or spike within the type's coarse error. */
static void test_edge_rows(void) {
    const elm_type types[] = {ELM_TYPE_Q2_K, ELM_TYPE_Q3_K, ELM_TYPE_Q4_K, ELM_TYPE_Q5_K,
                              ELM_TYPE_Q6_K, ELM_TYPE_IQ4_NL, ELM_TYPE_IQ4_XS, ELM_TYPE_Q4_0,
                              ELM_TYPE_Q4_1, ELM_TYPE_Q5_0, ELM_TYPE_Q5_1};
    enum { N = 512 };
    float x[N], y[N], qw[N];
    uint8_t buf[N * 2];
    for (int j = 0; j < N; j++) qw[j] = (float)(j % 7);
    for (int kind = 0; kind < 5; kind++) {
        for (int j = 0; j < N; j++)
            x[j] = kind == 0 ? 0.f : kind == 1 ? (j == 300 ? 5.f : 0.f) : kind == 2 ? -0.75f
                 : kind == 3 ? 1e-20f * (float)(j % 5 - 2) : 5e3f * (float)(j % 9 - 4); /* min -2e4: within f16 */
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            for (int weighted = 0; weighted < 2; weighted++) {
                elm_encode_row(types[t], x, buf, N, weighted ? qw : NULL);
                elm_type_get(types[t])->to_float(buf, y, N);
                double err2 = 0, ref2 = 0;
                bool finite = true;
                for (int j = 0; j < N; j++) {
                    finite &= isfinite(y[j]);
                    err2 += ((double)y[j] - x[j]) * ((double)y[j] - x[j]);
                    ref2 += (double)x[j] * x[j];
                }
                const char *name = elm_type_get(types[t])->name;
                CHECK(finite, "%s row kind %d weighted %d: non-finite decode", name, kind, weighted);
                if (kind == 0 || kind == 3)
                    CHECK(err2 <= 1e-30, "%s row kind %d weighted %d: error %g", name, kind,
                          weighted, err2);
                else
                    CHECK(err2 <= 0.3 * ref2, "%s row kind %d weighted %d: error %g of %g", name,
                          kind, weighted, err2, ref2);
            }
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    test_edge_rows();
    char *dir = check_tmp_dir();
    if (!dir) return check_skip("cannot create a temporary folder");
    elm_model *in = NULL;
    elm_error err;
    elm_status st = elm_model_load(fixture("wide256/wide-f32.gguf"), NULL, &in, &err);
    CHECK(st == ELM_OK, "load: %s", err.msg);
    const elm_type types[] = {ELM_TYPE_Q2_K, ELM_TYPE_Q3_K, ELM_TYPE_Q4_K, ELM_TYPE_Q5_K,
                              ELM_TYPE_Q6_K, ELM_TYPE_IQ4_NL, ELM_TYPE_IQ4_XS};
    for (size_t c = 0; !st && c < sizeof types / sizeof types[0]; c++) {
        const char *name = elm_type_get(types[c])->name;
        char out[256], ref[128];
        snprintf(out, sizeof out, "%s/%s.gguf", dir, name);
        snprintf(ref, sizeof ref, "wide256/reference-quants/llamacpp-%s-pure.gguf", name);
        st = quantize_pure(in, types[c], out, NULL, NULL, &err);
        CHECK(st == ELM_OK, "quantize %s: %s", name, err.msg);
        if (!st) compare_file(out, ref, name);
        unlink(out);
        st = ELM_OK;
    }
    const char *recipes[] = {"q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k"};
    for (size_t c = 0; !st && c < sizeof recipes / sizeof recipes[0]; c++) {
        char out[256], ref[128];
        snprintf(out, sizeof out, "%s/%s.gguf", dir, recipes[c]);
        snprintf(ref, sizeof ref, "wide256/reference-quants/llamacpp-%s.gguf", recipes[c]);
        elm_quant_params p = {.method = ELM_QUANT_RTN};
        CHECK(elm_quant_recipe_from_name(recipes[c], &p.policy.recipe, &p.policy.type),
              "recipe %s unknown", recipes[c]);
        st = elm_quantize(in, &p, out, NULL, NULL, &err);
        CHECK(st == ELM_OK, "quantize %s: %s", recipes[c], err.msg);
        if (!st) compare_file(out, ref, recipes[c]);
        unlink(out);
        st = ELM_OK;
    }
    const struct { const char *model, *imatrix, *type, *ref; bool pure; } im[] = {
        {"wide256/wide-f32.gguf", "wide256/reference-quants/llamacpp-imatrix-calib.gguf", "q4_k_m",
         "wide256/reference-quants/llamacpp-q4_k_m-imat.gguf", false},
        {"wide256/wide-f32.gguf", "wide256/reference-quants/llamacpp-imatrix-calib.gguf", "iq4_xs",
         "wide256/reference-quants/llamacpp-iq4_xs-imat.gguf", false},
        {"stories260K/stories260K-f32.gguf",
         "stories260K/reference-quants/llamacpp-imatrix-calib.gguf", "q4_0",
         "stories260K/reference-quants/llamacpp-q4_0-pure-imatrix.gguf", true},
    };
    for (size_t c = 0; c < sizeof im / sizeof im[0]; c++) {
        char out[256], what[64];
        snprintf(out, sizeof out, "%s/imat.gguf", dir);
        snprintf(what, sizeof what, "%s --imatrix", im[c].type);
        elm_model *m = NULL;
        elm_imatrix imx;
        elm_quant_params p = {.method = ELM_QUANT_RTN, .imatrix = &imx,
                              .imatrix_path = fixture(im[c].imatrix)};
        p.policy.pure = im[c].pure;
        if (!elm_quant_recipe_from_name(im[c].type, &p.policy.recipe, &p.policy.type))
            elm_type_from_name(im[c].type, &p.policy.type);
        st = elm_model_load(fixture(im[c].model), NULL, &m, &err);
        if (!st) {
            st = elm_imatrix_load(fixture(im[c].imatrix), &imx, &err);
            if (!st) st = elm_quantize(m, &p, out, NULL, NULL, &err);
            if (!st) compare_file(out, im[c].ref, what);
            elm_imatrix_free(&imx);
        }
        CHECK(st == ELM_OK, "%s: %s", what, err.msg);
        elm_model_free(m);
        unlink(out);
        st = ELM_OK;
    }
    uint32_t ft;
    elm_type base;
    CHECK(!elm_quant_recipe_from_name("q4_k_x", &ft, &base), "unknown recipe accepted");
    /* the names messages list are the recipes, all of them (15, and the 11 sub-4-bit ones) */
    char names[512];
    int n_names = 0, n_known = 0;
    snprintf(names, sizeof names, "%s", elm_quant_recipe_names());
    for (char *save, *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        n_names++;
        n_known += elm_quant_recipe_from_name(name, &ft, &base);
    }
    CHECK(n_names == 26 && n_known == n_names, "%d of %d listed recipes known: %s", n_known,
          n_names, elm_quant_recipe_names());
    elm_model_free(in);
    rmdir(dir);
    free(dir);
    return check_done();
}
