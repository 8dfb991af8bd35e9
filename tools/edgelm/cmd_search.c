/* edgelm search: the chunks of a document index (edgelm index) that best answer a question, by
 * BM25, by cosine similarity of embeddings, or both fused by reciprocal rank (edgelm/rag.h). Each
 * result is printed with its file, lines, heading path, scores and text; --json gives the same as
 * {"question", "mode", "k", "results": [...]}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "docs.h"
#include "opts.h"

typedef struct opts {
    const char *db, *question, *model, *mode, *tokenizer;
    long k, n_ctx, threads;
    bool json;
} opts;

static int parse_args(int argc, char **argv, opts *o) {
    const cli_opt table[] = {
        {"-d, --db", "DB", CLI_TEXT, &o->db, 0, 0, "the index (edgelm index -o DB)", 0},
        {"-q, --question", "TEXT", CLI_TEXT, &o->question, 0, 0, "what to search for", 0},
        {"-k", "N", CLI_INT, &o->k, 1, 1000, "how many chunks (default 5)", 0},
        {"--mode", "M", CLI_TEXT, &o->mode, 0, 0, "hybrid (BM25 and cosine fused by reciprocal rank), bm25 or\nvector (default: hybrid, bm25 for an index without vectors)", 0},
        {"-m, --model", "PATH", CLI_TEXT, &o->model, 0, 0, "the embedding model (default: the one the index records; it\nmust be the same)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o->n_ctx, 1, 1 << 20, "most tokens the question may have (default: the model's\ntrained context)", 0},
        CLI_OPT_THREADS(&o->threads),
        CLI_OPT_JSON(&o->json, "print {\"question\", \"mode\", \"k\", \"results\": [{\"file\", \"line_start\",\n\"line_end\", \"heading\", \"text\", \"scores\"}]}"),
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {0}};
    const cli_spec spec = {
        "search", "-d DB -q QUESTION [-k 5] [--mode hybrid|bm25|vector] [--json]",
        "Prints the k chunks of the index DB that best answer QUESTION, best first, with their\n"
        "file, lines, heading path and scores (docs/rag.md).",
        CLI_TABLES(table), NULL, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->db) return cli_fail("search: -d DB is required (see edgelm search --help)");
    if (!o->question) return cli_fail("search: -q QUESTION is required (see edgelm search --help)");
    return 0;
}

static void print_text(elm_search_mode mode, const elm_hit *h, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        printf("%d. %s:%d-%d%s%s\n   fused %.5f", i + 1, h[i].file, h[i].line_start, h[i].line_end,
               h[i].heading[0] ? "  " : "", h[i].heading, h[i].fused);
        if (h[i].bm25_rank) printf(" | bm25 #%d %.4f", h[i].bm25_rank, h[i].bm25);
        if (h[i].cosine_rank) printf(" | cosine #%d %.6f", h[i].cosine_rank, h[i].cosine);
        fputs("\n   ", stdout);
        for (const char *p = h[i].text; *p; p++) {
            putchar(*p);
            if (*p == '\n') fputs("   ", stdout);
        }
        fputs("\n\n", stdout);
    }
    if (n == 0) printf("no chunk matches (%s search)\n", elm_search_mode_name(mode));
}

static int print_json(const opts *o, elm_search_mode mode, const elm_hit *h, int32_t n) {
    char *s = elm_search_json(o->question, mode, (int32_t)o->k, h, n, true);
    if (!s) return cli_fail("search: out of memory building JSON");
    puts(s);
    free(s);
    return 0;
}

int cmd_search(int argc, char **argv) {
    opts o = {.k = 5};
    int rc = parse_args(argc, argv, &o);
    if (rc) return cli_parse_exit(rc);
    elm_search_mode mode = ELM_SEARCH_HYBRID;
    if (o.mode && !elm_search_mode_from_name(o.mode, &mode))
        return cli_fail("search: --mode: '%s' is not hybrid, bm25 or vector", o.mode);
    const double t0 = elm_now_ms();
    elm_error err;
    cli_docs d;
    elm_hit *hits = NULL;
    int32_t n = 0;
    rc = 1;
    const cli_docs_opts dopts = {.db = o.db, .mode = o.mode ? &mode : NULL, .model = o.model,
                                 .tokenizer = o.tokenizer, .n_ctx = o.n_ctx, .threads = o.threads};
    if (!cli_docs_open(&d, &dopts)) return 1;
    mode = d.mode;
    const double t1 = elm_now_ms();
    if (elm_retrieve(d.ix, d.ctx, o.question, mode, (int32_t)o.k, &hits, &n, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    const double t2 = elm_now_ms();
    rc = o.json ? print_json(&o, mode, hits, n) : (print_text(mode, hits, n), 0);
    fprintf(stderr, "%s search: %d of k %ld | load %.1f ms | search %.1f ms\n",
            elm_search_mode_name(mode), n, o.k, t1 - t0, t2 - t1);
done:
    elm_hits_free(hits, n);
    cli_docs_close(&d);
    return rc;
}
