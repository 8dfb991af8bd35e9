/* Chooses the kernel table for this CPU: the widest one it supports, unless EDGELM_ISA names
 * another (scalar, avx2) for tests and comparisons; a named ISA the CPU lacks falls back to
 * scalar. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

const elm_kernels *elm_kernels_best(void) {
    const char *want = getenv("EDGELM_ISA");
    if (want && !strcmp(want, "scalar")) return elm_kernels_scalar();
    const elm_kernels *avx2 = elm_kernels_avx2();
    if (avx2 && (!want || !strcmp(want, "avx2"))) return avx2;
    return elm_kernels_scalar();
}
