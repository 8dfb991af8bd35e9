/* edgelm run: generate from a prompt, streaming text to stdout, stats on stderr (or --json). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "edgelm/generate.h"

static void usage(FILE *f) {
    fputs("usage: edgelm run -m MODEL (-p PROMPT | -f FILE) [options]\n"
          "  -m, --model PATH       GGUF file, Hugging Face folder or llama2.c model.bin\n"
          "  -p, --prompt TEXT      prompt text\n"
          "  -f, --file FILE        read the prompt from FILE\n"
          "  -n, --n-predict N      tokens to generate (default 128)\n"
          "  -c, --ctx-size N       KV cache size in tokens (default: trained context, max 4096)\n"
          "  -b, --batch-size N     prompt tokens per forward pass (default: whole prompt)\n"
          "  -t, --threads N        threads (default: all cores)\n"
          "  -s, --seed N           RNG seed (default: random)\n"
          "      --temp T           temperature, 0 = greedy (default 0.8)\n"
          "      --top-k N          (default 40, 0 = off)\n"
          "      --top-p P          (default 0.95, 1 = off)\n"
          "      --min-p P          (default 0.05, 0 = off)\n"
          "      --repeat-penalty X (default 1.0 = off)\n"
          "      --repeat-last-n N  penalty window in tokens (default 64)\n"
          "      --ignore-eos       keep generating after the end-of-sequence token\n"
          "      --no-bos           do not prepend BOS to the prompt\n"
          "      --tokenizer PATH   llama.c tokenizer.bin when not beside model.bin\n"
          "      --json             print one JSON object (ids, text, stats) instead of streaming\n",
          f);
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

static void print_json(const int32_t *prompt, int32_t n_prompt, const int32_t *gen, int32_t n_gen,
                       const char *text, double load_ms, const elm_gen_stats *s, double rss) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "prompt_ids", ids_json(prompt, n_prompt));
    cJSON_AddItemToObject(o, "generated_ids", ids_json(gen, n_gen));
    cJSON_AddStringToObject(o, "text", text ? text : "");
    cJSON *st = cJSON_AddObjectToObject(o, "stats");
    cJSON_AddNumberToObject(st, "load_ms", load_ms);
    cJSON_AddNumberToObject(st, "prompt_tokens", s->prompt_tokens);
    cJSON_AddNumberToObject(st, "prefill_tps", s->prefill_tps);
    cJSON_AddNumberToObject(st, "ttft_ms", s->ttft_ms);
    cJSON_AddNumberToObject(st, "generated_tokens", s->generated_tokens);
    cJSON_AddNumberToObject(st, "decode_tps", s->decode_tps);
    cJSON_AddNumberToObject(st, "peak_rss_mib", rss);
    char *str = cJSON_Print(o);
    if (str) puts(str);
    free(str);
    cJSON_Delete(o);
}

int cmd_run(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *tokenizer = NULL;
    long n_predict = 128, n_ctx = 0, n_batch = 0, n_threads = cli_default_threads();
    long seed = -1;
    bool json = false, no_bos = false;
    elm_gen_params gp = {.sampling = elm_sampler_defaults()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) CLI_STR(model);
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) CLI_STR(prompt);
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) CLI_STR(file);
        else if (!strcmp(a, "--tokenizer")) CLI_STR(tokenizer);
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) CLI_LONG(1, 1 << 20, n_predict);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) CLI_LONG(1, 1 << 20, n_ctx);
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) CLI_LONG(1, 1 << 20, n_batch);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) CLI_LONG(1, 512, n_threads);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) CLI_LONG(-1, 0x7fffffffL, seed);
        else if (!strcmp(a, "--temp")) CLI_FLOAT(0, 100, gp.sampling.temp);
        else if (!strcmp(a, "--top-k")) CLI_LONG(0, 1 << 24, gp.sampling.top_k);
        else if (!strcmp(a, "--top-p")) CLI_FLOAT(0, 1, gp.sampling.top_p);
        else if (!strcmp(a, "--min-p")) CLI_FLOAT(0, 1, gp.sampling.min_p);
        else if (!strcmp(a, "--repeat-penalty")) CLI_FLOAT(0, 100, gp.sampling.repeat_penalty);
        else if (!strcmp(a, "--repeat-last-n")) CLI_LONG(0, 1 << 20, gp.sampling.repeat_last_n);
        else if (!strcmp(a, "--ignore-eos")) gp.ignore_eos = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--json")) json = true;
        else return cli_fail("run: unknown option '%s' (see edgelm run --help)", a);
    }
    if (!model) return cli_fail("run: -m MODEL is required (see edgelm run --help)");
    if (!prompt && !file) return cli_fail("run: -p PROMPT or -f FILE is required");
    gp.n_predict = (int32_t)n_predict;
    gp.sampling.seed = seed < 0 ? (uint64_t)time(NULL) : (uint64_t)seed;

    char *file_text = NULL;
    if (file) {
        size_t len;
        if (!(file_text = cli_read_text(file, &len))) return 1;
        prompt = file_text;
    }

    int rc = 1;
    elm_context *ctx = NULL;
    int32_t *prompt_ids = NULL, *gen_ids = NULL;
    run_out out = {.stream = !json};
    const double t0 = cli_now_ms();
    elm_model *m = cli_load_model(model, tokenizer);
    if (!m) goto done;
    const double load_ms = cli_now_ms() - t0;
    elm_error err;
    elm_error_clear(&err);
    if (n_ctx == 0) n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;

    const size_t plen = strlen(prompt);
    const int64_t cap = (int64_t)plen + 2;
    prompt_ids = malloc(sizeof(int32_t) * (size_t)cap);
    gen_ids = malloc(sizeof(int32_t) * (size_t)n_predict);
    if (!prompt_ids || !gen_ids) { cli_fail("out of memory"); goto done; }
    const int64_t n_prompt = elm_tokenize(&m->vocab, prompt, plen, m->vocab.add_bos && !no_bos, prompt_ids, cap, &err);
    if (n_prompt < 0) { cli_fail("%s", err.msg); goto done; }
    if (n_prompt == 0) { cli_fail("run: the prompt is empty"); goto done; }
    if (n_prompt > n_ctx) {
        cli_fail("%s: prompt has %lld tokens, longer than the context of %ld (raise -c)", model, (long long)n_prompt, n_ctx);
        goto done;
    }
    elm_context_params cp = {.n_ctx = (int32_t)n_ctx, .n_batch = (int32_t)(n_batch ? n_batch : n_ctx), .n_threads = (int32_t)n_threads};
    if (elm_context_new(m, &cp, &ctx, &err)) { cli_fail("%s: %s", model, err.msg); goto done; }

    if (!json) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    int32_t n_gen = 0;
    elm_gen_stats st;
    if (elm_generate(ctx, prompt_ids, (int32_t)n_prompt, &gp, on_token, &out, gen_ids, (int32_t)n_predict, &n_gen, &st, &err)) {
        if (!json) fputc('\n', stdout);
        cli_fail("%s: %s", model, err.msg);
        goto done;
    }
    const double rss = cli_peak_rss_mib();
    if (json) {
        print_json(prompt_ids, (int32_t)n_prompt, gen_ids, n_gen, out.text, load_ms, &st, rss);
    } else {
        fputc('\n', stdout);
        fflush(stdout);
        fprintf(stderr,
                "load %.1f ms | prompt %d tokens, %.1f tok/s | first token %.1f ms | generated %d "
                "tokens, %.1f tok/s | peak RSS %.1f MiB\n",
                load_ms, st.prompt_tokens, st.prefill_tps, st.ttft_ms, st.generated_tokens,
                st.decode_tps, rss);
    }
    rc = 0;
done:
    elm_context_free(ctx);
    elm_model_free(m);
    free(prompt_ids);
    free(gen_ids);
    free(out.text);
    free(file_text);
    return rc;
}
