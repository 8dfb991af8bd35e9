/* Byte ranges of the tensors in one file's data area, checked to be disjoint: two tensors that
 * share bytes would alias each other's weights and silently change the model's output. Used by
 * every loader that reads offsets from the file (GGUF, safetensors). */
#ifndef EDGELM_FORMATS_RANGES_H
#define EDGELM_FORMATS_RANGES_H

#include <stddef.h>
#include <stdint.h>
#include "edgelm/error.h"

typedef struct elm_byte_range {
    const char *name; /* the tensor's name, for the message */
    uint64_t begin;   /* first byte, relative to the data area */
    uint64_t end;     /* one past the last byte (end == begin: an empty tensor) */
} elm_byte_range;

/* Sorts r[0..n) by begin (in place) and fails with ELM_ERR_FORMAT
 * "PATH: tensors 'A' and 'B' have overlapping offsets" naming the first pair, in file order, whose
 * ranges share a byte. Sorted by begin, some adjacent pair overlaps whenever any pair does, so one
 * pass finds it. */
elm_status elm_ranges_check_disjoint(const char *path, elm_byte_range *r, size_t n,
                                     elm_error *err);

#endif
