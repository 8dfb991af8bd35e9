/* edgelm index: text and Markdown files into a document index (edgelm/rag.h) that `edgelm search`
 * reads: a new index from PATHs, --add PATHs to an existing one (changed files re-chunked,
 * unchanged ones left), --remove PATHs from it. With -m, chunks are counted in the embedding
 * model's tokens and stored with their embeddings; without, counted in words, BM25 only. A
 * failed or interrupted run leaves the database as it was. Progress and one summary line on
 * stderr, --json a summary on stdout. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "edgelm/rag.h"
#include "opts.h"

typedef struct opts {
    const char *model, *db, *tokenizer;
    bool add, remove, json;
    long chunk_tokens, overlap, threads;
    cli_args paths;
} opts;

static int parse_args(int argc, char **argv, opts *o) {
    const cli_opt table[] = {
        {"-m, --model", "PATH", CLI_TEXT, &o->model, 0, 0, "the embedding model (GGUF, HF folder); without it, BM25 only\n(with --add: the index's model, from the path it records)", 0},
        {"-o, --output", "DB", CLI_TEXT, &o->db, 0, 0, "the index (an SQLite file): written new, or changed by\n--add / --remove", 0},
        {"--add", NULL, CLI_FLAG, &o->add, 0, 0, "add PATHs to the index DB: new and changed files (re)chunked,\nunchanged ones left", 0},
        {"--remove", NULL, CLI_FLAG, &o->remove, 0, 0, "remove the files at PATHs (or under them) from the index", 0},
        {"--chunk-tokens", "N", CLI_INT, &o->chunk_tokens, 8, 8192, "most tokens per chunk (default 256; words without -m)", 0},
        {"--overlap", "N", CLI_INT, &o->overlap, 0, 4096, "tokens a chunk repeats from the one before it (default 32)", 0},
        CLI_OPT_THREADS(&o->threads),
        CLI_OPT_JSON(&o->json, "print a summary: {\"db\", \"files_indexed\", \"chunks_added\", ...}"),
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {0}};
    const cli_spec spec = {
        "index", "[-m EMBED_MODEL] -o DB PATH...  |  -o DB --add PATH...  |  -o DB --remove PATH...",
        "Indexes text and Markdown files (folders walked; files that are not UTF-8 text skipped\n"
        "with a warning) for edgelm search: cut into chunks at headings and paragraphs, stored\n"
        "with their file, lines and heading path, a full-text (BM25) index and, with -m, their\n"
        "embeddings, in one SQLite file (docs/rag.md).",
        CLI_TABLES(table), NULL, NULL, &o->paths};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->db) return cli_fail("index: -o DB is required (see edgelm index --help)");
    if (o->paths.n == 0) return cli_fail("index: no PATH to index (see edgelm index --help)");
    if (o->add && o->remove) return cli_fail("index: --add and --remove exclude each other");
    if ((o->add || o->remove) && (o->chunk_tokens || o->overlap >= 0))
        return cli_fail("index: --chunk-tokens and --overlap are the index's, set when it is made");
    if (o->remove && o->model) return cli_fail("index: --remove takes no model");
    return 0;
}

static void progress(void *user, elm_index_event ev, const char *file, const char *detail,
                     int64_t done, int64_t total) {
    (void)user;
    if (ev == ELM_INDEX_FILE_SKIPPED) fprintf(stderr, "edgelm: warning: %s: %s, skipped\n", file, detail);
    cli_progress((long)done, (long)total, "indexing: %lld/%lld files", (long long)done, (long long)total);
}

/* The model to embed with: -m, or (adding to an index that has one) the index's. */
static elm_model *embedding_model(const opts *o, const elm_index *ix) {
    const char *path = o->model;
    elm_error err;
    if (!path && ix && elm_index_recorded_model(ix, "pass the same model with -m", &path, &err)) {
        cli_fail("%s", err.msg);
        return NULL;
    }
    return path ? cli_load_model_to_run(path, o->tokenizer, false) : NULL;
}

/* A context that holds one of ix's chunks (elm_index_embed_n_ctx). */
static elm_context *chunk_context(const elm_model *m, const opts *o, const elm_index *ix) {
    const int32_t n = elm_index_embed_n_ctx(ix, m);
    const elm_context_params cp = {.n_ctx = n, .n_batch = n, .n_threads = (int32_t)o->threads};
    elm_context *c = NULL;
    elm_error err;
    if (elm_context_new(m, &cp, &c, &err)) cli_fail("%s", err.msg);
    return c;
}

static int summary(const opts *o, elm_index *ix, const elm_index_stats *s, double ms) {
    int64_t files = 0, chunks = 0;
    elm_error err;
    if (elm_index_count(ix, &files, &chunks, &err)) return cli_fail("%s", err.msg);
    fprintf(stderr, "%s: %lld files indexed, %lld unchanged, %lld skipped, %lld removed | %lld chunks "
            "added, %lld removed | %lld files, %lld chunks in the index | %.0f ms\n", o->db,
            (long long)s->files_indexed, (long long)s->files_unchanged, (long long)s->files_skipped,
            (long long)s->files_removed, (long long)s->chunks_added, (long long)s->chunks_removed,
            (long long)files, (long long)chunks, ms);
    if (!o->json) return 0;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "db", o->db);
    const cli_json_num nums[] = {
        {"files_indexed", (double)s->files_indexed}, {"files_unchanged", (double)s->files_unchanged},
        {"files_skipped", (double)s->files_skipped}, {"files_removed", (double)s->files_removed},
        {"chunks_added", (double)s->chunks_added}, {"chunks_removed", (double)s->chunks_removed},
        {"files", (double)files}, {"chunks", (double)chunks}, {"dim", elm_index_dim(ix)},
        {"ms", ms}};
    cli_json_numbers(root, nums, sizeof nums / sizeof nums[0]);
    const char *model = elm_index_model_name(ix);
    cJSON_AddItemToObject(root, "model", model ? cJSON_CreateString(model) : cJSON_CreateNull());
    return cli_print_json(root, "index");
}

int cmd_index(int argc, char **argv) {
    opts o = {.overlap = -1};
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) return cli_fail("index: out of memory");
    o.paths.v = paths;
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free(paths);
        return cli_parse_exit(rc);
    }
    const double t0 = elm_now_ms();
    elm_error err;
    elm_index *ix = NULL;
    elm_model *m = NULL;
    elm_context *c = NULL;
    elm_index_stats stats = {0};
    elm_status st;
    rc = 1;
    if (o.add || o.remove) {
        if ((st = elm_index_open(o.db, true, &ix, &err))) goto fail;
    } else {
        if (o.model && !(m = embedding_model(&o, NULL))) goto done;
        if ((st = elm_index_create(o.db, m, o.chunk_tokens ? (int32_t)o.chunk_tokens : ELM_INDEX_CHUNK_TOKENS,
                                   o.overlap >= 0 ? (int32_t)o.overlap : ELM_INDEX_OVERLAP, &ix, &err)))
            goto fail;
    }
    if (o.add && (o.model || elm_index_dim(ix)) && !(m = embedding_model(&o, ix))) goto done;
    if (m && !(c = chunk_context(m, &o, ix))) goto done;
    if (o.remove)
        for (int i = 0; i < o.paths.n; i++)
            if ((st = elm_index_remove(ix, o.paths.v[i], &stats, &err))) goto fail;
    if (!o.remove && (st = elm_index_add(ix, c, o.paths.v, o.paths.n, progress, NULL, &stats, &err)))
        goto fail;
    if ((st = elm_index_commit(ix, &err))) goto fail;
    rc = summary(&o, ix, &stats, elm_now_ms() - t0);
    goto done;
fail:
    cli_fail("%s", err.msg);
done:
    elm_context_free(c);
    elm_model_free(m);
    elm_index_close(ix);
    free(paths);
    return rc;
}
