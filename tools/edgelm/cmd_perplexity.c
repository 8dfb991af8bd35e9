/* edgelm perplexity: llama-perplexity's figure for a model on a text file. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/perplexity.h"
#include "opts.h"

static void on_chunk(int32_t chunk, int32_t n_chunks, double ppl, void *user) {
    (void)user;
    cli_progress(chunk, n_chunks, "perplexity: chunk %d/%d, running PPL %.4f", chunk, n_chunks, ppl);
}

int cmd_perplexity(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *tokenizer = NULL;
    long n_ctx = 512, n_batch = 0, n_threads = elm_online_cores();
    bool json = false, mmap = false;
    elm_type type_k = ELM_TYPE_F32, type_v = ELM_TYPE_F32;
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&model),
        {"-f, --file", "TEXT", CLI_TEXT, &file, 0, 0, "UTF-8 text to score (needs at least 2 x CTX tokens)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &n_ctx, 4, 1 << 20, "tokens per chunk (default 512)", 0},
        {"-b, --batch-size", "N", CLI_INT, &n_batch, 1, 1 << 20, "tokens per forward pass (default CTX)", 0},
        CLI_OPT_THREADS(&n_threads),
        CLI_OPT_CACHE_TYPES(&type_k, &type_v),
        CLI_OPT_TOKENIZER(&tokenizer),
        CLI_OPT_MMAP(&mmap),
        CLI_OPT_JSON(&json, "print ppl, ppl_stderr, n_ctx, chunks, scored_tokens, mean_nll"),
        {0}};
    const cli_spec spec = {"perplexity", "-m MODEL -f TEXT [-c CTX] [-b BATCH] [-t N] [--cache-type-k T] [--cache-type-v T] [--json]",
                           "Scores the second half of each CTX-token chunk of TEXT, as llama-perplexity does.",
                           CLI_TABLES(opts), NULL, NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (!model || !file) return cli_fail("perplexity: -m MODEL and -f TEXT are required");

    size_t len;
    char *text = cli_read_text(file, &len);
    if (!text) return 1;
    elm_model *m = cli_load_model_to_run(model, tokenizer, mmap);
    if (!m) {
        free(text);
        return 1;
    }
    elm_ppl_params p = {.n_ctx = (int32_t)n_ctx, .n_batch = (int32_t)n_batch,
                        .n_threads = (int32_t)n_threads, .type_k = type_k, .type_v = type_v};
    elm_ppl_result r;
    elm_error err;
    elm_error_clear(&err);
    int rc = 0;
    if (elm_perplexity(m, text, len, &p, on_chunk, NULL, &r, &err)) {
        rc = cli_fail("%s: %s", file, err.msg);
    } else if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "ppl", r.ppl);
        cJSON_AddNumberToObject(o, "ppl_stderr", r.ppl_stderr);
        cJSON_AddNumberToObject(o, "n_ctx", r.n_ctx);
        cJSON_AddNumberToObject(o, "chunks", r.chunks);
        cJSON_AddNumberToObject(o, "scored_tokens", (double)r.scored_tokens);
        cJSON_AddNumberToObject(o, "mean_nll", r.mean_nll);
        rc = cli_print_json(o, "perplexity");
    } else {
        printf("PPL = %.4f +/- %.4f  (%d chunks of %d tokens, %lld scored tokens, mean NLL %.6f)\n",
               r.ppl, r.ppl_stderr, r.chunks, r.n_ctx, (long long)r.scored_tokens, r.mean_nll);
    }
    elm_model_free(m);
    free(text);
    return rc;
}
