/* edgelm quantize: load any model, write a GGUF quantized by round-to-nearest, GPTQ or AWQ under
 * the mixed-precision policy (or --pure), with a progress bar (step i/N, elapsed, ETA) and fallback
 * warnings on stderr and a closing summary on stdout (or --json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/quant.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: edgelm quantize -m MODEL -o OUT.gguf --type TYPE [--method rtn|gptq|awq]\n"
            "                       [--calib FILE] [options]\n\n"
            "Writes MODEL as GGUF in ggml's standard block types. Default policy: token embedding\n"
            "and output projection at q8_0, norms f32, every other matrix at TYPE; matrices whose\n"
            "rows are not a multiple of 32 fall back to f16. --pure puts every matrix at TYPE (with\n"
            "--method rtn: the bytes llama-quantize --pure writes). A k-quant or i-quant name\n"
            "without --pure is llama-quantize's recipe of that name: each tensor's type by its\n"
            "rules (q4_k_m: the file llama-quantize Q4_K_M writes).\n\n"
            "  -m, --model MODEL        input: GGUF, Hugging Face folder or llama2.c model.bin\n"
            "  -o, --output OUT         output GGUF file (written atomically)\n"
            "  --type TYPE              q8_0, q6_k, q5_k, q5_0, q5_1, q4_k, q4_0, q4_1, iq4_xs,\n"
            "                           iq4_nl, q3_k, q2_k, f16, bf16 or f32; or a recipe:\n"
            "                           q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s,\n"
            "                           q5_k_m, q6_k\n"
            "  --imatrix FILE           importance matrix (llama-imatrix / 'edgelm imatrix'\n"
            "                           GGUF): rtn weighted by it, as llama-quantize --imatrix\n"
            "  --method M               rtn (round to nearest, default), gptq (Hessian error\n"
            "                           feedback) or awq (activation-aware scales and clipping)\n"
            "  --calib FILE             calibration text for gptq/awq: JSONL from 'edgelm calib'\n"
            "                           (\"text\" field) or plain text, one sample per line\n"
            "  --calib-samples N        use the first N samples (default: all)\n"
            "  --seq-len N              tokens per calibration sample, longer cut (default 512)\n"
            "  --damp F                 gptq damping, fraction of mean diag(H) (default 0.01)\n"
            "  --act-order              gptq: columns by descending diag(H), static block scales\n"
            "  --pure                   every matrix at TYPE (no sensitive-tensor rule)\n"
            "  --keep-sensitive TYPE    type of token embedding and output (default q8_0; f16)\n"
            "  --tensor-type PAT=TYPE   type for tensors matching the glob PAT, e.g.\n"
            "                           'blk.*.ffn_down=q8_0' (repeatable; the last match wins)\n"
            "  -t, --threads N          threads for the calibration passes and GPTQ's linear\n"
            "                           algebra (default: all cores)\n"
            "  --json                   print one JSON object: method, type, bits_per_weight,\n"
            "                           file_bytes, seconds, peak_rss_mib, peak_anon_mib, and per\n"
            "                           tensor type, reason, error\n"
            "  --tokenizer PATH         llama2.c tokenizer.bin when not beside the model\n"
            "  -h, --help               this help\n");
}

typedef struct bar {
    bool tty;
    double t0_ms;
} bar;

static void on_progress(int32_t done, int32_t total, const char *what, void *user) {
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
}

static void on_warn(const char *msg, void *user) {
    const bar *b = user;
    /* on a terminal, clear the progress bar's line first */
    fprintf(stderr, "%sedgelm: warning: %s\n", b->tty ? "\r\033[K" : "", msg);
}

static const char *const allowed[] = {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "f16", "bf16", "f32"};

static bool parse_type(const char *name, elm_type *out) {
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (!strcasecmp(name, allowed[i])) return elm_type_from_name(name, out);
    return false;
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
    if (p->method != ELM_QUANT_RTN) {
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
        if (t->damp > 0) {
            cJSON_AddNumberToObject(e, "damp", t->damp);
            cJSON_AddNumberToObject(e, "dead_inputs", (double)t->dead_inputs);
        }
        cJSON_AddItemToArray(arr, e);
    }
    return cli_print_json(o, "quantize");
}

#define MAX_OVERRIDES 64

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type_name = NULL, *tok = NULL, *method_name = "rtn";
    const char *calib_path = NULL, *sensitive_name = "q8_0", *imatrix_path = NULL;
    long calib_samples = 0, seq_len = 512, threads = elm_online_cores();
    double damp = 0.01;
    bool act_order = false, pure = false, json = false;
    elm_type_override ov[MAX_OVERRIDES];
    int n_ov = 0, rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            CLI_STR(in);
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            CLI_STR(out);
        } else if (!strcmp(a, "--type")) {
            CLI_STR(type_name);
        } else if (!strcmp(a, "--method")) {
            CLI_STR(method_name);
        } else if (!strcmp(a, "--calib")) {
            CLI_STR(calib_path);
        } else if (!strcmp(a, "--imatrix")) {
            CLI_STR(imatrix_path);
        } else if (!strcmp(a, "--calib-samples")) {
            CLI_LONG(1, 1L << 24, calib_samples);
        } else if (!strcmp(a, "--seq-len")) {
            CLI_LONG(2, 1L << 20, seq_len);
        } else if (!strcmp(a, "--damp")) {
            const char *v;
            CLI_STR(v);
            if (!cli_parse_float(v, 1e-6, 100, &damp))
                return cli_fail("--damp: invalid value '%s' (expected a number in 1e-06..100)", v);
        } else if (!strcmp(a, "--act-order")) {
            act_order = true;
        } else if (!strcmp(a, "--pure")) {
            pure = true;
        } else if (!strcmp(a, "--keep-sensitive")) {
            CLI_STR(sensitive_name);
        } else if (!strcmp(a, "--tensor-type")) {
            if (!cli_value(argc, argv, &i)) return 1;
            char *v = argv[i], *eq = strrchr(v, '=');
            if (!eq || eq == v)
                return cli_fail("--tensor-type '%s': expected PATTERN=TYPE", v);
            if (n_ov == MAX_OVERRIDES) return cli_fail("--tensor-type: at most %d", MAX_OVERRIDES);
            if (!parse_type(eq + 1, &ov[n_ov].type))
                return cli_fail("--tensor-type '%s': unknown type '%s'", v, eq + 1);
            *eq = '\0'; /* the pattern is the argument up to '=' */
            ov[n_ov++].pattern = v;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            CLI_LONG(1, 512, threads);
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--tokenizer")) {
            CLI_STR(tok);
        } else {
            return cli_fail("quantize: unknown option '%s' (try 'edgelm quantize --help')", a);
        }
    }
    elm_model *m = NULL;
    elm_calib_set calib = {0};
    elm_imatrix imatrix = {0};
    elm_quant_params p = {.damp = damp, .act_order = act_order, .n_threads = (int32_t)threads};
    if (!in || !out || !type_name) {
        cli_fail("quantize: -m MODEL, -o OUT and --type TYPE are required (try --help)");
        goto done;
    }
    if (!elm_quant_recipe_from_name(type_name, &p.policy.recipe, &p.policy.type) &&
        !parse_type(type_name, &p.policy.type)) {
        cli_fail("quantize: unknown --type '%s' (use a type: q8_0, q6_k, q5_k, q5_0, q5_1, q4_k, "
                 "q4_0, q4_1, iq4_xs, iq4_nl, q3_k, q2_k, f16, bf16, f32; or a recipe: q2_k, "
                 "q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k)", type_name);
        goto done;
    }
    if (!parse_type(sensitive_name, &p.policy.sensitive_type)) {
        cli_fail("quantize: unknown --keep-sensitive type '%s'", sensitive_name);
        goto done;
    }
    if (!elm_quant_method_from_name(method_name, &p.method)) {
        cli_fail("quantize: unknown --method '%s' (use rtn, gptq or awq)", method_name);
        goto done;
    }
    if (p.method != ELM_QUANT_RTN && !calib_path) {
        cli_fail("quantize: --method %s needs calibration text (--calib FILE)", method_name);
        goto done;
    }
    p.policy.pure = pure;
    p.policy.overrides = ov;
    p.policy.n_overrides = n_ov;

    if (!(m = cli_load_model(in, tok))) goto done;
    elm_error err;
    elm_error_clear(&err);
    if (imatrix_path) {
        if (p.method != ELM_QUANT_RTN) {
            cli_fail("quantize: --imatrix is used by --method rtn only");
            goto done;
        }
        if (elm_imatrix_load(imatrix_path, &imatrix, &err)) {
            cli_fail("%s", err.msg);
            goto done;
        }
        p.imatrix = &imatrix;
        p.imatrix_path = imatrix_path;
    }
    bar b = {.tty = isatty(STDERR_FILENO), .t0_ms = elm_now_ms()};
    if (p.method != ELM_QUANT_RTN) {
        if (elm_calib_load(&m->vocab, calib_path, (int32_t)seq_len, (int32_t)calib_samples, &calib,
                           &err)) {
            cli_fail("%s", err.msg);
            goto done;
        }
        p.calib = &calib;
        fprintf(stderr, "edgelm: %s calibration: %d samples, %lld tokens from %s\n", method_name,
                calib.n, (long long)calib.n_tokens, calib_path);
    } else if (calib_path) {
        fprintf(stderr, "edgelm: warning: --calib is only used by gptq and awq\n");
    }
    elm_quantize_callbacks cb = {.progress = on_progress, .warn = on_warn, .user = &b};
    elm_quant_report r;
    if (elm_quantize(m, &p, out, &cb, &r, &err)) {
        cli_fail("%s", err.msg);
        goto done;
    }
    const elm_quantize_summary *s = &r.summary;
    if (json) {
        rc = print_json(&p, &r);
    } else {
        printf("%s: %s %s%s, %d tensors (%d fell back to f16): %.2f bits/weight, %.2f MiB -> "
               "%.2f MiB (%.2fx smaller), file %llu bytes, %.2f s, peak RSS %.1f MiB "
               "(anonymous %.1f MiB)\n",
               out, method_name, elm_type_get(p.policy.type)->name, pure ? " --pure" : "",
               s->n_tensors, s->n_fallback, s->bits_per_weight, s->bytes_in / 1048576.0,
               s->bytes_out / 1048576.0, s->ratio, (unsigned long long)s->file_bytes, s->seconds,
               (double)s->peak_rss / 1048576.0, (double)s->peak_anon / 1048576.0);
        rc = 0;
    }
    elm_quant_report_free(&r);
done:
    elm_imatrix_free(&imatrix);
    elm_calib_free(&calib);
    elm_model_free(m);
    return rc;
}
