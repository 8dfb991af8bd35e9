/* edgelm run: generate from a prompt, streaming text to stdout, stats on stderr (or --json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "edgelm/speculative.h"
#include "gen_opts.h"

static void usage(FILE *f) {
    fputs("usage: edgelm run -m MODEL (-p PROMPT | -f FILE) [options]\n\n"
          "Generates text after PROMPT: one batched prefill, then one decode step per token,\n"
          "streamed to stdout; a stats line goes to stderr (load, prefill, first token, decode,\n"
          "peak RSS).\n\n"
          "  -m, --model PATH       GGUF file, Hugging Face folder or llama2.c model.bin\n"
          "  -p, --prompt TEXT      prompt text\n"
          "  -f, --file FILE        read the prompt from FILE\n"
          "      --no-bos           do not prepend BOS to the prompt\n"
          "      --special          parse control tokens in the prompt (\"<|im_start|>\")\n"
          "      --tokenizer PATH   llama2.c tokenizer.bin when not beside model.bin\n"
          "  -h, --help             this help\n"
          "      --json             print one JSON object (ids, text, stats) instead of streaming\n"
          "      --logits N         with --json: add \"logits\", the rows predicting the first N\n"
          "                         generated tokens (prefill, then one decode step per token)\n",
          f);
    gen_opts_usage(f);
}

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

/* The logits that predicted gen[0..n_rows-1], replayed as generation ran them: the prompt in one
 * prefill, then one decode step per generated token (for cross-checks against other runtimes). */
static cJSON *logits_json(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                          const int32_t *gen, int32_t n_rows, int32_t n_vocab, elm_error *err) {
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
        cJSON_AddItemToArray(a, cJSON_CreateFloatArray(row, n_vocab));
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
    cJSON_AddNumberToObject(st, "load_ms", load_ms);
    cJSON_AddNumberToObject(st, "prompt_tokens", s->prompt_tokens);
    cJSON_AddNumberToObject(st, "prefill_tps", s->prefill_tps);
    cJSON_AddNumberToObject(st, "ttft_ms", s->ttft_ms);
    cJSON_AddNumberToObject(st, "generated_tokens", s->generated_tokens);
    cJSON_AddNumberToObject(st, "decode_tps", s->decode_tps);
    cJSON_AddNumberToObject(st, "peak_rss_mib", rss);
    cJSON_AddNumberToObject(st, "kv_cache_bytes", (double)elm_context_kv_bytes(ctx));
    cJSON_AddStringToObject(st, "cache_type_k", elm_type_get(elm_context_type_k(ctx))->name);
    cJSON_AddStringToObject(st, "cache_type_v", elm_type_get(elm_context_type_v(ctx))->name);
    if (spec) {
        cJSON *sp = cJSON_AddObjectToObject(st, "speculative");
        cJSON_AddNumberToObject(sp, "target_passes", spec->target_passes);
        cJSON_AddNumberToObject(sp, "drafted", spec->drafted);
        cJSON_AddNumberToObject(sp, "accepted", spec->accepted);
        cJSON_AddNumberToObject(sp, "acceptance_rate", spec->acceptance_rate);
        cJSON_AddNumberToObject(sp, "tokens_per_pass", spec->tokens_per_pass);
        cJSON_AddNumberToObject(sp, "ms_per_token", spec->ms_per_token);
        cJSON_AddNumberToObject(sp, "plain_ms_per_token", spec->plain_ms_per_token);
        cJSON_AddNumberToObject(sp, "speedup", spec->speedup);
    }
    return cli_print_json(o, "run");
}

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *tokenizer = NULL;
    bool json = false, no_bos = false, special = false;
    long n_logits = 0;
    gen_opts o;
    gen_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) CLI_STR(model);
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) CLI_STR(prompt);
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) CLI_STR(file);
        else if (!strcmp(a, "--tokenizer")) CLI_STR(tokenizer);
        else if (gen_opts_parse(&o, argc, argv, &i)) { if (o.failed) return 1; }
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--special")) special = true;
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--logits")) CLI_LONG(1, 1 << 20, n_logits);
        else return cli_fail("run: unknown option '%s' (see edgelm run --help)", a);
    }
    if (!model) return cli_fail("run: -m MODEL is required (see edgelm run --help)");
    if (!prompt && !file) return cli_fail("run: -p PROMPT or -f FILE is required");
    if (n_logits && !json) return cli_fail("run: --logits needs --json");
    elm_gen_params gp = o.gp;
    const long n_predict = gp.n_predict;
    gp.sampling.seed = gen_opts_seed(&o);

    if (prompt && file) return cli_fail("run: give -p PROMPT or -f FILE, not both");
    char *file_text = NULL;
    size_t plen = prompt ? strlen(prompt) : 0;
    if (file) {
        if (!(file_text = cli_read_text(file, &plen))) return 1;
        prompt = file_text;
    }

    int rc = 1;
    gen_stack stack = {0};
    int32_t *prompt_ids = NULL, *gen_ids = NULL;
    run_out out = {.stream = !json};
    const double t0 = cli_now_ms();
    elm_model *m = cli_load_model_to_run(model, tokenizer, o.mmap);
    if (!m) goto done;
    const double load_ms = cli_now_ms() - t0;
    elm_error err;
    elm_error_clear(&err);
    if (o.n_ctx == 0) o.n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    const long n_ctx = o.n_ctx;

    int64_t n_prompt = 0;
    if (elm_tokenize_alloc(&m->vocab, prompt, plen, m->vocab.add_bos && !no_bos, special,
                           &prompt_ids, &n_prompt, &err)) { cli_fail("%s", err.msg); goto done; }
    gen_ids = malloc(sizeof(int32_t) * (size_t)n_predict);
    if (!gen_ids) { cli_fail("out of memory"); goto done; }
    if (n_prompt == 0) { cli_fail("run: the prompt is empty"); goto done; }
    if (n_prompt > n_ctx) {
        cli_fail("%s: prompt has %lld tokens, longer than the context of %ld (raise -c)", model, (long long)n_prompt, n_ctx);
        goto done;
    }
    if (!gen_stack_new(&stack, &o, m, model)) goto done;
    /* --keep counts prompt tokens after BOS, as llama.cpp; -1 keeps the whole prompt */
    const int32_t bos = n_prompt > 0 && prompt_ids[0] == m->vocab.bos_id;
    gp.n_keep = o.keep < 0 || o.keep + bos > n_prompt ? (int32_t)n_prompt : (int32_t)o.keep + bos;

    if (!json) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int32_t n_gen = 0;
    elm_gen_stats st;
    elm_spec_stats spec;
    if (elm_generate_speculative(stack.ctx, prompt_ids, (int32_t)n_prompt, &gp, stack.speculative ? &stack.spec : NULL, on_token, &out, gen_ids, (int32_t)n_predict, &n_gen, &st, &spec, &err)) {
        if (!json) fputc('\n', stdout);
        cli_fail("%s: %s", model, err.msg);
        goto done;
    }
    const double rss = cli_peak_rss_mib();
    if (json) {
        cJSON *logits = NULL;
        if (n_logits) {
            const int32_t rows = n_logits < n_gen ? (int32_t)n_logits : n_gen;
            logits = logits_json(stack.ctx, prompt_ids, (int32_t)n_prompt, gen_ids, rows,
                                 m->hp.n_vocab, &err);
            if (!logits) { cli_fail("%s: %s", model, err.msg[0] ? err.msg : "out of memory"); goto done; }
        }
        rc = print_json(prompt_ids, (int32_t)n_prompt, gen_ids, n_gen, out.text, load_ms, &st,
                        rss, stack.ctx, stack.speculative ? &spec : NULL, logits);
    } else {
        fputc('\n', stdout);
        fflush(stdout);
        char kv[96], sp[192];
        gen_kv_summary(stack.ctx, kv, sizeof kv);
        if (stack.speculative) {
            gen_spec_summary(&spec, sp, sizeof sp);
            fprintf(stderr, "speculative: %s\n", sp);
        }
        fprintf(stderr,
                "load %.1f ms | prompt %d tokens, %.1f tok/s | first token %.1f ms | generated %d "
                "tokens, %.1f tok/s | peak RSS %.1f MiB | %s\n",
                load_ms, st.prompt_tokens, st.prefill_tps, st.ttft_ms, st.generated_tokens,
                st.decode_tps, rss, kv);
        rc = 0;
    }
done:
    gen_stack_free(&stack);
    elm_model_free(m);
    free(prompt_ids);
    free(gen_ids);
    free(out.text);
    free(file_text);
    return rc;
}
