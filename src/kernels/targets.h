/* The instruction-set extensions each SIMD kernel file is compiled for (function target
 * attributes, so the rest of the build stays baseline). One place, so that the build can report
 * them (elm_kernels_built, `edgelm inspect --system`) exactly as compiled. */
#ifndef EDGELM_KERNELS_TARGETS_H
#define EDGELM_KERNELS_TARGETS_H

#define ELM_TARGET_AVX2 "avx2,fma,f16c"
#define ELM_TARGET_AVX512 "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi"
/* The AVX-512 table's BF16 prefill (x86/avx512_bf16.c), chosen where the CPU also has it. */
#define ELM_TARGET_AVX512BF16 ELM_TARGET_AVX512 ",avx512bf16"
/* ARMv8.2-A with the dot-product extension (sdot/udot); i8mm (smmla) is not used. */
#define ELM_TARGET_NEON "armv8.2-a+dotprod"
/* The NEON table's BF16 prefill (arm/neon_bf16.c), chosen where the CPU also has FEAT_BF16. */
#define ELM_TARGET_NEON_BF16 "armv8.2-a+dotprod+bf16"

#ifdef __ARM_FEATURE_DOTPROD
/* The NEON kernel files are compiled for ELM_TARGET_NEON as a whole (cmake/kernels.cmake, for
 * clang: its arm_neon.h before version 16 declares the dot-product intrinsics only then); the
 * tables' getters are plain C and still run on a baseline ARMv8 CPU. */
#define NEON_FN
#else
#define NEON_FN __attribute__((target("arch=" ELM_TARGET_NEON)))
#endif
#define NEON_INLINE NEON_FN static inline __attribute__((always_inline))
#ifdef __ARM_FEATURE_BF16
#define NEON_BF16_FN
#else
#define NEON_BF16_FN __attribute__((target("arch=" ELM_TARGET_NEON_BF16)))
#endif
#define NEON_BF16_INLINE NEON_BF16_FN static inline __attribute__((always_inline))

#endif
