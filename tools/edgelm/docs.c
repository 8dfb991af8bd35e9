/* The index and embedding model of a retrieval (see docs.h). */
#include <string.h>

#include "cli.h"
#include "docs.h"

bool cli_docs_open(cli_docs *d, const cli_docs_opts *o) {
    memset(d, 0, sizeof *d);
    elm_error err;
    if (elm_index_open(o->db, false, &d->ix, &err)) {
        cli_fail("%s", err.msg);
        return false;
    }
    const bool vectors = elm_index_dim(d->ix) > 0;
    d->mode = o->mode ? *o->mode : vectors ? ELM_SEARCH_HYBRID : ELM_SEARCH_BM25;
    if (d->mode == ELM_SEARCH_BM25 || !vectors) return true; /* elm_retrieve says what is missing */
    const char *path = o->model;
    if (!path && elm_index_recorded_model(d->ix, "pass the same model with -m, or search with "
                                          "--mode bm25", &path, &err)) {
        cli_fail("%s", err.msg);
        cli_docs_close(d);
        return false;
    }
    if (!(d->model = cli_load_model_to_run(path, o->tokenizer, false))) {
        cli_docs_close(d);
        return false;
    }
    const elm_model *m = d->model;
    const int32_t n = o->n_ctx ? (int32_t)o->n_ctx : m->hp.n_ctx_train > 0 ? m->hp.n_ctx_train : 512;
    const elm_context_params cp = {.n_ctx = n, .n_batch = n, .n_threads = (int32_t)o->threads};
    if (elm_context_new(m, &cp, &d->ctx, &err)) {
        cli_fail("%s", err.msg);
        cli_docs_close(d);
        return false;
    }
    return true;
}

void cli_docs_close(cli_docs *d) {
    elm_context_free(d->ctx);
    elm_model_free(d->model);
    elm_index_close(d->ix);
    memset(d, 0, sizeof *d);
}
