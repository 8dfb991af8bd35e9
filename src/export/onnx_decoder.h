/* The decoder graph of an edgelm model in onnxruntime-genai's layout (onnx_decoder.c). */
#ifndef EDGELM_EXPORT_ONNX_DECODER_H
#define EDGELM_EXPORT_ONNX_DECODER_H

#include "edgelm/model.h"
#include "export/onnx_build.h"
#include "export/onnx_act.h"
#include "export/onnx_linear.h"

/* Checks that the graph can compute m's forward pass exactly: SwiGLU FFN, RoPE over the whole
 * head. ELM_ERR_UNSUPPORTED naming m->path and the architecture otherwise. */
elm_status ox_decoder_check(const elm_model *m, elm_error *err);

/* Adds to g the decoder of m with a KV cache:
 *   inputs  input_ids [batch, seq] int64, attention_mask [batch, total] int64, position_ids
 *           [batch, seq] int64, past_key_values.N.key/.value [batch, kv_heads, past, head_dim];
 *   outputs logits [batch, seq, vocab] and present.N.key/.value [batch, kv_heads, total, head_dim].
 * It computes elm_forward: embedding, per layer RMSNorm, q/k/v, RoPE (interleaved or NEOX, from
 * cos/sin tables of cosf/sinf at positions 0..n_pos-1 and the context's RoPE frequencies),
 * causal GQA attention (softmax of q·k/sqrt(head_dim), masked by attention_mask and the sliding
 * window), Wo, residual, RMSNorm, SwiGLU, residual; final RMSNorm and output. inv_freq holds
 * rope_dim/2 frequencies. seq < 0: batch, seq and past are symbolic; else the graph is static:
 * batch 1, seq new tokens, past cache slots (the QNN form: slots not in use are 0 in
 * attention_mask, present holds the past slots then the new tokens, positions come from
 * position_ids). aq, when not NULL, puts a QuantizeLinear/DequantizeLinear pair on the input of
 * every linear layer (onnx_act.h). Errors are reported by ox_error. */
void ox_decoder(ox_graph *g, const elm_model *m, const float *inv_freq, int32_t n_pos,
                int64_t seq, int64_t past, const ox_act_quant *aq, elm_export_warn_fn warn,
                void *user);

#endif
