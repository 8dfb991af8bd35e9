/* tokenizer.json and tokenizer_config.json for a vocabulary (see hf_write.h), in the shapes
 * transformers' converters produce: GPT-2 / Llama 3 / Qwen2 style for byte-level vocabs, Llama 2
 * style (BPE with byte fallback) for SentencePiece-style ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "formats/hf_write.h"
#include "tokenizer/pretok.h"
#include "tokenizer/vocab_index.h"

#define SP_SPACE "\xe2\x96\x81" /* U+2581 */

/* One candidate merge of a SentencePiece vocab: piece `merged` = left + right. */
typedef struct sp_merge {
    float score;
    int32_t merged, left, right;
} sp_merge;

/* transformers' order: merged piece score, best first; then vocab order of the merged piece,
 * then of the halves. */
static int merge_cmp(const void *pa, const void *pb) {
    const sp_merge *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->merged != b->merged) return a->merged < b->merged ? -1 : 1;
    if (a->left != b->left) return a->left < b->left ? -1 : 1;
    return (a->right > b->right) - (a->right < b->right);
}

/* Every split of a normal or user-defined piece into two pieces, ordered as merge_cmp. */
static sp_merge *sp_merges(const elm_vocab *v, int32_t *n_out) {
    size_t n = 0, cap = 1024;
    sp_merge *out = malloc(cap * sizeof *out);
    for (int32_t id = 0; out && id < v->n_tokens; id++) {
        if (v->types[id] != ELM_TOKEN_NORMAL && v->types[id] != ELM_TOKEN_USER_DEFINED) continue;
        const char *p = v->pieces[id];
        const uint32_t len = v->piece_len[id];
        for (uint32_t k = 1; k < len; k++) {
            if (((unsigned char)p[k] & 0xC0) == 0x80) continue; /* inside a character */
            int32_t l = elm_vocab_find(v, p, k), r = elm_vocab_find(v, p + k, len - k);
            if (l < 0 || r < 0) continue;
            if (n == cap) {
                sp_merge *more = realloc(out, 2 * cap * sizeof *out);
                if (!more) {
                    free(out);
                    return NULL;
                }
                out = more;
                cap *= 2;
            }
            out[n++] = (sp_merge){v->scores[id], id, l, r};
        }
    }
    if (out) qsort(out, n, sizeof *out, merge_cmp);
    *n_out = (int32_t)n;
    return out;
}

static cJSON *merges_json(const elm_vocab *v) {
    cJSON *arr = cJSON_CreateArray();
    if (v->merges) {
        for (int32_t i = 0; i < v->n_merges; i++)
            cJSON_AddItemToArray(arr, cJSON_CreateString(v->merges[i]));
        return arr;
    }
    int32_t n = 0;
    sp_merge *mg = v->scores ? sp_merges(v, &n) : NULL;
    for (int32_t i = 0; i < n; i++) {
        const char *l = v->pieces[mg[i].left], *r = v->pieces[mg[i].right];
        size_t ll = strlen(l), lr = strlen(r);
        char *s = malloc(ll + lr + 2);
        if (!s) break;
        memcpy(s, l, ll);
        s[ll] = ' ';
        memcpy(s + ll + 1, r, lr + 1);
        cJSON_AddItemToArray(arr, cJSON_CreateString(s));
        free(s);
    }
    free(mg);
    return arr;
}

static cJSON *typed(const char *type) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *byte_level(bool use_regex) {
    cJSON *o = typed("ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", false);
    cJSON_AddBoolToObject(o, "trim_offsets", true);
    cJSON_AddBoolToObject(o, "use_regex", use_regex);
    return o;
}

static cJSON *replace(const char *from, const char *to) {
    cJSON *o = typed("Replace");
    cJSON *pat = cJSON_AddObjectToObject(o, "pattern");
    cJSON_AddStringToObject(pat, "String", from);
    cJSON_AddStringToObject(o, "content", to);
    return o;
}

/* A Split for each of the pre-tokenizer's regexes, then (byte-level) ByteLevel; GPT-2's own is
 * ByteLevel with its regex. */
static cJSON *pre_tokenizer(const elm_vocab *v, bool bytes) {
    if (bytes && !v->n_pre_regex && strcmp(v->pre, "gpt-2") == 0) return byte_level(true);
    const char *const *patterns = (const char *const *)v->pre_regex;
    int n = v->n_pre_regex ? v->n_pre_regex : elm_pretok_patterns(v->pre, &patterns);
    cJSON *seq = typed("Sequence");
    cJSON *list = cJSON_AddArrayToObject(seq, "pretokenizers");
    for (int i = 0; i < n; i++) {
        cJSON *split = typed("Split");
        cJSON *pat = cJSON_AddObjectToObject(split, "pattern");
        cJSON_AddStringToObject(pat, "Regex", patterns[i]);
        cJSON_AddStringToObject(split, "behavior", "Isolated");
        cJSON_AddBoolToObject(split, "invert", false);
        cJSON_AddItemToArray(list, split);
    }
    if (bytes) cJSON_AddItemToArray(list, byte_level(false));
    return seq;
}

/* Llama 2's normalizer: (Prepend "▁") + Replace " " -> "▁". */
static cJSON *sp_normalizer(const elm_vocab *v) {
    cJSON *seq = typed("Sequence");
    cJSON *list = cJSON_AddArrayToObject(seq, "normalizers");
    if (v->add_space_prefix) {
        cJSON *pre = typed("Prepend");
        cJSON_AddStringToObject(pre, "prepend", SP_SPACE);
        cJSON_AddItemToArray(list, pre);
    }
    cJSON_AddItemToArray(list, replace(" ", SP_SPACE));
    return seq;
}

static cJSON *sp_decoder(void) {
    cJSON *seq = typed("Sequence");
    cJSON *list = cJSON_AddArrayToObject(seq, "decoders");
    cJSON_AddItemToArray(list, replace(SP_SPACE, " "));
    cJSON_AddItemToArray(list, typed("ByteFallback"));
    cJSON_AddItemToArray(list, typed("Fuse"));
    cJSON *strip = typed("Strip");
    cJSON_AddStringToObject(strip, "content", " ");
    cJSON_AddNumberToObject(strip, "start", 1);
    cJSON_AddNumberToObject(strip, "stop", 0);
    cJSON_AddItemToArray(list, strip);
    return seq;
}

static bool is_added(const elm_vocab *v, int32_t id) {
    int32_t t = v->types[id];
    return t == ELM_TOKEN_CONTROL || t == ELM_TOKEN_USER_DEFINED || t == ELM_TOKEN_UNKNOWN ||
           t == ELM_TOKEN_UNUSED;
}

static cJSON *tokenizer_json(const elm_vocab *v) {
    const bool bytes = strcmp(v->model, "gpt2") == 0;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (!is_added(v, i)) continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", i);
        cJSON_AddStringToObject(t, "content", v->pieces[i]);
        cJSON_AddBoolToObject(t, "single_word", false);
        cJSON_AddBoolToObject(t, "lstrip", false);
        cJSON_AddBoolToObject(t, "rstrip", false);
        cJSON_AddBoolToObject(t, "normalized", false);
        cJSON_AddBoolToObject(t, "special", v->types[i] != ELM_TOKEN_USER_DEFINED);
        cJSON_AddItemToArray(added, t);
    }
    if (bytes) cJSON_AddNullToObject(root, "normalizer");
    else cJSON_AddItemToObject(root, "normalizer", sp_normalizer(v));
    if (bytes || v->n_pre_regex || v->pre[0])
        cJSON_AddItemToObject(root, "pre_tokenizer", pre_tokenizer(v, bytes));
    else cJSON_AddNullToObject(root, "pre_tokenizer");
    cJSON_AddNullToObject(root, "post_processor");
    cJSON_AddItemToObject(root, "decoder", bytes ? byte_level(true) : sp_decoder());
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    if (v->unk_id >= 0) cJSON_AddStringToObject(model, "unk_token", v->pieces[v->unk_id]);
    else cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", !bytes);
    cJSON_AddBoolToObject(model, "byte_fallback", !bytes && v->byte_fallback);
    cJSON_AddBoolToObject(model, "ignore_merges", v->ignore_merges);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    /* byte-level models list their added tokens only there; Llama 2's have every id in vocab */
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (!bytes || !is_added(v, i))
            cJSON_AddItemToObject(vocab, v->pieces[i], cJSON_CreateNumber(i));
    cJSON_AddItemToObject(model, "merges", merges_json(v));
    return root;
}

static cJSON *config_json(const elm_vocab *v) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddBoolToObject(c, "add_bos_token", v->add_bos);
    cJSON_AddBoolToObject(c, "add_eos_token", v->add_eos);
    const struct { const char *key; int32_t id; } ids[] = {
        {"bos_token", v->bos_id}, {"eos_token", v->eos_id}, {"unk_token", v->unk_id},
        {"pad_token", v->pad_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) cJSON_AddStringToObject(c, ids[i].key, v->pieces[ids[i].id]);
    cJSON_AddBoolToObject(c, "clean_up_tokenization_spaces", false);
    if (v->chat_template) cJSON_AddStringToObject(c, "chat_template", v->chat_template);
    return c;
}

/* Prints root (consumed) into dir/name. */
static elm_status put_json(const char *dir, const char *name, cJSON *root, elm_error *err) {
    char path[1100];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        cJSON_Delete(root);
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    elm_status st = elm_hf_write_text(path, text, err);
    free(text);
    return st;
}

elm_status elm_hf_write_tokenizer(const elm_vocab *v, const char *dir, elm_error *err) {
    if (!v->index)
        return elm_errorf(err, ELM_ERR_ARG, "%s: vocabulary not finalized", dir);
    if (!v->merges && !v->scores)
        return elm_errorf(err, ELM_ERR_ARG, "%s: vocabulary has neither merges nor scores", dir);
    elm_status st = put_json(dir, "tokenizer.json", tokenizer_json(v), err);
    return st ? st : put_json(dir, "tokenizer_config.json", config_json(v), err);
}
