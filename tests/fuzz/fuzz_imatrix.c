/* libFuzzer harness: llama.cpp imatrix files (elm_imatrix_load), then what `quantize --imatrix`
 * does with one: checked against the stories260K model's tensors (elm_imatrix_check) and turned
 * into per-column weights (elm_imatrix_weights) for every entry. */
#include "edgelm/imatrix.h"
#include "edgelm/model.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    elm_error err;
    const char *path = fuzz_file("imatrix.gguf", data, size);
    elm_imatrix im;
    elm_error_clear(&err);
    elm_status st = elm_imatrix_load(path, &im, &err);
    fuzz_check_error(st, &err, path);
    if (st) return 0;
    if (im.n < 1 || !im.entries) abort(); /* loaded, yet no importance data */
    st = elm_imatrix_check(&im, m, path, &err);
    fuzz_check_error(st, &err, path);
    for (int32_t i = 0; !st && i < im.n; i++) {
        float *w = malloc(sizeof(float) * (size_t)im.entries[i].n);
        if (!w) break;
        elm_imatrix_weights(&im.entries[i], w);
        free(w);
    }
    elm_imatrix_free(&im);
    return 0;
}
