/* The ggml 32-weight block types' codecs for the traits table (legacy.c): n weights, a multiple of
 * ELM_QK, decoded from src or encoded into dst, bit-exact with llama-quantize without an
 * importance matrix. Layouts: docs/formats.md, "ggml blocks". */
#ifndef EDGELM_CODECS_LEGACY_H
#define EDGELM_CODECS_LEGACY_H

#include <stdint.h>

#include "edgelm/types.h"

void elm_q8_0_to_float(const void *src, float *dst, int64_t n);
void elm_q4_0_to_float(const void *src, float *dst, int64_t n);
void elm_q4_1_to_float(const void *src, float *dst, int64_t n);
void elm_q5_0_to_float(const void *src, float *dst, int64_t n);
void elm_q5_1_to_float(const void *src, float *dst, int64_t n);
void elm_q8_0_from_float(const float *src, void *dst, int64_t n);
void elm_q4_0_from_float(const float *src, void *dst, int64_t n);
void elm_q4_1_from_float(const float *src, void *dst, int64_t n);
void elm_q5_0_from_float(const float *src, void *dst, int64_t n);
void elm_q5_1_from_float(const float *src, void *dst, int64_t n);

#endif
