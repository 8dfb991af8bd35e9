/* GGUF v3 writer: the only place edgelm lays out GGUF files (ARCHITECTURE.md), models and
 * importance matrices alike (docs/formats.md, "GGUF v3").
 *
 * A file is described first: its metadata keys and its whole tensor table (names, types, shapes;
 * the sizes, hence every offset, follow from them). elm_gguf_begin writes that much; the caller
 * then pushes each tensor's bytes, in table order, when it has them (a quantizer holds one tensor,
 * or one block, at a time), and elm_gguf_end makes the file. Tensor data start on 32-byte
 * boundaries, the gaps zero. Output goes through elm_out_* (core/fileio.h): until elm_gguf_end
 * succeeds nothing has the name path, and a writer freed without it removes what it wrote.
 *
 *     elm_gguf_writer *w = elm_gguf_writer_new(path, false);
 *     (keys, then elm_gguf_add_tensor for each tensor; or elm_gguf_begin_model for a model)
 *     st = elm_gguf_begin(w, err);
 *     for (i = 0; i < n && !st; i++) st = elm_gguf_write_tensor(w, i, bytes_i, nbytes_i, err);
 *     if (!st) st = elm_gguf_end(w, &file_bytes, err);
 *     elm_gguf_writer_free(w);
 */
#ifndef EDGELM_FORMATS_GGUF_WRITE_H
#define EDGELM_FORMATS_GGUF_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/model.h"

typedef struct elm_gguf_writer elm_gguf_writer;

/* A writer of the file `path` with no keys and no tensors yet, or NULL when out of memory; nothing
 * touches the disk before elm_gguf_begin. With pad_end the data end padded to the alignment too,
 * as llama.cpp writes them (importance matrices); edgelm's model files end at their last tensor's
 * bytes. */
elm_gguf_writer *elm_gguf_writer_new(const char *path, bool pad_end);

/* Metadata keys, in the file in the order they are added: a u32, a string (NUL-terminated), an
 * array of n strings. Their errors (only a lack of memory) are kept and returned by
 * elm_gguf_begin, so that a file's keys read as a list. */
void elm_gguf_kv_u32(elm_gguf_writer *w, const char *key, uint32_t v);
void elm_gguf_kv_str(elm_gguf_writer *w, const char *key, const char *s);
void elm_gguf_kv_strs(elm_gguf_writer *w, const char *key, const char *const *s, uint64_t n);

/* Appends a tensor to the table: its name, type and shape ne[0..n_dims-1] (n_dims 1..4, ne[0]
 * contiguous, each >= 1). Its size is rows of ne[0] weights in whole blocks of the type; a type
 * or shape that gives none is ELM_ERR_ARG naming the path and the tensor, returned by
 * elm_gguf_begin. */
void elm_gguf_add_tensor(elm_gguf_writer *w, const char *name, elm_type type, int n_dims,
                         const int64_t *ne);

/* Checks the description and creates the output (a temporary file beside path), then writes the
 * header, the keys and the tensor table. Errors: the first of the description (ELM_ERR_ARG,
 * ELM_ERR_UNSUPPORTED, ELM_ERR_NOMEM), or ELM_ERR_IO naming path. */
elm_status elm_gguf_begin(elm_gguf_writer *w, elm_error *err);

/* A new writer of path (*out) for model m with the tensors tensors[0..n-1] (their name, type,
 * n_dims and ne; data and nbytes unused), begun. Keys: general.architecture, general.name (when
 * set), general.file_type = file_type (llama.cpp's ftype), general.quantization_version = 2,
 * <arch>.{context_length, embedding_length, block_count, feed_forward_length,
 * attention.head_count, attention.head_count_kv, rope.dimension_count,
 * attention.layer_norm_rms_epsilon, rope.freq_base, vocab_size}, when they apply
 * <arch>.{attention.key_length, attention.value_length (head_dim not dim / heads),
 * attention.sliding_window, attention.sliding_window_pattern, rope.freq_base_swa,
 * final_logit_softcapping, rope.scaling.type = "linear", rope.scaling.factor}, a hybrid's
 * head_count_kv per layer (0: recurrent) and its recurrent kind's sizes (shortconv.l_cache;
 * ssm.{conv_kernel, inner_size, state_size, time_step_rank, group_count}), Granite's
 * {embedding_scale, residual_scale, attention.scale, logit_scale, rope.scaling.finetuned},
 * Gemma 4's head_count_kv and feed_forward_length per layer (where layers differ) and
 * {attention.sliding_window_pattern (bools), attention.key_length_swa, value_length_swa,
 * rope.dimension_count_swa, attention.shared_kv_layers, embedding_length_per_layer_input}, and
 * when the model has a vocab tokenizer.ggml.{model, pre (gpt2), tokens, scores, token_type, merges, bos/eos/
 * unknown/padding_token_id (those >= 0), add_bos_token, add_eos_token, add_space_prefix} and
 * tokenizer.chat_template. Errors as elm_gguf_begin's, and ELM_ERR_UNSUPPORTED for a byte-level
 * vocab whose pre-tokenizer GGUF has no name for. *out is NULL after an error. */
elm_status elm_gguf_begin_model(const char *path, const elm_model *m, const elm_tensor *tensors,
                                int32_t n, uint32_t file_type, elm_gguf_writer **out,
                                elm_error *err);

/* Writes the nbytes bytes of tensor i. Tensors go in table order: i must be the next one, and
 * nbytes its size, else ELM_ERR_ARG naming the path and the tensor (nothing is written);
 * ELM_ERR_IO naming path. */
elm_status elm_gguf_write_tensor(elm_gguf_writer *w, int32_t i, const void *data, size_t nbytes,
                                 elm_error *err);

/* Completes the file: every tensor written (else ELM_ERR_ARG), the end padded when asked, flushed,
 * synced and renamed over path; *file_bytes (may be NULL) receives its size. ELM_ERR_IO naming
 * path. After an error no file is left at path once the writer is freed. */
elm_status elm_gguf_end(elm_gguf_writer *w, uint64_t *file_bytes, elm_error *err);

/* Frees w (NULL allowed), removing the output of a writer begun and not ended. */
void elm_gguf_writer_free(elm_gguf_writer *w);

/* Writes model m as it is (its tensors, types and file_type) to path. Errors as
 * elm_gguf_begin_model's and elm_gguf_end's. */
elm_status elm_gguf_write_model(const elm_model *m, const char *path, elm_error *err);

#endif
