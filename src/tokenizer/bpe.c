/* BPE encoding (elm_tokenize, elm_tokenize_special): one merge engine for SentencePiece-style and
 * byte-level vocabularies.
 *
 * Special tokens spelled out in the text are cut out first, as llama.cpp does it: for each
 * special token, longest first, every occurrence in the text still raw becomes that token.
 * SentencePiece-style ("llama") raw text is then normalized the SentencePiece way (spaces become "▁" U+2581, and a "▁" is prepended
 * when add_space_prefix), split into UTF-8 characters, and adjacent symbols are merged greedily:
 * by the score of the merged piece (SentencePiece BPE model, as llama.cpp's "llama" vocab does it;
 * highest score first, leftmost on ties) or, when the vocab has merges (Hugging Face
 * tokenizer.json), by the rank of the merge rule (lowest first, leftmost on ties). Candidates live
 * in a binary heap and symbols in a linked list, so encoding is O(n log n); entries made stale by
 * an earlier merge are recognized by their recorded lengths and skipped when popped. The queue is
 * emptied at every byte no merge can cross ("\n"), which keeps it small and cache-resident on long
 * texts without changing the result. A final symbol that is not a piece falls back to its bytes'
 * "<0xXX>" tokens. Byte-level ("gpt2") raw text is cut by the vocab's pre-tokenizer regex, each
 * piece's bytes are spelled in GPT-2's byte alphabet and merged by rank on their own (with
 * ignore_merges, a piece that is itself a token is taken whole, as Llama 3's tokenizer does). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/bytelevel.h"
#include "tokenizer/pretok.h"
#include "tokenizer/vocab_index.h"

/* Texts beyond this are refused: symbol indices are int32 and normalization triples the size. */
#define ELM_TOKENIZE_MAX_BYTES ((size_t)1 << 29)

typedef struct symbol {
    int32_t prev, next; /* neighbours in the live list, -1 at the ends */
    uint32_t start, len; /* byte range in the normalized text; len 0 once merged away */
    int32_t id;          /* token whose piece this is, or -1 */
} symbol;

typedef struct candidate {
    double priority;     /* score, or -rank: larger merges first */
    int32_t left, right; /* symbol indices */
    uint32_t size;       /* left.len + right.len when queued: detects stale entries */
    int32_t merged;      /* resulting token id */
} candidate;

typedef struct heap {
    candidate *items;
    size_t n, cap;
} heap;

/* Larger priority first; among equals the leftmost pair, which is what both SentencePiece and
 * Hugging Face BPE do. */
static bool before(const candidate *a, const candidate *b) {
    return a->priority > b->priority || (a->priority == b->priority && a->left < b->left);
}

/* items (n of *cap in use, `size` bytes each) with room for one more: items itself, or items
 * reallocated to twice the capacity (`first` for an empty array); NULL when out of memory (items
 * is then unchanged). */
static void *with_room(void *items, size_t n, size_t *cap, size_t first, size_t size) {
    if (n < *cap) return items;
    const size_t c = *cap ? 2 * *cap : first;
    void *p = realloc(items, c * size);
    if (p) *cap = c;
    return p;
}

/* False when out of memory. */
static bool heap_push(heap *h, candidate c) {
    candidate *items = with_room(h->items, h->n, &h->cap, 64, sizeof *items);
    if (!items) return false;
    h->items = items;
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&c, &h->items[parent])) break;
        h->items[i] = h->items[parent];
        i = parent;
    }
    h->items[i] = c;
    return true;
}

static candidate heap_pop(heap *h) {
    candidate top = h->items[0], last = h->items[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->items[c + 1], &h->items[c])) c++;
        if (!before(&h->items[c], &last)) break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (h->n) h->items[i] = last;
    return top;
}

/* Pieces that text may turn into: control, unknown and byte tokens are reached only by id, never
 * by spelling them out ("<s>" in a prompt is three characters, as in SentencePiece). */
static bool textual(const elm_vocab *v, int32_t id) {
    if (id < 0) return false;
    int32_t t = v->types[id];
    return t != ELM_TOKEN_CONTROL && t != ELM_TOKEN_UNKNOWN && t != ELM_TOKEN_BYTE;
}

/* Queues the pair (left, right) when a merge joins them; false when out of memory. */
static bool try_pair(const elm_vocab *v, const char *text, const symbol *sym, heap *h,
                     int32_t left, int32_t right) {
    if (left < 0 || right < 0) return true;
    const symbol *a = &sym[left], *b = &sym[right];
    candidate c = {.left = left, .right = right, .size = a->len + b->len};
    if (v->merges) {
        int32_t rank;
        if (!elm_vocab_merge_rule(v, a->id, b->id, &rank, &c.merged)) return true;
        c.priority = -(double)rank;
    } else {
        c.merged = elm_vocab_find(v, text + a->start, c.size);
        if (!textual(v, c.merged)) return true;
        c.priority = v->scores[c.merged];
    }
    return heap_push(h, c);
}

/* Length of the UTF-8 character at s (n bytes left); malformed bytes count as one character
 * each so every input byte lands in exactly one symbol. */
static uint32_t utf8_char_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    uint32_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (len > n) return 1;
    for (uint32_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 1;
    return len;
}

/* SentencePiece normalization: "▁" for every space, plus one in front when requested. */
static size_t normalize(const char *text, size_t len, bool prefix, char *out) {
    static const char space[] = "\xE2\x96\x81";
    size_t n = 0;
    if (prefix && len > 0) {
        memcpy(out, space, 3);
        n = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(out + n, space, 3);
            n += 3;
        } else {
            out[n++] = text[i];
        }
    }
    return n;
}

/* Applies queued merges, best first, until the queue is empty; false when out of memory. */
static bool drain(const elm_vocab *v, const char *norm, symbol *sym, heap *h) {
    bool ok = true;
    while (ok && h->n > 0) {
        candidate c = heap_pop(h);
        symbol *a = &sym[c.left], *b = &sym[c.right];
        if (a->len == 0 || b->len == 0 || a->len + b->len != c.size) continue; /* stale */
        a->len += b->len;
        a->id = c.merged;
        b->len = 0;
        a->next = b->next;
        if (b->next >= 0) sym[b->next].prev = c.left;
        ok = try_pair(v, norm, sym, h, a->prev, c.left) &&
             try_pair(v, norm, sym, h, c.left, a->next);
    }
    return ok;
}

/* Splits the normalized text into characters (sym has room for nlen) and applies merges until
 * none is left; false when out of memory. */
static bool merge_symbols(const elm_vocab *v, const char *norm, size_t nlen, symbol *sym) {
    int32_t ns = 0;
    for (size_t off = 0; off < nlen; ns++) {
        uint32_t cl = utf8_char_len((const unsigned char *)norm + off, nlen - off);
        sym[ns] = (symbol){.prev = ns - 1, .next = -1, .start = (uint32_t)off, .len = cl,
                           .id = elm_vocab_find(v, norm + off, cl)};
        if (ns > 0) sym[ns - 1].next = ns;
        off += cl;
    }
    heap h = {0};
    bool ok = true;
    for (int32_t i = 0; ok && i < ns; i++) {
        ok = i + 1 == ns || try_pair(v, norm, sym, &h, i, i + 1);
        /* Merges never cross a wall, so the stretch before it can be finished now, in the same
         * order a single queue over the whole text would take. */
        bool wall = i + 1 == ns || (sym[i + 1].len == 1 &&
                                    elm_vocab_is_wall(v, (unsigned char)norm[sym[i + 1].start]));
        if (ok && wall) ok = drain(v, norm, sym, &h);
    }
    free(h.items);
    return ok;
}

static void put(int32_t *ids, int64_t max_ids, int64_t *n, int32_t id) {
    if (*n < max_ids) ids[*n] = id;
    (*n)++;
}

/* Emits a final symbol: its token, or byte fallback (unk where the byte token is missing or the
 * vocab has no byte fallback, once per symbol as Hugging Face does). */
static void emit_symbol(const elm_vocab *v, const char *text, const symbol *s, int32_t *ids,
                        int64_t max_ids, int64_t *n) {
    if (textual(v, s->id)) {
        put(ids, max_ids, n, s->id);
        return;
    }
    if (!v->byte_fallback) {
        if (v->unk_id >= 0) put(ids, max_ids, n, v->unk_id);
        return;
    }
    for (uint32_t k = 0; k < s->len; k++) {
        int32_t b = elm_vocab_byte_id(v, (unsigned char)text[s->start + k]);
        if (b < 0) b = v->unk_id;
        if (b >= 0) put(ids, max_ids, n, b);
    }
}

/* A stretch of the text: raw text, or a special token found in it. */
typedef struct fragment {
    size_t start, len;
    int32_t id; /* the special token, or -1 for raw text */
} fragment;

typedef struct fragments {
    fragment *items;
    size_t n, cap;
} fragments;

static bool frag_push(fragments *f, size_t start, size_t len, int32_t id) {
    fragment *items = with_room(f->items, f->n, &f->cap, 16, sizeof *items);
    if (!items) return false;
    f->items = items;
    f->items[f->n++] = (fragment){start, len, id};
    return true;
}

/* Cuts the special tokens out of text into *out (llama.cpp's order: each token in turn, longest
 * first, over what is still raw). Control and unknown tokens only when parse_special. */
static bool partition(const elm_vocab *v, const char *text, size_t len, bool parse_special,
                      fragments *out) {
    fragments cur = {0}, next = {0};
    bool ok = frag_push(&cur, 0, len, -1);
    const int32_t *specials;
    int32_t n_specials = elm_vocab_specials(v, &specials);
    for (int32_t k = 0; ok && k < n_specials; k++) {
        int32_t id = specials[k];
        if (!parse_special && v->types[id] != ELM_TOKEN_USER_DEFINED) continue;
        const char *piece = v->pieces[id];
        size_t plen = v->piece_len[id];
        next.n = 0;
        for (size_t i = 0; ok && i < cur.n; i++) {
            fragment f = cur.items[i];
            const char *hit;
            while (ok && f.id < 0 && f.len >= plen &&
                   (hit = memmem(text + f.start, f.len, piece, plen)) != NULL) {
                size_t left = (size_t)(hit - text) - f.start;
                ok = (left == 0 || frag_push(&next, f.start, left, -1)) &&
                     frag_push(&next, f.start + left, plen, id);
                f.start += left + plen;
                f.len -= left + plen;
            }
            if (ok && (f.id >= 0 || f.len > 0)) ok = frag_push(&next, f.start, f.len, f.id);
        }
        fragments t = cur;
        cur = next;
        next = t;
    }
    free(next.items);
    if (!ok) free(cur.items);
    *out = ok ? cur : (fragments){0};
    return ok;
}

/* Encoding state shared by the raw fragments of one text. */
typedef struct encoder {
    const elm_vocab *v;
    const char *text, *frag; /* the whole text; the raw fragment being encoded */
    char *buf;    /* normalized or byte-mapped text of the part being merged */
    symbol *sym;  /* one per byte of buf at most */
    int32_t *ids;
    int64_t max_ids, n;
    bool prefix; /* SentencePiece-style pieces: the fragment takes the space prefix */
} encoder;

/* Merges buf[0, blen) and emits its symbols; false when out of memory. */
static bool merge_and_emit(encoder *e, size_t blen) {
    if (blen == 0) return true;
    if (!merge_symbols(e->v, e->buf, blen, e->sym)) return false;
    /* symbol 0 is never merged away: merges absorb the right symbol into the left one */
    for (int32_t i = 0; i >= 0; i = e->sym[i].next)
        emit_symbol(e->v, e->buf, &e->sym[i], e->ids, e->max_ids, &e->n);
    return true;
}

/* One pre-tokenized piece, frag[start, start + n), of byte-level text. */
static bool bytelevel_piece(void *user, size_t start, size_t n) {
    encoder *e = user;
    size_t blen = elm_bytelevel_encode((const unsigned char *)e->frag + start, n, e->buf);
    if (e->v->ignore_merges) {
        int32_t id = elm_vocab_find(e->v, e->buf, blen);
        if (textual(e->v, id)) {
            put(e->ids, e->max_ids, &e->n, id);
            return true;
        }
    }
    return merge_and_emit(e, blen);
}

/* One pre-tokenized piece of SentencePiece-style text (a vocab with a pre-tokenizer, Gemma 4):
 * normalized and merged on its own; the space prefix, when asked for, only in front of the
 * first. A run of newlines that is itself a token is taken whole, as llama.cpp does for Gemma 4
 * (its merges do not build every such run). */
static bool spm_piece(void *user, size_t start, size_t n) {
    encoder *e = user;
    size_t newlines = 0;
    while (newlines < n && e->frag[start + newlines] == '\n') newlines++;
    if (newlines == n) {
        int32_t id = elm_vocab_find(e->v, e->frag + start, n);
        if (textual(e->v, id)) {
            put(e->ids, e->max_ids, &e->n, id);
            return true;
        }
    }
    return merge_and_emit(e, normalize(e->frag + start, n, e->prefix && start == 0, e->buf));
}

static bool encode_raw(encoder *e, const fragment *f, bool prefix) {
    e->frag = e->text + f->start;
    const elm_pretok *p = elm_vocab_pretok(e->v);
    if (p && !strcmp(e->v->model, "gpt2"))
        return elm_pretok_split(p, e->frag, f->len, bytelevel_piece, e);
    if (p) {
        e->prefix = prefix;
        return elm_pretok_split(p, e->frag, f->len, spm_piece, e);
    }
    return merge_and_emit(e, normalize(e->frag, f->len, prefix, e->buf));
}

int64_t elm_tokenize_special(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                             bool parse_special, int32_t *ids, int64_t max_ids, elm_error *err) {
    if (!v->index) {
        elm_errorf(err, ELM_ERR_ARG, "tokenize: vocabulary not finalized");
        return -1;
    }
    if (len > ELM_TOKENIZE_MAX_BYTES) {
        elm_errorf(err, ELM_ERR_ARG, "tokenize: text of %zu bytes too long (max %zu)", len,
                   ELM_TOKENIZE_MAX_BYTES);
        return -1;
    }
    if (max_ids < 0 || (max_ids > 0 && !ids)) max_ids = 0;
    encoder e = {.v = v, .text = text, .ids = ids, .max_ids = max_ids};
    if (add_bos && v->bos_id >= 0) put(ids, max_ids, &e.n, v->bos_id);
    if (len == 0) return e.n;

    /* normalization at most triples a byte (" " -> "▁") and adds a 3-byte prefix */
    fragments frags = {0};
    e.buf = malloc(3 * len + 3);
    e.sym = e.buf ? malloc((3 * len + 3) * sizeof *e.sym) : NULL;
    bool ok = e.sym && partition(v, text, len, parse_special, &frags);
    /* SentencePiece's space prefix goes in front of the text and after every special token */
    bool after_special = true;
    for (size_t i = 0; ok && i < frags.n; i++) {
        const fragment *f = &frags.items[i];
        if (f->id >= 0) put(ids, max_ids, &e.n, f->id);
        else ok = encode_raw(&e, f, v->add_space_prefix && after_special);
        after_special = f->id >= 0;
    }
    free(frags.items);
    free(e.buf);
    free(e.sym);
    if (!ok) {
        elm_errorf(err, ELM_ERR_NOMEM, "tokenize: out of memory for %zu bytes of text", len);
        return -1;
    }
    return e.n;
}

int64_t elm_tokenize(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                     int32_t *ids, int64_t max_ids, elm_error *err) {
    return elm_tokenize_special(v, text, len, add_bos, false, ids, max_ids, err);
}
