/* libFuzzer harness: the safetensors header (elm_st_open) and a Hugging Face folder's
 * model.safetensors.index.json. The input is a safetensors file, or "INDEX\n--\nSHARD": an index
 * (with the folder's config.json and tokenizer.json copied from the hf-bf16-sharded fixture) and
 * the shard it may name, model-00001-of-00002.safetensors. */
#include <sys/stat.h>

#include "edgelm/model.h"
#include "formats/safetensors.h"
#include "fuzz.h"

static void copy_fixture(const char *rel, const char *name) {
    FILE *f = fopen(fuzz_fixture(rel), "rb");
    if (!f) abort();
    static uint8_t buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fuzz_file(name, buf, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int init;
    if (!init) {
        copy_fixture("stories260K/hf-bf16-sharded/config.json", "config.json");
        copy_fixture("stories260K/hf-bf16-sharded/tokenizer.json", "tokenizer.json");
        init = 1;
    }
    elm_error err;
    elm_error_clear(&err);
    size_t n1, n2;
    const uint8_t *second;
    fuzz_split(data, size, &n1, &second, &n2);
    if (n2 == 0 && n1 == size) {
        const char *path = fuzz_file("single.safetensors", data, size);
        elm_st_file f;
        elm_status st = elm_st_open(&f, path, &err);
        fuzz_check_error(st, &err, path);
        if (!st) elm_st_close(&f);
        return 0;
    }
    fuzz_file("model.safetensors.index.json", data, n1);
    fuzz_file("model-00001-of-00002.safetensors", second, n2);
    elm_model *m = NULL;
    elm_status st = elm_model_load(fuzz_dir(), NULL, &m, &err);
    fuzz_check_error(st, &err, fuzz_dir());
    elm_model_free(m);
    return 0;
}
