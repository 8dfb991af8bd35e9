/* libFuzzer harness: the ONNX exporter's input. The input after the first byte is a GGUF model,
 * loaded as `edgelm export onnx` loads it; when it loads, elm_export_onnx writes its folder into
 * the scratch folder (the first byte picks the QNN form, bit 0, and MatMulNBits' accuracy_level 4,
 * int8 activation blocks, bit 1).
 * Besides a clean error, the harness checks the exporter's promise about its output: on failure no
 * folder and no "<dir>.tmp.*" is left, on success the folder holds model.onnx or the two QNN
 * graphs. The output is removed after every input, so the scratch folder stays small. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <sys/stat.h>

#include "edgelm/export.h"
#include "edgelm/model.h"
#include "fuzz.h"

/* 1 when the scratch folder holds an entry whose name starts with prefix. */
static int scratch_has(const char *prefix) {
    DIR *d = opendir(fuzz_dir());
    if (!d) abort();
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return found;
}

static int exists(const char *dir, const char *name) {
    char p[1200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const char *path = fuzz_file("model.gguf", data + 1, size - 1);
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = NULL;
    elm_status st = elm_model_load(path, NULL, &m, &err);
    fuzz_check_error(st, &err, path);
    if (st) return 0;
    char out[1100];
    snprintf(out, sizeof out, "%s/onnx", fuzz_dir());
    const elm_onnx_opts o = {.qdq = data[0] & 1, .accuracy_level = data[0] & 2 ? 4 : 0,
                             .static_prompt = 2, .static_ctx = 8};
    elm_error_clear(&err);
    st = elm_export_onnx(m, out, &o, &err);
    /* the exporter names the model, or the output file that failed */
    if (st && st != ELM_ERR_NOMEM && !strstr(err.msg, path) && !strstr(err.msg, out)) {
        fprintf(stderr, "error names neither '%s' nor '%s': %s\n", path, out, err.msg);
        abort();
    }
    if (strchr(err.msg, '\n')) abort();
    if (scratch_has("onnx.tmp.")) abort(); /* a temporary folder left behind */
    if (st && scratch_has("onnx")) abort(); /* failed, yet an output folder */
    if (!st && !(o.qdq ? exists(out, "prompt_processor.onnx") && exists(out, "token_generator.onnx")
                       : exists(out, "model.onnx")))
        abort();
    fuzz_rm_tree(out);
    elm_model_free(m);
    return 0;
}
