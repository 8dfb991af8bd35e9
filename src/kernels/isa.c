/* The kernel tables as edgelm/system.h reports them. */
#include <stdio.h>
#include <string.h>

#include "edgelm/system.h"
#include "kernels/kernels.h"

const char *elm_kernel_isa(void) { return elm_kernels_best()->isa; }

void elm_kernel_isas(char *buf, size_t cap) {
    const elm_kernels *tables[] = {elm_kernels_avx512(), elm_kernels_avx2(), elm_kernels_neon(),
                                   elm_kernels_scalar()};
    size_t len = 0;
    if (!cap) return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        if (!tables[i]) continue;
        const int n = snprintf(buf + len, cap - len, "%s%s", len ? " " : "", tables[i]->isa);
        if (n > 0 && (size_t)n < cap - len) len += (size_t)n;
    }
}
