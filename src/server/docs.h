/* `serve --docs`: chat completions answered from a document index (edgelm/rag.h). For each chat
 * request the last user message's chunks are retrieved (elm_retrieve, under a mutex: the index
 * and the embedding context are shared by the connection threads), as many as fit the slot's
 * context beside the conversation and the reply go into the system message
 * (elm_docs_prompt_build), and the kept ones come back as the response's citations
 * ("edgelm": {"citations": [...]}, elm_hits_json with "index"). */
#ifndef EDGELM_SERVER_DOCS_H
#define EDGELM_SERVER_DOCS_H

#include <stddef.h>
#include <stdint.h>

#include "edgelm/rag.h"

typedef struct srv_docs srv_docs;

/* Retrieval of k chunks in mode from ix, with c a context of its embedding model (NULL for
 * BM25); all borrowed. NULL when out of memory. */
srv_docs *srv_docs_new(elm_index *ix, elm_context *c, elm_search_mode mode, int32_t k);
void srv_docs_free(srv_docs *d);

/* The prompt text (*text, malloc'd) of chat messages msgs [n] rendered by template t with tools
 * (NULL: none) and the chunks of the last user message that fit slot_ctx with n_reply tokens
 * for the reply, and those chunks as the JSON array of the citations (*citations, malloc'd).
 * Returns 0; 400 with msg naming the field (a prompt that does not fit even without chunks, a
 * question the embedding model cannot take); 500 with msg (the index cannot be read, out of
 * memory). */
int srv_docs_prompt(srv_docs *d, const elm_vocab *v, elm_chat_template t, const elm_chat_msg *msgs,
                    int32_t n, const char *tools, int32_t slot_ctx, int32_t n_reply, char **text,
                    char **citations, char *msg, size_t cap);

#endif
