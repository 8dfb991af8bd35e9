/* POST /v1/embeddings (OpenAI's shape, as llama-server answers it): the request body parsed into
 * the token ids of each input, and those embedded (edgelm/embed.h) by a context of the
 * embeddings' own, apart from the scheduler's.
 *
 * {"input": "text" | ["text", ...] | [ids] | [[ids], ...], "model", "encoding_format": "float" |
 * "base64", "dimensions"} -> {"object": "list", "data": [{"object": "embedding", "index",
 * "embedding": [floats] | "base64 of little-endian float32"}], "model", "usage": {"prompt_tokens",
 * "total_tokens"}}. A text's tokens are made as elm_embed_tokenize makes them (BOS, control tokens
 * parsed, EOS as the vocabulary adds them); ids are taken as given. The vectors are pooled as the
 * model's file says (mean for one that says none: llama-server answers 400 there instead) and
 * of unit length; "dimensions" keeps the first N floats, scaled to unit length again (a
 * Matryoshka model's shorter embedding, EmbeddingGemma's 512, 256, 128).
 *
 * The embedder runs one request at a time under its own mutex, on a context it creates at the
 * first request and makes again, larger, for a longer input than it has room for (up to the most
 * tokens an input may have); the scheduler's context and slots are not touched, so embeddings
 * and generation go on side by side, each with its own thread pool. */
#ifndef EDGELM_SERVER_EMBEDDINGS_H
#define EDGELM_SERVER_EMBEDDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "edgelm/embed.h"

enum { SRV_EMBED_MAX_INPUTS = 2048 }; /* OpenAI's limit of inputs per request */

/* A parsed request: n inputs, input i being ids[i] [n_ids[i]] (malloc'd, srv_embed_request_free). */
typedef struct srv_embed_request {
    int32_t n;
    int32_t **ids;
    int32_t *n_ids;
    bool base64;        /* encoding_format "base64" */
    int32_t dimensions; /* 0: all */
} srv_embed_request;

/* Parses body [len] against vocabulary v, for a model whose embeddings have dim floats and whose
 * inputs may have up to max_tokens tokens each. Returns 0 with r filled; 400 with a one-line
 * message naming the field in msg[cap] (input missing, empty, of the wrong type, a token id out
 * of the vocabulary, an input with no tokens or over max_tokens, encoding_format not "float" or
 * "base64", dimensions not in 1..dim, model not a string); 500 when out of memory. */
int srv_embed_parse(const char *body, size_t len, const elm_vocab *v, int32_t dim,
                    int32_t max_tokens, srv_embed_request *r, char *msg, size_t cap);

void srv_embed_request_free(srv_embed_request *r);

typedef struct srv_embedder srv_embedder;

/* The embeddings of model m (borrowed, outliving the embedder): contexts of n_threads (0: all
 * cores) with KV caches of type_k, type_v (ggml_rounding as elm_context_params), inputs of up to
 * max_tokens tokens (the slot's context, and no more than the model's trained one). NULL when out
 * of memory. */
srv_embedder *srv_embedder_new(const elm_model *m, int32_t max_tokens, int32_t n_threads,
                               elm_type type_k, elm_type type_v, bool ggml_rounding);
void srv_embedder_free(srv_embedder *e);

/* Most tokens an input may have. */
int32_t srv_embedder_max_tokens(const srv_embedder *e);

/* Answers POST /v1/embeddings body [len]: 0 with the response object in *out (the caller
 * deletes it; model_id is its "model"), 400 with msg as srv_embed_parse, 500 with msg when the
 * context cannot be made or a pass fails. Thread-safe: requests take turns. */
int srv_embeddings(srv_embedder *e, const char *body, size_t len, const char *model_id,
                   cJSON **out, char *msg, size_t cap);

#endif
