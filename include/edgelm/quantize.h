/* Round-to-nearest quantization of a whole model into a GGUF file, the way `llama-quantize --pure`
 * does it without an importance matrix (docs/formats.md, "ggml blocks"): every 2-D weight becomes the
 * target type, 1-D tensors (norm weights) stay F32, and a matrix whose rows the type's block does
 * not divide falls back as llama-quantize does (a 256-weight type to its 32-weight stand-in, then
 * F16; edgelm/quant.h, elm_quant_plan). */
#ifndef EDGELM_QUANTIZE_H
#define EDGELM_QUANTIZE_H

#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/model.h"
#include "edgelm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called after each tensor is written: done of total tensors, the one just finished. */
typedef void (*elm_quantize_progress_fn)(int32_t done, int32_t total, const char *tensor,
                                         void *user);
/* Called once per tensor that cannot take the target type (message names the tensor). */
typedef void (*elm_quantize_warn_fn)(const char *message, void *user);

typedef struct elm_quantize_callbacks {
    elm_quantize_progress_fn progress; /* may be NULL */
    elm_quantize_warn_fn warn;         /* may be NULL */
    void *user;
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

/* llama.cpp's general.file_type for a model mostly of `type` (docs/formats.md): f32 0, f16 1, q4_0 2,
 * q4_1 3, q8_0 7, q5_0 8, q5_1 9, bf16 32; q2_k 10, q3_k 12, q4_k 15, q5_k 17, q6_k 18, iq4_nl 25,
 * iq4_xs 30 (llama.cpp's Q3_K_M, Q4_K_M, Q5_K_M for the mid k-quants). */
uint32_t elm_file_type_of(elm_type type);

/* Writes m quantized to `type` (any type of elm_type_get) into out_path as GGUF v3, with m's
 * metadata and vocab and general.file_type = elm_file_type_of(type). Input tensors of any type
 * are decoded to float first, one row at a time. cb and summary may be NULL. (edgelm/quant.h has
 * the mixed-precision policy and the calibrated methods.)
 * Errors: ELM_ERR_ARG (type not supported), ELM_ERR_FORMAT naming the tensor when a weight is NaN
 * or infinite, ELM_ERR_IO naming out_path; no file is left at out_path on any error. */
elm_status elm_quantize_model(const elm_model *m, elm_type type, const char *out_path,
                              const elm_quantize_callbacks *cb, elm_quantize_summary *summary,
                              elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
