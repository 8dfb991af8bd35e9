/* Disjointness of tensor byte ranges (see ranges.h). */
#include "formats/ranges.h"

#include <stdlib.h>

static int cmp_begin(const void *a, const void *b) {
    const elm_byte_range *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

elm_status elm_ranges_check_disjoint(const char *path, elm_byte_range *r, size_t n,
                                     elm_error *err) {
    qsort(r, n, sizeof *r, cmp_begin);
    for (size_t i = 1; i < n; i++)
        if (r[i].begin < r[i - 1].end)
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: tensors '%s' and '%s' have overlapping offsets", path,
                              r[i - 1].name, r[i].name);
    return ELM_OK;
}
