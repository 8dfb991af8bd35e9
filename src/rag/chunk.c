/* Chunking (include/edgelm/rag.h, elm_chunk_text): a text becomes blocks (Markdown headings and
 * paragraphs), blocks become pieces that fit a chunk (a paragraph over the limit cut at line
 * ends, then spaces, then UTF-8 characters), and pieces are packed greedily into chunks that a
 * heading closes and that overlap by whole pieces. A chunk is one contiguous range of the text,
 * so its text, lines and offsets are the source's, ready to cite. Token counts are per piece,
 * summed: a tokenizer's count of the joined text differs by the merges across pieces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/rag.h"
#include "edgelm/vocab.h"

enum { HEADING_LEVELS = 6 };

/* A piece: bytes [start, end), counted once; is_heading: a heading line, which starts a chunk.
 * heading: the heading path it sits under (index into chunker.paths, -1: none). */
typedef struct piece {
    int64_t start, end;
    int64_t tokens;
    int32_t heading;
    bool is_heading;
} piece;

typedef struct chunker {
    const char *text;
    size_t len;
    const elm_chunk_params *p;
    int64_t *line_starts; /* [n_lines]: offset of each line's first byte */
    int32_t n_lines;
    piece *pieces;
    int32_t n_pieces, cap_pieces;
    char **paths; /* heading paths, one per heading seen, after "" */
    int32_t n_paths, cap_paths;
    int32_t path; /* the current one */
    char *titles[HEADING_LEVELS];
} chunker;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int64_t elm_count_words(void *user, const char *text, size_t len) {
    (void)user;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (!is_space(text[i]) && (i == 0 || is_space(text[i - 1]))) n++;
    return n;
}

int64_t elm_count_vocab_tokens(void *user, const char *text, size_t len) {
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_error err;
    if (elm_tokenize_alloc(user, text, len, false, false, &ids, &n, &err)) return -1;
    free(ids);
    return n;
}

static void *grow(void *p, int32_t *cap, int32_t need, size_t size) {
    if (need <= *cap) return p;
    const int32_t c = *cap ? *cap * 2 : 64;
    void *q = realloc(p, size * (size_t)(c > need ? c : need));
    if (q) *cap = c > need ? c : need;
    return q;
}

/* 1-based line of the byte at offset pos. */
static int32_t line_of(const chunker *k, int64_t pos) {
    int32_t lo = 0, hi = k->n_lines - 1;
    while (lo < hi) {
        const int32_t mid = (lo + hi + 1) / 2;
        if (k->line_starts[mid] <= pos) lo = mid;
        else hi = mid - 1;
    }
    return lo + 1;
}

static bool push_piece(chunker *k, int64_t start, int64_t end, int64_t tokens, bool heading) {
    piece *p = grow(k->pieces, &k->cap_pieces, k->n_pieces + 1, sizeof *p);
    if (!p) return false;
    k->pieces = p;
    p[k->n_pieces++] = (piece){start, end, tokens, k->path, heading};
    return true;
}

/* The end of the span of kind `level` that starts at s (in [s, e)): 1, a line (past its '\n');
 * 2, a word (past the spaces after it); 3, the characters of at most max_tokens / 2 bytes (a
 * token is at least one byte, and a tokenizer's leading space one more), at least one. */
static int64_t next_cut(const chunker *k, int level, int64_t s, int64_t e) {
    const char *t = k->text;
    int64_t i = s;
    if (level == 1) {
        while (i < e && t[i] != '\n') i++;
        return i < e ? i + 1 : e;
    }
    if (level == 2) {
        while (i < e && is_space(t[i])) i++;
        while (i < e && !is_space(t[i])) i++;
        while (i < e && is_space(t[i])) i++;
        return i;
    }
    i = s + k->p->max_tokens / 2;
    if (i >= e) return e;
    while (i > s + 1 && ((unsigned char)t[i] & 0xC0) == 0x80) i--;
    return i;
}

/* Adds [s, e) as pieces: whole when it fits, else cut into spans of the next level. */
static elm_status add_span(chunker *k, int64_t s, int64_t e, int level, bool heading) {
    const int64_t n = k->p->count(k->p->user, k->text + s, (size_t)(e - s));
    if (n < 0) return ELM_ERR_NOMEM;
    if (n <= k->p->max_tokens || level == 3)
        return push_piece(k, s, e, n, heading) ? ELM_OK : ELM_ERR_NOMEM;
    for (int64_t a = s; a < e;) {
        const int64_t b = next_cut(k, level + 1, a, e);
        const elm_status st = add_span(k, a, b, level + 1, heading && a == s);
        if (st) return st;
        a = b;
    }
    return ELM_OK;
}

/* The heading level of line [s, e) (1..6), or 0: up to 3 spaces, 1 to 6 '#', then a space, a
 * tab or the line's end (CommonMark's ATX heading). *title: where its text starts. */
static int heading_level(const char *t, int64_t s, int64_t e, int64_t *title) {
    int64_t i = s;
    while (i < e && i - s < 3 && t[i] == ' ') i++;
    int64_t h = i;
    while (h < e && t[h] == '#') h++;
    const int level = (int)(h - i);
    if (level < 1 || level > HEADING_LEVELS || (h < e && t[h] != ' ' && t[h] != '\t')) return 0;
    *title = h;
    return level;
}

/* A fence line: up to 3 spaces, then ``` or ~~~. */
static bool is_fence(const char *t, int64_t s, int64_t e) {
    int64_t i = s;
    while (i < e && i - s < 3 && t[i] == ' ') i++;
    return e - i >= 3 && (t[i] == '`' || t[i] == '~') && t[i + 1] == t[i] && t[i + 2] == t[i];
}

static bool is_blank(const char *t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; i++)
        if (!is_space(t[i])) return false;
    return true;
}

/* Makes the heading at level with title [s, e) current: its path is the titles of the levels
 * above it and its own, joined by " > ". */
static elm_status enter_heading(chunker *k, int level, int64_t s, int64_t e) {
    while (s < e && is_space(k->text[s])) s++;
    while (e > s && (is_space(k->text[e - 1]) || k->text[e - 1] == '#')) e--;
    free(k->titles[level - 1]);
    if (!(k->titles[level - 1] = strndup(k->text + s, (size_t)(e - s)))) return ELM_ERR_NOMEM;
    for (int l = level; l < HEADING_LEVELS; l++) {
        free(k->titles[l]);
        k->titles[l] = NULL;
    }
    size_t n = 1;
    for (int l = 0; l < level; l++) n += (k->titles[l] ? strlen(k->titles[l]) : 0) + 3;
    char *path = malloc(n), *w = path;
    char **paths = grow(k->paths, &k->cap_paths, k->n_paths + 1, sizeof *paths);
    if (!path || !paths) {
        free(path);
        if (paths) k->paths = paths;
        return ELM_ERR_NOMEM;
    }
    k->paths = paths;
    *w = '\0';
    for (int l = 0; l < level; l++) {
        if (!k->titles[l]) continue;
        w += sprintf(w, "%s%s", w == path ? "" : " > ", k->titles[l]);
    }
    k->path = k->n_paths;
    k->paths[k->n_paths++] = path;
    return ELM_OK;
}

/* Lines into blocks into pieces. */
static elm_status split(chunker *k) {
    const char *t = k->text;
    const int64_t len = (int64_t)k->len;
    int64_t para = -1; /* start of the paragraph being gathered */
    bool fenced = false;
    elm_status st = ELM_OK;
    for (int32_t l = 0; l < k->n_lines && !st; l++) {
        const int64_t s = k->line_starts[l];
        const int64_t next = l + 1 < k->n_lines ? k->line_starts[l + 1] : len;
        const int64_t e = next > s && t[next - 1] == '\n' ? next - 1 : next;
        int64_t title = 0;
        const int level = fenced ? 0 : heading_level(t, s, e, &title);
        const bool ends_para = level || (!fenced && is_blank(t, s, e));
        if (ends_para && para >= 0) {
            st = add_span(k, para, s, 0, false);
            para = -1;
        }
        if (st) break;
        if (level) {
            if (!(st = enter_heading(k, level, title, e))) st = add_span(k, s, next, 0, true);
        } else if (!ends_para) {
            if (para < 0) para = s;
            if (is_fence(t, s, e)) fenced = !fenced;
        }
    }
    if (!st && para >= 0) st = add_span(k, para, len, 0, false);
    return st;
}

/* Drops the trailing whitespace of [s, e), keeping at least one byte. */
static int64_t trim_end(const char *t, int64_t s, int64_t e) {
    while (e - 1 > s && is_space(t[e - 1])) e--;
    return e;
}

static bool emit(chunker *k, elm_chunk **out, int32_t *n, int32_t *cap, int32_t first, int32_t last,
                 int64_t tokens) {
    elm_chunk *c = grow(*out, cap, *n + 1, sizeof *c);
    if (!c) return false;
    *out = c;
    const piece *a = &k->pieces[first], *b = &k->pieces[last];
    const int64_t end = trim_end(k->text, a->start, b->end);
    const char *path = b->heading < 0 ? "" : k->paths[b->heading];
    c[*n] = (elm_chunk){.start = a->start, .end = end, .line_start = line_of(k, a->start),
                        .line_end = line_of(k, end - 1), .n_tokens = (int32_t)tokens,
                        .heading = strdup(path)};
    return c[(*n)++].heading != NULL;
}

/* Pieces into chunks: greedy, a heading closes a chunk that has more than headings, a full chunk
 * hands its last pieces (up to the overlap, never all of them) to the next. */
static elm_status pack(chunker *k, elm_chunk **out, int32_t *n) {
    const int32_t max = k->p->max_tokens, overlap = k->p->overlap_tokens;
    int32_t cap = 0, first = 0;
    int64_t tokens = 0;
    bool body = false;
    for (int32_t i = 0; i < k->n_pieces; i++) {
        const piece *p = &k->pieces[i];
        if (p->is_heading && body) {
            if (!emit(k, out, n, &cap, first, i - 1, tokens)) return ELM_ERR_NOMEM;
            first = i;
            tokens = 0;
            body = false;
        } else if (i > first && tokens + p->tokens > max) {
            if (!emit(k, out, n, &cap, first, i - 1, tokens)) return ELM_ERR_NOMEM;
            int32_t carry = i;
            int64_t kept = 0;
            while (carry - 1 > first && !k->pieces[carry - 1].is_heading &&
                   kept + k->pieces[carry - 1].tokens <= overlap &&
                   kept + k->pieces[carry - 1].tokens + p->tokens <= max)
                kept += k->pieces[--carry].tokens;
            first = carry;
            tokens = kept;
            body = kept > 0;
        }
        tokens += p->tokens;
        body |= !p->is_heading;
    }
    if (k->n_pieces && !emit(k, out, n, &cap, first, k->n_pieces - 1, tokens)) return ELM_ERR_NOMEM;
    return ELM_OK;
}

elm_status elm_chunk_check(int32_t max_tokens, int32_t overlap_tokens, elm_error *err) {
    if (max_tokens < 8 || overlap_tokens < 0 || overlap_tokens > max_tokens / 2)
        return elm_errorf(err, ELM_ERR_ARG, "chunks of %d tokens overlapping by %d: want at "
                          "least 8, overlapping by 0 to half of them", max_tokens, overlap_tokens);
    return ELM_OK;
}

elm_status elm_chunk_text(const char *text, size_t len, const elm_chunk_params *p,
                          elm_chunk **out, int32_t *n, elm_error *err) {
    *out = NULL;
    *n = 0;
    const elm_status s = elm_chunk_check(p->max_tokens, p->overlap_tokens, err);
    if (s) return s;
    chunker k = {.text = text, .len = len, .p = p, .path = -1};
    int32_t cap_lines = 0;
    elm_status st = ELM_OK;
    for (size_t i = 0; i < len && !st; i++) {
        if (i > 0 && text[i - 1] != '\n') continue;
        int64_t *ls = grow(k.line_starts, &cap_lines, k.n_lines + 1, sizeof *ls);
        if (!ls) st = ELM_ERR_NOMEM;
        else (k.line_starts = ls)[k.n_lines++] = (int64_t)i;
    }
    if (!st) st = split(&k);
    if (!st) st = pack(&k, out, n);
    if (st) {
        elm_chunks_free(*out, *n);
        *out = NULL;
        *n = 0;
        elm_errorf(err, st, "chunking: out of memory for %zu bytes of text", len);
    }
    for (int i = 0; i < HEADING_LEVELS; i++) free(k.titles[i]);
    for (int32_t i = 0; i < k.n_paths; i++) free(k.paths[i]);
    free(k.paths);
    free(k.pieces);
    free(k.line_starts);
    return st;
}

void elm_chunks_free(elm_chunk *chunks, int32_t n) {
    for (int32_t i = 0; i < n; i++) free(chunks[i].heading);
    free(chunks);
}
