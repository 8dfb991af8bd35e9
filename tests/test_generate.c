/* Greedy generation against golden/greedy.json from every layout, and the consistency of the one
 * forward pass: batched prefill == token-by-token decode, and any thread count gives the same. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/generate.h"

static elm_model *load_as(const char *path, bool in_memory) {
    elm_model *m = NULL;
    elm_error err;
    elm_error_clear(&err);
    const elm_load_opts opts = {.in_memory = in_memory};
    elm_status st = elm_model_load(path, &opts, &m, &err);
    CHECK(st == ELM_OK, "%s: %s", path, err.msg);
    return m;
}

static elm_model *load(const char *path) { return load_as(path, false); }

/* Greedy ids after prompt_ids; returns how many of the first n_check match golden. */
static int greedy_matches(elm_model *m, const int *prompt, int n_prompt, const int *golden,
                          int n_check, int n_threads) {
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = 128, .n_threads = n_threads};
    if (elm_context_new(m, &cp, &c, &err)) {
        CHECK(0, "context: %s", err.msg);
        return 0;
    }
    elm_gen_params gp = {.n_predict = 32, .ignore_eos = true, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 0;
    int32_t p32[64], out[32];
    for (int i = 0; i < n_prompt; i++) p32[i] = prompt[i];
    int32_t n_out = 0;
    elm_gen_stats st;
    elm_status s = elm_generate(c, p32, n_prompt, &gp, NULL, NULL, out, 32, &n_out, &st, &err);
    CHECK(s == ELM_OK && n_out == 32, "generate: %s (%d tokens)", err.msg, n_out);
    int same = 0;
    while (same < n_check && same < n_out && out[same] == golden[same]) same++;
    elm_context_free(c);
    return same;
}

static void golden_greedy(const char *rel, int n_check, bool in_memory) {
    elm_model *m = load_as(fixture(rel), in_memory);
    cJSON *g = check_load_json(fixture("stories260K/golden/greedy.json"));
    if (!m || !g) goto out;
    const cJSON *cs;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(g, "cases")) {
        int prompt[64], golden[32];
        const char *text = cJSON_GetObjectItem(cs, "prompt")->valuestring;
        int np = check_json_ids(cJSON_GetObjectItem(cs, "prompt_ids"), prompt, 64);
        check_json_ids(cJSON_GetObjectItem(cs, "generated_ids"), golden, 32);
        int32_t ids[64];
        elm_error err;
        int64_t n = elm_tokenize(&m->vocab, text, strlen(text), true, ids, 64, &err);
        bool same_prompt = n == np;
        for (int i = 0; same_prompt && i < np; i++) same_prompt = ids[i] == prompt[i];
        CHECK(same_prompt, "%s: prompt '%s' tokenizes differently", rel, text);
        int same = greedy_matches(m, prompt, np, golden, n_check, 1);
        CHECK(same == n_check, "%s: '%s': first %d of %d greedy ids match", rel, text, same, n_check);
    }
out:
    cJSON_Delete(g);
    elm_model_free(m);
}

/* Logits of a batched prefill equal those of the same tokens decoded one at a time. */
static void prefill_equals_decode(void) {
    elm_model *m = load(fixture("stories260K/stories260K-f32.gguf"));
    if (!m) return;
    const int32_t toks[] = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};
    const int n = sizeof toks / sizeof toks[0], V = m->hp.n_vocab;
    float *a = malloc(sizeof(float) * n * V), *b = malloc(sizeof(float) * n * V);
    elm_context *c1 = NULL, *c2 = NULL;
    elm_error err;
    elm_context_params p1 = {.n_ctx = 64, .n_threads = 1}, p3 = {.n_ctx = 64, .n_threads = 3};
    CHECK(elm_context_new(m, &p1, &c1, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_context_new(m, &p3, &c2, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_forward(c1, toks, n, a, true, &err) == ELM_OK, "%s", err.msg);
    for (int t = 0; t < n; t++)
        CHECK(elm_forward(c2, toks + t, 1, b + (size_t)t * V, false, &err) == ELM_OK, "%s", err.msg);
    float maxdiff = 0;
    for (int i = 0; i < n * V; i++) maxdiff = fmaxf(maxdiff, fabsf(a[i] - b[i]));
    CHECK(maxdiff < 1e-4f, "prefill vs decode logits differ by %g", maxdiff);
    CHECK(elm_context_n_past(c1) == n && elm_context_n_past(c2) == n, "n_past");
    /* the cache is full at 64: one more batch past it is refused */
    int32_t many[64] = {0};
    CHECK(elm_forward(c1, many, 64 - n + 1, NULL, false, &err) == ELM_ERR_ARG, "overflow accepted");
    CHECK(strstr(err.msg, "context full") != NULL, "message: %s", err.msg);
    int32_t bad = V;
    elm_context_reset(c1);
    CHECK(elm_forward(c1, &bad, 1, NULL, false, &err) == ELM_ERR_ARG, "bad token accepted");
    elm_context_free(c1);
    elm_context_free(c2);
    free(a);
    free(b);
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    golden_greedy("stories260K/stories260K-f32.gguf", 32, false);
    golden_greedy("stories260K/stories260K-f32.gguf", 32, true); /* read into memory */
    golden_greedy("stories260K/hf-f32", 32, false);
    golden_greedy("stories260K/model.bin", 32, false);
    golden_greedy("stories260K/hf-bf16-sharded", 8, false);
    prefill_equals_decode();
    return check_done();
}
