/* Byte-level BPE specifics (the vocab test strings of every family are in test_tokenize.c): GPT-2's
 * byte alphabet, llama.cpp's defaults per pre-tokenizer, special tokens (control tokens only with
 * parse_special, user-defined ones always, the SentencePiece space prefix after them), bytes that
 * are not UTF-8, and one clear error for an unknown tokenizer.ggml.pre (GGUF) or Split regex
 * (tokenizer.json). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "formats/hf.h"
#include "formats/loaders.h"
#include "tmpfiles.h"
#include "tokenizer/bytelevel.h"

static char *tmpdir;

static int32_t *encode(const elm_vocab *v, const char *text, bool special, int64_t *n) {
    elm_error err;
    size_t len = strlen(text);
    *n = elm_tokenize_special(v, text, len, false, special, NULL, 0, &err);
    if (*n < 0) return NULL;
    int32_t *ids = malloc((size_t)(*n ? *n : 1) * sizeof *ids);
    if (ids) elm_tokenize_special(v, text, len, false, special, ids, *n, &err);
    return ids;
}

static bool encodes_as(const elm_vocab *v, const char *text, bool special, const int32_t *want,
                       int64_t n_want) {
    int64_t n;
    int32_t *ids = encode(v, text, special, &n);
    bool ok = ids && n == n_want && memcmp(ids, want, (size_t)n * sizeof *ids) == 0;
    free(ids);
    return ok;
}

static bool load(const char *rel, elm_vocab *v) {
    elm_error err;
    elm_status st = elm_vocab_load(fixture(rel), v, &err);
    CHECK(st == ELM_OK, "%s: %s", rel, err.msg);
    return st == ELM_OK;
}

static void test_alphabet(void) {
    char out[2 * 256];
    unsigned char all[256];
    for (int b = 0; b < 256; b++) all[b] = (unsigned char)b;
    size_t n = elm_bytelevel_encode(all, 256, out);
    /* 188 bytes stand for themselves (94 ASCII + 94 Latin-1 of 2 bytes each), 68 are shifted */
    CHECK(n == 94 + 2 * 94 + 2 * 68, "alphabet length %zu", n);
    CHECK(elm_bytelevel_encode((const unsigned char *)" ", 1, out) == 2 && !memcmp(out, "Ġ", 2),
          "space is not U+0120");
    CHECK(elm_bytelevel_encode((const unsigned char *)"\n", 1, out) == 2 && !memcmp(out, "Ċ", 2),
          "newline is not U+010A");
    bool inverse = true;
    for (int b = 0; b < 256; b++) {
        uint32_t cp;
        size_t k = elm_bytelevel_encode(&all[b], 1, out);
        cp = k == 1 ? (unsigned char)out[0]
                    : (uint32_t)(out[0] & 0x1F) << 6 | ((unsigned char)out[1] & 0x3F);
        inverse = inverse && elm_bytelevel_byte(cp) == b;
    }
    CHECK(inverse, "byte -> stand-in -> byte is not the identity");
    CHECK(elm_bytelevel_byte('A') == 'A' && elm_bytelevel_byte(0x20) == -1 &&
              elm_bytelevel_byte(0x144) == -1 && elm_bytelevel_byte(0xAD) == -1,
          "code points outside the alphabet");
}

static void test_defaults(void) {
    elm_vocab v;
    if (load("vocab/ggml-vocab-llama-bpe.gguf", &v)) {
        CHECK(!strcmp(v.pre, "llama-bpe") && v.ignore_merges && v.add_bos && v.bos_id == 128000,
              "llama-bpe: pre %s ignore_merges %d add_bos %d", v.pre, v.ignore_merges, v.add_bos);
        /* control tokens: text unless parsed; "<|begin_of_text|>" is 128000 */
        CHECK(encodes_as(&v, "<|begin_of_text|>Hi", true, (int32_t[]){128000, 13347}, 2),
              "llama-bpe: control token with parse_special");
        int64_t n;
        int32_t *ids = encode(&v, "<|begin_of_text|>Hi", false, &n);
        bool none = ids != NULL;
        for (int64_t i = 0; ids && i < n; i++) none = none && ids[i] < 128000;
        CHECK(none && n > 2, "llama-bpe: control token parsed without parse_special");
        free(ids);
        elm_vocab_free(&v);
    }
    if (load("vocab/ggml-vocab-gpt-2.gguf", &v)) {
        CHECK(!strcmp(v.pre, "gpt-2") && !v.ignore_merges && !v.add_bos && !v.add_space_prefix,
              "gpt-2: pre %s ignore_merges %d add_bos %d", v.pre, v.ignore_merges, v.add_bos);
        /* bytes that are not UTF-8 still become tokens whose bytes give the text back */
        const char bad[] = "a\xff\xfe b\xc3";
        int64_t n;
        int32_t *ids = encode(&v, bad, false, &n);
        char back[64];
        size_t len = 0;
        for (int64_t i = 0; ids && i < n; i++) len += elm_token_to_bytes(&v, ids[i], back + len, 8);
        CHECK(ids && len == strlen(bad) && !memcmp(back, bad, len), "gpt-2: invalid UTF-8 lost");
        free(ids);
        elm_vocab_free(&v);
    }
}

static void test_special(void) {
    elm_vocab v;
    if (load("vocab/ggml-vocab-qwen2.gguf", &v)) {
        /* <|im_start|> 151644 is a control token; "user" 872, "\n" 198 */
        CHECK(encodes_as(&v, "<|im_start|>user\n", true, (int32_t[]){151644, 872, 198}, 3),
              "qwen2: chat template with parse_special");
        /* user-defined tokens are matched whether or not special tokens are parsed */
        CHECK(encodes_as(&v, "a[PAD151700]", false, (int32_t[]){64, 151700}, 2),
              "qwen2: user-defined token not matched");
        int64_t n;
        int32_t *ids = encode(&v, "<|im_start|>", false, &n);
        CHECK(ids && n > 1 && ids[0] != 151644, "qwen2: control token parsed by default");
        char *text = ids ? elm_detokenize(&v, ids, n, false) : NULL;
        CHECK(text && !strcmp(text, "<|im_start|>"), "qwen2: round trip");
        free(text);
        free(ids);
        elm_vocab_free(&v);
    }
    if (load("vocab/ggml-vocab-llama-spm.gguf", &v)) {
        /* SentencePiece: the "▁" prefix goes again in front of the text after a special token:
         * "<s>Hi" -> <s> "▁Hi" (1, 6324), as llama.cpp does */
        CHECK(encodes_as(&v, "<s>Hi", true, (int32_t[]){1, 6324}, 2), "spm: prefix after <s>");
        elm_vocab_free(&v);
    }
}

/* A copy of the gpt-2 vocab whose tokenizer.ggml.pre value "gpt-2" is replaced by `pre` (same
 * length). */
static const char *with_pre(const char *pre) {
    size_t len;
    const char *path = tmp_path(tmpdir, "pre.gguf");
    CHECK(file_copy(fixture("vocab/ggml-vocab-gpt-2.gguf"), path, SIZE_MAX, 0), "copy");
    unsigned char *buf = file_read(path, &len);
    const char key[] = "tokenizer.ggml.pre";
    unsigned char *k = buf ? memmem(buf, len, key, strlen(key)) : NULL;
    /* key, u32 type, u64 length, value */
    unsigned char *val = k ? k + strlen(key) + 4 + 8 : NULL;
    CHECK(val && !memcmp(val, "gpt-2", 5), "tokenizer.ggml.pre not found in the gpt-2 vocab");
    if (val) memcpy(val, pre, 5);
    CHECK(buf && file_write(path, buf, len), "write %s", path);
    free(buf);
    return path;
}

static void test_bad_pre(void) {
    elm_vocab v;
    elm_error err;
    const char *path = with_pre("gpt-X");
    elm_status st = elm_vocab_load(path, &v, &err);
    CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, path) &&
              strstr(err.msg, "tokenizer.ggml.pre 'gpt-X' is not supported") &&
              !strchr(err.msg, '\n'),
          "unknown pre: %d %s", st, err.msg);
    /* aliases llama.cpp knows work: "phi-2" is GPT-2's regex */
    st = elm_vocab_load(with_pre("phi-2"), &v, &err);
    CHECK(st == ELM_OK && !strcmp(v.pre, "gpt-2"), "phi-2 alias: %s", err.msg);
    if (!st) elm_vocab_free(&v);
}

/* The tokenizer.json of fixture folder `dir` copied into tmpdir with its pre_tokenizer replaced
 * by the JSON `pre`, then read: the status, and *v filled when ELM_OK (the caller frees it). */
static elm_status read_dir_with_pre(const char *dir, const char *pre_json, elm_vocab *v,
                                    elm_error *err) {
    size_t len;
    char rel[128];
    snprintf(rel, sizeof rel, "%s/tokenizer.json", dir);
    char *json = (char *)file_read(fixture(rel), &len);
    cJSON *root = json ? cJSON_ParseWithLength(json, len) : NULL;
    free(json);
    CHECK(root != NULL, "%s unreadable", rel);
    if (!root) return ELM_ERR_IO;
    cJSON *pre = cJSON_Parse(pre_json);
    CHECK(pre != NULL, "bad test JSON %s", pre_json);
    cJSON_ReplaceItemInObject(root, "pre_tokenizer", pre);
    char *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    CHECK(out && file_write(tmp_path(tmpdir, "tokenizer.json"), out, strlen(out)), "write");
    free(out);
    elm_hf_config c = {.bos_id = -1, .eos_id = -1};
    elm_status st = elm_hf_read_tokenizer(tmpdir, &c, v, err);
    unlink(tmp_path(tmpdir, "tokenizer.json"));
    return st;
}

static elm_status read_with_pre(const char *pre_json, elm_vocab *v, elm_error *err) {
    return read_dir_with_pre("vocab/gpt2-hf", pre_json, v, err);
}

/* tokenizer.json pre-tokenizers are interpreted step by step, not looked up: Digits then
 * ByteLevel is StarCoder's (llama.cpp's "refact"), any Split regex runs as written, and what
 * cannot be interpreted is refused naming the step. */
static void test_pre_tokenizer_json(void) {
    elm_vocab v;
    elm_error err;
    elm_status st = read_with_pre("{\"type\": \"Sequence\", \"pretokenizers\": ["
                                  "{\"type\": \"Digits\", \"individual_digits\": true},"
                                  "{\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}",
                                  &v, &err);
    CHECK(st == ELM_OK && !strcmp(v.pre, "refact"), "Digits + ByteLevel: %d %s pre '%s'", st,
          err.msg, st ? "" : v.pre);
    /* "a 123": "a", "Ġ", then each digit alone ('0' is id 15) */
    CHECK(st || encodes_as(&v, "a 123", false, (int32_t[]){64, 220, 16, 17, 18}, 5),
          "Digits: 'a 123' not split into single digits");
    if (!st) elm_vocab_free(&v);

    st = read_with_pre("{\"type\": \"Sequence\", \"pretokenizers\": ["
                       "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\w+|\\\\s+\"}, "
                       "\"behavior\": \"Isolated\", \"invert\": false},"
                       "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                       "\"use_regex\": false}]}", &v, &err);
    CHECK(st == ELM_OK && !strcmp(v.pre, ""), "Split \\w+|\\s+: %d %s", st, err.msg);
    /* the space is cut off the word, unlike GPT-2's own regex (" world" 995) */
    CHECK(st || encodes_as(&v, "hello world", false, (int32_t[]){31373, 220, 6894}, 3),
          "Split regex \\w+|\\s+ not applied");
    if (!st) elm_vocab_free(&v);

    /* a SentencePiece-style vocab: Gemma's Split on " " never cuts (spaces are "▁" by then) */
    st = read_dir_with_pre("stories260K/hf-f32",
                           "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, "
                           "\"behavior\": \"MergedWithPrevious\", \"invert\": false}", &v, &err);
    CHECK(st == ELM_OK && !v.n_pre_regex, "SentencePiece Split \" \": %d %s", st, err.msg);
    if (!st) elm_vocab_free(&v);
    st = read_with_pre("{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
                       "\"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\", "
                       "\"invert\": false}, {\"type\": \"ByteLevel\"}]}", &v, &err);
    CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "Isolated"),
          "byte-level Split MergedWithPrevious: %d %s", st, err.msg);
    if (!st) elm_vocab_free(&v);
    st = read_with_pre("{\"type\": \"Whitespace\"}", &v, &err);
    CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "tokenizer.json") &&
              strstr(err.msg, "pre-tokenizer 'Whitespace' is not supported"),
          "Whitespace pre-tokenizer: %d %s", st, err.msg);
    if (!st) elm_vocab_free(&v);
    st = read_with_pre("{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, "
                       "\"behavior\": \"Isolated\", \"invert\": false}", &v, &err);
    CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "tokenizer.json") &&
              strstr(err.msg, "does not compile"), "bad Split regex: %d %s", st, err.msg);
    if (!st) elm_vocab_free(&v);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    tmpdir = tmp_dir_new();
    CHECK(tmpdir != NULL, "mkdtemp");
    test_alphabet();
    test_defaults();
    test_special();
    if (tmpdir) {
        test_bad_pre();
        test_pre_tokenizer_json();
    }
    tmp_dir_remove(tmpdir);
    return check_done();
}
