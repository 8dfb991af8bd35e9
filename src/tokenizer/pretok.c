/* Regex pre-tokenizers of BPE vocabularies (see pretok.h).
 *
 * The patterns are those the models' own Hugging Face tokenizers declare (GPT-2's ByteLevel
 * default; the Split patterns of Llama 3's, Qwen2's and Qwen3.5's tokenizer.json; StarCoder's
 * Digits; DeepSeek-Coder's five Splits; o200k's, gpt-oss's and GPT-4o's, which keeps case runs and
 * contractions together), and Gemma 4's cut at newline runs as llama.cpp makes it;
 * the GGUF names and their aliases are llama.cpp's tokenizer.ggml.pre values. PCRE2 runs them with UTF and Unicode
 * properties (\p{L}, \p{N}, Unicode \s), and with PCRE2_MATCH_INVALID_UTF so that text which is
 * not valid UTF-8 is still split (its bad bytes never match) instead of being refused. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"

#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

/* Each pre-tokenizer is a list of regexes applied in turn, every one to the pieces the previous
 * ones left (a Hugging Face Sequence of Split "Isolated" steps). Digits(individual_digits) is the
 * Split "\p{N}"; ByteLevel(use_regex) the Split GPT2_REGEX. */
static const struct {
    const char *name;
    const char *patterns[ELM_PRETOK_MAX_REGEX + 1]; /* NULL-terminated */
} known[] = {
    {"gpt-2", {GPT2_REGEX}},
    {"llama-bpe", {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
                   "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {"qwen2", {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
               "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    /* Qwen3.5: marks (\p{M}) join the letters they follow */
    {"qwen35", {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?"
                "[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    /* StarCoder's tokenizer.json: Digits(individual_digits) then ByteLevel(use_regex) */
    {"refact", {"\\p{N}", GPT2_REGEX}},
    {"deepseek-coder", {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
                        "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"}},
    /* o200k (gpt-oss's o200k_harmony): a word is a run of capitals then of small letters (marks
     * and other letters either), with its contraction; PCRE2 runs the tokenizer.json pattern that
     * llama.cpp rewrites for its own regex engine */
    {"gpt-4o", {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
                "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?"
                "[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    /* Gemma 4 (SentencePiece-style BPE on raw UTF-8): only runs of newlines are cut apart */
    {"gemma4", {"[^\\n]+|[\\n]+"}},
};

/* Other tokenizer.ggml.pre names that llama.cpp runs with one of the lists above. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"phi-2", "gpt-2"},       {"mpt", "gpt-2"},        {"llama3", "llama-bpe"},
    {"llama-v3", "llama-bpe"}, {"falcon3", "llama-bpe"}, {"pixtral", "llama-bpe"},
    {"deepseek-r1-qwen", "qwen2"}, {"megrez", "qwen2"}, {"command-r", "refact"},
    {"starcoder", "refact"},  {"smollm", "refact"},
    {"llama4", "gpt-4o"},
};

struct elm_pretok {
    pcre2_code *code[ELM_PRETOK_MAX_REGEX];
    int n;
};

const char *elm_pretok_canonical(const char *name) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i].name) == 0) return known[i].name;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) return aliases[i].name;
    return NULL;
}

const char *elm_pretok_names(void) {
    return "gpt-2, llama-bpe, qwen2, qwen35, refact, deepseek-coder, gpt-4o, gemma4 (aliases "
           "phi-2, mpt, llama3, llama-v3, falcon3, pixtral, deepseek-r1-qwen, megrez, command-r, "
           "starcoder, smollm, llama4)";
}

int elm_pretok_patterns(const char *name, const char *const **patterns) {
    const char *canon = elm_pretok_canonical(name);
    for (size_t i = 0; canon && i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(canon, known[i].name) != 0) continue;
        int n = 0;
        while (known[i].patterns[n]) n++;
        *patterns = known[i].patterns;
        return n;
    }
    *patterns = NULL;
    return 0;
}

elm_status elm_pretok_compile(const char *const *patterns, int n, const char *src,
                              elm_pretok **out, elm_error *err) {
    *out = NULL;
    if (n < 1 || n > ELM_PRETOK_MAX_REGEX)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pre-tokenizer of %d regexes (1..%d "
                          "supported)", src, n, ELM_PRETOK_MAX_REGEX);
    elm_pretok *p = calloc(1, sizeof *p);
    if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    for (; p->n < n; p->n++) {
        int code;
        PCRE2_SIZE at;
        p->code[p->n] = pcre2_compile((PCRE2_SPTR)patterns[p->n], PCRE2_ZERO_TERMINATED,
                                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code,
                                      &at, NULL);
        if (!p->code[p->n]) {
            PCRE2_UCHAR msg[120];
            pcre2_get_error_message(code, msg, sizeof msg);
            const char *bad = patterns[p->n];
            elm_pretok_free(p);
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pre-tokenizer regex '%.60s' does "
                              "not compile: %s at offset %zu", src, bad, (const char *)msg,
                              (size_t)at);
        }
        /* optional: interpreted matching if the JIT is absent */
        pcre2_jit_compile(p->code[p->n], PCRE2_JIT_COMPLETE);
    }
    *out = p;
    return ELM_OK;
}

elm_status elm_pretok_new(const char *name, const char *src, elm_pretok **out, elm_error *err) {
    *out = NULL;
    const char *const *patterns;
    int n = elm_pretok_patterns(name, &patterns);
    if (!n)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: pre-tokenizer '%.32s' is not supported (known: %s)", src, name,
                          elm_pretok_names());
    return elm_pretok_compile(patterns, n, src, out, err);
}

void elm_pretok_free(elm_pretok *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) pcre2_code_free(p->code[i]);
    free(p);
}

/* One level of the split: regex `level` over text[0, len), whose pieces go to the next level or,
 * after the last, to the caller's callback. */
typedef struct split_ctx {
    const elm_pretok *p;
    pcre2_match_data *md;
    const char *text; /* the whole text: offsets handed out are relative to it */
    bool (*piece)(void *user, size_t start, size_t n);
    void *user;
} split_ctx;

static bool split_level(split_ctx *c, int level, size_t from, size_t len) {
    if (level == c->p->n) return c->piece(c->user, from, len);
    bool ok = true;
    size_t end = from + len, pos = from, done = from; /* next search start; end of last piece */
    while (ok && pos < end) {
        int rc = pcre2_match(c->p->code[level], (PCRE2_SPTR)c->text, end, pos, 0, c->md, NULL);
        if (rc < 0) break; /* no match in the rest (or a matching error: the rest is one piece) */
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t s = ov[0], e = ov[1];
        if (s > done) ok = split_level(c, level + 1, done, s - done);
        if (ok && e > s) ok = split_level(c, level + 1, s, e - s);
        done = e > s ? e : s;
        pos = e > s ? e : s + 1; /* the patterns never match empty; guard against looping anyway */
    }
    if (ok && done < end) ok = split_level(c, level + 1, done, end - done);
    return ok;
}

bool elm_pretok_split(const elm_pretok *p, const char *text, size_t len,
                      bool (*piece)(void *user, size_t start, size_t n), void *user) {
    /* one match block sized for the largest pattern serves every level: a level's match is
     * read before the next level runs */
    uint32_t pairs = 1;
    for (int i = 0; i < p->n; i++) {
        uint32_t cap = 0;
        pcre2_pattern_info(p->code[i], PCRE2_INFO_CAPTURECOUNT, &cap);
        if (cap + 1 > pairs) pairs = cap + 1;
    }
    pcre2_match_data *md = pcre2_match_data_create(pairs, NULL);
    if (!md) return false;
    split_ctx c = {p, md, text, piece, user};
    bool ok = split_level(&c, 0, 0, len);
    pcre2_match_data_free(md);
    return ok;
}
