/* Perplexity exactly as llama.cpp's llama-perplexity computes it (docs/formats.md, "Perplexity"):
 * the text is tokenized once with BOS, cut into floor(n_tokens / n_ctx) chunks,
 * each evaluated from an empty KV cache with its first token replaced by BOS, and the second half
 * of each chunk scored (positions j in [n_ctx/2, n_ctx-1) predict token j+1). */
#ifndef EDGELM_PERPLEXITY_H
#define EDGELM_PERPLEXITY_H

#include <stddef.h>
#include <stdint.h>
#include "edgelm/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_ppl_params {
    int32_t n_ctx;     /* tokens per chunk (>= 4) */
    int32_t n_batch;   /* tokens per forward call (0 = n_ctx) */
    int32_t n_threads; /* 0: all online cores */
    elm_type type_k, type_v; /* KV cache element types (elm_context_params): 0 is F32, the
                              * default; F16, Q8_0 or Q4_0 measure what a smaller cache costs */
} elm_ppl_params;

typedef struct elm_ppl_result {
    double ppl, ppl_stderr, mean_nll; /* nats */
    int32_t n_ctx, chunks;
    int64_t n_tokens;       /* tokens in the text, BOS included */
    int64_t scored_tokens;  /* chunks * (n_ctx - n_ctx/2 - 1) */
} elm_ppl_result;

/* Called for every scored position, in order: logits [n_vocab] at position j of the chunk and the
 * id of token j+1. Evaluation code (KL divergence, top-1 agreement) hooks in here. */
typedef void (*elm_scored_fn)(const float *logits, int32_t n_vocab, int32_t next_token, void *user);

/* Called after each chunk with the running perplexity. */
typedef void (*elm_chunk_fn)(int32_t chunk, int32_t n_chunks, double running_ppl, void *user);

/* Evaluates the chunks of `tokens` [n_tokens ids, BOS first] and calls on_scored for each scored
 * position; fills the result. ELM_ERR_ARG when n_ctx < 4 or the text has fewer than 2*n_ctx
 * tokens (llama.cpp's rule). */
elm_status elm_eval_chunks(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                           const elm_ppl_params *p, elm_scored_fn on_scored, elm_chunk_fn on_chunk,
                           void *user, elm_ppl_result *out, elm_error *err);

/* Tokenizes `text` [len bytes] with BOS, as elm_perplexity does, into a malloc'd array *ids
 * [*n_ids] (caller frees). ELM_ERR_NOMEM, or the tokenizer's error. */
elm_status elm_ppl_tokenize(const elm_model *m, const char *text, size_t len, int32_t **ids,
                            int64_t *n_ids, elm_error *err);

/* Tokenizes `text` [len bytes] with BOS and computes its perplexity. */
elm_status elm_perplexity(const elm_model *m, const char *text, size_t len, const elm_ppl_params *p,
                          elm_chunk_fn on_chunk, void *user, elm_ppl_result *out, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
