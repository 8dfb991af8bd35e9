/* Perplexity against llama-perplexity's figures (golden/perplexity.json, quant_reference.json):
 * the F32 model, the reference q4_0 file and edgelm's own q8_0. Under the sanitizer build the
 * same code runs on the first chunks only, to keep the suite fast. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "quant_pure.h"
#include "core/fileio.h"
#include "edgelm/perplexity.h"
#include "edgelm/quant.h"

#if defined(__SANITIZE_ADDRESS__)
static const size_t text_limit = 12000; /* bytes of valid.txt: a few chunks */
#else
static const size_t text_limit = (size_t)-1;
#endif

static char *text;
static size_t text_len;

static bool ppl_of(const char *path, elm_ppl_result *r) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &m, &err)) {
        CHECK(0, "%s", err.msg);
        return false;
    }
    elm_ppl_params p = {.n_ctx = 256, .n_threads = 2};
    elm_status st = elm_perplexity(m, text, text_len, &p, NULL, NULL, r, &err);
    CHECK(st == ELM_OK, "%s: %s", path, err.msg);
    elm_model_free(m);
    return st == ELM_OK;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_error err;
    if (elm_read_file(fixture("stories260K/text/valid.txt"), 1 << 24, &text, &text_len, &err)) {
        CHECK(0, "%s", err.msg);
        return check_done();
    }
    const bool full = text_len <= text_limit;
    if (!full) text_len = text_limit;

    cJSON *g = check_load_json(fixture("stories260K/golden/perplexity.json"));
    elm_ppl_result f32, q8, q4;
    if (g && ppl_of(fixture("stories260K/stories260K-f32.gguf"), &f32)) {
        CHECK(f32.scored_tokens == f32.chunks * (256 - 128 - 1), "scored per chunk");
        if (full) {
            CHECK(f32.chunks == cJSON_GetObjectItem(g, "chunks")->valueint, "chunks %d", f32.chunks);
            CHECK(f32.scored_tokens == cJSON_GetObjectItem(g, "scored_tokens")->valueint,
                  "scored %lld", (long long)f32.scored_tokens);
            CHECK(f32.n_tokens == cJSON_GetObjectItem(g, "tokens_with_bos")->valueint, "tokens %lld",
                  (long long)f32.n_tokens);
            const double want = cJSON_GetObjectItem(g, "ppl")->valuedouble;
            CHECK(fabs(f32.ppl / want - 1) < 5e-4, "PPL %.6f vs %.6f", f32.ppl, want);
            const double se = cJSON_GetObjectItem(g, "ppl_stderr")->valuedouble;
            CHECK(fabs(f32.ppl_stderr / se - 1) < 0.01, "stderr %.6f vs %.6f", f32.ppl_stderr, se);
        }
    }
    /* llama.cpp's q4_0 file: PPL within 1% of llama-perplexity's (golden/quant_reference.json) */
    if (ppl_of(fixture("stories260K/reference-quants/llamacpp-q4_0-pure.gguf"), &q4) && full) {
        const double want = check_golden_number("stories260K/golden/quant_reference.json",
                                         "files.q4_0-pure.ppl");
        CHECK(fabs(q4.ppl / want - 1) < 0.01, "q4_0 PPL %.6f vs %.6f", q4.ppl, want);
    }

    /* edgelm's own q8_0: within 0.1% of F32 */
    char *dir = check_tmp_dir();
    CHECK(dir != NULL, "cannot create a temporary folder");
    if (dir) {
        char out[1100];
        snprintf(out, sizeof out, "%s/q8_0.gguf", dir);
        elm_model *m = NULL;
        if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) == ELM_OK) {
            elm_quantize_summary sum;
            CHECK(quantize_pure(m, ELM_TYPE_Q8_0, out, NULL, &sum, &err) == ELM_OK, "%s", err.msg);
            elm_model_free(m);
            if (ppl_of(out, &q8))
                CHECK(fabs(q8.ppl / f32.ppl - 1) < 1e-3, "q8_0 PPL %.6f vs F32 %.6f", q8.ppl, f32.ppl);
        }
        unlink(out);
        rmdir(dir);
        free(dir);
    }
    /* fewer than 2 x n_ctx tokens is refused, as llama-perplexity does */
    elm_model *m = NULL;
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) == ELM_OK) {
        elm_ppl_params p = {.n_ctx = 256, .n_threads = 1};
        elm_ppl_result r;
        CHECK(elm_perplexity(m, "Once upon a time", 16, &p, NULL, NULL, &r, &err) == ELM_ERR_ARG,
              "short text accepted");
        CHECK(strstr(err.msg, "need at least 512") != NULL, "message: %s", err.msg);
        elm_model_free(m);
    }
    cJSON_Delete(g);
    free(text);
    return check_done();
}
