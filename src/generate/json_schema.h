/* What the JSON-schema translator's two files share (grammar.h's elm_json_schema_to_gbnf):
 * json_schema.c walks the schema into rules and owns the translation's state; json_schema_rules.c
 * holds the GBNF text that depends on no schema's structure: the fixed helper rules (ws, string,
 * number, the formats), the digit ranges of integer and number bounds, and literals. */
#ifndef EDGELM_GENERATE_JSON_SCHEMA_H
#define EDGELM_GENERATE_JSON_SCHEMA_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "edgelm/error.h"

#define JS_MAX_REPEAT 10000 /* the largest repetition count GBNF takes */
#define JS_OPEN_DIGITS 16   /* integer digits where no bound says otherwise (the int-part rule) */

/* The fixed rules, written once at the end of the grammar when used. */
enum js_helper {
    H_WS, H_VALUE, H_OBJECT, H_ARRAY, H_STRING, H_CHAR, H_HEX, H_NUMBER, H_INTEGER, H_INT_PART,
    H_FRAC, H_FRAC_NZ, H_FRAC_ZERO, H_EXP, H_BOOLEAN, H_NULL, H_DATE, H_LEAP_YEAR, H_TIME,
    H_DATE_TIME, H_UUID, N_HELPERS
};

typedef struct {
    char *name;
    char *body; /* NULL while being compiled, or when its body was used in its place */
} js_rule;

typedef struct {
    const cJSON *node; /* the schema a $ref points to (the root for "#") */
    int32_t rule;
    const char *ref;   /* the $ref text that first reached it, for messages */
} js_def;

/* One translation. */
typedef struct js_cx {
    const cJSON *root;
    const char *src;
    elm_error *err;
    elm_status st;
    elm_sbuf path;        /* JSON pointer of the schema being compiled */
    js_rule *rules;
    int32_t n_rules, cap_rules;
    unsigned counter;     /* suffixes that make names unique */
    uint32_t helpers;     /* the helpers used (bits) */
    js_def *defs;         /* defs[0] is the root */
    int32_t n_defs, cap_defs;
    int32_t (*edges)[2];  /* def -> def: a reference made before anything was matched */
    int32_t n_edges, cap_edges;
    int32_t cur_def;      /* the definition being compiled */
    bool left;            /* nothing matched yet since cur_def's start */
    int depth;
    int64_t elems;        /* the repetitions' share of the parsed grammar's size */
    bool python;          /* values as Python literals (True, False, None), see js_schema_to_gbnf */
} js_cx;

/* elm_json_schema_to_gbnf, and with `python` the values written as Python literals, as a tool-call
 * syntax of Python calls takes them (LFM2's): JSON but for True, False and None. A const or enum
 * value that holds true, false or null inside an array or object is refused
 * (ELM_ERR_UNSUPPORTED). */
elm_status js_schema_to_gbnf(const char *schema, size_t len, const char *src, bool python,
                             char **gbnf, elm_error *err);

const char *js_helper_name(enum js_helper h);

/* Appends " NAME" of helper h to b (b may be NULL) and marks it, and those it names, used. */
void js_helper(js_cx *c, elm_sbuf *b, enum js_helper h);

/* Appends the helpers used, one "NAME ::= BODY" a line (boolean and null in Python's spelling
 * for a translation to Python literals). */
void js_put_helpers(const js_cx *c, elm_sbuf *out);

/* Appends " ATOM" repeated lo..hi times (hi < 0: unbounded; lo, hi <= JS_MAX_REPEAT, hi != 0) in
 * its shortest GBNF form, and counts what the parser will expand it to. */
void js_put_rep(js_cx *c, elm_sbuf *b, const char *atom, int64_t lo, int64_t hi);

/* Records an error about keyword kw of the schema being translated: "SRC: POINTER/kw: message".
 * Returns false. */
bool js_fail_kw(js_cx *c, const char *kw, elm_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A lower or upper bound from minimum/exclusiveMinimum or maximum/exclusiveMaximum. */
typedef struct {
    double v;
    bool open; /* no bound */
    bool excl; /* v itself is out */
    const char *kw;
} js_bound;

/* Appends the alternatives of an integer (integer true) or a number in [lo, hi]. False (an error)
 * when no value fits, or for a number, when a bound is not an integer. */
bool js_put_numeric(js_cx *c, elm_sbuf *b, bool integer, js_bound lo, js_bound hi);

/* Appends text s as a quoted GBNF literal ("\n", "\\", "\"", other controls as "\xHH"). False,
 * b left part-way, when s is not UTF-8 (the grammar parser would refuse it). Also used by the
 * tool-call grammars (chat_tools_grammar.c). */
bool js_put_literal(elm_sbuf *b, const char *s);

#endif
