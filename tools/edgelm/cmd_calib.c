/* edgelm calib: build a calibration file (JSONL, one {"text", "source", "n_tokens"} per line)
 * from plain text or JSONL sources mixed by weight, reproducibly per seed; a summary on stdout
 * (or --json). The model is needed for its tokenizer (token counts, truncation). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/quant.h"
#include "opts.h"

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

typedef struct sources {
    elm_calib_source src[MAX_SOURCES];
    int32_t n;
} sources;

/* -i FILE (weight 1) and --source FILE:WEIGHT, repeatable. */
static bool add_source(const char *opt, const char *v, void *dst) {
    sources *s = dst;
    if (s->n == MAX_SOURCES) {
        cli_fail("calib: at most %d sources", MAX_SOURCES);
        return false;
    }
    if (strcmp(opt, "--source") != 0) {
        s->src[s->n++] = (elm_calib_source){v, 1};
    } else if (!parse_source((char *)v, &s->src[s->n++])) {
        cli_fail("--source '%s': the weight must be a positive number", v);
        return false;
    }
    return true;
}

/* --template T with its \n and \t escapes turned into characters. */
static bool take_template(const char *opt, const char *v, void *dst) {
    (void)opt;
    unescape((char *)v);
    *(const char **)dst = v;
    return true;
}

int cmd_calib(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *tok = NULL, *split = "line", *tmpl = NULL;
    long n = 128, seq_len = 512, min_tokens = 16, seed = 0;
    bool json = false;
    sources s = {.n = 0};
    const cli_opt opts[] = {
        {"-m, --model", "MODEL", CLI_TEXT, &model, 0, 0, "model whose tokenizer counts tokens", 0},
        {"-o, --output", "OUT", CLI_TEXT, &out, 0, 0, "output JSONL (written atomically)", 0},
        {"-i, --input", "FILE", CLI_CALL, &s, 0, 0, "a source of weight 1", add_source},
        {"--source", "FILE:WEIGHT", CLI_CALL, &s, 0, 0, "a source and its share, e.g. dialogue.jsonl:3 (repeatable)", add_source},
        {"-n", "N", CLI_INT, &n, 1, 1L << 24, "samples (default 128)", 0},
        {"--seq-len", "N", CLI_INT, &seq_len, 2, 1L << 20, "most tokens per sample, BOS included (default 512)", 0},
        {"--min-tokens", "N", CLI_INT, &min_tokens, 0, 1L << 20, "drop samples with fewer tokens (default 16)", 0},
        {"-s, --seed", "N", CLI_INT, &seed, 0, 0x7fffffffL, "shuffle seed (default 0)", 0},
        {"--split", "line|paragraph", CLI_TEXT, &split, 0, 0, "how plain text is cut into samples (default line)", 0},
        {"--template", "T", CLI_CALL, &tmpl, 0, 0, "JSONL: render each object as T, {field} placeholders,\n\\n and \\t escapes, e.g. 'Q: {question}\\nA: {answer}'", take_template},
        CLI_OPT_JSON(&json, "print the summary as JSON"),
        CLI_OPT_TOKENIZER(&tok),
        {0}};
    const cli_spec spec = {
        "calib", "-m MODEL -o OUT.jsonl (-i FILE | --source FILE:WEIGHT ...) [options]",
        "Writes a calibration set for 'edgelm quantize --calib': samples from plain text (one\n"
        "per line, or per paragraph) or JSONL (\"text\", or Alpaca instruction/input/output in\n"
        "the Alpaca prompt template, or --template), mixed from several sources by weight,\n"
        "truncated to --seq-len tokens; the same inputs and seed give the same file.",
        CLI_TABLES(opts), NULL, NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    elm_calib_source *src = s.src;
    const int32_t n_src = s.n;
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
