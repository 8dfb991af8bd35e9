/* A size budget for quantize (edgelm/quant.h: elm_quant_params.target_bytes, target_bpw): each
 * tensor's type chosen from measured sensitivities so that the predicted total KL divergence is
 * least with the tensor data within the budget. */
#ifndef EDGELM_QUANT_BUDGET_H
#define EDGELM_QUANT_BUDGET_H

#include "edgelm/quant.h"

/* Rewrites plan [m->n_tensors] (elm_quant_plan's, for p's policy) under p's budget. The tensors
 * it chooses for are the token embedding, the output projection and every block's linears
 * (layerwise_ops.h's groups) whose rows some candidate's block divides and that no --tensor-type
 * override fixes; every other tensor keeps its planned type and its bytes count against the
 * budget as they are.
 *
 * Sensitivity: the float model runs over p->calib one block at a time (elm_capture, the input
 * Hessian H = 2·Σ x xᵀ of each group of linears, as GPTQ gathers it), and the error of linear W
 * at type T is its output error Σ_tokens ‖(W - Ŵ_T)x‖² = ½·Σ_r e_rᵀ H e_r, Ŵ_T its round-to-
 * nearest values (weighted by p->imatrix where it has the tensor), from a sample of the rows
 * (errfig.h) scaled to all of them; the embedding's is Σ_v (count_v + 1)·‖e_v - ê_v‖² over
 * every stride-th row v (at most about 4096), count_v the calibration tokens of id v. Those give
 * the ratios between a tensor's types; the scale between tensors is the mean KL divergence per
 * token of the model with the tensor alone at its smallest candidate, run from the float states
 * at its block's input through the blocks after it over the first tokens of the first
 * calibration samples, against the float model's output. Cost(T) = KLD · err(T) / err(smallest).
 * Only the states (all samples' at one block, and the float model's last ones of the KLD
 * samples) and one block's Hessians are held.
 *
 * Choice: each tensor's (bytes, cost) points reduced to their lower convex hull; from every tensor
 * at its smallest point, the step of best cost saved per byte added that still fits is taken
 * until none fits (the Lagrangian solution at the hull points; never a byte over the budget).
 *
 * cost [m->n_tensors] receives each chosen tensor's predicted cost (nats per token), -1 for the
 * others. Errors:
 * ELM_ERR_ARG when p has no calibration samples, when target_bpw is above 16 (F16) or when the
 * budget is below the smallest tensor data the candidates give (the message names both byte
 * counts), or for an unwritable candidate; elm_capture's; ELM_ERR_NOMEM. */
elm_status elm_quant_budget(const elm_model *m, const elm_quant_params *p, elm_tensor_plan *plan,
                            double *cost, elm_error *err);

#endif
