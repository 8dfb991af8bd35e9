/* safetensors reader (docs/formats.md, "safetensors"): `uint64 N` (LE), N bytes of JSON describing each
 * tensor's dtype, shape and byte range, then the data buffer. The file is mmapped and every entry
 * validated before anyone touches the data: header within the file, known dtype, 1..4 dimensions,
 * byte range within the buffer and equal to product(shape) * dtype size, no two ranges overlapping.
 * `__metadata__` is ignored. */
#ifndef EDGELM_FORMATS_SAFETENSORS_H
#define EDGELM_FORMATS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/model.h"

/* elm_st_tensor.type of a U8 tensor: bytes with no ggml type of their own (the MXFP4 blocks and
 * scales of gpt-oss's original checkpoint, which the HF loader repacks). */
#define ELM_ST_U8 ELM_TYPE_COUNT

typedef struct elm_st_tensor {
    char *name;                   /* owned copy of the JSON key */
    elm_type type;                /* F32, F16, BF16 or ELM_ST_U8 */
    int n_dims;                   /* 1..4 */
    int64_t shape[ELM_MAX_DIMS];  /* as stored (PyTorch order): shape[n_dims-1] is contiguous */
    uint64_t begin, end;          /* byte range relative to the data buffer */
    const void *data;             /* into the mapping; may be unaligned for its element type */
    size_t nbytes;
} elm_st_tensor;

typedef struct elm_st_file {
    char path[1024];
    void *map;                    /* the whole file; set to NULL once handed to a model */
    size_t map_size;
    int32_t n_tensors;
    elm_st_tensor *tensors;       /* [n_tensors], sorted by name */
} elm_st_file;

/* Largest JSON header accepted, bytes (the limit the reference implementation uses). */
#define ELM_ST_MAX_HEADER 100000000u

/* Maps and validates `path`. On failure nothing is left open and f is zeroed. Errors name the file
 * (and the tensor): ELM_ERR_IO (missing/unreadable), ELM_ERR_FORMAT ("header longer than the
 * file", "offsets disagree with dtype x shape", overlapping ranges, bad JSON),
 * ELM_ERR_UNSUPPORTED (a dtype other than F32/F16/BF16/U8). */
elm_status elm_st_open(elm_st_file *f, const char *path, elm_error *err);

/* Tensor by exact name (binary search), or NULL. */
const elm_st_tensor *elm_st_find(const elm_st_file *f, const char *name);

/* Frees the entries and unmaps the file unless the mapping was taken (f->map == NULL). */
void elm_st_close(elm_st_file *f);

#endif
