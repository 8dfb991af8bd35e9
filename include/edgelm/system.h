/* What this machine offers edgelm: online cores, the CPU's SIMD features, the kernel tables it
 * can run and the one chosen, and the memory read bandwidth decode runs against. */
#ifndef EDGELM_SYSTEM_H
#define EDGELM_SYSTEM_H

#include <stddef.h>

#include "edgelm/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Online cores (sysconf), clamped to [1, 64]: what n_threads = 0 means everywhere in the API. */
int elm_online_cores(void);

/* Writes the CPU's SIMD features that matter here ("avx2 fma f16c avx512f ..."), space separated,
 * NUL-terminated in cap bytes. */
void elm_cpu_features(char *buf, size_t cap);

/* The kernel table in use: "avx512", "avx2", "neon" or "scalar" (EDGELM_ISA may force one; a
 * forced ISA this CPU or build lacks gives "scalar"). */
const char *elm_kernel_isa(void);

/* The SIMD tables this build compiled and the extensions each was compiled for, as
 * "isa(target attribute) ...": e.g. "neon(arch=armv8.2-a+dotprod)". A static string. */
const char *elm_kernels_built(void);

/* The kernel tables this CPU and build can run, widest first, space separated, in cap bytes. */
void elm_kernel_isas(char *buf, size_t cap);

/* Memory read bandwidth: streams a buffer of `bytes` (make it far larger than the last-level
 * cache; it is allocated and touched first) with n_threads threads (0: elm_online_cores), each
 * reading its own contiguous share, `reps` times, and returns the best read rate in GB/s (10^9
 * bytes per second) in *gbps. Decode reads every weight once per token, so tokens/s is at most
 * this / bytes per token. ELM_ERR_NOMEM when the buffer cannot be had, ELM_ERR_ARG for
 * n_threads < 0, reps < 1 or bytes < 1 MiB. */
elm_status elm_membw_read(int n_threads, size_t bytes, int reps, double *gbps, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
