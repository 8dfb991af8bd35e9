/* edgelm calib: build a calibration file (JSONL, one {"text", "source", "n_tokens"} per line)
 * from plain text or JSONL sources mixed by weight, reproducibly per seed; a summary on stdout
 * (or --json). The model is needed for its tokenizer (token counts, truncation). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/quant_calib.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: edgelm calib -m MODEL -o OUT.jsonl (-i FILE | --source FILE:WEIGHT ...)\n"
            "                    [options]\n\n"
            "Writes a calibration set for 'edgelm quantize --calib': samples from plain text (one\n"
            "per line, or per paragraph) or JSONL (\"text\", or Alpaca instruction/input/output in\n"
            "the Alpaca prompt template, or --template), mixed from several sources by weight,\n"
            "truncated to --seq-len tokens; the same inputs and seed give the same file.\n\n"
            "  -m, --model MODEL        model whose tokenizer counts tokens\n"
            "  -o, --output OUT         output JSONL (written atomically)\n"
            "  -i, --input FILE         a source of weight 1\n"
            "  --source FILE:WEIGHT     a source and its share, e.g. dialogue.jsonl:3 (repeatable)\n"
            "  -n N                     samples (default 128)\n"
            "  --seq-len N              most tokens per sample, BOS included (default 512)\n"
            "  --min-tokens N           drop samples with fewer tokens (default 16)\n"
            "  -s, --seed N             shuffle seed (default 0)\n"
            "  --split line|paragraph   how plain text is cut into samples (default line)\n"
            "  --template T             JSONL: render each object as T, {field} placeholders,\n"
            "                           \\n and \\t escapes, e.g. 'Q: {question}\\nA: {answer}'\n"
            "  --json                   print the summary as JSON\n"
            "  --tokenizer PATH         llama2.c tokenizer.bin when not beside the model\n"
            "  -h, --help               this help\n");
}

/* Turns the escapes \n, \t and \\ of a command-line template into their characters, in place. */
static void unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '\\' && (r[1] == 'n' || r[1] == 't' || r[1] == '\\')) {
            *w++ = r[1] == 'n' ? '\n' : r[1] == 't' ? '\t' : '\\';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
}

/* "FILE:WEIGHT", or FILE alone (weight 1) when what follows the last ':' is not a number. */
static bool parse_source(char *arg, elm_calib_source *out) {
    char *colon = strrchr(arg, ':');
    double w;
    out->path = arg;
    out->weight = 1;
    if (!colon || !cli_parse_float(colon + 1, 0, 1e9, &w)) return true;
    if (!(w > 0)) return false;
    *colon = 0;
    out->weight = w;
    return true;
}

/* The summary on stdout, as text or JSON; returns the exit status. */
static int print_summary(const elm_calib_built *b, const elm_calib_source *src, const char *out,
                         uint64_t seed, bool json) {
    long long total = 0;
    int32_t lo = b->n ? b->samples[0].n_tokens : 0, hi = lo;
    for (int32_t i = 0; i < b->n; i++) {
        total += b->samples[i].n_tokens;
        lo = b->samples[i].n_tokens < lo ? b->samples[i].n_tokens : lo;
        hi = b->samples[i].n_tokens > hi ? b->samples[i].n_tokens : hi;
    }
    const double mean = b->n ? (double)total / b->n : 0;
    if (!json) {
        printf("%s: %d samples, %lld tokens (mean %.1f, min %d, max %d), seed %llu\n", out, b->n,
               total, mean, lo, hi, (unsigned long long)seed);
        for (int32_t i = 0; i < b->n_sources; i++)
            printf("  %s (weight %g): %d taken of %d eligible, %d read\n", src[i].path,
                   src[i].weight, b->selected[i], b->eligible[i], b->read[i]);
        return 0;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "output", out);
    cJSON_AddNumberToObject(o, "count", b->n);
    cJSON_AddNumberToObject(o, "total_tokens", (double)total);
    cJSON_AddNumberToObject(o, "mean_tokens", mean);
    cJSON_AddNumberToObject(o, "min_tokens", lo);
    cJSON_AddNumberToObject(o, "max_tokens", hi);
    cJSON_AddNumberToObject(o, "seed", (double)seed);
    cJSON *arr = cJSON_AddArrayToObject(o, "sources");
    for (int32_t i = 0; i < b->n_sources; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "path", src[i].path);
        cJSON_AddNumberToObject(e, "weight", src[i].weight);
        cJSON_AddNumberToObject(e, "read", b->read[i]);
        cJSON_AddNumberToObject(e, "eligible", b->eligible[i]);
        cJSON_AddNumberToObject(e, "count", b->selected[i]);
        cJSON_AddItemToArray(arr, e);
    }
    return cli_print_json(o, "calib");
}

#define MAX_SOURCES 64

int cmd_calib(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *tok = NULL, *split = "line";
    char *tmpl = NULL;
    long n = 128, seq_len = 512, min_tokens = 16, seed = 0;
    bool json = false;
    elm_calib_source src[MAX_SOURCES];
    int32_t n_src = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            CLI_STR(model);
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            CLI_STR(out);
        } else if (!strcmp(a, "-i") || !strcmp(a, "--input") || !strcmp(a, "--source")) {
            if (!cli_value(argc, argv, &i)) return 1;
            if (n_src == MAX_SOURCES) return cli_fail("calib: at most %d sources", MAX_SOURCES);
            if (strcmp(a, "--source") != 0) src[n_src++] = (elm_calib_source){argv[i], 1};
            else if (!parse_source(argv[i], &src[n_src++]))
                return cli_fail("--source '%s': the weight must be a positive number", argv[i]);
        } else if (!strcmp(a, "-n")) {
            CLI_LONG(1, 1L << 24, n);
        } else if (!strcmp(a, "--seq-len")) {
            CLI_LONG(2, 1L << 20, seq_len);
        } else if (!strcmp(a, "--min-tokens")) {
            CLI_LONG(0, 1L << 20, min_tokens);
        } else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            CLI_LONG(0, 0x7fffffffL, seed);
        } else if (!strcmp(a, "--split")) {
            CLI_STR(split);
        } else if (!strcmp(a, "--template")) {
            if (!cli_value(argc, argv, &i)) return 1;
            tmpl = argv[i];
            unescape(tmpl);
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--tokenizer")) {
            CLI_STR(tok);
        } else {
            return cli_fail("calib: unknown option '%s' (try 'edgelm calib --help')", a);
        }
    }
    if (!model || !out || n_src == 0)
        return cli_fail("calib: -m MODEL, -o OUT and at least one -i FILE or --source FILE:WEIGHT "
                        "are required (try --help)");
    elm_calib_split sp;
    if (!strcmp(split, "line")) sp = ELM_CALIB_SPLIT_LINE;
    else if (!strcmp(split, "paragraph")) sp = ELM_CALIB_SPLIT_PARAGRAPH;
    else return cli_fail("calib: unknown --split '%s' (use line or paragraph)", split);

    elm_model *m = cli_load_model(model, tok);
    if (!m) return 1;
    elm_calib_build_params p = {.n_samples = (int32_t)n, .seq_len = (int32_t)seq_len,
                                .min_tokens = (int32_t)min_tokens, .seed = (uint64_t)seed,
                                .split = sp, .tmpl = tmpl};
    elm_calib_built b;
    elm_error err;
    elm_error_clear(&err);
    elm_status st = elm_calib_build(&m->vocab, src, n_src, &p, &b, &err);
    if (!st) st = elm_calib_write_jsonl(&b, src, out, &err);
    int rc = 1;
    if (!st) {
        if (b.n < n)
            fprintf(stderr, "edgelm: warning: only %d of the %ld samples asked for are eligible\n",
                    b.n, n);
        rc = print_summary(&b, src, out, (uint64_t)seed, json);
    } else {
        cli_fail("%s", err.msg);
    }
    elm_calib_built_free(&b);
    elm_model_free(m);
    return rc;
}
