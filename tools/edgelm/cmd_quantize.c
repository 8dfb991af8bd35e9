/* edgelm quantize: load any model, write a GGUF quantized by round-to-nearest, GPTQ or AWQ under
 * the mixed-precision policy (or --pure), with a progress bar (step i/N, elapsed, ETA) and fallback
 * warnings on stderr and a closing summary on stdout (or --json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/quant.h"
#include "opts.h"

typedef struct bar {
    bool tty;
    double t0_ms;
} bar;

static int on_progress(int32_t done, int32_t total, const char *what, void *user) {
    const bar *b = user;
    const double el = (elm_now_ms() - b->t0_ms) / 1000.0;
    const double eta = done > 0 ? el / done * (total - done) : 0;
    if (b->tty) {
        int width = 30, fill = total ? (int)((int64_t)done * width / total) : width;
        fprintf(stderr, "\r[%.*s%*s] %d/%d %-24.24s %6.1fs ETA %6.1fs", fill,
                "==============================", width - fill, "", done, total, what, el, eta);
        if (done == total) fputc('\n', stderr);
    } else {
        fprintf(stderr, "[%d/%d] %s  %.1fs elapsed, ETA %.1fs\n", done, total, what, el, eta);
    }
    return 0;
}

static void on_warn(const char *msg, void *user) {
    const bar *b = user;
    /* on a terminal, clear the progress bar's line first */
    fprintf(stderr, "%sedgelm: warning: %s\n", b->tty ? "\r\033[K" : "", msg);
}

static void on_note(const char *msg, void *user) {
    const bar *b = user;
    fprintf(stderr, "%sedgelm: %s\n", b->tty ? "\r\033[K" : "", msg);
}

/* A type a tensor can be written in (--type takes the k-quant names as recipes first). */
static bool parse_type(const char *name, elm_type *out) {
    return elm_type_from_name(name, out) && elm_type_writable(*out);
}

static int print_json(const elm_quant_params *p, const elm_quant_report *r) {
    const elm_quantize_summary *s = &r->summary;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "method", elm_quant_method_name(p->method));
    cJSON_AddStringToObject(o, "type", elm_type_get(p->policy.type)->name);
    cJSON_AddBoolToObject(o, "pure", p->policy.pure);
    cJSON_AddNumberToObject(o, "bits_per_weight", s->bits_per_weight);
    cJSON_AddNumberToObject(o, "file_bytes", (double)s->file_bytes);
    cJSON_AddNumberToObject(o, "tensor_bytes", (double)s->bytes_out);
    cJSON_AddNumberToObject(o, "compression", s->ratio);
    cJSON_AddNumberToObject(o, "seconds", s->seconds);
    cJSON_AddNumberToObject(o, "peak_rss_mib", (double)s->peak_rss / 1048576.0);
    cJSON_AddNumberToObject(o, "peak_anon_mib", (double)s->peak_anon / 1048576.0);
    cJSON_AddNumberToObject(o, "n_fallback", s->n_fallback);
    if (p->target_bytes || p->target_bpw > 0) {
        cJSON_AddNumberToObject(o, "target_bytes", (double)p->target_bytes);
        cJSON_AddNumberToObject(o, "target_bpw", p->target_bpw);
    }
    if (p->calib) {
        cJSON_AddNumberToObject(o, "calib_samples", p->calib->n);
        cJSON_AddNumberToObject(o, "calib_tokens", (double)p->calib->n_tokens);
    }
    if (p->method == ELM_QUANT_GPTQ) cJSON_AddNumberToObject(o, "damp_raised", r->n_damp_raised);
    cJSON *arr = cJSON_AddArrayToObject(o, "tensors");
    for (int32_t i = 0; i < r->n_tensors; i++) {
        const elm_quant_tensor_info *t = &r->tensors[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", t->name);
        cJSON_AddStringToObject(e, "type", elm_type_get(t->type)->name);
        cJSON_AddStringToObject(e, "reason", t->reason);
        if (t->err_before >= 0) {
            cJSON_AddNumberToObject(e, "out_err_before", t->err_before);
            cJSON_AddNumberToObject(e, "out_err_after", t->err_after);
        }
        if (t->predicted_cost >= 0) cJSON_AddNumberToObject(e, "predicted_cost", t->predicted_cost);
        if (t->damp > 0) {
            cJSON_AddNumberToObject(e, "damp", t->damp);
            cJSON_AddNumberToObject(e, "dead_inputs", (double)t->dead_inputs);
        }
        cJSON_AddItemToArray(arr, e);
    }
    if (p->method != ELM_QUANT_RTN) {
        cJSON *fb = cJSON_AddArrayToObject(o, "expert_fallback");
        for (int32_t i = 0; i < r->n_expert_fallback; i++) {
            const elm_quant_expert_fallback *f = &r->expert_fallback[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", f->name);
            cJSON_AddNumberToObject(e, "expert", f->expert);
            cJSON_AddNumberToObject(e, "tokens", (double)f->tokens);
            cJSON_AddNumberToObject(e, "needed", (double)f->needed);
            cJSON_AddItemToArray(fb, e);
        }
    }
    return cli_print_json(o, "quantize");
}

#define MAX_OVERRIDES 64
#define MAX_CANDIDATES 16

typedef struct quant_opts {
    const char *in, *out, *type_name, *tok, *method_name, *calib_path, *sensitive_name;
    const char *imatrix_path;
    long calib_samples, seq_len, threads, target_size;
    double damp, target_bpw;
    elm_type cand[MAX_CANDIDATES];
    int n_cand;
    bool act_order, pure, json, resume;
    elm_type_override ov[MAX_OVERRIDES];
    int n_ov;
} quant_opts;

/* --tensor-type PATTERN=TYPE, repeatable. */
static bool add_override(const char *opt, const char *v, void *dst) {
    (void)opt;
    quant_opts *o = dst;
    char *eq = strrchr(v, '=');
    if (!eq || eq == v) return !cli_fail("--tensor-type '%s': expected PATTERN=TYPE", v);
    if (o->n_ov == MAX_OVERRIDES) return !cli_fail("--tensor-type: at most %d", MAX_OVERRIDES);
    if (!parse_type(eq + 1, &o->ov[o->n_ov].type))
        return !cli_fail("--tensor-type '%s': unknown type '%s'", v, eq + 1);
    *eq = '\0'; /* the pattern is the argument up to '=' */
    o->ov[o->n_ov++].pattern = v;
    return true;
}

/* --candidates a,b,c: the size budget's menu. */
static bool set_candidates(const char *opt, const char *v, void *dst) {
    (void)opt;
    quant_opts *o = dst;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_cand = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_cand == MAX_CANDIDATES)
            return !cli_fail("--candidates: at most %d types", MAX_CANDIDATES);
        if (!parse_type(tok, &o->cand[o->n_cand]))
            return !cli_fail("--candidates '%s': unknown type '%s' (use: %s)", v, tok,
                             elm_type_names(true));
        o->n_cand++;
    }
    return o->n_cand ? true : !cli_fail("--candidates: no type given");
}

static int parse(quant_opts *o, int argc, char **argv) {
    char lists[768];
    snprintf(lists, sizeof lists, "types:   %s\nrecipes: %s", elm_type_names(true),
             elm_quant_recipe_names());
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o->in),
        {"-o, --output", "OUT", CLI_TEXT, &o->out, 0, 0, "output GGUF file (written atomically)", 0},
        {"--type", "TYPE", CLI_TEXT, &o->type_name, 0, 0, "a tensor type or a llama-quantize recipe (both listed below)", 0},
        {"--method", "M", CLI_TEXT, &o->method_name, 0, 0, "rtn (round to nearest, default), gptq (Hessian error\nfeedback) or awq (activation-aware scales and clipping)", 0},
        {"--calib", "FILE", CLI_TEXT, &o->calib_path, 0, 0, "calibration text for gptq/awq: JSONL from 'edgelm calib'\n(\"text\" field) or plain text, one sample per line", 0},
        {"--calib-samples", "N", CLI_INT, &o->calib_samples, 1, 1L << 24, "use the first N samples (default: all)", 0},
        {"--seq-len", "N", CLI_INT, &o->seq_len, 2, 1L << 20, "tokens per calibration sample, longer cut (default 512)", 0},
        {"--imatrix", "FILE", CLI_TEXT, &o->imatrix_path, 0, 0, "importance matrix (llama-imatrix / 'edgelm imatrix'\nGGUF): rtn weighted by it, as llama-quantize --imatrix", 0},
        {"--damp", "F", CLI_DOUBLE, &o->damp, 1e-6, 100, "gptq damping, fraction of mean diag(H) (default 0.01)", 0},
        {"--act-order", NULL, CLI_FLAG, &o->act_order, 0, 0, "gptq: columns by descending diag(H), static block scales", 0},
        {"--pure", NULL, CLI_FLAG, &o->pure, 0, 0, "every matrix at TYPE (no sensitive-tensor rule)", 0},
        {"--keep-sensitive", "TYPE", CLI_TEXT, &o->sensitive_name, 0, 0, "type of token embedding and output (default q8_0; f16)", 0},
        {"--tensor-type", "PAT=TYPE", CLI_CALL, o, 0, 0, "type for tensors matching the glob PAT, e.g.\n'blk.*.ffn_down=q8_0' (repeatable; the last match wins)", add_override},
        {"--target-size", "BYTES", CLI_INT, &o->target_size, 1, 9.2e18, "size budget: choose each matrix's type from its measured\nsensitivity (needs --calib) so that the tensor data (the sum\nof the tensors' bytes; not the GGUF header and metadata)\nare at most BYTES", 0},
        {"--target-bpw", "X", CLI_DOUBLE, &o->target_bpw, 1e-3, 1e3, "size budget as bits per weight: tensor data at most\nX * weights / 8 bytes (X <= 16)", 0},
        {"--candidates", "T,T,...", CLI_CALL, o, 0, 0, "the budget's types (default q2_k,q3_k,q4_k,q5_k,q6_k,\nq8_0,q4_0,q4_1,q5_0,q5_1,iq4_nl,iq4_xs; with --imatrix\nalso iq2_xs,iq3_s); a matrix takes those its rows fit", set_candidates},
        {"-t, --threads", "N", CLI_INT, &o->threads, 1, 512, "threads for the calibration passes, GPTQ's linear\nalgebra and RTN's rows (default: all cores)", 0},
        {"--resume", NULL, CLI_FLAG, &o->resume, 0, 0, "gptq/awq: continue an interrupted run from its checkpoint\nOUT.ckpt (written after each block, deleted on success)", 0},
        CLI_OPT_JSON(&o->json, "print one JSON object: method, type, bits_per_weight,\nfile_bytes, seconds, peak_rss_mib, peak_anon_mib, and per\ntensor type, reason, error"),
        CLI_OPT_TOKENIZER(&o->tok),
        {0}};
    const cli_spec spec = {
        "quantize", "-m MODEL -o OUT.gguf --type TYPE | --target-size BYTES | --target-bpw X [--method rtn|gptq|awq] [--calib FILE] [options]",
        "Writes MODEL as GGUF in ggml's standard block types. Default policy: token embedding\n"
        "and output projection at q8_0, norms f32, every other matrix at TYPE; matrices whose\n"
        "rows are not a multiple of 32 fall back to f16. --pure puts every matrix at TYPE (with\n"
        "--method rtn: the bytes llama-quantize --pure writes). A k-quant or i-quant name\n"
        "without --pure is llama-quantize's recipe of that name: each tensor's type by its\n"
        "rules (q4_k_m: the file llama-quantize Q4_K_M writes). With --target-size or\n"
        "--target-bpw, the token embedding, output and block matrices take the candidate\n"
        "types whose predicted output error on --calib is least within the budget (the\n"
        "other tensors keep TYPE's policy, q8_0 by default).",
        CLI_TABLES(opts), lists, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    const bool budget = o->target_size || o->target_bpw > 0;
    if (!o->in || !o->out || (!o->type_name && !budget))
        return cli_fail("quantize: -m MODEL, -o OUT and --type TYPE (or a size budget, "
                        "--target-size / --target-bpw) are required (try --help)");
    if (o->target_size && o->target_bpw > 0)
        return cli_fail("quantize: give --target-size or --target-bpw, not both");
    if (budget && !o->calib_path)
        return cli_fail("quantize: a size budget measures each tensor on calibration text: "
                        "give --calib FILE");
    if (o->n_cand && !budget)
        return cli_fail("quantize: --candidates is the menu of a size budget (--target-size or "
                        "--target-bpw)");
    if (!o->type_name) o->type_name = "q8_0";
    return 0;
}

/* The library's parameters from the options; prints the problem and returns false. */
static bool params_of(const quant_opts *o, elm_quant_params *p) {
    *p = (elm_quant_params){.damp = o->damp, .act_order = o->act_order,
                            .n_threads = (int32_t)o->threads,
                            .target_bytes = (uint64_t)o->target_size, .target_bpw = o->target_bpw,
                            .candidates = o->n_cand ? o->cand : NULL, .n_candidates = o->n_cand};
    if (!elm_quant_recipe_from_name(o->type_name, &p->policy.recipe, &p->policy.type) &&
        !parse_type(o->type_name, &p->policy.type))
        return !cli_fail("quantize: unknown --type '%s' (use a type: %s; or a recipe: %s)",
                         o->type_name, elm_type_names(true), elm_quant_recipe_names());
    if (o->pure && o->sensitive_name)
        return !cli_fail("quantize: --keep-sensitive has no effect with --pure (every matrix is at "
                         "TYPE)");
    if (!parse_type(o->sensitive_name ? o->sensitive_name : "q8_0", &p->policy.sensitive_type))
        return !cli_fail("quantize: unknown --keep-sensitive type '%s'", o->sensitive_name);
    if (!elm_quant_method_from_name(o->method_name, &p->method))
        return !cli_fail("quantize: unknown --method '%s' (use rtn, gptq or awq)", o->method_name);
    if (p->method != ELM_QUANT_RTN && !o->calib_path)
        return !cli_fail("quantize: --method %s needs calibration text (--calib FILE)",
                         o->method_name);
    if (o->imatrix_path && p->method != ELM_QUANT_RTN)
        return !cli_fail("quantize: --imatrix is used by --method rtn only");
    p->policy.pure = o->pure;
    p->policy.overrides = o->ov;
    p->policy.n_overrides = o->n_ov;
    return true;
}

/* The closing line on stdout, after a line for each expert GPTQ or AWQ rounded for want of
 * calibration tokens. */
static void print_summary(const quant_opts *o, const elm_quant_params *p,
                          const elm_quant_report *r) {
    const elm_quantize_summary *s = &r->summary;
    for (int32_t i = 0; i < r->n_tensors; i++)
        if (r->tensors[i].predicted_cost >= 0)
            printf("%-32s %-7s predicted cost %.6g\n", r->tensors[i].name,
                   elm_type_get(r->tensors[i].type)->name, r->tensors[i].predicted_cost);
    for (int32_t i = 0; i < r->n_expert_fallback; i++) {
        const elm_quant_expert_fallback *f = &r->expert_fallback[i];
        printf("%s expert %d: %lld calibration tokens (fewer than %lld): importance-weighted "
               "rounding, not %s\n", f->name, f->expert, (long long)f->tokens,
               (long long)f->needed, o->method_name);
    }
    const bool budget = p->target_bytes || p->target_bpw > 0;
    printf("%s: %s %s%s%s, %d tensors (%d fell back to f16): %.2f bits/weight, %.2f MiB -> "
           "%.2f MiB (%.2fx smaller), tensor data %llu bytes, file %llu bytes, %.2f s, peak RSS "
           "%.1f MiB (anonymous %.1f MiB)\n",
           o->out, o->method_name, budget ? "under a size budget, the other matrices " : "",
           p->policy.recipe && !o->pure ? o->type_name : elm_type_get(p->policy.type)->name,
           o->pure ? " --pure" : "",
           s->n_tensors, s->n_fallback, s->bits_per_weight, s->bytes_in / 1048576.0,
           s->bytes_out / 1048576.0, s->ratio, (unsigned long long)s->bytes_out,
           (unsigned long long)s->file_bytes, s->seconds,
           (double)s->peak_rss / 1048576.0, (double)s->peak_anon / 1048576.0);
}

int cmd_quantize(int argc, char **argv) {
    quant_opts o = {.method_name = "rtn", .seq_len = 512,
                    .threads = elm_online_cores(), .damp = 0.01};
    const int pr = parse(&o, argc, argv);
    if (pr) return cli_parse_exit(pr);
    elm_quant_params p;
    if (!params_of(&o, &p)) return 1;
    int rc = 1;
    elm_calib_set calib = {0};
    elm_imatrix imatrix = {0};
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = cli_load_model(o.in, o.tok);
    if (!m) goto done;
    if (o.imatrix_path) {
        if (elm_imatrix_load(o.imatrix_path, &imatrix, &err)) {
            cli_fail("%s", err.msg);
            goto done;
        }
        p.imatrix = &imatrix;
        p.imatrix_path = o.imatrix_path;
    }
    bar b = {.tty = isatty(STDERR_FILENO), .t0_ms = elm_now_ms()};
    if (p.method != ELM_QUANT_RTN || p.target_bytes || p.target_bpw > 0) {
        if (elm_calib_load(&m->vocab, o.calib_path, (int32_t)o.seq_len, (int32_t)o.calib_samples,
                           &calib, &err)) {
            cli_fail("%s", err.msg);
            goto done;
        }
        p.calib = &calib;
        /* (a size budget's alone is in --json, so that a refused budget gets one line) */
        if (p.method != ELM_QUANT_RTN)
            fprintf(stderr, "edgelm: %s calibration: %d samples, %lld tokens from %s\n",
                    o.method_name, calib.n, (long long)calib.n_tokens, o.calib_path);
    } else if (o.calib_path) {
        fprintf(stderr, "edgelm: warning: --calib is only used by gptq, awq and a size budget\n");
    }
    char ckpt[1100];
    if (p.method != ELM_QUANT_RTN) {
        snprintf(ckpt, sizeof ckpt, "%s.ckpt", o.out);
        p.checkpoint = ckpt;
        p.resume = o.resume;
    } else if (o.resume) {
        fprintf(stderr, "edgelm: warning: --resume is only used by gptq and awq\n");
    }
    elm_quantize_callbacks cb = {.progress = on_progress, .warn = on_warn, .note = on_note,
                                 .user = &b};
    elm_quant_report r;
    if (elm_quantize(m, &p, o.out, &cb, &r, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    if (o.json) {
        rc = print_json(&p, &r);
    } else {
        print_summary(&o, &p, &r);
        rc = 0;
    }
    elm_quant_report_free(&r);
done:
    elm_imatrix_free(&imatrix);
    elm_calib_free(&calib);
    elm_model_free(m);
    return rc;
}
