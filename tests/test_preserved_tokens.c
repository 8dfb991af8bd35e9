/* Preserved control tokens: the tool-call markers a template writes as control tokens, looked up
 * by text (elm_chat_tool_preserved_ids), decoded as their text (elm_detok_preserve) and seen as
 * their text by a grammar's vocabulary (elm_grammar_vocab_new_preserved), so a lazy matcher's
 * trigger fires on them and the grammar can require the closing one; without preserving (a
 * request without tools) a control token stays without text, as before. The vocabulary is built
 * here: the fixtures' vocabularies have no tool-call control tokens. LFM2's calls go through it
 * whole: grammar, decoded reply, parsed calls, and through elm_generate (elm_gen_params.preserved)
 * on a tiny model given this vocabulary; Mistral's through the grammar and the decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/chat.h"
#include "edgelm/grammar.h"
#include "shapes/synth_tiny.h"

/* LFM2's opening marker first: a model whose logits are all equal draws it (check_generate) */
enum { LFM2_OPEN, UNK, BOS, EOS, OPEN, CLOSE, EOT, X, Y, HI, LFM2_CLOSE, NOW, CALLS, ARGS, NAME,
       BRACES, N_TOKENS };

/* A SentencePiece-style vocabulary of n tokens (at least N_TOKENS) whose Hermes, LFM2 and Mistral
 * markers and end of turn are control tokens; ids from N_TOKENS on are normal tokens "~ID", text
 * no grammar here matches (room to stand in for a model's vocabulary). */
static bool build_vocab(elm_vocab *v, int32_t n) {
    static const char *const pieces[N_TOKENS] = {
        [UNK] = "<unk>", [BOS] = "<s>", [EOS] = "</s>", [OPEN] = "<tool_call>",
        [CLOSE] = "</tool_call>", [EOT] = "<|im_end|>", [X] = "x", [Y] = "y", [HI] = "hi",
        [LFM2_OPEN] = "<|tool_call_start|>", [LFM2_CLOSE] = "<|tool_call_end|>", [NOW] = "[now()]",
        [CALLS] = "[TOOL_CALLS]", [ARGS] = "[ARGS]", [NAME] = "now", [BRACES] = "{}"};
    static const int32_t types[N_TOKENS] = {
        [UNK] = ELM_TOKEN_UNKNOWN, [BOS] = ELM_TOKEN_CONTROL, [EOS] = ELM_TOKEN_CONTROL,
        [OPEN] = ELM_TOKEN_CONTROL, [CLOSE] = ELM_TOKEN_CONTROL, [EOT] = ELM_TOKEN_CONTROL,
        [X] = ELM_TOKEN_NORMAL, [Y] = ELM_TOKEN_NORMAL, [HI] = ELM_TOKEN_NORMAL,
        [LFM2_OPEN] = ELM_TOKEN_CONTROL, [LFM2_CLOSE] = ELM_TOKEN_CONTROL, [NOW] = ELM_TOKEN_NORMAL,
        [CALLS] = ELM_TOKEN_CONTROL, [ARGS] = ELM_TOKEN_CONTROL, [NAME] = ELM_TOKEN_NORMAL,
        [BRACES] = ELM_TOKEN_NORMAL};
    elm_error err;
    memset(v, 0, sizeof *v);
    if (elm_vocab_alloc(v, n, true, &err)) return false;
    for (int32_t i = 0; i < n; i++) {
        char filler[16];
        const char *piece = i < N_TOKENS ? pieces[i] : filler;
        snprintf(filler, sizeof filler, "~%d", (int)i);
        if (elm_vocab_set_piece(v, i, piece, strlen(piece), &err)) return false;
        v->types[i] = i < N_TOKENS ? types[i] : ELM_TOKEN_NORMAL;
    }
    v->unk_id = UNK, v->bos_id = BOS, v->eos_id = EOS;
    v->byte_fallback = false;
    return elm_vocab_finalize(v, "test vocab", &err) == ELM_OK;
}

static void check_lookup(const elm_vocab *v) {
    int32_t ids[ELM_TOOL_PRESERVED_MAX];
    const int32_t n = elm_chat_tool_preserved_ids(ELM_TEMPLATE_QWEN3, v, ids);
    CHECK(n == 2 && ids[0] == OPEN && ids[1] == CLOSE, "qwen3: %d ids", n);
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_LFM2, v, ids) == 2 && ids[0] == LFM2_OPEN &&
              ids[1] == LFM2_CLOSE, "lfm2");
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_MINISTRAL3, v, ids) == 2 && ids[0] == CALLS &&
              ids[1] == ARGS, "ministral3: [TOOL_CALLS] and [ARGS]");
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_MISTRAL_SMALL32, v, ids) == 2 && ids[0] == CALLS &&
              ids[1] == ARGS, "mistral-small32: [CALL_ID] is not in this vocabulary");
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_MISTRAL_NEMO, v, ids) == 1 && ids[0] == CALLS,
          "mistral-nemo: [TOOL_CALLS]");
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_LLAMA31, v, ids) == 0, "llama31 has none");
    CHECK(elm_chat_tool_preserved_ids(ELM_TEMPLATE_CHATML, v, ids) == 0, "chatml has no tools");
}

/* The text the decoder writes for ids [n], preserving `keep` [n_keep]. */
static const char *decode(const elm_vocab *v, const int32_t *ids, int n, const int32_t *keep,
                          int32_t n_keep) {
    static char all[256];
    char piece[64];
    size_t len = 0;
    elm_detok d;
    elm_detok_init(&d, v, false);
    if (keep) elm_detok_preserve(&d, keep, n_keep);
    for (int i = 0; i < n; i++) {
        const size_t k = elm_detok_push(&d, ids[i], piece, sizeof piece);
        memcpy(all + len, piece, k);
        len += k;
    }
    all[len] = '\0';
    return all;
}

static void check_detok(const elm_vocab *v) {
    const int32_t ids[] = {HI, OPEN, X, CLOSE, EOT};
    const int32_t keep[] = {OPEN, CLOSE, HI}; /* HI is normal: preserving it changes nothing */
    CHECK(!strcmp(decode(v, ids, 5, NULL, 0), "hix"), "without preserving: markers dropped");
    CHECK(!strcmp(decode(v, ids, 5, keep, 3), "hi<tool_call>x</tool_call>"),
          "preserved: markers as text, the end of turn still none (%s)", decode(v, ids, 5, keep, 3));
    char buf[32];
    CHECK(elm_token_to_bytes(v, OPEN, buf, sizeof buf) == 0, "token bytes stay empty");
}

/* A matcher of `root ::= "x" "</tool_call>"` lazy from "<tool_call>" over gv. */
static elm_grammar_matcher *lazy_matcher(const elm_grammar *g, const elm_grammar_vocab *gv) {
    elm_grammar_matcher *m = elm_grammar_matcher_new(g, gv);
    CHECK(m && elm_grammar_matcher_set_trigger(m, "<tool_call>", NULL) == ELM_OK, "matcher");
    return m;
}

static void check_grammar(const elm_vocab *v) {
    const char *gbnf = "root ::= \"x\" \"</tool_call>\"";
    elm_grammar *g = NULL;
    elm_error err;
    CHECK(elm_grammar_parse(gbnf, strlen(gbnf), "test", &g, &err) == ELM_OK, "parse");
    const int32_t ends[] = {EOS, EOT}, keep[] = {OPEN, CLOSE, -1};
    elm_grammar_vocab *plain = elm_grammar_vocab_new(v, ends, 2);
    elm_grammar_vocab *tools = elm_grammar_vocab_new_preserved(v, ends, 2, keep, 3);
    CHECK(g && plain && tools, "vocabularies");
    if (!g || !plain || !tools) goto out;

    /* without preserving, the opening token has no text: the trigger is never seen */
    elm_grammar_matcher *m = lazy_matcher(g, plain);
    CHECK(m && elm_grammar_accept(m, HI, &err) == ELM_OK && elm_grammar_accept(m, OPEN, &err) ==
                                                                ELM_OK,
          "plain: text and the opening");
    CHECK(m && elm_grammar_allows(m, Y), "plain: still waiting after the opening token");
    elm_grammar_matcher_free(m);
    /* and an eager grammar can never allow the closing token */
    m = elm_grammar_matcher_new(g, plain);
    CHECK(m && elm_grammar_accept(m, X, &err) == ELM_OK && !elm_grammar_allows(m, CLOSE),
          "plain: the closing token has no text to match");
    elm_grammar_matcher_free(m);

    /* preserved: the opening token fires the trigger, the grammar then holds the call */
    m = lazy_matcher(g, tools);
    CHECK(m && elm_grammar_allows(m, Y) && elm_grammar_accept(m, HI, &err) == ELM_OK,
          "tools: text before the call");
    CHECK(m && elm_grammar_accept(m, OPEN, &err) == ELM_OK, "tools: the opening token");
    CHECK(m && !elm_grammar_allows(m, Y) && elm_grammar_allows(m, X), "tools: the grammar holds");
    CHECK(m && elm_grammar_accept(m, X, &err) == ELM_OK, "tools: x");
    CHECK(m && elm_grammar_allows(m, CLOSE) && !elm_grammar_allows(m, EOT) &&
              !elm_grammar_allows(m, OPEN),
          "tools: the closing token is required");
    float logits[N_TOKENS] = {0};
    CHECK(m && elm_grammar_mask(m, logits) == 1 && logits[CLOSE] == 0, "tools: mask");
    CHECK(m && elm_grammar_accept(m, CLOSE, &err) == ELM_OK && elm_grammar_allows(m, EOT) &&
              elm_grammar_done(m),
          "tools: complete after the closing token");
    elm_grammar_matcher_free(m);
out:
    elm_grammar_vocab_free(plain);
    elm_grammar_vocab_free(tools);
    elm_grammar_free(g);
}

/* LFM2's tool grammar, lazy as the server runs it, over the vocabulary with its markers preserved:
 * text, the opening control token, the call, then only the closing control token, then the end. */
static void check_lfm2_call(const elm_vocab *v) {
    const char *tools = "[{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_grammar *g = NULL;
    elm_error err;
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_LFM2, tools, NULL, true, true, &gbnf, &trigger, &err) ==
                  ELM_OK && elm_grammar_parse(gbnf, strlen(gbnf), "tools", &g, &err) == ELM_OK,
          "lfm2 grammar: %s", err.msg);
    int32_t keep[ELM_TOOL_PRESERVED_MAX];
    const int32_t n_keep = elm_chat_tool_preserved_ids(ELM_TEMPLATE_LFM2, v, keep);
    const int32_t ends[] = {EOS, EOT};
    elm_grammar_vocab *gv = elm_grammar_vocab_new_preserved(v, ends, 2, keep, n_keep);
    elm_grammar_matcher *m = g && gv ? elm_grammar_matcher_new(g, gv) : NULL;
    CHECK(m && elm_grammar_matcher_set_trigger(m, trigger, &err) == ELM_OK, "lfm2 matcher");
    const int32_t ids[] = {HI, LFM2_OPEN, NOW, LFM2_CLOSE};
    for (int i = 0; m && i < 4; i++)
        CHECK(elm_grammar_accept(m, ids[i], &err) == ELM_OK, "lfm2 token %d: %s", i, err.msg);
    CHECK(m && elm_grammar_done(m) && elm_grammar_allows(m, EOT), "lfm2 call complete");
    elm_grammar_matcher_free(m);
    m = g && gv ? elm_grammar_matcher_new(g, gv) : NULL;
    CHECK(m && elm_grammar_matcher_set_trigger(m, trigger, &err) == ELM_OK &&
              elm_grammar_accept(m, LFM2_OPEN, &err) == ELM_OK &&
              elm_grammar_accept(m, NOW, &err) == ELM_OK && !elm_grammar_allows(m, EOT) &&
              !elm_grammar_allows(m, HI) && elm_grammar_allows(m, LFM2_CLOSE),
          "lfm2: only the closing token after the call");
    const int32_t reply[] = {HI, LFM2_OPEN, NOW, LFM2_CLOSE};
    CHECK(!strcmp(decode(v, reply, 4, keep, n_keep), "hi<|tool_call_start|>[now()]<|tool_call_end|>"),
          "lfm2 reply text");
    elm_tool_calls c;
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_LFM2, tools, decode(v, reply, 4, keep, n_keep), &c,
                                    &err) == ELM_OK && c.n == 1 && !strcmp(c.content, "hi"),
          "lfm2 reply parsed: %s", err.msg);
    elm_tool_calls_free(&c);
    elm_grammar_matcher_free(m);
    elm_grammar_vocab_free(gv);
    elm_grammar_free(g);
    free(gbnf);
}

/* Mistral's calls, written with two control tokens, under the tool grammar of ministral3 lazy
 * from its trigger: after text, [TOOL_CALLS] opens the call, [ARGS] is required after the name,
 * and the detokenizer writes the call for the parser. */
static void check_mistral(const elm_vocab *v) {
    static const char tools[] = "[{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_grammar *g = NULL;
    elm_error err;
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_MINISTRAL3, tools, NULL, true, true, &gbnf, &trigger,
                                &err) == ELM_OK &&
              elm_grammar_parse(gbnf, strlen(gbnf), "tools", &g, &err) == ELM_OK,
          "ministral3 grammar: %s", err.msg);
    int32_t keep[ELM_TOOL_PRESERVED_MAX];
    const int32_t n_keep = elm_chat_tool_preserved_ids(ELM_TEMPLATE_MINISTRAL3, v, keep);
    const int32_t ends[] = {EOS};
    elm_grammar_vocab *gv = elm_grammar_vocab_new_preserved(v, ends, 1, keep, n_keep);
    elm_grammar_matcher *m = g && gv ? elm_grammar_matcher_new(g, gv) : NULL;
    CHECK(m && elm_grammar_matcher_set_trigger(m, trigger, &err) == ELM_OK, "matcher: %s", err.msg);
    if (m) {
        CHECK(elm_grammar_accept(m, HI, &err) == ELM_OK && elm_grammar_accept(m, CALLS, &err) == ELM_OK,
              "text, then [TOOL_CALLS]");
        CHECK(elm_grammar_allows(m, NAME) && !elm_grammar_allows(m, ARGS) && !elm_grammar_allows(m, HI),
              "the name after the opening");
        CHECK(elm_grammar_accept(m, NAME, &err) == ELM_OK && elm_grammar_allows(m, ARGS) &&
                  !elm_grammar_allows(m, BRACES) && !elm_grammar_allows(m, EOS),
              "[ARGS] required after the name");
        CHECK(elm_grammar_accept(m, ARGS, &err) == ELM_OK && elm_grammar_accept(m, BRACES, &err) == ELM_OK &&
                  elm_grammar_allows(m, EOS) && elm_grammar_allows(m, CALLS),
              "after the arguments: the end, or another call");
    }
    const int32_t reply[] = {HI, CALLS, NAME, ARGS, BRACES};
    CHECK(!strcmp(decode(v, reply, 5, keep, n_keep), "hi[TOOL_CALLS]now[ARGS]{}"), "decoded: %s",
          decode(v, reply, 5, keep, n_keep));
    elm_grammar_matcher_free(m);
    elm_grammar_vocab_free(gv);
    elm_grammar_free(g);
    free(gbnf);
}

/* The text elm_generate writes, gathered by its callback. */
typedef struct gen_text {
    char s[256];
    size_t n;
} gen_text;

static int gather(const char *text, size_t len, int32_t id, void *user) {
    (void)id;
    gen_text *t = user;
    if (t->n + len < sizeof t->s) memcpy(t->s + t->n, text, len), t->n += len;
    t->s[t->n] = '\0';
    return 0;
}

/* Greedy generation of n_predict tokens after BOS under gp, speculative with sp (NULL: plain
 * elm_generate), into ids [*n] and text. */
static void generate(elm_model *m, const elm_gen_params *gp, const elm_spec_params *sp,
                     int32_t *ids, int32_t *n, gen_text *text) {
    elm_context *c = NULL;
    elm_context_params cp = {.n_ctx = 32};
    elm_gen_stats st;
    elm_error err;
    const int32_t prompt[] = {BOS};
    *n = 0;
    *text = (gen_text){0};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK &&
              elm_generate_speculative(c, prompt, 1, gp, sp, gather, text, ids, gp->n_predict, n,
                                       &st, NULL, &err) == ELM_OK,
          "generate: %s", err.msg);
    elm_context_free(c);
}

/* Through the library's generation (elm_generate, as the Python package and apps call it, and
 * speculative decoding): a tiny model on this vocabulary whose logits are all 0 (its output norm
 * zeroed), so greedy draws the lowest id allowed, LFM2's opening control token when the text is
 * free. With the template's preserved ids the lazy tool grammar sees its trigger in that token,
 * then holds the call to its closing token, and the text keeps both markers for the parser;
 * without them (a request without tools) the same token comes out as no text and the grammar
 * never wakes. */
static void check_generate(void) {
    const elm_synth_tiny o = {.arch = "llama",
                              .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf"), .seed = 3};
    static const char tools[] = "[{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    elm_model *m = NULL;
    elm_grammar *g = NULL;
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err)) {
        CHECK(0, "tiny model: %s", err.msg);
        return;
    }
    elm_vocab_free(&m->vocab);
    const bool ok = build_vocab(&m->vocab, m->hp.n_vocab) &&
                    elm_chat_tool_grammar(ELM_TEMPLATE_LFM2, tools, NULL, true, true, &gbnf,
                                          &trigger, &err) == ELM_OK &&
                    elm_grammar_parse(gbnf, strlen(gbnf), "tools", &g, &err) == ELM_OK;
    CHECK(ok, "the model's vocabulary and the lfm2 grammar: %s", err.msg);
    if (!ok) goto out;
    memset(m->output_norm->data, 0, m->output_norm->nbytes);

    int32_t keep[ELM_TOOL_PRESERVED_MAX], ids[8], n;
    gen_text text;
    elm_gen_params gp = {.n_predict = 8, .sampling = elm_sampler_defaults(), .grammar = g,
                         .grammar_trigger = trigger};
    gp.sampling.temp = 0;
    gp.preserved = keep;
    gp.n_preserved = elm_chat_tool_preserved_ids(ELM_TEMPLATE_LFM2, &m->vocab, keep);
    generate(m, &gp, NULL, ids, &n, &text);
    CHECK(n == 3 && ids[0] == LFM2_OPEN && ids[1] == NOW && ids[2] == LFM2_CLOSE,
          "tools: the trigger seen, the call held, then the end (%d tokens: %d %d %d)", n, ids[0],
          ids[1], ids[2]);
    CHECK(!strcmp(text.s, "<|tool_call_start|>[now()]<|tool_call_end|>"), "tools: text %s", text.s);
    elm_tool_calls calls;
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_LFM2, tools, text.s, &calls, &err) == ELM_OK &&
              calls.n == 1 && !strcmp(calls.calls[0].name, "now"),
          "tools: the call parsed: %s", err.msg);
    elm_tool_calls_free(&calls);

    gp.preserved = NULL, gp.n_preserved = 0; /* the same grammar, markers not preserved */
    generate(m, &gp, NULL, ids, &n, &text);
    CHECK(n == 8 && ids[1] == LFM2_OPEN && !strcmp(text.s, ""),
          "not preserved: the trigger never seen, no text (%d tokens: %s)", n, text.s);
    gp.grammar = NULL, gp.grammar_trigger = NULL; /* no tools: free text, control tokens silent */
    generate(m, &gp, NULL, ids, &n, &text);
    CHECK(n == 8 && ids[0] == LFM2_OPEN && ids[7] == LFM2_OPEN && !strcmp(text.s, ""),
          "without tools: %d tokens, text %s", n, text.s);
    gp.preserved = keep; /* speculative decoding (no grammar) writes them as text too */
    gp.n_preserved = elm_chat_tool_preserved_ids(ELM_TEMPLATE_LFM2, &m->vocab, keep);
    const elm_spec_params lookup = {.lookup = 2};
    generate(m, &gp, &lookup, ids, &n, &text);
    CHECK(n == 8 && !strncmp(text.s, "<|tool_call_start|><|tool_call_start|>", 38),
          "speculative, preserved: %d tokens, text %s", n, text.s);
out:
    elm_grammar_free(g);
    free(gbnf);
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_vocab v;
    if (!build_vocab(&v, N_TOKENS)) {
        CHECK(0, "vocabulary");
        return check_done();
    }
    check_lookup(&v);
    check_detok(&v);
    check_grammar(&v);
    check_lfm2_call(&v);
    check_mistral(&v);
    check_generate();
    elm_vocab_free(&v);
    return check_done();
}
