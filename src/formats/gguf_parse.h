/* GGUF v2/v3 parsing (docs/formats.md, "GGUF v3"), the one parser of the format: the model loader
 * (gguf_read.c) and the importance-matrix reader (quant/imatrix.c) read through it. Over a file's
 * bytes the caller holds (mapped or read in), it checks the header, indexes every key/value pair,
 * looks values up by key and type, and reads the tensor table.
 *
 * Every count, length and offset read from the file is checked against the bytes that remain
 * before it is used, and before anything is allocated from it, so a hostile or truncated file ends
 * in an error naming the file and the problem, never in a crash or a huge allocation. */
#ifndef EDGELM_FORMATS_GGUF_PARSE_H
#define EDGELM_FORMATS_GGUF_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/model.h"

/* GGUF's value types, as the file numbers them. */
enum {
    ELM_GGUF_U8, ELM_GGUF_I8, ELM_GGUF_U16, ELM_GGUF_I16, ELM_GGUF_U32, ELM_GGUF_I32, ELM_GGUF_F32,
    ELM_GGUF_BOOL, ELM_GGUF_STRING, ELM_GGUF_ARRAY, ELM_GGUF_U64, ELM_GGUF_I64, ELM_GGUF_F64,
    ELM_GGUF_NTYPES
};

/* Longest tensor name the table can hold, NUL included: a model's (ELM_NAME_MAX) with room for
 * the suffixes llama.cpp's importance matrices add (".in_sum2"). */
#define ELM_GGUF_NAME_MAX (ELM_NAME_MAX + 16)

/* A string in the file: not NUL-terminated. */
typedef struct elm_gguf_str {
    const char *s;
    size_t len;
} elm_gguf_str;

typedef struct elm_gguf_kv {
    elm_gguf_str key;
    uint32_t type;
    size_t val;         /* file offset of the value (for arrays: of the first element) */
    uint32_t elem_type; /* arrays only */
    uint64_t count;     /* arrays only */
} elm_gguf_kv;

/* A tensor of the table: its name, shape (unused dims 1), a type edgelm knows with rows of whole
 * blocks, and its data, nbytes from type and shape, aligned and inside the file. */
typedef struct elm_gguf_tensor {
    char name[ELM_GGUF_NAME_MAX];
    int n_dims;
    int64_t ne[ELM_MAX_DIMS];
    elm_type type;
    uint64_t offset; /* from the start of the data */
    uint64_t nbytes;
    const uint8_t *data;
} elm_gguf_tensor;

typedef struct elm_gguf {
    const uint8_t *base;
    size_t size, pos; /* pos: where parsing has got to */
    const char *path;
    uint64_t n_tensors, n_kv;
    elm_gguf_kv *kv;          /* [n_kv] */
    elm_gguf_tensor *tensors; /* [n_tensors] once elm_gguf_read_tensors has run, else NULL */
} elm_gguf;

/* Parses the header and indexes the key/value pairs of the size bytes at addr (the file `path`,
 * named in errors; both must outlive g). Errors: ELM_ERR_FORMAT (bad magic, truncated, counts that
 * cannot fit, an unknown value type, arrays nested too deeply, a key given twice),
 * ELM_ERR_UNSUPPORTED (GGUF versions other than 2 and 3), ELM_ERR_NOMEM. Release g with
 * elm_gguf_close, also after an error. */
elm_status elm_gguf_open(elm_gguf *g, const char *path, const void *addr, size_t size,
                         elm_error *err);

/* Reads the tensor table that follows the keys into g->tensors: names of 1 to max_name - 1 bytes
 * (max_name <= ELM_GGUF_NAME_MAX) without NUL, 1 to 4 dimensions, types edgelm knows, data on the
 * file's alignment (general.alignment, default 32), inside the file and not overlapping another
 * tensor's. Errors: ELM_ERR_FORMAT naming the tensor, ELM_ERR_UNSUPPORTED for a type edgelm does not
 * read, ELM_ERR_NOMEM. */
elm_status elm_gguf_read_tensors(elm_gguf *g, size_t max_name, elm_error *err);

/* Frees g's index and tensor table, not the file's bytes (also after a failed open). */
void elm_gguf_close(elm_gguf *g);

/* The pair with this key, or NULL. */
const elm_gguf_kv *elm_gguf_find(const elm_gguf *g, const char *key);

/* Typed lookups of optional keys: *out (and *found) unchanged when the key is absent, ELM_OK.
 * ELM_ERR_FORMAT naming the key when its value has another type: an integer of any type in
 * [lo, hi] (a u64 above INT64_MAX is out of range); an f32 (or f64, rounded); a bool; a string
 * (pointing into the file); an array of elements of type et, and of want_count elements when
 * want_count >= 0 (*out NULL when absent). */
elm_status elm_gguf_get_int(const elm_gguf *g, const char *key, int64_t lo, int64_t hi,
                            int64_t *out, elm_error *err);
elm_status elm_gguf_get_f32(const elm_gguf *g, const char *key, float *out, elm_error *err);
elm_status elm_gguf_get_bool(const elm_gguf *g, const char *key, bool *out, elm_error *err);
elm_status elm_gguf_get_str(const elm_gguf *g, const char *key, elm_gguf_str *out, bool *found,
                            elm_error *err);
elm_status elm_gguf_get_array(const elm_gguf *g, const char *key, uint32_t et, int64_t want_count,
                              const elm_gguf_kv **out, elm_error *err);

/* A per-layer integer key (llama.cpp writes some as one value, some as an array per layer):
 * out[0..n) from an array of n integers (or bools), or a scalar repeated; out unchanged when
 * the key is absent. *is_array tells which. ELM_ERR_FORMAT naming the file and key for another
 * type, an array of other than n elements, or a value outside [lo, hi] (lo >= INT32_MIN,
 * hi <= INT32_MAX). */
elm_status elm_gguf_get_layer_ints(const elm_gguf *g, const char *key, int32_t n, int64_t lo,
                                   int64_t hi, int32_t *out, bool *is_array, elm_error *err);

/* The string at *pos of a string array elm_gguf_get_array returned (its lengths are checked), and
 * *pos moved past it: start at kv->val. */
elm_gguf_str elm_gguf_next_str(const elm_gguf *g, size_t *pos);

/* Whether s holds exactly the NUL-terminated string lit. */
bool elm_gguf_str_is(elm_gguf_str s, const char *lit);

#endif
