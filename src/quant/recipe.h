/* llama-quantize's per-tensor type rules (llama.cpp src/llama-quant.cpp, llama_tensor_get_type)
 * for its k-quant and i-quant recipes, and its fallbacks for rows a block does not divide. */
#ifndef EDGELM_QUANT_RECIPE_H
#define EDGELM_QUANT_RECIPE_H

#include "edgelm/quant.h"

/* plan[i].type and .reason for every 2-D tensor of m under the recipe with llama.cpp file type
 * ftype (elm_quant_recipe_from_name), before fallbacks; with_imatrix as llama-quantize --imatrix.
 * 1-D entries are left alone. ELM_ERR_NOMEM; ELM_ERR_ARG for mxfp4_moe on a model without
 * experts. */
elm_status elm_recipe_plan(const elm_model *m, uint32_t ftype, bool with_imatrix,
                           elm_tensor_plan *plan, elm_error *err);

/* Whether llama-quantize copies 2-D tensor `name` as it is (tensor_allows_quantization): names
 * not ending in "weight", norms ("_norm.weight", as a Mamba-2 group norm), and the small kernels
 * it lists: convolution kernels (LFM2's shortconv.conv, Mamba's ssm_conv1d), Gemma's altup,
 * laurel and per_layer_model_proj, routers (ffn_gate_inp). */
bool elm_recipe_keeps(const char *name);

/* The type llama-quantize writes for `type` on rows of ne0 weights: type itself when its block
 * divides ne0, else its traits' fallback (Q2_K, Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1,
 * Q6_K -> Q8_0, IQ4_XS -> IQ4_NL) when that one's does, else F16. */
elm_type elm_type_fallback(elm_type type, int64_t ne0);

/* Whether llama-quantize stops without importance data for 2-D tensor `name` written as `type` in
 * a file of llama.cpp file type `ftype` (its tensor_requires_imatrix): a type whose trait has
 * needs_imatrix (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS), and Q2_K in a Q2_K_S file; never
 * the token embedding or the output, but where the type has no encoder without importances
 * (from_float NULL: IQ1_S, IQ2_XXS, IQ2_XS; llama-quantize aborts in the encoder there). */
bool elm_recipe_needs_imatrix(const char *name, elm_type type, uint32_t ftype);

#endif
