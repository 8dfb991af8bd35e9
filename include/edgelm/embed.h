/* Text embeddings: one vector per text from a model's hidden states, as llama.cpp computes them
 * for its embedding models (EmbeddingGemma, Qwen3-Embedding) and llama-server's /v1/embeddings
 * returns them.
 *
 * The text's tokens (BOS and EOS as the tokenizer adds them) run through the model; the hidden
 * states after the output RMSNorm, one row of dim floats per token (elm_forward_embd), are
 * pooled into one: their mean, the first token's (CLS) or the last token's. An embedding model
 * may then project it (EmbeddingGemma's Dense layers: dense_2 then dense_3, no activation), and
 * the result is scaled to unit Euclidean length, as llama-server does by default (its
 * embd_normalize 2). Cosine similarity is then a dot product. */
#ifndef EDGELM_EMBED_H
#define EDGELM_EMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the tokens' hidden states become one vector: llama.cpp's enum llama_pooling_type (the
 * values of GGUF <arch>.pooling_type, elm_hparams.pooling). */
typedef enum elm_pooling {
    ELM_POOLING_DEFAULT = -1, /* the model's (elm_embed_pooling) */
    ELM_POOLING_NONE = 0,     /* one vector per token: elm_forward_embd, not elm_embed */
    ELM_POOLING_MEAN = 1,     /* the mean of every token's (EmbeddingGemma) */
    ELM_POOLING_CLS = 2,      /* the first token's (BERT's [CLS]) */
    ELM_POOLING_LAST = 3,     /* the last token's (Qwen3-Embedding, after its EOS) */
    ELM_POOLING_RANK = 4      /* a reranker's score: not an embedding, refused */
} elm_pooling;

/* "none", "mean", "cls", "last", "rank" ("default" for ELM_POOLING_DEFAULT, "?" otherwise). */
const char *elm_pooling_name(elm_pooling p);

/* The pooling of name `name` ("mean", "cls" or "last"); false for anything else. */
bool elm_pooling_from_name(const char *name, elm_pooling *out);

/* The pooling elm_embed runs on model m for `requested`: requested itself unless it is
 * ELM_POOLING_DEFAULT, then the model's file's (hp.pooling), and mean for a file that says none
 * or nothing (a generative model: mean, as sentence-transformers pools a plain transformer;
 * llama-server answers such a request with an error instead). */
elm_pooling elm_embed_pooling(const elm_model *m, elm_pooling requested);

/* Floats in an embedding of m: hp.dim (EmbeddingGemma's dense_3 projects back to dim). */
int32_t elm_embed_dim(const elm_model *m);

/* The tokens of UTF-8 text [len] as an embedding takes them, as llama.cpp's tokenizer with
 * add_special and parse_special (llama-server's /v1/embeddings): the vocabulary's BOS when it
 * adds one (add_bos), control tokens written in the text as those tokens, and its EOS at the end
 * when it adds one (add_eos: Qwen3-Embedding's <|endoftext|>, whose state the last-token pooling
 * reads). *ids is malloc'd, [*n]. Errors: the tokenizer's (ELM_ERR_NOMEM, ELM_ERR_ARG for text
 * over its limit). */
elm_status elm_embed_tokenize(const elm_vocab *v, const char *text, size_t len, int32_t **ids,
                              int64_t *n, elm_error *err);

typedef struct elm_embed_params {
    elm_pooling pooling; /* ELM_POOLING_DEFAULT (-1): the model's (elm_embed_pooling) */
    bool no_normalize;   /* false: scaled to unit L2 length (llama-server's default); true: the
                          * pooled (and projected) vector as it is */
} elm_embed_params;

/* The embedding of tokens [n] (ids of c's model's vocabulary, from elm_embed_tokenize) into
 * out [elm_embed_dim(m)] floats, unit length unless p->no_normalize; p NULL: the defaults. The
 * context's cache is emptied first and holds the tokens afterwards (the next call empties it
 * again). A causal model takes the tokens in pieces of elm_context_n_batch; a non-causal one
 * (hp.non_causal: every token sees the whole text) in one, so n must not exceed n_batch there.
 * Allocates one buffer of n_batch hidden states per call. Errors: ELM_ERR_ARG for n <= 0, n over
 * the context's n_ctx (or a non-causal model's n_batch), a pooling of none or out of range, a
 * token id out of the vocabulary; ELM_ERR_UNSUPPORTED for rank pooling (a reranker);
 * ELM_ERR_NOMEM. */
elm_status elm_embed(elm_context *c, const int32_t *tokens, int32_t n, const elm_embed_params *p,
                     float *out, elm_error *err);

/* elm_embed of UTF-8 text [len], tokenized by elm_embed_tokenize, into out [elm_embed_dim(m)].
 * Errors: ELM_ERR_ARG for a text of no tokens or of more than the context takes (its n_ctx, a
 * non-causal model's n_batch when smaller), naming the counts; elm_embed's otherwise. */
elm_status elm_embed_text(elm_context *c, const char *text, size_t len, const elm_embed_params *p,
                          float *out, elm_error *err);

/* The cosine similarity of a [n] and b [n] (dot product over the product of the lengths, in
 * double), 0 when either is all zeros. */
double elm_embed_cosine(const float *a, const float *b, int32_t n);

#ifdef __cplusplus
}
#endif
#endif
