/* The vocabulary object: allocation for loaders, validation, and the lookup tables the tokenizer
 * needs (piece -> id, (left, right) -> merge rule, byte -> "<0xXX>" token), all open-addressing
 * hash tables sized at finalize time so encoding never rescans the vocabulary.
 *
 * Beyond vocab.h: elm_vocab_alloc sets model to "llama" (byte-level loaders overwrite it with
 * "gpt2"; finalize refuses other kinds), and overwrites *v without freeing it; finalize gives
 * tokens whose type was left 0 the type SentencePiece would (see infer_types), compiles a gpt2
 * vocab's pre-tokenizer, lists the special tokens text can spell, and may be called again after
 * edits. */
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "tokenizer/pretok.h"
#include "tokenizer/vocab_index.h"

#define ELM_VOCAB_MAX_TOKENS (1 << 24)

typedef struct merge_slot {
    int32_t left, right; /* left == -1: empty */
    int32_t rank, merged;
} merge_slot;

struct elm_vocab_index {
    uint64_t piece_mask;  /* piece table capacity - 1 (power of two) */
    int32_t *piece_slots; /* token id or -1 */
    uint64_t merge_mask;
    merge_slot *merge_slots; /* NULL when the vocab uses scores */
    int32_t byte_ids[256];
    bool wall[128]; /* see elm_vocab_is_wall */
    elm_pretok *pretok; /* gpt2, and llama vocabs that name a pre-tokenizer */
    int32_t *specials;  /* see elm_vocab_specials */
    int32_t n_specials;
};

/* FNV-1a: short keys, good spread, no dependencies. */
static uint64_t hash_bytes(const char *s, size_t len) { return elm_fnv1a(ELM_FNV1A_INIT, s, len); }

static uint64_t hash_pair(int32_t a, int32_t b) {
    uint64_t h = ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* Smallest power of two >= 2n, so tables stay at most half full. */
static uint64_t table_capacity(uint64_t n) {
    uint64_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    return cap;
}

elm_status elm_vocab_alloc(elm_vocab *v, int32_t n, bool with_scores, elm_error *err) {
    memset(v, 0, sizeof *v);
    if (n <= 0 || n > ELM_VOCAB_MAX_TOKENS)
        return elm_errorf(err, ELM_ERR_FORMAT, "vocabulary size %d out of range (1..%d)", n,
                          ELM_VOCAB_MAX_TOKENS);
    strcpy(v->model, "llama");
    v->n_tokens = n;
    v->pieces = calloc((size_t)n, sizeof *v->pieces);
    v->piece_len = calloc((size_t)n, sizeof *v->piece_len);
    v->types = calloc((size_t)n, sizeof *v->types);
    if (with_scores) v->scores = calloc((size_t)n, sizeof *v->scores);
    v->bos_id = v->eos_id = v->unk_id = v->pad_id = -1;
    v->add_bos = true;
    v->add_space_prefix = true;
    v->byte_fallback = true;
    if (!v->pieces || !v->piece_len || !v->types || (with_scores && !v->scores)) {
        elm_vocab_free(v);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for a vocabulary of %d tokens", n);
    }
    return ELM_OK;
}

elm_status elm_vocab_set_piece(elm_vocab *v, int32_t i, const char *s, size_t len, elm_error *err) {
    if (!v->pieces || i < 0 || i >= v->n_tokens)
        return elm_errorf(err, ELM_ERR_ARG, "token id %d out of range (vocabulary of %d)", i,
                          v->n_tokens);
    if (len > UINT32_MAX - 1)
        return elm_errorf(err, ELM_ERR_FORMAT, "token %d: piece of %zu bytes too long", i, len);
    char *p = malloc(len + 1);
    if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for token %d", i);
    if (len) memcpy(p, s, len);
    p[len] = '\0';
    free(v->pieces[i]);
    v->pieces[i] = p;
    v->piece_len[i] = (uint32_t)len;
    return ELM_OK;
}

/* The byte a "<0xXX>" piece names, or -1 when the piece has another shape. */
static int parse_byte_piece(const char *p, uint32_t len) {
    if (len != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    int b = 0;
    for (int k = 3; k < 5; k++) {
        char c = p[k];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        b = b * 16 + d;
    }
    return b;
}

/* Sources without token types (llama2.c tokenizer.bin, tokenizer.json) leave them 0; give each
 * token the type SentencePiece would: byte pieces, the unknown token, BOS/EOS as control. */
static void infer_types(elm_vocab *v) {
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (v->types[i] != 0) continue;
        if (i == v->unk_id) v->types[i] = ELM_TOKEN_UNKNOWN;
        else if (i == v->bos_id || i == v->eos_id) v->types[i] = ELM_TOKEN_CONTROL;
        else if (parse_byte_piece(v->pieces[i], v->piece_len[i]) >= 0) v->types[i] = ELM_TOKEN_BYTE;
        else v->types[i] = ELM_TOKEN_NORMAL;
    }
}

static void piece_insert(elm_vocab_index *ix, const elm_vocab *v, int32_t id) {
    uint64_t k = hash_bytes(v->pieces[id], v->piece_len[id]) & ix->piece_mask;
    for (;; k = (k + 1) & ix->piece_mask) {
        int32_t o = ix->piece_slots[k];
        if (o < 0 || (v->piece_len[o] == v->piece_len[id] &&
                      memcmp(v->pieces[o], v->pieces[id], v->piece_len[id]) == 0)) {
            ix->piece_slots[k] = id; /* later ids replace earlier duplicates */
            return;
        }
    }
}

int32_t elm_vocab_find(const elm_vocab *v, const char *s, size_t len) {
    const elm_vocab_index *ix = v->index;
    if (!ix) return -1;
    uint64_t k = hash_bytes(s, len) & ix->piece_mask;
    for (;; k = (k + 1) & ix->piece_mask) {
        int32_t o = ix->piece_slots[k];
        if (o < 0) return -1;
        if (v->piece_len[o] == len && memcmp(v->pieces[o], s, len) == 0) return o;
    }
}

/* Finds the slot of (left, right): the one holding it, or the empty one where it belongs. */
static merge_slot *merge_slot_of(const elm_vocab_index *ix, int32_t left, int32_t right) {
    uint64_t k = hash_pair(left, right) & ix->merge_mask;
    for (;; k = (k + 1) & ix->merge_mask) {
        merge_slot *s = &ix->merge_slots[k];
        if (s->left < 0 || (s->left == left && s->right == right)) return s;
    }
}

bool elm_vocab_merge_rule(const elm_vocab *v, int32_t left, int32_t right, int32_t *rank,
                          int32_t *merged) {
    const elm_vocab_index *ix = v->index;
    if (!ix || !ix->merge_slots || left < 0 || right < 0) return false;
    const merge_slot *s = merge_slot_of(ix, left, right);
    if (s->left < 0) return false;
    *rank = s->rank;
    *merged = s->merged;
    return true;
}

int32_t elm_vocab_byte_id(const elm_vocab *v, unsigned char b) {
    return v->index ? v->index->byte_ids[b] : -1;
}

bool elm_vocab_is_wall(const elm_vocab *v, unsigned char b) {
    return v->index && b < 128 && v->index->wall[b];
}

const elm_pretok *elm_vocab_pretok(const elm_vocab *v) { return v->index ? v->index->pretok : NULL; }

int32_t elm_vocab_specials(const elm_vocab *v, const int32_t **ids) {
    *ids = v->index ? v->index->specials : NULL;
    return v->index ? v->index->n_specials : 0;
}

int elm_vocab_token_byte(const elm_vocab *v, int32_t id) {
    if (id < 0 || id >= v->n_tokens || v->types[id] != ELM_TOKEN_BYTE) return -1;
    return parse_byte_piece(v->pieces[id], v->piece_len[id]);
}

/* Resolves merge i ("left right") to token ids. A piece may itself contain a space, so every
 * space is tried as the separator; the first split whose halves and concatenation are all pieces
 * wins. Merges naming unknown pieces cannot fire and are skipped, as Hugging Face does. */
static elm_status add_merge(elm_vocab *v, elm_vocab_index *ix, int32_t i, char *buf,
                            const char *src, elm_error *err) {
    const char *m = v->merges[i];
    if (!m) return elm_errorf(err, ELM_ERR_FORMAT, "%s: merge %d missing", src, i);
    size_t len = strlen(m);
    for (size_t sp = 1; sp + 1 < len; sp++) {
        if (m[sp] != ' ') continue;
        int32_t l = elm_vocab_find(v, m, sp), r = elm_vocab_find(v, m + sp + 1, len - sp - 1);
        if (l < 0 || r < 0) continue;
        memcpy(buf, m, sp);
        memcpy(buf + sp, m + sp + 1, len - sp - 1);
        int32_t merged = elm_vocab_find(v, buf, len - 1);
        if (merged < 0) continue;
        merge_slot *s = merge_slot_of(ix, l, r);
        if (s->left < 0) /* a repeated rule keeps its first (best) rank */
            *s = (merge_slot){.left = l, .right = r, .rank = i, .merged = merged};
        return ELM_OK;
    }
    return ELM_OK;
}

static elm_status build_merges(elm_vocab *v, elm_vocab_index *ix, const char *src,
                               elm_error *err) {
    if (v->n_merges < 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: negative merge count %d", src, v->n_merges);
    ix->merge_mask = table_capacity((uint64_t)v->n_merges) - 1;
    ix->merge_slots = malloc((ix->merge_mask + 1) * sizeof *ix->merge_slots);
    size_t max_len = 0;
    for (int32_t i = 0; i < v->n_merges; i++)
        if (v->merges[i] && strlen(v->merges[i]) > max_len) max_len = strlen(v->merges[i]);
    char *buf = malloc(max_len + 1);
    if (!ix->merge_slots || !buf) {
        free(buf);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for %d merges", src, v->n_merges);
    }
    for (uint64_t k = 0; k <= ix->merge_mask; k++) ix->merge_slots[k].left = -1;
    elm_status st = ELM_OK;
    for (int32_t i = 0; i < v->n_merges && st == ELM_OK; i++)
        st = add_merge(v, ix, i, buf, src, err);
    free(buf);
    return st;
}

static void index_free(elm_vocab_index *ix) {
    if (!ix) return;
    free(ix->piece_slots);
    free(ix->merge_slots);
    elm_pretok_free(ix->pretok);
    free(ix->specials);
    free(ix);
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool is_special(const elm_vocab *v, int32_t i) {
    int32_t t = v->types[i];
    return (t == ELM_TOKEN_CONTROL || t == ELM_TOKEN_USER_DEFINED || t == ELM_TOKEN_UNKNOWN) &&
           v->piece_len[i] > 0;
}

/* Control, user-defined and unknown tokens with a non-empty piece, the ones elm_tokenize_special
 * may find spelled out in text, longest first (then by id) so that a token containing another
 * wins. Sorted as packed (inverted length, id) keys: qsort needs no context then. */
static elm_status build_specials(const elm_vocab *v, elm_vocab_index *ix, const char *src,
                                 elm_error *err) {
    int32_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++) n += is_special(v, i);
    if (n == 0) return ELM_OK;
    uint64_t *keys = malloc((size_t)n * sizeof *keys);
    ix->specials = malloc((size_t)n * sizeof *ix->specials);
    if (!keys || !ix->specials) {
        free(keys);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    }
    for (int32_t i = 0, k = 0; i < v->n_tokens; i++)
        if (is_special(v, i)) keys[k++] = (uint64_t)(UINT32_MAX - v->piece_len[i]) << 32 | (uint32_t)i;
    qsort(keys, (size_t)n, sizeof *keys, u64_cmp);
    for (int32_t k = 0; k < n; k++) ix->specials[k] = (int32_t)(keys[k] & 0xffffffffu);
    ix->n_specials = n;
    free(keys);
    return ELM_OK;
}

static elm_status check_fields(const elm_vocab *v, const char *src, elm_error *err) {
    bool gpt2 = strncmp(v->model, "gpt2", sizeof v->model) == 0;
    if (!gpt2 && strncmp(v->model, "llama", sizeof v->model) != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tokenizer model '%.16s' not supported "
                          "(\"llama\" SentencePiece-style or \"gpt2\" byte-level BPE)", src,
                          v->model);
    if (gpt2 && !v->merges)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: byte-level BPE tokenizer without merges", src);
    if (v->n_tokens <= 0 || v->n_tokens > ELM_VOCAB_MAX_TOKENS || !v->pieces || !v->piece_len ||
        !v->types)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: vocabulary not allocated", src);
    if (v->n_pre_regex < 0 || (v->n_pre_regex > 0 && !v->pre_regex))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: pre-tokenizer regex list missing", src);
    for (int32_t i = 0; i < v->n_pre_regex; i++)
        if (!v->pre_regex[i])
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: pre-tokenizer regex %d missing", src, i);
    if (!v->merges && !v->scores)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tokenizer has neither scores nor merges", src);
    const struct { const char *name; int32_t id; } ids[] = {
        {"bos", v->bos_id}, {"eos", v->eos_id}, {"unknown", v->unk_id}, {"padding", v->pad_id}};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++)
        if (ids[k].id < -1 || ids[k].id >= v->n_tokens)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: %s token id %d out of range (vocabulary "
                              "of %d)", src, ids[k].name, ids[k].id, v->n_tokens);
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (!v->pieces[i])
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: token %d has no text", src, i);
        if (v->types[i] < 0 || v->types[i] > ELM_TOKEN_BYTE)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: token %d has unknown type %d", src, i,
                              v->types[i]);
    }
    return ELM_OK;
}

elm_status elm_vocab_finalize(elm_vocab *v, const char *src, elm_error *err) {
    elm_status st = check_fields(v, src, err);
    if (st) return st;
    infer_types(v);
    index_free(v->index);
    v->index = NULL;
    elm_vocab_index *ix = calloc(1, sizeof *ix);
    if (!ix) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for the vocab index", src);
    ix->piece_mask = table_capacity((uint64_t)v->n_tokens) - 1;
    ix->piece_slots = malloc((ix->piece_mask + 1) * sizeof *ix->piece_slots);
    if (!ix->piece_slots) {
        index_free(ix);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory for the vocab index", src);
    }
    memset(ix->piece_slots, 0xff, (ix->piece_mask + 1) * sizeof *ix->piece_slots);
    for (int32_t i = 0; i < v->n_tokens; i++) piece_insert(ix, v, i);
    for (int b = 0; b < 256; b++) ix->byte_ids[b] = -1;
    for (int b = 0; b < 128; b++) ix->wall[b] = true;
    for (int32_t i = 0; i < v->n_tokens; i++) {
        int b = elm_vocab_token_byte(v, i);
        if (b >= 0 && ix->byte_ids[b] < 0) ix->byte_ids[b] = i;
        const unsigned char *p = (const unsigned char *)v->pieces[i];
        for (uint32_t k = 0; v->piece_len[i] > 1 && k < v->piece_len[i]; k++)
            if (p[k] < 128) ix->wall[p[k]] = false;
    }
    v->index = ix; /* elm_vocab_find works from here on, which build_merges relies on */
    if ((v->merges && (st = build_merges(v, ix, src, err))) ||
        (st = build_specials(v, ix, src, err)) ||
        (v->n_pre_regex > 0 &&
         (st = elm_pretok_compile((const char *const *)v->pre_regex, v->n_pre_regex, src,
                                  &ix->pretok, err))) ||
        (!v->n_pre_regex && (!strcmp(v->model, "gpt2") || v->pre[0]) &&
         (st = elm_pretok_new(v->pre, src, &ix->pretok, err)))) {
        v->index = NULL;
        index_free(ix);
        return st;
    }
    return ELM_OK;
}

void elm_vocab_free(elm_vocab *v) {
    if (!v) return;
    if (v->pieces)
        for (int32_t i = 0; i < v->n_tokens; i++) free(v->pieces[i]);
    free(v->pieces);
    free(v->piece_len);
    free(v->scores);
    free(v->types);
    if (v->merges)
        for (int32_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->merges);
    for (int32_t i = 0; v->pre_regex && i < v->n_pre_regex; i++) free(v->pre_regex[i]);
    free(v->pre_regex);
    free(v->chat_template);
    index_free(v->index);
    memset(v, 0, sizeof *v);
}
