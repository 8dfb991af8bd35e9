/* Activation quantization of the QDQ graphs (onnx_act.c): the input of every linear layer gets a
 * QuantizeLinear/DequantizeLinear pair with a per-tensor asymmetric uint8 or uint16 range, measured
 * by edgelm's calibration capture (quant/capture.h) as QNN's min/max calibration does. */
#ifndef EDGELM_EXPORT_ONNX_ACT_H
#define EDGELM_EXPORT_ONNX_ACT_H

#include "edgelm/model.h"
#include "edgelm/quant.h"
#include "export/onnx_build.h"

typedef struct ox_act_quant {
    int bits;                 /* 8 (uint8 codes) or 16 (uint16) */
    int32_t n;
    const elm_tensor **keys;  /* [n] per layer wq (its input is wk's and wv's), wo, w_gate (and
                               * w_up's), w_down; then output */
    float *scale;             /* [n] (hi - lo) / (2^bits - 1) over the range widened to hold 0 */
    int32_t *zero_point;      /* [n] round(-lo / scale) in [0, 2^bits - 1] */
} ox_act_quant;

/* Runs every sequence of cs through m (all layers and the output, n_threads threads) and sets
 * out's scales and zero points from the smallest and largest input element of each key.
 * Errors: elm_capture's (non-finite activations naming the tensor, ELM_ERR_NOMEM). Free with
 * ox_act_free (also after an error). */
elm_status ox_act_measure(const elm_model *m, const elm_calib_set *cs, int32_t n_threads, int bits,
                          ox_act_quant *out, elm_error *err);
void ox_act_free(ox_act_quant *q);

/* x quantized to key's input range and back: DequantizeLinear(QuantizeLinear(x)) with scalar
 * scale and zero point (opset 21 for uint16); x itself when q is NULL or key was not measured. */
const char *ox_act_qdq(ox_graph *g, const ox_act_quant *q, const elm_tensor *key, const char *x);

#endif
