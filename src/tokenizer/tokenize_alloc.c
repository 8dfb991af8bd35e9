/* elm_tokenize_alloc: the encoder into a buffer sized to fit, for callers that do not know a bound
 * (a vocabulary with empty or odd pieces can give more tokens than bytes). */
#include <stdlib.h>

#include "edgelm/vocab.h"

elm_status elm_tokenize_alloc(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                              bool parse_special, int32_t **ids, int64_t *n_ids, elm_error *err) {
    *ids = NULL;
    *n_ids = 0;
    int64_t cap = (int64_t)len + 2;
    for (;;) {
        int32_t *p = realloc(*ids, sizeof(int32_t) * (size_t)cap);
        if (!p) {
            free(*ids);
            *ids = NULL;
            return elm_errorf(err, ELM_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
        }
        *ids = p;
        elm_error e;
        elm_error_clear(&e);
        const int64_t n = elm_tokenize_special(v, text, len, add_bos, parse_special, p, cap, &e);
        if (n < 0) {
            free(*ids);
            *ids = NULL;
            if (err) *err = e;
            return e.code ? e.code : ELM_ERR_NOMEM;
        }
        if (n <= cap) {
            *n_ids = n;
            return ELM_OK;
        }
        cap = n;
    }
}
