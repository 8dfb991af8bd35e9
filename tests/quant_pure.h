/* Round-to-nearest quantization of every matrix to one type (llama-quantize --pure) through
 * elm_quantize, with the summary only: what most quantization tests need. */
#ifndef EDGELM_TESTS_QUANT_PURE_H
#define EDGELM_TESTS_QUANT_PURE_H

#include "edgelm/quant.h"

/* elm_quantize with policy {type, pure}; the summary goes to *sum (may be NULL). */
static inline elm_status quantize_pure(const elm_model *m, elm_type type, const char *path,
                                       const elm_quantize_callbacks *cb, elm_quantize_summary *sum,
                                       elm_error *err) {
    const elm_quant_params p = {.policy = {.type = type, .pure = true}, .method = ELM_QUANT_RTN};
    elm_quant_report rep;
    const elm_status st = elm_quantize(m, &p, path, cb, sum ? &rep : NULL, err);
    if (!st && sum) {
        *sum = rep.summary;
        elm_quant_report_free(&rep);
    }
    return st;
}

#endif
