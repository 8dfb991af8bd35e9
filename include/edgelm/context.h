/* An inference context over a loaded model: its own KV cache, scratch buffers and thread pool.
 * Several contexts may share one model (the model is read-only) and run from different threads.
 *
 * The forward pass is the Llama architecture (Touvron et al. 2023, arXiv:2302.13971): RMSNorm,
 * rotary position embeddings (Su et al. 2021, arXiv:2104.09864; interleaved pairs), grouped-query
 * attention (Ainslie et al. 2023, arXiv:2305.13245) and a SwiGLU feed-forward block. */
#ifndef EDGELM_CONTEXT_H
#define EDGELM_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_context elm_context;

typedef struct elm_context_params {
    int32_t n_ctx;     /* KV cache capacity in tokens (> 0); preallocated */
    int32_t n_batch;   /* most tokens per forward call (0 = n_ctx); sizes the scratch buffers */
    int32_t n_threads; /* >= 1; workers live as long as the context */
} elm_context_params;

/* Creates a context. ELM_ERR_ARG for n_ctx <= 0, n_threads out of range or n_ctx > 1<<20. */
elm_status elm_context_new(const elm_model *m, const elm_context_params *p, elm_context **out,
                           elm_error *err);
void elm_context_free(elm_context *c);

/* Empties the KV cache (next token is at position 0). */
void elm_context_reset(elm_context *c);

/* Tokens in the KV cache (= position of the next token), and the capacity. */
int32_t elm_context_n_past(const elm_context *c);
int32_t elm_context_n_ctx(const elm_context *c);
int32_t elm_context_n_batch(const elm_context *c); /* most tokens per elm_forward call */
const elm_model *elm_context_model(const elm_context *c);

/* Observer of every linear layer's input, called before the product with the weight w, the layer
 * index (-1 for the output projection) and its input x [n_tok, w->ne[0]] f32. Activation capture
 * for calibration (AWQ, GPTQ) hooks in here instead of re-implementing the forward pass. */
typedef void (*elm_matmul_hook)(const elm_tensor *w, int layer, const float *x, int64_t n_tok,
                                void *user);

/* Installs (or, with NULL, removes) the hook. */
void elm_context_set_hook(elm_context *c, elm_matmul_hook hook, void *user);

/* Runs n tokens at positions n_past .. n_past+n-1 in one batched pass (prefill when n > 1, decode
 * when n == 1), appending their keys and values to the KV cache. logits receives [n, n_vocab] when
 * all_logits, else [n_vocab] for the last token; may be NULL to only fill the cache.
 * ELM_ERR_ARG when n <= 0, n > n_batch, n_past + n > n_ctx or a token id is out of range. */
elm_status elm_forward(elm_context *c, const int32_t *tokens, int32_t n, float *logits,
                       bool all_logits, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
