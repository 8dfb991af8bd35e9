/* Products with the sub-4-bit i-quants and ternary types (codecs/iquant_codec.h): each block is
 * unpacked into kquant.h's canonical super-block (q, odd scales sc, no mins), whose integer dot
 * product with a q8_K row is ggml's ggml_vec_dot_*_q8_K_generic's: the same integer sums, and the
 * float result d·x.d·isum, which equals ggml's once its factors 1/8 and 1/4 (folded into d here)
 * and IQ1's ±1/8 shift (folded into q) are taken out, since those only move exponents. This is
 * the scalar unpacking (the oracle); the SIMD tables unpack in vectors (x86/iquant_unpack.h,
 * arm/iquant_unpack.h) and run the blocks through their gemm16 tiles and (NEON) dot products;
 * the x86 tables' decode builds the same vectors chunk by chunk straight into its dot products
 * (dot_packed, decode_rows), all types but TQ1_0. */
#ifndef EDGELM_KERNELS_IQUANT_H
#define EDGELM_KERNELS_IQUANT_H

#include "kernels/kquant.h"

/* Unpacks n super-blocks of type t (elm_type_iquant) at src into out[n]. */
void elm_iq_unpack(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out);

/* The grid values of one block (elm_iquant_values, or an ISA's version of it). */
typedef void (*elm_iq_values_fn)(elm_type t, const elm_iq_grids *G, const uint8_t *block,
                                 int8_t q[256]);

/* elm_iq_unpack with the grid values from `values`: the tables' unpacking. */
void elm_iq_unpack_with(elm_iq_values_fn values, elm_type t, const uint8_t *src, int64_t n,
                        elm_kq_block *out);

#endif
