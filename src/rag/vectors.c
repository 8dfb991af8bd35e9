/* A document index's vectors in memory (index_db.h): read out of SQLite once per open index, not
 * once per question. Search by brute force then costs the arithmetic alone (docs/rag.md,
 * Latency: reading the BLOBs was most of it). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rag/index_db.h"

double elm_ix_dot(const float *a, const float *b, int32_t n) {
    double s[8] = {0};
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += (double)a[i + j] * b[i + j];
    for (; i < n; i++) s[0] += (double)a[i] * b[i];
    return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

void elm_ix_drop_vectors(elm_index *ix) {
    free(ix->vec_ids);
    free(ix->vecs);
    free(ix->vec_sq);
    ix->vec_ids = NULL;
    ix->vecs = NULL;
    ix->vec_sq = NULL;
    ix->n_vec = -1;
}

elm_status elm_ix_load_vectors(elm_index *ix, elm_error *err) {
    if (ix->n_vec >= 0) return ELM_OK;
    int64_t files, chunks;
    elm_status s = elm_index_count(ix, &files, &chunks, err);
    if (s) return s;
    const size_t n = (size_t)(chunks ? chunks : 1), dim = (size_t)ix->dim;
    ix->vec_ids = malloc(sizeof *ix->vec_ids * n);
    ix->vecs = malloc(sizeof *ix->vecs * n * dim);
    ix->vec_sq = malloc(sizeof *ix->vec_sq * n);
    ix->n_vec = 0;
    if (!ix->vec_ids || !ix->vecs || !ix->vec_sq) {
        elm_ix_drop_vectors(ix);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for %" PRId64 " vectors of %d",
                          ix->path, chunks, ix->dim);
    }
    sqlite3_stmt *st;
    if ((s = elm_ix_prepare(ix, "SELECT id, vector FROM chunks ORDER BY id", &st, err))) {
        elm_ix_drop_vectors(ix);
        return s;
    }
    const int bytes = (int)(sizeof(float) * dim);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && ix->n_vec < chunks) {
        const int64_t id = sqlite3_column_int64(st, 0);
        const void *v = sqlite3_column_blob(st, 1);
        if (sqlite3_column_bytes(st, 1) != bytes || !v) {
            s = elm_errorf(err, ELM_ERR_FORMAT, "%s: chunk %" PRId64 "'s vector has %d bytes, not "
                           "%d", ix->path, id, sqlite3_column_bytes(st, 1), bytes);
            break;
        }
        float *row = ix->vecs + (size_t)ix->n_vec * dim;
        memcpy(row, v, (size_t)bytes);
        ix->vec_ids[ix->n_vec] = id;
        ix->vec_sq[ix->n_vec++] = elm_ix_dot(row, row, ix->dim);
    }
    if (!s && rc != SQLITE_ROW && rc != SQLITE_DONE) s = elm_ix_fail(ix, ELM_ERR_FORMAT, "reading vectors", err);
    sqlite3_finalize(st);
    if (s) elm_ix_drop_vectors(ix);
    return s;
}
