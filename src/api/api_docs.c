/* App API (edgelm.h): document indexes, retrieval and answers from them, a thin layer over the
 * library's (edgelm/rag.h); errors stay with the index handle, or the context's for answers. The
 * minimal library has no SQLite (src/rag is left out): there each call says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"

#ifndef EDGELM_NO_DOCS
#include "edgelm/rag.h"

struct edgelm_index {
    elm_index *ix;
    edgelm_model *own;      /* the embedding model loaded from the index's record, or NULL */
    const elm_model *model; /* the embedding model (own's or the app's), NULL: BM25 only */
    elm_context *embed;     /* a context of it for chunks and questions */
    elm_error err;
};

/* The handle's embedding model and a context of it: m (the app's; checked against an index
 * opened, recorded by one created), or for an index with vectors the model it records. */
static elm_status embedding(edgelm_index *h, const edgelm_model *m, bool check, elm_error *err) {
    elm_status st;
    if (m) {
        if (check && (st = elm_index_check_model(h->ix, m->m, err))) return st;
        h->model = m->m;
    } else if (elm_index_dim(h->ix) > 0) {
        const char *path;
        if ((st = elm_index_recorded_model(h->ix, "open the index with the same model, or search "
                                           "with BM25", &path, err)))
            return st;
        char msg[sizeof err->msg];
        if ((st = edgelm_model_load(path, &h->own, msg, sizeof msg)))
            return elm_errorf(err, st, "%s: its embedding model: %s", path, msg);
        h->model = h->own->m;
    }
    if (!h->model) return ELM_OK;
    const int32_t n = elm_index_embed_n_ctx(h->ix, h->model);
    const elm_context_params cp = {.n_ctx = n, .n_batch = n};
    return elm_context_new(h->model, &cp, &h->embed, err);
}

typedef struct index_args {
    const char *path;
    const edgelm_model *m;
    bool create, writable;
    int32_t chunk_tokens, overlap;
} index_args;

static int index_new(const index_args *a, edgelm_index **out, char *errbuf, size_t errcap) {
    if (out) *out = NULL;
    elm_error err;
    elm_error_clear(&err);
    edgelm_index *h = NULL;
    elm_status st;
    if (!a->path || !out)
        st = elm_errorf(&err, ELM_ERR_ARG, "edgelm_index_%s: path and out are required",
                        a->create ? "create" : "open");
    else if (!(h = calloc(1, sizeof *h)))
        st = elm_errorf(&err, ELM_ERR_NOMEM, "out of memory");
    else if (a->create)
        st = elm_index_create(a->path, a->m ? a->m->m : NULL,
                              a->chunk_tokens ? a->chunk_tokens : ELM_INDEX_CHUNK_TOKENS,
                              a->overlap >= 0 ? a->overlap : ELM_INDEX_OVERLAP, &h->ix, &err);
    else
        st = elm_index_open(a->path, a->writable, &h->ix, &err);
    if (!st) st = embedding(h, a->m, !a->create, &err);
    edgelm_error_out(errbuf, errcap, err.msg);
    if (st) {
        edgelm_index_free(h);
        return st;
    }
    h->err = err;
    *out = h;
    return ELM_OK;
}

int edgelm_index_open(const char *path, edgelm_model *embed_model, int writable,
                      edgelm_index **out, char *errbuf, size_t errcap) {
    const index_args a = {.path = path, .m = embed_model, .writable = writable != 0};
    return index_new(&a, out, errbuf, errcap);
}

int edgelm_index_create(const char *path, edgelm_model *embed_model, int32_t chunk_tokens,
                        int32_t overlap, edgelm_index **out, char *errbuf, size_t errcap) {
    const index_args a = {.path = path, .m = embed_model, .create = true,
                          .chunk_tokens = chunk_tokens, .overlap = overlap};
    return index_new(&a, out, errbuf, errcap);
}

void edgelm_index_free(edgelm_index *h) {
    if (!h) return;
    elm_context_free(h->embed);
    elm_index_close(h->ix);
    edgelm_model_free(h->own);
    free(h);
}

/* A status and h's message (when there is an h) copied to errbuf [errcap]. */
static int reply(edgelm_index *h, elm_status st, char *errbuf, size_t errcap) {
    edgelm_error_out(errbuf, errcap, h ? h->err.msg : "edgelm_index: NULL index");
    return h ? (int)st : ELM_ERR_ARG;
}

int edgelm_index_add(edgelm_index *h, const char *const *paths, int32_t n, char *errbuf,
                     size_t errcap) {
    if (!h) return reply(h, ELM_ERR_ARG, errbuf, errcap);
    elm_error_clear(&h->err);
    elm_index_stats stats = {0};
    elm_status st = ELM_ERR_ARG;
    if (!paths || n < 0)
        elm_errorf(&h->err, st, "edgelm_index_add: NULL paths or n %d < 0", (int)n);
    else
        st = elm_index_add(h->ix, h->embed, paths, n, NULL, NULL, &stats, &h->err);
    return reply(h, st, errbuf, errcap);
}

int edgelm_index_remove(edgelm_index *h, const char *path, char *errbuf, size_t errcap) {
    if (!h) return reply(h, ELM_ERR_ARG, errbuf, errcap);
    elm_error_clear(&h->err);
    elm_index_stats stats = {0};
    const elm_status st = path ? elm_index_remove(h->ix, path, &stats, &h->err)
                               : elm_errorf(&h->err, ELM_ERR_ARG, "edgelm_index_remove: NULL path");
    return reply(h, st, errbuf, errcap);
}

int edgelm_index_commit(edgelm_index *h, char *errbuf, size_t errcap) {
    if (!h) return reply(h, ELM_ERR_ARG, errbuf, errcap);
    elm_error_clear(&h->err);
    return reply(h, elm_index_commit(h->ix, &h->err), errbuf, errcap);
}

const char *edgelm_index_last_error(const edgelm_index *h) {
    return h ? h->err.msg : "edgelm_index: NULL index";
}

/* The search mode of name, NULL: hybrid where the index has vectors, else bm25. */
static elm_status mode_of(edgelm_index *h, const char *name, elm_search_mode *mode) {
    *mode = elm_index_dim(h->ix) > 0 ? ELM_SEARCH_HYBRID : ELM_SEARCH_BM25;
    if (!name || elm_search_mode_from_name(name, mode)) return ELM_OK;
    return elm_errorf(&h->err, ELM_ERR_ARG, "search mode '%s': expected hybrid, bm25 or vector",
                      name);
}

char *edgelm_retrieve(edgelm_index *h, const char *question, int32_t k, const char *mode_name) {
    if (!h) return NULL;
    elm_error_clear(&h->err);
    if (!question) {
        elm_errorf(&h->err, ELM_ERR_ARG, "edgelm_retrieve: NULL question");
        return NULL;
    }
    elm_search_mode mode;
    elm_hit *hits = NULL;
    int32_t n = 0;
    const double t0 = elm_now_ms();
    if (mode_of(h, mode_name, &mode) ||
        elm_retrieve(h->ix, h->embed, question, mode, k, &hits, &n, &h->err))
        return NULL;
    char *json = elm_search_json(question, mode, k, elm_now_ms() - t0, hits, n, false);
    elm_hits_free(hits, n);
    if (!json) elm_errorf(&h->err, ELM_ERR_NOMEM, "edgelm_retrieve: out of memory");
    return json;
}

int edgelm_chat_docs(edgelm_ctx *c, edgelm_index *ix, const char *question, int32_t k,
                     int32_t n_predict, edgelm_token_fn fn, void *user) {
    if (!c) return ELM_ERR_ARG;
    elm_error_clear(&c->err);
    free(c->citations);
    c->citations = NULL;
    if (!ix || !question)
        return elm_errorf(&c->err, ELM_ERR_ARG, "edgelm_chat_docs: NULL index or question");
    if (n_predict <= 0) return elm_errorf(&c->err, ELM_ERR_ARG, "n_predict must be > 0");
    elm_docs_turn_params p = {.ix = ix->ix, .embed = ix->embed, .k = k, .tmpl = c->tmpl,
                              .system = c->system, .n_reply = n_predict};
    mode_of(ix, NULL, &p.mode);
    elm_docs_turn t;
    elm_status st = elm_docs_turn_prepare(c->chat, c->c, &p, question, &t, &c->err);
    if (st) return st;
    c->docs_system = true;
    char *citations = elm_hits_json(t.hits, t.prompt.n_docs, "index");
    elm_docs_turn_free(&t);
    if (!citations) return elm_errorf(&c->err, ELM_ERR_NOMEM, "edgelm_chat_docs: out of memory");
    if (c->draft) elm_context_reset(c->draft); /* the conversation restarted */
    st = edgelm_ctx_run(c, elm_chat_turn, question, n_predict, fn, user);
    if (st) free(citations);
    else c->citations = citations;
    return st;
}

#else /* EDGELM_NO_DOCS */

#define NO_DOCS "document indexes are not in this library (built -DEDGELM_MINIMAL=ON without SQLite)"

int edgelm_index_open(const char *path, edgelm_model *embed_model, int writable,
                      edgelm_index **out, char *errbuf, size_t errcap) {
    (void)path, (void)embed_model, (void)writable;
    if (out) *out = NULL;
    edgelm_error_out(errbuf, errcap, NO_DOCS);
    return ELM_ERR_UNSUPPORTED;
}

int edgelm_index_create(const char *path, edgelm_model *embed_model, int32_t chunk_tokens,
                        int32_t overlap, edgelm_index **out, char *errbuf, size_t errcap) {
    (void)chunk_tokens, (void)overlap;
    return edgelm_index_open(path, embed_model, 1, out, errbuf, errcap);
}

int edgelm_index_add(edgelm_index *ix, const char *const *paths, int32_t n, char *errbuf,
                     size_t errcap) {
    (void)ix, (void)paths, (void)n;
    edgelm_error_out(errbuf, errcap, NO_DOCS);
    return ELM_ERR_UNSUPPORTED;
}

int edgelm_index_remove(edgelm_index *ix, const char *path, char *errbuf, size_t errcap) {
    (void)path;
    return edgelm_index_add(ix, NULL, 0, errbuf, errcap);
}

int edgelm_index_commit(edgelm_index *ix, char *errbuf, size_t errcap) {
    return edgelm_index_add(ix, NULL, 0, errbuf, errcap);
}

void edgelm_index_free(edgelm_index *ix) { (void)ix; }

char *edgelm_retrieve(edgelm_index *ix, const char *question, int32_t k, const char *mode) {
    (void)ix, (void)question, (void)k, (void)mode;
    return NULL;
}

const char *edgelm_index_last_error(const edgelm_index *ix) {
    (void)ix;
    return NO_DOCS;
}

int edgelm_chat_docs(edgelm_ctx *c, edgelm_index *ix, const char *question, int32_t k,
                     int32_t n_predict, edgelm_token_fn fn, void *user) {
    (void)ix, (void)question, (void)k, (void)n_predict, (void)fn, (void)user;
    if (c) elm_errorf(&c->err, ELM_ERR_UNSUPPORTED, NO_DOCS);
    return ELM_ERR_UNSUPPORTED;
}

#endif
