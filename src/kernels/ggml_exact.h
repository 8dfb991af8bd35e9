/* The forward pass's pieces in llama.cpp's own float arithmetic, for --ggml-rounding
 * (elm_context_params.ggml_rounding): the order and rounding of every float operation of ggml's
 * x86 CPU backend as node-llama-cpp 3.21.1's prebuilt library runs it on an AVX-512 machine
 * (its zen4 variant: AVX2 k-quant dot products, AVX-512 F32 dots, exp and reductions, weights
 * repacked where ggml repacks them). The integers are the kernel tables' own; what differs is
 * how they and the floats are added: ggml keeps float lanes, each summing some positions, fuses
 * multiply and add, and adds the lanes in a fixed tree. A value one bit away from llama.cpp's
 * moves an 8-bit activation code of the next product now and then, and on a heavy-tailed model
 * one code moves logits by a few hundredths (docs/kquants.md, "Agreement with llama.cpp").
 * Plain C, one row at a time: a cross-checking mode, not a fast one. */
#ifndef EDGELM_KERNELS_GGML_EXACT_H
#define EDGELM_KERNELS_GGML_EXACT_H

#include "kernels/kernels.h"

/* A q8 row (kernels.h) as ggml's x86 quantize_row_q8_0 / q8_1 compute it: codes x·(127/max)
 * rounded to nearest even, d = max/127 and s = d·Σq both stored as f16. */
void elm_ggml_quantize_q8(const float *x, int64_t cols, void *row);

/* Whether elm_ggml_matmul computes products with weights w: F32, Q3_K, Q5_K, Q6_K, IQ4_XS, and
 * IQ4_NL, Q4_K and Q2_K when their row count is a multiple of 8 (llama.cpp repacks those; the
 * others go through its vec_dot, whose order is not followed here). */
bool elm_ggml_matmul_has(const elm_weights *w);

/* Rows [r0, r1) of a->y as llama.cpp computes them (kernels.h's matmul contract; a->xq: q8 rows
 * of elm_ggml_quantize_q8 for IQ4_NL, q8_K rows of elm_quantize_q8_k or NULL for the 256-weight
 * types). llama.cpp's product has the tokens [first, n_tok) (how many there are decides how
 * some products add); the tokens before first are computed as well, in some order.
 * scratch: elm_matmul_scratch_bytes(cols). */
void elm_ggml_matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, int64_t first,
                     void *scratch);

/* One query head's attention as llama.cpp's graph without flash attention computes it (kq by
 * ggml_vec_dot_f32, soft_max_ext, kqv by ggml_vec_dot_f32 or, for 2 or more tokens in the batch
 * (sgemm), llamafile's tinyBLAS); arguments as elm_kernels.attention. */
void elm_ggml_attention(const float *q, const float *k, const float *v, size_t stride,
                        int32_t n_pos, int head_dim, float scale, bool sgemm, float *scores,
                        float *out);

/* out[i] = silu(g[i]) · u[i] as ggml_vec_swiglu_f32 with AVX-512 computes it. */
void elm_ggml_swiglu(float *out, const float *g, const float *u, int64_t n);

/* out[i] = RMSNorm(x)[i] · w[i] as ggml_compute_forward_rms_norm_f32 (then ggml_mul): each square
 * rounded to float, summed in double, the mean rounded to float, the scale taken in float. */
void elm_ggml_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);

/* RoPE as ggml's rope op rotates (arguments as elm_kernels.rope; neox: rope_neox's pairing). */
void elm_ggml_rope(float *v, int n_heads, int head_dim, int rope_dim, const float *cs, bool neox);

#endif
