/* Multi-turn chat on the fixture: turn 2 prefills only its own tokens (the stats and the cached
 * ids say so) and its greedy reply equals that of a fresh context fed the whole transcript at once;
 * a session saved and loaded into a new context continues with the same reply; corrupted,
 * truncated and mismatched session files are refused with a message and leave the context as it
 * was. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/chat.h"
#include "edgelm/session.h"
#include "tmpfiles.h"

#define F32 "stories260K/stories260K-f32.gguf"
#define N_PREDICT 24

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture(rel), NULL, &m, &err) == ELM_OK, "%s: %s", rel, err.msg);
    return m;
}

static elm_context *context(const elm_model *m, int32_t n_ctx, elm_type kv) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 2, .type_k = kv, .type_v = kv};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static elm_chat *chat_on(elm_context *c) {
    elm_chat_params p = {.tmpl = ELM_TEMPLATE_LLAMA2, .system = "You tell short stories.",
                         .gen = {.n_predict = N_PREDICT, .sampling = elm_sampler_defaults()}};
    p.gen.sampling.temp = 0;
    elm_chat *ch = NULL;
    elm_error err;
    CHECK(elm_chat_new(c, &p, &ch, &err) == ELM_OK, "chat: %s", err.msg);
    return ch;
}

typedef struct ids {
    int32_t v[256];
    int n;
} ids;

static int collect(const char *text, size_t len, int32_t id, void *user) {
    (void)text;
    (void)len;
    ids *r = user;
    if (id >= 0 && r->n < 256) r->v[r->n++] = id;
    return 0;
}

static const char *turn1 = "Tell me a story about a cat.", *turn2 = "What did the cat do next?";
static const char *turn3 = "And how did it end?";

static void multi_turn(elm_model *m) {
    elm_context *c = context(m, 512, ELM_TYPE_F32);
    elm_chat *ch = chat_on(c);
    if (!c || !ch) goto out;
    elm_gen_stats s1, s2;
    elm_error err;
    ids r1 = {0}, r2 = {0};
    CHECK(elm_chat_turn(ch, turn1, collect, &r1, &s1, &err) == ELM_OK, "turn 1: %s", err.msg);
    const int32_t n1 = elm_context_n_past(c);
    CHECK(n1 > s1.prompt_tokens && r1.n > 0, "turn 1 cached %d tokens", n1);
    CHECK(elm_chat_turn(ch, turn2, collect, &r2, &s2, &err) == ELM_OK, "turn 2: %s", err.msg);

    /* turn 2 prefilled exactly its own text (and the reply's held-back last token, if any) */
    char *text = NULL;
    elm_chat_render_turn(ELM_TEMPLATE_LLAMA2, NULL, turn2, false, &text, &err);
    int32_t want[128];
    const int64_t nw = elm_tokenize_special(&m->vocab, text, strlen(text), false, true, want, 128,
                                            &err);
    free(text);
    const int held = s2.prompt_tokens - (int)nw;
    CHECK(held == 0 || held == 1, "turn 2 prefilled %d tokens, its text has %lld", s2.prompt_tokens,
          (long long)nw);
    const int32_t *cached = elm_context_tokens(c);
    CHECK(elm_context_n_past(c) >= n1 + s2.prompt_tokens, "cache shrank");
    CHECK(!memcmp(cached + n1 + held, want, sizeof(int32_t) * (size_t)nw),
          "turn 2's tokens are not the ones cached after turn 1");
    CHECK(s2.prompt_tokens < n1, "turn 2 prefilled %d tokens, the conversation has %d",
          s2.prompt_tokens, n1 + s2.prompt_tokens);
    printf("turn 1: prefilled %d, cached %d; turn 2: prefilled %d (text %lld tokens)\n",
           s1.prompt_tokens, n1, s2.prompt_tokens, (long long)nw);

    /* a fresh context fed the whole transcript at once gives the same reply */
    const int32_t n_transcript = n1 + s2.prompt_tokens;
    int32_t *transcript = malloc(sizeof(int32_t) * (size_t)n_transcript);
    memcpy(transcript, cached, sizeof(int32_t) * (size_t)n_transcript);
    elm_context *f = context(m, 512, ELM_TYPE_F32);
    elm_gen_params gp = {.n_predict = N_PREDICT, .ignore_eos = true, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 0;
    int32_t out[N_PREDICT];
    int32_t n_out = 0;
    elm_gen_stats sf;
    CHECK(elm_generate(f, transcript, n_transcript, &gp, NULL, NULL, out, N_PREDICT, &n_out, &sf,
                       &err) == ELM_OK,
          "fresh: %s", err.msg);
    int same = 0;
    while (same < r2.n && same < n_out && out[same] == r2.v[same]) same++;
    CHECK(same == r2.n && r2.n > 0, "turn 2 reply: %d of %d ids equal the fresh context's", same,
          r2.n);
    free(transcript);
    elm_context_free(f);
out:
    elm_chat_free(ch);
    elm_context_free(c);
}

/* The reply of turn 3 after turns 1, 2, in one chat or after save/load into another. */
static void session_round_trip(elm_model *m, const char *dir, elm_type kv) {
    const char *path = tmp_path(dir, "s.session");
    elm_context *a = context(m, 256, kv), *b = context(m, 256, kv);
    elm_chat *ca = chat_on(a), *cb = chat_on(b);
    if (!ca || !cb) goto out;
    elm_gen_stats st;
    elm_error err;
    ids ra = {0}, rb = {0}, skip = {0};
    elm_chat_turn(ca, turn1, collect, &skip, &st, &err);
    elm_chat_turn(ca, turn2, collect, &skip, &st, &err);
    CHECK(elm_chat_save(ca, path, &err) == ELM_OK, "save: %s", err.msg);
    CHECK(elm_chat_turn(ca, turn3, collect, &ra, &st, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_chat_load(cb, path, &err) == ELM_OK, "load: %s", err.msg);
    CHECK(elm_context_n_past(b) > 0, "nothing loaded");
    CHECK(elm_chat_turn(cb, turn3, collect, &rb, &st, &err) == ELM_OK, "%s", err.msg);
    CHECK(ra.n == rb.n && ra.n > 0 && !memcmp(ra.v, rb.v, sizeof(int32_t) * (size_t)ra.n),
          "%s cache: the restored chat replies differently (%d vs %d ids)",
          elm_type_get(kv)->name, ra.n, rb.n);
out:
    elm_chat_free(ca);
    elm_chat_free(cb);
    elm_context_free(a);
    elm_context_free(b);
}

/* load must fail with ELM_ERR_FORMAT or ELM_ERR_ARG, a message containing `what`, and leave the
 * context's cache untouched */
static void refused(elm_context *c, const char *path, elm_status code, const char *what) {
    elm_error err;
    elm_error_clear(&err);
    const int32_t before = elm_context_n_past(c);
    const elm_status st = elm_session_load(c, path, &err);
    CHECK(st == code && strstr(err.msg, what) && strstr(err.msg, path),
          "%s: status %d, message '%s' (want %d, '%s')", what, st, err.msg, code, what);
    CHECK(elm_context_n_past(c) == before, "failed load changed the context");
}

static void bad_sessions(elm_model *m, const char *dir) {
    const char *good = tmp_path(dir, "good.session");
    elm_context *c = context(m, 256, ELM_TYPE_F32);
    elm_error err;
    const int32_t toks[] = {1, 403, 407, 261, 378, 432, 383, 286};
    elm_forward(c, toks, 8, NULL, false, &err);
    CHECK(elm_session_save(c, good, &err) == ELM_OK, "save: %s", err.msg);
    size_t len = 0;
    unsigned char *buf = file_read(good, &len);
    if (!buf) goto out;
    elm_context_reset(c);
    elm_forward(c, toks, 3, NULL, false, &err);

    const char *p = tmp_path(dir, "flip.session");
    buf[len / 2] ^= 0x40; /* a bit in the KV data */
    file_write(p, buf, len);
    refused(c, p, ELM_ERR_FORMAT, "checksum");
    buf[len / 2] ^= 0x40;

    file_copy(good, p, len - 5, 0);
    refused(c, p, ELM_ERR_FORMAT, "header implies");
    file_copy(good, p, len, 3);
    refused(c, p, ELM_ERR_FORMAT, "header implies");
    file_write(p, buf, 20);
    refused(c, p, ELM_ERR_FORMAT, "not an edgelm session");
    buf[0] = 'X';
    file_write(p, buf, len);
    refused(c, p, ELM_ERR_FORMAT, "bad magic");
    buf[0] = 'E';
    buf[8] = 9; /* version */
    file_write(p, buf, len);
    refused(c, p, ELM_ERR_FORMAT, "version 9");
    buf[8] = 1;
    int32_t huge = 1 << 20; /* n_tokens */
    memcpy(buf + 64, &huge, 4);
    file_write(p, buf, len);
    refused(c, p, ELM_ERR_ARG, "session holds 1048576 tokens");
    refused(c, tmp_path(dir, "missing.session"), ELM_ERR_IO, "missing.session");

    /* same shape, other weights; other cache types; shorter context */
    elm_model *q4 = load("stories260K/reference-quants/llamacpp-q4_0-pure.gguf");
    elm_context *cq = q4 ? context(q4, 256, ELM_TYPE_F32) : NULL;
    if (cq) refused(cq, good, ELM_ERR_ARG, "other weights");
    elm_context *c8 = context(m, 256, ELM_TYPE_Q8_0);
    if (c8) refused(c8, good, ELM_ERR_ARG, "KV cache is f32/f32");
    elm_context *small = context(m, 4, ELM_TYPE_F32);
    if (small) refused(small, good, ELM_ERR_ARG, "session holds 8 tokens, the context 4");
    elm_context_free(cq);
    elm_context_free(c8);
    elm_context_free(small);
    elm_model_free(q4);
    free(buf);
out:
    elm_context_free(c);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *m = load(F32);
    char *dir = tmp_dir_new();
    CHECK(dir != NULL, "temp dir");
    if (m && dir) {
        multi_turn(m);
        session_round_trip(m, dir, ELM_TYPE_F32);
        session_round_trip(m, dir, ELM_TYPE_Q8_0);
        bad_sessions(m, dir);
    }
    tmp_dir_remove(dir);
    elm_model_free(m);
    return check_done();
}
