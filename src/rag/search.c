/* Retrieval (include/edgelm/rag.h, elm_retrieve): BM25 through FTS5, cosine similarity by brute
 * force over every stored vector, and the two lists fused by reciprocal rank. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/embed.h"
#include "rag/index_db.h"

static const char *const mode_names[] = {"hybrid", "bm25", "vector"};

const char *elm_search_mode_name(elm_search_mode mode) {
    return mode >= ELM_SEARCH_HYBRID && mode <= ELM_SEARCH_VECTOR ? mode_names[mode] : "?";
}

bool elm_search_mode_from_name(const char *name, elm_search_mode *out) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, mode_names[i])) {
            *out = (elm_search_mode)i;
            return true;
        }
    return false;
}

/* One chunk of a ranked list. */
typedef struct scored {
    int64_t id;
    double score;
} scored;

static int by_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Whether byte c is part of a word: a letter, a digit or a byte of a non-ASCII character. */
static bool word_byte(unsigned char c) {
    return c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The question as an FTS5 query: each word (a run of letters, digits or non-ASCII bytes) quoted,
 * joined by OR, so that no character of the question is read as FTS5 syntax. NULL when it has no
 * words or memory ran out (*words tells which). */
static char *fts_query(const char *q, int *words) {
    const size_t len = strlen(q);
    char *out = malloc(len * 6 + 1), *w = out; /* each byte at worst: quote, " OR " */
    *words = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < len;) {
        const unsigned char c = (unsigned char)q[i];
        if (!word_byte(c)) {
            i++;
            continue;
        }
        w += sprintf(w, "%s\"", (*words)++ ? " OR " : "");
        for (; i < len; i++) {
            if (!word_byte((unsigned char)q[i])) break;
            *w++ = q[i];
        }
        *w++ = '"';
    }
    *w = '\0';
    if (*words) return out;
    free(out);
    return NULL;
}

/* The first `depth` chunks by BM25 into list [*n] (score: bm25() negated, higher better). */
static elm_status bm25_list(elm_index *ix, const char *question, int32_t depth, scored *list,
                            int32_t *n, elm_error *err) {
    *n = 0;
    int words;
    char *q = fts_query(question, &words);
    if (!q) return words ? elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", ix->path) : ELM_OK;
    sqlite3_stmt *st;
    elm_status s = elm_ix_prepare(ix, "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts "
                                  "MATCH ? ORDER BY bm25(chunks_fts), rowid LIMIT ?", &st, err);
    if (!s) {
        sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, depth);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            list[(*n)++] = (scored){sqlite3_column_int64(st, 0), -sqlite3_column_double(st, 1)};
        if (rc != SQLITE_DONE) s = elm_ix_fail(ix, ELM_ERR_FORMAT, "BM25 search", err);
        sqlite3_finalize(st);
    }
    free(q);
    return s;
}

/* Every chunk by cosine similarity to q [dim], best first, into *list [*n] (malloc'd). */
static elm_status cosine_list(elm_index *ix, const float *q, scored **list, int64_t *n,
                              elm_error *err) {
    *list = NULL;
    *n = 0;
    elm_status s = elm_ix_load_vectors(ix, err);
    if (s) return s;
    scored *l = malloc(sizeof *l * (size_t)(ix->n_vec ? ix->n_vec : 1));
    if (!l) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for %" PRId64 " chunks",
                              ix->path, ix->n_vec);
    const double qq = elm_ix_dot(q, q, ix->dim);
    for (int64_t i = 0; i < ix->n_vec; i++) {
        const double bb = ix->vec_sq[i];
        const double ab = elm_ix_dot(q, ix->vecs + (size_t)i * (size_t)ix->dim, ix->dim);
        l[i] = (scored){ix->vec_ids[i], qq > 0 && bb > 0 ? ab / sqrt(qq * bb) : 0.0};
    }
    *n = ix->n_vec;
    qsort(l, (size_t)*n, sizeof *l, by_score);
    *list = l;
    return ELM_OK;
}

/* The chunk's text and source into h. */
static elm_status fill_hit(elm_index *ix, sqlite3_stmt *st, elm_hit *h, elm_error *err) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, h->chunk_id);
    if (sqlite3_step(st) != SQLITE_ROW) return elm_ix_fail(ix, ELM_ERR_FORMAT, "reading a chunk", err);
    h->line_start = sqlite3_column_int(st, 0);
    h->line_end = sqlite3_column_int(st, 1);
    h->heading = strdup(elm_ix_text(st, 2));
    h->text = strdup(elm_ix_text(st, 3));
    h->file = strdup(elm_ix_text(st, 4));
    if (!h->heading || !h->text || !h->file)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", ix->path);
    return ELM_OK;
}

static int by_fused(const void *a, const void *b) {
    const elm_hit *x = a, *y = b;
    if (x->fused != y->fused) return x->fused < y->fused ? 1 : -1;
    return (x->chunk_id > y->chunk_id) - (x->chunk_id < y->chunk_id);
}

/* Fuses bm25 [nb] and the first `depth` of cos [nc] into hits (room for nb + depth), best first;
 * returns how many. A hit's cosine and cosine rank come from the whole of cos. */
static int32_t fuse(const scored *bm, int32_t nb, const scored *cos, int64_t nc, int32_t depth,
                    elm_hit *hits) {
    int32_t n = 0;
    for (int32_t i = 0; i < nb; i++)
        hits[n++] = (elm_hit){.chunk_id = bm[i].id, .bm25_rank = i + 1, .bm25 = bm[i].score,
                              .fused = 1.0 / (ELM_RRF_K + i + 1)};
    for (int64_t i = 0; i < nc; i++) {
        int32_t j = 0;
        while (j < n && hits[j].chunk_id != cos[i].id) j++;
        if (j == n && i >= depth) continue;
        if (j == n) hits[n++] = (elm_hit){.chunk_id = cos[i].id};
        hits[j].cosine = cos[i].score;
        hits[j].cosine_rank = (int32_t)i + 1;
        if (i < depth) hits[j].fused += 1.0 / (ELM_RRF_K + (double)i + 1);
    }
    qsort(hits, (size_t)n, sizeof *hits, by_fused);
    return n;
}

elm_status elm_retrieve(elm_index *ix, elm_context *c, const char *question, elm_search_mode mode,
                        int32_t k, elm_hit **out, int32_t *n_out, elm_error *err) {
    *out = NULL;
    *n_out = 0;
    if (k < 1) return elm_errorf(err, ELM_ERR_ARG, "search: k %d, want at least 1", k);
    bool any = false; /* an empty or punctuation-only question would rank chunks at random */
    for (const char *p = question; *p && !any; p++) any = word_byte((unsigned char)*p);
    if (!any) return elm_errorf(err, ELM_ERR_ARG, "question: no words to search for");
    const bool vectors = mode != ELM_SEARCH_BM25, words = mode != ELM_SEARCH_VECTOR;
    if (vectors && !ix->dim)
        return elm_errorf(err, ELM_ERR_ARG, "%s: built without an embedding model: %s search needs "
                          "one (BM25 only; index again with -m)", ix->path, elm_search_mode_name(mode));
    if (vectors && !c)
        return elm_errorf(err, ELM_ERR_ARG, "%s: %s search needs a context of the embedding model "
                          "%s", ix->path, elm_search_mode_name(mode), ix->model_path);
    elm_status s = vectors ? elm_index_check_model(ix, elm_context_model(c), err) : ELM_OK;
    if (s) return s;
    const int32_t depth = mode == ELM_SEARCH_HYBRID ? (k > ELM_RRF_DEPTH ? k : ELM_RRF_DEPTH) : k;
    scored *bm = malloc(sizeof *bm * (size_t)depth), *cos = NULL;
    float *q = vectors ? malloc(sizeof *q * (size_t)ix->dim) : NULL;
    int32_t nb = 0;
    int64_t nc = 0;
    elm_hit *hits = NULL;
    if (!bm || (vectors && !q)) s = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", ix->path);
    if (!s && words) s = bm25_list(ix, question, depth, bm, &nb, err);
    if (!s && vectors && (s = elm_embed_text(c, question, strlen(question), NULL, q, err)))
        elm_errorf(err, s, "question: %s", err->msg);
    if (!s && vectors) s = cosine_list(ix, q, &cos, &nc, err);
    const int32_t cap = nb + (int32_t)(nc < depth ? nc : depth);
    if (!s && !(hits = calloc((size_t)(cap ? cap : 1), sizeof *hits)))
        s = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", ix->path);
    int32_t n = 0;
    if (!s) {
        n = fuse(bm, nb, cos, nc, depth, hits);
        n = n < k ? n : k;
    }
    sqlite3_stmt *st = NULL;
    if (!s) s = elm_ix_prepare(ix, "SELECT c.line_start, c.line_end, c.heading, c.text, f.path FROM "
                               "chunks c JOIN files f ON f.id = c.file_id WHERE c.id = ?", &st, err);
    for (int32_t i = 0; i < n && !s; i++) s = fill_hit(ix, st, &hits[i], err);
    sqlite3_finalize(st);
    free(bm);
    free(cos);
    free(q);
    if (s) {
        elm_hits_free(hits, cap);
        return s;
    }
    *out = hits;
    *n_out = n;
    return ELM_OK;
}

void elm_hits_free(elm_hit *hits, int32_t n) {
    for (int32_t i = 0; hits && i < n; i++) {
        free(hits[i].file);
        free(hits[i].heading);
        free(hits[i].text);
    }
    free(hits);
}
