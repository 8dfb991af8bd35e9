/* Element codecs of the KV cache: f32, f16, and the symmetric 8- and 4-bit block formats of ggml's
 * Q8_0 and Q4_0 with a block length chosen per model along the head dimension (docs/formats.md, "ggml
 * blocks"; llama.cpp quantizes its cache the same way with 32-element blocks). A head of 8
 * dimensions gets blocks of 8, so a block never mixes two heads; with 32-element blocks the bytes
 * are exactly ggml's Q8_0 / Q4_0. */
#ifndef EDGELM_MODEL_KV_QUANT_H
#define EDGELM_MODEL_KV_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include "edgelm/types.h"

/* Elements per block for cache type t on heads of head_dim: 1 for f32/f16; for q8_0/q4_0 32 when
 * head_dim is a multiple of 32, else head_dim when it divides 32 (q4_0: and is even); 0 when the
 * type or the head size is not supported. */
int32_t elm_kv_block(elm_type t, int32_t head_dim);

/* Bytes of n elements (a multiple of block) of type t. */
size_t elm_kv_bytes(elm_type t, int32_t block, int64_t n);

/* n floats (a multiple of block) to type t: q8_0 blocks are an f16 scale d = amax/127 and
 * round(x/d) as int8; q4_0 blocks are d = (value of largest magnitude)/-8 and 4-bit
 * min(15, trunc(x/d + 8.5)), element j and j + block/2 sharing byte j. */
void elm_kv_encode(elm_type t, int32_t block, const float *x, void *dst, int64_t n);

/* n elements of type t back to floats. */
void elm_kv_decode(elm_type t, int32_t block, const void *src, float *y, int64_t n);

#endif
