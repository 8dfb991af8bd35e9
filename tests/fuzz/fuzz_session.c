/* libFuzzer harness: session files (elm_session_load into a context of the stories260K model) and
 * eval reference-cache files (elm_ref_open, then elm_ref_check). The first byte picks which. */
#include "edgelm/context.h"
#include "edgelm/eval.h"
#include "edgelm/model.h"
#include "edgelm/session.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    static elm_context *c;
    elm_error err;
    if (!c) {
        const elm_context_params p = {.n_ctx = 64, .n_threads = 1};
        if (elm_context_new(m, &p, &c, &err)) abort();
    }
    if (size == 0) return 0;
    elm_error_clear(&err);
    if (data[0] & 1) {
        const char *path = fuzz_file("chat.session", data + 1, size - 1);
        elm_status st = elm_session_load(c, path, &err);
        fuzz_check_error(st, &err, path);
        elm_context_reset(c);
        return 0;
    }
    const char *path = fuzz_file("reference.elmref", data + 1, size - 1);
    elm_ref *r = NULL;
    elm_status st = elm_ref_open(path, &r, &err);
    fuzz_check_error(st, &err, path);
    if (!st) {
        int32_t ids[256] = {1};
        st = elm_ref_check(r, m->hp.n_vocab, 128, ids, 256, &err);
        fuzz_check_error(st, &err, path);
        elm_ref_close(r);
    }
    return 0;
}
