/* The GBNF text of JSON-schema translations (json_schema.h) that depends on no schema's structure.
 *
 * Helper rules: fixed text for whitespace, any value, strings and their characters, numbers, and
 * the formats, each written once at the end of a grammar that names it (elm_json_object_gbnf is
 * the same text under `root ::= object`).
 *
 * Integer and number bounds as digit ranges: the integers in [a, b] are split by their number of
 * digits; lengths wholly inside become `[1-9] [0-9]{m,n}`, a partial length the usual recursion on
 * digit strings (a common first digit; else the rest of the first digit's numbers, the whole
 * middle digits, the start of the last digit's). Numbers with integer bounds are their integer
 * part ranged the same way and a fraction: any fraction strictly inside the bounds, a zero
 * fraction on an inclusive upper bound (100 and 100.0 are 100), a nonzero one on an exclusive
 * lower bound. Negative values are a minus sign before the magnitudes of the mirrored bounds.
 * Bounds are 64-bit; an open side allows 16 digits, or as many as the other bound has. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "edgelm/grammar.h"
#include "generate/json_schema.h"

/* ---- helper rules ---- */

#define WS_BODY "| \" \" | \"\\n\" [ \\t]{0,20}"
#define VALUE_BODY "object | array | string | number | boolean | null"
#define OBJECT_BODY \
    "\"{\" ws ( string ws \":\" ws value ( ws \",\" ws string ws \":\" ws value )* ws )? \"}\""
#define ARRAY_BODY "\"[\" ws ( value ( ws \",\" ws value )* ws )? \"]\""
#define STRING_BODY "\"\\\"\" char* \"\\\"\""
/* One character of a JSON string. \u escapes of UTF-16 surrogates are left out: ajv counts a
 * pair as one character where the grammar would count two (minLength), and a lone one is no
 * text. Raw characters are code points (the grammar works on UTF-8), as ajv counts them. */
#define CHAR_BODY                                                                       \
    "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-CeEfF] hex{3} | " \
    "[dD] [0-7] hex{2} ) )"
#define HEX_BODY "[0-9a-fA-F]"
#define NUMBER_BODY "\"-\"? int-part frac? exp?"
#define INT_PART_BODY "\"0\" | [1-9] [0-9]{0,15}" /* JS_OPEN_DIGITS */
#define FRAC_BODY "\".\" [0-9]{1,16}"
/* Two exponent digits: 16 digits times 1e99 is still a finite double (ajv refuses Infinity). */
#define EXP_BODY "[eE] [-+]? [0-9]{1,2}"
#define BOOLEAN_BODY "\"true\" | \"false\""
#define NULL_BODY "\"null\""

#define LINE(name, body) name " ::= " body "\n"
static const char json_object_text[] =
    LINE("root", "object") LINE("object", OBJECT_BODY) LINE("value", VALUE_BODY)
    LINE("array", ARRAY_BODY) LINE("string", STRING_BODY) LINE("char", CHAR_BODY)
    LINE("hex", HEX_BODY) LINE("number", NUMBER_BODY) LINE("int-part", INT_PART_BODY)
    LINE("frac", FRAC_BODY) LINE("exp", EXP_BODY) LINE("boolean", BOOLEAN_BODY)
    LINE("null", NULL_BODY) LINE("ws", WS_BODY);

const char *elm_json_object_gbnf(void) { return json_object_text; }

#define B(i) (1u << (i))
static const struct helper_rule {
    const char *name, *body;
    uint32_t deps; /* the helpers its body names */
} helpers[N_HELPERS] = {
    [H_WS] = {"ws", WS_BODY, 0},
    [H_VALUE] = {"value", VALUE_BODY,
                 B(H_OBJECT) | B(H_ARRAY) | B(H_STRING) | B(H_NUMBER) | B(H_BOOLEAN) | B(H_NULL)},
    [H_OBJECT] = {"object", OBJECT_BODY, B(H_WS) | B(H_STRING) | B(H_VALUE)},
    [H_ARRAY] = {"array", ARRAY_BODY, B(H_WS) | B(H_VALUE)},
    [H_STRING] = {"string", STRING_BODY, B(H_CHAR)},
    [H_CHAR] = {"char", CHAR_BODY, B(H_HEX)},
    [H_HEX] = {"hex", HEX_BODY, 0},
    [H_NUMBER] = {"number", NUMBER_BODY, B(H_INT_PART) | B(H_FRAC) | B(H_EXP)},
    [H_INTEGER] = {"integer", "\"-\"? int-part", B(H_INT_PART)},
    [H_INT_PART] = {"int-part", INT_PART_BODY, 0},
    [H_FRAC] = {"frac", FRAC_BODY, 0},
    /* a fraction that is not zero, for a value just past an exclusive bound (ending in a nonzero
     * digit is stricter than needed, and keeps the rule one line) */
    [H_FRAC_NZ] = {"frac-nonzero", "\".\" [0-9]{0,15} [1-9]", 0},
    [H_FRAC_ZERO] = {"frac-zero", "\".\" \"0\"{1,16}", 0},
    [H_EXP] = {"exp", EXP_BODY, 0},
    [H_BOOLEAN] = {"boolean", BOOLEAN_BODY, 0},
    [H_NULL] = {"null", NULL_BODY, 0},
    /* format "date" as ajv-formats checks it: the days of each month, February 29 in leap years */
    [H_DATE] =
        {"date",
         "[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | "
         "\"3\" [01] ) | ( \"0\" [469] | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) "
         "| \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) ) | leap-year \"-02-29\"",
         B(H_LEAP_YEAR)},
    /* divisible by 4, and by 400 when by 100 */
    [H_LEAP_YEAR] = {"leap-year",
                     "[0-9]{2} ( \"0\" [48] | [2468] [048] | [13579] [26] ) | ( \"0\" [048] | "
                     "[2468] [048] | [13579] [26] ) \"00\"",
                     0},
    /* RFC 3339 full-time: seconds and a time zone (ajv-formats's "time" wants one) */
    [H_TIME] =
        {"time",
         "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} "
         ")? ( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
         0},
    [H_DATE_TIME] = {"date-time", "date \"T\" time", B(H_DATE) | B(H_TIME)},
    [H_UUID] = {"uuid", "hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}", B(H_HEX)},
};

void js_helper(js_cx *c, elm_sbuf *b, enum js_helper h) {
    if (b) elm_sb_printf(b, " %s", helpers[h].name);
    if (c->helpers & B(h)) return;
    c->helpers |= B(h);
    for (int d = 0; d < N_HELPERS; d++)
        if (helpers[h].deps & B(d)) js_helper(c, NULL, (enum js_helper)d);
}

void js_put_rep(js_cx *c, elm_sbuf *b, const char *atom, int64_t lo, int64_t hi) {
    c->elems += 4 * (hi < 0 ? lo + 1 : hi); /* the parser makes a rule per optional copy */
    elm_sb_printf(b, " %s", atom);
    if (lo == 1 && hi == 1) return;
    if (lo == 0 && hi == 1) elm_sb_puts(b, "?");
    else if (hi < 0 && lo <= 1) elm_sb_puts(b, lo ? "+" : "*");
    else if (hi < 0) elm_sb_printf(b, "{%lld,}", (long long)lo);
    else if (lo == hi) elm_sb_printf(b, "{%lld}", (long long)lo);
    else elm_sb_printf(b, "{%lld,%lld}", (long long)lo, (long long)hi);
}

const char *js_helper_name(enum js_helper h) { return helpers[h].name; }

void js_put_helpers(const js_cx *c, elm_sbuf *out) {
    for (int h = 0; h < N_HELPERS; h++) {
        if (!(c->helpers & B(h))) continue;
        const char *body = helpers[h].body;
        if (c->python && h == H_BOOLEAN) body = "\"True\" | \"False\"";
        if (c->python && h == H_NULL) body = "\"None\"";
        elm_sb_printf(out, "%s ::= %s\n", helpers[h].name, body);
    }
}

/* ---- integer and number ranges ---- */

static const uint64_t pow10s[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

/* Digits of v (at most 19: every magnitude here is below 2^63). */
static int n_digits(uint64_t v) {
    int d = 1;
    while (d < 19 && v >= pow10s[d]) d++;
    return d;
}

/* One digit position: lo..hi. */
static void put_digit(elm_sbuf *b, char lo, char hi) {
    if (lo == hi) elm_sb_printf(b, " \"%c\"", lo);
    else elm_sb_printf(b, " [%c-%c]", lo, hi);
}

static bool all_of(const char *s, char ch) {
    for (; *s; s++)
        if (*s != ch) return false;
    return true;
}

/* How many alternatives put_same_len writes for x..y. */
static int same_len_alts(const char *x, const char *y) {
    if (!x[1] || x[0] == y[0]) return 1;
    const bool low = all_of(x + 1, '0'), high = all_of(y + 1, '9');
    return !low + ((low ? x[0] : x[0] + 1) <= (high ? y[0] : y[0] - 1)) + !high;
}

static void put_same_len(js_cx *c, elm_sbuf *b, const char *x, const char *y);

/* x..y as one atom: parenthesized when it is several alternatives. */
static void put_group(js_cx *c, elm_sbuf *b, const char *x, const char *y) {
    const bool paren = same_len_alts(x, y) > 1;
    if (paren) elm_sb_puts(b, " (");
    put_same_len(c, b, x, y);
    if (paren) elm_sb_puts(b, " )");
}

/* The digit strings from x to y, both of the same length (leading zeros included: they are the
 * tails of longer numbers), as " |"-separated alternatives. */
static void put_same_len(js_cx *c, elm_sbuf *b, const char *x, const char *y) {
    const size_t n = strlen(x);
    if (n == 1) return put_digit(b, x[0], y[0]);
    if (x[0] == y[0]) {
        put_digit(b, x[0], x[0]);
        return put_group(c, b, x + 1, y + 1);
    }
    char zeros[20], nines[20];
    memset(zeros, '0', n - 1), memset(nines, '9', n - 1);
    zeros[n - 1] = nines[n - 1] = '\0';
    const bool low = all_of(x + 1, '0'), high = all_of(y + 1, '9');
    const char from = low ? x[0] : (char)(x[0] + 1), to = high ? y[0] : (char)(y[0] - 1);
    const char *sep = "";
    if (!low) {
        put_digit(b, x[0], x[0]);
        put_group(c, b, x + 1, nines);
        sep = " |";
    }
    if (from <= to) {
        elm_sb_puts(b, sep);
        put_digit(b, from, to);
        js_put_rep(c, b, "[0-9]", (int64_t)n - 1, (int64_t)n - 1);
        sep = " |";
    }
    if (!high) {
        elm_sb_puts(b, sep);
        put_digit(b, y[0], y[0]);
        put_group(c, b, zeros, y + 1);
    }
}

/* The decimal texts of the integers in [a, b] (no leading zeros) as " |"-separated alternatives;
 * returns how many. */
static int range_alts(js_cx *c, elm_sbuf *o, uint64_t a, uint64_t b) {
    int n = 0;
    if (a == 0) {
        elm_sb_puts(o, " \"0\"");
        if (b == 0) return 1;
        n++, a = 1;
    }
    for (int d = n_digits(a), last = n_digits(b); d <= last;) {
        const uint64_t lo = pow10s[d - 1], hi = pow10s[d] - 1;
        const uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
        if (n++) elm_sb_puts(o, " |");
        if (x == lo && y == hi) { /* every d-digit number, and maybe longer ones too */
            int e = d;
            while (e < last && b >= pow10s[e + 1] - 1) e++;
            elm_sb_puts(o, " [1-9]");
            if (e > 1) js_put_rep(c, o, "[0-9]", d - 1, e - 1);
            d = e + 1;
        } else {
            char xs[24], ys[24];
            snprintf(xs, sizeof xs, "%llu", (unsigned long long)x);
            snprintf(ys, sizeof ys, "%llu", (unsigned long long)y);
            n += same_len_alts(xs, ys) - 1;
            put_same_len(c, o, xs, ys);
            d++;
        }
    }
    return n;
}

/* [a, b] after `prefix` (a sign or nothing); as one atom (parenthesized) when `atom`. */
static void put_range(js_cx *c, elm_sbuf *o, const char *prefix, uint64_t a, uint64_t b,
                      bool atom) {
    elm_sbuf alts = {0};
    const bool paren = range_alts(c, &alts, a, b) > 1 && atom;
    elm_sb_printf(o, "%s%s%s%s", prefix, paren ? " (" : "", alts.s ? alts.s : "",
                  paren ? " )" : "");
    o->oom |= alts.oom;
    free(alts.s);
}

/* The magnitude an open side reaches: 16 digits, or as many as the other bound's. */
static int64_t open_limit(const int64_t *other) {
    const int d = other ? n_digits((uint64_t)llabs(*other)) : JS_OPEN_DIGITS;
    return d >= 19 ? INT64_MAX : (int64_t)pow10s[d > JS_OPEN_DIGITS ? d : JS_OPEN_DIGITS] - 1;
}

/* A bound as an int64 (rounded inwards first for an integer), clamped to +-(2^63 - 1), which is
 * stricter; an error when it leaves nothing of that range. */
static bool to_i64(js_cx *c, js_bound bd, bool upper, bool integer, int64_t *out) {
    double v = bd.v;
    if (integer)
        v = upper ? (bd.excl ? ceil(v) - 1 : floor(v)) : (bd.excl ? floor(v) + 1 : ceil(v));
    if (upper ? v <= -0x1p63 : v >= 0x1p63)
        return js_fail_kw(c, bd.kw, ELM_ERR_UNSUPPORTED,
                          "a bound past 64-bit integers is not supported");
    *out = v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? -INT64_MAX : (int64_t)v;
    return true;
}

static void put_alt(elm_sbuf *b, int *n) {
    if ((*n)++) elm_sb_puts(b, " |");
}

/* The numbers after `sign` whose magnitude I.F (integer part I, fraction F) lies between lo and
 * hi, each inclusive, exclusive or open (lo below 0: every magnitude is above it; an open hi
 * holds the open side's limit). */
static void put_side(js_cx *c, elm_sbuf *b, const char *sign, int64_t lo, bool lo_open,
                     bool lo_excl, int64_t hi, bool hi_open, bool hi_excl, int *n) {
    /* I strictly inside: any fraction */
    const int64_t from = lo_open || lo < 0 ? 0 : lo_excl ? lo + 1 : lo, to = hi_open ? hi : hi - 1;
    if (from <= to) {
        put_alt(b, n);
        put_range(c, b, sign, (uint64_t)from, (uint64_t)to, true);
        js_helper(c, b, H_FRAC);
        elm_sb_puts(b, "?");
    }
    /* I on an exclusive lower bound: only above it */
    if (!lo_open && lo_excl && lo >= 0 && (hi_open || lo < hi)) {
        put_alt(b, n);
        elm_sb_printf(b, "%s \"%lld\"", sign, (long long)lo);
        js_helper(c, b, H_FRAC_NZ);
    }
    /* I on an inclusive upper bound: only the bound itself */
    if (!hi_open && !hi_excl && hi >= 0 && (lo_open || lo < hi || (lo == hi && !lo_excl))) {
        put_alt(b, n);
        elm_sb_printf(b, "%s \"%lld\"", sign, (long long)hi);
        js_helper(c, b, H_FRAC_ZERO);
        elm_sb_puts(b, "?");
    }
}

bool js_put_numeric(js_cx *c, elm_sbuf *b, bool integer, js_bound lo, js_bound hi) {
    if (lo.open && hi.open) return js_helper(c, b, integer ? H_INTEGER : H_NUMBER), true;
    const js_bound *bounds[2] = {&lo, &hi};
    for (int i = 0; i < 2 && !integer; i++)
        if (!bounds[i]->open && bounds[i]->v != floor(bounds[i]->v))
            return js_fail_kw(c, bounds[i]->kw, ELM_ERR_UNSUPPORTED,
                              "a non-integer bound of a number (%g) is not supported",
                              bounds[i]->v);
    int64_t l = 0, h = 0;
    if (!(lo.open || to_i64(c, lo, false, integer, &l)) ||
        !(hi.open || to_i64(c, hi, true, integer, &h)))
        return false;
    if (lo.open) l = -open_limit(hi.open ? NULL : &h);
    if (hi.open) h = open_limit(lo.open ? NULL : &l);
    int n = 0;
    if (integer) { /* negative magnitudes from 1 (no "-0"), then 0 and up */
        if (l < 0 && h >= l) {
            put_alt(b, &n);
            put_range(c, b, " \"-\"", (uint64_t)(h < -1 ? -h : 1), (uint64_t)-l, true);
        }
        if (h >= 0 && h >= l) {
            put_alt(b, &n);
            put_range(c, b, "", (uint64_t)(l > 0 ? l : 0), (uint64_t)h, false);
        }
    } else {
        put_side(c, b, " \"-\"", -h, hi.open, hi.excl, -l, lo.open, lo.excl, &n);
        put_side(c, b, "", l, lo.open, lo.excl, h, hi.open, hi.excl, &n);
    }
    if (!n)
        return js_fail_kw(c, lo.open ? hi.kw : lo.kw, ELM_ERR_UNSUPPORTED,
                          "no %s meets the bounds", integer ? "integer" : "number");
    return true;
}

bool js_put_literal(elm_sbuf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    elm_sb_puts(b, "\"");
    while (p < end) {
        const int n = elm_utf8_len(p, (size_t)(end - p));
        if (!n) return false;
        if (*p == '"' || *p == '\\') elm_sb_printf(b, "\\%c", *p);
        else if (*p == '\n') elm_sb_puts(b, "\\n");
        else if (*p < 0x20 || *p == 0x7F) elm_sb_printf(b, "\\x%02X", *p);
        else elm_sb_put(b, (const char *)p, (size_t)n);
        p += n;
    }
    elm_sb_puts(b, "\"");
    return true;
}
