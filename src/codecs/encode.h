/* One entry point for importance-weighted encoding of any writable type (quant_weighted.c). */
#ifndef EDGELM_CODECS_ENCODE_H
#define EDGELM_CODECS_ENCODE_H

#include <stdint.h>

#include "edgelm/types.h"

/* Encodes one row x[n] of `type` into dst (elm_row_bytes(type, n) bytes), weighting each weight's
 * rounding error by qw[j] (the row's importance, llama.cpp's quant_weights; per column, so the
 * same for every row of a matrix), as llama.cpp's quantize_<type> with quant_weights does: Q4_0,
 * Q4_1, Q5_0, Q5_1 (quantize_row_q*_impl), Q2_K..Q6_K, IQ4_NL, IQ4_XS, and IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S (iquant_codec.h; IQ2_XXS and IQ2_XS only with qw). qw NULL, or a type that
 * takes no weights (Q8_0, F16, BF16, F32), gives the type's reference encoder. n must be a
 * multiple of the type's block size. */
void elm_encode_row(elm_type type, const float *x, void *dst, int64_t n, const float *qw);

#endif
