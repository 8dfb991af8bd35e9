/* Hugging Face folder writer: a model in its family's Hugging Face layout (config.json,
 * model.safetensors, tokenizer.json, tokenizer_config.json), the inverse of the HF loader
 * (hf.c): what it writes, elm_model_load reads back to the same model. */
#ifndef EDGELM_FORMATS_HF_WRITE_H
#define EDGELM_FORMATS_HF_WRITE_H

#include "edgelm/model.h"

/* Writes bound model m into folder dir (created if missing). Tensors keep their dtype (F32, F16,
 * BF16; quantized ones are ELM_ERR_UNSUPPORTED) under their HF names, undoing the GGUF
 * conventions the loader applies: Llama's q/k rows go back to rotate-half order, Gemma's norm
 * weights are written as w - 1 (F32), a tied output has no lm_head. A model with rope_freqs needs
 * llama3 = {factor, low_freq_factor, high_freq_factor, original_max_position_embeddings} for
 * config.json's rope_scaling (ELM_ERR_UNSUPPORTED without); LongRoPE's factors (rope_long,
 * rope_short) go into rope_scaling "longrope" with original_max_position_embeddings, and a RoPE
 * attention factor without them is ELM_ERR_UNSUPPORTED. Errors name the file; files already
 * written stay, each file itself is written atomically. */
elm_status elm_hf_write(const elm_model *m, const float *llama3, const char *dir, elm_error *err);

/* The checks elm_hf_write makes before it writes anything (a family with an HF layout, the RoPE
 * parameters config.json needs: ELM_ERR_UNSUPPORTED), for a caller that writes other files
 * first. Errors name dir. */
elm_status elm_hf_writable(const elm_model *m, const float *llama3, const char *dir,
                           elm_error *err);

/* tokenizer.json and tokenizer_config.json for vocab v into dir (hf_tokenizer_write.c):
 * byte-level vocabs as BPE with a ByteLevel (and Split regex) pre-tokenizer and their merges;
 * SentencePiece-style ones as BPE with byte fallback, the Prepend/Replace normalizer and merges
 * made from the piece scores the way transformers' SentencePieceExtractor makes them (every
 * split of a piece into two pieces, by the merged piece's score, best first). Control, unknown
 * and user-defined tokens are listed as added_tokens (special unless user-defined). */
elm_status elm_hf_write_tokenizer(const elm_vocab *v, const char *dir, elm_error *err);

/* Writes the NUL-terminated text to path atomically (shared by the two writers). */
elm_status elm_hf_write_text(const char *path, const char *text, elm_error *err);

#endif
