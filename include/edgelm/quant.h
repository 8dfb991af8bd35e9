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
 * the target type's own block layout, so any GGUF runtime reads the result. One entry point,
 * elm_quantize: RTN with llama-quantize's rules (--pure, recipes, --imatrix) or GPTQ/AWQ, from a
 * policy and a calibration set (the latter built or loaded by the functions below). */
#ifndef EDGELM_QUANT_H
#define EDGELM_QUANT_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/imatrix.h"
#include "edgelm/model.h"
#include "edgelm/types.h"
#include "edgelm/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------- progress and summary */

/* Called after each tensor is written: done of total tensors, the one just finished. A non-zero
 * return stops the run (elm_quantize then fails, leaving no output file): how a binding's
 * callback that raised, or Ctrl-C, ends a long quantization. */
typedef int (*elm_quantize_progress_fn)(int32_t done, int32_t total, const char *tensor,
                                        void *user);
/* Called once per tensor that cannot take the target type (message names the tensor). */
typedef void (*elm_quantize_warn_fn)(const char *message, void *user);

typedef struct elm_quantize_callbacks {
    elm_quantize_progress_fn progress; /* may be NULL */
    elm_quantize_warn_fn warn;         /* may be NULL */
    void *user;
    elm_quantize_warn_fn note;         /* a line about the run (resumed from a checkpoint, or
                                        * none to resume from); may be NULL */
} elm_quantize_callbacks;

typedef struct elm_quantize_summary {
    int32_t n_tensors;       /* tensors written */
    int32_t n_fallback;      /* 2-D tensors written as F16 instead of the target type */
    int64_t n_params;        /* weights */
    uint64_t bytes_in;       /* tensor data of the input model, bytes */
    uint64_t bytes_out;      /* tensor data written, bytes */
    uint64_t file_bytes;     /* size of the output file, bytes */
    double bits_per_weight;  /* 8 * bytes_out / n_params */
    double ratio;            /* bytes_in / bytes_out */
    double seconds;          /* wall time of the whole call */
    int64_t peak_rss;        /* bytes: the process's peak resident set (VmHWM) at the end */
    int64_t peak_anon;       /* bytes: the largest anonymous resident memory (RssAnon) of the
                              * process seen during the call, sampled every 10 ms; 0 both
                              * without Linux's /proc */
} elm_quantize_summary;

/* llama.cpp's general.file_type for a model mostly of `type` (docs/formats.md): the type's traits'
 * file_type (f32 0, f16 1, q4_0 2, ...; llama.cpp's Q3_K_M, Q4_K_M, Q5_K_M for the mid k-quants),
 * 0 for an id edgelm does not handle. */
uint32_t elm_file_type_of(elm_type type);


/* ---------------------------------------------------------------------------- calibration sets */

/* Calibration sets for GPTQ and AWQ: text samples read from plain text or JSONL, a reproducible
 * mix of several sources by weight (`edgelm calib`), and the token sequences the quantizers run
 * through the model.
 *
 * Recipes follow common practice (docs/deployment.md, "Calibration sets"): 128-512 samples, Alpaca-style
 * instructions rendered with the Alpaca prompt template, short samples dropped, long ones truncated
 * to the sequence length, a fixed seed for reproducibility. */
/* ------------------------------------------------------------------------ text samples */

typedef enum elm_calib_split {
    ELM_CALIB_SPLIT_LINE = 0,      /* one sample per non-empty line */
    ELM_CALIB_SPLIT_PARAGRAPH = 1  /* one sample per run of lines between blank lines */
} elm_calib_split;

typedef struct elm_text_set {
    int32_t n;
    char **texts; /* [n] NUL-terminated UTF-8, owned */
} elm_text_set;

/* Reads the samples of one file. A file whose first non-blank byte is '{' is JSONL: each non-blank
 * line an object rendered as `tmpl` when given ("{field}" placeholders take the field's value;
 * strings as they are, other JSON values printed), else its "text" string, else its Alpaca fields
 * "instruction" (+ "input") + "output" in the Alpaca prompt template. Any other file is plain text
 * split by `split`; samples are trimmed of surrounding whitespace and empty ones skipped.
 * Errors: ELM_ERR_IO (missing, unreadable), ELM_ERR_FORMAT naming PATH (a NUL byte: not text)
 * or PATH:LINE (invalid JSON, a line that is not an object, a missing field), ELM_ERR_NOMEM. An
 * empty file gives n = 0. Free with elm_text_set_free (also after an error). */
elm_status elm_text_set_read(const char *path, elm_calib_split split, const char *tmpl,
                             elm_text_set *out, elm_error *err);
void elm_text_set_free(elm_text_set *s);

/* ---------------------------------------------------- building a calibration file (calib) */

typedef struct elm_calib_source {
    const char *path;
    double weight; /* > 0: share of the samples relative to the other sources */
} elm_calib_source;

typedef struct elm_calib_build_params {
    int32_t n_samples;     /* samples wanted (> 0) */
    int32_t seq_len;       /* most tokens per sample, BOS included (>= 2); longer are truncated */
    int32_t min_tokens;    /* samples with fewer tokens (BOS included) are dropped */
    uint64_t seed;
    elm_calib_split split; /* plain-text sources */
    const char *tmpl;      /* JSONL sources, may be NULL */
} elm_calib_build_params;

typedef struct elm_calib_sample {
    char *text;       /* owned; truncated samples are the decoded first seq_len tokens */
    int32_t n_tokens; /* tokens of text with BOS, at most seq_len */
    int32_t source;   /* index into the sources */
} elm_calib_sample;

typedef struct elm_calib_built {
    int32_t n;
    elm_calib_sample *samples; /* [n], in the seeded mixed order */
    int32_t n_sources;
    int32_t *read;      /* [n_sources] samples read from each source */
    int32_t *eligible;  /* [n_sources] of those, samples with at least min_tokens tokens */
    int32_t *selected;  /* [n_sources] of those, samples taken */
} elm_calib_built;

/* Reads every source (elm_text_set_read), tokenizes each sample with BOS (vocab v), drops those
 * under min_tokens, truncates those over seq_len, and takes n_samples split across the sources in
 * proportion to their weights (largest remainder; a source with too few samples gives its share
 * to the others), each source's samples drawn by a seeded shuffle, the result shuffled again.
 * Same inputs and seed give the same samples in the same order. Fewer than n_samples are taken
 * when the sources run out. Errors: those of elm_text_set_read, ELM_ERR_ARG (no sources, a weight
 * <= 0, n_samples <= 0, seq_len < 2), ELM_ERR_FORMAT "no sample has at least N tokens" when
 * nothing is eligible. Free with elm_calib_built_free (also after an error). */
elm_status elm_calib_build(const elm_vocab *v, const elm_calib_source *sources, int32_t n_sources,
                           const elm_calib_build_params *p, elm_calib_built *out, elm_error *err);
void elm_calib_built_free(elm_calib_built *b);

/* Writes the samples as JSONL, one object per line: {"text": ..., "source": sources[i].path,
 * "n_tokens": ...}, atomically (no partial file on error). ELM_ERR_IO naming path. */
elm_status elm_calib_write_jsonl(const elm_calib_built *b, const elm_calib_source *sources,
                                 const char *path, elm_error *err);

/* ------------------------------------------------------------- token sequences (quantize) */

typedef struct elm_calib_set {
    int32_t n;
    int32_t **ids;     /* [n][n_ids[i]] token ids, BOS first when the vocab adds one */
    int32_t *n_ids;    /* [n], each in [1, seq_len] */
    int64_t n_tokens;  /* sum of n_ids */
} elm_calib_set;

/* Tokenizes texts [n] with BOS and truncates each to seq_len tokens; texts that give no token
 * besides BOS are skipped. ELM_ERR_ARG (seq_len < 2), ELM_ERR_NOMEM, the tokenizer's error. */
elm_status elm_calib_from_texts(const elm_vocab *v, const char *const *texts, int32_t n,
                                int32_t seq_len, elm_calib_set *out, elm_error *err);

/* The calibration sequences of a file `edgelm calib` wrote, or of any text or JSONL file
 * (elm_text_set_read, one sample per line), at most max_samples of them (0 = all) in file order.
 * Errors: those of elm_text_set_read; ELM_ERR_FORMAT "PATH: no calibration samples" when the file
 * has none (empty, blank). Free with elm_calib_free (also after an error). */
elm_status elm_calib_load(const elm_vocab *v, const char *path, int32_t seq_len,
                          int32_t max_samples, elm_calib_set *out, elm_error *err);
void elm_calib_free(elm_calib_set *s);

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
 * (or "q4_k"), "q5_k_s", "q5_k_m" (or "q5_k"), "q6_k", "iq4_nl", "iq4_xs", "mxfp4_moe" (a
 * mixture of experts' expert tensors in MXFP4, the other matrices in Q8_0), and the sub-4-bit
 * "q2_k_s", "iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m", "iq3_xxs", "iq3_xs", "iq3_s",
 * "iq3_m" (case-insensitive):
 * *ftype gets llama.cpp's file type (general.file_type) and *base the recipe's main tensor type.
 * false for any other name. */
bool elm_quant_recipe_from_name(const char *name, uint32_t *ftype, elm_type *base);

/* The recipes' names above, ", "-separated, for messages: a static string, built once
 * (thread-safe). */
const char *elm_quant_recipe_names(void);

#define ELM_REASON_MAX 80

typedef struct elm_tensor_plan {
    elm_type type;               /* the type written */
    elm_type wanted;             /* the type the rules chose; differs from type on F16 fallback */
    char reason[ELM_REASON_MAX]; /* why this type, e.g. "1-D (norm): kept f32", "override '...'" */
} elm_tensor_plan;

/* The type of every tensor of m: 1-D tensors (norms) F32; with a recipe (not pure) llama.cpp's
 * choice for each tensor (src/quant/recipe.c); else the token embedding and the output projection
 * at sensitive_type unless pure, other 2-D tensors at type; overrides after that; and a type whose
 * block does not divide the rows falls back as llama-quantize does (Q2_K, Q3_K, TQ1_0, TQ2_0 ->
 * Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, IQ4_XS and the sub-4-bit i-quants -> IQ4_NL;
 * then F16). plan has m->n_tensors entries. ELM_ERR_ARG naming the type when one is not
 * writable. */
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
    int32_t n_threads;          /* forward passes over the calibration set, and the rows of the
                                 * round-to-nearest tensors (0: all online cores) */
    const elm_imatrix *imatrix; /* RTN: importance weights (llama-quantize --imatrix), or NULL;
                                 * its entries must match m (elm_imatrix_check) */
    const char *imatrix_path;   /* the imatrix file, for error messages */
    const char *checkpoint;     /* GPTQ/AWQ: per-block checkpoint file (src/quant/checkpoint.h),
                                 * rewritten after each block and deleted once the output is
                                 * written; NULL: none */
    bool resume;                /* continue from the checkpoint when it holds blocks (validated
                                 * against the source and these options); without one, start over */
    /* A size budget (src/quant/budget.c): when target_bytes or target_bpw is set (> 0), every
     * token embedding, output projection and block linear gets the candidate type that minimises
     * the predicted total KL divergence with the tensor data (the sum of every tensor's bytes, as
     * summary.bytes_out: not the GGUF header, metadata or alignment padding) at most target_bytes,
     * or target_bpw · weights / 8 bytes. Needs calib; the plan's other tensors keep their types. */
    uint64_t target_bytes;
    double target_bpw;
    const elm_type *candidates; /* [n_candidates] the budget's menu; NULL: elm_budget_default */
    int32_t n_candidates;
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
    double predicted_cost; /* size budget: the tensor's predicted share of the mean KL
                            * divergence per token at its chosen type, by round to nearest
                            * (src/quant/budget.h); -1 where the budget did not choose the type */
} elm_quant_tensor_info;

/* An expert of a mixture of experts that GPTQ or AWQ did not calibrate: the router sent it fewer
 * calibration tokens than twice its matrix's input width (too few for a stable Hessian), so its
 * matrix was rounded by the importance-weighted rule (the type's imatrix encoder, weighted by the
 * mean square of the inputs it did see; by 1 when it saw none, as llama-quantize weighs an expert
 * without counts). */
typedef struct elm_quant_expert_fallback {
    char name[ELM_NAME_MAX]; /* the stack, e.g. "blk.3.ffn_down_exps.weight" */
    int32_t expert;
    int64_t tokens;          /* calibration tokens routed to it */
    int64_t needed;          /* the fewest it is calibrated from: 2 · the stack's input width */
} elm_quant_expert_fallback;

typedef struct elm_quant_report {
    elm_quantize_summary summary;
    int32_t n_tensors;
    elm_quant_tensor_info *tensors; /* [n_tensors], file order; free with elm_quant_report_free */
    int32_t n_damp_raised;          /* GPTQ layers whose damping had to be raised */
    int32_t n_expert_fallback;      /* experts rounded for want of tokens (GPTQ, AWQ; a resumed
                                     * run: of the blocks it ran) */
    elm_quant_expert_fallback *expert_fallback; /* [n_expert_fallback], by block, stack, expert */
} elm_quant_report;

void elm_quant_report_free(elm_quant_report *r);

/* Quantizes m with params into out_path (GGUF v3, m's metadata and vocab, general.file_type of
 * the policy's type). cb (may be NULL): progress per tensor for RTN, per layer for GPTQ/AWQ
 * (done of total steps, label "blk.N" / "output"); warn for fallbacks and raised damping. report
 * may be NULL. With an imatrix, each tensor it names is encoded weighted by it (elm_encode_row)
 * and the recipe follows llama.cpp's rules for imatrix files. With params->checkpoint (GPTQ/AWQ)
 * each finished block is committed there and the file deleted once out_path is written; with
 * params->resume a valid checkpoint's blocks are not redone, and the file is byte for byte the one
 * an uninterrupted run writes.
 * Errors: ELM_ERR_ARG (type not writable, GPTQ/AWQ without calibration samples), ELM_ERR_FORMAT
 * naming the imatrix file and tensor when an entry does not match m,
 * ELM_ERR_FORMAT naming the model file and tensor when an input weight is NaN or infinite,
 * ELM_ERR_FORMAT naming the checkpoint when it is damaged or was made from another source or
 * with other options, ELM_ERR_NOMEM, ELM_ERR_IO naming out_path or the checkpoint, ELM_ERR_ARG
 * "stopped by the progress callback" when cb->progress returned non-zero (every call comes before
 * the file is complete); no file is left at out_path on any error (the checkpoint stays). */
elm_status elm_quantize(const elm_model *m, const elm_quant_params *params,
                           const char *out_path, const elm_quantize_callbacks *cb,
                           elm_quant_report *report, elm_error *err);

/* ---------------------------------------------------------------------------- size budget */

/* The budget's default menu of candidate types: q2_k, q3_k, q4_k, q5_k, q6_k, q8_0, then the
 * 32-weight q4_0, q4_1, q5_0, q5_1, iq4_nl and iq4_xs (for rows whose width no 256-weight block
 * divides), and with_imatrix iq2_xs and iq3_s too. Writes at most 16 types to out and returns
 * how many. */
int32_t elm_budget_default(bool with_imatrix, elm_type out[16]);

/* ---------------------------------------------------------------------------- estimates */

typedef struct elm_quant_rates {
    double gemm_gflops; /* OpenBLAS float32 GEMM, 10^9 flop/s on the threads asked for */
    double scalar_ns;   /* ns per weight of GPTQ's clip search and code choice, one thread */
} elm_quant_rates;

/* Measures both rates here and now (about 0.4 s): repeated 768³ sgemm products on n_threads
 * (0: all online cores) and the clip search over 64K weights. ELM_ERR_NOMEM. */
elm_status elm_quant_measure_rates(int32_t n_threads, elm_quant_rates *out, elm_error *err);

typedef struct elm_quant_estimate {
    int64_t n_tokens;          /* calibration tokens (samples x sequence length) */
    elm_quant_rates rates;     /* the rates the time is from */
    double gemm_flop;          /* BLAS work: factorizations, error feedback, AWQ's searches, error
                                * figures */
    double forward_flop;       /* the calibration passes (two per block, and the output's) */
    double syrk_flop;          /* the Hessians (float32 SYRK) */
    double scalar_weights;     /* weight visits of the scalar code choice */
    double seconds;            /* the whole run */
    double seconds_per_block;
    uint64_t block_bytes;      /* float32 matrices of one block */
    uint64_t peak_anon_bytes;  /* working memory (anonymous) at its widest: the block stage or the
                                * output stage; the mapped source comes on top as page cache */
} elm_quant_estimate;

/* Estimates a GPTQ/AWQ run of m (shapes only; its data are not read) with p's method, policy and
 * threads on n_samples calibration sequences of seq_len tokens, at the given rates: the work of
 * each stage counted from the shapes (gptq.c, awq.c, errfig.c, capture.c) over the rates, and the
 * memory the block-by-block driver holds (layerwise.c). An estimate: the forward passes are counted
 * at the GEMM rate, and cache effects are not modelled. ELM_ERR_ARG for RTN, no tokens or no rate;
 * elm_quant_plan's errors; ELM_ERR_NOMEM. */
elm_status elm_quant_estimate_run(const elm_model *m, const elm_quant_params *p, int32_t n_samples,
                                  int32_t seq_len, const elm_quant_rates *rates,
                                  elm_quant_estimate *out, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
