/* App API (edgelm.h): model handles, tokenization, status strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

void edgelm_error_out(char *errbuf, size_t errcap, const char *msg) {
    if (errbuf && errcap) snprintf(errbuf, errcap, "%s", msg);
}

static int model_load(const char *path, bool in_memory, edgelm_model **out, char *errbuf,
                      size_t errcap) {
    *out = NULL;
    elm_error err;
    elm_error_clear(&err);
    edgelm_model *h = calloc(1, sizeof *h);
    if (!h) {
        edgelm_error_out(errbuf, errcap, "out of memory");
        return ELM_ERR_NOMEM;
    }
    const elm_status st =
        elm_model_load(path, &(elm_load_opts){.in_memory = in_memory}, &h->m, &err);
    if (st) {
        edgelm_error_out(errbuf, errcap, err.msg);
        free(h);
        return st;
    }
    edgelm_error_out(errbuf, errcap, "");
    *out = h;
    return ELM_OK;
}

int edgelm_model_load(const char *path, edgelm_model **out, char *errbuf, size_t errcap) {
    /* Desktop apps run the model: read it into memory for faster decode (elm_load_opts). On a
     * phone (Android, or the -DEDGELM_MINIMAL=ON library an app links) map it instead: loading
     * is then immediate, and the weights are clean file pages the OS can drop and re-read under
     * memory pressure rather than anonymous memory that counts against the app. */
#if defined(__ANDROID__) || defined(EDGELM_MINIMAL)
    return model_load(path, false, out, errbuf, errcap);
#else
    return model_load(path, true, out, errbuf, errcap);
#endif
}

int edgelm_model_load_mapped(const char *path, edgelm_model **out, char *errbuf, size_t errcap) {
    return model_load(path, false, out, errbuf, errcap);
}

void edgelm_model_free(edgelm_model *m) {
    if (!m) return;
    elm_model_free(m->m);
    free(m);
}

const elm_model *edgelm_model_get(const edgelm_model *m) { return m->m; }

int32_t edgelm_tokenize(const edgelm_model *m, const char *text, int add_bos, int parse_special,
                        int32_t *ids, int32_t max_ids) {
    const int64_t n = elm_tokenize_special(&m->m->vocab, text, strlen(text), add_bos != 0,
                                           parse_special != 0, ids, max_ids, NULL);
    return n < 0 || n > INT32_MAX ? -1 : (int32_t)n;
}

char *edgelm_detokenize(const edgelm_model *m, const int32_t *ids, int32_t n) {
    return elm_detokenize(&m->m->vocab, ids, n, false);
}

void edgelm_free(void *p) { free(p); }

const char *edgelm_status_string(int status) { return elm_status_str((elm_status)status); }
