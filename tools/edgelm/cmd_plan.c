/* edgelm plan: before downloading or converting anything, how much memory a model needs per weight
 * type and KV-cache type at a context length, and how fast decode can at best go on a device
 * (memory bandwidth / bytes read per token), with a fits / does not fit verdict (edgelm/shapes.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/quant.h"
#include "edgelm/shapes.h"
#include "edgelm/system.h"
#include "opts.h"

/* The device profiles, one line each, for --help. */
static const char *device_lines(void) {
    static char buf[2048];
    int n;
    size_t len = (size_t)snprintf(buf, sizeof buf, "device profiles (GB/s = 10^9 bytes/s, RAM in GiB):\n");
    const elm_device *d = elm_devices(&n);
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "  %-12s %6.1f GB/s %4.0f GiB  %s\n",
                                d[i].name, d[i].bandwidth_gbs, d[i].ram_gib, d[i].desc);
    if (len > 0 && len < sizeof buf) buf[len - 1] = '\0';
    return buf;
}

typedef struct opts {
    const char *model, *config, *preset, *device, *cache, *quantize, *type;
    double bandwidth, ram;
    long n_ctx, n_batch, n_threads, calib_samples, seq_len;
    bool json;
} opts;

/* The model to plan, from whichever source was given; prints the error (NULL). */
static elm_model *source_model(const opts *o) {
    if (o->model) return cli_load_model(o->model, NULL);
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = NULL;
    const elm_synth_preset *p = o->config ? NULL : elm_synth_find(o->preset);
    if (!o->config && !p) {
        cli_fail("plan: unknown preset '%s' (see 'edgelm synth --help')", o->preset);
        return NULL;
    }
    if (o->config ? elm_plan_shape_config(o->config, &m, &err) : elm_plan_shape_preset(p, &m, &err))
        cli_fail("%s", err.msg);
    return m;
}

/* Bandwidth and RAM: the profile's (or measured for "this"), then --bandwidth / --ram. */
static int device_figures(const opts *o, const char **name, double *gbs, double *gib) {
    *name = o->device ? o->device : "custom";
    *gbs = *gib = 0;
    if (o->device && !strcmp(o->device, "this")) {
        elm_error err;
        elm_error_clear(&err);
        if (elm_membw_read((int)o->n_threads, (size_t)512 << 20, 3, gbs, &err))
            return cli_fail("plan: measuring bandwidth: %s", err.msg);
        *gib = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) / 1073741824.0;
    } else if (o->device) {
        const elm_device *d = elm_device_find(o->device);
        if (!d) return cli_fail("plan: unknown device '%s' (see 'edgelm plan --help')", o->device);
        *gbs = d->bandwidth_gbs;
        *gib = d->ram_gib;
    }
    if (o->bandwidth > 0) *gbs = o->bandwidth;
    if (o->ram > 0) *gib = o->ram;
    if (!o->device && !(o->bandwidth > 0) && !(o->ram > 0)) *name = "none";
    return 0;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

static void print_size(uint64_t b) {
    if (b >= (1ull << 30)) printf("%8.2f GiB", (double)b / 1073741824.0);
    else printf("%8.2f MiB", mib(b));
}

static void print_text(const elm_model *m, const elm_plan *p, const char *dev, double gbs,
                       double gib, const char *cache) {
    const elm_hparams *hp = &m->hp;
    printf("model: %s (%s), %.3f B parameters: %d layers, %d heads, %d KV heads of %d, dim %d, "
           "ffn %d, vocab %d%s\n", m->name[0] ? m->name : m->path, hp->arch, p->n_params / 1e9,
           hp->n_layers, hp->n_heads, hp->n_kv_heads, hp->head_dim, hp->dim, hp->ffn_dim,
           hp->n_vocab, elm_model_find(m, "output.weight") ? "" : ", tied output");
    if (hp->n_expert > 0)
        printf("experts: %d a layer, %d per token: %.3f B parameters read a token\n",
               hp->n_expert, hp->n_expert_used, p->n_active_params / 1e9);
    printf("device: %s, %.1f GB/s, %.1f GiB RAM\n", dev, gbs, gib);
    printf("KV cache at %d tokens: f16 %.2f MiB, q8_0 %.2f MiB, int8 (1 byte) %.2f MiB\n",
           p->n_ctx, mib(p->kv_f16), mib(p->kv_q8_0), mib(p->kv_int8));
    printf("compute buffers (batch %d, %d threads): %.2f MiB\n", p->n_batch, p->n_threads,
           mib(p->compute_bytes));
    /* a hybrid's recurrent layers: a fixed state instead of KV rows, counted with the buffers */
    if (p->state_bytes)
        printf("recurrent state (one sequence, with its rollback checkpoints): %.2f MiB\n",
               mib(p->state_bytes));
    printf("\nweights     weights + KV (%-4s) + %s =       peak  decode bound  verdict\n", cache,
           p->state_bytes ? "comp+st" : "compute");
    for (int r = 0; r < ELM_PLAN_ROWS; r++) {
        const elm_plan_row *row = &p->rows[r];
        printf("%-6s ", row->label);
        print_size(row->weight_bytes);
        print_size(p->kv_bytes);
        print_size(p->compute_bytes + p->state_bytes);
        print_size(row->peak_bytes);
        if (gbs > 0) printf("  %7.1f tok/s", row->tokens_per_s);
        else printf("  %13s", "-");
        if (gib > 0)
            printf("  %s (%.2f GiB %s)\n", row->headroom_bytes >= 0 ? "fits" : "does not fit",
                   (double)llabs(row->headroom_bytes) / 1073741824.0,
                   row->headroom_bytes >= 0 ? "free" : "short");
        else
            printf("  -\n");
    }
    if (gbs <= 0 || gib <= 0)
        printf("\n(give --device, or --bandwidth and --ram, for the speed bound and the verdict)\n");
}

static int print_json(const elm_model *m, const elm_plan *p, const char *dev, double gbs,
                      double gib, const char *cache) {
    cJSON *o = cJSON_CreateObject();
    cJSON *jm = cJSON_AddObjectToObject(o, "model");
    cJSON_AddStringToObject(jm, "name", m->name[0] ? m->name : m->path);
    cJSON_AddStringToObject(jm, "architecture", m->hp.arch);
    cJSON_AddNumberToObject(jm, "n_params", (double)p->n_params);
    cJSON_AddNumberToObject(jm, "n_active_params", (double)p->n_active_params);
    cJSON_AddNumberToObject(jm, "n_layers", m->hp.n_layers);
    cJSON_AddNumberToObject(jm, "n_kv_heads", m->hp.n_kv_heads);
    cJSON_AddNumberToObject(jm, "head_dim", m->hp.head_dim);
    cJSON *jd = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(jd, "name", dev);
    cJSON_AddNumberToObject(jd, "bandwidth_gbs", gbs);
    cJSON_AddNumberToObject(jd, "ram_gib", gib);
    cJSON_AddNumberToObject(o, "n_ctx", p->n_ctx);
    cJSON_AddNumberToObject(o, "n_batch", p->n_batch);
    cJSON *kv = cJSON_AddObjectToObject(o, "kv_cache_bytes");
    cJSON_AddNumberToObject(kv, "f16", (double)p->kv_f16);
    cJSON_AddNumberToObject(kv, "q8_0", (double)p->kv_q8_0);
    cJSON_AddNumberToObject(kv, "int8", (double)p->kv_int8);
    cJSON_AddStringToObject(o, "kv_cache_type", cache);
    cJSON_AddNumberToObject(o, "compute_bytes", (double)p->compute_bytes);
    cJSON_AddNumberToObject(o, "state_bytes", (double)p->state_bytes);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int r = 0; r < ELM_PLAN_ROWS; r++) {
        const elm_plan_row *row = &p->rows[r];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "weights", row->label);
        cJSON_AddNumberToObject(j, "weight_bytes", (double)row->weight_bytes);
        cJSON_AddNumberToObject(j, "kv_bytes", (double)p->kv_bytes);
        cJSON_AddNumberToObject(j, "peak_bytes", (double)row->peak_bytes);
        cJSON_AddNumberToObject(j, "read_bytes_per_token", (double)row->read_bytes);
        if (gbs > 0) cJSON_AddNumberToObject(j, "max_tokens_per_s", row->tokens_per_s);
        if (gib > 0) {
            cJSON_AddBoolToObject(j, "fits", row->headroom_bytes >= 0);
            cJSON_AddNumberToObject(j, "headroom_bytes", (double)row->headroom_bytes);
        }
        cJSON_AddItemToArray(rows, j);
    }
    return cli_print_json(o, "plan");
}

/* plan --quantize: the run's memory and time on this machine, from rates measured now. */
static int plan_quantize(const opts *o, const elm_model *m) {
    elm_quant_params p = {.policy = {.sensitive_type = ELM_TYPE_Q8_0},
                          .n_threads = (int32_t)o->n_threads};
    if (!elm_quant_method_from_name(o->quantize, &p.method) || p.method == ELM_QUANT_RTN)
        return cli_fail("plan: --quantize takes gptq or awq, not '%s'", o->quantize);
    if (!elm_type_from_name(o->type, &p.policy.type))
        return cli_fail("plan: unknown --type '%s'", o->type);
    elm_error err;
    elm_error_clear(&err);
    elm_quant_rates rates;
    elm_quant_estimate e;
    if (elm_quant_measure_rates((int32_t)o->n_threads, &rates, &err) ||
        elm_quant_estimate_run(m, &p, (int32_t)o->calib_samples, (int32_t)o->seq_len, &rates, &e,
                               &err))
        return cli_fail("%s", err.msg);
    const double gib = 1073741824.0;
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "model", m->name[0] ? m->name : m->path);
        cJSON_AddStringToObject(j, "method", elm_quant_method_name(p.method));
        cJSON_AddStringToObject(j, "type", o->type);
        cJSON_AddNumberToObject(j, "n_layers", m->hp.n_layers);
        cJSON_AddNumberToObject(j, "calib_tokens", (double)e.n_tokens);
        cJSON_AddNumberToObject(j, "threads", (double)o->n_threads);
        cJSON_AddNumberToObject(j, "gemm_gflops", rates.gemm_gflops);
        cJSON_AddNumberToObject(j, "scalar_ns_per_weight", rates.scalar_ns);
        cJSON_AddNumberToObject(j, "gemm_flop", e.gemm_flop);
        cJSON_AddNumberToObject(j, "forward_flop", e.forward_flop);
        cJSON_AddNumberToObject(j, "syrk_flop", e.syrk_flop);
        cJSON_AddNumberToObject(j, "peak_anon_bytes", (double)e.peak_anon_bytes);
        cJSON_AddNumberToObject(j, "block_bytes", (double)e.block_bytes);
        cJSON_AddNumberToObject(j, "seconds_per_block", e.seconds_per_block);
        cJSON_AddNumberToObject(j, "seconds", e.seconds);
        return cli_print_json(j, "plan");
    }
    printf("quantize --method %s --type %s of %s: %d blocks, %lld calibration tokens (%ld x %ld), "
           "%ld threads\n", elm_quant_method_name(p.method), o->type,
           m->name[0] ? m->name : m->path, m->hp.n_layers, (long long)e.n_tokens,
           o->calib_samples, o->seq_len, o->n_threads);
    printf("measured now: float32 GEMM %.1f GFLOP/s, clip search %.2f ns/weight\n",
           rates.gemm_gflops, rates.scalar_ns);
    printf("work: %.2f TFLOP in BLAS, %.2f TFLOP of calibration passes, %.2f TFLOP of Hessians\n",
           e.gemm_flop / 1e12, e.forward_flop / 1e12, e.syrk_flop / 1e12);
    printf("peak anonymous memory %.2f GiB (one block's float32 matrices %.2f GiB); the source is "
           "mapped, read block by block\n", e.peak_anon_bytes / gib, e.block_bytes / gib);
    if (m->hp.n_expert > 0)
        printf("mixture of experts: %d experts per block, %d per token: each calibrated on about "
               "%lld tokens, its Hessians held with the block's\n", m->hp.n_expert,
               m->hp.n_expert_used,
               (long long)(e.n_tokens * m->hp.n_expert_used / m->hp.n_expert));
    printf("time %.0f s (%.1f min; %.1f s per block)\n", e.seconds, e.seconds / 60,
           e.seconds_per_block);
    return 0;
}

int cmd_plan(int argc, char **argv) {
    opts o = {.n_ctx = 2048, .n_batch = 512, .n_threads = elm_online_cores(), .cache = "f16",
              .type = "q4_0", .calib_samples = 128, .seq_len = 512};
    const cli_opt table[] = {
        CLI_OPT_MODEL(&o.model),
        {"--config", "FILE", CLI_TEXT, &o.config, 0, 0, "a Hugging Face config.json (shapes only, nothing downloaded)", 0},
        {"--preset", "NAME", CLI_TEXT, &o.preset, 0, 0, "a shape of 'edgelm synth --preset' (see edgelm synth --help)", 0},
        {"--device", "PROFILE", CLI_TEXT, &o.device, 0, 0, "one of the profiles below, or 'this' (bandwidth measured now,\nas 'edgelm bench --membw' does; this machine's RAM)", 0},
        {"--bandwidth", "GB/S", CLI_DOUBLE, &o.bandwidth, 0.001, 1e6, "memory bandwidth (overrides the profile's)", 0},
        {"--ram", "GIB", CLI_DOUBLE, &o.ram, 0.001, 1e6, "RAM (overrides the profile's)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o.n_ctx, 1, 1 << 24, "context length in tokens (default 2048)", 0},
        {"--cache-type", "T", CLI_TEXT, &o.cache, 0, 0, "KV cache element type for the rows: f16 (default) or q8_0", 0},
        {"-b, --batch-size", "N", CLI_INT, &o.n_batch, 1, 1 << 24, "prompt batch the compute buffers are sized for (default 512)", 0},
        CLI_OPT_THREADS(&o.n_threads),
        {"--quantize", "M", CLI_TEXT, &o.quantize, 0, 0, "gptq or awq: estimate that run's peak memory and time on\nthis machine instead (GEMM rate measured now)", 0},
        {"--type", "TYPE", CLI_TEXT, &o.type, 0, 0, "--quantize: the target type (default q4_0, the default policy)", 0},
        {"--calib-samples", "N", CLI_INT, &o.calib_samples, 1, 1L << 24, "--quantize: calibration samples (default 128)", 0},
        {"--seq-len", "N", CLI_INT, &o.seq_len, 2, 1L << 20, "--quantize: tokens per sample (default 512)", 0},
        CLI_OPT_JSON(&o.json, "one JSON object"),
        {0}};
    const cli_spec spec = {
        "plan", "(-m MODEL | --config config.json | --preset NAME) [--device PROFILE]\n"
        "                   [--bandwidth GB/S] [--ram GIB] [-c CTX] [--cache-type f16|q8_0] [-b BATCH] [-t N] [--json]\n"
        "       edgelm plan (-m MODEL | --config FILE | --preset NAME) --quantize gptq|awq [--type TYPE]\n"
        "                   [--calib-samples N] [--seq-len N] [-t N] [--json]",
        "For each weight type (f16, q8_0, q4_0, q4_1 with every matrix of that type, the\n"
        "mixed policy of 'edgelm quantize': q4_0 with embedding and output at q8_0, and the\n"
        "llama-quantize recipes q2_k, q3_k_m, q4_k_s, q4_k_m, q5_k_m, q6_k, iq4_xs): weight\n"
        "bytes, KV cache at CTX (2 x layers x kv_heads x head_dim x CTX x bytes per element),\n"
        "compute buffers, peak memory, the decode speed memory bandwidth allows (bandwidth /\n"
        "bytes read per token at a full context) and whether it fits the device's RAM.\n"
        "With --quantize: the peak memory and time of 'edgelm quantize --method M' on this\n"
        "machine, from the run's arithmetic and a GEMM rate measured now (an estimate).",
        CLI_TABLES(table), device_lines(), NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (!!o.model + !!o.config + !!o.preset != 1)
        return cli_fail("plan: give exactly one of -m MODEL, --config FILE, --preset NAME");
    if (strcmp(o.cache, "f16") != 0 && strcmp(o.cache, "q8_0") != 0)
        return cli_fail("plan: --cache-type must be f16 or q8_0, not '%s'", o.cache);
    if (o.quantize) {
        elm_model *m = source_model(&o);
        if (!m) return 1;
        const int rc = plan_quantize(&o, m);
        elm_model_free(m);
        return rc;
    }
    const char *dev;
    double gbs, gib;
    if (device_figures(&o, &dev, &gbs, &gib)) return 1;
    elm_model *m = source_model(&o);
    if (!m) return 1;
    elm_plan p;
    elm_error err;
    elm_error_clear(&err);
    int rc = 0;
    if (elm_plan_make(m, (int32_t)o.n_ctx, (int32_t)o.n_batch, (int32_t)o.n_threads,
                      !strcmp(o.cache, "q8_0"), gbs, gib, &p, &err))
        rc = cli_fail("%s", err.msg);
    else if (o.json)
        rc = print_json(m, &p, dev, gbs, gib, o.cache);
    else
        print_text(m, &p, dev, gbs, gib, o.cache);
    elm_model_free(m);
    return rc;
}
