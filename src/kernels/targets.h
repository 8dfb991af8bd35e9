/* The instruction-set extensions each SIMD kernel file is compiled for (function target
 * attributes, so the rest of the build stays baseline). One place, so that the build can report
 * them (elm_kernels_built, `edgelm inspect --system`) exactly as compiled. */
#ifndef EDGELM_KERNELS_TARGETS_H
#define EDGELM_KERNELS_TARGETS_H

#define ELM_TARGET_AVX2 "avx2,fma,f16c"
#define ELM_TARGET_AVX512 "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi"
/* ARMv8.2-A with the dot-product extension (sdot/udot); i8mm (smmla) is not used. */
#define ELM_TARGET_NEON "armv8.2-a+dotprod"

#endif
