/* libFuzzer harness: calibration files, plain text (line and paragraph split) and JSONL (with and
 * without a --template), through elm_calib_load with the stories260K vocabulary. The first byte
 * picks the split and whether a template is used. */
#include "edgelm/model.h"
#include "edgelm/quant.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    elm_error err;
    if (size == 0) return 0;
    const char *path = fuzz_file("calib.jsonl", data + 1, size - 1);
    elm_error_clear(&err);
    elm_text_set ts;
    elm_status st = elm_text_set_read(path, data[0] & 1 ? ELM_CALIB_SPLIT_PARAGRAPH : ELM_CALIB_SPLIT_LINE,
                                      data[0] & 2 ? "Q: {question}\\nA: {answer} {n}" : NULL, &ts, &err);
    fuzz_check_error(st, &err, path);
    elm_text_set_free(&ts);
    elm_calib_set cs;
    elm_error_clear(&err);
    st = elm_calib_load(&m->vocab, path, 64, data[0] >> 4, &cs, &err);
    fuzz_check_error(st, &err, path);
    elm_calib_free(&cs);
    return 0;
}
