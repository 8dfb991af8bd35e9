/* Tensor element types (ggml type ids, GGUF spec) and their traits table: block size, bytes per
 * block, conversion to float, the round-to-nearest reference quantizer (docs/formats.md, "ggml
 * blocks") and what files and llama-quantize say of the type. One table drives dequantization,
 * quantization, the file types written and the kernels for every type. */
#ifndef EDGELM_TYPES_H
#define EDGELM_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum elm_type {
    ELM_TYPE_F32 = 0,
    ELM_TYPE_F16 = 1,
    ELM_TYPE_Q4_0 = 2,
    ELM_TYPE_Q4_1 = 3,
    ELM_TYPE_Q5_0 = 6,
    ELM_TYPE_Q5_1 = 7,
    ELM_TYPE_Q8_0 = 8,
    ELM_TYPE_Q2_K = 10,
    ELM_TYPE_Q3_K = 11,
    ELM_TYPE_Q4_K = 12,
    ELM_TYPE_Q5_K = 13,
    ELM_TYPE_Q6_K = 14,
    ELM_TYPE_IQ2_XXS = 16,
    ELM_TYPE_IQ2_XS = 17,
    ELM_TYPE_IQ3_XXS = 18,
    ELM_TYPE_IQ1_S = 19,
    ELM_TYPE_IQ4_NL = 20,
    ELM_TYPE_IQ3_S = 21,
    ELM_TYPE_IQ2_S = 22,
    ELM_TYPE_IQ4_XS = 23,
    ELM_TYPE_IQ1_M = 29,
    ELM_TYPE_BF16 = 30,
    ELM_TYPE_TQ1_0 = 34,
    ELM_TYPE_TQ2_0 = 35,
    ELM_TYPE_MXFP4 = 39,
    ELM_TYPE_COUNT = 40 /* one past the largest id; not a type */
} elm_type;

#define ELM_QK 32   /* weights per block of the legacy types (Q4_0 ... Q8_0), IQ4_NL and MXFP4 */
#define ELM_QK_K 256 /* weights per super-block of the k-quants and the i-quants but IQ4_NL */

typedef struct elm_type_traits {
    const char *name;    /* "f32", "q4_0", ... as llama.cpp spells them */
    int block_size;      /* elements per block: 1 for float types, 32 or 256 for quantized */
    size_t block_bytes;  /* bytes per block */
    double bits_per_weight;
    /* Decodes n elements (n a multiple of block_size) from src into dst. */
    void (*to_float)(const void *src, float *dst, int64_t n);
    /* Round-to-nearest reference encoding of n elements (n a multiple of block_size), bit-exact
     * with llama-quantize without importance matrix; NULL for a type edgelm reads but does not
     * write yet. */
    void (*from_float)(const float *src, void *dst, int64_t n);
    /* llama.cpp's general.file_type (LLAMA_FTYPE_*) for a file mostly of this type: 0 for F32
     * (all F32); for Q3_K, Q4_K and Q5_K their _M recipes' (12, 15, 17), as llama-quantize writes
     * for a whole file of one of them. */
    uint32_t file_type;
    /* The type llama-quantize writes instead when a row is not a multiple of block_size (Q4_K ->
     * Q5_0, IQ4_XS -> IQ4_NL; F16 for the 32-weight types); F16 again when that one does not fit
     * either. The float types name themselves (block_size 1 fits every row). */
    elm_type fallback;
    /* The index of the first of n_blocks blocks at src whose scale is not a number (MXFP4's E8M0
     * byte 0xff; the sub-4-bit i-quants' f16 scale NaN or infinite, as llama.cpp's row validation
     * refuses), or -1; NULL for the types not checked. Loaders refuse a tensor with such a
     * block. */
    int64_t (*bad_block)(const void *src, int64_t n_blocks);
    /* Whether llama-quantize writes this type only with an importance matrix (its
     * tensor_requires_imatrix: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS), but for the token embedding and
     * output, which it encodes without one where the type's encoder can. from_float is NULL for
     * a type whose encoder cannot (IQ2_XXS, IQ2_XS): it is written from importances only. */
    bool needs_imatrix;
} elm_type_traits;

/* Traits of a supported type, or NULL for an id edgelm does not handle. */
const elm_type_traits *elm_type_get(uint32_t type);

/* Whether edgelm writes `type`: it has a from_float, or it is written from an importance matrix
 * only (needs_imatrix; quantize refuses it without one). */
bool elm_type_writable(elm_type type);

/* Parses "q4_0", "f16", ... (case-insensitive); returns false if unknown. */
bool elm_type_from_name(const char *name, elm_type *out);

/* The names of the types edgelm reads ("f32, f16, q4_0, ...", by id), or with `writable` those it
 * also writes (elm_type_writable), for messages. A static string, built once (thread-safe). */
const char *elm_type_names(bool writable);

/* Bytes of a row of n elements, or 0 if n is not a multiple of the block size. */
size_t elm_row_bytes(elm_type type, int64_t n);

/* IEEE half <-> float (round to nearest even) and bfloat16 <-> float (round to nearest even,
 * NaN kept quiet), the conversions ggml uses. */
float elm_f16_to_f32(uint16_t h);
uint16_t elm_f32_to_f16(float f);
float elm_bf16_to_f32(uint16_t h);
uint16_t elm_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif
#endif
