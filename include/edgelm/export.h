/* Export of an edgelm model to other runtimes' formats (src/export). */
#ifndef EDGELM_EXPORT_H
#define EDGELM_EXPORT_H

#include <stdbool.h>
#include "edgelm/model.h"
#include "edgelm/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Warning callback: one line naming the tensor (the library never prints). */
typedef void (*elm_export_warn_fn)(const char *msg, void *user);

typedef struct elm_onnx_opts {
    bool force;                /* replace a non-empty output folder */
    /* MatMulNBits' accuracy_level, 0 or 4. 0 (the default): ONNX Runtime multiplies the
     * dequantized weights in float, so the logits are those of the model's values (edgelm's on
     * the same weights dequantized, docs/export.md). 4: it rounds each 32-element block of
     * activations to int8 and multiplies in integers (faster on CPU), as edgelm's own block
     * products do, though not tie for tie. Unused by qdq (no MatMulNBits). */
    int32_t accuracy_level;
    /* The QNN form (qdq): weights as int4/int8 DequantizeLinear + MatMul, and two static graphs
     * over one weight file: prompt_processor.onnx (static_prompt tokens) and
     * token_generator.onnx (1 token), each with static_ctx - seq past cache slots. Needs
     * 0 < static_prompt < static_ctx <= the model's context. */
    bool qdq;
    int32_t static_prompt, static_ctx;
    /* qdq only: 16 or 8 puts a QuantizeLinear/DequantizeLinear pair (uint16 / uint8 codes, one
     * asymmetric range per tensor) on the input of every linear layer, the range being the
     * smallest and largest value of that input over the sequences of calib (required then),
     * run through the model with n_threads threads (0: all cores). 0: weights only. */
    int32_t act_bits;
    const elm_calib_set *calib;
    int32_t n_threads;
    elm_export_warn_fn warn;   /* one line per re-quantized tensor; may be NULL */
    void *user;
} elm_onnx_opts;

/* Writes folder dir for ONNX Runtime / onnxruntime-genai: model.onnx (the decoder of
 * ox_decoder, opset 17 + com.microsoft 1, IR 8), its weights in model.onnx.data, genai_config.json,
 * tokenizer.json and tokenizer_config.json. The folder is built under "<dir>.tmp.XXXXXX" beside
 * dir and renamed to dir when complete; on failure it is removed, and an existing dir is left as
 * it was. Memory: about one tensor's converted copy beyond the model.
 * With o->qdq the folder holds prompt_processor.onnx and token_generator.onnx (opset 21, IR 10)
 * over model.onnx.data, and the tokenizer files (no genai_config.json).
 * Errors: ELM_ERR_UNSUPPORTED (architecture, naming m->path), ELM_ERR_ARG (dir is a non-empty
 * folder without force, or not a folder; static sizes out of range, naming m->path; an
 * accuracy_level other than 0 or 4; act_bits other than 0, 8, 16, without qdq or without
 * calibration samples), the calibration pass's errors (non-finite activations naming the
 * tensor), ELM_ERR_IO naming the file that failed. */
elm_status elm_export_onnx(const elm_model *m, const char *dir, const elm_onnx_opts *o,
                           elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
