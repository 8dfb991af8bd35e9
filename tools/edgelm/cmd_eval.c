/* edgelm eval: validates quantized files against their full-precision baseline on the chunks
 * perplexity scores (KL divergence, top-1/top-5 agreement, Δp, perplexity change) and on greedy
 * continuations of prompts (similarity, exact match, completion), then prints one table with
 * verdicts (or --json) and optionally writes a Markdown report and an SVG plot. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
} eval_opts;

/* ------------------------------------------------------------------------- helpers */

static const char *file_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* Size on disk: the file itself, or a Hugging Face folder's *.safetensors files. */
static uint64_t disk_bytes(const char *path, const elm_model *m) {
    struct stat st;
    if (stat(path, &st) != 0) return elm_model_bytes(m);
    if (!S_ISDIR(st.st_mode)) return (uint64_t)st.st_size;
    uint64_t sum = 0;
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        const size_t n = strlen(e->d_name);
        char full[4096];
        if (n > 12 && !strcmp(e->d_name + n - 12, ".safetensors") &&
            snprintf(full, sizeof full, "%s/%s", path, e->d_name) < (int)sizeof full &&
            stat(full, &st) == 0)
            sum += (uint64_t)st.st_size;
    }
    if (d) closedir(d);
    return sum ? sum : elm_model_bytes(m);
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

typedef struct {
    const char *name;
} progress;

static void on_chunk(int32_t chunk, int32_t n_chunks, double ppl, void *user) {
    const progress *p = user;
    cli_progress(chunk, n_chunks, "eval: %s: chunk %d/%d, running PPL %.4f", p->name, chunk, n_chunks, ppl);
}

/* Splits the prompts file into its non-empty lines (pointers into buf, which is modified). */
static int split_lines(char *buf, char **lines, int cap) {
    int n = 0;
    for (char *s = buf; *s && n < cap;) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        const size_t len = strlen(s);
        if (len && s[len - 1] == '\r') s[len - 1] = '\0';
        if (*s) lines[n++] = s;
        if (!nl) break;
        s = nl + 1;
    }
    return n;
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

/* Same token pieces, in the same order. */
static bool same_pieces(const elm_vocab *a, const elm_vocab *b) {
    if (a->n_tokens != b->n_tokens) return false;
    for (int32_t i = 0; i < a->n_tokens; i++)
        if (a->piece_len[i] != b->piece_len[i] || memcmp(a->pieces[i], b->pieces[i], a->piece_len[i]))
            return false;
    return true;
}

/* --markdown and --plot are written at the end: a folder that is missing is said up front. */
static int check_outputs(const eval_opts *o) {
    const char *outs[] = {o->markdown, o->plot, o->save_ref};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i] && cli_check_output(outs[i])) return 1;
    return 0;
}

/* --------------------------------------------------------------------- the evaluation */

typedef struct {
    const eval_opts *o;
    char *text;
    size_t text_len;
    char *prompt_buf;
    char **prompts;
    int n_prompts;
    elm_ref *ref;
    elm_continuations ref_gen;
    elm_eval_entry base;
    elm_eval_entry models[MAX_MODELS];
} eval_run;

/* Runs the baseline: its log-probs go to --save-ref or to a temporary file that is unlinked as
 * soon as it is mapped. */
static int run_baseline(eval_run *r, const elm_model *base, const int32_t *ids, int64_t n_ids,
                        const elm_ppl_params *pp) {
    if (n_ids < 2 * (int64_t)pp->n_ctx) /* before creating any file */
        return cli_fail("%s: text has %lld tokens; need at least %d (2 x context %d)", r->o->file,
                        (long long)n_ids, 2 * pp->n_ctx, pp->n_ctx);
    char dir[1024] = "", path[1100];
    if (r->o->save_ref) {
        snprintf(path, sizeof path, "%s", r->o->save_ref);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/edgelm-eval-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) return cli_fail("%s: cannot create a temporary folder", dir);
        snprintf(path, sizeof path, "%s/reference.elmref", dir);
    }
    elm_error err;
    elm_error_clear(&err);
    elm_ppl_result ppl;
    progress pr = {file_name(r->o->ref)};
    elm_status st = elm_eval_reference(base, ids, n_ids, pp, disk_bytes(r->o->ref, base), path,
                                       on_chunk, &pr, &ppl, &err);
    if (!st) st = elm_ref_open(path, &r->ref, &err);
    if (dir[0]) {
        unlink(path);
        rmdir(dir);
    }
    return st ? cli_fail("%s", err.msg) : 0;
}

static int run_continuations(const eval_run *r, const elm_model *m, const char *name,
                             elm_continuations *out) {
    elm_error err;
    elm_error_clear(&err);
    fprintf(stderr, "eval: %s: %d greedy continuations of up to %ld tokens\n", name, r->n_prompts,
            r->o->n_predict);
    if (elm_eval_continuations(m, (const char *const *)r->prompts, r->n_prompts, (int32_t)r->o->n_predict,
                               (int32_t)r->o->n_threads, out, &err))
        return cli_fail("%s: %s", m->path, err.msg);
    return 0;
}

static int tokenize_text(const eval_run *r, const elm_model *m, int32_t **ids, int64_t *n) {
    elm_error err;
    elm_error_clear(&err);
    if (elm_ppl_tokenize(m, r->text, r->text_len, ids, n, &err)) return cli_fail("%s: %s", r->o->file, err.msg);
    return 0;
}

/* The reference (live or cached) and the baseline's own entry and continuations. */
static int prepare_baseline(eval_run *r, const elm_ppl_params *pp) {
    const eval_opts *o = r->o;
    elm_model *base = o->ref ? cli_load_model_to_run(o->ref, o->tokenizer, o->mmap) : NULL;
    if (o->ref && !base) return 1;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    elm_error err;
    elm_error_clear(&err);
    int rc = base ? tokenize_text(r, base, &ids, &n_ids) : 0;
    if (!rc && o->ref_logits) {
        if (elm_ref_open(o->ref_logits, &r->ref, &err)) rc = cli_fail("%s", err.msg);
        else if (base && elm_ref_check(r->ref, base->hp.n_vocab, pp->n_ctx, ids, n_ids, &err))
            rc = cli_fail("%s", err.msg); /* without --ref, each model's pass checks the file */
    } else if (!rc) {
        rc = run_baseline(r, base, ids, n_ids, pp);
    }
    if (!rc) {
        const elm_ref_info *in = &r->ref->info;
        elm_eval_entry *e = &r->base;
        e->name = base ? file_name(o->ref) : in->model_name;
        e->path = base ? o->ref : in->model_name;
        e->size_mib = mib(base ? disk_bytes(o->ref, base) : in->model_bytes);
        e->ppl = (elm_ppl_result){.ppl = in->ppl, .ppl_stderr = in->ppl_stderr, .mean_nll = in->mean_nll,
                                  .n_ctx = in->n_ctx, .chunks = in->n_chunks,
                                  .n_tokens = in->n_text_tokens, .scored_tokens = in->n_scored};
        e->kld = (elm_kld_stats){.n = in->n_scored, .top1_pct = 100, .top5_overlap_pct = 100};
    }
    if (!rc && r->n_prompts > 0) {
        rc = run_continuations(r, base, r->base.name, &r->ref_gen);
        if (!rc && elm_gen_quality_of(&r->ref_gen, &r->ref_gen, &r->base.gen, &err)) rc = cli_fail("%s", err.msg);
        r->base.has_gen = !rc;
    }
    free(ids);
    elm_model_free(base);
    return rc;
}

static int evaluate_model(eval_run *r, int k, const elm_ppl_params *pp) {
    const char *path = r->o->models[k];
    elm_eval_entry *e = &r->models[k];
    e->name = file_name(path);
    e->path = path;
    elm_model *m = cli_load_model_to_run(path, r->o->tokenizer, r->o->mmap);
    if (!m) return 1;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    elm_error err;
    elm_error_clear(&err);
    int rc = tokenize_text(r, m, &ids, &n_ids);
    progress pr = {e->name};
    if (!rc && elm_eval_compare(m, r->ref, ids, n_ids, pp, on_chunk, &pr, &e->ppl, &e->kld, &err))
        rc = cli_fail("%s", err.msg);
    e->size_mib = mib(disk_bytes(path, m));
    if (!rc && r->n_prompts > 0) {
        elm_continuations gen;
        rc = run_continuations(r, m, e->name, &gen);
        if (!rc && elm_gen_quality_of(&r->ref_gen, &gen, &e->gen, &err)) rc = cli_fail("%s", err.msg);
        e->has_gen = !rc;
        elm_continuations_free(&gen);
    }
    free(ids);
    elm_model_free(m);
    return rc;
}

static int emit(const eval_run *r) {
    const eval_opts *o = r->o;
    const elm_ref_info *in = &r->ref->info;
    const elm_eval_report rep = {
        .text_path = o->file, .n_ctx = in->n_ctx, .chunks = in->n_chunks, .scored_tokens = in->n_scored,
        .n_prompts = r->n_prompts, .n_predict = r->n_prompts ? (int32_t)o->n_predict : 0,
        .baseline = r->base, .n_models = o->n_models, .models = r->models,
    };
    char *doc = o->json ? elm_report_json(&rep) : elm_report_text(&rep);
    if (!doc) return cli_fail("out of memory writing the report");
    fputs(doc, stdout);
    if (o->json) fputc('\n', stdout);
    free(doc);
    int rc = 0;
    if (o->markdown) {
        if (!(doc = elm_report_markdown(&rep))) return cli_fail("out of memory writing the report");
        rc = write_atomic(o->markdown, doc);
        free(doc);
    }
    if (!rc && o->plot) {
        if (!(doc = elm_report_svg(&rep, o->plot_y))) return cli_fail("out of memory writing the plot");
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
    if (o->n_ctx < 4) return cli_fail("-c: context size %ld too small (need at least 4)", o->n_ctx);
    /* a missing file is reported before the baseline pass, not after it */
    for (int k = 0; k < o->n_models; k++)
        if (access(o->models[k], R_OK) != 0) return cli_fail("%s: %s", o->models[k], strerror(errno));
    return 0;
}

/* Reads the inputs, runs the baseline and every model, prints and writes the reports. */
static int run_eval(eval_run *r) {
    const eval_opts *o = r->o;
    if (!(r->text = cli_read_text(o->file, &r->text_len))) return 1;
    if (o->prompts) {
        size_t len;
        if (!(r->prompt_buf = cli_read_text(o->prompts, &len))) return 1;
        if (!(r->prompts = malloc(sizeof(char *) * (len / 2 + 1)))) return cli_fail("out of memory");
        if ((r->n_prompts = split_lines(r->prompt_buf, r->prompts, (int)(len / 2 + 1))) == 0)
            return cli_fail("%s: no prompts (one per line)", o->prompts);
    }
    const elm_ppl_params pp = {.n_ctx = (int32_t)o->n_ctx, .n_batch = (int32_t)o->n_batch,
                               .n_threads = (int32_t)o->n_threads};
    /* a broken model file, or one whose vocabulary is not the baseline's, is reported before the
     * baseline's minutes of work: mapping a GGUF file validates its header and tensor table
     * without reading the weights */
    elm_model *ref = o->ref ? cli_load_model(o->ref, o->tokenizer) : NULL;
    if (o->ref && !ref) return 1;
    int32_t ref_vocab = ref ? ref->hp.n_vocab : 0;
    if (!ref) {
        elm_ref *cache;
        elm_error err;
        if (elm_ref_open(o->ref_logits, &cache, &err)) return cli_fail("%s", err.msg);
        ref_vocab = cache->info.n_vocab;
        elm_ref_close(cache);
    }
    int rc = 0;
    for (int k = 0; k < o->n_models && !rc; k++) {
        elm_model *m = cli_load_model(o->models[k], o->tokenizer);
        if (!m) rc = 1;
        else if (m->hp.n_vocab != ref_vocab || (ref && !same_pieces(&m->vocab, &ref->vocab)))
            rc = cli_fail("%s: vocabulary (%d tokens) differs from the reference %s's (%d tokens)",
                          o->models[k], m->hp.n_vocab, ref ? o->ref : o->ref_logits, ref_vocab);
        elm_model_free(m);
    }
    elm_model_free(ref);
    if (!rc) rc = check_outputs(o);
    if (!rc) rc = prepare_baseline(r, &pp);
    for (int k = 0; k < o->n_models && !rc; k++) rc = evaluate_model(r, k, &pp);
    return rc ? rc : emit(r);
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
        CLI_OPT_TOKENIZER(&o.tokenizer),
        {"--mmap", NULL, CLI_FLAG, &o.mmap, 0, 0, "map GGUF files instead of reading them into memory", 0},
        {0}};
    const cli_spec spec = {
        "eval", "-m QUANT [-m QUANT2 ...] (--ref BASELINE | --ref-logits FILE) -f TEXT [options]",
        "Compares each quantized model with the baseline on the chunks `perplexity` scores and on\n"
        "greedy continuations of prompts; prints a table with verdicts (PPL change < 5%: excellent,\n"
        "similarity > 90%: acceptable).",
        CLI_TABLES(opts), NULL, NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (check_opts(&o)) return 1;

    eval_run *r = calloc(1, sizeof *r); /* per-model entries: kept off the stack */
    if (!r) return cli_fail("out of memory");
    r->o = &o;
    int rc = run_eval(r);
    elm_continuations_free(&r->ref_gen);
    elm_ref_close(r->ref);
    free(r->prompts);
    free(r->prompt_buf);
    free(r->text);
    free(r);
    return rc;
}
