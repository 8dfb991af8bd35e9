/* Linear layers and embeddings of an edgelm model as ONNX nodes, keeping the weights' encoding
 * (onnx_linear.c). */
#ifndef EDGELM_EXPORT_ONNX_LINEAR_H
#define EDGELM_EXPORT_ONNX_LINEAR_H

#include "edgelm/model.h"
#include "edgelm/export.h"
#include "export/onnx_build.h"


/* y = x · Wᵀ for w of ggml shape ne = {K, N} (x [..., K] float, y [..., N]), named after w:
 *   Q4_0 -> com.microsoft MatMulNBits bits 4, block_size 32, scale d, zero point 8;
 *   Q4_1 -> MatMulNBits bits 4 with float zero points -m/d (value (q - zp)·d = q·d + m; a block
 *           with d = 0 becomes codes 0, zero point -1 and scale m);
 *   Q8_0 -> MatMulNBits bits 8, scale d, zero point 128 (codes q + 128);
 *   F32, F16 -> MatMul with the transposed [K, N] initializer (F16 through a Cast to float);
 *   BF16 -> MatMul with its exact F32 values;
 *   others -> re-quantized to Q8_0 from their dequantized values, with one warning.
 * With g->qdq (the form of ONNX Runtime's QNN execution provider), Q4_0 and Q8_0 become int4 /
 * int8 DequantizeLinear (opset 21, blocked along K, scale d, zero point 0) feeding MatMul, and
 * Q4_1 (whose zero point -m/d is no integer) is re-quantized with the others.
 * MatMulNBits nodes carry g->accuracy_level: 4 has ONNX Runtime round the activations to 8-bit
 * blocks of 32 and multiply in integers, as edgelm's block products do; 0 multiplies in float.
 * Memory: one tensor's converted copy. Returns the output name ("" after a failure, which
 * ox_error reports). */
const char *ox_linear(ox_graph *g, const elm_tensor *w, const char *x, elm_export_warn_fn warn,
                      void *user);

/* Float [rows, cols] initializer of the rows of table t (any type, decoded exactly), for Gather. */
const char *ox_table_f32(ox_graph *g, const elm_tensor *t);

#endif
