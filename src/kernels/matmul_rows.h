/* The row loop shared by the kernel tables: decode each weight row once into scratch (F32 rows are
 * used in place), then dot it with every token's activation using the table's own dot product.
 * Included by each ISA's file so the dot inlines. */
#ifndef EDGELM_KERNELS_MATMUL_ROWS_H
#define EDGELM_KERNELS_MATMUL_ROWS_H

#include "kernels/kernels.h"

#define ELM_DEFINE_MATMUL_ROWS(fn_name, dot, attrs)                                             \
    attrs static void fn_name(const elm_tensor *w, const float *x, int64_t n_tok, float *y,    \
                              int64_t r0, int64_t r1, float *scratch) {                       \
        const int64_t cols = w->ne[0], rows = w->ne[1];                                        \
        const elm_type_traits *tt = elm_type_get(w->type);                                     \
        const size_t row_bytes = elm_row_bytes(w->type, cols);                                 \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const void *src = (const char *)w->data + (size_t)r * row_bytes;                   \
            const float *row = scratch;                                                        \
            if (w->type == ELM_TYPE_F32) row = src;                                            \
            else tt->to_float(src, scratch, cols);                                             \
            for (int64_t t = 0; t < n_tok; t++) y[t * rows + r] = dot(row, x + t * cols, cols); \
        }                                                                                      \
    }

#endif
