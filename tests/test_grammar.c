/* The grammar engine (grammar.h): GBNF parsed and matched byte by byte (literals, classes over
 * UTF-8, repetitions, recursion), its errors, and the token masks of a matcher over real
 * vocabularies checked token by token against matching the text itself; then generation by the
 * real stories260K model held to a grammar, greedy and sampled. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/generate.h"
#include "edgelm/grammar.h"
#include "edgelm/model.h"

static elm_grammar *parse(const char *text) {
    elm_grammar *g = NULL;
    elm_error err;
    elm_status st = elm_grammar_parse(text, strlen(text), "test.gbnf", &g, &err);
    CHECK(st == ELM_OK, "%s: %s", text, err.msg);
    return g;
}

/* want: 2 complete match, 1 proper prefix, 0 neither */
static void match(const elm_grammar *g, const char *text, int want) {
    if (!g) return;
    const int got = elm_grammar_match_text(g, text, strlen(text));
    CHECK(got == want, "'%s': %d, want %d", text, got, want);
}

static void check_matching(void) {
    elm_grammar *g = parse("root ::= \"ab\" | \"c\"");
    match(g, "ab", 2), match(g, "a", 1), match(g, "", 1), match(g, "abc", 0), match(g, "b", 0);
    elm_grammar_free(g);

    g = parse("root ::= [a-z]+ \"!\"  # a word and a bang\n");
    match(g, "hi!", 2), match(g, "hi", 1), match(g, "!", 0), match(g, "Hi!", 0);
    elm_grammar_free(g);

    /* a negated class takes every code point but its own, as UTF-8 */
    g = parse("root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"");
    match(g, "\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"", 2);
    match(g, "\"\xC3", 1);      /* half a character: a prefix */
    match(g, "\"\xC3\x28", 0);  /* not UTF-8 */
    match(g, "\"\xED\xA0\x80", 0); /* a surrogate */
    match(g, "\"a\\", 0);
    elm_grammar_free(g);

    g = parse("root ::= [\\u00e9-\\U0001F600]");
    match(g, "\xC3\xA9", 2), match(g, "\xF0\x9F\x98\x80", 2), match(g, "\xF0\x9F\x98\x81", 0);
    match(g, "\xC3\xA8", 0), match(g, "\xE4\xB8\xAD", 2);
    elm_grammar_free(g);

    g = parse("root ::= .");
    match(g, "\n", 2), match(g, "\xF4\x8F\xBF\xBF", 2), match(g, "\xF4\x90", 0);
    elm_grammar_free(g);

    g = parse("root ::= x{2,4} y{0,} z?\nx ::= \"ab\"\ny ::= \"c\"\nz ::= \"d\"");
    match(g, "ab", 1), match(g, "abab", 2), match(g, "abababab", 2), match(g, "ababababab", 0);
    match(g, "ababcccd", 2), match(g, "ababdd", 0);
    elm_grammar_free(g);

    g = parse("root ::= (\"a\" | \"b\"){3} (\"-\" [0-9]){1,2}");
    match(g, "aba-1", 2), match(g, "aba-1-2", 2), match(g, "aba-1-2-3", 0), match(g, "ab-1", 0);
    elm_grammar_free(g);

    /* recursion (not on the left), across lines inside parentheses */
    g = parse("root ::= obj\nobj ::= \"{\" (\n  kv (\",\" kv)*\n)? \"}\"\nkv ::= [a-z] \":\" obj");
    match(g, "{a:{},b:{c:{}}}", 2), match(g, "{a:{b:{", 1), match(g, "{a:{},}", 0);
    elm_grammar_free(g);

    /* an empty class matches nothing (fuzz_grammar's empty-class) */
    g = parse("root ::= \"a\" []? [^\\x00-\\U0010FFFF]?");
    match(g, "a", 2), match(g, "ab", 0);
    elm_grammar_free(g);

    g = parse("root ::= \"\\x41\\u20ac\\t\\n\\\\\"");
    match(g, "A\xE2\x82\xAC\t\n\\", 2);
    elm_grammar_free(g);
}

static void bad(const char *text, const char *want) {
    elm_grammar *g = NULL;
    elm_error err;
    elm_status st = elm_grammar_parse(text, strlen(text), "bad.gbnf", &g, &err);
    CHECK(st != ELM_OK && !g && strstr(err.msg, want) && !strncmp(err.msg, "bad.gbnf", 8),
          "'%s': got %d '%s', want '%s'", text, st, st ? err.msg : "", want);
    elm_grammar_free(g);
}

static void check_errors(void) {
    bad("root ::= \"a\" undefined", "rule undefined is used but not defined");
    bad("other ::= \"a\"", "no rule named root");
    bad("root ::= \"a\" @", "bad.gbnf:1:14: unexpected character @");
    bad("root ::= r\nr ::= r \"a\" | \"b\"", "left-recursive");
    bad("root ::= (\"a\"?)*", "left-recursive");
    bad("root ::= \"abc", "unterminated string literal");
    bad("root ::= [a-", "unterminated character class");
    bad("root ::= [z-a]", "class range is reversed");
    bad("root ::= \"a\"{3,2}", "n < m");
    bad("root ::= .+++ \"x\"", "a repetition of a repetition"); /* fuzz_grammar: a 37 s match */
    bad("root ::= \"a\"* ?", "a repetition of a repetition");
    bad("root ::= [a-z]{2}+", "a repetition of a repetition");
    bad("root ::= \"a\"{10001}", "over 10000");
    static char big[8192] = "root ::=";
    for (int i = 0; i < 450; i++) strcat(big, " \"a\"{10000}");
    bad(big, "too large");
    bad("root ::= *", "nothing before it");
    bad("root ::= \"\\q\"", "unknown escape");
    bad("root ::= \"\\uD800\"", "not a Unicode scalar value");
    bad("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
    bad("root ::= (\"a\"", "expected )");
    bad("root = \"a\"", "expected ::=");
    bad("root ::= \"\xC3\x28\"", "invalid UTF-8");
    char deep[1200] = "root ::= ";
    for (int i = 0; i < 300; i++) strcat(deep, "(");
    bad(deep, "nested over 256");
}

static char *token_text(const elm_vocab *v, int32_t id, size_t *len) {
    static char buf[1100];
    *len = elm_token_to_bytes(v, id, buf, sizeof buf - 1);
    return buf;
}

/* After each `stride`-th prefix of `text`, fed token by token (the tokenizer's ids), the
 * matcher's mask agrees for every token with a second matcher fed the same tokens that steps the
 * token's bytes one by one (elm_grammar_allows, no mask); with `whole`, also with matching prefix
 * + the token's bytes from the start. */
static void check_masks(const char *vocab_rel, const char *gbnf, const char *text, int stride,
                        bool whole) {
    elm_vocab v;
    elm_error err;
    if (elm_vocab_load(fixture(vocab_rel), &v, &err)) {
        CHECK(0, "%s: %s", vocab_rel, err.msg);
        return;
    }
    elm_grammar *g = parse(gbnf);
    const int32_t end = v.eos_id;
    elm_grammar_vocab *gv = elm_grammar_vocab_new(&v, &end, 1);
    elm_grammar_matcher *m = g && gv ? elm_grammar_matcher_new(g, gv) : NULL;
    elm_grammar_matcher *m2 = g && gv ? elm_grammar_matcher_new(g, gv) : NULL;
    CHECK(m && m2, "%s: matcher", vocab_rel);
    int32_t ids[256];
    const int64_t n = elm_tokenize(&v, text, strlen(text), false, ids, 256, &err);
    float *logits = malloc(sizeof *logits * (size_t)v.n_tokens);
    char *prefix = calloc(1, strlen(text) + 1200);
    size_t plen = 0;
    int mismatches = 0, checked = 0;
    for (int64_t k = 0; m && m2 && k <= n && k < 256; k++) {
        if (k % stride == 0 || k == n) {
            for (int32_t i = 0; i < v.n_tokens; i++) logits[i] = 0;
            const int32_t n_allowed = elm_grammar_mask(m, logits);
            int32_t count = 0;
            for (int32_t t = 0; t < v.n_tokens; t++) {
                const bool want = elm_grammar_allows(m2, t);
                const bool by_mask = logits[t] == 0, by_allows = elm_grammar_allows(m, t);
                count += by_mask;
                if (by_mask != want || by_allows != want) mismatches++;
                if (whole) {
                    size_t len;
                    const char *b = token_text(&v, t, &len);
                    memcpy(prefix + plen, b, len);
                    const int r = elm_grammar_match_text(g, prefix, plen + len);
                    if ((t == end ? elm_grammar_match_text(g, prefix, plen) == 2
                                  : len > 0 && r > 0) != want)
                        mismatches++;
                }
                checked++;
            }
            CHECK(count == n_allowed, "%s: mask counts %d, says %d", vocab_rel, count, n_allowed);
        }
        if (k == n) break;
        size_t len;
        const char *b = token_text(&v, ids[k], &len);
        const elm_status st = elm_grammar_accept(m, ids[k], &err);
        CHECK(elm_grammar_accept(m2, ids[k], &err) == ELM_OK, "%s: second matcher", vocab_rel);
        CHECK(st == ELM_OK, "%s: token %lld (%d): %s", vocab_rel, (long long)k, ids[k], err.msg);
        if (st) break;
        memcpy(prefix + plen, b, len);
        plen += len;
    }
    CHECK(checked > 0 && mismatches == 0, "%s: %d of %d token checks disagree", vocab_rel,
          mismatches, checked);
    CHECK(!m || elm_grammar_allows(m, end), "%s: the end token is refused after a full match",
          vocab_rel);
    free(prefix);
    free(logits);
    elm_grammar_matcher_free(m);
    elm_grammar_matcher_free(m2);
    elm_grammar_vocab_free(gv);
    elm_grammar_free(g);
    elm_vocab_free(&v);
}

static const char json_gbnf[] =
    "root ::= ws obj\nobj ::= \"{\" ws members? ws \"}\"\n"
    "members ::= pair (ws \",\" ws pair)*\n"
    "pair ::= string ws \":\" ws value\n"
    "value ::= string | number | obj | \"[\" ws (value (ws \",\" ws value)*)? ws \"]\" | \"true\" "
    "| \"false\" | \"null\"\n"
    "string ::= \"\\\"\" ([^\"\\\\\\x00-\\x1f] | \"\\\\\" [\"\\\\/bfnrt])* \"\\\"\"\n"
    "number ::= \"-\"? ([0-9] | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})?\n"
    "ws ::= [ \\t\\n]{0,20}\n";

static const char json_doc[] =
    "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"tags\": [\"math\", \"caf\xC3\xA9\", "
    "\"\xE6\x95\xB0\xE5\xAD\xA6\"], \"ok\": true, \"x\": {\"y\": -0.25}}";

/* Generation by stories260K under a grammar: greedy and at several seeds, the text is always a
 * complete match (the grammar is finite, so it must end within n_predict). */
static void check_generation(void) {
    elm_model *mdl = NULL;
    elm_error err;
    elm_load_opts lo = {0};
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), &lo, &mdl, &err)) {
        CHECK(0, "load: %s", err.msg);
        return;
    }
    const elm_context_params cp = {.n_ctx = 256, .n_threads = 1};
    elm_context *c = NULL;
    if (elm_context_new(mdl, &cp, &c, &err)) {
        CHECK(0, "context: %s", err.msg);
        elm_model_free(mdl);
        return;
    }
    elm_grammar *g = parse("root ::= \"Once upon a time, \" name \" had \" [0-9]{1,2} \" \" "
                           "(\"cats\" | \"dogs\") \".\"\nname ::= [A-Z] [a-z]{1,8}");
    const char *prompt = "Tom said";
    int32_t ids[64];
    const int64_t n = elm_tokenize(&mdl->vocab, prompt, strlen(prompt), true, ids, 64, &err);
    for (int run = 0; g && run < 6; run++) {
        elm_context_reset(c);
        elm_gen_params gp = {.n_predict = 64, .sampling = elm_sampler_defaults(), .grammar = g};
        gp.sampling.temp = run == 0 ? 0.0f : 0.5f + 0.3f * (float)run;
        gp.sampling.seed = (uint64_t)run;
        int32_t out[64], n_out = 0;
        elm_gen_stats stats;
        const elm_status st =
            elm_generate(c, ids, (int32_t)n, &gp, NULL, NULL, out, 64, &n_out, &stats, &err);
        CHECK(st == ELM_OK, "generate: %s", err.msg);
        char *text = elm_detokenize(&mdl->vocab, out, n_out, false);
        CHECK(text && elm_grammar_match_text(g, text, strlen(text)) == 2 && n_out < 64,
              "run %d: '%s' (%d tokens) is not a complete match", run, text ? text : "", n_out);
        free(text);
    }
    elm_grammar_free(g);
    elm_context_free(c);
    elm_model_free(mdl);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    check_matching();
    check_errors();
    check_masks("stories260K/stories260K-f32.gguf", json_gbnf, json_doc, 1, true);
    check_masks("vocab/ggml-vocab-llama-spm.gguf", json_gbnf, json_doc, 5, false);
    check_masks("vocab/ggml-vocab-qwen2.gguf", json_gbnf, json_doc, 5, false);
    check_generation();
    return check_done();
}
