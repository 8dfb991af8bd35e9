/* The pieces of the layer-by-layer driver (layerwise.c) that quantize one linear, shared with the
 * mixture-of-experts part (layerwise_moe.c). A linear is a matrix of the working copy: a 2-D
 * tensor, or one expert's matrix of a stack {cols, rows, n_expert} (expert e >= 0: rows
 * [e·rows, (e + 1)·rows) of the stack's float values). Its bytes go to r->bytes of the tensor, an
 * expert's at its offset in the stack's. */
#ifndef EDGELM_QUANT_LAYERWISE_OPS_H
#define EDGELM_QUANT_LAYERWISE_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include "quant/capture.h"
#include "quant/grid.h"
#include "quant/layerwise.h"

typedef struct elm_lw_ctx {
    elm_qrun *r;
    const elm_quant_params *p;
    const elm_tensor_plan *plan;
    const elm_quantize_callbacks *cb;
    float *x; /* [Σ calib n_ids, dim] each sample's hidden states at the current block's input */
} elm_lw_ctx;

/* A group of linears of a block that read the same input (their capture statistics are one). */
typedef struct elm_lw_group {
    elm_tensor *m[3];
    int n;
} elm_lw_group;

/* The four input groups of block L (layerwise.c): the mixing's input products, its output
 * product, the FFN's gate/up (a mixture of experts': its router and shared expert), its down. */
void elm_lw_layer_groups(const elm_layer *L, elm_lw_group g[4]);

/* The grid of t's planned type (false: not a block type, rounded by the types table). */
bool elm_lw_grid_of(const elm_lw_ctx *q, const elm_tensor *t, elm_grid *g);

/* cb->warn with a formatted message, when there is one. */
void elm_lw_warn(const elm_lw_ctx *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Expert e's matrix of stack t as a 2-D tensor over the same float values; t itself for e < 0. */
elm_tensor elm_lw_slice(const elm_tensor *t, int32_t e);

/* The bytes of tensor t in its planned type (allocated whole, for all its experts, the first time
 * one is asked for) and the offset of expert e's in them (0 for e < 0). NULL: out of memory. */
uint8_t *elm_lw_bytes(elm_lw_ctx *q, const elm_tensor *t, int32_t e, size_t *offset);

/* GPTQ of linear (t, e) with the statistics s of its input (Hessian kept). */
elm_status elm_lw_gptq_linear(elm_lw_ctx *q, elm_tensor *t, int32_t e, const elm_act_stats *s,
                              elm_error *err);

/* AWQ's clipping and quantization of the scaled linear (t, e) whose original weights were w0 and
 * whose effective original-coordinate weights are values · rs[row] / cs[col]; H its input
 * Hessian before scaling. */
elm_status elm_lw_awq_linear(elm_lw_ctx *q, elm_tensor *t, int32_t e, const float *w0,
                             const float *H, const double *cs, const double *rs, elm_error *err);

/* Multiplies column c of t by s[c]; divides row r (element r of a vector) of t by s[r]. */
void elm_lw_scale_cols(elm_tensor *t, const double *s);
void elm_lw_unscale_rows(elm_tensor *t, const double *s);

/* A mixture of experts' FFN of block L (its router, its stacks): statistics and quantization of
 * its experts, each from the tokens the router sends to it. */
bool elm_lw_moe(const elm_layer *L);
/* Whether any stack of L is planned at a block type. */
bool elm_lw_moe_has_grid(const elm_lw_ctx *q, const elm_layer *L);
/* Zeroed statistics s [2·n_expert] with Hessians: expert e's gate/up input at s[e], its down
 * input at s[n_expert + e]. ELM_ERR_NOMEM. */
elm_status elm_lw_moe_stats_init(const elm_layer *L, int32_t n_expert, elm_act_stats *s,
                                 elm_error *err);
/* GPTQ or AWQ (q->p->method) of L's stacks, each expert from its statistics s (as
 * elm_lw_moe_stats_init lays them out); a stack planned at a float type is left to the block's
 * rounding. */
elm_status elm_lw_moe_quantize(elm_lw_ctx *q, elm_layer *L, const elm_act_stats *s,
                               elm_error *err);

#endif
