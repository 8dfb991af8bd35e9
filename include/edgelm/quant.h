/* Accuracy-preserving quantization of a whole model into a standard GGUF file: a mixed-precision
 * policy choosing each tensor's type, and three methods producing ggml blocks:
 *  - RTN, round to nearest (the types table's reference encoders, as llama-quantize without an
 *    importance matrix);
 *  - GPTQ (Frantar et al. 2022, arXiv:2210.17323): per linear layer, error feedback through the
 *    Cholesky factor of the inverse input Hessian H = 2·XᵀX;
 *  - AWQ (Lin et al. 2023, arXiv:2306.00978): per group of linears sharing an input, per-channel
 *    scales s = mean|x|^α folded into the preceding RMSNorm or linear, then a clipping search.
 * GPTQ and AWQ read calibration activations through the forward pass's matmul hook, layer by
 * layer: the inputs of block l+1 come from the already-quantized blocks 0..l. Every method writes
 * the target type's own block layout, so any GGUF runtime reads the result (edgelm/quantize.h is
 * the RTN-only entry point with llama-quantize --pure's rules). */
#ifndef EDGELM_QUANT_H
#define EDGELM_QUANT_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/imatrix.h"
#include "edgelm/model.h"
#include "edgelm/quant_calib.h"
#include "edgelm/quantize.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------- policy */

/* One --tensor-type override: tensors whose name matches the glob `pattern` (fnmatch, '*' any
 * run of characters; "blk.*.ffn_down" matches with or without the ".weight" suffix) get `type`.
 * The last matching override wins. */
typedef struct elm_type_override {
    const char *pattern;
    elm_type type;
} elm_type_override;

typedef struct elm_quant_policy {
    elm_type type;           /* target of 2-D weights */
    bool pure;               /* every 2-D tensor at type (no sensitive-tensor rule) */
    elm_type sensitive_type; /* token embedding and output projection when not pure: Q8_0 by
                              * default, F16 with --keep-sensitive f16; never below `type` */
    const elm_type_override *overrides;
    int32_t n_overrides;
    uint32_t recipe;         /* llama.cpp file type of a recipe (elm_quant_recipe_from_name), or 0:
                              * unless pure, every tensor's type by llama-quantize's rules for it
                              * (sensitive_type unused) */
    bool imatrix;            /* the recipe's rules for a file quantized with an importance matrix */
} elm_quant_policy;

/* llama-quantize's recipes: "q2_k", "q3_k_s", "q3_k_m" (or "q3_k"), "q3_k_l", "q4_k_s", "q4_k_m"
 * (or "q4_k"), "q5_k_s", "q5_k_m" (or "q5_k"), "q6_k", "iq4_nl", "iq4_xs" (case-insensitive):
 * *ftype gets llama.cpp's file type (general.file_type) and *base the recipe's main tensor type.
 * false for any other name. */
bool elm_quant_recipe_from_name(const char *name, uint32_t *ftype, elm_type *base);

#define ELM_REASON_MAX 80

typedef struct elm_tensor_plan {
    elm_type type;               /* the type written */
    elm_type wanted;             /* the type the rules chose; differs from type on F16 fallback */
    char reason[ELM_REASON_MAX]; /* why this type, e.g. "1-D (norm): kept f32", "override '...'" */
} elm_tensor_plan;

/* The type of every tensor of m: 1-D tensors (norms) F32; with a recipe (not pure) llama.cpp's
 * choice for each tensor (src/quant/recipe.c); else the token embedding and the output projection
 * at sensitive_type unless pure, other 2-D tensors at type; overrides after that; and a type whose
 * block does not divide the rows falls back as llama-quantize does (Q2_K, Q3_K -> Q4_0, Q4_K ->
 * Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS -> IQ4_NL; then F16). plan has m->n_tensors entries.
 * ELM_ERR_ARG naming the type when one is not writable. */
elm_status elm_quant_plan(const elm_model *m, const elm_quant_policy *p, elm_tensor_plan *plan,
                          elm_error *err);

/* --------------------------------------------------------------------------- methods */

typedef enum elm_quant_method {
    ELM_QUANT_RTN = 0,
    ELM_QUANT_GPTQ = 1,
    ELM_QUANT_AWQ = 2
} elm_quant_method;

/* "rtn", "gptq", "awq" and back; false/NULL when unknown. */
bool elm_quant_method_from_name(const char *name, elm_quant_method *out);
const char *elm_quant_method_name(elm_quant_method m);

typedef struct elm_quant_params {
    elm_quant_policy policy;
    elm_quant_method method;
    const elm_calib_set *calib; /* GPTQ/AWQ: calibration sequences (required, n > 0) */
    double damp;                /* GPTQ: damping, a fraction of mean(diag H) (0 = 0.01); raised
                                 * x10 when H is not positive definite or does not factor */
    bool act_order;             /* GPTQ: columns by descending diag H, static block scales */
    int32_t n_threads;          /* forward passes over the calibration set (0: all online cores) */
    const elm_imatrix *imatrix; /* RTN: importance weights (llama-quantize --imatrix), or NULL;
                                 * its entries must match m (elm_imatrix_check) */
    const char *imatrix_path;   /* the imatrix file, for error messages */
} elm_quant_params;

typedef struct elm_quant_tensor_info {
    char name[ELM_NAME_MAX];
    elm_type type;
    char reason[ELM_REASON_MAX];
    /* GPTQ/AWQ layers: relative output error on the calibration inputs,
     * Σ‖(W - Ŵ)x‖² / Σ‖Wx‖², of round-to-nearest (before) and of the method (after); -1 where
     * not measured (not a linear layer, or not a block type) */
    double err_before, err_after;
    double damp; /* GPTQ: the damping that factored (raised from params.damp when needed), else 0 */
    int64_t dead_inputs; /* GPTQ: input channels that were 0 on every calibration token (their
                          * weights are zeroed; more than half dead: a warning names the tensor) */
} elm_quant_tensor_info;

typedef struct elm_quant_report {
    elm_quantize_summary summary;
    int32_t n_tensors;
    elm_quant_tensor_info *tensors; /* [n_tensors], file order; free with elm_quant_report_free */
    int32_t n_damp_raised;          /* GPTQ layers whose damping had to be raised */
} elm_quant_report;

void elm_quant_report_free(elm_quant_report *r);

/* Quantizes m with params into out_path (GGUF v3, m's metadata and vocab, general.file_type of
 * the policy's type). cb (may be NULL): progress per tensor for RTN, per layer for GPTQ/AWQ
 * (done of total steps, label "blk.N" / "output"); warn for fallbacks and raised damping. report
 * may be NULL. With an imatrix, each tensor it names is encoded weighted by it (elm_encode_row)
 * and the recipe follows llama.cpp's rules for imatrix files.
 * Errors: ELM_ERR_ARG (type not writable, GPTQ/AWQ without calibration samples), ELM_ERR_FORMAT
 * naming the imatrix file and tensor when an entry does not match m,
 * ELM_ERR_FORMAT naming the model file and tensor when an input weight is NaN or infinite,
 * ELM_ERR_NOMEM, ELM_ERR_IO naming out_path; no file is left at out_path on any error. */
elm_status elm_quantize_ex(const elm_model *m, const elm_quant_params *params,
                           const char *out_path, const elm_quantize_callbacks *cb,
                           elm_quant_report *report, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
