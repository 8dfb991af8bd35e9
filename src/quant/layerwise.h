/* The layer-by-layer driver of the calibrated methods (GPTQ, AWQ): a working copy of the model
 * whose matrices get float32 values one block at a time (the source's mapped tensors elsewhere),
 * taking each tensor's quantized values as soon as they are chosen, so the calibration inputs of
 * block l+1 come from the already-quantized blocks 0..l (both papers do this), and the output
 * bytes of every matrix. */
#ifndef EDGELM_QUANT_LAYERWISE_H
#define EDGELM_QUANT_LAYERWISE_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/quant.h"

typedef struct elm_qrun {
    const elm_model *src;
    elm_model work;        /* src's metadata with float32 copies of its tensors (AWQ folds land here) */
    elm_tensor *tensors;   /* [n] owned: work.tensors */
    elm_layer *layers;     /* owned: work.layers */
    uint8_t **bytes;       /* [n] the encoded tensor in its planned type; NULL for 1-D tensors,
                            * which are written from work */
    elm_quant_tensor_info *info; /* [n] */
    int32_t n_damp_raised;
    bool keep_work;        /* keep every matrix's float values (tests); else each block's are
                            * dropped when it is done, as their bytes are final */
} elm_qrun;

/* Runs params->method (GPTQ or AWQ) over m with the types of plan [m->n_tensors]; progress steps
 * 1..n_layers+1 of n_layers+2 go to cb. With keep_work every matrix of r->work keeps the float32
 * values it was quantized to; without, the matrices end as m's own tensors again (r->bytes holds
 * their encodings) and the float32 copy never holds more than one block's matrices, the token
 * embedding and the output. ELM_ERR_ARG without calibration sequences, ELM_ERR_FORMAT
 * naming the tensor for a non-finite weight, errors of capture and GPTQ, ELM_ERR_NOMEM. Free r
 * with elm_qrun_free (also after an error). */
elm_status elm_quant_calibrated(const elm_model *m, const elm_quant_params *params,
                                const elm_tensor_plan *plan, const elm_quantize_callbacks *cb,
                                bool keep_work, elm_qrun *r, elm_error *err);
void elm_qrun_free(elm_qrun *r);

/* Checks a decoded row of tensor t for NaN and infinities: ELM_ERR_FORMAT naming the model
 * file, the tensor, the row and the column. */
elm_status elm_check_finite(const elm_model *m, const elm_tensor *t, int64_t row, const float *x,
                            elm_error *err);

#endif
