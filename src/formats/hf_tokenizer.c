/* Hugging Face tokenizer.json (+ tokenizer_config.json) -> elm_vocab (see hf.h).
 *
 * Two forms of BPE model ranked by its merges are accepted:
 *  - the SentencePiece-derived form Llama uses: byte fallback, and either a Prepend("▁") +
 *    Replace(" " -> "▁") normalizer or a Metaspace pre-tokenizer giving the leading "▁";
 *  - byte-level BPE (GPT-2, Llama 3, Qwen2, StarCoder, DeepSeek-Coder...): a ByteLevel
 *    pre-tokenizer, after any Sequence of Split (regex or string, "Isolated") and Digits steps,
 *    each interpreted as the regex it applies (see pre_regexes; an NFC normalizer is ignored,
 *    as llama.cpp does).
 * Added tokens become control tokens when "special", user-defined ones otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/hf.h"
#include "formats/json_file.h"
#include "formats/json_num.h"
#include "tokenizer/pretok.h"

#define SP_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

/* True when node, or a member of its Sequence list `list_key`, has "type" == type; *found is set
 * to that node. */
static bool find_type(const cJSON *node, const char *list_key, const char *type,
                      const cJSON **found) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, "type");
    if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0) {
        *found = node;
        return true;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(node, list_key);
    const cJSON *e;
    cJSON_ArrayForEach(e, list) if (find_type(e, list_key, type, found)) return true;
    return false;
}

static bool string_is(const cJSON *item, const char *s) {
    return cJSON_IsString(item) && strcmp(item->valuestring, s) == 0;
}

/* SentencePiece adds a leading "▁": HF writes this as a Prepend normalizer (older exports) or as
 * a Metaspace pre-tokenizer with a prepend scheme (newer ones). */
static bool leading_space(const cJSON *root) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "normalizer"), *f;
    if (find_type(n, "normalizers", "Prepend", &f) &&
        string_is(cJSON_GetObjectItemCaseSensitive(f, "prepend"), SP_SPACE))
        return true;
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (!find_type(pre, "pretokenizers", "Metaspace", &f)) return false;
    const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(f, "prepend_scheme");
    if (cJSON_IsString(scheme)) return strcmp(scheme->valuestring, "never") != 0;
    return !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(f, "add_prefix_space"));
}

static bool is_byte_piece(const char *s) {
    const char *hex = "0123456789ABCDEF";
    return strlen(s) == 6 && strncmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] && s[4] &&
           strchr(hex, s[3]) && strchr(hex, s[4]);
}

/* Token id of a piece, -1 if absent (a handful of look-ups per load: linear is fine). */
static int32_t find_piece(const elm_vocab *v, const char *s) {
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (strcmp(v->pieces[i], s) == 0) return i;
    return -1;
}

/* Places piece s at id; an id already taken must hold the same piece (added_tokens repeat vocab
 * entries). */
static elm_status put_piece(const char *path, elm_vocab *v, uint64_t id, const char *s,
                            elm_error *err) {
    if (v->pieces[id]) {
        if (strcmp(v->pieces[id], s) == 0) return ELM_OK;
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: id %llu is used by both '%.64s' and '%.64s'",
                          path, (unsigned long long)id, v->pieces[id], s);
    }
    return elm_vocab_set_piece(v, (int32_t)id, s, strlen(s), err);
}

/* How an id entered the vocabulary. */
enum { FROM_VOCAB = 0, ADDED = 1, ADDED_SPECIAL = 2, PADDING = 3 };

/* Reads the ids of model.vocab and added_tokens into v, checking they are dense 0..n-1; ids from
 * n up to n_min (config.json's vocab_size: Qwen2's embedding has more rows than its tokenizer
 * has tokens) become "[PAD<id>]" tokens, as llama.cpp's converter names them. */
static elm_status read_pieces(const char *path, const cJSON *vocab, const cJSON *added,
                              int32_t n_min, elm_vocab *v, unsigned char **origin,
                              elm_error *err) {
    const uint64_t max_id = (UINT64_C(1) << 24) - 1;
    uint64_t top = 0, id;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (!elm_json_uint(e, max_id, &id))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: token '%.64s' has an invalid id", path,
                              e->string);
        if (id > top) top = id;
    }
    cJSON_ArrayForEach(e, added) {
        if (!elm_json_uint(cJSON_GetObjectItemCaseSensitive(e, "id"), max_id, &id) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "content")))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: added_tokens entry needs 'id' and 'content'", path);
        if (id > top) top = id;
    }
    int32_t n_tok = (int32_t)top + 1, n = n_tok > n_min ? n_tok : n_min;
    elm_status st = elm_vocab_alloc(v, n, false, err);
    if (st) return st;
    if (!(*origin = calloc((size_t)n, sizeof **origin)))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    cJSON_ArrayForEach(e, vocab) {
        elm_json_uint(e, max_id, &id);
        if ((st = put_piece(path, v, id, e->string, err))) return st;
    }
    cJSON_ArrayForEach(e, added) {
        elm_json_uint(cJSON_GetObjectItemCaseSensitive(e, "id"), max_id, &id);
        const char *s = cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring;
        if ((st = put_piece(path, v, id, s, err))) return st;
        (*origin)[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special"))
                            ? ADDED_SPECIAL : ADDED;
    }
    for (int32_t i = n_tok; i < n; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        if ((st = elm_vocab_set_piece(v, i, pad, strlen(pad), err))) return st;
        (*origin)[i] = PADDING;
    }
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (!v->pieces[i])
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: token ids are not dense: no token has id %d", path, i);
    return ELM_OK;
}

/* Merges as "left right" strings, from either spelling tokenizer.json uses. */
static elm_status read_merges(const char *path, const cJSON *merges, elm_vocab *v,
                              elm_error *err) {
    int n = cJSON_GetArraySize(merges);
    /* Allocated even when empty: a non-NULL list is what marks the vocab as ranked by merges. */
    if (!(v->merges = calloc((size_t)n + 1, sizeof *v->merges)))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *e;
    cJSON_ArrayForEach(e, merges) {
        const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
        char *s = NULL;
        if (cJSON_IsString(e)) {
            s = strdup(e->valuestring);
        } else if (cJSON_GetArraySize(e) == 2 && cJSON_IsString(a) && cJSON_IsString(b)) {
            size_t la = strlen(a->valuestring), lb = strlen(b->valuestring);
            if ((s = malloc(la + lb + 2))) {
                memcpy(s, a->valuestring, la);
                s[la] = ' ';
                memcpy(s + la + 1, b->valuestring, lb + 1);
            }
        } else {
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", path,
                              v->n_merges);
        }
        if (!s) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
        v->merges[v->n_merges++] = s;
    }
    return ELM_OK;
}

/* A special token in tokenizer_config.json: a string or an AddedToken object {"content": ...}. */
static const char *token_string(const cJSON *cfg, const char *key) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(t)) t = cJSON_GetObjectItemCaseSensitive(t, "content");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* The special token a post-processor's TemplateProcessing puts after the text of a single
 * sequence ("$A <|endoftext|>": Qwen3-Embedding's, whose state its pooling reads), or -1. */
static int32_t template_eos(const cJSON *root, const elm_vocab *v) {
    const cJSON *tp, *single;
    if (!find_type(cJSON_GetObjectItemCaseSensitive(root, "post_processor"), "processors",
                   "TemplateProcessing", &tp))
        return -1;
    single = cJSON_GetObjectItemCaseSensitive(tp, "single");
    const int n = cJSON_GetArraySize(single);
    const cJSON *last = n > 1 ? cJSON_GetArrayItem(single, n - 1) : NULL;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(last, "SpecialToken"), "id");
    return cJSON_IsString(id) ? find_piece(v, id->valuestring) : -1;
}

/* Special ids and flags: tokenizer_config.json when it names them, config.json otherwise; an EOS
 * that tokenizer.json's template appends (tmpl_eos >= 0) is the EOS, added unless
 * tokenizer_config.json's add_eos_token says not (as llama.cpp's converter takes it). */
static elm_status apply_tokenizer_config(const char *dir, const elm_hf_config *c,
                                         int32_t tmpl_eos, elm_vocab *v, elm_error *err) {
    v->bos_id = c->bos_id;
    v->eos_id = c->eos_id;
    /* byte-level vocabs add BOS by default only for Llama 3 (llama.cpp's default, which its
     * post-processor template does in Hugging Face) */
    v->add_bos = strcmp(v->model, "gpt2") != 0 || strcmp(v->pre, "llama-bpe") == 0;
    v->add_eos = tmpl_eos >= 0;
    if (tmpl_eos >= 0) v->eos_id = tmpl_eos;
    char path[1100];
    if (snprintf(path, sizeof path, "%s/tokenizer_config.json", dir) >= (int)sizeof path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    if (!elm_file_exists(path)) return ELM_OK;
    cJSON *cfg;
    elm_status st = elm_json_read_object(path, ELM_HF_MAX_JSON, &cfg, err);
    if (st) return st;
    struct { const char *key; int32_t *id; } ids[] = {
        {"bos_token", &v->bos_id}, {"eos_token", &v->eos_id}, {"pad_token", &v->pad_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const char *s = token_string(cfg, ids[i].key);
        int32_t id = s ? find_piece(v, s) : -1;
        if (id >= 0) *ids[i].id = id;
    }
    if (tmpl_eos >= 0) v->eos_id = tmpl_eos;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token");
    if (cJSON_IsBool(b)) v->add_bos = cJSON_IsTrue(b);
    if (cJSON_IsBool(e)) v->add_eos = cJSON_IsTrue(e);
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (cJSON_IsString(tmpl) && !(v->chat_template = strdup(tmpl->valuestring)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    cJSON_Delete(cfg);
    return st;
}

/* DIR/chat_template.jinja, where newer transformers save the chat template instead of in
 * tokenizer_config.json (no file: no template). */
static elm_status read_chat_template_file(const char *dir, elm_vocab *v, elm_error *err) {
    char path[1100];
    if (snprintf(path, sizeof path, "%s/chat_template.jinja", dir) >= (int)sizeof path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    if (!elm_file_exists(path)) return ELM_OK;
    size_t len;
    return elm_read_file(path, ELM_HF_MAX_JSON, &v->chat_template, &len, err);
}

/* The regexes a pre_tokenizer amounts to, in order, appended to *list (n_list of them, at most
 * ELM_PRETOK_MAX_REGEX): Sequence walks its members, Split "Isolated" gives its regex (a String
 * pattern quoted), Digits "\p{N}" (individual_digits) or "\p{N}+", ByteLevel with use_regex (its
 * default) GPT-2's regex; Metaspace cuts nothing here (the SentencePiece-style encoder handles
 * its "▁"). In a SentencePiece-style vocab (sp) the normalizer has already made every space
 * "▁", so a Split on the string " " (Gemma's, any behavior) never cuts and is skipped. Anything
 * else is refused naming its type. */
static elm_status pre_regexes(const char *path, const cJSON *node, bool sp, char **list,
                              int *n_list, elm_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(node, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "?";
    const char *add = NULL;
    char *quoted = NULL;
    if (!strcmp(t, "Sequence")) {
        const cJSON *e, *members = cJSON_GetObjectItemCaseSensitive(node, "pretokenizers");
        elm_status st;
        cJSON_ArrayForEach(e, members) if ((st = pre_regexes(path, e, sp, list, n_list, err)))
            return st;
        return ELM_OK;
    } else if (!strcmp(t, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(node, "pattern");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
        const cJSON *str = cJSON_GetObjectItemCaseSensitive(pat, "String");
        if (sp && string_is(str, " ")) return ELM_OK;
        if (!string_is(cJSON_GetObjectItemCaseSensitive(node, "behavior"), "Isolated") ||
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(node, "invert")) ||
            (!cJSON_IsString(re) && !cJSON_IsString(str)))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pre-tokenizer Split is supported "
                              "only with a pattern, behavior \"Isolated\" and no invert", path);
        if (cJSON_IsString(re)) add = re->valuestring;
        else {
            size_t len = strlen(str->valuestring);
            if (!(quoted = malloc(len + 5)))
                return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
            snprintf(quoted, len + 5, "\\Q%s\\E", str->valuestring);
            add = quoted;
        }
    } else if (!strcmp(t, "Digits")) {
        bool single = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(node, "individual_digits"));
        add = single ? "\\p{N}" : "\\p{N}+";
    } else if (!strcmp(t, "ByteLevel")) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(node, "add_prefix_space")))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                              "%s: ByteLevel add_prefix_space is not supported", path);
        const char *const *gpt2;
        elm_pretok_patterns("gpt-2", &gpt2);
        if (!cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(node, "use_regex"))) add = gpt2[0];
    } else if (strcmp(t, "Metaspace") != 0) {
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pre-tokenizer '%.32s' is not supported "
                          "(Sequence, Split, Digits, ByteLevel, Metaspace)", path, t);
    }
    if (!add) return ELM_OK;
    if (*n_list == ELM_PRETOK_MAX_REGEX) {
        free(quoted);
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: pre-tokenizer of more than %d steps",
                          path, ELM_PRETOK_MAX_REGEX);
    }
    list[*n_list] = quoted ? quoted : strdup(add);
    if (!list[*n_list]) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    (*n_list)++;
    return ELM_OK;
}

/* The known pre-tokenizer whose regexes are exactly list[0, n), or NULL. */
static const char *known_pre(char *const *list, int n) {
    static const char *const names[] = {"gpt-2", "llama-bpe", "qwen2", "qwen35", "refact",
                                        "deepseek-coder", "gemma4"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *const *p;
        bool same = elm_pretok_patterns(names[i], &p) == n;
        for (int k = 0; same && k < n; k++) same = strcmp(p[k], list[k]) == 0;
        if (same) return names[i];
    }
    return NULL;
}

/* The regexes the pre_tokenizer applies, into v->pre_regex (and v->pre, the known name they
 * amount to, or ""); byte-level BPE (bytes) is made "gpt2" and must split somehow. */
static elm_status read_pre(const char *path, const cJSON *pre, bool bytes, elm_vocab *v,
                           elm_error *err) {
    char *list[ELM_PRETOK_MAX_REGEX];
    int n = 0;
    elm_status st =
        pre && !cJSON_IsNull(pre) ? pre_regexes(path, pre, !bytes, list, &n, err) : ELM_OK;
    if (!st && !bytes && n == 0) return ELM_OK;
    if (!st && n == 0)
        st = elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: byte-level pre-tokenizer splits nothing "
                        "(no Split regex and ByteLevel use_regex false)", path);
    if (!st && !(v->pre_regex = malloc((size_t)n * sizeof *v->pre_regex)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    if (st) {
        for (int i = 0; i < n; i++) free(list[i]);
        return st;
    }
    memcpy(v->pre_regex, list, (size_t)n * sizeof *list);
    v->n_pre_regex = n;
    const char *name = known_pre(list, n);
    if (bytes) snprintf(v->model, sizeof v->model, "gpt2");
    snprintf(v->pre, sizeof v->pre, "%s", name ? name : "");
    return ELM_OK;
}

static elm_status parse_tokenizer(const char *path, const cJSON *root, int32_t n_min,
                                  elm_vocab *v, elm_error *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!string_is(type, "BPE"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tokenizer model '%.32s' is not supported "
                          "(BPE expected)", path, cJSON_IsString(type) ? type->valuestring : "?");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), *byte_level;
    bool bytes = find_type(pre, "pretokenizers", "ByteLevel", &byte_level);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(vocab) || (added && !cJSON_IsArray(added) && !cJSON_IsNull(added)) ||
        (merges && !cJSON_IsArray(merges)))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: needs model.vocab (object), model.merges and added_tokens (arrays)",
                          path);
    unsigned char *origin = NULL;
    elm_status st = read_pieces(path, vocab, added, n_min, v, &origin, err);
    if (!st) st = read_merges(path, merges, v, err);
    if (!st) st = read_pre(path, pre, bytes, v, err);
    if (st) {
        free(origin);
        return st;
    }
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    const char *unk_piece = cJSON_IsString(unk) ? unk->valuestring : "<unk>";
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (strcmp(v->pieces[i], unk_piece) == 0) {
            v->types[i] = ELM_TOKEN_UNKNOWN;
            v->unk_id = i;
        } else if (origin[i] == ADDED_SPECIAL) {
            v->types[i] = ELM_TOKEN_CONTROL;
        } else if (origin[i] == ADDED) {
            v->types[i] = ELM_TOKEN_USER_DEFINED;
        } else if (origin[i] == PADDING) {
            v->types[i] = ELM_TOKEN_UNUSED;
        } else if (!bytes && is_byte_piece(v->pieces[i])) {
            v->types[i] = ELM_TOKEN_BYTE;
        } else {
            v->types[i] = ELM_TOKEN_NORMAL;
        }
    }
    free(origin);
    v->byte_fallback = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"));
    v->add_space_prefix = !bytes && leading_space(root);
    v->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
    return ELM_OK;
}

elm_status elm_hf_read_tokenizer(const char *dir, const elm_hf_config *c, elm_vocab *v,
                                 elm_error *err) {
    char path[1100];
    if (snprintf(path, sizeof path, "%s/tokenizer.json", dir) >= (int)sizeof path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    cJSON *root;
    elm_status st = elm_json_read_object(path, ELM_HF_MAX_JSON, &root, err);
    if (st) return st;
    st = parse_tokenizer(path, root, c->hp.n_vocab, v, err);
    const int32_t tmpl_eos = st ? -1 : template_eos(root, v);
    cJSON_Delete(root);
    if (!st) st = apply_tokenizer_config(dir, c, tmpl_eos, v, err);
    if (!st && !v->chat_template) st = read_chat_template_file(dir, v, err);
    if (!st) st = elm_vocab_finalize(v, path, err);
    if (st) elm_vocab_free(v);
    return st;
}
