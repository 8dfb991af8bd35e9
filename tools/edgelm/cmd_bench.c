/* edgelm bench: prompt processing and generation speed the way llama-bench measures them (pp: one
 * batch of P tokens from an empty cache; tg: N single-token steps from an empty cache; mean ± sd
 * over repetitions after a warm-up), plus load time, time to first token for a 128-token prompt,
 * peak RSS, and decode's effective weight bandwidth next to this machine's read bandwidth
 * (`--membw`, elm_membw_read in edgelm/system.h). Output as text, --json or a --markdown table. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/system.h"
#include "cli.h"
#include "core/fileio.h"
#include "edgelm/context.h"
#include "opts.h"

enum { TTFT_PROMPT = 128 };

typedef struct {
    double mean, sd;
} stat;

static stat stats_of(const double *v, int n) {
    stat s = {0, 0};
    for (int i = 0; i < n; i++) s.mean += v[i] / n;
    for (int i = 0; i < n && n > 1; i++) s.sd += (v[i] - s.mean) * (v[i] - s.mean) / (n - 1);
    s.sd = sqrt(s.sd);
    return s;
}

typedef struct {
    const char *model;
    long n_prompt, n_gen, reps, threads;
    double load_ms, ttft_ms, peak_rss_mib, membw_gbps, decode_gbps;
    double parked; /* share of the timed pp and tg runs with a worker parked (threadpool.h) */
    stat pp, tg;
    size_t model_bytes, decode_bytes;
    int64_t params;
    const char *isa;
} result;

/* Bytes of weights one decoded token reads: every tensor but the embedding tables, of which only
 * a row is read (unless the token embedding is also the output projection; Gemma 4's per-layer
 * embeddings), and but the experts it is not routed to (all but hp.n_expert_used of each stack,
 * as plan counts them). The KV cache is left out. */
static size_t decode_bytes(const elm_model *m) {
    size_t b = elm_model_bytes(m);
    if (m->output != m->tok_embd) b -= m->tok_embd->nbytes;
    if (m->ple_embd) b -= m->ple_embd->nbytes;
    const int64_t E = m->hp.n_expert, k = m->hp.n_expert_used;
    for (int32_t i = 0; E > k && i < m->n_tensors; i++)
        if (m->tensors[i].ne[2] == E)
            b -= m->tensors[i].nbytes / (size_t)E * (size_t)(E - k);
    return b;
}

static bool forward(elm_context *c, const int32_t *toks, int32_t n, float *logits) {
    elm_error err;
    elm_error_clear(&err);
    if (elm_forward(c, toks, n, logits, false, &err) != ELM_OK) {
        cli_fail("bench: %s", err.msg);
        return false;
    }
    return true;
}

/* pp: the prompt in one batch; returns tokens/s or -1. */
static double run_pp(elm_context *c, const int32_t *toks, int32_t n, float *logits) {
    elm_context_reset(c);
    const double t0 = elm_now_ms();
    if (!forward(c, toks, n, logits)) return -1;
    return n / ((elm_now_ms() - t0) / 1000);
}

/* tg: n single-token steps from an empty cache; returns tokens/s or -1. */
static double run_tg(elm_context *c, const int32_t *toks, int32_t n, float *logits) {
    elm_context_reset(c);
    const double t0 = elm_now_ms();
    for (int32_t i = 0; i < n; i++)
        if (!forward(c, toks + i, 1, logits)) return -1;
    return n / ((elm_now_ms() - t0) / 1000);
}

/* Prompt in, first token out (greedy pick included). */
static double run_ttft(elm_context *c, const int32_t *toks, float *logits, int32_t n_vocab) {
    elm_context_reset(c);
    const double t0 = elm_now_ms();
    if (!forward(c, toks, TTFT_PROMPT, logits)) return -1;
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++) best = logits[i] > logits[best] ? i : best;
    (void)best;
    return elm_now_ms() - t0;
}

static int measure(elm_model *m, result *r) {
    const long n_pp = r->n_prompt > TTFT_PROMPT ? r->n_prompt : TTFT_PROMPT;
    const int32_t V = m->hp.n_vocab;
    elm_context_params cp = {.n_ctx = (int32_t)(n_pp > r->n_gen ? n_pp : r->n_gen) + 1,
                             .n_batch = (int32_t)n_pp,
                             .n_threads = (int32_t)r->threads};
    elm_context *c = NULL;
    elm_error err;
    elm_error_clear(&err);
    if (elm_context_new(m, &cp, &c, &err) != ELM_OK) return cli_fail("bench: %s", err.msg);
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(cp.n_ctx));
    float *logits = malloc(sizeof(float) * (size_t)V);
    double *tps = malloc(sizeof(double) * (size_t)r->reps);
    int rc = 1;
    if (!toks || !logits || !tps) {
        cli_fail("bench: out of memory");
        goto out;
    }
    uint32_t s = 12345;
    for (int32_t i = 0; i < cp.n_ctx; i++)
        toks[i] = (int32_t)((s = s * 1664525u + 1013904223u) >> 8) % V;
    /* warm-up: fault the weights in, start the threads */
    if (run_pp(c, toks, (int32_t)(n_pp < 32 ? n_pp : 32), logits) < 0 ||
        run_tg(c, toks, 2, logits) < 0)
        goto out;
    const double parked0 = elm_context_parked_s(c), t0 = elm_now_s();
    for (long i = 0; i < r->reps && r->n_prompt > 0; i++)
        if ((tps[i] = run_pp(c, toks, (int32_t)r->n_prompt, logits)) < 0) goto out;
    if (r->n_prompt > 0) r->pp = stats_of(tps, (int)r->reps);
    for (long i = 0; i < r->reps && r->n_gen > 0; i++)
        if ((tps[i] = run_tg(c, toks, (int32_t)r->n_gen, logits)) < 0) goto out;
    if (r->n_gen > 0) r->tg = stats_of(tps, (int)r->reps);
    const double timed = elm_now_s() - t0;
    r->parked = timed > 0 ? (elm_context_parked_s(c) - parked0) / timed : 0;
    for (long i = 0; i < r->reps; i++)
        if ((tps[i] = run_ttft(c, toks, logits, V)) < 0) goto out;
    r->ttft_ms = stats_of(tps, (int)r->reps).mean;
    r->isa = elm_kernel_isa();
    rc = 0;
out:
    free(toks), free(logits), free(tps);
    elm_context_free(c);
    return rc;
}

static cJSON *result_json(const result *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", r->model);
    cJSON_AddStringToObject(o, "isa", r->isa);
    cJSON_AddNumberToObject(o, "threads", (double)r->threads);
    cJSON_AddNumberToObject(o, "n_prompt", (double)r->n_prompt);
    cJSON_AddNumberToObject(o, "n_gen", (double)r->n_gen);
    cJSON_AddNumberToObject(o, "repetitions", (double)r->reps);
    cJSON_AddNumberToObject(o, "pp_tps", r->pp.mean);
    cJSON_AddNumberToObject(o, "pp_tps_sd", r->pp.sd);
    cJSON_AddNumberToObject(o, "tg_tps", r->tg.mean);
    cJSON_AddNumberToObject(o, "tg_tps_sd", r->tg.sd);
    cJSON_AddNumberToObject(o, "parked_share", r->parked);
    cJSON_AddNumberToObject(o, "load_ms", r->load_ms);
    cJSON_AddNumberToObject(o, "ttft_ms", r->ttft_ms);
    cJSON_AddNumberToObject(o, "peak_rss_mib", r->peak_rss_mib);
    cJSON_AddNumberToObject(o, "model_bytes", (double)r->model_bytes);
    cJSON_AddNumberToObject(o, "params", (double)r->params);
    cJSON_AddNumberToObject(o, "decode_bytes_per_token", (double)r->decode_bytes);
    cJSON_AddNumberToObject(o, "decode_gbps", r->decode_gbps);
    cJSON_AddNumberToObject(o, "membw_gbps", r->membw_gbps);
    return o;
}

/* One object for one thread count, an array of them for several. */
static int print_json(const result *rs, int n) {
    if (n == 1) return cli_print_json(result_json(&rs[0]), "bench");
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, result_json(&rs[i]));
    return cli_print_json(arr, "bench");
}

static void print_markdown(const result *rs, int n) {
    printf("| model | size | isa | threads | pp%ld tok/s | tg%ld tok/s | decode GB/s | read GB/s | "
           "load ms | TTFT %d ms | peak RSS MiB |\n",
           rs[0].n_prompt, rs[0].n_gen, TTFT_PROMPT);
    printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const result *r = rs; r < rs + n; r++) {
        const char *base = elm_base_name(r->model);
        printf("| %s | %.2f MiB | %s | %ld | %.1f ± %.1f | %.1f ± %.1f | %.1f | %.1f | %.0f | %.0f | "
           "%.0f |\n",
           base, r->model_bytes / 1048576.0, r->isa, r->threads, r->pp.mean, r->pp.sd, r->tg.mean,
           r->tg.sd, r->decode_gbps, r->membw_gbps, r->load_ms, r->ttft_ms, r->peak_rss_mib);
    }
}

static void print_text(const result *r) {
    const double params = (double)r->params;
    const int unit = params >= 1e9 ? 0 : params >= 1e6 ? 1 : 2;
    printf("model          %s (%.2f MiB, %.2f %s parameters)\n", r->model,
           r->model_bytes / 1048576.0, params / (unit == 0 ? 1e9 : unit == 1 ? 1e6 : 1e3),
           unit == 0 ? "B" : unit == 1 ? "M" : "K");
    printf("kernels        %s, %ld threads, %ld repetitions\n", r->isa, r->threads, r->reps);
    if (r->n_prompt > 0) printf("pp%-12ld %.2f ± %.2f tok/s\n", r->n_prompt, r->pp.mean, r->pp.sd);
    if (r->n_gen > 0)
        printf("tg%-12ld %.2f ± %.2f tok/s (%.2f ms/token)\n", r->n_gen, r->tg.mean, r->tg.sd,
               1000 / r->tg.mean);
    if (r->parked >= 0.01)
        printf("threads        fewer than -t for %.0f%% of the timed runs: a core was busy elsewhere\n",
               100 * r->parked);
    printf("load           %.0f ms\n", r->load_ms);
    printf("first token    %.0f ms after a %d-token prompt\n", r->ttft_ms, TTFT_PROMPT);
    printf("peak RSS       %.0f MiB\n", r->peak_rss_mib);
    if (r->n_gen > 0)
        printf("decode         %.1f GB/s of weights (%.0f MB per token); read bandwidth %.1f GB/s "
               "(%.0f%%)\n",
               r->decode_gbps, r->decode_bytes / 1e6, r->membw_gbps,
               100 * r->decode_gbps / r->membw_gbps);
}

static int membw_only(long threads, long mib, bool json) {
    cJSON *arr = json ? cJSON_CreateArray() : NULL;
    if (!json) printf("read bandwidth, %ld MiB buffer\n", mib);
    for (long t = 1; t <= threads; t++) {
        double gbps;
        elm_error err;
        elm_error_clear(&err);
        if (elm_membw_read((int)t, (size_t)mib << 20, 5, &gbps, &err) != ELM_OK) {
            cJSON_Delete(arr);
            return cli_fail("bench: %s", err.msg);
        }
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "threads", (double)t);
            cJSON_AddNumberToObject(o, "membw_gbps", gbps);
            cJSON_AddItemToArray(arr, o);
        } else {
            printf("  %2ld threads  %6.1f GB/s\n", t, gbps);
        }
    }
    return json ? cli_print_json(arr, "bench") : 0;
}

enum { MAX_THREAD_COUNTS = 8 };

/* "N" or "N,N,..." (as llama-bench's -t) into counts[]; returns how many, or 0 after an error. */
static int thread_counts(const char *text, long counts[MAX_THREAD_COUNTS]) {
    int n = 0;
    for (const char *p = text;; p++) {
        char *end;
        const long t = strtol(p, &end, 10);
        if (end == p || t < 1 || t > 512 || (*end && *end != ','))
            return cli_fail("bench: -t '%s': thread counts 1..512, separated by commas", text), 0;
        if (n == MAX_THREAD_COUNTS)
            return cli_fail("bench: -t '%s': at most %d thread counts", text, MAX_THREAD_COUNTS), 0;
        counts[n++] = t;
        if (!*end) return n;
        p = end;
    }
}

int cmd_bench(int argc, char **argv) {
    result r = {.n_prompt = 512, .n_gen = 128, .reps = 5, .threads = elm_online_cores()};
    const char *threads = NULL;
    bool json = false, markdown = false, membw = false, mmap = false;
    long mib = 1024;
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&r.model),
        {"-p, --n-prompt", "P", CLI_INT, &r.n_prompt, 0, 1 << 16, "prompt tokens for pp (default 512; 0 skips pp)", 0},
        {"-n, --n-gen", "N", CLI_INT, &r.n_gen, 0, 1 << 16, "generated tokens for tg (default 128; 0 skips tg)", 0},
        {"-t, --threads", "N[,N...]", CLI_TEXT, &threads, 0, 0, "threads (default: all cores); several counts, e.g. 1,2, give one\nresult each (--json: an array of objects)", 0},
        {"-r, --repetitions", "R", CLI_INT, &r.reps, 1, 1000, "repetitions of each test (default 5)", 0},
        {"--mmap", NULL, CLI_FLAG, &mmap, 0, 0, "map the GGUF file instead of reading it into memory (load_ms\nthen excludes the copy; decode is slower, 4 KiB pages)", 0},
        CLI_OPT_JSON(&json, "one JSON object: pp_tps, pp_tps_sd, tg_tps, tg_tps_sd, load_ms,\nttft_ms, peak_rss_mib, model_bytes, decode_gbps, membw_gbps,\nparked_share, threads, isa (and the parameters)"),
        {"--markdown", NULL, CLI_FLAG, &markdown, 0, 0, "one markdown table row set, for READMEs", 0},
        {"--membw", NULL, CLI_FLAG, &membw, 0, 0, "only measure read bandwidth, 1..N threads (GB/s = 1e9 B/s)", 0},
        {"--membw-mib", "M", CLI_INT, &mib, 1, 1 << 20, "size of the bandwidth test buffer (default 1024 MiB; keep it\nfar above the last-level cache)", 0},
        {0}};
    const cli_spec spec = {
        "bench", "-m MODEL [-p 512] [-n 128] [-t N[,N...]] [-r 5] [--json | --markdown]\n"
        "       edgelm bench --membw [-t N]",
        "Measures a model like llama-bench: pp = one batch of P prompt tokens from an empty\n"
        "cache, tg = N one-token decode steps from an empty cache, each repeated R times after a\n"
        "warm-up (mean ± standard deviation, tokens/s). Also: load time, time to first token for\n"
        "a 128-token prompt, peak RSS, model bytes, and decode's effective weight bandwidth (bytes\n"
        "of the weights a token reads × tg tokens/s) next to this machine's read bandwidth at\n"
        "the same thread count. Token ids are random: any model works, e.g. `edgelm synth`.",
        CLI_TABLES(opts),
        "EDGELM_ISA=scalar|avx2|avx512|neon forces a kernel set.", NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (json && markdown) return cli_fail("bench: choose one of --json and --markdown");
    long counts[MAX_THREAD_COUNTS] = {r.threads};
    const int n_counts = threads ? thread_counts(threads, counts) : 1;
    if (!n_counts) return 1;
    r.threads = counts[n_counts - 1];
    if (membw) return membw_only(r.threads, mib, json);
    if (!r.model) return cli_fail("bench: -m MODEL is required (try 'edgelm bench --help')");

    double t0 = elm_now_ms();
    elm_model *m = cli_load_model_to_run(r.model, NULL, mmap);
    if (!m) return 1;
    r.load_ms = elm_now_ms() - t0;
    r.model_bytes = elm_model_bytes(m);
    r.params = elm_model_params(m);
    r.decode_bytes = decode_bytes(m);
    result rs[MAX_THREAD_COUNTS];
    int rc = 0;
    for (int i = 0; i < n_counts && !rc; i++) {
        rs[i] = r;
        rs[i].threads = counts[i];
        rc = measure(m, &rs[i]);
    }
    const double peak_rss = cli_peak_rss_mib(); /* before the bandwidth buffer adds its pages */
    elm_model_free(m);
    if (rc) return rc;
    for (int i = 0; i < n_counts; i++) {
        rs[i].peak_rss_mib = peak_rss;
        rs[i].decode_gbps = rs[i].decode_bytes * rs[i].tg.mean / 1e9;
        elm_error err;
        elm_error_clear(&err);
        if (elm_membw_read((int)rs[i].threads, (size_t)mib << 20, 5, &rs[i].membw_gbps, &err) !=
            ELM_OK)
            return cli_fail("bench: %s", err.msg);
    }
    if (json) return print_json(rs, n_counts);
    if (markdown) print_markdown(rs, n_counts);
    else
        for (int i = 0; i < n_counts; i++) print_text(&rs[i]);
    return 0;
}
