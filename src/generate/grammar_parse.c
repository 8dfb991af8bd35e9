/* GBNF text -> elm_grammar (grammar.h, grammar_impl.h): a recursive-descent parser after
 * llama.cpp's grammar-parser.cpp for the syntax; the compiled form is ours and works on bytes.
 * Character classes become the UTF-8 byte sequences of their code points, repetitions and groups
 * become rules, and left recursion is refused here (the matcher would never stop expanding). */
#include <stdlib.h>
#include <string.h>

#include "generate/grammar_impl.h"

#define MAX_REPEAT 10000
#define MAX_ELEMS (4 << 20)
#define MAX_NESTING 256
#define MAX_CODEPOINT 0x10FFFF

typedef struct { int32_t *v; int32_t n, cap; } ivec;

typedef struct {
    char *name;      /* NULL for a rule the parser made */
    int32_t owner;   /* the named rule it was made for (messages) */
    int32_t line;    /* where it was first used, for "not defined" */
    bool defined;
    ivec body;       /* alternatives, each ended by GR_END */
} prule;

typedef struct {
    const char *src, *start, *p, *end, *line_start;
    int32_t line;
    prule *rules;
    int32_t n_rules, cap_rules;
    int32_t *names;  /* [cap_names]: the named rules' indices by the hash of their name, -1 empty
                      * (open addressing): a grammar of many tools has tens of thousands */
    int32_t n_names, cap_names;
    int32_t current; /* the named rule being defined */
    gr_byteset *sets;
    int32_t n_sets, cap_sets;
    int64_t n_elems;
    int depth;
    elm_error *err;
    elm_status st;
} parser;

typedef struct { uint32_t lo, hi; } cp_range;

static bool fail(parser *P, const char *fmt, const char *detail) {
    if (P->st) return false;
    P->st = elm_errorf(P->err, ELM_ERR_FORMAT, "%s:%d:%d: %s%s", P->src, (int)P->line,
                       (int)(P->p - P->line_start) + 1, fmt, detail ? detail : "");
    return false;
}

static bool oom(parser *P) {
    if (!P->st) P->st = elm_errorf(P->err, ELM_ERR_NOMEM, "%s: out of memory", P->src);
    return false;
}

static bool ivec_push(parser *P, ivec *v, int32_t x) {
    if (v->n == v->cap) {
        const int32_t cap = v->cap ? v->cap * 2 : 8;
        int32_t *nv = realloc(v->v, sizeof *nv * (size_t)cap);
        if (!nv) return oom(P);
        v->v = nv, v->cap = cap;
    }
    v->v[v->n++] = x;
    return true;
}

/* Counts elements against the grammar's budget (repetitions multiply them). */
static bool budget(parser *P, int64_t n) {
    P->n_elems += n;
    return P->n_elems <= MAX_ELEMS || fail(P, "grammar too large once repetitions are expanded", NULL);
}

static bool push_elems(parser *P, ivec *v, const int32_t *e, int32_t n) {
    if (!budget(P, n)) return false;
    for (int32_t i = 0; i < n; i++)
        if (!ivec_push(P, v, e[i])) return false;
    return true;
}

static uint32_t name_hash(const char *name, size_t len) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

/* The slot of name [len] in P->names: the one holding its rule, or the empty one it would go in. */
static int32_t *name_slot(parser *P, const char *name, size_t len) {
    const uint32_t mask = (uint32_t)P->cap_names - 1;
    for (uint32_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
        int32_t *slot = &P->names[i];
        const char *n = *slot >= 0 ? P->rules[*slot].name : NULL;
        if (*slot < 0 || (strlen(n) == len && !memcmp(n, name, len))) return slot;
    }
}

/* Records named rule r in P->names, which is kept at most half full. */
static bool index_name(parser *P, int32_t r) {
    if (2 * (P->n_names + 1) > P->cap_names) {
        const int32_t cap = P->cap_names ? P->cap_names * 2 : 256;
        int32_t *old = P->names, old_cap = P->cap_names;
        if (!(P->names = malloc(sizeof *P->names * (size_t)cap))) return P->names = old, oom(P);
        P->cap_names = cap;
        for (int32_t i = 0; i < cap; i++) P->names[i] = -1;
        for (int32_t i = 0; i < old_cap; i++)
            if (old[i] >= 0) *name_slot(P, P->rules[old[i]].name, strlen(P->rules[old[i]].name)) = old[i];
        free(old);
    }
    *name_slot(P, P->rules[r].name, strlen(P->rules[r].name)) = r;
    P->n_names++;
    return true;
}

static int32_t new_rule(parser *P, const char *name, size_t len) {
    if (P->n_rules == P->cap_rules) {
        const int32_t cap = P->cap_rules ? P->cap_rules * 2 : 32;
        prule *nr = realloc(P->rules, sizeof *nr * (size_t)cap);
        if (!nr) return oom(P), -1;
        P->rules = nr, P->cap_rules = cap;
    }
    prule *r = &P->rules[P->n_rules];
    *r = (prule){.owner = P->current, .line = P->line};
    if (name) {
        if (!(r->name = malloc(len + 1))) return oom(P), -1;
        memcpy(r->name, name, len);
        r->name[len] = '\0';
        r->owner = P->n_rules;
    }
    P->n_rules++;
    if (name && !index_name(P, P->n_rules - 1)) return -1;
    return P->n_rules - 1;
}

static int32_t rule_named(parser *P, const char *name, size_t len) {
    if (P->cap_names) {
        const int32_t r = *name_slot(P, name, len);
        if (r >= 0) return r;
    }
    return new_rule(P, name, len);
}

/* The index of byte set s in the grammar's table, added if new. */
static int32_t intern_set(parser *P, const gr_byteset *s) {
    for (int32_t i = 0; i < P->n_sets; i++)
        if (!memcmp(&P->sets[i], s, sizeof *s)) return i;
    if (P->n_sets == P->cap_sets) {
        const int32_t cap = P->cap_sets ? P->cap_sets * 2 : 64;
        gr_byteset *ns = realloc(P->sets, sizeof *ns * (size_t)cap);
        if (!ns) return oom(P), -1;
        P->sets = ns, P->cap_sets = cap;
    }
    P->sets[P->n_sets] = *s;
    return P->n_sets++;
}

static int32_t byte_range_set(parser *P, unsigned lo, unsigned hi) {
    gr_byteset s = {{0}};
    for (unsigned b = lo; b <= hi; b++) s.w[b >> 5] |= 1u << (b & 31);
    return intern_set(P, &s);
}

static bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

static void skip_space(parser *P, bool newline_ok) {
    while (P->p < P->end) {
        const char c = *P->p;
        if (c == ' ' || c == '\t' || c == '\r') {
            P->p++;
        } else if (c == '#') {
            while (P->p < P->end && *P->p != '\n') P->p++;
        } else if (c == '\n' && newline_ok) {
            P->p++;
            P->line++;
            P->line_start = P->p;
        } else {
            break;
        }
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 character of the text; false (an error) on a malformed one. */
static bool decode_utf8(parser *P, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)P->p;
    const size_t left = (size_t)(P->end - P->p);
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
          : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (!n || (size_t)n > left) return fail(P, "invalid UTF-8", NULL);
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return fail(P, "invalid UTF-8", NULL);
        c = c << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_of[n] || c > MAX_CODEPOINT || (c >= 0xD800 && c <= 0xDFFF))
        return fail(P, "invalid UTF-8", NULL);
    P->p += n;
    *cp = c;
    return true;
}

/* One character of a literal or class, escapes resolved, as a code point. */
static bool parse_char(parser *P, uint32_t *cp) {
    if (P->p >= P->end) return fail(P, "unexpected end of text", NULL);
    if (*P->p != '\\') return decode_utf8(P, cp);
    if (++P->p >= P->end) return fail(P, "unexpected end of text after \\", NULL);
    const char c = *P->p++;
    int digits = 0;
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 't': *cp = '\t'; return true;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '/':
        *cp = (unsigned char)c;
        return true;
    default: P->p--; return fail(P, "unknown escape \\", (char[]){c, 0});
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        const int h = P->p < P->end ? hex_value(*P->p) : -1;
        if (h < 0) return fail(P, "expected a hex digit", NULL);
        v = v << 4 | (uint32_t)h;
        P->p++;
    }
    if (v > MAX_CODEPOINT || (v >= 0xD800 && v <= 0xDFFF))
        return fail(P, "escape is not a Unicode scalar value", NULL);
    *cp = v;
    return true;
}

static int utf8_encode(uint32_t c, unsigned char *out) {
    if (c < 0x80) return out[0] = (unsigned char)c, 1;
    if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | c >> 6);
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | c >> 12);
        out[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | c >> 18);
    out[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* "..." as one byte element per UTF-8 byte. */
static bool parse_literal(parser *P, ivec *seq) {
    P->p++;
    while (P->p < P->end && *P->p != '"') {
        if (*P->p == '\n') return fail(P, "newline in a string literal", NULL);
        uint32_t cp;
        if (!parse_char(P, &cp)) return false;
        unsigned char b[4];
        const int n = utf8_encode(cp, b);
        for (int i = 0; i < n; i++) {
            const int32_t s = byte_range_set(P, b[i], b[i]);
            if (s < 0 || !push_elems(P, seq, &s, 1)) return false;
        }
    }
    if (P->p >= P->end) return fail(P, "unterminated string literal", NULL);
    P->p++;
    return true;
}

static int by_lo(const void *a, const void *b) {
    const cp_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges ranges in place; returns the new count. */
static int32_t merge_ranges(cp_range *r, int32_t n) {
    if (n == 0) return 0; /* [] : r may be NULL */
    qsort(r, (size_t)n, sizeof *r, by_lo);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (k && r[i].lo <= r[k - 1].hi + 1) {
            if (r[i].hi > r[k - 1].hi) r[k - 1].hi = r[i].hi;
        } else {
            r[k++] = r[i];
        }
    }
    return k;
}

/* Appends to rule body the UTF-8 byte sequences of the multi-byte code points [lo, hi], as
 * regex-syntax's Utf8Sequences splits a range: until each piece's ends share their length and
 * every byte position spans a whole range of continuation bytes. */
static bool utf8_sequences(parser *P, ivec *body, uint32_t lo, uint32_t hi) {
    static const uint32_t edge[] = {0x7F, 0x7FF, 0xFFFF};
    for (int i = 0; i < 3; i++)
        if (lo <= edge[i] && hi > edge[i])
            return utf8_sequences(P, body, lo, edge[i]) && utf8_sequences(P, body, edge[i] + 1, hi);
    unsigned char a[4], b[4];
    const int n = utf8_encode(lo, a);
    for (int i = 1; i < n; i++) {
        const uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m)
                return utf8_sequences(P, body, lo, lo | m) &&
                       utf8_sequences(P, body, (lo | m) + 1, hi);
            if ((hi & m) != m)
                return utf8_sequences(P, body, lo, (hi & ~m) - 1) &&
                       utf8_sequences(P, body, hi & ~m, hi);
        }
    }
    utf8_encode(hi, b);
    for (int i = 0; i < n; i++) {
        const int32_t s = byte_range_set(P, a[i], b[i]);
        if (s < 0 || !push_elems(P, body, &s, 1)) return false;
    }
    return ivec_push(P, body, GR_END);
}

/* The element matching one code point of ranges [n], merged: a byte set when all are ASCII, else
 * a rule whose alternatives are the ASCII set and the multi-byte sequences. */
static bool class_element(parser *P, cp_range *r, int32_t n, ivec *seq) {
    gr_byteset ascii = {{0}};
    bool multi = false, any_ascii = false;
    for (int32_t i = 0; i < n; i++) {
        for (uint32_t c = r[i].lo; c <= r[i].hi && c < 0x80; c++) {
            ascii.w[c >> 5] |= 1u << (c & 31);
            any_ascii = true;
        }
        multi |= r[i].hi >= 0x80;
    }
    const int32_t as = intern_set(P, &ascii);
    if (as < 0) return false;
    if (!multi) return push_elems(P, seq, &as, 1);
    const int32_t rule = new_rule(P, NULL, 0);
    if (rule < 0) return false;
    ivec *body = &P->rules[rule].body;
    if (any_ascii && !(push_elems(P, body, &as, 1) && ivec_push(P, body, GR_END))) return false;
    for (int32_t i = 0; i < n; i++) {
        if (r[i].hi < 0x80) continue;
        const uint32_t lo = r[i].lo < 0x80 ? 0x80 : r[i].lo;
        /* surrogates have no UTF-8 form */
        if (lo < 0xD800 && r[i].hi > 0xDFFF) {
            if (!utf8_sequences(P, body, lo, 0xD7FF) ||
                !utf8_sequences(P, body, 0xE000, r[i].hi))
                return false;
        } else if (lo >= 0xD800 && r[i].hi <= 0xDFFF) {
            continue;
        } else if (!utf8_sequences(P, body, lo < 0xD800 || lo > 0xDFFF ? lo : 0xE000,
                                   r[i].hi >= 0xD800 && r[i].hi <= 0xDFFF ? 0xD7FF : r[i].hi)) {
            return false;
        }
    }
    P->rules[rule].defined = true;
    const int32_t e = GR_RULE(rule);
    return push_elems(P, seq, &e, 1);
}

/* [...] or `.` (any character). */
static bool parse_class(parser *P, ivec *seq) {
    cp_range *r = NULL;
    int32_t n = 0, cap = 0;
    bool negate = false, ok = true;
    if (*P->p == '.') {
        P->p++;
        r = malloc(sizeof *r);
        if (!r) return oom(P);
        r[n++] = (cp_range){0, MAX_CODEPOINT};
    } else {
        P->p++;
        if (P->p < P->end && *P->p == '^') negate = true, P->p++;
        while (ok && P->p < P->end && *P->p != ']') {
            uint32_t lo, hi;
            if (!(ok = parse_char(P, &lo))) break;
            hi = lo;
            if (P->p + 1 < P->end && *P->p == '-' && P->p[1] != ']') {
                P->p++;
                if (!(ok = parse_char(P, &hi))) break;
                if (hi < lo) ok = fail(P, "class range is reversed", NULL);
            }
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                cp_range *nr = realloc(r, sizeof *nr * (size_t)cap);
                if (!nr) {
                    ok = oom(P);
                    break;
                }
                r = nr;
            }
            r[n++] = (cp_range){lo, hi};
        }
        if (ok && P->p >= P->end) ok = fail(P, "unterminated character class", NULL);
        if (ok) P->p++;
        if (ok) n = merge_ranges(r, n);
        if (ok && negate) { /* the complement, in place of r: at most n + 1 ranges */
            cp_range *c = malloc(sizeof *c * (size_t)(n + 1));
            if (!c) {
                ok = oom(P);
            } else {
                int32_t k = 0;
                uint32_t next = 0;
                for (int32_t i = 0; i < n; i++) {
                    if (r[i].lo > next) c[k++] = (cp_range){next, r[i].lo - 1};
                    next = r[i].hi + 1;
                }
                if (next <= MAX_CODEPOINT) c[k++] = (cp_range){next, MAX_CODEPOINT};
                free(r);
                r = c, n = k;
            }
        }
    }
    if (ok) ok = class_element(P, r, n, seq);
    free(r);
    return ok;
}

static bool parse_alternates(parser *P, int32_t rule, bool nested);

static bool parse_count(parser *P, long *v) {
    if (P->p >= P->end || *P->p < '0' || *P->p > '9') return fail(P, "expected a number", NULL);
    *v = 0;
    while (P->p < P->end && *P->p >= '0' && *P->p <= '9') {
        *v = *v * 10 + (*P->p++ - '0');
        if (*v > MAX_REPEAT) return fail(P, "repetition count over 10000", NULL);
    }
    return true;
}

/* A rule `X S | ε` (S itself): X repeated any number of times. */
static int32_t star_rule(parser *P, int32_t x) {
    const int32_t s = new_rule(P, NULL, 0);
    if (s < 0) return -1;
    const int32_t body[] = {x, GR_RULE(s), GR_END, GR_END};
    if (!push_elems(P, &P->rules[s].body, body, 4)) return -1;
    P->rules[s].defined = true;
    return s;
}

/* The postfix operator at P->p applied to seq[from..): the repeated atom becomes one element X
 * (a rule of its own when it is several), then X{m} followed by a star or a chain of optionals. */
static bool parse_repeat(parser *P, ivec *seq, int32_t from) {
    if (from < 0 || from == seq->n) return fail(P, "repetition with nothing before it", NULL);
    int32_t x = seq->v[from];
    if (seq->n - from > 1) {
        const int32_t r = new_rule(P, NULL, 0);
        if (r < 0) return false;
        for (int32_t i = from; i < seq->n; i++)
            if (!ivec_push(P, &P->rules[r].body, seq->v[i])) return false;
        if (!ivec_push(P, &P->rules[r].body, GR_END)) return false;
        P->rules[r].defined = true;
        x = GR_RULE(r);
    }
    seq->n = from;
    long lo = 0, hi = -1; /* hi -1: unbounded */
    const char op = *P->p++;
    if (op == '+') lo = 1;
    else if (op == '?') hi = 1;
    else if (op == '{') {
        skip_space(P, true);
        if (!parse_count(P, &lo)) return false;
        skip_space(P, true);
        hi = lo;
        if (P->p < P->end && *P->p == ',') {
            P->p++;
            skip_space(P, true);
            hi = -1;
            if (P->p < P->end && *P->p != '}' && !parse_count(P, &hi)) return false;
            skip_space(P, true);
        }
        if (P->p >= P->end || *P->p != '}') return fail(P, "expected }", NULL);
        P->p++;
        if (hi >= 0 && hi < lo) return fail(P, "repetition {m,n} with n < m", NULL);
    }
    for (long i = 0; i < lo; i++)
        if (!push_elems(P, seq, &x, 1)) return false;
    if (hi < 0) {
        const int32_t s = star_rule(P, x);
        const int32_t e = GR_RULE(s);
        return s >= 0 && push_elems(P, seq, &e, 1);
    }
    int32_t next = -1; /* the chain of optionals, innermost first */
    for (long i = lo; i < hi; i++) {
        const int32_t r = new_rule(P, NULL, 0);
        if (r < 0) return false;
        const int32_t body[] = {x, GR_RULE(next), GR_END, GR_END};
        if (next < 0 ? !push_elems(P, &P->rules[r].body, (int32_t[]){x, GR_END, GR_END}, 3)
                     : !push_elems(P, &P->rules[r].body, body, 4))
            return false;
        P->rules[r].defined = true;
        next = r;
    }
    const int32_t e = GR_RULE(next);
    return next < 0 || push_elems(P, seq, &e, 1);
}

/* One alternative into rule's body: atoms and their repetitions, up to `|`, `)`, or the end of
 * the line at the top level. */
static bool parse_sequence(parser *P, int32_t rule, bool nested) {
    ivec seq = {0};
    int32_t last = -1;
    bool ok = true;
    while (ok && P->p < P->end) {
        const char c = *P->p;
        if (c == '"') {
            last = seq.n;
            ok = parse_literal(P, &seq);
        } else if (c == '[' || c == '.') {
            last = seq.n;
            ok = parse_class(P, &seq);
        } else if (is_word_char(c)) {
            const char *name = P->p;
            while (P->p < P->end && is_word_char(*P->p)) P->p++;
            const int32_t r = rule_named(P, name, (size_t)(P->p - name));
            last = seq.n;
            ok = r >= 0 && push_elems(P, &seq, (int32_t[]){GR_RULE(r)}, 1);
        } else if (c == '(') {
            if (++P->depth > MAX_NESTING) {
                ok = fail(P, "groups nested over 256 deep", NULL);
                break;
            }
            P->p++;
            skip_space(P, true);
            const int32_t r = new_rule(P, NULL, 0);
            ok = r >= 0 && parse_alternates(P, r, true);
            if (ok && (P->p >= P->end || *P->p != ')')) ok = fail(P, "expected )", NULL);
            if (ok) {
                P->p++;
                P->rules[r].defined = true;
                last = seq.n;
                ok = push_elems(P, &seq, (int32_t[]){GR_RULE(r)}, 1);
            }
            P->depth--;
        } else if ((c == '*' || c == '+' || c == '?' || c == '{') && last == -2) {
            /* x++ or x*? nests repetitions, whose ways to match the same text the matcher would
             * have to follow all of (its time grows with them, exponentially) */
            ok = fail(P, "a repetition of a repetition (write one operator, or a group)", NULL);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            ok = parse_repeat(P, &seq, last); /* the repeated atom still starts at `last` */
            last = -2;
        } else {
            break;
        }
        if (ok) skip_space(P, nested);
    }
    ivec *body = &P->rules[rule].body;
    for (int32_t i = 0; ok && i < seq.n; i++) ok = ivec_push(P, body, seq.v[i]);
    free(seq.v);
    return ok && ivec_push(P, body, GR_END);
}

static bool parse_alternates(parser *P, int32_t rule, bool nested) {
    if (!parse_sequence(P, rule, nested)) return false;
    while (P->p < P->end && *P->p == '|') {
        P->p++;
        skip_space(P, true);
        if (!parse_sequence(P, rule, nested)) return false;
    }
    return true;
}

static bool parse_rules(parser *P) {
    skip_space(P, true);
    while (P->p < P->end) {
        const char *name = P->p;
        while (P->p < P->end && is_word_char(*P->p)) P->p++;
        if (P->p == name) return fail(P, "expected a rule name", NULL);
        const int32_t r = rule_named(P, name, (size_t)(P->p - name));
        if (r < 0) return false;
        if (P->rules[r].defined) {
            P->p = name;
            return fail(P, "rule defined twice: ", P->rules[r].name);
        }
        skip_space(P, false);
        if (P->end - P->p < 3 || memcmp(P->p, "::=", 3)) return fail(P, "expected ::=", NULL);
        P->p += 3;
        skip_space(P, true);
        P->current = r;
        P->rules[r].defined = true;
        if (!parse_alternates(P, r, false)) return false;
        if (P->p < P->end && *P->p != '\n') return fail(P, "unexpected character ", (char[]){*P->p, 0});
        skip_space(P, true);
    }
    return true;
}

/* Refuses a rule that can reach itself without consuming a byte: an edge r -> s where s can
 * start r (it begins an alternative, or follows only rules that can match nothing), and a cycle
 * of such edges found depth first. */
static bool check_left_recursion(parser *P) {
    const int32_t n = P->n_rules;
    bool *nullable = calloc((size_t)n, sizeof *nullable);
    int8_t *color = calloc((size_t)n, 1);
    int32_t *first = malloc(sizeof *first * (size_t)(n + 1)), *stack = malloc(sizeof *stack * 2 * (size_t)n);
    ivec to = {0};
    bool ok = nullable && color && first && stack;
    if (!ok) oom(P);
    for (bool changed = ok; changed;) {
        changed = false;
        for (int32_t r = 0; r < n; r++) {
            const ivec *b = &P->rules[r].body;
            for (int32_t i = 0, all = 1; !nullable[r] && i < b->n; i++) {
                if (b->v[i] == GR_END) {
                    if (all) nullable[r] = changed = true;
                    all = 1;
                } else if (!GR_IS_RULE(b->v[i]) || !nullable[GR_RULE_OF(b->v[i])]) {
                    all = 0;
                }
            }
        }
    }
    for (int32_t r = 0; ok && r < n; r++) {
        first[r] = to.n;
        const ivec *b = &P->rules[r].body;
        for (int32_t i = 0, open = 1; ok && i < b->n; i++) {
            const int32_t e = b->v[i];
            if (e == GR_END) {
                open = 1;
            } else if (open && GR_IS_RULE(e)) {
                ok = ivec_push(P, &to, GR_RULE_OF(e));
                open = nullable[GR_RULE_OF(e)];
            } else {
                open = 0;
            }
        }
    }
    if (ok) first[n] = to.n;
    for (int32_t root = 0; ok && root < n; root++) {
        if (color[root]) continue;
        int32_t sp = 0;
        stack[sp++] = root, stack[sp++] = first[root];
        color[root] = 1;
        while (ok && sp) {
            const int32_t r = stack[sp - 2], k = stack[sp - 1];
            if (k == first[r + 1]) {
                color[r] = 2;
                sp -= 2;
                continue;
            }
            stack[sp - 1] = k + 1;
            const int32_t s = to.v[k];
            if (color[s] == 1) {
                const prule *o = &P->rules[P->rules[s].owner >= 0 ? P->rules[s].owner : s];
                ok = false;
                P->st = elm_errorf(P->err, ELM_ERR_FORMAT,
                                   "%s: rule %s is left-recursive (it can reach itself before "
                                   "matching a character)",
                                   P->src, o->name ? o->name : "?");
            } else if (!color[s]) {
                color[s] = 1;
                stack[sp++] = s, stack[sp++] = first[s];
            }
        }
    }
    free(nullable);
    free(color);
    free(first);
    free(stack);
    free(to.v);
    return ok;
}

/* The parser's rules laid end to end into g. */
static bool flatten(parser *P, elm_grammar *g) {
    int64_t n_elems = 0, n_alts = 0;
    for (int32_t r = 0; r < P->n_rules; r++) {
        n_elems += P->rules[r].body.n;
        for (int32_t i = 0; i < P->rules[r].body.n; i++) n_alts += P->rules[r].body.v[i] == GR_END;
    }
    g->elems = malloc(sizeof *g->elems * (size_t)(n_elems ? n_elems : 1));
    g->alt_start = malloc(sizeof *g->alt_start * (size_t)(n_alts ? n_alts : 1));
    g->rule_alt = malloc(sizeof *g->rule_alt * (size_t)(P->n_rules + 1));
    if (!g->elems || !g->alt_start || !g->rule_alt) return oom(P);
    int32_t e = 0, a = 0;
    for (int32_t r = 0; r < P->n_rules; r++) {
        g->rule_alt[r] = a;
        const ivec *b = &P->rules[r].body;
        for (int32_t i = 0; i < b->n; i++) {
            if (i == 0 || b->v[i - 1] == GR_END) g->alt_start[a++] = e + i;
        }
        memcpy(g->elems + e, b->v, sizeof *b->v * (size_t)b->n);
        e += b->n;
    }
    g->rule_alt[P->n_rules] = a;
    g->n_elems = e, g->n_alts = a, g->n_rules = P->n_rules;
    g->sets = P->sets, g->n_sets = P->n_sets;
    P->sets = NULL;
    return true;
}

elm_status elm_grammar_parse(const char *text, size_t len, const char *src, elm_grammar **out,
                             elm_error *err) {
    *out = NULL;
    parser P = {.src = src ? src : "grammar", .start = text, .p = text, .end = text + len,
                .line_start = text, .line = 1, .current = -1, .err = err};
    elm_grammar *g = calloc(1, sizeof *g);
    bool ok = g && parse_rules(&P);
    if (!g) oom(&P);
    for (int32_t r = 0; ok && r < P.n_rules; r++) {
        if (!P.rules[r].defined) {
            ok = false;
            P.st = elm_errorf(err, ELM_ERR_FORMAT, "%s:%d: rule %s is used but not defined",
                              P.src, (int)P.rules[r].line, P.rules[r].name);
        }
    }
    if (ok) {
        g->root = -1;
        for (int32_t r = 0; r < P.n_rules; r++)
            if (P.rules[r].name && !strcmp(P.rules[r].name, "root")) g->root = r;
        if (g->root < 0) {
            ok = false;
            P.st = elm_errorf(err, ELM_ERR_FORMAT, "%s: no rule named root", P.src);
        }
    }
    ok = ok && check_left_recursion(&P) && flatten(&P, g);
    for (int32_t r = 0; r < P.n_rules; r++) {
        free(P.rules[r].name);
        free(P.rules[r].body.v);
    }
    free(P.rules);
    free(P.names);
    free(P.sets);
    if (!ok) {
        elm_grammar_free(g);
        return P.st ? P.st : elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", P.src);
    }
    *out = g;
    return ELM_OK;
}

void elm_grammar_free(elm_grammar *g) {
    if (!g) return;
    free(g->elems);
    free(g->alt_start);
    free(g->rule_alt);
    free(g->sets);
    free(g);
}

static void *dup_array(const void *p, size_t bytes) {
    void *q = malloc(bytes ? bytes : 1);
    if (q && bytes) memcpy(q, p, bytes);
    return q;
}

elm_grammar *elm_grammar_copy(const elm_grammar *g) {
    elm_grammar *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    *c = *g;
    c->elems = dup_array(g->elems, sizeof *g->elems * (size_t)g->n_elems);
    c->alt_start = dup_array(g->alt_start, sizeof *g->alt_start * (size_t)g->n_alts);
    c->rule_alt = dup_array(g->rule_alt, sizeof *g->rule_alt * (size_t)(g->n_rules + 1));
    c->sets = dup_array(g->sets, sizeof *g->sets * (size_t)g->n_sets);
    if (!c->elems || !c->alt_start || !c->rule_alt || !c->sets) {
        elm_grammar_free(c);
        return NULL;
    }
    return c;
}
