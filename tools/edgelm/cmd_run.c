/* edgelm run: generate from a prompt, streaming text to stdout, stats on stderr (or --json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/speculative.h"
#include "gen_opts.h"
#include "opts.h"

typedef struct {
    bool stream;
    char *text;
    size_t len, cap;
} run_out;

static int on_token(const char *piece, size_t len, int32_t id, void *user) {
    (void)id;
    run_out *o = user;
    if (o->stream) {
        fwrite(piece, 1, len, stdout);
        fflush(stdout);
    }
    if (o->len + len + 1 > o->cap) {
        size_t cap = (o->cap + len + 1) * 2;
        char *p = realloc(o->text, cap);
        if (!p) return 1;
        o->text = p;
        o->cap = cap;
    }
    memcpy(o->text + o->len, piece, len);
    o->len += len;
    o->text[o->len] = '\0';
    return 0;
}

static cJSON *ids_json(const int32_t *ids, int32_t n) {
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
    return a;
}

/* The top largest of row[n] as [id, logit] pairs, largest first (a test's comparison needs the
 * head of each row, and a whole row of a 150k vocabulary is megabytes of JSON). */
static cJSON *top_json(const float *row, int32_t n, int32_t top) {
    int32_t ids[256];
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (k == top && row[i] <= row[ids[k - 1]]) continue;
        int32_t j = k < top ? k++ : k - 1;
        for (; j > 0 && row[ids[j - 1]] < row[i]; j--) ids[j] = ids[j - 1];
        ids[j] = i;
    }
    cJSON *a = cJSON_CreateArray();
    for (int32_t j = 0; a && j < k; j++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(ids[j]));
        cJSON_AddItemToArray(pair, cJSON_CreateNumber(row[ids[j]]));
        cJSON_AddItemToArray(a, pair);
    }
    return a;
}

/* The logits that predicted gen[0..n_rows-1], replayed as generation ran them: the prompt in one
 * prefill, then one decode step per generated token (for cross-checks against other runtimes);
 * whole rows, or with top > 0 each row's top largest (top_json). */
static cJSON *logits_json(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                          const int32_t *gen, int32_t n_rows, int32_t n_vocab, int32_t top,
                          elm_error *err) {
    float *row = malloc(sizeof(float) * (size_t)n_vocab);
    cJSON *a = cJSON_CreateArray();
    elm_context_reset(c);
    for (int32_t t = 0; row && a && t < n_rows; t++) {
        if (t == 0 ? elm_forward(c, prompt, n_prompt, row, false, err)
                   : elm_forward(c, &gen[t - 1], 1, row, false, err)) {
            cJSON_Delete(a);
            a = NULL;
            break;
        }
        cJSON_AddItemToArray(a, top > 0 ? top_json(row, n_vocab, top)
                                        : cJSON_CreateFloatArray(row, n_vocab));
    }
    free(row);
    return a;
}

static int print_json(const int32_t *prompt, int32_t n_prompt, const int32_t *gen, int32_t n_gen,
                      const char *text, double load_ms, const elm_gen_stats *s, double rss,
                      const elm_context *ctx, const elm_spec_stats *spec, cJSON *logits) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "prompt_ids", ids_json(prompt, n_prompt));
    cJSON_AddItemToObject(o, "generated_ids", ids_json(gen, n_gen));
    if (logits) cJSON_AddItemToObject(o, "logits", logits);
    cJSON_AddStringToObject(o, "text", text ? text : "");
    cJSON *st = cJSON_AddObjectToObject(o, "stats");
    const cli_json_num stats[] = {
        {"load_ms", load_ms},
        {"prompt_tokens", s->prompt_tokens},
        {"prefill_tps", s->prefill_tps},
        {"ttft_ms", s->ttft_ms},
        {"generated_tokens", s->generated_tokens},
        {"decode_tps", s->decode_tps},
        {"peak_rss_mib", rss},
        {"kv_cache_bytes", (double)elm_context_kv_bytes(ctx)},
    };
    cli_json_numbers(st, stats, sizeof stats / sizeof stats[0]);
    cJSON_AddStringToObject(st, "cache_type_k", elm_type_get(elm_context_type_k(ctx))->name);
    cJSON_AddStringToObject(st, "cache_type_v", elm_type_get(elm_context_type_v(ctx))->name);
    if (spec) {
        const cli_json_num sp[] = {
            {"target_passes", spec->target_passes},
            {"drafted", spec->drafted},
            {"accepted", spec->accepted},
            {"acceptance_rate", spec->acceptance_rate},
            {"tokens_per_pass", spec->tokens_per_pass},
            {"ms_per_token", spec->ms_per_token},
            {"plain_ms_per_token", spec->plain_ms_per_token},
            {"speedup", spec->speedup},
        };
        cli_json_numbers(cJSON_AddObjectToObject(st, "speculative"), sp, sizeof sp / sizeof sp[0]);
    }
    return cli_print_json(o, "run");
}

typedef struct run_opts {
    const char *model, *prompt, *file, *tokenizer;
    bool json, no_bos, special;
    long n_logits, logits_top;
    gen_opts gen;
} run_opts;

/* Parses the options; 0 to run, else cli_parse's result (-1: help printed). */
static int parse(run_opts *o, int argc, char **argv) {
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&o->model),
        {"-p, --prompt", "TEXT", CLI_TEXT, &o->prompt, 0, 0, "prompt text", 0},
        {"-f, --file", "FILE", CLI_TEXT, &o->file, 0, 0, "read the prompt from FILE", 0},
        {"--no-bos", NULL, CLI_FLAG, &o->no_bos, 0, 0, "do not prepend BOS to the prompt", 0},
        {"--special", NULL, CLI_FLAG, &o->special, 0, 0, "parse control tokens in the prompt (\"<|im_start|>\")", 0},
        CLI_OPT_TOKENIZER(&o->tokenizer),
        CLI_OPT_JSON(&o->json, "print one JSON object (ids, text, stats) instead of streaming"),
        {"--logits", "N", CLI_INT, &o->n_logits, 1, 1 << 20, "with --json: add \"logits\", the rows predicting the first N\ngenerated tokens (prefill, then one decode step per token)", 0},
        {"--logits-top", "K", CLI_INT, &o->logits_top, 1, 256, "with --logits: each row as its K largest [id, logit] pairs,\nlargest first", 0},
        {0}};
    const cli_spec spec = {
        "run", "-m MODEL (-p PROMPT | -f FILE) [options]",
        "Generates text after PROMPT: one batched prefill, then one decode step per token,\n"
        "streamed to stdout; a stats line goes to stderr (load, prefill, first token, decode,\n"
        "peak RSS).",
        CLI_TABLES(opts, gen_opts_table(&o->gen)), NULL, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->model) return cli_fail("run: -m MODEL is required (see edgelm run --help)");
    if (!o->prompt && !o->file) return cli_fail("run: -p PROMPT or -f FILE is required");
    if (o->prompt && o->file) return cli_fail("run: give -p PROMPT or -f FILE, not both");
    if (o->n_logits && !o->json) return cli_fail("run: --logits needs --json");
    if (o->logits_top && !o->n_logits) return cli_fail("run: --logits-top needs --logits");
    return 0;
}

/* The stats line on stderr. */
static void print_stats(const gen_stack *stack, const elm_gen_stats *st, const elm_spec_stats *spec,
                        double load_ms, double rss) {
    char kv[96], sp[192];
    gen_kv_summary(stack->ctx, kv, sizeof kv);
    if (stack->speculative) {
        gen_spec_summary(spec, sp, sizeof sp);
        fprintf(stderr, "speculative: %s\n", sp);
    }
    fprintf(stderr,
            "load %.1f ms | prompt %d tokens, %.1f tok/s | first token %.1f ms | generated %d "
            "tokens, %.1f tok/s | peak RSS %.1f MiB | %s\n",
            load_ms, st->prompt_tokens, st->prefill_tps, st->ttft_ms, st->generated_tokens,
            st->decode_tps, rss, kv);
}

/* Generates after prompt_ids with model m and prints the result; returns the exit status. */
static int generate(const run_opts *o, elm_model *m, const int32_t *prompt_ids, int32_t n_prompt,
                    const char *prompt, double load_ms) {
    elm_gen_params gp = o->gen.gp;
    gp.sampling.seed = gen_opts_seed(&o->gen);
    /* --keep counts prompt tokens after BOS, as llama.cpp; -1 keeps the whole prompt */
    const int32_t bos = n_prompt > 0 && prompt_ids[0] == m->vocab.bos_id;
    gp.n_keep = o->gen.keep < 0 || o->gen.keep + bos > n_prompt ? n_prompt : (int32_t)o->gen.keep + bos;
    int rc = 1;
    gen_stack stack = {0};
    run_out out = {.stream = !o->json};
    int32_t *gen_ids = malloc(sizeof(int32_t) * (size_t)gp.n_predict);
    if (!gen_ids) {
        cli_fail("out of memory");
        goto done;
    }
    if (!gen_stack_new(&stack, &o->gen, m, o->model)) goto done;
    gp.grammar = stack.grammar;
    if (!o->json) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int32_t n_gen = 0;
    elm_gen_stats st;
    elm_spec_stats spec;
    elm_error err;
    elm_error_clear(&err);
    if (elm_generate_speculative(stack.ctx, prompt_ids, n_prompt, &gp,
                                 stack.speculative ? &stack.spec : NULL, on_token, &out, gen_ids,
                                 gp.n_predict, &n_gen, &st, &spec, &err)) {
        if (!o->json) fputc('\n', stdout);
        cli_fail("%s: %s", o->model, err.msg);
        goto done;
    }
    const double rss = cli_peak_rss_mib();
    if (o->json) {
        cJSON *logits = NULL;
        if (o->n_logits) {
            const int32_t rows = o->n_logits < n_gen ? (int32_t)o->n_logits : n_gen;
            logits = logits_json(stack.ctx, prompt_ids, n_prompt, gen_ids, rows, m->hp.n_vocab,
                                 (int32_t)o->logits_top, &err);
            if (!logits) {
                cli_fail("%s: %s", o->model, err.msg[0] ? err.msg : "out of memory");
                goto done;
            }
        }
        rc = print_json(prompt_ids, n_prompt, gen_ids, n_gen, out.text, load_ms, &st, rss,
                        stack.ctx, stack.speculative ? &spec : NULL, logits);
    } else {
        fputc('\n', stdout);
        fflush(stdout);
        print_stats(&stack, &st, &spec, load_ms, rss);
        rc = 0;
    }
done:
    gen_stack_free(&stack);
    free(gen_ids);
    free(out.text);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_opts o = {0};
    gen_opts_init(&o.gen);
    const int pr = parse(&o, argc, argv);
    if (pr) return cli_parse_exit(pr);
    char *file_text = NULL;
    const char *prompt = o.prompt;
    size_t plen = prompt ? strlen(prompt) : 0;
    if (o.file) {
        if (!(file_text = cli_read_text(o.file, &plen))) return 1;
        prompt = file_text;
    }
    int rc = 1;
    int32_t *prompt_ids = NULL;
    const double t0 = elm_now_ms();
    elm_model *m = cli_load_model_to_run(o.model, o.tokenizer, gen_opts_mmap(&o.gen));
    if (!m) goto done;
    const double load_ms = elm_now_ms() - t0;
    o.gen.n_ctx = gen_opts_n_ctx(&o.gen, m);
    elm_error err;
    elm_error_clear(&err);
    int64_t n_prompt = 0;
    if (elm_tokenize_alloc(&m->vocab, prompt, plen, m->vocab.add_bos && !o.no_bos, o.special,
                           &prompt_ids, &n_prompt, &err)) {
        cli_fail("%s", err.msg);
    } else if (n_prompt == 0) {
        cli_fail("run: the prompt is empty");
    } else if (n_prompt > o.gen.n_ctx) {
        cli_fail("%s: prompt has %lld tokens, longer than the context of %ld (raise -c)", o.model,
                 (long long)n_prompt, o.gen.n_ctx);
    } else {
        rc = generate(&o, m, prompt_ids, (int32_t)n_prompt, prompt, load_ms);
    }
done:
    elm_model_free(m);
    free(prompt_ids);
    free(file_text);
    return rc;
}
