/* The index's handle and the SQLite helpers its files share (src/rag/): store.c opens, creates,
 * validates and commits; index_add.c writes files' chunks; search.c reads them. */
#ifndef EDGELM_RAG_INDEX_DB_H
#define EDGELM_RAG_INDEX_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "edgelm/rag.h"

struct elm_index {
    sqlite3 *db;
    char path[1024];
    char tmp[1100]; /* a new index's temporary name until commit, else "" */
    bool in_tx;     /* a writing transaction is open */
    /* the embedding model (dim 0: BM25 only) and the chunking it was built with */
    char model_path[512], model_name[128];
    int32_t dim;
    uint64_t fingerprint;
    int32_t max_tokens, overlap_tokens;
    /* the stored vectors in memory (vectors.c), read at the first vector search of an index
     * opened read-only; n_vec -1 until then */
    int64_t n_vec;
    int64_t *vec_ids; /* [n_vec], in id order */
    float *vecs;      /* [n_vec][dim] */
    double *vec_sq;   /* [n_vec]: each vector's squared length */
};

/* Reads every chunk's vector into ix->vec_* once, checking each is dim floats (ELM_ERR_FORMAT
 * naming the chunk otherwise); ELM_ERR_NOMEM. */
elm_status elm_ix_load_vectors(elm_index *ix, elm_error *err);

/* Frees ix's vectors in memory (a write makes them stale). */
void elm_ix_drop_vectors(elm_index *ix);

/* The dot product of a [n] and b [n] in double: eight running sums, so that the loop runs at the
 * machine's width rather than at the latency of one addition. */
double elm_ix_dot(const float *a, const float *b, int32_t n);

/* ELM_ERR_IO (or the given code) naming the index's path, the problem (what) and SQLite's
 * message. */
elm_status elm_ix_fail(const elm_index *ix, elm_status code, const char *what, elm_error *err);

/* Runs sql (no result rows) on ix; errors as elm_ix_fail with what. */
elm_status elm_ix_exec(elm_index *ix, const char *sql, const char *what, elm_error *err);

/* Column i of the current row as text, "" for NULL: a file written by something else may hold
 * NULL where edgelm's schema says NOT NULL. */
static inline const char *elm_ix_text(sqlite3_stmt *st, int i) {
    const char *t = (const char *)sqlite3_column_text(st, i);
    return t ? t : "";
}

/* Prepares sql; errors as elm_ix_fail. */
elm_status elm_ix_prepare(elm_index *ix, const char *sql, sqlite3_stmt **st, elm_error *err);

/* path made absolute against the working directory and normalised by its text ('.' and '..'
 * folded, repeated and trailing '/' dropped; symbolic links are not resolved, so the path of a
 * file removed since is still made). false when it does not fit in out [cap]. */
bool elm_ix_abs_path(const char *path, char *out, size_t cap);

#endif
