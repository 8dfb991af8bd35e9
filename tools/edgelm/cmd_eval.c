/* edgelm eval: validates quantized files against their full-precision baseline on the chunks
 * perplexity scores (KL divergence, top-1/top-5 agreement, Δp, perplexity change) and on greedy
 * continuations of prompts (similarity, exact match, completion), then prints one table with
 * verdicts (or --json) and optionally writes a Markdown report and an SVG plot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"
#include "edgelm/eval.h"
#include "opts.h"

#define MAX_MODELS 64

typedef struct {
    const char *models[MAX_MODELS];
    int n_models;
    const char *ref, *ref_logits, *save_ref, *file, *prompts, *markdown, *plot, *tokenizer;
    long n_ctx, n_batch, n_predict, n_threads;
    bool json, mmap;
    elm_plot_y plot_y;
    elm_type type_k, type_v;
} eval_opts;

/* ------------------------------------------------------------------------- helpers */

static void on_chunk(const char *name, int32_t chunk, int32_t n_chunks, double ppl, void *user) {
    (void)user;
    cli_progress(chunk, n_chunks, "eval: %s: chunk %d/%d, running PPL %.4f", name, chunk, n_chunks, ppl);
}

static void on_note(const char *line, void *user) {
    (void)user;
    fprintf(stderr, "eval: %s\n", line);
}

static int write_atomic(const char *path, const char *doc) {
    elm_out o;
    elm_error err;
    if (elm_out_open(&o, path, &err) || elm_out_write(&o, doc, strlen(doc), &err)) {
        elm_out_abort(&o);
        return cli_fail("%s", err.msg);
    }
    if (elm_out_commit(&o, &err)) return cli_fail("%s", err.msg);
    return 0;
}

/* --markdown and --plot are written at the end: a folder that is missing is said up front. */
static int check_outputs(const eval_opts *o) {
    const char *outs[] = {o->markdown, o->plot, o->save_ref};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i] && cli_check_output(outs[i])) return 1;
    return 0;
}

/* --------------------------------------------------------------------- the evaluation */

static int emit(const eval_opts *o, const elm_eval_report *rep) {
    char *doc = o->json ? elm_report_json(rep) : elm_report_text(rep);
    if (!doc) return cli_fail("out of memory writing the report");
    fputs(doc, stdout);
    if (o->json) fputc('\n', stdout);
    free(doc);
    int rc = 0;
    if (o->markdown) {
        if (!(doc = elm_report_markdown(rep))) return cli_fail("out of memory writing the report");
        rc = write_atomic(o->markdown, doc);
        free(doc);
    }
    if (!rc && o->plot) {
        if (!(doc = elm_report_svg(rep, o->plot_y))) return cli_fail("out of memory writing the plot");
        rc = write_atomic(o->plot, doc);
        free(doc);
    }
    return rc;
}

static int check_opts(const eval_opts *o) {
    if (!o->file) return cli_fail("eval: -f TEXT is required (see edgelm eval --help)");
    if (!o->ref && !o->ref_logits) return cli_fail("eval: --ref BASELINE or --ref-logits FILE is required");
    if (o->save_ref && !o->ref) return cli_fail("eval: --save-ref needs --ref BASELINE");
    if (o->save_ref && o->ref_logits) return cli_fail("eval: --save-ref and --ref-logits exclude each other");
    if (o->n_models == 0 && !o->save_ref)
        return cli_fail("eval: -m QUANT is required (or --save-ref FILE to only save the reference)");
    if (o->prompts && !o->ref)
        return cli_fail("eval: --prompts needs the baseline model (--ref) for its continuations");
    return 0;
}

/* Reads the prompts, runs the evaluation (elm_evaluate), prints and writes the reports. */
static int run_eval(const eval_opts *o) {
    char *prompt_buf = NULL, **prompts = NULL;
    int n_prompts = 0;
    if (o->prompts) {
        size_t len;
        if (!(prompt_buf = cli_read_text(o->prompts, &len))) return 1;
        if (!(prompts = malloc(sizeof(char *) * (len / 2 + 1)))) {
            free(prompt_buf);
            return cli_fail("out of memory");
        }
        if ((n_prompts = cli_split_lines(prompt_buf, prompts, (int)(len / 2 + 1))) == 0) {
            free(prompts);
            free(prompt_buf);
            return cli_fail("%s: no prompts (one per line)", o->prompts);
        }
    }
    const elm_eval_params p = {
        .ref = o->ref, .ref_logits = o->ref_logits, .save_ref = o->save_ref, .models = o->models,
        .n_models = o->n_models, .text = o->file, .prompts = (const char *const *)prompts,
        .n_prompts = n_prompts, .n_ctx = (int32_t)o->n_ctx, .n_batch = (int32_t)o->n_batch,
        .n_predict = (int32_t)o->n_predict, .n_threads = (int32_t)o->n_threads,
        .tokenizer = o->tokenizer, .mmap = o->mmap, .type_k = o->type_k, .type_v = o->type_v};
    const elm_eval_callbacks cb = {.chunk = on_chunk, .note = on_note};
    elm_eval_run *run = NULL;
    elm_error err;
    int rc = check_outputs(o);
    if (!rc && elm_evaluate(&p, &cb, &run, &err)) rc = cli_fail("%s", err.msg);
    if (!rc) rc = emit(o, elm_eval_run_report(run));
    elm_eval_run_free(run);
    free(prompts);
    free(prompt_buf);
    return rc;
}

/* -m PATH, repeatable. */
static bool add_model(const char *opt, const char *v, void *dst) {
    (void)opt;
    eval_opts *o = dst;
    if (o->n_models == MAX_MODELS) return !cli_fail("eval: at most %d models at once", MAX_MODELS);
    o->models[o->n_models++] = v;
    return true;
}

static bool take_plot_y(const char *opt, const char *v, void *dst) {
    if (!strcmp(v, "kld")) *(elm_plot_y *)dst = ELM_PLOT_KLD;
    else if (!strcmp(v, "ppl")) *(elm_plot_y *)dst = ELM_PLOT_PPL;
    else return !cli_fail("%s: invalid value '%s' (expected kld or ppl)", opt, v);
    return true;
}

int cmd_eval(int argc, char **argv) {
    eval_opts o = {.n_ctx = 512, .n_predict = 64, .n_threads = elm_online_cores()};
    const cli_opt opts[] = {
        {"-m, --model", "PATH", CLI_CALL, &o, 0, 0, "quantized model (GGUF, Hugging Face folder, llama2.c); repeatable", add_model},
        {"--ref", "PATH", CLI_TEXT, &o.ref, 0, 0, "the full-precision baseline model", 0},
        {"-f, --file", "TEXT", CLI_TEXT, &o.file, 0, 0, "UTF-8 evaluation text (needs at least 2 x CTX tokens)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o.n_ctx, 0, 1 << 20, "tokens per chunk (default 512)", 0},
        {"-b, --batch-size", "N", CLI_INT, &o.n_batch, 1, 1 << 20, "tokens per forward pass (default CTX)", 0},
        {"--prompts", "FILE", CLI_TEXT, &o.prompts, 0, 0, "one prompt per line: greedy continuations are compared", 0},
        {"-n, --n-predict", "N", CLI_INT, &o.n_predict, 1, 1 << 16, "tokens per continuation (default 64)", 0},
        {"--save-ref", "FILE", CLI_TEXT, &o.save_ref, 0, 0, "keep the baseline's log-probs in FILE (then -m is optional)", 0},
        {"--ref-logits", "FILE", CLI_TEXT, &o.ref_logits, 0, 0, "use log-probs saved by --save-ref instead of running the baseline\n(--ref is still needed for --prompts)", 0},
        CLI_OPT_JSON(&o.json, "print the report as JSON (docs/eval.schema.json)"),
        {"--markdown", "FILE", CLI_TEXT, &o.markdown, 0, 0, "also write the report as Markdown", 0},
        {"--plot", "FILE.svg", CLI_TEXT, &o.plot, 0, 0, "also write a plot of file size against KLD (or --plot-y ppl)", 0},
        {"--plot-y", "kld|ppl", CLI_CALL, &o.plot_y, 0, 0, "y axis of the plot (default kld)", take_plot_y},
        CLI_OPT_THREADS(&o.n_threads),
        CLI_OPT_CACHE_TYPES(&o.type_k, &o.type_v),
        CLI_OPT_TOKENIZER(&o.tokenizer),
        {"--mmap", NULL, CLI_FLAG, &o.mmap, 0, 0, "map GGUF files instead of reading them into memory", 0},
        {0}};
    const cli_spec spec = {
        "eval", "-m QUANT [-m QUANT2 ...] (--ref BASELINE | --ref-logits FILE) -f TEXT [options]",
        "Compares each quantized model with the baseline on the chunks `perplexity` scores and on\n"
        "greedy continuations of prompts; prints a table with verdicts (PPL change < 5%: excellent,\n"
        "similarity > 90%: acceptable). --cache-type-k/-v set the KV cache of the models under\n"
        "test, the baseline's staying f32: with -m the baseline's own file, the table measures\n"
        "what a quantized cache costs.",
        CLI_TABLES(opts), NULL, NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    return check_opts(&o) ? 1 : run_eval(&o);
}
