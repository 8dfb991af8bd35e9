/* Chooses the kernel table for this CPU: the widest one it supports, unless EDGELM_ISA names
 * another (scalar, avx2, avx512, neon) for tests and comparisons; a named ISA the CPU lacks falls
 * back to scalar. Also reports the CPU features for `edgelm inspect --system`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

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
    __builtin_cpu_init();
#define FEATURE(f)                                                                                 \
    if (__builtin_cpu_supports(f)) append(buf, cap, &len, f)
    FEATURE("sse4.2");
    FEATURE("avx");
    FEATURE("avx2");
    FEATURE("fma");
#if !defined(__clang__) || __clang_major__ >= 16 /* clang 14 (the fuzz build) lacks this name */
    FEATURE("f16c");
#endif
    FEATURE("avx512f");
    FEATURE("avx512bw");
    FEATURE("avx512vl");
    FEATURE("avx512dq");
    FEATURE("avx512vnni");
    FEATURE("avx512vbmi");
    FEATURE("avx512bf16");
#undef FEATURE
#elif defined(__aarch64__) && defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    append(buf, cap, &len, "neon");
    if (hw & HWCAP_FPHP) append(buf, cap, &len, "fp16");
    if (hw & HWCAP_ASIMDDP) append(buf, cap, &len, "dotprod");
#ifdef HWCAP2_I8MM
    if (hw2 & HWCAP2_I8MM) append(buf, cap, &len, "i8mm");
#else
    (void)hw2;
#endif
#else
    append(buf, cap, &len, "none");
#endif
}
