/* Decoding token ids back to text: the bytes of one token, a streaming decoder that only ever
 * emits complete UTF-8 characters, and whole-sequence decoding.
 *
 * Byte-fallback tokens can split one character over several tokens, so the streaming decoder holds
 * back an incomplete sequence (at most 3 bytes) until its last byte arrives. Ill-formed input is
 * replaced by U+FFFD, one per maximal ill-formed subpart (Unicode 15, section 3.9, "U+FFFD
 * Substitution of Maximal Subparts"). A decoder may preserve some control tokens: write their
 * pieces as text where a token without bytes would write nothing (what a tool-call parser needs
 * of the templates that open and close calls with control tokens). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/bytelevel.h"
#include "tokenizer/vocab_index.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* Calls fn(ctx, b) for each byte b of the byte-level piece p[0, n): the byte each character stands
 * for; a character outside GPT-2's alphabet (none in real vocabs) as its own UTF-8 bytes. */
static void bytelevel_bytes(const unsigned char *p, uint32_t n, void (*fn)(void *, unsigned char),
                            void *ctx) {
    for (uint32_t i = 0; i < n;) {
        uint32_t len = 1, cp = p[i];
        if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
            len = 2;
            cp = (uint32_t)(p[i] & 0x1F) << 6 | (p[i + 1] & 0x3F);
        }
        int b = elm_bytelevel_byte(cp);
        if (b >= 0) fn(ctx, (unsigned char)b);
        else
            for (uint32_t k = 0; k < len; k++) fn(ctx, p[i + k]);
        i += len;
    }
}

/* Calls fn(ctx, byte) for each byte token id stands for: "▁" read as a space in text pieces (the
 * byte-level alphabet decoded in gpt2 vocabs, whose user-defined tokens are plain text), the
 * named byte of a "<0xXX>" piece, nothing for control, unknown, unused and out-of-range ids. */
static void for_token_bytes(const elm_vocab *v, int32_t id, void (*fn)(void *, unsigned char),
                            void *ctx) {
    if (id < 0 || id >= v->n_tokens) return;
    int32_t type = v->types[id];
    if (type == ELM_TOKEN_BYTE) {
        int b = elm_vocab_token_byte(v, id);
        if (b >= 0) fn(ctx, (unsigned char)b);
        return;
    }
    if (type != ELM_TOKEN_NORMAL && type != ELM_TOKEN_USER_DEFINED) return;
    const unsigned char *p = (const unsigned char *)v->pieces[id];
    uint32_t n = v->piece_len[id];
    if (strcmp(v->model, "gpt2") == 0) {
        if (type == ELM_TOKEN_NORMAL) bytelevel_bytes(p, n, fn, ctx);
        else
            for (uint32_t i = 0; i < n; i++) fn(ctx, p[i]);
        return;
    }
    for (uint32_t i = 0; i < n;) {
        if (i + 2 < n && p[i] == 0xE2 && p[i + 1] == 0x96 && p[i + 2] == 0x81) {
            fn(ctx, ' ');
            i += 3;
        } else {
            fn(ctx, p[i++]);
        }
    }
}

/* Output cursor. Once something does not fit (keeping room for the closing NUL) everything after
 * it is dropped too, so the output is always a prefix of the full text. */
typedef struct sink {
    char *out;
    size_t cap, n;
    bool full;
} sink;

static void sink_bytes(sink *s, const void *p, size_t len) {
    if (s->full || s->n + len >= s->cap) {
        s->full = true;
        return;
    }
    memcpy(s->out + s->n, p, len);
    s->n += len;
}

/* elm_token_to_bytes writes no NUL, so the whole cap is usable. */
static void raw_byte(void *ctx, unsigned char b) {
    sink *s = ctx;
    if (s->n < s->cap) s->out[s->n++] = (char)b;
}

size_t elm_token_to_bytes(const elm_vocab *v, int32_t id, char *out, size_t cap) {
    sink s = {out, cap, 0, false};
    for_token_bytes(v, id, raw_byte, &s);
    return s.n;
}

/* Total length of the sequence led by c, or 0 when c cannot start one. */
static int lead_len(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* Whether c may follow the held bytes: a continuation byte, with the tighter second-byte ranges
 * that exclude overlongs, surrogates and code points past U+10FFFF. */
static bool continues(const unsigned char *held, int n_held, unsigned char c) {
    if (n_held == 1) {
        switch (held[0]) {
        case 0xE0: return c >= 0xA0 && c <= 0xBF;
        case 0xED: return c >= 0x80 && c <= 0x9F;
        case 0xF0: return c >= 0x90 && c <= 0xBF;
        case 0xF4: return c >= 0x80 && c <= 0x8F;
        }
    }
    return (c & 0xC0) == 0x80;
}

typedef struct feed_ctx {
    elm_detok *d;
    sink *s;
} feed_ctx;

static void feed(void *ctx, unsigned char c) {
    elm_detok *d = ((feed_ctx *)ctx)->d;
    sink *s = ((feed_ctx *)ctx)->s;
    if (d->strip_leading_space) {
        d->strip_leading_space = false;
        if (c == ' ') return;
    }
    if (d->n_pending > 0) {
        if (continues(d->pending, d->n_pending, c)) {
            d->pending[d->n_pending++] = c;
            if (d->n_pending == lead_len(d->pending[0])) {
                sink_bytes(s, d->pending, (size_t)d->n_pending);
                d->n_pending = 0;
            }
            return;
        }
        sink_bytes(s, replacement, 3); /* broken sequence; c starts afresh */
        d->n_pending = 0;
    }
    int len = lead_len(c);
    if (len == 1) sink_bytes(s, &c, 1);
    else if (len == 0) sink_bytes(s, replacement, 3);
    else d->pending[d->n_pending++] = c;
}

static void terminate(sink *s) {
    if (s->cap > 0) s->out[s->n] = '\0';
}

void elm_detok_init(elm_detok *d, const elm_vocab *v, bool strip_leading_space) {
    memset(d, 0, sizeof *d);
    d->vocab = v;
    d->strip_leading_space = strip_leading_space;
}

void elm_detok_preserve(elm_detok *d, const int32_t *ids, int32_t n) {
    d->preserved = ids;
    d->n_preserved = n;
}

/* Whether d writes control token id as its text (elm_detok_preserve). */
static bool preserved(const elm_detok *d, int32_t id) {
    if (id < 0 || id >= d->vocab->n_tokens || d->vocab->types[id] != ELM_TOKEN_CONTROL) return false;
    for (int32_t i = 0; i < d->n_preserved; i++)
        if (d->preserved[i] == id) return true;
    return false;
}

size_t elm_detok_push(elm_detok *d, int32_t id, char *out, size_t cap) {
    sink s = {out, cap, 0, false};
    feed_ctx fc = {d, &s};
    if (preserved(d, id)) { /* the piece is the token's text, as the template wrote it */
        const unsigned char *p = (const unsigned char *)d->vocab->pieces[id];
        for (uint32_t i = 0; i < d->vocab->piece_len[id]; i++) feed(&fc, p[i]);
    } else {
        for_token_bytes(d->vocab, id, feed, &fc);
    }
    terminate(&s);
    return s.n;
}

size_t elm_detok_flush(elm_detok *d, char *out, size_t cap) {
    sink s = {out, cap, 0, false};
    if (d->n_pending > 0) sink_bytes(&s, replacement, 3);
    d->n_pending = 0;
    terminate(&s);
    return s.n;
}

char *elm_detokenize(const elm_vocab *v, const int32_t *ids, int64_t n, bool strip_leading_space) {
    /* Every input byte yields at most 3 output bytes (a lone byte can become U+FFFD). */
    size_t cap = 4;
    for (int64_t i = 0; i < n; i++) {
        size_t piece = ids[i] >= 0 && ids[i] < v->n_tokens ? v->piece_len[ids[i]] : 0;
        if (piece > (SIZE_MAX - cap) / 3 - 1) return NULL;
        cap += 3 * piece + 3;
    }
    char *out = malloc(cap);
    if (!out) return NULL;
    elm_detok d;
    elm_detok_init(&d, v, strip_leading_space);
    size_t len = 0;
    for (int64_t i = 0; i < n; i++) len += elm_detok_push(&d, ids[i], out + len, cap - len);
    len += elm_detok_flush(&d, out + len, cap - len);
    out[len] = '\0';
    return out;
}
