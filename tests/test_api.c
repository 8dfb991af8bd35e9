/* The app API (edgelm.h): two contexts on one model generating in two threads give the same ids
 * as one after the other (tests/cli_tsan.sh runs this program under ThreadSanitizer too);
 * streaming with cancellation, stats, chat with KV reuse, save/load, tokenize/detokenize, the
 * model's JSON description, and errors kept per handle. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/edgelm.h"
#include "edgelm/model.h"

#define F32 "stories260K/stories260K-f32.gguf"
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define N_GEN 24
#else
#define N_GEN 64
#endif

typedef struct run {
    edgelm_model *m;
    const char *prompt;
    int32_t ids[N_GEN];
    int n;
    int status;
    char text[4096];
    size_t len;
} run;

static int collect(const char *piece, int32_t id, void *user) {
    run *r = user;
    if (id >= 0 && r->n < N_GEN) r->ids[r->n++] = id;
    const size_t n = strlen(piece);
    if (r->len + n < sizeof r->text) {
        memcpy(r->text + r->len, piece, n + 1);
        r->len += n;
    }
    return 0;
}

/* One context, greedy: the continuation of r->prompt. */
static void *generate(void *arg) {
    run *r = arg;
    edgelm_params p = edgelm_default_params();
    p.n_ctx = 128;
    p.n_threads = 2;
    p.temp = 0;
    edgelm_ctx *c = NULL;
    char err[256];
    r->status = edgelm_ctx_new(r->m, &p, &c, err, sizeof err);
    if (!r->status) r->status = edgelm_generate(c, r->prompt, N_GEN, collect, r);
    edgelm_ctx_free(c);
    return NULL;
}

static void two_threads(edgelm_model *m) {
    run seq[2] = {{.m = m, .prompt = "Once upon a time"}, {.m = m, .prompt = "Lily and Ben"}};
    run par[2] = {{.m = m, .prompt = "Once upon a time"}, {.m = m, .prompt = "Lily and Ben"}};
    generate(&seq[0]);
    generate(&seq[1]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, generate, &par[i]) == 0, "thread");
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK(seq[i].status == 0 && par[i].status == 0 && seq[i].n == N_GEN, "status %d %d, %d ids",
              seq[i].status, par[i].status, seq[i].n);
        CHECK(par[i].n == seq[i].n && !memcmp(par[i].ids, seq[i].ids, sizeof(int32_t) * N_GEN),
              "'%s': threaded ids differ from sequential", seq[i].prompt);
    }
    CHECK(memcmp(seq[0].ids, seq[1].ids, sizeof seq[0].ids) != 0, "both prompts gave one text");
    CHECK(!strncmp(seq[0].text, ", there was a little girl", 25), "text: '%s'", seq[0].text);
}

static int stop_after_3(const char *piece, int32_t id, void *user) {
    (void)piece;
    int *n = user;
    return id >= 0 && ++*n >= 3;
}

static void one_context(edgelm_model *m, const char *path) {
    edgelm_params p = edgelm_default_params();
    p.n_ctx = 256;
    p.temp = 0;
    p.chat_template = "llama2";
    p.system_prompt = "You tell stories.";
    p.cache_type_k = "q8_0";
    edgelm_ctx *c = NULL;
    char err[256];
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == 0, "ctx: %s", err);
    if (!c) return;

    int n = 0;
    CHECK(edgelm_chat(c, "Tell me about a dog.", 32, stop_after_3, &n) == 0 && n == 3,
          "cancel after 3: status, %d tokens", n);
    edgelm_stats s = edgelm_get_stats(c);
    CHECK(s.tokens == 3 && s.prompt_tokens > 10 && s.ttft_ms > 0 && s.peak_rss_mib > 0,
          "stats: %d tokens, prompt %d, ttft %.2f, rss %.1f", s.tokens, s.prompt_tokens,
          s.ttft_ms, s.peak_rss_mib);
    CHECK(s.kv_cache_bytes == elm_kv_cache_bytes(&edgelm_model_get(m)->hp, 256, ELM_TYPE_Q8_0,
                                                 ELM_TYPE_F32),
          "kv bytes %zu", s.kv_cache_bytes);
    const int32_t first_prompt = s.prompt_tokens;

    run r = {0};
    CHECK(edgelm_chat(c, "What happened next?", 16, collect, &r) == 0, "turn 2: %s",
          edgelm_last_error(c));
    s = edgelm_get_stats(c);
    CHECK(s.prompt_tokens < first_prompt && s.tokens == r.n && r.n > 0,
          "turn 2 prefilled %d (turn 1: %d), %d tokens", s.prompt_tokens, first_prompt, s.tokens);
    CHECK(s.tokens < 2 || (s.decode_avg_ms > 0 && s.tokens_per_sec > 0), "decode stats");
    CHECK(!strcmp(edgelm_last_reply(c), r.text), "last reply '%s' vs streamed '%s'",
          edgelm_last_reply(c), r.text);

    CHECK(edgelm_save(c, path) == 0, "save: %s", edgelm_last_error(c));
    CHECK(edgelm_load(c, "/nonexistent/none.session") == ELM_ERR_IO &&
              strstr(edgelm_last_error(c), "none.session"),
          "load of a missing file: %s", edgelm_last_error(c));
    edgelm_reset(c);
    CHECK(edgelm_load(c, path) == 0 && edgelm_last_error(c)[0] == '\0', "load: %s",
          edgelm_last_error(c));
    CHECK(edgelm_chat(c, "And then?", 8, NULL, NULL) == 0 && edgelm_get_stats(c).prompt_tokens <
                                                                  first_prompt,
          "restored chat goes on: %s", edgelm_last_error(c));
    CHECK(edgelm_generate(c, "x", 0, NULL, NULL) == ELM_ERR_ARG, "n_predict 0 accepted");
    edgelm_ctx_free(c);

    p.cache_type_v = "q5_1";
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == ELM_ERR_ARG && !c && strstr(err, "q5_1"),
          "bad cache type: %s", err);
    p.cache_type_v = NULL;
    p.chat_template = "vicuna";
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == ELM_ERR_ARG && strstr(err, "vicuna"),
          "bad template: %s", err);
}

/* json_schema: every reply of the conversation is the schema's JSON (its one enum value or a
 * small integer); a schema the translation cannot enforce, or one with lookup, is refused. */
static void structured(edgelm_model *m) {
    edgelm_params p = edgelm_default_params();
    p.n_ctx = 256;
    p.chat_template = "llama2";
    p.seed = 5;
    p.json_schema = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", "
                    "\"minimum\": 0, \"maximum\": 9}}, \"required\": [\"n\"]}";
    edgelm_ctx *c = NULL;
    char err[256];
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == 0, "ctx: %s", err);
    for (int turn = 0; c && turn < 2; turn++) {
        CHECK(edgelm_chat(c, "A number?", 64, NULL, NULL) == 0, "chat: %s", edgelm_last_error(c));
        const char *r = edgelm_last_reply(c);
        int n = -1;
        char close = 0;
        CHECK(sscanf(r, " { \"n\" : %d %c", &n, &close) == 2 && n >= 0 && n <= 9 && close == '}',
              "reply %d: '%s'", turn, r);
    }
    edgelm_ctx_free(c);
    c = NULL;
    p.json_schema = "{\"type\": \"string\", \"pattern\": \"x\"}";
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == ELM_ERR_UNSUPPORTED && !c &&
              strstr(err, "pattern"), "unsupported schema: %s", err);
    p.json_schema = NULL;
    p.grammar = "root ::= \"a\"";
    p.lookup = 3;
    CHECK(edgelm_ctx_new(m, &p, &c, err, sizeof err) == ELM_ERR_UNSUPPORTED && !c,
          "grammar with lookup: %s", err);
}

static void tokens(edgelm_model *m) {
    int32_t ids[64];
    const int32_t n = edgelm_tokenize(m, "Once upon a time", 1, 0, ids, 64);
    CHECK(n == 5 && ids[0] == 1 && ids[1] == 403 && ids[4] == 378, "tokenize: %d ids", n);
    CHECK(edgelm_tokenize(m, "Once upon a time", 1, 0, ids, 2) == 5, "count beyond max_ids");
    CHECK(edgelm_tokenize(m, "</s>", 0, 1, ids, 64) == 1 && ids[0] == 2, "special token parsed");
    char *text = edgelm_detokenize(m, ids + 1, 0);
    CHECK(text && !strcmp(text, ""), "empty detokenize");
    edgelm_free(text);
    edgelm_tokenize(m, "Once upon a time", 1, 0, ids, 64);
    text = edgelm_detokenize(m, ids, 5);
    CHECK(text && !strcmp(text, " Once upon a time"), "detokenize: '%s'", text ? text : "");
    edgelm_free(text);
    CHECK(!strcmp(edgelm_status_string(ELM_ERR_FORMAT), "format error"), "status string");
    char *info = edgelm_model_info(m);
    CHECK(info && strstr(info, "\"architecture\":\"llama\"") && strstr(info, "\"n_vocab\":512,") &&
              strstr(info, "\"add_bos\":true"), "model info: %s", info ? info : "NULL");
    edgelm_free(info);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    char err[512];
    edgelm_model *bad = NULL, *m = NULL;
    CHECK(edgelm_model_load("/nonexistent/model.gguf", &bad, err, sizeof err) == ELM_ERR_IO &&
              !bad && strstr(err, "/nonexistent/model.gguf"),
          "missing model: %s", err);
    CHECK(edgelm_model_load(fixture(F32), &m, err, sizeof err) == 0, "load: %s", err);
    char *dir = check_tmp_dir(), path[1100];
    if (!dir) return check_skip("cannot create a temporary folder");
    snprintf(path, sizeof path, "%s/api.session", dir);
    if (m) {
        two_threads(m);
        one_context(m, path);
        structured(m);
        tokens(m);
    }
    unlink(path);
    rmdir(dir);
    free(dir);
    edgelm_model_free(m);
    return check_done();
}
