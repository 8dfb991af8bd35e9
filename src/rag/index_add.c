/* Writing documents into an index (include/edgelm/rag.h: elm_index_add, elm_index_remove): the
 * files under the given paths, each read whole, checked to be UTF-8 text, compared with what is
 * stored by its hash, chunked (elm_chunk_text), embedded (elm_embed) and stored with its chunks,
 * all inside the index's one transaction. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "core/utf8.h"
#include "edgelm/embed.h"
#include "rag/index_db.h"

/* Files bigger than this are refused as documents: a text file this big is a data dump. */
#define MAX_DOC_BYTES (64u << 20)

typedef struct file_list {
    char **v;
    int32_t n, cap;
} file_list;

static void files_free(file_list *l) {
    for (int32_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

/* Adds path to l. */
static elm_status list_push(file_list *l, const char *path, elm_error *err) {
    if (l->n == l->cap) {
        const int32_t cap = l->cap ? l->cap * 2 : 64;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory listing files", path);
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(path))) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    l->n++;
    return ELM_OK;
}

/* Adds file path to l; an unreadable file fails here, before any file is indexed. */
static elm_status push_file(file_list *l, const char *path, elm_error *err) {
    if (access(path, R_OK) != 0)
        return elm_errorf(err, ELM_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    return list_push(l, path, err);
}

/* The regular files under folder dir, sorted by name, into l: entries starting with '.' and
 * links to folders are left out (hidden files, version control, cycles). */
static elm_status walk(const char *dir, file_list *l, elm_error *err) {
    struct dirent **names;
    const int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) return elm_errorf(err, ELM_ERR_IO, "%s: cannot read folder: %s", dir, strerror(errno));
    elm_status s = ELM_OK;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat ls, sb;
        const char *name = names[i]->d_name;
        if (!s && name[0] != '.' && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
            lstat(path, &ls) == 0 && stat(path, &sb) == 0) {
            if (S_ISDIR(sb.st_mode) && !S_ISLNK(ls.st_mode)) s = walk(path, l, err);
            else if (S_ISREG(sb.st_mode)) s = push_file(l, path, err);
        }
        free(names[i]);
    }
    free(names);
    return s;
}

/* Why text [len] is not UTF-8 text, or NULL when it is. */
static const char *not_text(const char *text, size_t len) {
    if (memchr(text, 0, len)) return "holds NUL bytes (binary)";
    return elm_utf8_valid(text, len) ? NULL : "not UTF-8 text";
}

/* The id and hash of file path in ix, or id 0. */
static elm_status stored_file(elm_index *ix, const char *path, int64_t *id, char *hash,
                              elm_error *err) {
    sqlite3_stmt *st;
    elm_status s = elm_ix_prepare(ix, "SELECT id, hash FROM files WHERE path = ?", &st, err);
    if (s) return s;
    sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
    *id = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        snprintf(hash, 32, "%s", elm_ix_text(st, 1));
    }
    sqlite3_finalize(st);
    return ELM_OK;
}

/* Deletes the files whose path is path or starts with prefix (NULL: none), and their chunks;
 * adds their numbers to *files and *chunks. */
static elm_status delete_files(elm_index *ix, const char *path, const char *prefix, int64_t *files,
                               int64_t *chunks, elm_error *err) {
    static const char *const sql[] = {
        "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE path = ?1 OR"
        " (?2 IS NOT NULL AND substr(path, 1, length(?2)) = ?2))",
        "DELETE FROM files WHERE path = ?1 OR (?2 IS NOT NULL AND substr(path, 1, length(?2)) = ?2)"};
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        elm_status s = elm_ix_prepare(ix, sql[i], &st, err);
        if (s) return s;
        sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
        if (prefix) sqlite3_bind_text(st, 2, prefix, -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 2);
        const bool done = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
        if (!done) return elm_ix_fail(ix, ELM_ERR_IO, "removing chunks", err);
        *(i ? files : chunks) += sqlite3_changes(ix->db);
    }
    return ELM_OK;
}

/* The embedding of chunk text [len] of file into vec [dim] through c. */
static elm_status embed_chunk(elm_context *c, const char *file, const elm_chunk *ch,
                              const char *text, size_t len, float *vec, elm_error *err) {
    const elm_status s = elm_embed_text(c, text, len, NULL, vec, err);
    return s ? elm_errorf(err, s, "%s: lines %d-%d: %s", file, ch->line_start, ch->line_end,
                          err->msg) : ELM_OK;
}

/* Stores file (text [len], hash) and its chunks, embedded through c when not NULL. */
static elm_status store_file(elm_index *ix, elm_context *c, const char *file, const char *text,
                             size_t len, const char *hash, elm_index_stats *stats, elm_error *err) {
    const elm_model *m = c ? elm_context_model(c) : NULL;
    const elm_chunk_params cp = {ix->max_tokens, ix->overlap_tokens,
                                 m ? elm_count_vocab_tokens : elm_count_words,
                                 m ? (void *)&m->vocab : NULL};
    elm_chunk *chunks;
    int32_t n;
    elm_status s = elm_chunk_text(text, len, &cp, &chunks, &n, err);
    if (s) return elm_errorf(err, s, "%s: %s", file, err->msg);
    sqlite3_stmt *fst = NULL, *cst = NULL;
    float *vec = m ? malloc(sizeof *vec * (size_t)ix->dim) : NULL;
    if (m && !vec) s = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", file);
    if (!s) s = elm_ix_prepare(ix, "INSERT INTO files(path, size, hash) VALUES (?, ?, ?)", &fst, err);
    if (!s) s = elm_ix_prepare(ix, "INSERT INTO chunks(file_id, seq, line_start, line_end, heading,"
                               " text, n_tokens, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", &cst, err);
    if (!s) {
        sqlite3_bind_text(fst, 1, file, -1, SQLITE_STATIC);
        sqlite3_bind_int64(fst, 2, (sqlite3_int64)len);
        sqlite3_bind_text(fst, 3, hash, -1, SQLITE_STATIC);
        if (sqlite3_step(fst) != SQLITE_DONE) s = elm_ix_fail(ix, ELM_ERR_IO, "storing a file", err);
    }
    const int64_t file_id = sqlite3_last_insert_rowid(ix->db);
    for (int32_t i = 0; i < n && !s; i++) {
        const elm_chunk *ch = &chunks[i];
        const char *t = text + ch->start;
        const size_t tl = (size_t)(ch->end - ch->start);
        if (m && (s = embed_chunk(c, file, ch, t, tl, vec, err))) break;
        sqlite3_reset(cst);
        sqlite3_bind_int64(cst, 1, file_id);
        sqlite3_bind_int(cst, 2, i);
        sqlite3_bind_int(cst, 3, ch->line_start);
        sqlite3_bind_int(cst, 4, ch->line_end);
        sqlite3_bind_text(cst, 5, ch->heading, -1, SQLITE_STATIC);
        sqlite3_bind_text(cst, 6, t, (int)tl, SQLITE_STATIC);
        sqlite3_bind_int(cst, 7, ch->n_tokens);
        /* float32 as the machine stores it: little-endian on every target edgelm builds for */
        if (m) sqlite3_bind_blob(cst, 8, vec, (int)(sizeof *vec * (size_t)ix->dim), SQLITE_STATIC);
        else sqlite3_bind_null(cst, 8);
        if (sqlite3_step(cst) != SQLITE_DONE) s = elm_ix_fail(ix, ELM_ERR_IO, "storing a chunk", err);
        else stats->chunks_added++;
    }
    sqlite3_finalize(fst);
    sqlite3_finalize(cst);
    free(vec);
    elm_chunks_free(chunks, n);
    return s;
}

/* One file: skipped (and its chunks of an earlier run removed), unchanged, or its chunks
 * replaced. */
static elm_status add_file(elm_index *ix, elm_context *c, const char *file, int64_t done,
                           int64_t total, elm_index_progress_fn progress, void *user,
                           elm_index_stats *stats, elm_error *err) {
    struct stat sb;
    char *text = NULL;
    size_t len = 0;
    const char *why = NULL;
    elm_status s = ELM_OK;
    if (stat(file, &sb) == 0 && sb.st_size > (off_t)MAX_DOC_BYTES) why = "over 64 MiB";
    else if ((s = elm_read_file(file, MAX_DOC_BYTES, &text, &len, err))) return s;
    else why = not_text(text, len);
    elm_index_event ev = why ? ELM_INDEX_FILE_SKIPPED : ELM_INDEX_FILE_INDEXED;
    if (why) {
        /* indexed before, no longer text: what it said is not searchable any more */
        s = delete_files(ix, file, NULL, &stats->files_removed, &stats->chunks_removed, err);
    } else {
        char hash[32], old[32] = "";
        int64_t id = 0;
        snprintf(hash, sizeof hash, "%016" PRIx64, elm_fnv1a(ELM_FNV1A_INIT, text, len));
        if (!(s = stored_file(ix, file, &id, old, err)) && id && !strcmp(old, hash))
            ev = ELM_INDEX_FILE_UNCHANGED;
        int64_t replaced = 0; /* a file replaced is not counted as removed */
        if (!s && ev == ELM_INDEX_FILE_INDEXED &&
            !(s = delete_files(ix, file, NULL, &replaced, &stats->chunks_removed, err)))
            s = store_file(ix, c, file, text, len, hash, stats, err);
    }
    free(text);
    if (s) return s;
    *(ev == ELM_INDEX_FILE_SKIPPED ? &stats->files_skipped : ev == ELM_INDEX_FILE_UNCHANGED
          ? &stats->files_unchanged : &stats->files_indexed) += 1;
    if (progress) progress(user, ev, file, why, done, total);
    return ELM_OK;
}

/* Removes the indexed files under folder dir (absolute) that are no longer on disk: adding a
 * folder brings the index in step with it. */
static elm_status drop_gone(elm_index *ix, const char *dir, elm_index_stats *stats,
                           elm_error *err) {
    char prefix[4100];
    snprintf(prefix, sizeof prefix, "%s/", strcmp(dir, "/") ? dir : "");
    sqlite3_stmt *st;
    elm_status s = elm_ix_prepare(ix, "SELECT path FROM files WHERE substr(path, 1, length(?1)) = ?1",
                                  &st, err);
    if (s) return s;
    sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
    file_list gone = {0};
    struct stat sb;
    while (!s && sqlite3_step(st) == SQLITE_ROW) {
        const char *path = elm_ix_text(st, 0);
        if (lstat(path, &sb) != 0 && errno == ENOENT) s = list_push(&gone, path, err);
    }
    sqlite3_finalize(st);
    for (int32_t i = 0; i < gone.n && !s; i++)
        s = delete_files(ix, gone.v[i], NULL, &stats->files_removed, &stats->chunks_removed, err);
    files_free(&gone);
    return s;
}

elm_status elm_index_add(elm_index *ix, elm_context *c, const char *const *paths, int32_t n_paths,
                         elm_index_progress_fn progress, void *user, elm_index_stats *stats,
                         elm_error *err) {
    if (!ix->in_tx) return elm_errorf(err, ELM_ERR_ARG, "%s: opened read-only", ix->path);
    elm_ix_drop_vectors(ix);
    if (ix->dim && !c)
        return elm_errorf(err, ELM_ERR_ARG, "%s: built with the embedding model %s (%s): adding "
                          "documents needs a context of it", ix->path, ix->model_name, ix->model_path);
    if (!ix->dim && c)
        return elm_errorf(err, ELM_ERR_ARG, "%s: built without an embedding model (BM25 only): "
                          "index again with -m to add vectors", ix->path);
    elm_status s = c ? elm_index_check_model(ix, elm_context_model(c), err) : ELM_OK;
    file_list files = {0};
    for (int32_t i = 0; i < n_paths && !s; i++) {
        char abs[4096];
        struct stat sb;
        if (!elm_ix_abs_path(paths[i], abs, sizeof abs))
            s = elm_errorf(err, ELM_ERR_ARG, "%s: path too long", paths[i]);
        else if (stat(abs, &sb) != 0)
            s = elm_errorf(err, ELM_ERR_IO, "%s: %s", paths[i], strerror(errno));
        else if (S_ISDIR(sb.st_mode)) {
            if (!(s = walk(abs, &files, err))) s = drop_gone(ix, abs, stats, err);
        }
        else if (S_ISREG(sb.st_mode)) s = push_file(&files, abs, err);
        else s = elm_errorf(err, ELM_ERR_ARG, "%s: not a file or a folder", paths[i]);
    }
    for (int32_t i = 0; i < files.n && !s; i++)
        s = add_file(ix, c, files.v[i], i + 1, files.n, progress, user, stats, err);
    files_free(&files);
    return s;
}

elm_status elm_index_remove(elm_index *ix, const char *path, elm_index_stats *stats,
                            elm_error *err) {
    if (!ix->in_tx) return elm_errorf(err, ELM_ERR_ARG, "%s: opened read-only", ix->path);
    elm_ix_drop_vectors(ix);
    char abs[4096], prefix[4100];
    if (!elm_ix_abs_path(path, abs, sizeof abs))
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", path);
    snprintf(prefix, sizeof prefix, "%s/", strcmp(abs, "/") ? abs : "");
    int64_t files = 0;
    elm_status s = delete_files(ix, abs, prefix, &files, &stats->chunks_removed, err);
    stats->files_removed += files;
    if (!s && files == 0)
        s = elm_errorf(err, ELM_ERR_ARG, "%s: no indexed file is this or under it (%s)", path, ix->path);
    return s;
}
