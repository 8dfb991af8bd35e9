/* Regex pre-tokenizers of byte-level BPE vocabularies (see pretok.h).
 *
 * The patterns are those the models' own Hugging Face tokenizers declare (GPT-2's ByteLevel
 * default, and the Split patterns of Llama 3's and Qwen2's tokenizer.json); the GGUF names and
 * their aliases are llama.cpp's tokenizer.ggml.pre values. PCRE2 runs them with UTF and Unicode
 * properties (\p{L}, \p{N}, Unicode \s), and with PCRE2_MATCH_INVALID_UTF so that text which is
 * not valid UTF-8 is still split (its bad bytes never match) instead of being refused. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"

static const struct {
    const char *name;
    const char *pattern;
} known[] = {
    {"gpt-2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
    {"llama-bpe", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
                  "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
    {"qwen2", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
              "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
};

/* Other tokenizer.ggml.pre names that llama.cpp runs with one of the patterns above. */
static const struct {
    const char *alias, *name;
} aliases[] = {
    {"phi-2", "gpt-2"},       {"llama3", "llama-bpe"}, {"llama-v3", "llama-bpe"},
    {"falcon3", "llama-bpe"}, {"pixtral", "llama-bpe"}, {"deepseek-r1-qwen", "qwen2"},
    {"megrez", "qwen2"},
};

struct elm_pretok {
    pcre2_code *code;
};

const char *elm_pretok_canonical(const char *name) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i].name) == 0) return known[i].name;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(name, aliases[i].alias) == 0) return aliases[i].name;
    return NULL;
}

const char *elm_pretok_names(void) {
    return "gpt-2, llama-bpe, qwen2 (aliases phi-2, llama3, llama-v3, falcon3, pixtral, "
           "deepseek-r1-qwen, megrez)";
}

const char *elm_pretok_pattern(const char *name) {
    const char *canon = elm_pretok_canonical(name);
    for (size_t i = 0; canon && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(canon, known[i].name) == 0) return known[i].pattern;
    return NULL;
}

const char *elm_pretok_by_pattern(const char *pattern) {
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(pattern, known[i].pattern) == 0) return known[i].name;
    return NULL;
}

elm_status elm_pretok_new(const char *name, const char *src, elm_pretok **out, elm_error *err) {
    *out = NULL;
    const char *canon = elm_pretok_canonical(name);
    if (!canon)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: pre-tokenizer '%.32s' is not supported (known: %s)", src, name,
                          elm_pretok_names());
    const char *pattern = elm_pretok_pattern(canon);
    elm_pretok *p = calloc(1, sizeof *p);
    if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    int code;
    PCRE2_SIZE at;
    p->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!p->code) {
        free(p);
        /* the patterns are fixed, so this is a PCRE2 built without Unicode support or memory */
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: PCRE2 cannot compile the '%s' "
                          "pre-tokenizer (error %d at %zu)", src, canon, code, (size_t)at);
    }
    pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE); /* optional: interpreted matching if absent */
    *out = p;
    return ELM_OK;
}

void elm_pretok_free(elm_pretok *p) {
    if (!p) return;
    pcre2_code_free(p->code);
    free(p);
}

bool elm_pretok_split(const elm_pretok *p, const char *text, size_t len,
                      bool (*piece)(void *user, size_t start, size_t n), void *user) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->code, NULL);
    if (!md) return false;
    bool ok = true;
    size_t pos = 0, done = 0; /* next search start; end of the last piece handed out */
    while (ok && pos < len) {
        int rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos, 0, md, NULL);
        if (rc < 0) break; /* no match in the rest (or a matching error: the rest is one piece) */
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (s > done) ok = piece(user, done, s - done);
        if (ok && e > s) ok = piece(user, s, e - s);
        done = e > s ? e : s;
        pos = e > s ? e : s + 1; /* the patterns never match empty; guard against looping anyway */
    }
    if (ok && done < len) ok = piece(user, done, len - done);
    pcre2_match_data_free(md);
    return ok;
}
