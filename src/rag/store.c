/* The index database (include/edgelm/rag.h): its schema, creating it under a temporary name,
 * opening and validating an existing one (an edgelm index of this schema version, not any SQLite
 * file), the writing transaction and its commit, and the embedding model's identity. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "edgelm/embed.h"
#include "edgelm/model.h"
#include "rag/index_db.h"

#define FORMAT_NAME "edgelm-docs"

static const char *const schema =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,"
    " hash TEXT NOT NULL);"
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL REFERENCES files(id),"
    " seq INTEGER NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL,"
    " heading TEXT NOT NULL, text TEXT NOT NULL, n_tokens INTEGER NOT NULL, vector BLOB);"
    "CREATE INDEX chunks_file ON chunks(file_id);"
    /* external content: the text is stored once, in chunks; the triggers keep FTS5 in step */
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, heading, content='chunks',"
    " content_rowid='id', tokenize='porter unicode61');"
    "CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN"
    " INSERT INTO chunks_fts(rowid, text, heading) VALUES (new.id, new.text, new.heading); END;"
    "CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN"
    " INSERT INTO chunks_fts(chunks_fts, rowid, text, heading)"
    " VALUES ('delete', old.id, old.text, old.heading); END;";

elm_status elm_ix_fail(const elm_index *ix, elm_status code, const char *what, elm_error *err) {
    return elm_errorf(err, code, "%s: %s: %s", ix->path, what,
                      ix->db ? sqlite3_errmsg(ix->db) : "out of memory");
}

elm_status elm_ix_exec(elm_index *ix, const char *sql, const char *what, elm_error *err) {
    return sqlite3_exec(ix->db, sql, NULL, NULL, NULL) == SQLITE_OK
               ? ELM_OK : elm_ix_fail(ix, ELM_ERR_IO, what, err);
}

elm_status elm_ix_prepare(elm_index *ix, const char *sql, sqlite3_stmt **st, elm_error *err) {
    return sqlite3_prepare_v2(ix->db, sql, -1, st, NULL) == SQLITE_OK
               ? ELM_OK : elm_ix_fail(ix, ELM_ERR_IO, "reading the index", err);
}

bool elm_ix_abs_path(const char *path, char *out, size_t cap) {
    char joined[4096];
    if (path[0] == '/') {
        if (snprintf(joined, sizeof joined, "%s", path) >= (int)sizeof joined) return false;
    } else {
        char cwd[2048];
        if (!getcwd(cwd, sizeof cwd)) return false;
        if (snprintf(joined, sizeof joined, "%s/%s", cwd, path) >= (int)sizeof joined) return false;
    }
    /* fold the components onto out: "." dropped, ".." pops one */
    size_t n = 0;
    for (const char *p = joined; *p;) {
        while (*p == '/') p++;
        const size_t len = strcspn(p, "/");
        if (len == 0) break;
        if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/') n--;
            if (n > 0) n--;
        } else if (!(len == 1 && p[0] == '.')) {
            if (n + 1 + len + 1 > cap) return false;
            out[n++] = '/';
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
    }
    if (n == 0) out[n++] = '/';
    out[n] = '\0';
    return true;
}

/* meta[key] into out [cap]; false when absent. */
static bool meta_get(elm_index *ix, const char *key, char *out, size_t cap) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ix->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL)) return false;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    const bool found = sqlite3_step(st) == SQLITE_ROW;
    if (found) snprintf(out, cap, "%s", elm_ix_text(st, 0));
    sqlite3_finalize(st);
    return found;
}

static elm_status meta_put(elm_index *ix, const char *key, const char *value, elm_error *err) {
    sqlite3_stmt *st;
    elm_status s = elm_ix_prepare(ix, "INSERT INTO meta(key, value) VALUES (?, ?)", &st, err);
    if (s) return s;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    s = sqlite3_step(st) == SQLITE_DONE ? ELM_OK : elm_ix_fail(ix, ELM_ERR_IO, "writing meta", err);
    sqlite3_finalize(st);
    return s;
}

/* Reads and checks meta: format, schema version, chunking and model. */
static elm_status read_meta(elm_index *ix, elm_error *err) {
    char v[512];
    sqlite3_stmt *st;
    /* the first read of the file: SQLite says here what it makes of it (not a database, corrupt) */
    if (sqlite3_prepare_v2(ix->db, "SELECT value FROM meta WHERE key = 'format'", -1, &st, NULL)) {
        const int code = sqlite3_errcode(ix->db);
        if (code == SQLITE_ERROR) /* no table meta: a database of something else */
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm index (a SQLite database "
                              "without its meta table)", ix->path);
        return elm_ix_fail(ix, code == SQLITE_BUSY ? ELM_ERR_IO : ELM_ERR_FORMAT,
                           "not a readable edgelm index", err);
    }
    const int rc = sqlite3_step(st);
    const bool ours = rc == SQLITE_ROW && !strcmp(elm_ix_text(st, 0), FORMAT_NAME);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return elm_ix_fail(ix, ELM_ERR_FORMAT, "reading meta", err);
    if (!ours) return elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm index (meta has no format '"
                                 FORMAT_NAME "')", ix->path);
    if (!meta_get(ix, "schema_version", v, sizeof v)) strcpy(v, "missing");
    if (atoi(v) != ELM_INDEX_SCHEMA_VERSION)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: index schema version %s; this edgelm "
                          "reads version %d (index the documents again)", ix->path, v,
                          ELM_INDEX_SCHEMA_VERSION);
    char tok[32] = "", ovl[32] = "";
    meta_get(ix, "chunk_tokens", tok, sizeof tok);
    meta_get(ix, "chunk_overlap", ovl, sizeof ovl);
    ix->max_tokens = atoi(tok);
    ix->overlap_tokens = atoi(ovl);
    if (elm_chunk_check(ix->max_tokens, ix->overlap_tokens, err))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: meta chunk_tokens '%s', chunk_overlap '%s': %s",
                          ix->path, tok, ovl, err->msg);
    if (meta_get(ix, "embed_dim", v, sizeof v)) {
        ix->dim = atoi(v);
        meta_get(ix, "embed_model", ix->model_name, sizeof ix->model_name);
        meta_get(ix, "embed_model_path", ix->model_path, sizeof ix->model_path);
        ix->fingerprint = meta_get(ix, "embed_fingerprint", v, sizeof v) ? strtoull(v, NULL, 16) : 0;
        if (ix->dim <= 0 || !ix->model_path[0])
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: meta embed_dim %d or embed_model_path "
                              "missing", ix->path, ix->dim);
    }
    return ELM_OK;
}

static elm_index *index_new(const char *path, elm_error *err) {
    elm_index *ix = calloc(1, sizeof *ix);
    if (!ix) {
        elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    ix->n_vec = -1;
    snprintf(ix->path, sizeof ix->path, "%s", path);
    return ix;
}

/* Opens ix->path (or the name given) with flags and sets the waits and pragmas every use wants. */
static elm_status connect(elm_index *ix, const char *file, int flags, elm_error *err) {
    if (sqlite3_open_v2(file, &ix->db, flags, NULL) != SQLITE_OK)
        return elm_ix_fail(ix, ELM_ERR_IO, "cannot open", err);
    sqlite3_busy_timeout(ix->db, 5000);
    return ELM_OK;
}

elm_status elm_index_open(const char *path, bool writable, elm_index **out, elm_error *err) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return elm_errorf(err, ELM_ERR_IO, "%s: not a file", path);
    elm_index *ix = index_new(path, err);
    if (!ix) return ELM_ERR_NOMEM;
    /* read-write where the file allows it, even to search: SQLite rolls back the journal of an
     * interrupted run only on a connection that may write */
    const bool rw = writable || access(path, W_OK) == 0;
    elm_status s = connect(ix, path, rw ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY, err);
    if (!s) s = read_meta(ix, err);
    if (!s && !writable) s = elm_ix_exec(ix, "PRAGMA query_only=1", "opening", err);
    if (!s && writable && !(s = elm_ix_exec(ix, "BEGIN IMMEDIATE", "cannot lock for writing", err)))
        ix->in_tx = true;
    if (s) {
        elm_index_close(ix);
        return s;
    }
    *out = ix;
    return ELM_OK;
}

elm_status elm_index_create(const char *path, const elm_model *m, int32_t max_tokens,
                            int32_t overlap_tokens, elm_index **out, elm_error *err) {
    *out = NULL;
    elm_status cs = elm_chunk_check(max_tokens, overlap_tokens, err);
    if (cs) return elm_errorf(err, cs, "%s: %s", path, err->msg);
    if (access(path, F_OK) == 0) { /* replaced at commit, but only if it is an index */
        elm_index *old;
        elm_status s = elm_index_open(path, false, &old, err);
        elm_index_close(old);
        if (s) {
            const size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof err->msg - n, " (not replaced)");
            return s;
        }
    }
    elm_index *ix = index_new(path, err);
    if (!ix) return ELM_ERR_NOMEM;
    snprintf(ix->tmp, sizeof ix->tmp, "%s.tmp-%ld", path, (long)getpid());
    unlink(ix->tmp);
    ix->max_tokens = max_tokens;
    ix->overlap_tokens = overlap_tokens;
    char tok[16], ovl[16], dim[16], fp[32];
    snprintf(tok, sizeof tok, "%d", max_tokens);
    snprintf(ovl, sizeof ovl, "%d", overlap_tokens);
    elm_status s = connect(ix, ix->tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err);
    /* the file is thrown away on failure: no journal on disk needed */
    if (!s) s = elm_ix_exec(ix, "PRAGMA journal_mode=MEMORY", "setting the journal", err);
    if (!s && !(s = elm_ix_exec(ix, "BEGIN", "beginning", err))) ix->in_tx = true;
    if (!s) s = elm_ix_exec(ix, schema, "creating the schema", err);
    if (!s) s = meta_put(ix, "format", FORMAT_NAME, err);
    char version[16];
    snprintf(version, sizeof version, "%d", ELM_INDEX_SCHEMA_VERSION);
    if (!s) s = meta_put(ix, "schema_version", version, err);
    if (!s) s = meta_put(ix, "chunk_tokens", tok, err);
    if (!s) s = meta_put(ix, "chunk_overlap", ovl, err);
    if (!s) s = meta_put(ix, "chunk_counter", m ? "tokenizer" : "words", err);
    if (!s && m) {
        ix->dim = elm_embed_dim(m);
        ix->fingerprint = elm_model_fingerprint(m);
        snprintf(ix->model_name, sizeof ix->model_name, "%s", m->name);
        if (!elm_ix_abs_path(m->path, ix->model_path, sizeof ix->model_path))
            snprintf(ix->model_path, sizeof ix->model_path, "%s", m->path);
        snprintf(dim, sizeof dim, "%d", ix->dim);
        snprintf(fp, sizeof fp, "%016" PRIx64, ix->fingerprint);
        s = meta_put(ix, "embed_model", ix->model_name, err);
        if (!s) s = meta_put(ix, "embed_model_path", ix->model_path, err);
        if (!s) s = meta_put(ix, "embed_dim", dim, err);
        if (!s) s = meta_put(ix, "embed_fingerprint", fp, err);
    }
    if (s) {
        elm_index_close(ix);
        return s;
    }
    *out = ix;
    return ELM_OK;
}

elm_status elm_index_commit(elm_index *ix, elm_error *err) {
    if (!ix->in_tx) return ELM_OK;
    elm_status s = elm_ix_exec(ix, "COMMIT", "committing", err);
    if (s) return s;
    ix->in_tx = false;
    if (!ix->tmp[0]) return ELM_OK;
    sqlite3_close(ix->db);
    ix->db = NULL;
    if (rename(ix->tmp, ix->path) != 0) {
        s = elm_errorf(err, ELM_ERR_IO, "%s: renaming %s over it: %s", ix->path, ix->tmp,
                       strerror(errno));
        unlink(ix->tmp);
        ix->tmp[0] = '\0';
        return s;
    }
    ix->tmp[0] = '\0';
    return connect(ix, ix->path, SQLITE_OPEN_READONLY, err);
}

void elm_index_close(elm_index *ix) {
    if (!ix) return;
    if (ix->in_tx) sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(ix->db);
    if (ix->tmp[0]) unlink(ix->tmp);
    elm_ix_drop_vectors(ix);
    free(ix);
}

const char *elm_index_model_path(const elm_index *ix) { return ix->dim ? ix->model_path : NULL; }
const char *elm_index_model_name(const elm_index *ix) { return ix->dim ? ix->model_name : NULL; }

elm_status elm_index_recorded_model(const elm_index *ix, const char *advice, const char **path,
                                    elm_error *err) {
    *path = elm_index_model_path(ix);
    if (!*path || elm_file_exists(*path)) return ELM_OK;
    return elm_errorf(err, ELM_ERR_IO, "%s: its embedding model %s (recorded when it was indexed) "
                      "is missing: %s", ix->path, *path, advice);
}
int32_t elm_index_dim(const elm_index *ix) { return ix->dim; }
int32_t elm_index_chunk_tokens(const elm_index *ix) { return ix->max_tokens; }

int32_t elm_index_embed_n_ctx(const elm_index *ix, const elm_model *m) {
    int32_t n = ix->max_tokens + ix->max_tokens / 2 + 8;
    if (m->hp.n_ctx_train > 0 && n > m->hp.n_ctx_train) n = m->hp.n_ctx_train;
    return n;
}

elm_status elm_index_check_model(const elm_index *ix, const elm_model *m, elm_error *err) {
    if (!ix->dim)
        return elm_errorf(err, ELM_ERR_ARG, "%s: built without an embedding model (BM25 only): "
                          "%s cannot search it by vectors", ix->path, m->path);
    const int32_t dim = elm_embed_dim(m);
    if (dim != ix->dim)
        return elm_errorf(err, ELM_ERR_ARG, "%s: embeddings of width %d (%s), but %s gives %d",
                          ix->path, ix->dim, ix->model_name, m->path, dim);
    if (elm_model_fingerprint(m) != ix->fingerprint)
        return elm_errorf(err, ELM_ERR_ARG, "%s: built with the embedding model %s (%s), not %s "
                          "(other weights)", ix->path, ix->model_name, ix->model_path, m->path);
    return ELM_OK;
}

elm_status elm_index_count(elm_index *ix, int64_t *files, int64_t *chunks, elm_error *err) {
    sqlite3_stmt *st;
    elm_status s = elm_ix_prepare(ix, "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)",
                                  &st, err);
    if (s) return s;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *files = sqlite3_column_int64(st, 0);
        *chunks = sqlite3_column_int64(st, 1);
    } else {
        s = elm_ix_fail(ix, ELM_ERR_FORMAT, "counting chunks", err);
    }
    sqlite3_finalize(st);
    return s;
}
