/* ggml's super-block quantized types (k-quants Q2_K..Q6_K and the non-linear IQ4_NL, IQ4_XS):
 * decoders for the type traits table and the pieces of their layouts that kernels and encoders
 * share. Layouts: docs/kquants.md. */
#ifndef EDGELM_CORE_KQUANT_H
#define EDGELM_CORE_KQUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelm/types.h"

/* Decoders for the traits table: n weights (a multiple of the type's block size) from src. */
void elm_q2_k_to_float(const void *src, float *dst, int64_t n);
void elm_q3_k_to_float(const void *src, float *dst, int64_t n);
void elm_q4_k_to_float(const void *src, float *dst, int64_t n);
void elm_q5_k_to_float(const void *src, float *dst, int64_t n);
void elm_q6_k_to_float(const void *src, float *dst, int64_t n);
void elm_iq4_nl_to_float(const void *src, float *dst, int64_t n);
void elm_iq4_xs_to_float(const void *src, float *dst, int64_t n);

/* Reference encoders for the traits table (from_float): n weights (a multiple of the block size),
 * bit-exact with llama-quantize without an importance matrix (kquant_encode.c). */
void elm_q2_k_from_float(const float *src, void *dst, int64_t n);
void elm_q3_k_from_float(const float *src, void *dst, int64_t n);
void elm_q4_k_from_float(const float *src, void *dst, int64_t n);
void elm_q5_k_from_float(const float *src, void *dst, int64_t n);
void elm_q6_k_from_float(const float *src, void *dst, int64_t n);
void elm_iq4_nl_from_float(const float *src, void *dst, int64_t n);
void elm_iq4_xs_from_float(const float *src, void *dst, int64_t n);

/* n weights x of one of the types above into dst, weighted by the per-weight importances qw[n]
 * (llama.cpp's quantize_q*_K / quantize_iq4_* with quant_weights; NULL: the reference encoder).
 * Other types: nothing written. */
void elm_kquant_encode(elm_type type, const float *x, void *dst, int64_t n, const float *qw);

/* The 16 levels of IQ4_NL/IQ4_XS's non-linear 4-bit grid. */
extern const int8_t elm_iq4nl_grid[16];

/* Q4_K/Q5_K: the 6-bit scale and min of sub-block j < 8 from the 12 packed bytes s. */
void elm_kquant_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m);

/* Q3_K: the sixteen signed sub-block scales (6 bits, offset 32 removed) from the 12 bytes s. */
void elm_q3_k_scales(const uint8_t *s, int8_t out[16]);

#endif
