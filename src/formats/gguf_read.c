/* GGUF v2/v3 reader (docs/formats.md, "GGUF v3"): maps the file, indexes every key/value pair, reads
 * the Llama hyper-parameters and the tokenizer, and points the model's tensors into the mapping.
 *
 * Every count, length and offset read from the file is checked against the bytes that remain
 * before it is used, and before anything is allocated from it, so a hostile or truncated file ends
 * in an error naming the file and the problem, never in a crash or a huge allocation. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/loaders.h"
#include "formats/ranges.h"
#include "model/arch.h"
#include "tokenizer/pretok.h"

enum {
    GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL,
    GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES
};

static const char *const gguf_type_names[GGUF_NTYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

/* bytes of a fixed-size value; 0 for string and array */
static const size_t gguf_type_size[GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_NESTING 8
/* smallest encodings, used to reject counts that cannot fit in the bytes left */
/* empty key (8) + type (4) + 1-byte value */
#define GGUF_MIN_KV_BYTES 13
/* empty name (8) + n_dims (4) + one dim (8) + type (4) + offset (8) */
#define GGUF_MIN_TENSOR_BYTES 32

typedef struct gstr {
    const char *s;
    size_t len;
} gstr;

typedef struct gkv {
    gstr key;
    uint32_t type;
    size_t val;         /* file offset of the value (for arrays: of the first element) */
    uint32_t elem_type; /* arrays only */
    uint64_t count;     /* arrays only */
} gkv;

typedef struct gguf {
    const uint8_t *base;
    size_t size, pos;
    const char *path;
    uint64_t n_tensors, n_kv;
    gkv *kv; /* [n_kv] */
} gguf;

/* ---- bounds-checked cursor ---- */

static elm_status need(gguf *g, uint64_t n, const char *what, elm_error *err) {
    if (n > g->size - g->pos)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: %s at offset %zu (%llu bytes) runs past "
                          "end of file", g->path, what, g->pos, (unsigned long long)n);
    return ELM_OK;
}

/* The next n bytes of the file into v. */
static elm_status rd_bytes(gguf *g, void *v, size_t n, const char *what, elm_error *err) {
    elm_status st = need(g, n, what, err);
    if (st) return st;
    memcpy(v, g->base + g->pos, n);
    g->pos += n;
    return ELM_OK;
}

static elm_status rd_u32(gguf *g, uint32_t *v, const char *what, elm_error *err) {
    return rd_bytes(g, v, sizeof *v, what, err);
}

static elm_status rd_u64(gguf *g, uint64_t *v, const char *what, elm_error *err) {
    return rd_bytes(g, v, sizeof *v, what, err);
}

/* *s is cleared first, so that it is defined on the error paths too (gcc -O3, inlining the
 * readers, cannot tell that elm_errorf returns non-zero). */
static elm_status rd_str(gguf *g, gstr *s, const char *what, elm_error *err) {
    *s = (gstr){NULL, 0};
    uint64_t len;
    elm_status st = rd_u64(g, &len, what, err);
    if (st) return st;
    if (len > g->size - g->pos)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: %s at offset %zu: string of length %llu "
                          "runs past end of file",
                          g->path, what, g->pos - 8, (unsigned long long)len);
    s->s = (const char *)g->base + g->pos;
    s->len = (size_t)len;
    g->pos += (size_t)len;
    return ELM_OK;
}

static bool str_is(gstr s, const char *lit) {
    return s.len == strlen(lit) && memcmp(s.s, lit, s.len) == 0;
}

static const char *type_name(uint32_t t) { return t < GGUF_NTYPES ? gguf_type_names[t] : "?"; }

/* Skips one value of type t, checking every length against the file. */
static elm_status skip_value(gguf *g, uint32_t t, int depth, const gstr *key, elm_error *err) {
    if (t >= GGUF_NTYPES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has unknown value type %u",
                          g->path, (int)key->len, key->s, t);
    if (t == GGUF_STRING) {
        gstr s;
        return rd_str(g, &s, "string value", err);
    }
    if (t != GGUF_ARRAY) {
        elm_status st = need(g, gguf_type_size[t], "value", err);
        if (!st) g->pos += gguf_type_size[t];
        return st;
    }
    if (depth >= GGUF_MAX_NESTING)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s': arrays nested too deeply",
                          g->path, (int)key->len, key->s);
    uint32_t et;
    uint64_t count;
    elm_status st;
    if ((st = rd_u32(g, &et, "array element type", err))) return st;
    if ((st = rd_u64(g, &count, "array length", err))) return st;
    if (et >= GGUF_NTYPES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has arrays of unknown type %u",
                          g->path, (int)key->len, key->s, et);
    /* strings take >= 8 bytes, arrays >= 12: the count is bounded by the bytes left either way */
    size_t min_elem = gguf_type_size[et] ? gguf_type_size[et] : et == GGUF_STRING ? 8 : 12;
    if (count > (g->size - g->pos) / min_elem)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: key '%.*s': array of %llu elements runs "
                          "past end of file",
                          g->path, (int)key->len, key->s, (unsigned long long)count);
    if (gguf_type_size[et]) {
        g->pos += (size_t)count * gguf_type_size[et];
        return ELM_OK;
    }
    for (uint64_t i = 0; i < count; i++)
        if ((st = skip_value(g, et, depth + 1, key, err))) return st;
    return ELM_OK;
}

/* ---- header and key/value index ---- */

static int cmp_gstr(const void *a, const void *b) {
    const gstr *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A key given twice would be read as whichever copy a lookup meets first: refused instead. */
static elm_status check_unique_keys(const gguf *g, elm_error *err) {
    if (g->n_kv < 2) return ELM_OK;
    gstr *keys = malloc((size_t)g->n_kv * sizeof *keys);
    if (!keys) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_kv; i++) keys[i] = g->kv[i].key;
    qsort(keys, (size_t)g->n_kv, sizeof *keys, cmp_gstr);
    elm_status st = ELM_OK;
    for (uint64_t i = 1; i < g->n_kv && !st; i++)
        if (cmp_gstr(&keys[i - 1], &keys[i]) == 0)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: metadata key '%.*s' appears more than once",
                            g->path, (int)(keys[i].len > 96 ? 96 : keys[i].len), keys[i].s);
    free(keys);
    return st;
}

static elm_status parse_header(gguf *g, elm_error *err) {
    uint32_t magic, version;
    elm_status st;
    if (g->size < 4 || memcmp(g->base, "GGUF", 4) != 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not a GGUF file (bad magic)", g->path);
    g->pos = 0;
    if ((st = rd_u32(g, &magic, "header", err))) return st;
    if ((st = rd_u32(g, &version, "header", err))) return st;
    if (version == 1)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: GGUF version 1 is not supported (32-bit counts); re-convert the model",
                          g->path);
    if (version != 2 && version != 3)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported",
                          g->path, version);
    if ((st = rd_u64(g, &g->n_tensors, "header", err))) return st;
    if ((st = rd_u64(g, &g->n_kv, "header", err))) return st;
    size_t left = g->size - g->pos;
    if (g->n_kv > left / GGUF_MIN_KV_BYTES)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: header claims %llu key/value pairs, which would run past end of file",
                          g->path, (unsigned long long)g->n_kv);
    if (g->n_tensors > left / GGUF_MIN_TENSOR_BYTES || g->n_tensors > INT32_MAX)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: header claims %llu tensors, which would run past end of file", g->path,
                          (unsigned long long)g->n_tensors);
    g->kv = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv);
    if (!g->kv) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        gkv *kv = &g->kv[i];
        if ((st = rd_str(g, &kv->key, "key", err))) return st;
        if ((st = rd_u32(g, &kv->type, "value type", err))) return st;
        if (kv->type == GGUF_ARRAY && g->size - g->pos >= 12) {
            memcpy(&kv->elem_type, g->base + g->pos, 4);
            memcpy(&kv->count, g->base + g->pos + 4, 8);
            kv->val = g->pos + 12;
        } else {
            kv->val = g->pos;
        }
        if ((st = skip_value(g, kv->type, 0, &kv->key, err))) return st;
    }
    return check_unique_keys(g, err);
}

static const gkv *find_kv(const gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (str_is(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

static elm_status wrong_type(const gguf *g, const gkv *kv, const char *want, elm_error *err) {
    if (kv->type == GGUF_ARRAY)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' is an array of %s, expected %s",
                          g->path, (int)kv->key.len, kv->key.s, type_name(kv->elem_type), want);
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has type %s, expected %s", g->path,
                      (int)kv->key.len, kv->key.s, type_name(kv->type), want);
}

/* Integer value of any integer type as int64 (u64 above INT64_MAX is refused). */
static elm_status kv_int(const gguf *g, const gkv *kv, int64_t *out, elm_error *err) {
    const uint8_t *p = g->base + kv->val;
    switch (kv->type) {
    case GGUF_U8: *out = p[0]; return ELM_OK;
    case GGUF_I8: *out = (int8_t)p[0]; return ELM_OK;
    case GGUF_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return ELM_OK; }
    case GGUF_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return ELM_OK; }
    case GGUF_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return ELM_OK; }
    case GGUF_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return ELM_OK; }
    case GGUF_I64: { int64_t v; memcpy(&v, p, 8); *out = v; return ELM_OK; }
    case GGUF_U64: {
        uint64_t v;
        memcpy(&v, p, 8);
        if (v > INT64_MAX) break;
        *out = (int64_t)v;
        return ELM_OK;
    }
    default: return wrong_type(g, kv, "an integer", err);
    }
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' is out of range", g->path,
                      (int)kv->key.len, kv->key.s);
}

/* Optional int32 key in [lo, hi]; *out unchanged when absent. */
static elm_status get_i32(const gguf *g, const char *key, int64_t lo, int64_t hi, int32_t *out,
                          elm_error *err) {
    const gkv *kv = find_kv(g, key);
    if (!kv) return ELM_OK;
    int64_t v;
    elm_status st = kv_int(g, kv, &v, err);
    if (st) return st;
    if (v < lo || v > hi)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' = %lld is out of range [%lld, %lld]",
                          g->path, key, (long long)v, (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return ELM_OK;
}

static elm_status get_f32(const gguf *g, const char *key, float *out, elm_error *err) {
    const gkv *kv = find_kv(g, key);
    if (!kv) return ELM_OK;
    if (kv->type == GGUF_F32) {
        memcpy(out, g->base + kv->val, 4);
    } else if (kv->type == GGUF_F64) {
        double d;
        memcpy(&d, g->base + kv->val, 8);
        *out = (float)d;
    } else {
        return wrong_type(g, kv, "a float", err);
    }
    return ELM_OK;
}

static elm_status get_bool(const gguf *g, const char *key, bool *out, elm_error *err) {
    const gkv *kv = find_kv(g, key);
    if (!kv) return ELM_OK;
    if (kv->type != GGUF_BOOL) return wrong_type(g, kv, "bool", err);
    *out = g->base[kv->val] != 0;
    return ELM_OK;
}

/* String key; found = false (and OK) when absent. */
static elm_status get_str(const gguf *g, const char *key, gstr *out, bool *found, elm_error *err) {
    const gkv *kv = find_kv(g, key);
    *found = kv != NULL;
    if (!kv) return ELM_OK;
    if (kv->type != GGUF_STRING) return wrong_type(g, kv, "string", err);
    uint64_t len;
    memcpy(&len, g->base + kv->val, 8);
    out->s = (const char *)g->base + kv->val + 8;
    out->len = (size_t)len;
    return ELM_OK;
}

/* Array key whose elements must have type et and whose length, when want_count >= 0, must be
 * want_count; NULL (and OK) when absent. */
static elm_status get_array(const gguf *g, const char *key, uint32_t et, int64_t want_count,
                            const gkv **out, elm_error *err) {
    const gkv *kv = find_kv(g, key);
    *out = NULL;
    if (!kv) return ELM_OK;
    if (kv->type != GGUF_ARRAY || kv->elem_type != et) {
        char want[32];
        snprintf(want, sizeof want, "an array of %s", type_name(et));
        return wrong_type(g, kv, want, err);
    }
    if (want_count >= 0 && kv->count != (uint64_t)want_count)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' has %llu elements, expected %lld",
                          g->path, key, (unsigned long long)kv->count, (long long)want_count);
    *out = kv;
    return ELM_OK;
}

/* ---- tokenizer ---- */

/* Strings of a validated string array, one after the other. */
static gstr next_str(const gguf *g, size_t *pos) {
    uint64_t len;
    memcpy(&len, g->base + *pos, 8);
    gstr s = {(const char *)g->base + *pos + 8, (size_t)len};
    *pos += 8 + (size_t)len;
    return s;
}

/* Token ids are u32 in llama.cpp files, with 0xFFFFFFFF (or any negative value) meaning "none". */
static elm_status get_token_id(const gguf *g, const char *key, int32_t *out, elm_error *err) {
    const gkv *kv = find_kv(g, key);
    if (!kv) return ELM_OK;
    int64_t v;
    elm_status st = kv_int(g, kv, &v, err);
    if (st) return st;
    if (v < 0 || v == UINT32_MAX) v = -1;
    if (v > INT32_MAX)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' = %lld is not a token id", g->path,
                          key, (long long)v);
    *out = (int32_t)v;
    return ELM_OK;
}

static elm_status read_merges(const gguf *g, const gkv *kv, elm_vocab *v, elm_error *err) {
    if (kv->count > (1u << 24))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %llu merges (at most 2^24 allowed)", g->path,
                          (unsigned long long)kv->count);
    v->merges = calloc(kv->count ? (size_t)kv->count : 1, sizeof *v->merges);
    if (!v->merges) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    v->n_merges = (int32_t)kv->count;
    size_t pos = kv->val;
    for (int32_t i = 0; i < v->n_merges; i++) {
        gstr s = next_str(g, &pos);
        if (!(v->merges[i] = malloc(s.len + 1)))
            return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(v->merges[i], s.s, s.len);
        v->merges[i][s.len] = '\0';
    }
    return ELM_OK;
}

/* Fills and finalizes v from the tokenizer.ggml.* keys. On error v may be partly filled; the
 * caller frees it. */
static elm_status read_vocab(const gguf *g, elm_vocab *v, elm_error *err) {
    elm_status st;
    gstr model;
    bool found;
    if ((st = get_str(g, "tokenizer.ggml.model", &model, &found, err))) return st;
    if (!found)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: no tokenizer (key 'tokenizer.ggml.model' missing)", g->path);
    bool gpt2 = str_is(model, "gpt2"), gemma4 = str_is(model, "gemma4");
    if (!gpt2 && !gemma4 && !str_is(model, "llama"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tokenizer model '%.*s' is not supported "
                          "(only 'llama', 'gpt2' and 'gemma4')", g->path,
                          (int)(model.len > 64 ? 64 : model.len), model.s);
    gstr pre = {"", 0};
    if (gpt2 && (st = get_str(g, "tokenizer.ggml.pre", &pre, &found, err))) return st;
    char pre_name[32];
    snprintf(pre_name, sizeof pre_name, "%.*s", (int)(pre.len < 31 ? pre.len : 31), pre.s);
    if (gpt2 && (pre.len > 31 || !elm_pretok_canonical(pre_name)))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: tokenizer.ggml.pre '%.*s' is not supported (known: %s)", g->path,
                          (int)(pre.len > 64 ? 64 : pre.len), pre.s, elm_pretok_names());
    const gkv *tokens, *scores, *types, *merges;
    if ((st = get_array(g, "tokenizer.ggml.tokens", GGUF_STRING, -1, &tokens, err))) return st;
    if (!tokens)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens' missing", g->path);
    if (tokens->count == 0 || tokens->count > (1u << 24))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tokenizer has %llu tokens (1..2^24 allowed)",
                          g->path, (unsigned long long)tokens->count);
    int32_t n = (int32_t)tokens->count;
    if ((st = get_array(g, "tokenizer.ggml.scores", GGUF_F32, n, &scores, err))) return st;
    if ((st = get_array(g, "tokenizer.ggml.token_type", GGUF_I32, n, &types, err))) return st;
    if ((st = get_array(g, "tokenizer.ggml.merges", GGUF_STRING, -1, &merges, err))) return st;

    if ((st = elm_vocab_alloc(v, n, scores != NULL, err))) return st;
    snprintf(v->model, sizeof v->model, "%s", gpt2 ? "gpt2" : "llama");
    if (gpt2) {
        /* llama.cpp's defaults for byte-level vocabs; Llama 3's pre-tokenizer also takes whole
         * words that are tokens, and adds BOS */
        snprintf(v->pre, sizeof v->pre, "%s", elm_pretok_canonical(pre_name));
        v->add_space_prefix = false;
        v->ignore_merges = v->add_bos = strcmp(v->pre, "llama-bpe") == 0;
    } else if (gemma4) {
        /* SentencePiece-style BPE ranked by merges on raw UTF-8 with "<0xXX>" byte fallback,
         * no space prefix, cut at runs of newlines (llama.cpp's "gemma4" tokenizer) */
        if (!merges)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: gemma4 tokenizer without "
                              "'tokenizer.ggml.merges'", g->path);
        snprintf(v->pre, sizeof v->pre, "gemma4");
        v->add_space_prefix = false;
    }
    size_t pos = tokens->val;
    for (int32_t i = 0; i < n; i++) {
        gstr s = next_str(g, &pos);
        if ((st = elm_vocab_set_piece(v, i, s.s, s.len, err))) return st;
    }
    for (int32_t i = 0; i < n; i++) {
        if (scores) memcpy(&v->scores[i], g->base + scores->val + 4 * (size_t)i, 4);
        if (types) memcpy(&v->types[i], g->base + types->val + 4 * (size_t)i, 4);
        else v->types[i] = ELM_TOKEN_NORMAL;
    }
    if (merges && (st = read_merges(g, merges, v, err))) return st;
    if ((st = get_token_id(g, "tokenizer.ggml.bos_token_id", &v->bos_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.eos_token_id", &v->eos_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.unknown_token_id", &v->unk_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.padding_token_id", &v->pad_id, err)) ||
        (st = get_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
        (st = get_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos, err)) ||
        (st = get_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err)))
        return st;
    if (gemma4) v->add_bos = true; /* as llama.cpp: Gemma 4 files may say false, wrongly */
    gstr tmpl;
    if ((st = get_str(g, "tokenizer.chat_template", &tmpl, &found, err))) return st;
    if (found) {
        if (!(v->chat_template = malloc(tmpl.len + 1)))
            return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(v->chat_template, tmpl.s, tmpl.len);
        v->chat_template[tmpl.len] = '\0';
    }
    return elm_vocab_finalize(v, g->path, err);
}

/* ---- hyper-parameters ---- */

/* <arch>.<suffix> into buf */
static const char *arch_key(char *buf, size_t cap, const char *arch, const char *suffix) {
    snprintf(buf, cap, "%s.%s", arch, suffix);
    return buf;
}

/* Hyper-parameters under the architecture's key prefix (llama.cpp's names). */
static elm_status read_hparams(const gguf *g, elm_hparams *hp, elm_error *err) {
    const char *arch = hp->arch;
    int32_t key_length = 0, value_length = 0;
    struct { const char *suffix; int32_t *dst; bool required; } ints[] = {
        {"context_length", &hp->n_ctx_train, true},
        {"embedding_length", &hp->dim, true},
        {"block_count", &hp->n_layers, true},
        {"feed_forward_length", &hp->ffn_dim, true},
        {"attention.head_count", &hp->n_heads, true},
        {"attention.head_count_kv", &hp->n_kv_heads, false},
        {"attention.key_length", &key_length, false},
        {"attention.value_length", &value_length, false},
        {"attention.sliding_window", &hp->n_swa, false},
        {"attention.sliding_window_pattern", &hp->swa_period, false},
        {"rope.dimension_count", &hp->rope_dim, false},
        {"vocab_size", &hp->n_vocab, false},
    };
    elm_status st;
    char k[96];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        arch_key(k, sizeof k, arch, ints[i].suffix);
        if (ints[i].required && !find_kv(g, k))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' missing", g->path, k);
        if ((st = get_i32(g, k, 0, INT32_MAX, ints[i].dst, err))) return st;
    }
    if (!find_kv(g, arch_key(k, sizeof k, arch, "attention.head_count_kv")))
        hp->n_kv_heads = hp->n_heads;
    if (key_length != value_length)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: attention key length %d differs from value length %d", g->path,
                          key_length, value_length);
    hp->head_dim = key_length;
    hp->rms_eps = 1e-5f;
    hp->rope_theta = 10000.0f;
    if ((st = get_f32(g, arch_key(k, sizeof k, arch, "attention.layer_norm_rms_epsilon"),
                      &hp->rms_eps, err)) ||
        (st = get_f32(g, arch_key(k, sizeof k, arch, "rope.freq_base"), &hp->rope_theta, err)) ||
        (st = get_f32(g, arch_key(k, sizeof k, arch, "rope.freq_base_swa"), &hp->rope_theta_swa,
                      err)) ||
        (st = get_f32(g, arch_key(k, sizeof k, arch, "final_logit_softcapping"),
                      &hp->logit_softcap, err)))
        return st;
    /* RoPE scaling: none and linear run here; llama3's factors come as the rope_freqs tensor */
    gstr type;
    bool found;
    if ((st = get_str(g, arch_key(k, sizeof k, arch, "rope.scaling.type"), &type, &found, err)))
        return st;
    if (found && str_is(type, "linear")) {
        float factor = 1.0f;
        if ((st = get_f32(g, arch_key(k, sizeof k, arch, "rope.scaling.factor"), &factor, err)))
            return st;
        if (!(factor >= 1.0f && factor <= 1024.0f))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: RoPE scaling factor %g out of range",
                              g->path, factor);
        hp->rope_freq_scale = 1.0f / factor;
    } else if (found && !str_is(type, "none")) {
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: RoPE scaling '%.*s' is not supported (none, linear, llama3)",
                          g->path, (int)(type.len > 32 ? 32 : type.len), type.s);
    }
    return ELM_OK;
}

/* ---- tensors ---- */

typedef struct tinfo {
    char name[ELM_NAME_MAX];
    int n_dims;
    int64_t ne[ELM_MAX_DIMS];
    const elm_type_traits *tt;
    elm_type type;
    uint64_t offset;
    uint64_t nbytes;
} tinfo;

static elm_status read_tensor_info(gguf *g, uint64_t idx, tinfo *t, elm_error *err) {
    gstr name;
    uint32_t n_dims, type;
    elm_status st;
    if ((st = rd_str(g, &name, "tensor name", err))) return st;
    if (name.len == 0 || name.len >= ELM_NAME_MAX || memchr(name.s, '\0', name.len))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor %llu has an empty, over-long (>= %d bytes) or "
                          "NUL-containing name",
                          g->path, (unsigned long long)idx, ELM_NAME_MAX);
    memcpy(t->name, name.s, name.len);
    t->name[name.len] = '\0';
    if ((st = rd_u32(g, &n_dims, "tensor dimension count", err))) return st;
    if (n_dims < 1 || n_dims > ELM_MAX_DIMS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %u dimensions (1..4 allowed)",
                          g->path, t->name, n_dims);
    t->n_dims = (int)n_dims;
    uint64_t count = 1;
    for (uint32_t i = 0; i < n_dims; i++) {
        uint64_t ne;
        if ((st = rd_u64(g, &ne, "tensor dimension", err))) return st;
        if (ne == 0)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has a dimension of size 0",
                              g->path, t->name);
        if (ne > INT64_MAX / count)
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: tensor '%s' element count overflows 64 bits", g->path, t->name);
        count *= ne;
        t->ne[i] = (int64_t)ne;
    }
    for (uint32_t i = n_dims; i < ELM_MAX_DIMS; i++) t->ne[i] = 1;
    if ((st = rd_u32(g, &type, "tensor type", err))) return st;
    if ((st = rd_u64(g, &t->offset, "tensor offset", err))) return st;
    if (!(t->tt = elm_type_get(type)))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: tensor '%s' has unsupported tensor type %u (edgelm reads %s)",
                          g->path, t->name, type, elm_type_names(false));
    t->type = (elm_type)type;
    if (t->ne[0] % t->tt->block_size != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' row of %lld is not a multiple of the %s block size %d",
                          g->path, t->name, (long long)t->ne[0], t->tt->name, t->tt->block_size);
    uint64_t blocks = count / (uint64_t)t->tt->block_size;
    if (blocks > UINT64_MAX / t->tt->block_bytes)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' byte size overflows 64 bits",
                          g->path, t->name);
    t->nbytes = blocks * t->tt->block_bytes;
    return ELM_OK;
}

/* Reads the tensor infos that follow the key/value pairs and adds each tensor to m, its data
 * pointing into the mapping. */
static elm_status read_tensors(gguf *g, elm_model *m, elm_error *err) {
    elm_status st;
    uint32_t align = GGUF_DEFAULT_ALIGNMENT;
    const gkv *akv = find_kv(g, "general.alignment");
    if (akv) {
        int64_t a;
        if ((st = kv_int(g, akv, &a, err))) return st;
        if (a <= 0 || a > (1 << 30) || (a & (a - 1)))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: general.alignment %lld is not a power of two",
                              g->path, (long long)a);
        align = (uint32_t)a;
    }
    tinfo *ti = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *ti);
    if (!ti) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    st = ELM_OK;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) st = read_tensor_info(g, i, &ti[i], err);
    size_t data_start = (g->pos + align - 1) / align * align;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        tinfo *t = &ti[i];
        if (t->offset % align != 0)
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "%s: tensor '%s' offset %llu is not a multiple of the alignment %u",
                            g->path, t->name, (unsigned long long)t->offset, align);
        else if (data_start > g->size || t->offset > g->size - data_start ||
                 t->nbytes > g->size - data_start - t->offset)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' offset+size past end of file",
                            g->path, t->name);
        else
            st = elm_model_add_tensor(m, t->name, t->type, t->n_dims, t->ne,
                                      (void *)(g->base + data_start + t->offset), (size_t)t->nbytes,
                                      err);
    }
    /* two tensors sharing bytes would alias each other's weights */
    elm_byte_range *r = st ? NULL : malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *r);
    if (!st && !r) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_tensors && !st; i++)
        r[i] = (elm_byte_range){ti[i].name, ti[i].offset, ti[i].offset + ti[i].nbytes};
    if (!st) st = elm_ranges_check_disjoint(g->path, r, (size_t)g->n_tensors, err);
    free(r);
    free(ti);
    return st;
}

/* ---- entry points ---- */

static elm_status open_gguf(gguf *g, const char *path, const void *addr, size_t size,
                            elm_error *err) {
    memset(g, 0, sizeof *g);
    g->base = addr;
    g->size = size;
    g->path = path;
    return parse_header(g, err);
}

elm_status elm_load_gguf(elm_model *m, const char *path, bool in_memory, elm_error *err) {
    void *addr;
    size_t size;
    elm_status st = in_memory ? elm_read_file_huge(path, &addr, &size, err)
                              : elm_map_file(path, &addr, &size, err);
    if (st) return st;
    if (addr && (st = elm_model_own_mapping(m, addr, size, err))) return st;
    gguf g;
    if ((st = open_gguf(&g, path, addr, size, err))) goto done;

    gstr s;
    bool found;
    if ((st = get_str(&g, "general.architecture", &s, &found, err))) goto done;
    if (!found) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'general.architecture' missing", path);
        goto done;
    }
    snprintf(m->hp.arch, sizeof m->hp.arch, "%.*s", (int)(s.len < 31 ? s.len : 31), s.s);
    if ((st = get_str(&g, "general.name", &s, &found, err))) goto done;
    if (found) snprintf(m->name, sizeof m->name, "%.*s", (int)(s.len < 127 ? s.len : 127), s.s);
    int32_t ftype = 0;
    if ((st = get_i32(&g, "general.file_type", 0, INT32_MAX, &ftype, err))) goto done;
    m->file_type = (uint32_t)ftype;

    /* the tensors are read for every architecture so that a malformed file is always reported;
     * hyper-parameters only for those elm_model_bind accepts, and the vocab also from a
     * vocab-only file of any other (tokenizing needs nothing else; bind still refuses it) */
    if ((st = read_tensors(&g, m, err))) goto done;
    if (elm_arch_find(m->hp.arch)) {
        char k[96];
        if ((st = read_hparams(&g, &m->hp, err))) goto done;
        if ((st = read_vocab(&g, &m->vocab, err))) goto done;
        if (!find_kv(&g, arch_key(k, sizeof k, m->hp.arch, "vocab_size")))
            m->hp.n_vocab = m->vocab.n_tokens;
    } else if (g.n_tensors == 0 && find_kv(&g, "tokenizer.ggml.model")) {
        /* a vocab-only file of a family edgelm does not run: its vocab when it reads, else the
         * family is what to report (elm_vocab_load gives the vocab's own error) */
        if (read_vocab(&g, &m->vocab, NULL))
            st = elm_errorf(err, ELM_ERR_UNSUPPORTED,
                            "%s: unsupported architecture '%s' (edgelm runs %s)", path,
                            m->hp.arch, elm_arch_names());
    }
done:
    free(g.kv);
    return st;
}

elm_status elm_vocab_load(const char *path, elm_vocab *v, elm_error *err) {
    memset(v, 0, sizeof *v);
    void *addr;
    size_t size;
    elm_status st = elm_map_file(path, &addr, &size, err);
    if (st) return st;
    gguf g;
    st = open_gguf(&g, path, addr, size, err);
    if (!st) st = read_vocab(&g, v, err);
    if (st) elm_vocab_free(v);
    free(g.kv);
    elm_unmap(addr, size);
    return st;
}
