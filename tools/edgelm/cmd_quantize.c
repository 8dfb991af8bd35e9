/* edgelm quantize: load any model, write a GGUF quantized by round-to-nearest (elm_quantize_model),
 * with a progress bar and fallback warnings on stderr and a closing summary line on stdout. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/quantize.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: edgelm quantize -m MODEL -o OUT.gguf --type TYPE [--tokenizer PATH]\n\n"
            "Writes MODEL as GGUF with every 2-D weight rounded to nearest in TYPE (as\n"
            "llama-quantize --pure does without an importance matrix); 1-D tensors stay f32, and\n"
            "matrices whose rows are not a multiple of 32 fall back to f16.\n\n"
            "  -m, --model MODEL    input: GGUF, Hugging Face folder or llama2.c model.bin\n"
            "  -o, --output OUT     output GGUF file (written atomically)\n"
            "  --type TYPE          q8_0, q4_0, q4_1, q5_0, q5_1, f16 or bf16\n"
            "  --tokenizer PATH     llama2.c tokenizer.bin when not beside the model\n"
            "  -h, --help           this help\n");
}

typedef struct bar {
    bool tty;
} bar;

static void on_progress(int32_t done, int32_t total, const char *tensor, void *user) {
    const bar *b = user;
    if (b->tty) {
        int width = 30, fill = total ? (int)((int64_t)done * width / total) : width;
        fprintf(stderr, "\r[%.*s%*s] %d/%d %-40.40s", fill, "==============================",
                width - fill, "", done, total, tensor);
        if (done == total) fputc('\n', stderr);
    } else {
        fprintf(stderr, "[%d/%d] %s\n", done, total, tensor);
    }
}

static void on_warn(const char *msg, void *user) {
    const bar *b = user;
    /* on a terminal, clear the progress bar's line first */
    fprintf(stderr, "%sedgelm: warning: %s\n", b->tty ? "\r\033[K" : "", msg);
}

static const char *const allowed[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "f16", "bf16"};

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type_name = NULL, *tok = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(in = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--type")) {
            if (!(type_name = cli_value(argc, argv, &i))) return 1;
        } else if (!strcmp(a, "--tokenizer")) {
            if (!(tok = cli_value(argc, argv, &i))) return 1;
        } else {
            return cli_fail("quantize: unknown option '%s' (try 'edgelm quantize --help')", a);
        }
    }
    if (!in || !out || !type_name)
        return cli_fail("quantize: -m MODEL, -o OUT and --type TYPE are required (try --help)");
    elm_type type;
    bool ok = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        ok |= !strcasecmp(type_name, allowed[i]);
    if (!ok || !elm_type_from_name(type_name, &type))
        return cli_fail("quantize: unknown --type '%s' (use q8_0, q4_0, q4_1, q5_0, q5_1, f16 or "
                        "bf16)", type_name);

    elm_model *m = cli_load_model(in, tok);
    if (!m) return 1;
    bar b = {.tty = isatty(STDERR_FILENO)};
    elm_quantize_callbacks cb = {.progress = on_progress, .warn = on_warn, .user = &b};
    elm_quantize_summary s;
    elm_error err;
    elm_error_clear(&err);
    elm_status st = elm_quantize_model(m, type, out, &cb, &s, &err);
    elm_model_free(m);
    if (st) return cli_fail("%s", err.msg);
    printf("%s: %d tensors as %s (%d fell back to f16): %.2f bits/weight, %.2f MiB -> %.2f MiB "
           "(%.2fx smaller), file %llu bytes, %.2f s\n",
           out, s.n_tensors, elm_type_get(type)->name, s.n_fallback, s.bits_per_weight,
           s.bytes_in / 1048576.0, s.bytes_out / 1048576.0, s.ratio,
           (unsigned long long)s.file_bytes, s.seconds);
    return 0;
}
