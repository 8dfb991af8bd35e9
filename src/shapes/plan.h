/* Deployability estimate (`edgelm plan`): for a model's shapes, per weight type, the bytes of the
 * weights, of the KV cache at a context length, of edgelm's compute buffers, the peak, and the
 * decode speed memory bandwidth allows, against a device's bandwidth and RAM. Only shapes are
 * needed, so a plan can be made from config.json or a preset before anything is downloaded. */
#ifndef EDGELM_MODEL_PLAN_H
#define EDGELM_MODEL_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/model.h"

/* A device profile: figures practitioners quote (docs: DOMAIN.md). */
typedef struct elm_device {
    const char *name;         /* "x2-elite", ... */
    const char *desc;
    double bandwidth_gbs;     /* memory bandwidth, GB/s (10^9 bytes per second) */
    double ram_gib;           /* RAM, GiB */
} elm_device;

/* The profiles (data, plan_devices.c), *n of them; elm_device_find: by name or NULL. */
const elm_device *elm_devices(int *n);
const elm_device *elm_device_find(const char *name);


/* A model of `arch` with hyper-parameters hp whose tensors have shapes but no data (F32), for
 * planning: from a config.json (elm_hf_read_config) or a synth preset. rope_freqs adds Llama
 * 3.1's frequency tensor. Errors: ELM_ERR_UNSUPPORTED for an unknown arch, elm_model_bind's. */
elm_status elm_plan_shape_model(const elm_hparams *hp, bool rope_freqs, elm_model **out,
                                elm_error *err);

enum { ELM_PLAN_ROWS = 5 };

typedef struct elm_plan_row {
    char label[8];            /* "f16", "q8_0", "q4_0", "q4_1": every matrix of that type, as
                               * llama-quantize --pure; "mixed": quantize's default policy (q4_0,
                               * embedding and output q8_0) */
    uint64_t weight_bytes;    /* all tensors */
    uint64_t read_bytes;      /* weights + KV cache read per decoded token at a full context
                               * (an untied embedding contributes one row) */
    uint64_t peak_bytes;      /* weights + KV cache + compute buffers */
    double tokens_per_s;      /* upper bound: bandwidth / read_bytes (0 without a bandwidth) */
    int64_t headroom_bytes;   /* RAM - peak; negative: does not fit (0 without a RAM size) */
} elm_plan_row;

typedef struct elm_plan {
    int32_t n_ctx, n_batch, n_threads;
    int64_t n_params;
    uint64_t kv_f16, kv_q8_0, kv_int8; /* KV cache at n_ctx: 2, 34/32 (ggml q8_0), 1 bytes */
    uint64_t kv_bytes;        /* the one the rows use (kv_cache_q8: kv_q8_0, else kv_f16) */
    uint64_t compute_bytes;   /* edgelm's activations for an n_batch batch, the attention scores
                               * of n_threads threads and one token's logits */
    elm_plan_row rows[ELM_PLAN_ROWS];
} elm_plan;

/* Plans model m (its tensors' shapes; data is not read) at n_ctx tokens, prompt batches of
 * n_batch, n_threads threads, a KV cache of F16 or (kv_cache_q8) Q8_0, for a device of
 * bandwidth_gbs GB/s and ram_gib GiB (0: unknown, no speed bound or headroom). ELM_ERR_ARG for
 * sizes out of range. */
elm_status elm_plan_make(const elm_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                         bool kv_cache_q8, double bandwidth_gbs, double ram_gib, elm_plan *out,
                         elm_error *err);

#endif
