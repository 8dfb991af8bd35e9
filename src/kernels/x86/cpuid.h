/* x86-64 CPU features read with the cpuid instruction (<cpuid.h>, in gcc and clang alike),
 * for choosing the kernel table. __builtin_cpu_supports is not used: its feature names differ
 * between compilers (clang 14 rejects "f16c"). */
#ifndef EDGELM_KERNELS_X86_CPUID_H
#define EDGELM_KERNELS_X86_CPUID_H

/* The features, in the order of their bits in elm_x86_features() and of the names
 * elm_cpu_features lists: X(ID, name) gives the flag ELM_X86_<ID>. */
#define ELM_X86_FEATURES(X)                                                                       \
    X(SSE42, "sse4.2")                                                                            \
    X(AVX, "avx")                                                                                 \
    X(AVX2, "avx2")                                                                               \
    X(FMA, "fma")                                                                                 \
    X(F16C, "f16c")                                                                               \
    X(AVX512F, "avx512f")                                                                         \
    X(AVX512BW, "avx512bw")                                                                       \
    X(AVX512VL, "avx512vl")                                                                       \
    X(AVX512DQ, "avx512dq")                                                                       \
    X(AVX512VNNI, "avx512vnni")                                                                   \
    X(AVX512VBMI, "avx512vbmi")                                                                   \
    X(AVX512BF16, "avx512bf16")

enum {
#define ELM_X86_BIT(id, name) ELM_X86_BIT_##id,
    ELM_X86_FEATURES(ELM_X86_BIT)
#undef ELM_X86_BIT
};

enum {
#define ELM_X86_FLAG(id, name) ELM_X86_##id = 1u << ELM_X86_BIT_##id,
    ELM_X86_FEATURES(ELM_X86_FLAG)
#undef ELM_X86_FLAG
};

/* The ELM_X86_* bits this CPU and OS support: an AVX feature counts only when the OS saves the
 * YMM state (XGETBV), an AVX-512 one only when it also saves the opmask and ZMM state, as
 * __builtin_cpu_supports does. 0 on other architectures. */
unsigned elm_x86_features(void);

#endif
