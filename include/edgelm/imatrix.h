/* Importance matrices (llama.cpp's imatrix GGUF, `llama-imatrix` / `llama-quantize --imatrix`):
 * for each linear layer, the mean over calibration tokens of the squared input activation of every
 * input column, E[x_j²]. Quantizers weight each weight's rounding error by its column's value, so
 * the columns that carry the most signal are kept most precisely.
 *
 * File layout (GGUF v3): keys general.type = "imatrix", imatrix.datasets (array of strings),
 * imatrix.chunk_count and imatrix.chunk_size (u32); per weight W two F32 tensors, "W.in_sum2"
 * [n_in, n_mat] (sum over tokens of x²) and "W.counts" [1, n_mat] (tokens seen). */
#ifndef EDGELM_IMATRIX_H
#define EDGELM_IMATRIX_H

#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_imatrix_entry {
    char name[ELM_NAME_MAX]; /* the weight, e.g. "blk.0.attn_q.weight" */
    int64_t n;               /* values: n_in (times n_mat for 3-D weights) */
    float *sum2;             /* [n] Σ x² over the tokens seen */
    float *count;            /* [n_mat] tokens seen, n_mat = n / n_in */
    int64_t n_mat;
} elm_imatrix_entry;

typedef struct elm_imatrix {
    int32_t n;                  /* entries */
    elm_imatrix_entry *entries; /* [n] */
    char dataset[256];          /* first of imatrix.datasets, "" when none */
    uint32_t chunk_count, chunk_size;
} elm_imatrix;

/* Reads path. Errors (ELM_ERR_FORMAT naming path, and the tensor where there is one): not GGUF,
 * truncated, a tensor that is not F32, a tensor name given twice, an in_sum2 without counts or the
 * reverse, sizes that do not divide; ELM_ERR_IO; ELM_ERR_NOMEM. Free with elm_imatrix_free. */
elm_status elm_imatrix_load(const char *path, elm_imatrix *im, elm_error *err);
void elm_imatrix_free(elm_imatrix *im);

/* The entry for weight `name`, or NULL. */
const elm_imatrix_entry *elm_imatrix_find(const elm_imatrix *im, const char *name);

/* The quantization weights of entry e as llama-quantize computes them: sum2 / count per matrix
 * (1 where a matrix saw no token), n values into out. */
void elm_imatrix_weights(const elm_imatrix_entry *e, float *out);

/* Every entry of im names a tensor of m with as many input columns as the entry has values (an
 * expert stack: its columns times its experts; a one-row weight may be stored 1-D),
 * its sums are finite and >= 0 and its counts >= 0; else ELM_ERR_FORMAT naming `path` (the imatrix
 * file) and the tensor. */
elm_status elm_imatrix_check(const elm_imatrix *im, const elm_model *m, const char *path,
                             elm_error *err);

/* llama-imatrix's computation: tokens (the text with its BOS) cut into n_tokens / n_ctx chunks of
 * n_ctx tokens, each run from an empty KV cache with its first token replaced by BOS (when the
 * vocab adds one); for every linear weight of the blocks ("blk.*"), Σ x² of each input column over
 * all tokens and the token count; for a mixture of experts' stacks (ffn_{gate,up,down}_exps), per
 * expert: the sums [n_expert, n_in] and counts [n_expert] over the tokens routed to it (an expert
 * no token reached keeps zeros, as llama-imatrix writes it; the router, ffn_gate_inp, is a 2-D
 * weight like the others). dataset names the text in the file. n_threads as elsewhere;
 * progress (may be NULL) is called after each chunk with done of total chunks.
 * ELM_ERR_ARG when there are fewer than 2·n_ctx tokens or n_ctx exceeds the model's context;
 * the forward pass's errors; ELM_ERR_NOMEM. Free with elm_imatrix_free. */
typedef void (*elm_imatrix_progress_fn)(int32_t done, int32_t total, void *user);
elm_status elm_imatrix_compute(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                               int32_t n_ctx, int32_t n_threads, const char *dataset,
                               elm_imatrix_progress_fn progress, void *user, elm_imatrix *im,
                               elm_error *err);

/* Writes im to path in the layout above (temporary file, renamed on success). ELM_ERR_IO. */
elm_status elm_imatrix_save(const elm_imatrix *im, const char *path, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
