/* libFuzzer harness: a llama2.c checkpoint and its tokenizer.bin, as "MODEL\n--\nTOKENIZER"
 * (without a separator, the input is the tokenizer and the model is the stories260K fixture's). */
#include "edgelm/model.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t n1, n2;
    const uint8_t *second;
    fuzz_split(data, size, &n1, &second, &n2);
    const char *model, *tok;
    if (n1 == size) {
        model = fuzz_fixture("stories260K/model.bin");
        tok = fuzz_file("tok.bin", data, size);
    } else {
        model = fuzz_file("model.bin", data, n1);
        tok = fuzz_file("tok.bin", second, n2);
    }
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = NULL;
    const elm_load_opts opts = {.tokenizer_path = tok};
    elm_status st = elm_model_load(model, &opts, &m, &err);
    if (st && !strstr(err.msg, model) && !strstr(err.msg, tok)) {
        fprintf(stderr, "error names neither file: %s\n", err.msg);
        abort();
    }
    elm_model_free(m);
    return 0;
}
