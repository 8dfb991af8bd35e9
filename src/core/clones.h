/* Function multi-versioning: ELM_CLONES("arch=x86-64-v3", "default") before a function builds it
 * once per target, the widest the CPU has picked at load (glibc's ifuncs). Callers use it where a
 * loop's floats must not change with the target (the build's -ffp-contract=off keeps each
 * operation as written), so every version gives the same results, only faster. */
#ifndef EDGELM_CORE_CLONES_H
#define EDGELM_CORE_CLONES_H

/* x86 Linux with GCC only: clang 14 leaves the resolver of a clone called from another file
 * undefined (the fuzzers' build failed to link). Not under TSan or ASan: they instrument the
 * resolver, which the dynamic loader runs before their runtime is set up (test_api crashed at
 * load under TSan). Elsewhere (ARM64: NEON and FMA are the baseline) one version. */
#if defined(__x86_64__) && defined(__linux__) && !defined(__ANDROID__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define ELM_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define ELM_CLONES(...)
#endif

#endif
