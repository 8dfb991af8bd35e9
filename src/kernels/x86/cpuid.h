/* x86-64 CPU features read with the cpuid instruction (<cpuid.h>, in gcc and clang alike),
 * for choosing the kernel table. __builtin_cpu_supports is not used: its feature names differ
 * between compilers (clang 14 rejects "f16c"). */
#ifndef EDGELM_KERNELS_X86_CPUID_H
#define EDGELM_KERNELS_X86_CPUID_H

enum {
    ELM_X86_SSE42 = 1u << 0,
    ELM_X86_AVX = 1u << 1,
    ELM_X86_AVX2 = 1u << 2,
    ELM_X86_FMA = 1u << 3,
    ELM_X86_F16C = 1u << 4,
    ELM_X86_AVX512F = 1u << 5,
    ELM_X86_AVX512BW = 1u << 6,
    ELM_X86_AVX512VL = 1u << 7,
    ELM_X86_AVX512DQ = 1u << 8,
    ELM_X86_AVX512VNNI = 1u << 9,
    ELM_X86_AVX512VBMI = 1u << 10,
    ELM_X86_AVX512BF16 = 1u << 11,
};

/* The ELM_X86_* bits this CPU and OS support: an AVX feature counts only when the OS saves the
 * YMM state (XGETBV), an AVX-512 one only when it also saves the opmask and ZMM state, as
 * __builtin_cpu_supports does. 0 on other architectures. */
unsigned elm_x86_features(void);

#endif
