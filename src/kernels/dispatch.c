/* Chooses the kernel table for this CPU once. EDGELM_ISA=scalar forces the reference path (tests,
 * comparisons). Only the scalar table exists so far; SIMD tables plug in here. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

const elm_kernels *elm_kernels_best(void) {
    const char *isa = getenv("EDGELM_ISA");
    (void)isa; /* every request resolves to scalar until SIMD tables exist */
    return elm_kernels_scalar();
}
