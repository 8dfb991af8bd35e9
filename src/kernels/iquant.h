/* Products with the sub-4-bit i-quants and ternary types (codecs/iquant_codec.h): each block is
 * unpacked into kquant.h's canonical super-block (q, odd scales sc, no mins), whose integer dot
 * product with a q8_K row is ggml's ggml_vec_dot_*_q8_K_generic's: the same integer sums, and the
 * float result d·x.d·isum, which equals ggml's once its factors 1/8 and 1/4 (folded into d here)
 * and IQ1's ±1/8 shift (folded into q) are taken out, since those only move exponents. Every
 * table runs them through the scalar pieces for now; SIMD unpacking is a later step. */
#ifndef EDGELM_KERNELS_IQUANT_H
#define EDGELM_KERNELS_IQUANT_H

#include "kernels/kquant.h"

/* Unpacks n super-blocks of type t (elm_type_iquant) at src into out[n]. */
void elm_iq_unpack(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out);

#endif
