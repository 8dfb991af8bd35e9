/* edgelm imatrix: an importance matrix of a model on a calibration text, in llama.cpp's imatrix
 * GGUF (llama-imatrix's chunks and values), for `quantize --imatrix`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/imatrix.h"
#include "edgelm/vocab.h"
#include "opts.h"

static void on_chunk(int32_t done, int32_t total, void *user) {
    (void)user;
    cli_progress(done, total, "imatrix: chunk %d/%d", done, total);
}

int cmd_imatrix(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *out = NULL, *tok = NULL;
    long n_ctx = 512, threads = elm_online_cores();
    const cli_opt table[] = {
        CLI_OPT_MODEL(&model),
        {"-f, --file", "TEXT", CLI_TEXT, &file, 0, 0, "calibration text (plain UTF-8)", 0},
        {"-o, --output", "OUT", CLI_TEXT, &out, 0, 0, "output file (written atomically)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &n_ctx, 2, 1L << 20, "tokens per chunk (default 512)", 0},
        CLI_OPT_THREADS(&threads),
        CLI_OPT_TOKENIZER(&tok),
        {0}};
    const cli_spec spec = {"imatrix", "-m MODEL -f TEXT -o OUT.gguf [-c N] [-t N]",
        "Runs TEXT through MODEL in chunks of N tokens (each from an empty cache, starting\n"
        "with BOS, as llama-imatrix) and writes, for every linear weight of the blocks, the\n"
        "sum of squared inputs per column and the tokens seen (llama.cpp's imatrix GGUF).",
        CLI_TABLES(table), NULL, NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (!model || !file || !out)
        return cli_fail("imatrix: -m MODEL, -f TEXT and -o OUT are required (try --help)");
    if (cli_check_output(out)) return 1;
    size_t len = 0;
    char *text = cli_read_text(file, &len);
    if (!text) return 1;
    int rc = 1;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    elm_imatrix im = {0};
    elm_error err;
    elm_model *m = cli_load_model(model, tok);
    if (!m) goto done;
    if (elm_tokenize_alloc(&m->vocab, text, len, m->vocab.add_bos, false, &ids, &n_ids, &err) ||
        elm_imatrix_compute(m, ids, n_ids, (int32_t)n_ctx, (int32_t)threads, file, on_chunk,
                            NULL, &im, &err) ||
        elm_imatrix_save(&im, out, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    printf("%s: %d weights, %u chunks of %ld tokens from %s\n", out, im.n, im.chunk_count, n_ctx,
           file);
    rc = 0;
done:
    elm_imatrix_free(&im);
    free(ids);
    free(text);
    elm_model_free(m);
    return rc;
}
