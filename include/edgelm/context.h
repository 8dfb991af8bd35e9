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
    int32_t n_threads; /* 0: all online cores (elm_online_cores); workers live as long as the
                        * context */
    /* KV cache element types: ELM_TYPE_F32 (0, the default), F16, Q8_0 or Q4_0. Quantized caches
     * use blocks along the head dimension (32, or head_dim when it divides 32) with an f16 scale,
     * keys quantized after RoPE; see elm_kv_cache_bytes for the memory. */
    elm_type type_k, type_v;
    /* Round activations as ggml does: the 8-bit activation blocks' scales d and d·Σq to f16, and
     * the input of an F16 (BF16) product to f16 (bf16). Logits then equal llama.cpp's up to the
     * order of float additions, so greedy near-ties break the same way; for cross-checking. The
     * default (false) keeps both in f32, which measured slightly more accurate (lower KLD and
     * perplexity: docs/quantization.md). Runs weights in the file's layout only: a model read into
     * memory (elm_load_opts.in_memory), whose matrices the CPU's kernels packed, is refused. */
    bool ggml_rounding;
    /* Keep every position of the sliding-window layers (Gemma 3's local layers) too, masked,
     * instead of a ring of the window (context.h): needed for several sequences in one pass,
     * sessions, context shift and long rollbacks, for the cache memory of a global layer. */
    bool swa_full;
    /* Sequences of a hybrid model (recurrent layers) that keep a state each: elm_forward_seqs'
     * tokens of cache rows [i · n_ctx / n_seq, (i + 1) · n_ctx / n_seq) are sequence i (the
     * server's slots). 0: one. Each holds elm_state_bytes (its state and checkpoints). */
    int32_t n_seq;
} elm_context_params;

/* Creates a context. ELM_ERR_ARG for n_ctx <= 0, n_threads out of range or n_ctx > 1<<20;
 * ELM_ERR_UNSUPPORTED for a cache type the model's head size cannot use, or for matrices packed
 * at load by other kernels than the context's (elm_tensor.packed_by: ggml_rounding on a model
 * read into memory). */
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
/* Seconds so far during which the context's thread pool ran with workers parked because its
 * threads were being preempted (a core busy with another program; see core/threadpool.h): the
 * passes of that time ran on fewer threads than n_threads. 0 on an idle machine. */
double elm_context_parked_s(const elm_context *c);

/* The ids of the tokens whose keys and values the cache holds, [n_past], in order. */
const int32_t *elm_context_tokens(const elm_context *c);

/* Forgets the cached positions n_past and beyond (0 <= n_past <= elm_context_n_past), e.g. draft
 * tokens a speculative step rejected. ELM_ERR_ARG when n_past is out of range. */
elm_status elm_context_truncate(elm_context *c, int32_t n_past, elm_error *err);

/* Context shift: drops the cached positions [n_keep, n_keep + n_discard), moves the later ones
 * down by n_discard and re-rotates their keys for the new positions (RoPE is a rotation by
 * position · frequency, so rotating by -n_discard · frequency moves a key; quantized keys are
 * decoded, rotated and encoded again). ELM_ERR_ARG unless 0 <= n_keep, 0 < n_discard and
 * n_keep + n_discard <= n_past. */
elm_status elm_context_shift(elm_context *c, int32_t n_keep, int32_t n_discard, elm_error *err);

/* Makes room for n_new more tokens when the cache cannot hold them: keeps the first n_keep tokens
 * (at least the BOS that opens the cache) and drops the oldest half of the rest, or more when
 * n_new needs more (llama.cpp's context shift). No-op when they fit. ELM_ERR_ARG ("context full")
 * when the kept tokens leave no room. */
elm_status elm_context_make_room(elm_context *c, int32_t n_new, int32_t n_keep, elm_error *err);

/* Bytes of a KV cache of n_ctx tokens for model hp with element types type_k/type_v (0 when the
 * types do not fit the model's head size): what `run`, `chat`, `bench` and `plan` report. */
size_t elm_kv_cache_bytes(const elm_hparams *hp, int32_t n_ctx, elm_type type_k, elm_type type_v);

/* The KV cache element types a context takes, by name: "f32", "f16", "q8_0" or "q4_0"
 * (ELM_KV_TYPE_NAMES); false for anything else. */
#define ELM_KV_TYPE_NAMES "f32, f16, q8_0 or q4_0"
bool elm_kv_type_from_name(const char *name, elm_type *out);

/* This context's KV cache bytes, and its element types. */
size_t elm_context_kv_bytes(const elm_context *c);
elm_type elm_context_type_k(const elm_context *c);
elm_type elm_context_type_v(const elm_context *c);

/* Observer of every linear layer's input, called before the product with the weight w, the layer
 * index (-1 for the output projection) and its input x [n_tok, w->ne[0]] f32. An expert of a
 * mixture of experts runs over the tokens routed to it with w a 2-D view of its matrix in the
 * stack (the stack's name, data at its expert's rows; not in the model's tensor list). Activation
 * capture for calibration (AWQ, GPTQ) and importance matrices hook in here instead of
 * re-implementing the forward pass. */
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

/* Called after each batch of elm_forward_batched with all_logits: rows [n, n_vocab] for tokens
 * [off, off + n). A non-zero status stops the feed and is returned. */
typedef elm_status (*elm_batch_cb)(const float *logits, int32_t off, int32_t n, void *user);

/* Feeds tokens [n] through elm_forward in batches of at most elm_context_n_batch tokens (the one
 * prefill loop of generation, speculative decoding and perplexity). Without all_logits, logits
 * (may be NULL) receives the last token's row; with it, logits holds n_batch rows and cb sees
 * each batch's. Errors: elm_forward's. */
elm_status elm_forward_batched(elm_context *c, const int32_t *tokens, int32_t n, float *logits,
                               bool all_logits, elm_batch_cb cb, void *user, elm_error *err);

/* elm_forward with hidden states in and out: exactly one of tokens [n] (embedded as elm_forward
 * does) and x [n, dim] (f32 residual-stream states that take the embeddings' place) is non-NULL.
 * Runs the context's model's layers at positions n_past .. n_past+n-1 (keys and values appended,
 * n_past advanced, the matmul hook called), then writes the states after the last layer, before
 * the output RMSNorm, to x_out [n, dim] when x_out is non-NULL (x_out may be x), and the logits
 * as elm_forward (logits may be NULL). Positions entered as states have id -1 in
 * elm_context_tokens. A model that is a view of some layers of another (layers pointing into
 * its array, hp.n_layers of them, 0 for only the output RMSNorm and projection) runs just
 * those: calibration goes block by block this way. ELM_ERR_ARG when both or neither of tokens
 * and x are given, and in elm_forward's cases. */
elm_status elm_forward_hidden(elm_context *c, const int32_t *tokens, const float *x, int32_t n,
                              float *x_out, float *logits, bool all_logits, elm_error *err);

/* elm_forward that hands back, instead of logits, the hidden states of all n tokens after the
 * output RMSNorm, embd [n, dim] f32: what an embedding model pools (llama.cpp's t_embd,
 * "result_norm"; include/edgelm/embed.h). A non-causal model's tokens (hp.non_causal) see the
 * whole batch, so its text goes in one call, from an empty cache. Errors: elm_forward's. */
elm_status elm_forward_embd(elm_context *c, const int32_t *tokens, int32_t n, float *embd,
                            elm_error *err);

/* Bytes a context holds per sequence for the recurrent layers of a model of hp (a hybrid's): the
 * state (its fixed size does not grow with the context, unlike the KV cache) and the checkpoints
 * rollbacks go back to; 0 for a model without recurrent layers. */
size_t elm_state_bytes(const elm_hparams *hp);

/* Before a sequence of elm_forward_seqs reuses its first n_past cached positions (a prompt that
 * shares a prefix with what the sequence of cache row row0 holds): a hybrid model's recurrent
 * state cannot drop tokens, so it goes back to its latest checkpoint at or before n_past (the
 * start or end of an earlier multi-token batch, or the empty state), and the position of that is
 * returned: the caller feeds the tokens from there. Models without recurrent layers: n_past. */
int32_t elm_context_seq_rewind(elm_context *c, int32_t row0, int32_t n_past);

/* Several sequences in one pass (continuous batching): n tokens, token t at position pos[t] of
 * a sequence whose keys and values occupy the cache rows row0[t] .. row0[t] + pos[t] (so each
 * sequence owns a contiguous region of the cache, e.g. one per server slot). Every weight row is
 * read once for all the tokens; each attends causally within its own sequence only. Keys and
 * values of the tokens are written at their rows; the caller keeps each sequence's length (n_past
 * and elm_context_tokens of the context are not the sequences'). logits receives [n_out, n_vocab],
 * row i for token out[i] (NULL or n_out 0: none). ELM_ERR_ARG when n <= 0, n > n_batch, a token
 * id, position or row is out of range (row0 + pos >= n_ctx) or an out index is not below n. */
elm_status elm_forward_seqs(elm_context *c, const int32_t *tokens, const int32_t *pos,
                            const int32_t *row0, int32_t n, const int32_t *out, int32_t n_out,
                            float *logits, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
