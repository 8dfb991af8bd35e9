/* CPU features from cpuid leaves 1 and 7 (Intel SDM vol. 2A, CPUID; AMD APM vol. 3 appendix E)
 * and the OS-enabled register state from XCR0. */
#include "kernels/x86/cpuid.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

/* XCR0 through the raw instruction: _xgetbv would need the xsave target on the caller. */
static unsigned long long xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static unsigned read_features(void) {
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (c & (1u << 20)) f |= ELM_X86_SSE42;
    /* OSXSAVE (bit 27) must be set before XGETBV may run; XCR0 bits 1-2 are SSE and AVX state. */
    const int ymm = (c & (1u << 27)) && (xcr0() & 0x6) == 0x6;
    const int zmm = ymm && (xcr0() & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (!ymm) return f;
    if (c & (1u << 28)) f |= ELM_X86_AVX;
    if (c & (1u << 12)) f |= ELM_X86_FMA;
    if (c & (1u << 29)) f |= ELM_X86_F16C;
    const unsigned max = __get_cpuid_max(0, (unsigned *)0);
    if (max < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    if (b & (1u << 5)) f |= ELM_X86_AVX2;
    if (!zmm) return f;
    if (b & (1u << 16)) f |= ELM_X86_AVX512F;
    if (b & (1u << 17)) f |= ELM_X86_AVX512DQ;
    if (b & (1u << 30)) f |= ELM_X86_AVX512BW;
    if (b & (1u << 31)) f |= ELM_X86_AVX512VL;
    if (c & (1u << 1)) f |= ELM_X86_AVX512VBMI;
    if (c & (1u << 11)) f |= ELM_X86_AVX512VNNI;
    if (a >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        if (a & (1u << 5)) f |= ELM_X86_AVX512BF16;
    }
    return f;
}

/* cpuid traps to the hypervisor in a VM, so it is read once; racing first calls store the same
 * value. The top bit marks "read", so that a CPU with none of the features is not read again. */
unsigned elm_x86_features(void) {
    const unsigned read_bit = 1u << 31;
    static unsigned cached;
    unsigned f = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!f) {
        f = read_features() | read_bit;
        __atomic_store_n(&cached, f, __ATOMIC_RELAXED);
    }
    return f & ~read_bit;
}
#else
unsigned elm_x86_features(void) { return 0; }
#endif
