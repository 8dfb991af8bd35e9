/* libFuzzer harness: a Hugging Face config.json (elm_hf_read_config) and tokenizer.json
 * (elm_hf_read_tokenizer, with the config read from the hf-f32 fixture). The first byte picks
 * which file the rest is. */
#include "edgelm/vocab.h"
#include "formats/hf.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static elm_hf_config fixture_cfg;
    static int init;
    elm_error err;
    if (!init) {
        if (elm_hf_read_config(fuzz_fixture("stories260K/hf-f32/config.json"), &fixture_cfg, &err))
            abort();
        init = 1;
    }
    if (size == 0) return 0;
    elm_error_clear(&err);
    if (data[0] & 1) {
        const char *path = fuzz_file("config.json", data + 1, size - 1);
        elm_hf_config c;
        elm_status st = elm_hf_read_config(path, &c, &err);
        fuzz_check_error(st, &err, path);
        return 0;
    }
    const char *path = fuzz_file("tokenizer.json", data + 1, size - 1);
    elm_vocab v;
    memset(&v, 0, sizeof v);
    elm_status st = elm_hf_read_tokenizer(fuzz_dir(), &fixture_cfg, &v, &err);
    fuzz_check_error(st, &err, "tokenizer");
    (void)path;
    elm_vocab_free(&v);
    return 0;
}
