/* The builder interface loaders (src/formats) and model writers (src/shapes) use to fill an
 * elm_model: create it, add tensors over storage it owns, then bind names to layer slots. Not part
 * of the public API: apps get models from elm_model_load. */
#ifndef EDGELM_MODEL_BUILDER_H
#define EDGELM_MODEL_BUILDER_H

#include "edgelm/model.h"
#include "kernels/kernels.h"

/* Creates an empty model for `path`/`format`. */
elm_model *elm_model_new(const char *path, const char *format, elm_error *err);

/* Adds a tensor (name copied, data borrowed from storage the model owns). Validates n_dims in
 * [1,4], every ne >= 1, the element count and byte size against overflow and against `type`
 * (ne[0] a multiple of the block size); nbytes must equal the computed size; a type with a
 * bad_block trait (MXFP4, the sub-4-bit i-quants) must have no block whose scale is not finite
 * (the error names the tensor and the first such block), checked unless data lies in a file
 * mapping (elm_model_own_file_mapping), whose pages the scan would all read. */
elm_status elm_model_add_tensor(elm_model *m, const char *name, elm_type type, int n_dims,
                                const int64_t *ne, void *data, size_t nbytes, elm_error *err);

/* Checks n_blocks blocks of type t at data (a type with a bad_block trait; others pass) for a
 * scale that is not a finite number. ELM_ERR_FORMAT "PATH: tensor 'NAME' block K has a bad TYPE
 * scale", K counted from first (the data's first block in the tensor). */
elm_status elm_check_block_scales(const char *path, const char *name, elm_type t, const void *data,
                                  int64_t n_blocks, int64_t first, elm_error *err);

/* Hands a malloc'd buffer or an mmap to the model, freed by elm_model_free. */
elm_status elm_model_own_buffer(elm_model *m, void *buf, elm_error *err);
elm_status elm_model_own_mapping(elm_model *m, void *addr, size_t len, elm_error *err);
/* Hands a mapping of the model file itself (--mmap: its pages read on first touch) to the model;
 * tensors in it skip elm_model_add_tensor's bad_block scan. */
elm_status elm_model_own_file_mapping(elm_model *m, void *addr, size_t len, elm_error *err);

/* After tensors and hparams are set: validates hparams (positive sizes, heads dividing dim when
 * head_dim is not given, n_heads % n_kv_heads == 0, an architecture of elm_arch_find), sets the
 * architecture's rope_style, ffn_act and embd_scale, finds every tensor by GGUF name, checks its
 * shape, splits fused tensors into row views, ties the output to the embedding when output.weight
 * is absent, and checks the vocab size matches. Errors name m->path and the tensor. */
elm_status elm_model_bind(elm_model *m, elm_error *err);

/* Finds tensor `name` of m into *slot and checks it is a matrix [rows, cols] (ggml ne = {cols,
 * rows}) or, with rows 0, a vector of cols. ELM_ERR_FORMAT naming m->path and the tensor when it
 * is missing or of another shape. For the layer kinds' bind (model/layer_kind.h). */
elm_status elm_model_bind_tensor(elm_model *m, elm_tensor **slot, const char *name, int64_t cols,
                                 int64_t rows, elm_error *err);

/* After binding, for a model whose tensors lie in writable memory it owns: lays out the layers'
 * matrices (and an untied output) of the types k packs in k's layout, in place, and marks them
 * packed by k (elm_tensor.packed_by: only a context of k's kernels runs them); a stack of
 * experts' matrices expert by expert, so that each expert's view is packed alike. Tensors that
 * fused row views point into are left as they are. ELM_ERR_NOMEM when a matrix's temporary copy
 * cannot be allocated (the model is then unchanged from that matrix on). */
elm_status elm_model_pack(elm_model *m, const elm_kernels *k, elm_error *err);

#endif
