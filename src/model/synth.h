/* Random-weight GGUF models with the exact tensor shapes, vocabulary size and tied/untied output
 * of real models, so speed and memory can be measured at real sizes without downloads. The
 * weights are noise and the vocabulary is placeholder strings: for speed and memory measurement
 * only, never for text. */
#ifndef EDGELM_MODEL_SYNTH_H
#define EDGELM_MODEL_SYNTH_H

#include <stdint.h>
#include "edgelm/model.h"

typedef struct elm_synth_preset {
    const char *name;   /* "tinyllama-1.1b", ... */
    const char *source; /* the Hugging Face config the shapes come from */
    const char *arch;   /* GGUF general.architecture (model/arch.h) */
    int32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim, n_ctx_train;
    float rms_eps, rope_theta;
    bool tied;        /* tie_word_embeddings: no output.weight */
    bool llama3_rope; /* rope_scaling "llama3" (factor 32, low 1, high 4, original 8192),
                              * written as llama.cpp does: a rope_freqs.weight tensor */
    int32_t head_dim; /* per head when config.json's head_dim is not dim / heads (Qwen3), else 0 */
} elm_synth_preset;

/* The presets, *n of them. */
const elm_synth_preset *elm_synth_presets(int *n);

/* The preset called name, or NULL. */
const elm_synth_preset *elm_synth_find(const char *name);

/* Called after each tensor is written: done of total tensors. */
typedef void (*elm_synth_progress)(void *user, int32_t done, int32_t total);

/* Writes preset p as a GGUF file at path: every matrix (embedding and output included, like
 * llama-quantize --pure) of `type`, norms and biases F32, weights uniform in ±0.035 (about the
 * spread of trained Llama weights) from seed. general.name says the file is random. The model's
 * bytes go to *file_bytes (may be NULL). Errors: ELM_ERR_ARG when the shapes do not fit `type`
 * (columns not a multiple of its block), ELM_ERR_IO / ELM_ERR_NOMEM naming path. */
elm_status elm_synth_write(const elm_synth_preset *p, elm_type type, const char *path,
                           uint64_t seed, elm_synth_progress progress, void *user,
                           uint64_t *file_bytes, elm_error *err);

#endif
