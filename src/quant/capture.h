/* Activation capture for calibration: the statistics GPTQ and AWQ need of a linear layer's input,
 * gathered through the forward pass's matmul hook (context.h), so there is one forward pass. */
#ifndef EDGELM_QUANT_CAPTURE_H
#define EDGELM_QUANT_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/model.h"
#include "edgelm/quant.h"

/* The expert stack of layer L that the matmul hook's weight w is a 2-D view of (model/ffn_moe.c
 * runs expert e of ffn_{gate,up,down}_exps over rows [e·rows, (e + 1)·rows) of the stack, under
 * the stack's name), with the expert's index in *expert; NULL for any other weight (a dense
 * product, the router). */
const elm_tensor *elm_expert_of(const elm_layer *L, const elm_tensor *w, int32_t *expert);

/* Statistics of the input x [cols] of the linear `key` (and of every linear sharing its input). */
typedef struct elm_act_stats {
    const elm_tensor *key; /* tensor of the model being run whose matmul input is observed (an
                            * expert stack: its expert `expert`'s products only); NULL: none */
    int32_t expert;        /* the expert of the stack key, -1 for a dense product */
    int64_t cols;
    int64_t n_rows;        /* input vectors seen (tokens) */
    float *h;              /* [cols, cols] H = 2·Σ x xᵀ, summed in float32 (as the GPTQ and AWQ
                            * reference code do); NULL when not asked for */
    double *abs_mean;      /* [cols] mean |x| */
    float *abs_max;        /* [cols] max |x| */
    float lo, hi;          /* the smallest and largest element seen (+inf, -inf before any) */
} elm_act_stats;

/* Allocates zeroed statistics for key's input (key->ne[0] columns), with the cols² Hessian only
 * when hessian (GPTQ); the ranges alone cost O(cols). expert: -1 for a dense product, else the
 * expert of the stack key whose inputs (the tokens the router sends to it) are observed.
 * ELM_ERR_NOMEM. */
elm_status elm_act_stats_init(elm_act_stats *s, const elm_tensor *key, int32_t expert,
                              bool hessian, elm_error *err);
void elm_act_stats_free(elm_act_stats *s);

/* Runs every calibration sequence of cs (each from an empty KV cache at position 0, one batch)
 * through the layers first .. first+n_layers-1 of m only (a model view: elm_forward_hidden),
 * and through the output RMSNorm and projection as well when with_output (first + n_layers must
 * then be m->hp.n_layers; n_layers may be 0), accumulating stats[i] for each key's input
 * (n_stats may be 0). The sequences start from x_in, or from their token embeddings when x_in is
 * NULL; when x_out is non-NULL it receives the states after the last layer run. x_in and x_out
 * hold [Σ n_ids, dim] floats, the samples' [n_ids[i], dim] states one after another; x_out may be
 * x_in (advanced in place). On return abs_mean is the mean and h symmetric. Stats with a NULL
 * key are skipped, and an expert the router never chose keeps n_rows 0. ELM_ERR_ARG for a
 * layer range outside m or a dense key whose product never ran, ELM_ERR_FORMAT naming the key
 * when an input holds a NaN or infinity; the forward pass's errors; ELM_ERR_NOMEM. */
elm_status elm_capture(const elm_model *m, int32_t first, int32_t n_layers, bool with_output,
                       const elm_calib_set *cs, int32_t n_threads, const float *x_in,
                       float *x_out, elm_act_stats *stats, int32_t n_stats, elm_error *err);

#endif
