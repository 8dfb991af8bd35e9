/* edgelm search: the chunks of a document index (edgelm index) that best answer a question, by
 * BM25, by cosine similarity of embeddings, or both fused by reciprocal rank (edgelm/rag.h). Each
 * result is printed with its file, lines, heading path, scores and text; --json gives the same as
 * {"question", "mode", "k", "ms", "results": [...]}. --questions FILE searches each line of FILE in
 * turn with the index and model loaded once (--json: one such object per line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "docs.h"
#include "opts.h"

typedef struct opts {
    const char *db, *question, *questions, *model, *mode, *tokenizer;
    long k, n_ctx, threads;
    bool json;
} opts;

static int parse_args(int argc, char **argv, opts *o) {
    const cli_opt table[] = {
        {"-d, --db", "DB", CLI_TEXT, &o->db, 0, 0, "the index (edgelm index -o DB)", 0},
        {"-q, --question", "TEXT", CLI_TEXT, &o->question, 0, 0, "what to search for", 0},
        {"--questions", "FILE", CLI_TEXT, &o->questions, 0, 0, "one question per line, each searched in turn with the index\nand model loaded once (--json: one object per line)", 0},
        {"-k", "N", CLI_INT, &o->k, 1, 1000, "how many chunks (default 5)", 0},
        {"--mode", "M", CLI_TEXT, &o->mode, 0, 0, "hybrid (BM25 and cosine fused by reciprocal rank), bm25 or\nvector (default: hybrid, bm25 for an index without vectors)", 0},
        {"-m, --model", "PATH", CLI_TEXT, &o->model, 0, 0, "the embedding model (default: the one the index records; it\nmust be the same)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o->n_ctx, 1, 1 << 20, "most tokens the question may have (default: the model's\ntrained context)", 0},
        CLI_OPT_THREADS(&o->threads),
        CLI_OPT_JSON(&o->json, "print {\"question\", \"mode\", \"k\", \"ms\", \"results\": [{\"file\",\n\"line_start\", \"line_end\", \"heading\", \"text\", \"scores\"}]}"),
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {0}};
    const cli_spec spec = {
        "search", "-d DB (-q QUESTION | --questions FILE) [-k 5] [--mode hybrid|bm25|vector] [--json]",
        "Prints the k chunks of the index DB that best answer QUESTION, best first, with their\n"
        "file, lines, heading path and scores (docs/rag.md); with --questions, those of each\n"
        "line of FILE.",
        CLI_TABLES(table), NULL, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->db) return cli_fail("search: -d DB is required (see edgelm search --help)");
    if (!o->question == !o->questions)
        return cli_fail("search: one of -q QUESTION and --questions FILE is required (see edgelm search --help)");
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

/* elm_search_json: indented for -q, on one line for --questions. */
static int print_json(const opts *o, const char *question, elm_search_mode mode, double ms,
                      const elm_hit *h, int32_t n) {
    char *s = elm_search_json(question, mode, (int32_t)o->k, ms, h, n, !o->questions);
    if (!s) return cli_fail("search: out of memory building JSON");
    puts(s);
    free(s);
    return 0;
}

/* The questions: -q's, or the non-empty lines of --questions FILE (in *buf, freed by the caller).
 * Returns how many, 0 after printing an error. */
static int read_questions(const opts *o, char **buf, char ***out) {
    size_t len = 0;
    *buf = NULL;
    if (!o->questions) {
        if ((*out = malloc(sizeof **out))) (*out)[0] = (char *)o->question;
        else cli_fail("search: out of memory");
        return *out ? 1 : 0;
    }
    if (!(*buf = cli_read_text(o->questions, &len))) return 0;
    const int cap = (int)(len / 2 + 1);
    if (!(*out = malloc(sizeof **out * (size_t)cap))) {
        cli_fail("search: out of memory");
        return 0;
    }
    const int n = cli_split_lines(*buf, *out, cap);
    if (!n) cli_fail("%s: no questions (one per line)", o->questions);
    return n;
}

/* Searches each question in turn, printing its hits; adds the time in elm_retrieve to *ms and
 * the hits to *total. Returns the exit status. */
static int search_all(const opts *o, const cli_docs *d, char *const *questions, int n_questions,
                      double *ms, long *total) {
    for (int i = 0; i < n_questions; i++) {
        elm_hit *hits = NULL;
        int32_t n = 0;
        elm_error err;
        double t = elm_now_ms();
        if (elm_retrieve(d->ix, d->ctx, questions[i], d->mode, (int32_t)o->k, &hits, &n, &err)) {
            if (o->questions) return cli_fail("%s: question %d: %s", o->questions, i + 1, err.msg);
            return cli_fail("%s", err.msg);
        }
        t = elm_now_ms() - t;
        *ms += t;
        *total += n;
        if (o->questions && !o->json) printf("## question %d: %s\n\n", i + 1, questions[i]);
        const int rc = o->json ? print_json(o, questions[i], d->mode, t, hits, n)
                               : (print_text(d->mode, hits, n), 0);
        elm_hits_free(hits, n);
        if (rc) return rc;
    }
    return 0;
}

int cmd_search(int argc, char **argv) {
    opts o = {.k = 5};
    int rc = parse_args(argc, argv, &o);
    if (rc) return cli_parse_exit(rc);
    elm_search_mode mode = ELM_SEARCH_HYBRID;
    if (o.mode && !elm_search_mode_from_name(o.mode, &mode))
        return cli_fail("search: --mode: '%s' is not hybrid, bm25 or vector", o.mode);
    char *buf = NULL, **questions = NULL;
    const int n_questions = read_questions(&o, &buf, &questions);
    const double t0 = elm_now_ms();
    cli_docs d;
    const cli_docs_opts dopts = {.db = o.db, .mode = o.mode ? &mode : NULL, .model = o.model,
                                 .tokenizer = o.tokenizer, .n_ctx = o.n_ctx, .threads = o.threads};
    rc = 1;
    if (n_questions && cli_docs_open(&d, &dopts)) {
        const double load = elm_now_ms() - t0;
        double ms = 0;
        long total = 0;
        rc = search_all(&o, &d, questions, n_questions, &ms, &total);
        if (!rc && o.questions)
            fprintf(stderr, "%s search: %d questions, %ld results of k %ld | load %.1f ms | search %.1f "
                    "ms, %.3f ms a question\n", elm_search_mode_name(d.mode), n_questions, total, o.k,
                    load, ms, ms / n_questions);
        else if (!rc)
            fprintf(stderr, "%s search: %ld of k %ld | load %.1f ms | search %.1f ms\n",
                    elm_search_mode_name(d.mode), total, o.k, load, ms);
        cli_docs_close(&d);
    }
    free(questions);
    free(buf);
    return rc;
}
