/* libFuzzer harness: the GGUF reader (header, metadata, tensor table, data ranges), through the
 * model loader (elm_model_load: read into memory, then bound) and the vocab-only entry point. */
#include "edgelm/model.h"
#include "formats/loaders.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("model.gguf", data, size);
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = NULL;
    const elm_load_opts opts = {.in_memory = size % 2 == 0};
    elm_status st = elm_model_load(path, &opts, &m, &err);
    fuzz_check_error(st, &err, path);
    elm_model_free(m);
    elm_vocab v;
    elm_error_clear(&err);
    st = elm_vocab_load(path, &v, &err);
    fuzz_check_error(st, &err, path);
    if (!st) elm_vocab_free(&v);
    return 0;
}
