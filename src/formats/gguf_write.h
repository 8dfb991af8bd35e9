/* GGUF v3 writer: the only place edgelm lays out model files (ARCHITECTURE.md). Writes a model's
 * metadata (general.*, the Llama hyper-parameters under the architecture prefix, the tokenizer)
 * and a list of tensors, aligned to 32 bytes with zero padding (docs/formats.md, "GGUF v3"). Output
 * goes through elm_out_*: a failed write leaves no file behind. */
#ifndef EDGELM_FORMATS_GGUF_WRITE_H
#define EDGELM_FORMATS_GGUF_WRITE_H

#include <stdint.h>
#include "edgelm/model.h"

/* Produces the t->nbytes bytes of tensor i into dst (for writers that convert on the fly, one
 * tensor in memory at a time). */
typedef elm_status (*elm_gguf_fill_fn)(void *user, int32_t i, const elm_tensor *t, void *dst,
                                       elm_error *err);

typedef struct elm_gguf_out {
    const elm_model *m;        /* name, hyper-parameters and vocab (tensors not used) */
    const elm_tensor *tensors; /* [n_tensors]: name, type, n_dims, ne; nbytes must match */
    int32_t n_tensors;
    uint32_t file_type;        /* general.file_type (llama.cpp ftype) */
    elm_gguf_fill_fn fill;     /* NULL: write tensors[i].data as it is */
    void *user;                /* passed to fill */
} elm_gguf_out;

/* Writes `src` to `path` as GGUF v3. Keys: general.architecture, general.name (when set),
 * general.file_type, general.quantization_version = 2, <arch>.{context_length, embedding_length,
 * block_count, feed_forward_length, attention.head_count, attention.head_count_kv,
 * rope.dimension_count, attention.layer_norm_rms_epsilon, rope.freq_base, vocab_size}, when they
 * apply <arch>.{attention.key_length, attention.value_length (head_dim not dim / heads),
 * attention.sliding_window, rope.scaling.type = "linear", rope.scaling.factor}, and when the
 * model has a vocab tokenizer.ggml.{model, pre (gpt2), tokens, scores, token_type, merges, bos/eos/
 * unknown/padding_token_id (those >= 0), add_bos_token, add_eos_token, add_space_prefix} and
 * tokenizer.chat_template. *file_bytes (may be NULL) receives the size written.
 * Errors: ELM_ERR_ARG (a tensor's type, shape or nbytes inconsistent), ELM_ERR_IO (naming path),
 * or whatever fill returns; in every error case no file is left at path. */
elm_status elm_gguf_write(const char *path, const elm_gguf_out *src, uint64_t *file_bytes,
                          elm_error *err);

/* Writes model m as it is (its tensors, types and file_type) to path. */
elm_status elm_gguf_write_model(const elm_model *m, const char *path, elm_error *err);

#endif
