/* Chooses the kernel table for this CPU: the widest one it supports, unless EDGELM_ISA names
 * another (scalar, avx2, avx512, neon) for tests and comparisons; a named ISA the CPU lacks falls
 * back to scalar. Also reports the CPU features for `edgelm inspect --system`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/targets.h"
#include "kernels/x86/cpuid.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

const elm_kernels *elm_kernels_best(void) {
    const struct {
        const char *name;
        const elm_kernels *(*get)(void);
    } isas[] = {
        {"avx512", elm_kernels_avx512}, {"avx2", elm_kernels_avx2}, {"neon", elm_kernels_neon}};
    const char *want = getenv("EDGELM_ISA");
    if (want && *want) {
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
            if (!strcmp(want, isas[i].name)) {
                const elm_kernels *k = isas[i].get();
                return k ? k : elm_kernels_scalar();
            }
        return elm_kernels_scalar();
    }
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        const elm_kernels *k = isas[i].get();
        if (k) return k;
    }
    return elm_kernels_scalar();
}

static void append(char *buf, size_t cap, size_t *len, const char *word) {
    int n = snprintf(buf + *len, cap - *len, "%s%s", *len ? " " : "", word);
    if (n > 0 && (size_t)n < cap - *len) *len += (size_t)n;
}

void elm_cpu_features(char *buf, size_t cap) {
    size_t len = 0;
    if (!cap) return;
    buf[0] = '\0';
#if defined(__x86_64__) && defined(__GNUC__)
    static const struct {
        unsigned bit;
        const char *name;
    } features[] = {
#define ELM_X86_NAME(id, name) {ELM_X86_##id, name},
        ELM_X86_FEATURES(ELM_X86_NAME)
#undef ELM_X86_NAME
    };
    const unsigned have = elm_x86_features();
    for (size_t i = 0; i < sizeof features / sizeof features[0]; i++)
        if (have & features[i].bit) append(buf, cap, &len, features[i].name);
#elif defined(__aarch64__) && defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    append(buf, cap, &len, "neon");
    if (hw & HWCAP_FPHP) append(buf, cap, &len, "fp16");
    if (hw & HWCAP_ASIMDDP) append(buf, cap, &len, "dotprod");
#ifdef HWCAP2_I8MM
    if (hw2 & HWCAP2_I8MM) append(buf, cap, &len, "i8mm");
#endif
#ifdef HWCAP2_BF16
    if (hw2 & HWCAP2_BF16) append(buf, cap, &len, "bf16");
#endif
#if !defined(HWCAP2_I8MM) && !defined(HWCAP2_BF16)
    (void)hw2;
#endif
#else
    append(buf, cap, &len, "none");
#endif
}

const char *elm_kernels_built(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    return "avx512(" ELM_TARGET_AVX512 "; bf16 prefill: avx512bf16) avx2(" ELM_TARGET_AVX2 ")";
#elif defined(__aarch64__) && defined(__GNUC__) && defined(__linux__)
    return "neon(" ELM_TARGET_NEON "; bf16 prefill: bf16)";
#else
    return "scalar only";
#endif
}
