/* A document index opened for retrieval (edgelm/rag.h): the index, and for a search that uses
 * vectors the embedding model it records with a context for questions. What `search` opens, and
 * `chat --docs` and `serve --docs` answer from. */
#ifndef EDGELM_TOOLS_DOCS_H
#define EDGELM_TOOLS_DOCS_H

#include <stdbool.h>
#include "edgelm/rag.h"

typedef struct cli_docs {
    elm_index *ix;
    elm_model *model;    /* the embedding model, NULL for a BM25 search */
    elm_context *ctx;    /* a context of it for questions, or NULL */
    elm_search_mode mode;
} cli_docs;

/* What to open: the index at db; mode NULL: hybrid, or bm25 for an index without vectors;
 * model NULL: the one the index records (it must be the same); n_ctx the most tokens a question
 * may have (0: the model's trained context). */
typedef struct cli_docs_opts {
    const char *db;
    const elm_search_mode *mode;
    const char *model, *tokenizer;
    long n_ctx, threads;
} cli_docs_opts;

/* Opens what o says into d; prints the error in one line and returns false on failure (d is
 * then closed). */
bool cli_docs_open(cli_docs *d, const cli_docs_opts *o);
void cli_docs_close(cli_docs *d);

#endif
