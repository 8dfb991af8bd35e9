/* The forward pass under one kernel table (argv[2]: avx2, avx512 or neon; none: the scalar table
 * alone), after the scalar table; a table this CPU or build lacks ends the test as skipped
 * (CMakeLists.txt registers one test per table, so each shows as passed or skipped on its own):
 * - EDGELM_ISA picks the table it names;
 * - greedy ids of the F32 fixture equal golden/greedy.json (2 threads, so rows are split);
 * - for the F32 model and llama.cpp's q8_0, q4_0 and q4_1 files, a batched prefill (the tiled
 *   matrix-matrix kernels) gives the logits of token-by-token decode (the matrix-vector kernels),
 *   and every table gives the scalar table's logits: within 1e-3 of the logit range for F32;
 *   within 2e-2 for the block types, whose activations are rounded to 8 bits, so that a last-bit
 *   difference upstream can move one activation by a quantization step (about 0.4% of the range
 *   at the logits here) - a wrong block, scale or offset is off by far more. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/generate.h"
#include "kernels/kernels.h"

static const char *const models[] = {"stories260K/stories260K-f32.gguf",
                                     "stories260K/reference-quants/llamacpp-q8_0-pure.gguf",
                                     "stories260K/reference-quants/llamacpp-q4_0-pure.gguf",
                                     "stories260K/reference-quants/llamacpp-q4_1-pure.gguf"};
enum { N_MODELS = 4, N_TOK = 12 };
static const int32_t toks[N_TOK] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    elm_error_clear(&err);
    CHECK(elm_model_load(fixture(rel), NULL, &m, &err) == ELM_OK, "%s: %s", rel, err.msg);
    return m;
}

static elm_context *context(elm_model *m, int n_threads) {
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = 128, .n_threads = n_threads};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static void greedy_golden(elm_model *m, const char *isa) {
    cJSON *g = check_load_json(fixture("stories260K/golden/greedy.json"));
    const cJSON *cases = g ? cJSON_GetObjectItem(g, "cases") : NULL, *cs;
    cJSON_ArrayForEach(cs, cases) {
        int prompt[64], golden[32];
        int np = check_json_ids(cJSON_GetObjectItem(cs, "prompt_ids"), prompt, 64);
        check_json_ids(cJSON_GetObjectItem(cs, "generated_ids"), golden, 32);
        elm_context *c = context(m, 2);
        if (!c) break;
        elm_gen_params gp = {
            .n_predict = 32, .ignore_eos = true, .sampling = elm_sampler_defaults()};
        gp.sampling.temp = 0;
        int32_t p32[64], out[32], n_out = 0;
        for (int i = 0; i < np; i++) p32[i] = prompt[i];
        elm_error err;
        elm_gen_stats st;
        CHECK(elm_generate(c, p32, np, &gp, NULL, NULL, out, 32, &n_out, &st, &err) == ELM_OK,
              "%s generate: %s", isa, err.msg);
        int same = 0;
        while (same < n_out && out[same] == golden[same]) same++;
        CHECK(same == 32, "%s: '%s': first %d of 32 greedy ids match", isa,
              cJSON_GetObjectItem(cs, "prompt")->valuestring, same);
        elm_context_free(c);
    }
    cJSON_Delete(g);
}

/* Logits [N_TOK, V] of the test tokens: in one batch, or one token at a time. */
static float *logits_of(elm_model *m, bool batched) {
    const int V = m->hp.n_vocab;
    float *out = malloc(sizeof(float) * N_TOK * V);
    elm_context *c = context(m, 2);
    elm_error err;
    if (c && batched) CHECK(elm_forward(c, toks, N_TOK, out, true, &err) == ELM_OK, "%s", err.msg);
    for (int t = 0; c && !batched && t < N_TOK; t++)
        CHECK(elm_forward(c, toks + t, 1, out + (size_t)t * V, false, &err) == ELM_OK, "%s",
              err.msg);
    elm_context_free(c);
    return out;
}

static float max_diff(const float *a, const float *b, int n, float *range) {
    float d = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(a[i] - b[i]));
        lo = fminf(lo, b[i]), hi = fmaxf(hi, b[i]);
    }
    *range = hi - lo;
    return d;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const struct {
        const char *name;
        const elm_kernels *k;
    } isas[] = {{"scalar", elm_kernels_scalar()},
                {"avx2", elm_kernels_avx2()},
                {"avx512", elm_kernels_avx512()},
                {"neon", elm_kernels_neon()}};
    const char *only = argc > 2 ? argv[2] : NULL;
    for (size_t k = 0; only && k < sizeof isas / sizeof isas[0]; k++)
        if (!strcmp(isas[k].name, only) && !isas[k].k) {
            char why[96];
            snprintf(why, sizeof why, "%s is not available on this CPU or build", only);
            return check_skip(why);
        }
    elm_model *m[N_MODELS];
    float *ref[N_MODELS] = {0};
    for (int i = 0; i < N_MODELS; i++) m[i] = load(models[i]);
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (k > 0 && !(only && !strcmp(isas[k].name, only))) continue;
        setenv("EDGELM_ISA", isas[k].name, 1);
        CHECK(!strcmp(elm_kernels_best()->isa, isas[k].name), "EDGELM_ISA=%s gives %s",
              isas[k].name, elm_kernels_best()->isa);
        printf("%s: checking\n", isas[k].name);
        if (m[0]) greedy_golden(m[0], isas[k].name);
        for (int i = 0; i < N_MODELS; i++) {
            if (!m[i]) continue;
            const int n = N_TOK * m[i]->hp.n_vocab;
            const float tol = i == 0 ? 1e-3f : 2e-2f;
            float *batched = logits_of(m[i], true), *single = logits_of(m[i], false), range;
            float d = max_diff(batched, single, n, &range);
            CHECK(d <= tol * range, "%s %s: prefill and decode logits differ by %g (range %g)",
                  isas[k].name, models[i], d, range);
            if (!ref[i]) {
                ref[i] = batched; /* the scalar table's, which runs first */
            } else {
                d = max_diff(batched, ref[i], n, &range);
                CHECK(d <= tol * range, "%s %s: logits differ from scalar by %g (range %g)",
                      isas[k].name, models[i], d, range);
                free(batched);
            }
            free(single);
        }
    }
    for (int i = 0; i < N_MODELS; i++) free(ref[i]), elm_model_free(m[i]);
    return check_done();
}
