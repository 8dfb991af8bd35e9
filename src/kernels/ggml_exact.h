/* The forward pass's pieces in llama.cpp's own float arithmetic, gathered in the kernel table
 * elm_kernels_ggml (kernels.h) of --ggml-rounding (elm_context_params.ggml_rounding): the order
 * and rounding of every float operation of ggml's x86 CPU backend as node-llama-cpp 3.21.1's
 * prebuilt library runs it on an AVX-512 machine (its zen4 variant: AVX2 k-quant dot products,
 * AVX-512 F32 dots, exp and reductions, weights repacked where ggml repacks them). The integers
 * are the kernel tables' own; what differs is how they and the floats are added: ggml keeps
 * float lanes, each summing some positions, fuses multiply and add, and adds the lanes in a
 * fixed tree. A value one bit away from llama.cpp's moves an 8-bit activation code of the next
 * product now and then, and on a heavy-tailed model one code moves logits by a few hundredths
 * (docs/kquants.md, "Agreement with llama.cpp"). Plain C, one row at a time: a cross-checking
 * mode, not a fast one. */
#ifndef EDGELM_KERNELS_GGML_EXACT_H
#define EDGELM_KERNELS_GGML_EXACT_H

#include "kernels/kernels.h"

/* Whether elm_ggml_matmul computes products with weights w: F32, F16, Q3_K, Q5_K, Q6_K, IQ4_XS,
 * the IQ2 and IQ3 types, and IQ4_NL, MXFP4, Q4_K and Q2_K when their row count is a multiple of 8
 * (llama.cpp repacks those; the others go through its vec_dot, whose order is not followed
 * here). */
bool elm_ggml_matmul_has(const elm_weights *w);

/* Rows [r0, r1) of a->y as llama.cpp computes them (kernels.h's matmul contract, weights in the
 * file's layout; a->xq: q8 rows of elm_kernels_ggml()'s quantize_q8 for IQ4_NL and MXFP4, q8_K
 * rows of elm_quantize_q8_k or NULL for the 256-weight types). llama.cpp's product has the tokens
 * [a->out_first, n_tok) (how many there are decides how some products add); the tokens before
 * are computed as well, in some order. scratch: elm_matmul_scratch_bytes(cols). */
void elm_ggml_matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch);

#endif
