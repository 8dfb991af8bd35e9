/* The block types' codecs, for the type traits table (core/types.c): n weights, a multiple of the
 * type's block size, decoded from src or encoded into dst by round to nearest, bit-exact with
 * llama-quantize without an importance matrix. The ggml 32-weight types in legacy.c (layouts:
 * docs/formats.md, "ggml blocks"), the super-block types in kquant_decode.c and kquant_encode.c
 * (docs/kquants.md), MXFP4 in mxfp4.c (codecs/mxfp4.h). */
#ifndef EDGELM_CODECS_CODECS_H
#define EDGELM_CODECS_CODECS_H

#include <stdint.h>

void elm_q8_0_to_float(const void *src, float *dst, int64_t n);
void elm_q4_0_to_float(const void *src, float *dst, int64_t n);
void elm_q4_1_to_float(const void *src, float *dst, int64_t n);
void elm_q5_0_to_float(const void *src, float *dst, int64_t n);
void elm_q5_1_to_float(const void *src, float *dst, int64_t n);
void elm_q2_k_to_float(const void *src, float *dst, int64_t n);
void elm_q3_k_to_float(const void *src, float *dst, int64_t n);
void elm_q4_k_to_float(const void *src, float *dst, int64_t n);
void elm_q5_k_to_float(const void *src, float *dst, int64_t n);
void elm_q6_k_to_float(const void *src, float *dst, int64_t n);
void elm_iq4_nl_to_float(const void *src, float *dst, int64_t n);
void elm_iq4_xs_to_float(const void *src, float *dst, int64_t n);
/* the sub-4-bit types: iquant_decode.c (iquant_codec.h) */
void elm_iq2_xxs_to_float(const void *src, float *dst, int64_t n);
void elm_iq2_xs_to_float(const void *src, float *dst, int64_t n);
void elm_iq2_s_to_float(const void *src, float *dst, int64_t n);
void elm_iq3_xxs_to_float(const void *src, float *dst, int64_t n);
void elm_iq3_s_to_float(const void *src, float *dst, int64_t n);
void elm_iq1_s_to_float(const void *src, float *dst, int64_t n);
void elm_iq1_m_to_float(const void *src, float *dst, int64_t n);
void elm_tq1_0_to_float(const void *src, float *dst, int64_t n);
void elm_tq2_0_to_float(const void *src, float *dst, int64_t n);
/* their traits' bad_block: the first block whose f16 scale is NaN or infinite, or -1 */
int64_t elm_iq2_xxs_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq2_xs_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq2_s_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq3_xxs_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq3_s_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq1_s_bad_block(const void *src, int64_t n_blocks);
int64_t elm_iq1_m_bad_block(const void *src, int64_t n_blocks);
int64_t elm_tq1_0_bad_block(const void *src, int64_t n_blocks);
int64_t elm_tq2_0_bad_block(const void *src, int64_t n_blocks);
void elm_mxfp4_to_float(const void *src, float *dst, int64_t n);

void elm_q8_0_from_float(const float *src, void *dst, int64_t n);
void elm_q4_0_from_float(const float *src, void *dst, int64_t n);
void elm_q4_1_from_float(const float *src, void *dst, int64_t n);
void elm_q5_0_from_float(const float *src, void *dst, int64_t n);
void elm_q5_1_from_float(const float *src, void *dst, int64_t n);
void elm_q2_k_from_float(const float *src, void *dst, int64_t n);
void elm_q3_k_from_float(const float *src, void *dst, int64_t n);
void elm_q4_k_from_float(const float *src, void *dst, int64_t n);
void elm_q5_k_from_float(const float *src, void *dst, int64_t n);
void elm_q6_k_from_float(const float *src, void *dst, int64_t n);
void elm_iq4_nl_from_float(const float *src, void *dst, int64_t n);
void elm_iq4_xs_from_float(const float *src, void *dst, int64_t n);
void elm_mxfp4_from_float(const float *src, void *dst, int64_t n);
/* the lattice i-quants that llama.cpp writes without an importance matrix (iquant_encode_grid.c) */
void elm_iq2_s_from_float(const float *src, void *dst, int64_t n);
void elm_iq3_xxs_from_float(const float *src, void *dst, int64_t n);
void elm_iq3_s_from_float(const float *src, void *dst, int64_t n);

#endif
