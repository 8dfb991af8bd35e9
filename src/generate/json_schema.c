/* JSON schema -> GBNF (grammar.h): the grammar behind response_format json_schema.
 *
 * The schema is parsed with cJSON and walked once, depth first. Every sub-schema becomes a rule
 * named after where it sits (root-address-city) unless its whole body is the name of another rule
 * (`string`), which is then used in its place. The shared pieces (ws, string, number, the
 * formats) are fixed helper rules, written once at the end when something used them. A $ref's
 * definition is compiled into a rule of its own the first time it is met, so recursive schemas
 * become recursive rules. The helper rules' text, and the digit ranges integer and number
 * bounds become, are json_schema_rules.c's.
 *
 * The contract is soundness, not completeness: every complete match is a JSON document valid under
 * the schema (draft 2020-12, as ajv with ajv-formats checks it). Where the grammar must choose it
 * is stricter than the schema: properties in the declared order, none the schema does not name,
 * at most 16 integer and 16 fraction digits where no bound says otherwise, exponents of two
 * digits, at most 10000 characters or items where a maximum allows more. Keywords it cannot
 * enforce are refused (ELM_ERR_UNSUPPORTED), never ignored. Whitespace (`ws`, bounded) goes
 * between tokens, never before or after the root value, so a matcher knows when a document is
 * complete. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"
#include "edgelm/grammar.h"
#include "generate/chat_tools.h"
#include "generate/json_schema.h"

#define MAX_DEPTH 64        /* schema nesting, $ref hops included */
#define NAME_LEN 80         /* rule names are cut here, before a suffix makes them unique */
#define MAX_ELEMS (2 << 20) /* elements the parser may expand the grammar to (its limit: 4M) */
#define B(i) (1u << (i))

static const struct format {
    const char *name;
    enum js_helper rule;
} formats[] = {{"date", H_DATE}, {"time", H_TIME}, {"date-time", H_DATE_TIME}, {"uuid", H_UUID}};
#define N_FORMATS ((int)(sizeof formats / sizeof formats[0]))

/* ---- errors, and the JSON pointer of the place ---- */

/* Appends s with control characters as \u00XX, so that a message stays one line. */
static void put_printable(elm_sbuf *b, const char *s) {
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7F) elm_sb_printf(b, "\\u%04x", (unsigned)*s);
        else elm_sb_put(b, s, 1);
    }
}

static bool vfail(js_cx *c, elm_status code, const char *fmt, va_list ap) {
    if (c->st) return false;
    char msg[320];
    vsnprintf(msg, sizeof msg, fmt, ap);
    c->st = elm_errorf(c->err, code, "%s: %s: %s", c->src, c->path.len ? c->path.s : "(root)", msg);
    return false;
}

__attribute__((format(printf, 3, 4))) static bool fail(js_cx *c, elm_status code, const char *fmt,
                                                       ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(c, code, fmt, ap);
    va_end(ap);
    return false;
}

static bool oom(js_cx *c) { return fail(c, ELM_ERR_NOMEM, "out of memory"); }

/* Appends a segment to the path (JSON-pointer escaped); returns the length to cut it back to. */
static size_t push(js_cx *c, const char *seg) {
    const size_t at = c->path.len;
    elm_sb_puts(&c->path, "/");
    for (const char *s = seg; *s; s++) {
        if (*s == '~' || *s == '/') elm_sb_puts(&c->path, *s == '~' ? "~0" : "~1");
        else put_printable(&c->path, (const char[]){*s, 0});
    }
    return at;
}

static size_t push_index(js_cx *c, int i) {
    char s[16];
    snprintf(s, sizeof s, "%d", i);
    return push(c, s);
}

static void pop(js_cx *c, size_t at) {
    c->path.len = at;
    if (c->path.s) c->path.s[at] = '\0';
}

bool js_fail_kw(js_cx *c, const char *kw, elm_status code, const char *fmt, ...) {
    const size_t at = push(c, kw);
    va_list ap;
    va_start(ap, fmt);
    vfail(c, code, fmt, ap);
    va_end(ap);
    pop(c, at);
    return false;
}

/* s made printable into buf [cap] (cut short), for quoting in messages. */
static const char *quoted(char *buf, size_t cap, const char *s) {
    elm_sbuf b = {0};
    put_printable(&b, s);
    snprintf(buf, cap, "%s", b.s ? b.s : "?");
    free(b.s);
    return buf;
}

/* Room for one more of n elements of size elem at *p. */
static bool grow(js_cx *c, void *p, int32_t *cap, int32_t n, size_t elem) {
    if (n < *cap) return true;
    const int32_t nc = *cap ? 2 * *cap : 16;
    void *q = realloc(*(void **)p, elem * (size_t)nc);
    if (!q) return oom(c);
    *(void **)p = q, *cap = nc;
    return true;
}

/* ---- rules and their names ---- */

/* Whether a helper or a rule has the name (a linear search: the grammar parser looks names up
 * the same way, so a schema of many rules costs it more than us). */
static bool name_taken(const js_cx *c, const char *s) {
    for (int h = 0; h < N_HELPERS; h++)
        if (!strcmp(js_helper_name((enum js_helper)h), s)) return true;
    for (int32_t r = 0; r < c->n_rules; r++)
        if (!strcmp(c->rules[r].name, s)) return true;
    return false;
}

/* A new rule (no body yet) named after hint: each run of characters outside [a-zA-Z0-9] becomes
 * one '-' (none at the ends), and a number is added when the name is taken. -1 on allocation
 * failure. */
static int32_t new_rule(js_cx *c, const char *hint) {
    char base[NAME_LEN + 1], name[NAME_LEN + 16];
    size_t n = 0;
    for (const char *p = hint; *p && n < NAME_LEN; p++) {
        const char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
            base[n++] = ch;
        else if (n && base[n - 1] != '-')
            base[n++] = '-';
    }
    while (n && base[n - 1] == '-') n--;
    snprintf(base + n, sizeof base - n, "%s", n ? "" : "r");
    snprintf(name, sizeof name, "%s", base);
    while (name_taken(c, name)) snprintf(name, sizeof name, "%s-%u", base, ++c->counter);
    char *copy = strdup(name);
    if (!copy || !grow(c, &c->rules, &c->cap_rules, c->n_rules, sizeof *c->rules)) {
        free(copy);
        return oom(c), -1;
    }
    c->rules[c->n_rules] = (js_rule){copy, NULL};
    return c->n_rules++;
}

/* A rule named after its parent rule and a suffix. */
static int32_t child_rule(js_cx *c, int32_t parent, const char *suffix) {
    char hint[2 * NAME_LEN];
    snprintf(hint, sizeof hint, "%s-%s", c->rules[parent].name, suffix);
    return new_rule(c, hint);
}

static bool set_body(js_cx *c, int32_t r, elm_sbuf *body) {
    char *s = elm_sb_finish(body);
    if (!s) return oom(c);
    c->rules[r].body = s;
    return true;
}

/* ---- literals ---- */

/* Appends " LITERAL" of text s; false (an error) when it is not UTF-8. */
static bool put_literal(js_cx *c, elm_sbuf *b, const char *s) {
    elm_sb_puts(b, " ");
    return js_put_literal(b, s) || fail(c, ELM_ERR_FORMAT, "a string is not valid UTF-8");
}

/* Whether every number in v is finite: cJSON reads 1e400 as infinity, and prints it as null. */
static bool all_finite(const cJSON *v) {
    if (cJSON_IsNumber(v)) return isfinite(v->valuedouble);
    for (const cJSON *x = v->child; x; x = x->next)
        if (!all_finite(x)) return false;
    return true;
}

/* Whether v is an array or object with true, false or null somewhere inside. */
static bool holds_literal(const cJSON *v) {
    for (const cJSON *x = v->child; x; x = x->next)
        if (cJSON_IsBool(x) || cJSON_IsNull(x) || holds_literal(x)) return true;
    return false;
}

/* Appends the exact text of JSON value v (no whitespace) as a literal, in the dialect's spelling:
 * Python's true, false and null (refused inside a container, which would be written as JSON), or
 * Gemma 4's syntax. */
static bool put_json(js_cx *c, elm_sbuf *b, const cJSON *v) {
    if (!all_finite(v)) return fail(c, ELM_ERR_UNSUPPORTED, "a number out of double range");
    if (c->dialect == JS_PYTHON && (cJSON_IsBool(v) || cJSON_IsNull(v)))
        return put_literal(c, b, cJSON_IsTrue(v) ? "True" : cJSON_IsFalse(v) ? "False" : "None");
    if (c->dialect == JS_PYTHON && holds_literal(v))
        return fail(c, ELM_ERR_UNSUPPORTED, "a value with true, false or null inside is not "
                    "written as a Python literal");
    elm_sbuf g = {0};
    if (c->dialect == JS_GEMMA4) elm_put_gemma4_value(&g, v, false);
    char *text = c->dialect == JS_GEMMA4 ? elm_sb_finish(&g) : cJSON_PrintUnformatted(v);
    if (!text) return oom(c);
    const bool ok = put_literal(c, b, text);
    free(text);
    return ok;
}

/* Appends object key `key` as a JSON string (quoted, escaped), as a literal. */
static bool put_key(js_cx *c, elm_sbuf *b, const char *key) {
    if (c->dialect == JS_GEMMA4) { /* bare: a key its parser reads back whole */
        if (!*key || key[strcspn(key, ":{}[],<")])
            return fail(c, ELM_ERR_UNSUPPORTED, "property name '%s': Gemma 4's call syntax "
                        "writes keys bare, and this one holds one of :{}[],<", key);
        return put_literal(c, b, key);
    }
    cJSON *k = cJSON_CreateStringReference(key);
    if (!k) return oom(c);
    const bool ok = put_json(c, b, k);
    cJSON_Delete(k);
    return ok;
}

/* ---- keywords ---- */

enum { T_OBJECT = 1, T_ARRAY = 2, T_STRING = 4, T_NUMBER = 8, T_INTEGER = 16, T_BOOLEAN = 32,
       T_NULL = 64, T_ALL = 127 };
static const char *const type_names[] = {"object", "array", "string", "number", "integer",
                                         "boolean", "null"};
#define N_TYPES 7

enum kind { K_ANY, K_SCHEMA, K_SCHEMAS, K_SCHEMA_MAP, K_NUMBER, K_COUNT, K_STRING, K_STRINGS,
            K_TYPE, K_ARRAY };
static const char *const kind_names[] = {
    "", "a schema", "a non-empty array of schemas", "an object of schemas with distinct keys",
    "a finite number", "a non-negative integer", "a string", "an array of strings",
    "a type name or a non-empty array of them", "an array"};

/* The constraint keywords come first: those from KW_DEFS on only contain or annotate. */
enum { KW_TYPE, KW_ENUM, KW_CONST, KW_REF, KW_ANYOF, KW_ONEOF, KW_ALLOF, KW_MINLEN, KW_MAXLEN,
       KW_FORMAT, KW_MIN, KW_MAX, KW_XMIN, KW_XMAX, KW_ITEMS, KW_PREFIX, KW_MINITEMS, KW_MAXITEMS,
       KW_PROPS, KW_REQUIRED, KW_ADDL, KW_DEFS, KW_DEFINITIONS, KW_ID };

static const struct keyword {
    const char *name;
    unsigned char kind;
    unsigned char types; /* the instance types it constrains (none: every type) */
} keywords[] = {
    [KW_TYPE] = {"type", K_TYPE, 0},           [KW_ENUM] = {"enum", K_ARRAY, 0},
    [KW_CONST] = {"const", K_ANY, 0},          [KW_REF] = {"$ref", K_STRING, 0},
    [KW_ANYOF] = {"anyOf", K_SCHEMAS, 0},      [KW_ONEOF] = {"oneOf", K_SCHEMAS, 0},
    [KW_ALLOF] = {"allOf", K_SCHEMAS, 0},      [KW_MINLEN] = {"minLength", K_COUNT, T_STRING},
    [KW_MAXLEN] = {"maxLength", K_COUNT, T_STRING},
    [KW_FORMAT] = {"format", K_STRING, T_STRING},
    [KW_MIN] = {"minimum", K_NUMBER, T_NUMBER}, [KW_MAX] = {"maximum", K_NUMBER, T_NUMBER},
    [KW_XMIN] = {"exclusiveMinimum", K_NUMBER, T_NUMBER},
    [KW_XMAX] = {"exclusiveMaximum", K_NUMBER, T_NUMBER},
    [KW_ITEMS] = {"items", K_SCHEMA, T_ARRAY}, [KW_PREFIX] = {"prefixItems", K_SCHEMAS, T_ARRAY},
    [KW_MINITEMS] = {"minItems", K_COUNT, T_ARRAY},
    [KW_MAXITEMS] = {"maxItems", K_COUNT, T_ARRAY},
    [KW_PROPS] = {"properties", K_SCHEMA_MAP, T_OBJECT},
    [KW_REQUIRED] = {"required", K_STRINGS, T_OBJECT},
    [KW_ADDL] = {"additionalProperties", K_SCHEMA, T_OBJECT},
    [KW_DEFS] = {"$defs", K_SCHEMA_MAP, 0},    [KW_DEFINITIONS] = {"definitions", K_SCHEMA_MAP, 0},
    [KW_ID] = {"$id", K_ANY, 0},               {"title", K_ANY, 0},
    {"description", K_ANY, 0},                 {"$schema", K_ANY, 0},
    {"$comment", K_ANY, 0},                    {"default", K_ANY, 0},
    {"examples", K_ANY, 0},                    {"deprecated", K_ANY, 0},
    {"readOnly", K_ANY, 0},                    {"writeOnly", K_ANY, 0},
};
#define N_KEYWORDS ((int)(sizeof keywords / sizeof keywords[0]))

static bool is_schema(const cJSON *v) { return cJSON_IsObject(v) || cJSON_IsBool(v); }

/* Another member of obj with m's key: JSON.parse (ajv) keeps the last, cJSON finds the first. */
static bool key_twice(const cJSON *obj, const cJSON *m) {
    for (const cJSON *x = obj->child; x; x = x->next)
        if (x != m && !strcmp(x->string, m->string)) return true;
    return false;
}

/* The types a "type" value names; 0 when it is malformed. */
static unsigned type_bits(const cJSON *v) {
    unsigned t = 0;
    for (const cJSON *x = cJSON_IsArray(v) ? v->child : v; x;
         x = cJSON_IsArray(v) ? x->next : NULL) {
        int i = 0;
        while (i < N_TYPES && !(cJSON_IsString(x) && !strcmp(x->valuestring, type_names[i]))) i++;
        if (i == N_TYPES) return 0;
        t |= 1u << i;
    }
    return t;
}

static bool kind_ok(const cJSON *v, enum kind k) {
    switch (k) {
    case K_ANY: return true;
    case K_SCHEMA: return is_schema(v);
    case K_NUMBER: return cJSON_IsNumber(v) && isfinite(v->valuedouble);
    case K_COUNT:
        return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble == floor(v->valuedouble);
    case K_STRING: return cJSON_IsString(v);
    case K_TYPE: return type_bits(v) != 0;
    case K_ARRAY: return cJSON_IsArray(v);
    case K_SCHEMAS:
    case K_SCHEMA_MAP:
    case K_STRINGS:
        if (k == K_SCHEMA_MAP ? !cJSON_IsObject(v)
                              : !cJSON_IsArray(v) || (k == K_SCHEMAS && !v->child))
            return false;
        for (const cJSON *x = v->child; x; x = x->next)
            if (k == K_STRINGS ? !cJSON_IsString(x)
                               : !is_schema(x) || (k == K_SCHEMA_MAP && key_twice(v, x)))
                return false;
        return true;
    }
    return false;
}

/* Fills k[keyword] from the members of schema object s: a keyword not in the table is
 * unsupported; a repeated one, or one whose value has the wrong type, is a format error. */
static bool scan(js_cx *c, const cJSON *s, const cJSON **k) {
    for (const cJSON *m = s->child; m; m = m->next) {
        int i = 0;
        while (i < N_KEYWORDS && strcmp(keywords[i].name, m->string)) i++;
        char q[96];
        quoted(q, sizeof q, m->string);
        if (i == N_KEYWORDS)
            return js_fail_kw(c, m->string, ELM_ERR_UNSUPPORTED, "keyword '%s' is not supported",
                              q);
        if (k[i]) return js_fail_kw(c, m->string, ELM_ERR_FORMAT, "keyword '%s' appears twice", q);
        if (!kind_ok(m, keywords[i].kind))
            return js_fail_kw(c, m->string, ELM_ERR_FORMAT, "keyword '%s' must be %s", q,
                              kind_names[keywords[i].kind]);
        k[i] = m;
    }
    return true;
}

/* Fails on a constraint keyword beside `what` other than those in `allowed` (bits by keyword):
 * such conjunctions are not translated. */
static bool alone(js_cx *c, const cJSON *const *k, uint32_t allowed, const char *what) {
    for (int i = 0; i < KW_DEFS; i++)
        if (k[i] && !(allowed >> i & 1))
            return js_fail_kw(c, keywords[i].name, ELM_ERR_UNSUPPORTED,
                              "keyword '%s' beside '%s' is not supported", keywords[i].name, what);
    return true;
}

/* JSON types of a value; an integral number is an integer too. */
static unsigned value_types(const cJSON *v) {
    if (cJSON_IsNumber(v))
        return T_NUMBER | (v->valuedouble == floor(v->valuedouble) ? T_INTEGER : 0u);
    return cJSON_IsNull(v) ? T_NULL : cJSON_IsBool(v) ? T_BOOLEAN : cJSON_IsString(v) ? T_STRING
         : cJSON_IsArray(v) ? T_ARRAY : T_OBJECT;
}

static bool compile(js_cx *c, const cJSON *s, int32_t r, elm_sbuf *ref);

/* ---- $ref ---- */

enum ref_result { REF_OK, REF_UNSUPPORTED, REF_DANGLING };

/* The schema that ref ("#", "#/$defs/NAME" or "#/definitions/NAME", NAME percent-decoded then
 * JSON-pointer unescaped) points to, into *target; for a definition also its container and
 * name (*name malloc'd, the caller frees it). */
static enum ref_result ref_target(const js_cx *c, const char *ref, const cJSON **target,
                                  const char **container, char **name) {
    static const char *const containers[] = {"$defs", "definitions"};
    *target = NULL, *name = NULL, *container = NULL;
    if (!strcmp(ref, "#")) return *target = c->root, REF_OK;
    const char *rest = NULL;
    for (int i = 0; i < 2 && !rest; i++) {
        const size_t n = strlen(containers[i]);
        if (!strncmp(ref, "#/", 2) && !strncmp(ref + 2, containers[i], n) && ref[2 + n] == '/')
            rest = ref + 3 + n, *container = containers[i];
    }
    if (!rest || strchr(rest, '/') || !(*name = malloc(strlen(rest) + 1))) return REF_UNSUPPORTED;
    char *d = *name;
    size_t n = 0;
    for (const char *p = rest; *p; p++) {
        static const char hex[] = "0123456789abcdef0123456789ABCDEF";
        const char *h1 = *p == '%' && p[1] ? strchr(hex, p[1]) : NULL;
        const char *h2 = h1 && p[2] ? strchr(hex, p[2]) : NULL;
        if (h1 && h2) d[n++] = (char)(((h1 - hex) % 16) * 16 + (h2 - hex) % 16), p += 2;
        else if (*p == '~' && (p[1] == '0' || p[1] == '1')) d[n++] = p[1] == '0' ? '~' : '/', p++;
        else if (*p == '%' || *p == '~') return REF_UNSUPPORTED;
        else d[n++] = *p;
    }
    d[n] = '\0';
    const cJSON *defs =
        cJSON_IsObject(c->root) ? cJSON_GetObjectItemCaseSensitive(c->root, *container) : NULL;
    if (!cJSON_IsObject(defs) || strlen(d) != n) return REF_DANGLING; /* %00 names no key */
    *target = cJSON_GetObjectItemCaseSensitive(defs, d);
    return *target ? REF_OK : REF_DANGLING;
}

/* s with its $refs followed, for the cheap checks that look behind one; s itself when it has
 * none or the ref is broken (which its compilation reports). */
static const cJSON *deref(const js_cx *c, const cJSON *s) {
    for (int hops = 0; hops < MAX_DEPTH && cJSON_IsObject(s); hops++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "$ref"), *t;
        const char *container;
        char *name;
        if (!cJSON_IsString(r)) break;
        const enum ref_result res = ref_target(c, r->valuestring, &t, &container, &name);
        free(name);
        if (res != REF_OK) break;
        s = t;
    }
    return s;
}

/* The definition of target, compiled on first use as the start of a rule of its own; -1 on
 * error. */
static int32_t definition(js_cx *c, const cJSON *target, const char *ref, const char *container,
                          const char *name) {
    for (int32_t i = 0; i < c->n_defs; i++)
        if (c->defs[i].node == target) return i;
    const int32_t r = new_rule(c, name);
    if (r < 0 || !grow(c, &c->defs, &c->cap_defs, c->n_defs, sizeof *c->defs)) return -1;
    const int32_t d = c->n_defs++, cur = c->cur_def;
    c->defs[d] = (js_def){target, r, ref};
    const elm_sbuf saved = c->path;
    const bool left = c->left;
    c->path = (elm_sbuf){0};
    push(c, container);
    push(c, name);
    c->cur_def = d, c->left = true;
    const bool ok = compile(c, target, r, NULL);
    c->cur_def = cur, c->left = left;
    free(c->path.s);
    c->path = saved;
    return ok ? d : -1;
}

static bool put_ref(js_cx *c, elm_sbuf *b, const char *ref) {
    const char *container;
    const cJSON *target;
    char *name, q[160];
    const enum ref_result res = ref_target(c, ref, &target, &container, &name);
    quoted(q, sizeof q, ref);
    if (res == REF_UNSUPPORTED)
        js_fail_kw(c, "$ref", ELM_ERR_UNSUPPORTED,
                   "$ref '%s' is not supported (only #, #/$defs/NAME, #/definitions/NAME)", q);
    else if (res == REF_DANGLING)
        js_fail_kw(c, "$ref", ELM_ERR_FORMAT, "$ref '%s' points to nothing", q);
    else if (container && key_twice(cJSON_GetObjectItemCaseSensitive(c->root, container), target))
        js_fail_kw(c, "$ref", ELM_ERR_FORMAT, "$ref '%s' names a key that appears twice", q);
    const int32_t d = c->st ? -1 : container ? definition(c, target, ref, container, name) : 0;
    free(name);
    if (d < 0) return false;
    if (c->left && grow(c, &c->edges, &c->cap_edges, c->n_edges, sizeof *c->edges)) {
        c->edges[c->n_edges][0] = c->cur_def;
        c->edges[c->n_edges++][1] = d;
    }
    elm_sb_printf(b, " %s", c->rules[c->defs[d].rule].name);
    return !c->st;
}

/* Refuses definitions that reach themselves through references made before anything is matched
 * ({"$ref": "#"}, or a: anyOf [b, ...] with b: {"$ref": a}): the grammar would be left-recursive.
 * Kahn's peeling: a definition whose such references all lead to peeled ones is peeled; what
 * is left is on, or leads to, a loop. */
static bool check_loops(js_cx *c) {
    int32_t *out = calloc((size_t)c->n_defs, sizeof *out),
            *queue = malloc(sizeof *queue * (size_t)c->n_defs);
    int32_t n = 0, bad = -1;
    if (!out || !queue) {
        free(out), free(queue);
        return oom(c);
    }
    for (int32_t e = 0; e < c->n_edges; e++) out[c->edges[e][0]]++;
    for (int32_t d = 0; d < c->n_defs; d++)
        if (!out[d]) queue[n++] = d;
    for (int32_t i = 0; i < n; i++)
        for (int32_t e = 0; e < c->n_edges; e++) /* the edges into queue[i] */
            if (c->edges[e][1] == queue[i] && --out[c->edges[e][0]] == 0)
                queue[n++] = c->edges[e][0];
    for (int32_t d = 0; d < c->n_defs && bad < 0; d++)
        if (out[d]) bad = d;
    for (int32_t hop = 0; bad >= 0 && hop < c->n_defs; hop++) { /* walk on into the loop */
        int32_t e = 0;
        while (c->edges[e][0] != bad || !out[c->edges[e][1]]) e++;
        bad = c->edges[e][1];
    }
    free(out), free(queue);
    if (bad < 0) return true;
    char q[160];
    pop(c, 0);
    return fail(c, ELM_ERR_UNSUPPORTED, "$ref '%s' reaches itself before any value starts",
                quoted(q, sizeof q, c->defs[bad].ref));
}

/* ---- combinators ---- */

/* The types of the documents valid under s (generated: of those s's grammar generates), as
 * cheaply known: never fewer than there are. Integers and numbers count as one (1 is both). Each
 * call spends one of *budget: schemas whose branches refer back to themselves would otherwise
 * cost 2^depth, and "any type" is always a safe answer. */
static unsigned types_of(const js_cx *c, const cJSON *s, bool generated, int *budget) {
    if (!cJSON_IsObject(s) || --*budget < 0) return cJSON_IsFalse(s) ? 0 : T_ALL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type"), *v, *target = deref(c, s);
    unsigned types = t && type_bits(t) ? type_bits(t) : T_ALL, fam = 0;
    if ((v = cJSON_GetObjectItemCaseSensitive(s, "const"))) types &= value_types(v);
    if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
        unsigned u = 0;
        for (const cJSON *x = v->child; x; x = x->next) u |= value_types(x);
        types &= u;
    }
    if (target != s) types &= types_of(c, target, generated, budget);
    static const char *const kws[] = {"anyOf", "oneOf", "allOf"};
    for (int i = 0; i < 3; i++) {
        if (!cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(s, kws[i]))) continue;
        unsigned u = i < 2 ? 0 : T_ALL;
        for (const cJSON *x = v->child; x; x = x->next)
            u = i < 2 ? u | types_of(c, x, generated, budget)
                      : u & types_of(c, x, generated, budget);
        types &= u;
    }
    for (const cJSON *m = s->child; generated && !t && m; m = m->next) /* inferred from keywords */
        for (int i = 0; i < KW_DEFS; i++)
            if (!strcmp(m->string, keywords[i].name)) fam |= keywords[i].types;
    if (fam) types &= fam;
    return types & (T_NUMBER | T_INTEGER) ? types | T_NUMBER | T_INTEGER : types;
}

/* The values property schema s allows when it is a const, or an enum, of scalars: from *first,
 * along the list when *list (an enum's members), else the const alone. */
static bool scalar_values(const js_cx *c, const cJSON *s, const cJSON **first, bool *list) {
    s = deref(c, s);
    const cJSON *v = cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, "const") : NULL;
    *list = !v;
    if (!v && cJSON_IsObject(s)) v = cJSON_GetObjectItemCaseSensitive(s, "enum");
    if (!v || (*list && !cJSON_IsArray(v))) return false;
    *first = *list ? v->child : v;
    for (const cJSON *x = *first; x; x = *list ? x->next : NULL)
        if (cJSON_IsArray(x) || cJSON_IsObject(x)) return false;
    return true;
}

static bool has_string(const cJSON *arr, const char *s) {
    for (const cJSON *x = cJSON_IsArray(arr) ? arr->child : NULL; x; x = x->next)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, s)) return true;
    return false;
}

/* Whether objects valid under a and under b must differ: a property both require whose schemas
 * are consts or enums with no value in common (a discriminator: "kind": "circle" | "square"). */
static bool discriminated(const js_cx *c, const cJSON *a, const cJSON *b) {
    a = deref(c, a), b = deref(c, b);
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) return false;
    const cJSON *ra = cJSON_GetObjectItemCaseSensitive(a, "required");
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(a, "properties");
    const cJSON *pb = cJSON_GetObjectItemCaseSensitive(b, "properties");
    for (const cJSON *p = cJSON_IsArray(ra) ? ra->child : NULL; p; p = p->next) {
        const cJSON *fa, *fb;
        bool la, lb, overlap = false;
        if (!cJSON_IsString(p) ||
            !has_string(cJSON_GetObjectItemCaseSensitive(b, "required"), p->valuestring) ||
            !cJSON_IsObject(pa) || !cJSON_IsObject(pb) ||
            !scalar_values(c, cJSON_GetObjectItemCaseSensitive(pa, p->valuestring), &fa, &la) ||
            !scalar_values(c, cJSON_GetObjectItemCaseSensitive(pb, p->valuestring), &fb, &lb))
            continue;
        for (const cJSON *x = fa; x && !overlap; x = la ? x->next : NULL)
            for (const cJSON *y = fb; y && !overlap; y = lb ? y->next : NULL)
                overlap = cJSON_Compare(x, y, true);
        if (!overlap) return true;
    }
    return false;
}

/* oneOf is generated as anyOf, which is sound only when no document one branch's grammar
 * generates is valid under another: their types differ, or a discriminator tells objects apart. */
static bool disjoint(js_cx *c, const cJSON *arr) {
    const int n = cJSON_GetArraySize(arr);
    unsigned(*types)[2] = malloc(sizeof *types * (size_t)n); /* [i]: generated, valid */
    if (!types) return oom(c);
    const cJSON *x = arr->child;
    for (int i = 0; i < n; i++, x = x->next) {
        int budget = 1000;
        types[i][0] = types_of(c, x, true, &budget);
        types[i][1] = types_of(c, x, false, &budget);
    }
    const cJSON *a = arr->child;
    for (int i = 0; i < n && !c->st; i++, a = a->next) {
        const cJSON *b = a->next;
        for (int j = i + 1; j < n && !c->st; j++, b = b->next) {
            const unsigned common = (types[i][0] & types[j][1]) | (types[j][0] & types[i][1]);
            if (common && (common != T_OBJECT || !discriminated(c, a, b)))
                js_fail_kw(c, "oneOf", ELM_ERR_UNSUPPORTED,
                           "oneOf whose branches may overlap (%d and %d) is not supported", i, j);
        }
    }
    free(types);
    return !c->st;
}

/* anyOf, and a disjoint oneOf: the branches as alternatives, each a rule of its own. */
static bool put_branches(js_cx *c, elm_sbuf *b, const cJSON *arr, const char *kw, int32_t self) {
    const size_t at = push(c, kw);
    int i = 0, n = 0;
    for (const cJSON *x = arr->child; x && !c->st; x = x->next, i++) {
        if (cJSON_IsFalse(x)) continue; /* a branch nothing is valid under */
        const size_t at2 = push_index(c, i);
        char suffix[16];
        snprintf(suffix, sizeof suffix, "%d", i);
        if (n++) elm_sb_puts(b, " |");
        compile(c, x, child_rule(c, self, suffix), b);
        pop(c, at2);
    }
    if (!c->st && !n) fail(c, ELM_ERR_UNSUPPORTED, "every branch is false");
    pop(c, at);
    return !c->st;
}

/* enum and const (and type beside them): the values of the given types, each its JSON text. */
static bool put_values(js_cx *c, elm_sbuf *b, const cJSON *const *k) {
    const cJSON *en = k[KW_ENUM], *cst = k[KW_CONST];
    const unsigned types = k[KW_TYPE] ? type_bits(k[KW_TYPE]) : T_ALL;
    const size_t at = push(c, en ? "enum" : "const");
    int n = 0;
    for (const cJSON *v = en ? en->child : cst; v && !c->st; v = en ? v->next : NULL) {
        if ((cst && en && !cJSON_Compare(v, cst, true)) || !(value_types(v) & types)) continue;
        if (n++) elm_sb_puts(b, " |");
        put_json(c, b, v);
    }
    if (!c->st && !n) fail(c, ELM_ERR_UNSUPPORTED, "no value is valid under the schema");
    pop(c, at);
    return !c->st;
}

/* ---- strings, numbers, arrays, objects ---- */

/* A count keyword's value (a non-negative integer), or dflt when absent. */
static int64_t count_of(const cJSON *v, int64_t dflt) {
    return !v ? dflt : v->valuedouble >= 0x1p62 ? INT64_MAX / 2 : (int64_t)v->valuedouble;
}

static const char *const QUOTE = " \"\\\"\"";
static const char *const GEMMA4_QUOTE = " \"<|\\\"|>\"";

/* Appends the quote that opens and closes strings. */
static void put_quote(const js_cx *c, elm_sbuf *b) {
    elm_sb_puts(b, c->dialect == JS_GEMMA4 ? GEMMA4_QUOTE : QUOTE);
}

static bool put_string(js_cx *c, elm_sbuf *b, const cJSON *const *k) {
    const int64_t lo = count_of(k[KW_MINLEN], 0), hi = count_of(k[KW_MAXLEN], -1);
    if (k[KW_FORMAT]) {
        if (k[KW_MINLEN] || k[KW_MAXLEN])
            return alone(c, k, ~(B(KW_MINLEN) | B(KW_MAXLEN)), "format");
        int f = 0;
        while (strcmp(formats[f].name, k[KW_FORMAT]->valuestring)) f++; /* checked: it is one */
        put_quote(c, b);
        js_helper(c, b, formats[f].rule);
        put_quote(c, b);
        return true;
    }
    if (!k[KW_MINLEN] && !k[KW_MAXLEN]) return js_helper(c, b, H_STRING), true;
    if (lo > JS_MAX_REPEAT)
        return js_fail_kw(c, "minLength", ELM_ERR_UNSUPPORTED, "minLength over %d is not supported",
                          JS_MAX_REPEAT);
    if (hi >= 0 && lo > hi)
        return js_fail_kw(c, "minLength", ELM_ERR_UNSUPPORTED, "minLength exceeds maxLength");
    put_quote(c, b);
    if (hi != 0) {
        js_helper(c, NULL, H_CHAR);
        js_put_rep(c, b, "char", lo, hi > JS_MAX_REPEAT ? JS_MAX_REPEAT : hi); /* stricter */
    }
    put_quote(c, b);
    return true;
}

/* The tighter of an inclusive and an exclusive bound (the exclusive one on a tie). */
static js_bound bound_of(const cJSON *incl, const cJSON *excl, bool upper) {
    js_bound r = {.open = true};
    if (incl) r = (js_bound){incl->valuedouble, false, false, incl->string};
    if (excl && (r.open || (upper ? excl->valuedouble <= r.v : excl->valuedouble >= r.v)))
        r = (js_bound){excl->valuedouble, false, true, excl->string};
    return r;
}

/* Compiles schema x (at the current path plus seg, and seg2 when not NULL) into a rule named
 * after self and suffix; its reference into *out (malloc'd, " NAME"), NULL on error. */
static char *compile_child(js_cx *c, const cJSON *x, const char *seg, const char *seg2,
                           int32_t self, const char *suffix) {
    const size_t at = push(c, seg);
    if (seg2) push(c, seg2);
    elm_sbuf e = {0};
    char *out = NULL;
    if (!x || cJSON_IsTrue(x)) js_helper(c, &e, H_VALUE);
    else compile(c, x, child_rule(c, self, suffix), &e);
    if (c->st) free(e.s);
    else if (!(out = elm_sb_finish(&e))) oom(c);
    pop(c, at);
    return out;
}

/* Positions t.. of an array, all items's: ( ws "," ws ITEM ){lo,hi}. */
static void put_tail(js_cx *c, elm_sbuf *b, const char *item, int64_t t, int64_t mn, int64_t mx) {
    if (mx <= t) return;
    elm_sbuf atom = {0};
    elm_sb_printf(&atom, "( ws \",\" ws%s )", item);
    js_put_rep(c, b, atom.s ? atom.s : "", mn > t ? mn - t : 0, mx == INT64_MAX ? -1 : mx - t);
    b->oom |= atom.oom;
    free(atom.s);
}

/* items, prefixItems, minItems, maxItems. The prefix's positions past minItems are optional,
 * each only after the one before: a chain of rules ( ws "," ws E_i NEXT )?, not nested groups. */
static bool put_array(js_cx *c, elm_sbuf *b, const cJSON *const *k, int32_t self) {
    const cJSON *items = k[KW_ITEMS], *prefix = k[KW_PREFIX];
    if (!prefix && !k[KW_MINITEMS] && !k[KW_MAXITEMS] && (!items || cJSON_IsTrue(items)))
        return js_helper(c, b, H_ARRAY), true;
    int64_t mn = count_of(k[KW_MINITEMS], 0), mx = count_of(k[KW_MAXITEMS], INT64_MAX), np = 0;
    for (const cJSON *x = prefix ? prefix->child : NULL; x && !cJSON_IsFalse(x); x = x->next) np++;
    if (cJSON_IsFalse(items) || (prefix && np < cJSON_GetArraySize(prefix))) mx = mx < np ? mx : np;
    if (mn > mx)
        return js_fail_kw(c, "minItems", ELM_ERR_UNSUPPORTED, "no array of %lld items is valid",
                          (long long)mn);
    if (mn > JS_MAX_REPEAT)
        return js_fail_kw(c, "minItems", ELM_ERR_UNSUPPORTED, "minItems over %d is not supported",
                          JS_MAX_REPEAT);
    if (mx != INT64_MAX && mx > JS_MAX_REPEAT) mx = JS_MAX_REPEAT; /* stricter */
    np = np < mx ? np : mx;
    elm_sb_puts(b, " \"[\"");
    js_helper(c, b, H_WS);
    if (mx == 0) return elm_sb_puts(b, " \"]\""), true;
    char **elem = calloc((size_t)np + 1, sizeof *elem); /* the prefix's, then items's */
    if (!elem) return oom(c);
    const bool was_left = c->left;
    c->left = false; /* "[" is matched */
    const cJSON *x = prefix ? prefix->child : NULL;
    for (int64_t i = 0; i < np && !c->st; i++, x = x->next) {
        char seg[24];
        snprintf(seg, sizeof seg, "%lld", (long long)i);
        elem[i] = compile_child(c, x, "prefixItems", seg, self, seg);
    }
    if (mx > np && !c->st) elem[np] = compile_child(c, items, "items", NULL, self, "item");
    c->left = was_left;
    const int64_t s = mn > 1 ? mn : 1; /* the first optional position after the first */
    int32_t next = -1;
    for (int64_t i = np - 1; i >= s && !c->st; i--) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "from-%lld", (long long)i);
        const int32_t r = child_rule(c, self, suffix);
        elm_sbuf body = {0};
        elm_sb_printf(&body, " ( ws \",\" ws%s", elem[i]);
        if (next >= 0) elm_sb_printf(&body, " %s", c->rules[next].name);
        else put_tail(c, &body, elem[np] ? elem[np] : "", np, mn, mx);
        elm_sb_puts(&body, " )?");
        if (r >= 0) set_body(c, r, &body);
        else free(body.s);
        next = r;
    }
    if (!c->st) {
        if (mn == 0) elm_sb_puts(b, " (");
        elm_sb_puts(b, elem[0]);
        for (int64_t i = 1; i < np && i < s; i++) elm_sb_printf(b, " ws \",\" ws%s", elem[i]);
        if (next >= 0) elm_sb_printf(b, " %s", c->rules[next].name);
        else put_tail(c, b, elem[np] ? elem[np] : "", np > 1 ? np : 1, mn, mx);
        elm_sb_puts(b, mn == 0 ? " ws )? \"]\"" : " ws \"]\"");
    }
    for (int64_t i = 0; i <= np; i++) free(elem[i]);
    free(elem);
    return !c->st;
}

typedef struct {
    const char *key;
    bool required;
    char *kv;            /* " \"KEY\" ws \":\" ws VALUE" */
} prop;

/* Appends property i after others: " ws \",\" ws KV", optional unless required. */
static void put_item(elm_sbuf *b, const prop *p) {
    elm_sb_printf(b, p->required ? " ws \",\" ws%s" : " ( ws \",\" ws%s )?", p->kv);
}

/* Appends properties i.. after others: inline, up to the first that has a rule of its own. */
static void put_props_from(const js_cx *c, elm_sbuf *b, const prop *p, int32_t n, int32_t i,
                           const int32_t *from) {
    for (; i < n; i++) {
        if (from[i] >= 0) return (void)elm_sb_printf(b, " %s", c->rules[from[i]].name);
        put_item(b, &p[i]);
    }
}

/* The named properties in declared order, then the required ones `properties` does not name.
 * The first property present is one of those up to the first required one (m): an alternative
 * each, followed by the rest, every one after a comma. "The rest from i" is referenced by
 * alternative i - 1 and by the rest from i - 1, so for 2 <= i <= m + 1 it is a rule of its own
 * (from[i]), which keeps the text linear in the number of properties. */
static bool put_properties(js_cx *c, elm_sbuf *b, prop *p, int32_t n, int32_t self) {
    int32_t m = 0;
    while (m < n - 1 && !p[m].required) m++;
    int32_t *from = malloc(sizeof *from * (size_t)n);
    if (!from) return oom(c);
    for (int32_t i = 0; i < n; i++) {
        char suffix[NAME_LEN + 8];
        snprintf(suffix, sizeof suffix, "from-%s", p[i].key);
        from[i] = i >= 2 && i <= m + 1 ? child_rule(c, self, suffix) : -1;
    }
    for (int32_t i = n - 1; i >= 0 && !c->st; i--) {
        if (from[i] < 0) continue;
        elm_sbuf body = {0};
        put_item(&body, &p[i]);
        put_props_from(c, &body, p, n, i + 1, from);
        set_body(c, from[i], &body);
    }
    const bool any = p[m].required; /* else the object may be empty */
    elm_sb_printf(b, "%s%s", any ? "" : " (", m ? " (" : "");
    for (int32_t i = 0; i <= m; i++) {
        elm_sb_printf(b, "%s%s", i ? " |" : "", p[i].kv);
        put_props_from(c, b, p, n, i + 1, from);
    }
    elm_sb_printf(b, "%s%s", m ? " )" : "", any ? " ws \"}\"" : " ws )? \"}\"");
    free(from);
    return !c->st;
}

/* properties, required, additionalProperties. With properties or required: those, in order
 * (nothing else, even where additionalProperties allows it); without: keys any string, values
 * additionalProperties's. */
static bool put_object(js_cx *c, elm_sbuf *b, const cJSON *const *k, int32_t self) {
    const cJSON *props = k[KW_PROPS], *req = k[KW_REQUIRED], *addl = k[KW_ADDL];
    const int32_t n_max = cJSON_GetArraySize(props) + cJSON_GetArraySize(req);
    if (!n_max && (!addl || cJSON_IsTrue(addl))) return js_helper(c, b, H_OBJECT), true;
    elm_sb_puts(b, " \"{\"");
    js_helper(c, b, H_WS);
    if (!n_max && cJSON_IsFalse(addl)) return elm_sb_puts(b, " \"}\""), true;
    const bool was_left = c->left;
    c->left = false; /* "{" is matched */
    if (!n_max) {
        char *v = compile_child(c, addl, "additionalProperties", NULL, self, "value");
        const enum js_helper key = c->dialect == JS_GEMMA4 ? H_KEY : H_STRING;
        const char *k = js_helper_name(key);
        js_helper(c, NULL, key);
        if (v)
            elm_sb_printf(b, " ( %s ws \":\" ws%s ( ws \",\" ws %s ws \":\" ws%s )* ws )? \"}\"",
                          k, v, k, v);
        free(v);
        c->left = was_left;
        return !c->st;
    }
    prop *p = calloc((size_t)n_max, sizeof *p);
    int32_t n = 0;
    if (!p) return oom(c);
    for (const cJSON *x = props ? props->child : NULL; x && !c->st; x = x->next) {
        const bool required = has_string(req, x->string);
        if (cJSON_IsFalse(x) && required)
            js_fail_kw(c, "required", ELM_ERR_UNSUPPORTED, "a required property's schema is false");
        if (cJSON_IsFalse(x) || c->st) continue; /* it must not appear: it is not generated */
        p[n] = (prop){x->string, required, NULL};
        p[n].kv = compile_child(c, x, "properties", x->string, self, x->string);
        n++;
    }
    char *addl_ref = NULL; /* compiled once for all of them: nested, each copy would double */
    for (const cJSON *r = req ? req->child : NULL; r && !c->st; r = r->next) {
        const cJSON *dup = req->child;
        while (strcmp(dup->valuestring, r->valuestring)) dup = dup->next;
        if (dup != r || cJSON_GetObjectItemCaseSensitive(props, r->valuestring)) continue;
        if (cJSON_IsFalse(addl))
            js_fail_kw(c, "required", ELM_ERR_UNSUPPORTED,
                       "a required property is neither in properties nor allowed beside them");
        else if (addl_ref ||
                 (addl_ref = compile_child(c, addl, "additionalProperties", NULL, self, "value")))
            p[n++] = (prop){r->valuestring, true, strdup(addl_ref)};
    }
    free(addl_ref);
    c->left = was_left;
    for (int32_t i = 0; i < n && !c->st; i++) { /* " VALUE" -> " \"KEY\" ws \":\" ws VALUE" */
        elm_sbuf kv = {0};
        if (!p[i].kv || !put_key(c, &kv, p[i].key)) {
            free(kv.s);
            if (!p[i].kv) oom(c);
            break;
        }
        elm_sb_printf(&kv, " ws \":\" ws%s", p[i].kv);
        free(p[i].kv);
        if (!(p[i].kv = elm_sb_finish(&kv))) oom(c);
    }
    if (!c->st && !n) elm_sb_puts(b, " \"}\"");
    else if (!c->st) put_properties(c, b, p, n, self);
    for (int32_t i = 0; i < n; i++) free(p[i].kv);
    free(p);
    return !c->st;
}

/* ---- schemas ---- */

/* One type's alternatives. */
static bool put_type(js_cx *c, elm_sbuf *b, unsigned t, const cJSON *const *k, int32_t self) {
    switch (t) {
    case T_OBJECT: return put_object(c, b, k, self);
    case T_ARRAY: return put_array(c, b, k, self);
    case T_STRING: return put_string(c, b, k);
    case T_NUMBER:
    case T_INTEGER:
        return js_put_numeric(c, b, t == T_INTEGER, bound_of(k[KW_MIN], k[KW_XMIN], false),
                              bound_of(k[KW_MAX], k[KW_XMAX], true));
    case T_BOOLEAN: return js_helper(c, b, H_BOOLEAN), true;
    default: return js_helper(c, b, H_NULL), true;
    }
}

/* The body of schema s, for rule self. */
static bool put_schema(js_cx *c, elm_sbuf *b, const cJSON *s, int32_t self) {
    if (cJSON_IsTrue(s)) return js_helper(c, b, H_VALUE), true;
    if (cJSON_IsFalse(s)) return fail(c, ELM_ERR_UNSUPPORTED, "schema false: no document is valid");
    if (!cJSON_IsObject(s))
        return fail(c, ELM_ERR_FORMAT, "a schema must be an object or a boolean");
    const cJSON *k[N_KEYWORDS] = {0};
    if (!scan(c, s, k)) return false;
    if (k[KW_ID] && s != c->root) /* a resource of its own: "#/$defs/x" would point into it */
        return js_fail_kw(c, "$id", ELM_ERR_UNSUPPORTED, "$id below the root is not supported");
    if (k[KW_FORMAT]) {
        int f = 0;
        while (f < N_FORMATS && strcmp(formats[f].name, k[KW_FORMAT]->valuestring)) f++;
        char q[96];
        if (f == N_FORMATS)
            return js_fail_kw(c, "format", ELM_ERR_UNSUPPORTED, "format '%s' is not supported",
                              quoted(q, sizeof q, k[KW_FORMAT]->valuestring));
    }
    if (k[KW_REF]) return alone(c, k, B(KW_REF), "$ref") && put_ref(c, b, k[KW_REF]->valuestring);
    if (k[KW_ANYOF])
        return alone(c, k, B(KW_ANYOF), "anyOf") && put_branches(c, b, k[KW_ANYOF], "anyOf", self);
    if (k[KW_ONEOF])
        return alone(c, k, B(KW_ONEOF), "oneOf") && disjoint(c, k[KW_ONEOF]) &&
               put_branches(c, b, k[KW_ONEOF], "oneOf", self);
    if (k[KW_ALLOF]) {
        if (!alone(c, k, B(KW_ALLOF), "allOf")) return false;
        if (k[KW_ALLOF]->child->next)
            return js_fail_kw(c, "allOf", ELM_ERR_UNSUPPORTED,
                              "allOf of more than one schema is not supported");
        return put_branches(c, b, k[KW_ALLOF], "allOf", self);
    }
    if (k[KW_ENUM] || k[KW_CONST])
        return alone(c, k, B(KW_TYPE) | B(KW_ENUM) | B(KW_CONST), k[KW_ENUM] ? "enum" : "const") &&
               put_values(c, b, k);
    unsigned types = k[KW_TYPE] ? type_bits(k[KW_TYPE]) : 0;
    for (int i = 0; i < KW_DEFS && !k[KW_TYPE]; i++) /* no type: those its keywords constrain */
        if (k[i]) types |= keywords[i].types;
    if (!types) return js_helper(c, b, H_VALUE), true;
    if (types & T_NUMBER) types &= ~(unsigned)T_INTEGER; /* the numbers include the integers */
    int n = 0;
    for (int t = 0; t < N_TYPES; t++) {
        if (!(types >> t & 1)) continue;
        if (n++) elm_sb_puts(b, " |");
        if (!put_type(c, b, 1u << t, k, self)) return false;
    }
    return true;
}

static bool is_name(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-'))
            return false;
    return true;
}

/* Compiles schema s (at the current path) into the body of rule r. With ref NULL r stays,
 * whatever its body (the root, a definition); else a reference to r is appended to ref, or r's
 * body itself when that is one rule's name (r is then left out). */
static bool compile(js_cx *c, const cJSON *s, int32_t r, elm_sbuf *ref) {
    if (r < 0) return false;
    if (c->depth >= MAX_DEPTH)
        return fail(c, ELM_ERR_UNSUPPORTED, "schemas nested over %d deep are not supported",
                    MAX_DEPTH);
    elm_sbuf body = {0};
    c->depth++;
    const bool ok = put_schema(c, &body, s, r);
    c->depth--;
    if (!ok || body.oom || !body.s) {
        free(body.s);
        return ok ? oom(c) : false;
    }
    if (ref && is_name(body.s + 1)) {
        elm_sb_puts(ref, body.s);
        free(body.s);
        return true;
    }
    if (ref) elm_sb_printf(ref, " %s", c->rules[r].name);
    return set_body(c, r, &body);
}

/* ---- the translation ---- */

/* The rules, one a line, then the helpers used. */
static char *assemble(js_cx *c) {
    elm_sbuf out = {0};
    for (int32_t r = 0; r < c->n_rules; r++)
        if (c->rules[r].body) elm_sb_printf(&out, "%s ::=%s\n", c->rules[r].name, c->rules[r].body);
    js_put_helpers(c, &out);
    if (out.oom) return free(out.s), oom(c), NULL;
    if (c->elems + (int64_t)out.len > MAX_ELEMS) {
        free(out.s);
        pop(c, 0);
        fail(c, ELM_ERR_UNSUPPORTED, "its lengths and counts make a grammar over %d elements",
             MAX_ELEMS);
        return NULL;
    }
    return out.s;
}

elm_status elm_json_schema_to_gbnf(const char *schema, size_t len, const char *src, char **gbnf,
                                   elm_error *err) {
    return js_schema_to_gbnf(schema, len, src, JS_JSON, gbnf, err);
}

elm_status js_schema_to_gbnf(const char *schema, size_t len, const char *src, js_dialect d,
                             char **gbnf, elm_error *err) {
    *gbnf = NULL;
    src = src ? src : "schema";
    const char *end = NULL;
    if (memchr(schema, 0, len))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not JSON (a NUL byte)", src);
    cJSON *root = cJSON_ParseWithLengthOpts(schema, len, &end, false);
    while (root && end < schema + len &&
           (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
        end++;
    if (!root || end != schema + len) {
        cJSON_Delete(root);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not JSON (at byte %lld)", src,
                          (long long)(end ? end - schema : 0));
    }
    if (elm_json_has_nul_escape(schema, len)) {
        cJSON_Delete(root);
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: strings with \\u0000 are not supported",
                          src);
    }
    js_cx c = {.root = root, .src = src, .err = err, .left = true, .dialect = d};
    const int32_t r = new_rule(&c, "root");
    if (r >= 0 && grow(&c, &c.defs, &c.cap_defs, 0, sizeof *c.defs)) {
        c.defs[c.n_defs++] = (js_def){root, r, "#"};
        if (compile(&c, root, r, NULL) && check_loops(&c)) *gbnf = assemble(&c);
    }
    for (int32_t i = 0; i < c.n_rules; i++) free(c.rules[i].name), free(c.rules[i].body);
    free(c.rules);
    free(c.defs);
    free(c.edges);
    free(c.path.s);
    cJSON_Delete(root);
    return c.st;
}
