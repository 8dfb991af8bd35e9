/* The app API's documents (edgelm.h: edgelm_index_*, edgelm_retrieve, edgelm_chat_docs): a
 * BM25-only index made over two small files, retrieval as `edgelm search --json` prints it, an
 * answer with stories260K whose citations are the sources retrieved, changes committed, and bad
 * input (missing file, garbage, another SQLite database, NULL arguments) refused with a status
 * and a message. */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "edgelm/edgelm.h"

#define F32 "stories260K/stories260K-f32.gguf"

static char dir[1024], a_txt[1100], b_txt[1100], db[1100], junk[1100], other_db[1100];

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    const bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static bool ends_with(const char *s, const char *tail) {
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* The "file" of results [i] of a search object, or of a citation array's [i]; "" when absent. */
static const char *file_at(const cJSON *arr, int i) {
    const cJSON *f = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, i), "file");
    return cJSON_IsString(f) ? f->valuestring : "";
}

/* Tokens and bytes streamed. */
typedef struct reply {
    int tokens;
    size_t bytes;
} reply;

static int collect(const char *piece, int32_t id, void *user) {
    reply *r = user;
    r->tokens += id >= 0;
    r->bytes += strlen(piece);
    return 0;
}

/* Creates the index over a.txt and b.txt, then searches it: the rare word's file first. */
static void make_and_search(void) {
    edgelm_index *ix = NULL;
    char err[512];
    CHECK(edgelm_index_create(db, NULL, 0, -1, &ix, err, sizeof err) == 0 && ix, "create: %s", err);
    if (!ix) return;
    const char *paths[] = {a_txt, b_txt};
    CHECK(edgelm_index_add(ix, paths, 2, err, sizeof err) == 0, "add: %s", err);
    CHECK(edgelm_index_commit(ix, err, sizeof err) == 0, "commit: %s", err);
    CHECK(access(db, F_OK) == 0, "no database at %s after commit", db);

    char *json = edgelm_retrieve(ix, "Where does the quokka sleep?", 2, NULL);
    CHECK(json != NULL, "retrieve: %s", edgelm_index_last_error(ix));
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    CHECK(o != NULL, "retrieve's JSON does not parse: %s", json ? json : "NULL");
    const cJSON *res = cJSON_GetObjectItem(o, "results"), *mode = cJSON_GetObjectItem(o, "mode");
    const cJSON *first = cJSON_GetArrayItem(res, 0);
    CHECK(cJSON_IsString(mode) && !strcmp(mode->valuestring, "bm25") &&
              cJSON_GetObjectItem(o, "k") && cJSON_GetObjectItem(o, "k")->valueint == 2,
          "mode and k: %s", json ? json : "NULL");
    const cJSON *rank = cJSON_GetObjectItem(first, "rank"), *text = cJSON_GetObjectItem(first, "text");
    CHECK(cJSON_GetArraySize(res) >= 1 && cJSON_GetArraySize(res) <= 2 &&
              ends_with(file_at(res, 0), "/b.txt") && cJSON_IsNumber(rank) && rank->valueint == 1 &&
              cJSON_IsString(text) && strstr(text->valuestring, "quokka") &&
              cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(first, "scores"), "bm25")),
          "top hit is not b.txt's chunk: %s", json ? json : "NULL");
    cJSON_Delete(o);
    edgelm_free(json);

    CHECK(!edgelm_retrieve(ix, "quokka", 2, "vector") && edgelm_index_last_error(ix)[0],
          "vector search of a BM25-only index");
    CHECK(!edgelm_retrieve(ix, "quokka", 2, "fuzzy") && strstr(edgelm_index_last_error(ix), "fuzzy"),
          "unknown mode: %s", edgelm_index_last_error(ix));
    CHECK(!edgelm_retrieve(ix, "quokka", 0, NULL) && edgelm_index_last_error(ix)[0], "k 0");
    json = edgelm_retrieve(ix, "quokka", 1, "bm25");
    CHECK(json && edgelm_index_last_error(ix)[0] == '\0', "error kept after a success: %s",
          edgelm_index_last_error(ix));
    edgelm_free(json);
    CHECK(edgelm_index_add(ix, paths, 2, err, sizeof err) != 0 && err[0],
          "add after commit (read-only) accepted");
    edgelm_index_free(ix);
}

/* An answer from the index with stories260K: streamed, cited, and the context back to its own
 * system prompt after edgelm_reset. */
static void answer(edgelm_model *m) {
    char err[512];
    edgelm_index *ix = NULL;
    CHECK(edgelm_index_open(db, NULL, 0, &ix, err, sizeof err) == 0 && ix, "open: %s", err);
    edgelm_params p = edgelm_default_params();
    p.n_ctx = 1024;
    p.n_threads = 2;
    p.temp = 0;
    p.chat_template = "llama2";
    p.system_prompt = "You tell stories.";
    edgelm_ctx *c = NULL, *fresh = NULL;
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == 0, "ctx: %s", err);
    CHECK(edgelm_ctx_new(m, &p, &fresh, err, sizeof err) == 0, "ctx: %s", err);
    if (!ix || !c || !fresh) goto done;

    CHECK(!strcmp(edgelm_last_citations(c), "[]"), "citations before any answer");
    reply r = {0};
    CHECK(edgelm_chat_docs(c, ix, "Where does the quokka sleep?", 2, 8, collect, &r) == 0,
          "chat_docs: %s", edgelm_last_error(c));
    edgelm_stats s = edgelm_get_stats(c);
    CHECK(r.tokens > 0 && s.tokens == r.tokens && s.prompt_tokens > 40 &&
              strlen(edgelm_last_reply(c)) == r.bytes,
          "reply: %d tokens streamed, stats %d, prompt %d", r.tokens, s.tokens, s.prompt_tokens);
    cJSON *cit = cJSON_Parse(edgelm_last_citations(c));
    CHECK(cJSON_IsArray(cit) && cJSON_GetArraySize(cit) >= 1 && cJSON_GetArraySize(cit) <= 2 &&
              ends_with(file_at(cit, 0), "/b.txt") &&
              cJSON_GetObjectItem(cJSON_GetArrayItem(cit, 0), "index")->valueint == 1,
          "citations: %s", edgelm_last_citations(c));
    for (int i = 0; i < cJSON_GetArraySize(cit); i++)
        CHECK(ends_with(file_at(cit, i), "/a.txt") || ends_with(file_at(cit, i), "/b.txt"),
              "citation %d: '%s'", i, file_at(cit, i));
    cJSON_Delete(cit);

    CHECK(edgelm_chat(c, "Tell me more.", 4, NULL, NULL) == 0, "follow-up: %s",
          edgelm_last_error(c));
    const int32_t follow = edgelm_get_stats(c).prompt_tokens;
    edgelm_reset(c);
    CHECK(!strcmp(edgelm_last_citations(c), "[]"), "citations after reset: %s",
          edgelm_last_citations(c));
    CHECK(edgelm_chat(c, "Hi.", 1, NULL, NULL) == 0 && edgelm_chat(fresh, "Hi.", 1, NULL, NULL) == 0,
          "chat after reset: %s", edgelm_last_error(c));
    CHECK(edgelm_get_stats(c).prompt_tokens == edgelm_get_stats(fresh).prompt_tokens,
          "after reset the prompt has %d tokens, a fresh context's %d (follow-up: %d)",
          edgelm_get_stats(c).prompt_tokens, edgelm_get_stats(fresh).prompt_tokens, follow);

    /* a reply budget that leaves no room for the prompt, and bad arguments */
    CHECK(edgelm_chat_docs(c, ix, "Where does the quokka sleep?", 2, 1000, NULL, NULL) ==
                  ELM_ERR_ARG && strstr(edgelm_last_error(c), "the prompt has") &&
              !strcmp(edgelm_last_citations(c), "[]"),
          "prompt over the context: %s", edgelm_last_error(c));
    CHECK(edgelm_chat_docs(c, NULL, "q", 2, 8, NULL, NULL) == ELM_ERR_ARG &&
              edgelm_last_error(c)[0], "NULL index");
    CHECK(edgelm_chat_docs(c, ix, NULL, 2, 8, NULL, NULL) == ELM_ERR_ARG, "NULL question");
    CHECK(edgelm_chat_docs(c, ix, "quokka", 0, 8, NULL, NULL) == ELM_ERR_ARG &&
              edgelm_last_error(c)[0], "k 0");
    CHECK(edgelm_chat_docs(c, ix, "quokka", 2, 0, NULL, NULL) == ELM_ERR_ARG, "n_predict 0");
    CHECK(edgelm_chat_docs(NULL, ix, "quokka", 2, 8, NULL, NULL) == ELM_ERR_ARG, "NULL context");
done:
    edgelm_ctx_free(fresh);
    edgelm_ctx_free(c);
    edgelm_index_free(ix);
}

/* Removing b.txt and committing: the rare word then matches nothing. */
static void change(void) {
    char err[512];
    edgelm_index *ix = NULL;
    CHECK(edgelm_index_open(db, NULL, 1, &ix, err, sizeof err) == 0, "open writable: %s", err);
    if (!ix) return;
    CHECK(edgelm_index_remove(ix, "/nonexistent/none.txt", err, sizeof err) == ELM_ERR_ARG &&
              strstr(err, "none.txt") && !strcmp(err, edgelm_index_last_error(ix)),
          "remove of a file not indexed: %s", err);
    CHECK(edgelm_index_remove(ix, b_txt, err, sizeof err) == 0, "remove: %s", err);
    CHECK(edgelm_index_commit(ix, err, sizeof err) == 0, "commit: %s", err);
    char *json = edgelm_retrieve(ix, "quokka", 2, NULL);
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    CHECK(o && cJSON_GetArraySize(cJSON_GetObjectItem(o, "results")) == 0,
          "quokka after removing b.txt: %s", json ? json : edgelm_index_last_error(ix));
    cJSON_Delete(o);
    edgelm_free(json);
    edgelm_index_free(ix);
}

static void bad_input(edgelm_model *m) {
    char err[512];
    edgelm_index *ix = (edgelm_index *)err; /* must come back NULL */
    int st = edgelm_index_open("/nonexistent/docs.db", NULL, 0, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_IO && !ix && strstr(err, "/nonexistent/docs.db"), "missing: %d %s", st, err);
    st = edgelm_index_open(junk, NULL, 0, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_FORMAT && !ix && strstr(err, junk), "garbage: %d %s", st, err);
    st = edgelm_index_open(other_db, NULL, 0, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_FORMAT && !ix && strstr(err, other_db), "other SQLite: %d %s", st, err);
    st = edgelm_index_create(junk, NULL, 0, -1, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_FORMAT && !ix && strstr(err, junk), "create over garbage: %d %s", st, err);
    st = edgelm_index_create(db, NULL, 4, -1, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_ARG && !ix && err[0], "chunk of 4: %d %s", st, err);
    st = edgelm_index_open(NULL, NULL, 0, &ix, err, sizeof err);
    CHECK(st == ELM_ERR_ARG && !ix && strstr(err, "path"), "NULL path: %d %s", st, err);
    CHECK(edgelm_index_open(db, NULL, 0, NULL, err, sizeof err) == ELM_ERR_ARG && err[0], "NULL out");
    CHECK(edgelm_index_create(NULL, NULL, 0, -1, &ix, NULL, 0) == ELM_ERR_ARG && !ix,
          "NULL path, no errbuf");
    if (m) {
        st = edgelm_index_open(db, m, 0, &ix, err, sizeof err);
        CHECK(st == ELM_ERR_ARG && !ix && err[0], "a model for a BM25-only index: %d %s", st, err);
    }
    CHECK(edgelm_index_add(NULL, NULL, 0, err, sizeof err) == ELM_ERR_ARG && err[0], "add NULL");
    CHECK(edgelm_index_remove(NULL, "x", NULL, 0) == ELM_ERR_ARG, "remove NULL");
    CHECK(edgelm_index_commit(NULL, NULL, 0) == ELM_ERR_ARG, "commit NULL");
    CHECK(!edgelm_retrieve(NULL, "q", 1, NULL) && edgelm_index_last_error(NULL)[0], "retrieve NULL");
    edgelm_index_free(NULL);

    if (edgelm_index_open(db, NULL, 1, &ix, err, sizeof err)) return;
    CHECK(edgelm_index_add(ix, NULL, 1, err, sizeof err) == ELM_ERR_ARG && err[0], "NULL paths");
    CHECK(edgelm_index_remove(ix, NULL, err, sizeof err) == ELM_ERR_ARG && err[0], "NULL path");
    const char *missing[] = {"/nonexistent/dir/none.txt"};
    CHECK(edgelm_index_add(ix, missing, 1, err, sizeof err) == ELM_ERR_IO && strstr(err, "none.txt"),
          "add of a missing file: %s", err);
    CHECK(!edgelm_retrieve(ix, NULL, 1, NULL) && edgelm_index_last_error(ix)[0], "NULL question");
    edgelm_index_free(ix); /* uncommitted: dropped */
}

/* An index with vectors whose recorded embedding model is gone: opened without a model, one line
 * naming the index and the model (the CLI's words, elm_index_recorded_model). */
static void recorded_model_gone(void) {
    char gone[1100], vdb[1100], err[512];
    snprintf(gone, sizeof gone, "%s/gone.gguf", dir);
    snprintf(vdb, sizeof vdb, "%s/vectors.db", dir);
    FILE *in = fopen(fixture(F32), "rb"), *out = fopen(gone, "wb");
    char buf[65536];
    size_t n;
    bool copied = in && out;
    while (copied && (n = fread(buf, 1, sizeof buf, in)) > 0) copied = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out)) copied = false;
    CHECK(copied, "copy the model to %s", gone);
    edgelm_model *gm = NULL;
    edgelm_index *ix = NULL;
    const char *files[] = {a_txt};
    const bool made = copied && edgelm_model_load(gone, &gm, err, sizeof err) == 0 &&
                      edgelm_index_create(vdb, gm, 0, -1, &ix, err, sizeof err) == 0 &&
                      edgelm_index_add(ix, files, 1, err, sizeof err) == 0 &&
                      edgelm_index_commit(ix, err, sizeof err) == 0;
    CHECK(made, "an index with vectors: %s", err);
    edgelm_index_free(ix);
    edgelm_model_free(gm);
    unlink(gone);
    ix = NULL;
    if (made) {
        const int st = edgelm_index_open(vdb, NULL, 0, &ix, err, sizeof err);
        CHECK(st == ELM_ERR_IO && !ix && strstr(err, "vectors.db") && strstr(err, "gone.gguf") &&
                  strstr(err, "recorded when it was indexed"), "model gone: %d %s", st, err);
        edgelm_index_free(ix);
    }
    unlink(vdb);
}

static bool other_sqlite(const char *path) {
    sqlite3 *s = NULL;
    bool ok = sqlite3_open(path, &s) == SQLITE_OK &&
              sqlite3_exec(s, "CREATE TABLE notes(id INTEGER, body TEXT); INSERT INTO notes "
                              "VALUES (1, 'hello');", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(s);
    return ok;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    char *tmp = check_tmp_dir();
    if (!tmp) return check_skip("cannot create a temporary folder");
    snprintf(dir, sizeof dir, "%s", tmp);
    free(tmp);
    snprintf(a_txt, sizeof a_txt, "%s/a.txt", dir);
    snprintf(b_txt, sizeof b_txt, "%s/b.txt", dir);
    snprintf(db, sizeof db, "%s/docs.db", dir);
    snprintf(junk, sizeof junk, "%s/junk.db", dir);
    snprintf(other_db, sizeof other_db, "%s/other.db", dir);
    const bool files =
        write_file(a_txt, "# Pets\n\nThe cat sleeps on the warm mat by the door.\n\nThe dog "
                          "runs in the park every morning and barks at birds.\n") &&
        write_file(b_txt, "# Island\n\nThe quokka sleeps under a shady bush on Rottnest "
                          "Island.\n\nIt smiles at the visitors who walk by.\n") &&
        write_file(junk, "this is not a database, only some text that is long enough to be read "
                         "as a header and refused.\n") &&
        other_sqlite(other_db);
    CHECK(files, "cannot write the test files under %s", dir);
    char err[512];
    edgelm_model *m = NULL;
    CHECK(edgelm_model_load(fixture(F32), &m, err, sizeof err) == 0, "load: %s", err);
    if (files) {
        make_and_search();
        if (m) answer(m);
        change();
        bad_input(m);
        recorded_model_gone();
    }
    edgelm_model_free(m);
    const char *names[] = {a_txt, b_txt, db, junk, other_db};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(names[i]);
    rmdir(dir);
    return check_done();
}
