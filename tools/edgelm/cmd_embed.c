/* edgelm embed: the embedding of a text (edgelm/embed.h), the vector POST /v1/embeddings returns:
 * the normed hidden states of its tokens pooled as the model's file says (mean, CLS or last
 * token; mean for a model that says none), an embedding model's Dense projections, unit length.
 * Prints the vector on one line (space-separated, 9 significant digits: a float exactly), or with
 * --json {"embedding", "n_tokens", "pooling", "tokens"}; a stats line goes to stderr. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/embed.h"
#include "opts.h"

typedef struct opts {
    const char *model, *prompt, *file, *tokenizer, *pooling;
    long threads, n_ctx;
    bool json, no_normalize, mmap, ggml_rounding;
} opts;

/* Returns 0 when parsed, 1 on error (reported), -1 after --help. */
static int parse_args(int argc, char **argv, opts *o) {
    const cli_opt table[] = {
        CLI_OPT_MODEL(&o->model),
        {"-p, --prompt", "TEXT", CLI_TEXT, &o->prompt, 0, 0, "the text to embed", 0},
        {"-f, --file", "FILE", CLI_TEXT, &o->file, 0, 0, "embed the text of FILE instead (one text)", 0},
        {"--pooling", "P", CLI_TEXT, &o->pooling, 0, 0, "mean, cls or last instead of the model's pooling_type (as\nllama.cpp's --pooling; a model that says none: mean)", 0},
        {"--no-normalize", NULL, CLI_FLAG, &o->no_normalize, 0, 0, "print the pooled vector as it is, not scaled to unit length", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o->n_ctx, 1, 1 << 20, "most tokens the text may have (default: the model's trained\ncontext)", 0},
        CLI_OPT_THREADS(&o->threads),
        CLI_OPT_JSON(&o->json, "print {\"embedding\": [...], \"n_tokens\": N, \"pooling\": P, \"tokens\":\n[ids]}"),
        {"--ggml-rounding", NULL, CLI_FLAG, &o->ggml_rounding, 0, 0, "round activations as ggml does, for cross-checking against\nllama.cpp (maps the file as --mmap does)", 0},
        CLI_OPT_MMAP(&o->mmap),
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {0}};
    const cli_spec spec = {
        "embed", "-m MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--no-normalize] [--json]",
        "Prints the embedding of TEXT: the hidden states of its tokens (BOS and EOS as the\n"
        "tokenizer adds them) after the output norm, pooled as the model's GGUF pooling_type says\n"
        "(mean, cls or last token; mean when it says none), projected by an embedding model's Dense\n"
        "layers (EmbeddingGemma) and scaled to unit length, as llama-server's /v1/embeddings. The\n"
        "vector goes to stdout on one line, a stats line to stderr.",
        CLI_TABLES(table), NULL, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->model) return cli_fail("embed: -m MODEL is required (see edgelm embed --help)");
    if (!o->prompt == !o->file) return cli_fail("embed: give the text with either -p TEXT or -f FILE");
    return 0;
}

/* The floats of v [n] as a JSON array (9 significant digits: a float exactly; null for a value
 * that is not finite), malloc'd. */
static char *vector_text(const float *v, int32_t n, bool json) {
    char *s = malloc((size_t)n * 18 + 3), *p = s;
    if (!s) return NULL;
    if (json) *p++ = '[';
    for (int32_t i = 0; i < n; i++) {
        if (i) *p++ = json ? ',' : ' ';
        p += isfinite(v[i]) ? sprintf(p, "%.9g", v[i]) : sprintf(p, "%s", json ? "null" : "nan");
    }
    if (json) *p++ = ']';
    *p = '\0';
    return s;
}

static int print_result(const opts *o, const float *v, int32_t dim, const int32_t *ids,
                        int32_t n, elm_pooling pool) {
    char *text = vector_text(v, dim, o->json);
    if (!text) return cli_fail("embed: out of memory");
    if (!o->json) {
        puts(text);
        free(text);
        return 0;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "embedding", cJSON_CreateRaw(text));
    free(text);
    cJSON_AddNumberToObject(root, "n_tokens", n);
    cJSON_AddStringToObject(root, "pooling", elm_pooling_name(pool));
    cJSON_AddBoolToObject(root, "normalized", !o->no_normalize);
    cJSON *tokens = cJSON_AddArrayToObject(root, "tokens");
    for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(tokens, cJSON_CreateNumber(ids[i]));
    return cli_print_json(root, "embed");
}

static int embed_text(const opts *o, const elm_model *m, const char *text, size_t len,
                      double load_ms) {
    elm_embed_params p = {.pooling = ELM_POOLING_DEFAULT, .no_normalize = o->no_normalize};
    if (o->pooling && !elm_pooling_from_name(o->pooling, &p.pooling))
        return cli_fail("embed: --pooling: '%s' is not mean, cls or last", o->pooling);
    const elm_pooling pool = elm_embed_pooling(m, p.pooling);
    elm_error err;
    int32_t *ids = NULL;
    int64_t n = 0;
    if (elm_embed_tokenize(&m->vocab, text, len, &ids, &n, &err)) return cli_fail("%s", err.msg);
    const int64_t limit = o->n_ctx ? o->n_ctx : m->hp.n_ctx_train;
    int rc = 1;
    float *v = NULL;
    elm_context *c = NULL;
    if (n == 0) {
        cli_fail("embed: the text has no tokens (and the model adds no BOS or EOS)");
        goto done;
    }
    if (n > limit) {
        cli_fail("embed: the text has %lld tokens, over the %lld the context takes (-c)",
                 (long long)n, (long long)limit);
        goto done;
    }
    /* one batch for a model whose tokens see the whole text; pieces of 512 for the others */
    const int32_t n_batch = m->hp.non_causal || n < 512 ? (int32_t)n : 512;
    const elm_context_params cp = {.n_ctx = (int32_t)n, .n_batch = n_batch,
                                   .n_threads = (int32_t)o->threads,
                                   .ggml_rounding = o->ggml_rounding};
    const int32_t dim = elm_embed_dim(m);
    if (!(v = malloc(sizeof *v * (size_t)dim))) {
        cli_fail("embed: out of memory");
        goto done;
    }
    if (elm_context_new(m, &cp, &c, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    const double t0 = elm_now_ms();
    if (elm_embed(c, ids, (int32_t)n, &p, v, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    const double ms = elm_now_ms() - t0;
    rc = print_result(o, v, dim, ids, (int32_t)n, pool);
    fprintf(stderr, "load %.1f ms | %lld tokens, %s pooling, %d floats%s | %.1f ms, %.1f tok/s | "
            "peak RSS %.1f MiB\n", load_ms, (long long)n, elm_pooling_name(pool), dim,
            o->no_normalize ? "" : ", unit length", ms, ms > 0 ? n / (ms / 1e3) : 0,
            cli_peak_rss_mib());
done:
    elm_context_free(c);
    free(v);
    free(ids);
    return rc;
}

int cmd_embed(int argc, char **argv) {
    opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return cli_parse_exit(rc);
    size_t len = 0;
    char *file_text = NULL;
    if (o.file && !(file_text = cli_read_text(o.file, &len))) return 1;
    const double t0 = elm_now_ms();
    elm_model *m = cli_load_model_to_run(o.model, o.tokenizer, o.mmap || o.ggml_rounding);
    const double load_ms = elm_now_ms() - t0;
    if (m) rc = embed_text(&o, m, o.file ? file_text : o.prompt, o.file ? len : strlen(o.prompt),
                           load_ms);
    else rc = 1;
    elm_model_free(m);
    free(file_text);
    return rc;
}
