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
    double (*quads)[3];    /* [n] the error figures' sums (errfig.h) so far: a stack's experts' */
    elm_quant_expert_fallback *fallback; /* [n_fallback] experts rounded for want of tokens */
    int32_t n_fallback, cap_fallback;
    int32_t n_damp_raised;
    bool keep_work;        /* keep every matrix's float values (tests); else each block's are
                            * dropped when it is done, as their bytes are final */
    const elm_quant_params *params;
    const elm_tensor_plan *plan;
    const elm_quantize_callbacks *cb;
    float *x;              /* the calibration states between steps */
    int32_t stage;         /* steps done: blocks 0..stage-1 (stage n_layers+1: all) */
    int32_t *final_stage;  /* [n] the stage after which tensor i is final (bytes or 1-D values):
                            * 0 the embedding, l+1 block l's, n_layers+1 the rest */
    struct elm_ckpt *ckpt; /* params->checkpoint, committed after each block, or NULL */
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

/* The same run in steps, for a caller that writes each tensor as soon as it is final (elm_quantize
 * pushes them to the GGUF writer; params, plan and cb must outlive r): elm_qrun_start quantizes
 * the embedding and sets up the states (stage 0); each elm_qrun_step does the next block (stage
 * l+1 when block l is done), and the one after the last block does the output and every remaining
 * tensor (stage n_layers+1). A tensor i is final once r->stage >= r->final_stage[i]; the caller
 * may then take and free r->bytes[i] (setting it NULL), or, when elm_ckpt_has(r->ckpt, i), read
 * them from the checkpoint. With params->checkpoint (and not keep_work) each block is committed to
 * it before its progress call; with params->resume too, a valid checkpoint there is resumed:
 * elm_qrun_start returns at the stage it holds, with cb->note told so. Errors as
 * elm_quant_calibrated's and elm_ckpt_open's; free r with elm_qrun_free after an error. */
elm_status elm_qrun_start(const elm_model *m, const elm_quant_params *params,
                          const elm_tensor_plan *plan, const elm_quantize_callbacks *cb,
                          bool keep_work, elm_qrun *r, elm_error *err);
elm_status elm_qrun_step(elm_qrun *r, elm_error *err);
void elm_qrun_free(elm_qrun *r);

/* Whether GPTQ quantizes tensor t of m by the error feedback when it has a grid type (grid.h):
 * the products of a block's four input groups (not a mixture's experts, which fall back to
 * rounding when few tokens reach them) and an untied output; the rest it rounds. */
bool elm_lw_gptq_reaches(const elm_model *m, const elm_tensor *t);

/* cb->progress(done, total, what) when there is one; ELM_ERR_ARG naming `what` when it asks to
 * stop (elm_quantize_progress_fn). */
elm_status elm_quant_progress(const elm_quantize_callbacks *cb, int32_t done, int32_t total,
                              const char *what, elm_error *err);

/* Checks row `row` of tensor t: its encoded blocks at raw for a bad scale (the type's bad_block:
 * the loader skips that scan in a mapped file, which a quantization reads whole anyway), then
 * its decoded values x for NaN and infinities. ELM_ERR_FORMAT naming the model file, the tensor
 * and the block, or the row and the column. */
elm_status elm_check_row(const elm_model *m, const elm_tensor *t, int64_t row, const void *raw,
                         const float *x, elm_error *err);

#endif
