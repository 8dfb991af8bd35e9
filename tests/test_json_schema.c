/* JSON schema -> GBNF (elm_json_schema_to_gbnf): for every supported keyword, documents valid
 * under the schema (as ajv with ajv-formats judges them) match the grammar completely and invalid
 * ones do not; integer and number bounds value by value over windows around them, and over
 * random ranges; whitespace and odd property names; and the errors, each naming the keyword and
 * its place. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/grammar.h"

#define DOCS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})

/* The grammar of schema, parsed; NULL (a recorded failure) when either step fails. */
static elm_grammar *grammar_of(const char *schema) {
    elm_error err;
    char *text = NULL;
    elm_grammar *g = NULL;
    elm_status st = elm_json_schema_to_gbnf(schema, strlen(schema), "schema.json", &text, &err);
    CHECK(st == ELM_OK, "%s: %s", schema, err.msg);
    if (st == ELM_OK) {
        st = elm_grammar_parse(text, strlen(text), "generated", &g, &err);
        CHECK(st == ELM_OK, "%s: %s\n%s", schema, err.msg, text);
    }
    free(text);
    return g;
}

static int match(const elm_grammar *g, const char *doc) {
    return elm_grammar_match_text(g, doc, strlen(doc));
}

/* Every document of good matches the schema's grammar completely, none of bad does. */
static void check_docs(const char *schema, const char *const *good, const char *const *bad) {
    elm_grammar *g = grammar_of(schema);
    if (!g) return;
    for (; *good; good++) CHECK(match(g, *good) == 2, "%s should match %s", *good, schema);
    for (; *bad; bad++) CHECK(match(g, *bad) != 2, "%s should not match %s", *bad, schema);
    elm_grammar_free(g);
}

/* The translation fails with `code`, and the message has each of the `want` strings. */
static void check_error(const char *schema, elm_status code, const char *const *want) {
    elm_error err;
    char *text = NULL;
    const elm_status st =
        elm_json_schema_to_gbnf(schema, strlen(schema), "schema.json", &text, &err);
    CHECK(st == code && !text, "%s: status %d (%s), want %d", schema, st, st ? err.msg : text,
          code);
    free(text);
    if (st == ELM_OK) return;
    CHECK(!strncmp(err.msg, "schema.json: ", 13) && !strchr(err.msg, '\n'), "%s", err.msg);
    for (; *want; want++) CHECK(strstr(err.msg, *want), "'%s' not in: %s", *want, err.msg);
}

static void check_types(void) {
    check_docs("{\"type\":\"null\"}", DOCS("null"), DOCS("nul", "0", "\"null\"", " null", "null "));
    check_docs("{\"type\":\"boolean\"}", DOCS("true", "false"), DOCS("True", "1", "null"));
    check_docs("{\"type\":\"string\"}",
               DOCS("\"\"", "\"abc\"", "\"a\\\"b\\\\c\\/\"", "\"\\b\\f\\n\\r\\t\"",
                    "\"\\u00e9\\uFFFF\"", "\"h\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"",
                    "\"\x7f\""),
               DOCS("abc", "\"a", "\"\n\"", "\"\t\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"",
                    "\"\\uDFFF\"", "\"\xff\"", "\"\xc0\xaf\"", "1"));
    check_docs("{\"type\":\"integer\"}",
               DOCS("0", "-1", "42", "9999999999999999", "-9999999999999999"),
               DOCS("01", "1.0", "1e2", "+1", "-", "10000000000000000", "\"1\"", "- 1"));
    check_docs(
        "{\"type\":\"number\"}",
        DOCS("0", "-0", "1.5", "-0.25", "1e5", "1E-7", "2.5e+10", "0.0000000000000001", "1e99"),
        DOCS("01", ".5", "1.", "1e", "1e100", "1.00000000000000000", "NaN", "Infinity", "- 1"));
    const char *any = "[1,{\"a\":[true,null,\"x\"]},-2.5e3]";
    check_docs("{}", DOCS("null", "1", "\"s\"", "{}", "[]", any), DOCS("", "nul", "[1,]", "{1:2}"));
    check_docs("true", DOCS("false", any), DOCS("x"));
    check_docs("{\"title\":\"t\",\"description\":\"d\",\"$comment\":\"c\",\"default\":1,"
               "\"examples\":[1],\"deprecated\":false,\"readOnly\":true,\"writeOnly\":false,"
               "\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"x\"}",
               DOCS("1", any), NONE);
    check_docs("{\"type\":[\"string\",\"null\"]}", DOCS("\"a\"", "null"), DOCS("1", "true"));
    check_docs("{\"type\":[\"integer\",\"number\",\"boolean\"]}", DOCS("1", "1.5", "true"),
               DOCS("null", "\"1\""));
    /* without a type, the keywords say which types are generated */
    check_docs("{\"minLength\":2}", DOCS("\"ab\""), DOCS("\"a\"", "5", "null"));
    check_docs("{\"minimum\":3}", DOCS("3", "3.5", "1000"), DOCS("2", "\"3\""));
    check_docs("{\"required\":[\"a\"]}", DOCS("{\"a\":1}", "{\"a\":{\"b\":[]}}"), DOCS("{}", "[]"));
}

static void check_strings(void) {
    check_docs("{\"type\":\"string\",\"minLength\":2,\"maxLength\":4}",
               DOCS("\"ab\"", "\"abcd\"", "\"\\n\\u0041\"", "\"\xc3\xa9\xc3\xa9\"",
                    "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", "\"a\\\"\\\\b\""),
               DOCS("\"a\"", "\"abcde\"", "\"\xf0\x9f\x98\x80\"", "\"\\n\"", "\"\""));
    check_docs("{\"type\":\"string\",\"maxLength\":0}", DOCS("\"\""), DOCS("\"a\""));
    check_docs("{\"type\":\"string\",\"minLength\":3}", DOCS("\"abc\"", "\"abcdefghijklmnop\""),
               DOCS("\"ab\""));
    check_docs("{\"type\":\"string\",\"maxLength\":100000}", DOCS("\"\"", "\"abc\""), NONE);
    check_docs("{\"type\":\"string\",\"format\":\"date\"}",
               DOCS("\"2024-01-31\"", "\"2023-04-30\"", "\"2024-02-29\"", "\"2000-02-29\"",
                    "\"1600-02-29\"", "\"0000-02-29\"", "\"2023-02-28\"", "\"9999-12-31\""),
               DOCS("\"2023-02-29\"", "\"1900-02-29\"", "\"2100-02-29\"", "\"2024-02-30\"",
                    "\"2024-04-31\"", "\"2024-13-01\"", "\"2024-00-10\"", "\"2024-01-00\"",
                    "\"2024-1-01\"", "\"24-01-01\"", "\"2024-01-01T00:00:00Z\"", "2024-01-01"));
    check_docs("{\"type\":\"string\",\"format\":\"time\"}",
               DOCS("\"00:00:00Z\"", "\"23:59:59.123456789+05:30\"", "\"12:30:00-08:00\""),
               DOCS("\"24:00:00Z\"", "\"12:60:00Z\"", "\"12:00:60Z\"", "\"12:00:00\"", "\"12:00Z\"",
                    "\"12:00:00+24:00\"", "\"12:00:00z\"", "\"12:00:00.Z\""));
    check_docs(
        "{\"type\":\"string\",\"format\":\"date-time\"}",
        DOCS("\"2024-02-29T23:59:59Z\"", "\"1999-12-31T00:00:00.5-01:00\""),
        DOCS("\"2024-02-29 23:59:59Z\"", "\"2023-02-29T00:00:00Z\"", "\"2024-01-01T00:00:00\""));
    check_docs("{\"type\":\"string\",\"format\":\"uuid\"}",
               DOCS("\"123e4567-e89b-12d3-a456-426614174000\"",
                    "\"ABCDEF01-2345-6789-abcd-ef0123456789\""),
               DOCS("\"123e4567e89b12d3a456426614174000\"",
                    "\"123e4567-e89b-12d3-a456-42661417400\"",
                    "\"g23e4567-e89b-12d3-a456-426614174000\""));
    /* format applies to strings only */
    check_docs("{\"type\":[\"string\",\"integer\"],\"format\":\"date\"}",
               DOCS("\"2024-01-01\"", "7"), DOCS("\"x\""));
}

/* Every integer in [from, to] matches the grammar of schema exactly when lo <= it <= hi. */
static void check_int_window(const char *schema, int64_t lo, int64_t hi, int64_t from, int64_t to) {
    elm_grammar *g = grammar_of(schema);
    if (!g) return;
    int64_t wrong = 0, first = 0;
    for (int64_t v = from;; v++) {
        char s[32];
        snprintf(s, sizeof s, "%lld", (long long)v);
        if ((match(g, s) == 2) != (v >= lo && v <= hi) && !wrong++) first = v;
        if (v == to) break;
    }
    CHECK(!wrong, "%s: %lld values wrong, the first %lld", schema, (long long)wrong,
          (long long)first);
    elm_grammar_free(g);
}

static void check_integers(void) {
    check_int_window("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":123}", -5, 123, -1200, 1300);
    check_int_window("{\"type\":\"integer\",\"minimum\":0}", 0, INT64_MAX, -1100, 1100);
    check_int_window("{\"type\":\"integer\",\"maximum\":-10}", INT64_MIN, -10, -1100, 1100);
    check_int_window("{\"type\":\"integer\",\"minimum\":100,\"maximum\":1000}", 100, 1000, -50,
                     12000);
    check_int_window("{\"type\":\"integer\",\"exclusiveMinimum\":100,\"exclusiveMaximum\":1000}",
                     101, 999, -50, 12000);
    check_int_window("{\"type\":\"integer\",\"exclusiveMinimum\":-1000,\"maximum\":-100}", -999,
                     -100, -12000, 50);
    check_int_window("{\"type\":\"integer\",\"minimum\":-0.5,\"maximum\":99.9}", 0, 99, -300, 300);
    check_int_window("{\"type\":\"integer\",\"exclusiveMinimum\":2.5,\"exclusiveMaximum\":7}", 3, 6,
                     -20, 20);
    check_int_window("{\"type\":\"integer\",\"minimum\":5,\"exclusiveMinimum\":5,\"maximum\":10,"
                     "\"exclusiveMaximum\":20}", 6, 10, -20, 30);
    check_int_window("{\"type\":\"integer\",\"minimum\":7,\"maximum\":7}", 7, 7, -100, 100);
    check_int_window("{\"type\":\"integer\",\"minimum\":1999,\"maximum\":200001}", 1999, 200001,
                     1000, 3000);
    check_int_window("{\"type\":\"integer\",\"minimum\":1999,\"maximum\":200001}", 1999, 200001,
                     199000, 201000);
    /* 64-bit bounds, and an open side past 16 digits where the other bound is longer */
    check_int_window("{\"type\":\"integer\",\"minimum\":9223372036854774784}", 9223372036854774784,
                     INT64_MAX, 9223372036854773000, INT64_MAX);
    check_int_window("{\"type\":\"integer\",\"maximum\":-9223372036854774784}", -INT64_MAX,
                     -9223372036854774784, -INT64_MAX, -9223372036854773000);
    check_int_window("{\"type\":\"integer\",\"minimum\":-100000000000000000}", -100000000000000000,
                     INT64_MAX, -100000000000001000, -99999999999999000);
    check_docs("{\"type\":\"integer\",\"minimum\":0}", DOCS("9999999999999999"),
               DOCS("10000000000000000", "-0", "00"));
    check_docs("{\"type\":\"integer\",\"minimum\":100000000000000000}",
               DOCS("100000000000000000", "999999999999999999"), DOCS("1000000000000000000"));
    /* random ranges of 1 to 8 digits a side: the 301 values around each bound */
    uint64_t seed = 12345;
    for (int t = 0; t < 60; t++) {
        int64_t b[2];
        for (int i = 0; i < 2; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const int digits = (int)(seed >> 60) % 8 + 1;
            int64_t mag = (int64_t)(seed >> 20 & 0xFFFFFFFF);
            for (int d = 8; d > digits; d--) mag /= 10;
            b[i] = (seed >> 19 & 1) ? -mag : mag;
        }
        const int64_t lo = b[0] < b[1] ? b[0] : b[1], hi = b[0] < b[1] ? b[1] : b[0];
        char schema[128];
        snprintf(schema, sizeof schema, "{\"type\":\"integer\",\"minimum\":%lld,\"maximum\":%lld}",
                 (long long)lo, (long long)hi);
        check_int_window(schema, lo, hi, lo - 150, lo + 150);
        check_int_window(schema, lo, hi, hi - 150, hi + 150);
    }
}

/* Numbers in quarters (and a ten-thousandth past each integer) around integer bounds lo, hi, each
 * inclusive, exclusive or absent: a text matches only if its value is inside, and every shortest
 * text of a value inside matches (the grammar refuses trailing zeros past an exclusive bound). */
enum bound { INCL, EXCL, OPEN };
static void check_number_window(int lo, enum bound lo_b, int hi, enum bound hi_b) {
    char schema[160], lo_kw[48] = "", hi_kw[48] = "";
    if (lo_b != OPEN)
        snprintf(lo_kw, sizeof lo_kw, ",\"%s\":%d", lo_b == EXCL ? "exclusiveMinimum" : "minimum",
                 lo);
    if (hi_b != OPEN)
        snprintf(hi_kw, sizeof hi_kw, ",\"%s\":%d", hi_b == EXCL ? "exclusiveMaximum" : "maximum",
                 hi);
    snprintf(schema, sizeof schema, "{\"type\":\"number\"%s%s}", lo_kw, hi_kw);
    elm_grammar *g = grammar_of(schema);
    if (!g) return;
    static const struct { int quarter; const char *frac; double add; bool shortest;
    } forms[] = {{0, "", 0, true},           {0, ".0", 0, false},    {0, ".00", 0, false},
                 {0, ".0001", 0.0001, true}, {1, ".25", 0.25, true}, {2, ".5", 0.5, true},
                 {2, ".50", 0.5, false},     {3, ".75", 0.75, true}};
    int wrong = 0;
    char first[32] = "";
    for (int q = (lo - 3) * 4; q <= (hi + 3) * 4; q++) {
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            if (forms[f].quarter != abs(q) % 4) continue;
            char s[32];
            snprintf(s, sizeof s, "%s%d%s", q < 0 ? "-" : "", abs(q) / 4, forms[f].frac);
            const double v = (q < 0 ? -1 : 1) * (abs(q) / 4 + forms[f].add);
            const bool in = (lo_b == OPEN || (lo_b == EXCL ? v > lo : v >= lo)) &&
                            (hi_b == OPEN || (hi_b == EXCL ? v < hi : v <= hi));
            const int m = match(g, s);
            if (((m == 2 && !in) || (in && forms[f].shortest && m != 2)) && !wrong++)
                snprintf(first, sizeof first, "%s", s);
        }
    }
    CHECK(!wrong, "%s: %d texts wrong, the first %s", schema, wrong, first);
    elm_grammar_free(g);
}

static void check_numbers(void) {
    static const int bounds[][2] = {{0, 100}, {-3, 5}, {-10, -2}, {-1, 0},
                                    {0, 0},   {0, 1},  {5, 5},    {-7, 12}};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
        for (int ex = 0; ex < 4; ex++)
            if (bounds[i][0] < bounds[i][1] || !ex) /* [5, 5) and the like hold no number */
                check_number_window(bounds[i][0], ex & 1 ? EXCL : INCL, bounds[i][1],
                                    ex & 2 ? EXCL : INCL);
    check_number_window(0, OPEN, 10, INCL);
    check_number_window(-6, OPEN, -2, EXCL);
    check_number_window(-4, EXCL, 3, OPEN);
    check_number_window(2, INCL, 3, OPEN);
    check_docs(
        "{\"type\":\"number\",\"minimum\":0,\"maximum\":100}",
        DOCS("100", "100.0", "100.0000000000000000", "0", "99.9999999999999999", "-0", "-0.0"),
        DOCS("100.5", "100.01", "-0.5", "1e1", "101"));
    check_docs("{\"type\":\"number\",\"exclusiveMinimum\":0}",
               DOCS("0.001", "0.1", "9999999999999999.5"), DOCS("0", "0.0", "-0.0", "-0", "-1"));
}

static void check_objects(void) {
    /* every subset of optional properties, in order, with the one required one */
    const char *s =
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
        "\"b\":{\"type\":\"boolean\"},\"c\":{\"type\":\"null\"},\"d\":{\"type\":\"string\"}},"
        "\"required\":[\"c\"]}";
    check_docs(s, DOCS("{\"c\":null}", "{\"a\":1,\"c\":null}", "{\"b\":true,\"c\":null}",
                       "{\"a\":1,\"b\":false,\"c\":null}", "{\"c\":null,\"d\":\"x\"}",
                       "{\"a\":1,\"b\":false,\"c\":null,\"d\":\"\"}"),
               DOCS("{}", "{\"a\":1}", "{\"a\":1,\"d\":\"x\"}", "{\"c\":null,}", "{,\"c\":null}",
                    "{\"c\":null,\"a\":1}", "{\"c\":null,\"e\":1}", "{\"c\":null,\"c\":null}"));
    s = "{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"boolean\"},\"c\":{"
        "\"type\":\"null\"}}}";
    check_docs(s, DOCS("{}", "{\"a\":1}", "{\"b\":true}", "{\"c\":null}", "{\"a\":1,\"c\":null}",
                       "{\"b\":true,\"c\":null}", "{\"a\":1,\"b\":true,\"c\":null}", "{ }"),
               DOCS("{,}", "{\"a\":1,}", "{\"b\":true,\"a\":1}", "{\"x\":1}"));
    s = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"},\"y\":{\"type\":"
        "\"integer\"}},"
        "\"required\":[\"x\",\"y\"],\"additionalProperties\":false}";
    check_docs(
        s, DOCS("{\"x\":1,\"y\":2}", "{ \"x\" : 1 , \"y\" : 2 }", "{\n  \"x\": 1,\n\t\"y\": 2\n}"),
        DOCS("{\"x\":1}", "{\"y\":2,\"x\":1}", "{\"x\":1,\"y\":2,\"z\":3}", " {\"x\":1,\"y\":2}",
             "{\"x\":1,\"y\":2} ", "{\"x\":1,\"y\":2}\n", "{\"x\":1,  \"y\":2}",
             "{\"x\":1,\n                     \"y\":2}"));
    check_docs("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",
               DOCS("{}", "{\"a\":1}", "{\"a\":1,\"b c\":-2,\"\\u00e9\":3}"),
               DOCS("{\"a\":\"x\"}", "{\"a\":1,}", "[]"));
    check_docs("{\"type\":\"object\",\"additionalProperties\":false}", DOCS("{}", "{ }"),
               DOCS("{\"a\":1}"));
    check_docs("{\"type\":\"object\"}", DOCS("{}", "{\"a\":[1,{\"b\":null}]}"), DOCS("[]", "null"));
    check_docs("{\"type\":\"object\",\"properties\":{}}", DOCS("{}", "{\"a\":1}"), DOCS("[]"));
    check_docs("{\"type\":\"object\",\"properties\":{\"a\":false,\"b\":{\"const\":1}}}",
               DOCS("{}", "{\"b\":1}"), DOCS("{\"a\":1}", "{\"a\":1,\"b\":1}"));
    /* required properties not in properties: additionalProperties's values, or any (a name
     * required twice counts once) */
    check_docs("{\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"z\",\"a\",\"z\"],"
               "\"additionalProperties\":{\"type\":\"string\"}}",
               DOCS("{\"a\":1,\"z\":\"s\"}"),
               DOCS("{\"a\":1,\"z\":1}", "{\"z\":\"s\",\"a\":1}", "{\"a\":1}"));
    check_docs("{\"required\":[\"k\"]}", DOCS("{\"k\":[1]}", "{\"k\":null}"),
               DOCS("{}", "{\"j\":1}"));
    /* nested */
    check_docs(
        "{\"type\":\"object\",\"properties\":{\"user\":{\"type\":\"object\",\"properties\":"
        "{\"name\":{\"type\":\"string\",\"maxLength\":3},\"tags\":{\"type\":\"array\",\"items\":"
        "{\"enum\":[\"x\",\"y\"]}}},\"required\":[\"name\"]}},\"required\":[\"user\"]}",
        DOCS("{\"user\":{\"name\":\"bob\"}}",
             "{\"user\":{\"name\":\"\",\"tags\":[\"x\",\"y\",\"x\"]}}"),
        DOCS("{\"user\":{\"name\":\"bobby\"}}", "{\"user\":{\"tags\":[]}}",
             "{\"user\":{\"name\":\"a\",\"tags\":[\"z\"]}}"));
}

/* Property names that need escaping, in the grammar and in the document. */
static void check_odd_names(void) {
    check_docs(
        "{\"properties\":{\"q\\\"uote\":{\"const\":1},\"back\\\\slash\":{\"const\":2},"
        "\"new\\nline\\t\\u0001\":{\"const\":3},\"\\u00e9\\u65e5 \\ud83d\\ude00\":{\"const\":4},"
        "\"\":{\"const\":5},\"a/b~c\":{\"const\":6},\"#::= |\":{\"const\":7}},"
        "\"required\":[\"q\\\"uote\",\"back\\\\slash\",\"new\\nline\\t\\u0001\","
        "\"\\u00e9\\u65e5 \\ud83d\\ude00\",\"\",\"a/b~c\",\"#::= |\"]}",
        DOCS("{\"q\\\"uote\":1,\"back\\\\slash\":2,\"new\\nline\\t\\u0001\":3,"
             "\"\xc3\xa9\xe6\x97\xa5 \xf0\x9f\x98\x80\":4,\"\":5,\"a/b~c\":6,\"#::= |\":7}"),
        DOCS("{\"q\"uote\":1,\"back\\\\slash\":2,\"new\\nline\\t\\u0001\":3,"
             "\"\xc3\xa9\xe6\x97\xa5 \xf0\x9f\x98\x80\":4,\"\":5,\"a/b~c\":6,\"#::= |\":7}"));
    char schema[700], doc[400];
    char name[301];
    memset(name, 'k', 300), name[300] = '\0';
    snprintf(schema, sizeof schema,
             "{\"properties\":{\"%s\":{\"type\":\"integer\"},\"%s\":{\"type\":\"null\"}}}", name,
             name + 1);
    snprintf(doc, sizeof doc, "{\"%s\":1}", name);
    check_docs(schema, DOCS(doc, "{}"), DOCS("{\"k\":1}"));
}

static void check_arrays(void) {
    check_docs(
        "{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":4}",
        DOCS("[1,2]", "[1,2,3,4]", "[ 1 , 2 ]", "[\n1,\n2\n]"),
        DOCS("[1]", "[1,2,3,4,5]", "[1,2,]", "[1,\"2\"]", "[]"));
    check_docs("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"},"
               "{\"type\":\"boolean\"}],\"items\":false,\"minItems\":1}",
               DOCS("[1]", "[1,\"a\"]", "[1,\"a\",true]"),
               DOCS("[]", "[1,\"a\",true,2]", "[\"a\"]", "[1,true]"));
    check_docs(
        "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}",
        DOCS("[]", "[1]", "[1,\"a\"]", "[1,\"a\",null,{}]"), DOCS("[\"a\"]", "[1,2]"));
    check_docs("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"}],\"items\":{\"type\":"
               "\"string\"},"
               "\"minItems\":3}",
               DOCS("[1,\"a\",\"b\"]", "[1,\"a\",\"b\",\"c\"]"),
               DOCS("[1,\"a\"]", "[\"a\",\"b\",\"c\"]"));
    check_docs("{\"type\":\"array\",\"prefixItems\":[{\"const\":1},{\"const\":2},{\"const\":3}],"
               "\"minItems\":2,\"maxItems\":2}", DOCS("[1,2]"), DOCS("[1]", "[1,2,3]"));
    check_docs("{\"type\":\"array\",\"prefixItems\":[{\"const\":1},false]}", DOCS("[]", "[1]"),
               DOCS("[1,2]", "[1,1]"));
    check_docs("{\"type\":\"array\",\"maxItems\":0}", DOCS("[]", "[ ]"), DOCS("[1]"));
    check_docs("{\"type\":\"array\",\"items\":false}", DOCS("[]"), DOCS("[1]"));
    check_docs("{\"type\":\"array\",\"minItems\":1}", DOCS("[1]", "[{},[]]"), DOCS("[]"));
    check_docs("{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},"
               "\"maxItems\":1}}", DOCS("[]", "[[],[1]]"), DOCS("[[1,2]]", "[1]"));
}

static void check_values(void) {
    check_docs("{\"enum\":[\"a\",1,null,true,{\"x\":[1,2]},\"q\\\"\\\\\\n\",2.5,[]]}",
               DOCS("\"a\"", "1", "null", "true", "{\"x\":[1,2]}", "\"q\\\"\\\\\\n\"", "2.5", "[]"),
               DOCS("\"b\"", "false", "2", "{\"x\":[1, 2]}", "1.0", "[ ]"));
    check_docs("{\"type\":\"string\",\"enum\":[\"a\",1,\"b\"]}", DOCS("\"a\"", "\"b\""), DOCS("1"));
    check_docs("{\"type\":\"integer\",\"enum\":[1.5,2,\"2\"]}", DOCS("2"), DOCS("1.5", "\"2\""));
    check_docs("{\"const\":{\"k\":[true,\"\\u00e9\"]}}", DOCS("{\"k\":[true,\"\xc3\xa9\"]}"),
               DOCS("{\"k\":[true]}", "{}"));
    check_docs("{\"const\":\"x\",\"enum\":[\"x\",\"y\"]}", DOCS("\"x\""), DOCS("\"y\""));
}

static void check_combinators(void) {
    check_docs("{\"anyOf\":[{\"type\":\"string\",\"maxLength\":1},{\"type\":\"integer\","
               "\"minimum\":5},false]}",
               DOCS("\"a\"", "5", "100"), DOCS("\"ab\"", "4", "null"));
    check_docs("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", DOCS("1", "1.5"),
               DOCS("x"));
    check_docs("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"a\"},"
               "\"x\":{\"type\":\"integer\"}},\"required\":[\"kind\"]},{\"type\":\"object\","
               "\"properties\":"
               "{\"kind\":{\"enum\":[\"b\",\"c\"]}},\"required\":[\"kind\"]},{\"type\":\"string\"},"
               "{\"type\":[\"null\",\"boolean\"]}]}",
               DOCS("{\"kind\":\"a\",\"x\":1}", "{\"kind\":\"b\"}", "\"s\"", "null", "true"),
               DOCS("{\"kind\":\"d\"}", "{\"x\":1}", "1"));
    /* a discriminated union through $defs */
    check_docs(
        "{\"$defs\":{\"cat\":{\"type\":\"object\",\"properties\":{\"pet\":{\"const\":\"cat\"},"
        "\"lives\":{\"type\":\"integer\"}},\"required\":[\"pet\",\"lives\"]},\"dog\":{\"type\":"
        "\"object\",\"properties\":{\"pet\":{\"const\":\"dog\"}},\"required\":[\"pet\"]}},"
        "\"oneOf\":[{\"$ref\":\"#/$defs/cat\"},{\"$ref\":\"#/$defs/dog\"}]}",
        DOCS("{\"pet\":\"cat\",\"lives\":9}", "{\"pet\":\"dog\"}"),
        DOCS("{\"pet\":\"cat\"}", "{\"pet\":\"dog\",\"lives\":9}"));
    check_docs("{\"allOf\":[{\"type\":\"integer\",\"maximum\":3}]}", DOCS("3", "-1"), DOCS("4"));
}

static void check_refs(void) {
    const char *list =
        "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
        "\"integer\"},\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},"
        "\"required\":[\"v\",\"next\"]}},\"$ref\":\"#/$defs/node\"}";
    check_docs(list,
               DOCS("{\"v\":1,\"next\":null}",
                    "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3,\"next\":null}}}"),
               DOCS("{\"v\":1}", "{\"v\":1,\"next\":{\"v\":2}}"));
    check_docs("{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\",\"items\":{\"$"
               "ref\":\"#\"}}}}",
               DOCS("{}", "{\"kids\":[{},{\"kids\":[{\"kids\":[]}]}]}"), DOCS("{\"kids\":[1]}"));
    check_docs("{\"definitions\":{\"a "
               "b~/\":{\"type\":\"integer\"},\"s\":{\"$ref\":\"#/definitions/a%20b~0~1\"}},"
               "\"type\":\"array\",\"items\":{\"$ref\":\"#/definitions/s\"}}",
               DOCS("[1,2]"), DOCS("[\"x\"]"));
    /* a definition used twice is one rule; names of helpers are never taken */
    check_docs(
        "{\"$defs\":{\"string\":{\"type\":\"integer\"}},\"type\":\"array\",\"prefixItems\":"
        "[{\"$ref\":\"#/$defs/string\"},{\"$ref\":\"#/$defs/string\"},{\"type\":\"string\"}]}",
        DOCS("[1,2,\"x\"]"), DOCS("[\"x\"]", "[1,2,3]"));
}

static void check_errors(void) {
    const elm_status U = ELM_ERR_UNSUPPORTED, F = ELM_ERR_FORMAT;
    check_error("{\"properties\":{\"age\":{\"type\":\"string\",\"pattern\":\"^a\"}}}", U,
                DOCS("/properties/age/pattern", "'pattern'"));
    check_error("{\"type\":\"integer\",\"multipleOf\":2}", U, DOCS("/multipleOf", "'multipleOf'"));
    check_error("{\"type\":\"string\",\"format\":\"email\"}", U, DOCS("/format", "'email'"));
    check_error("{\"type\":\"integer\",\"format\":\"int32\"}", U, DOCS("/format", "'int32'"));
    check_error("{\"items\":{\"patternProperties\":{}}}", U, DOCS("/items/patternProperties"));
    check_error("{\"properties\":{\"a\\nb\":{\"not\":{}}}}", U, DOCS("/properties/a\\u000ab/not"));
    check_error("{\"properties\":{\"a/b~\":{\"uniqueItems\":true}}}", U,
                DOCS("/properties/a~1b~0/uniqueItems"));
    check_error("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", U,
                DOCS("/oneOf", "oneOf whose branches may overlap"));
    check_error("{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"k\":{\"enum\":[1,2]}},"
                "\"required\":[\"k\"]},"
                "{\"type\":\"object\",\"properties\":{\"k\":{\"const\":2}},\"required\":[\"k\"]}]}",
                U, DOCS("oneOf whose branches may overlap"));
    check_error("{\"oneOf\":[{\"properties\":{\"k\":{\"const\":1}}},{\"properties\":{\"k\":{"
                "\"const\":2}}}]}",
                U, DOCS("oneOf whose branches may overlap"));
    check_error("{\"oneOf\":[{\"minLength\":1},{\"type\":\"string\"}]}", U, DOCS("overlap"));
    /* branches that refer back to the root: the type analysis gives up early, not after 2^64 */
    check_error("{\"oneOf\":[{\"$ref\":\"#\"},{\"$ref\":\"#\"}]}", U, DOCS("overlap"));
    check_error("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":1}]}", U, DOCS("/allOf"));
    check_error("{\"anyOf\":[{}],\"type\":\"object\"}", U, DOCS("/type", "beside 'anyOf'"));
    check_error("{\"$ref\":\"#/$defs/a\",\"minimum\":1,\"$defs\":{\"a\":{}}}", U,
                DOCS("/minimum", "beside '$ref'"));
    check_error("{\"enum\":[1,2],\"minimum\":2}", U, DOCS("/minimum"));
    check_error("{\"type\":\"string\",\"enum\":[1,2]}", U, DOCS("/enum"));
    check_error("{\"type\":\"string\",\"format\":\"date\",\"maxLength\":5}", U, DOCS("/maxLength"));
    check_error("{\"type\":\"string\",\"minLength\":5,\"maxLength\":4}", U, DOCS("/minLength"));
    check_error("{\"type\":\"string\",\"minLength\":10001}", U, DOCS("/minLength"));
    check_error("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", U, DOCS("/minItems"));
    check_error("{\"type\":\"array\",\"prefixItems\":[{}],\"items\":false,\"minItems\":2}", U,
                DOCS("/minItems"));
    check_error("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", U,
                DOCS("/minimum", "no integer"));
    check_error("{\"type\":\"integer\",\"exclusiveMinimum\":4,\"exclusiveMaximum\":5}", U,
                DOCS("no integer"));
    check_error("{\"type\":\"number\",\"minimum\":0.5}", U, DOCS("/minimum", "non-integer"));
    check_error("{\"type\":\"number\",\"minimum\":1e20}", U, DOCS("/minimum", "64-bit"));
    check_error("{\"type\":\"integer\",\"exclusiveMaximum\":-1e19}", U,
                DOCS("/exclusiveMaximum", "64-bit"));
    check_error("{\"type\":\"number\",\"exclusiveMinimum\":1,\"exclusiveMaximum\":1}", U,
                DOCS("no number"));
    check_error("{\"properties\":{\"a\":false},\"required\":[\"a\"]}", U, DOCS("/required"));
    check_error("{\"required\":[\"a\"],\"additionalProperties\":false}", U, DOCS("/required"));
    check_error("false", U, DOCS("(root)"));
    check_error("{\"anyOf\":[false,false]}", U, DOCS("/anyOf"));
    check_error("{\"$ref\":\"https://example.com/s.json\"}", U,
                DOCS("/$ref", "https://example.com/s.json"));
    check_error("{\"$ref\":\"#/properties/a\"}", U, DOCS("/$ref"));
    check_error("{\"$ref\":\"#/$defs/a/b\",\"$defs\":{\"a\":{}}}", U, DOCS("/$ref"));
    check_error("{\"$ref\":\"#/$defs/missing\",\"$defs\":{}}", F,
                DOCS("/$ref", "points to nothing"));
    /* a nested $id is a resource of its own, where "#/$defs/x" means its own $defs */
    check_error("{\"$id\":\"https://example.com/root\",\"$defs\":{\"x\":{\"type\":\"integer\"}},"
                "\"properties\":{\"a\":{\"$id\":\"sub\",\"$defs\":{\"x\":{\"type\":\"string\"}},"
                "\"items\":{\"$ref\":\"#/$defs/x\"}}}}", U, DOCS("/properties/a/$id"));
    check_error("{\"$ref\":\"#\"}", U, DOCS("'#'", "reaches itself"));
    check_error(
        "{\"$defs\":{\"a\":{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/b\"}},"
        "{\"$ref\":\"#/$defs/b\"}]},\"b\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}},\"$ref\":\"#/"
        "$defs/a\"}",
        U, DOCS("reaches itself"));
    check_error("{\"required\":\"a\"}", F, DOCS("/required", "'required'"));
    check_error("{\"required\":[1]}", F, DOCS("/required"));
    check_error("{\"minItems\":-1}", F, DOCS("/minItems", "non-negative integer"));
    check_error("{\"maxLength\":1.5}", F, DOCS("/maxLength"));
    check_error("{\"minimum\":\"1\"}", F, DOCS("/minimum"));
    check_error("{\"type\":\"strin\"}", F, DOCS("/type"));
    check_error("{\"type\":[]}", F, DOCS("/type"));
    check_error("{\"anyOf\":[]}", F, DOCS("/anyOf"));
    check_error("{\"anyOf\":[1]}", F, DOCS("/anyOf"));
    check_error("{\"items\":[{}]}", F, DOCS("/items"));
    check_error("{\"properties\":{\"a\":{},\"a\":{}}}", F, DOCS("/properties"));
    check_error("{\"type\":\"string\",\"type\":\"integer\"}", F, DOCS("/type", "twice"));
    check_error("{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{},\"a\":{}}}", F, DOCS("/$defs"));
    check_error("{\"properties\":{\"a\":5}}", F, DOCS("/properties"));
    check_error("5", F, DOCS("(root)"));
    check_error("not json", F, DOCS("not JSON"));
    check_error("{\"type\":\"string\"} x", F, DOCS("not JSON"));
    check_error("", F, DOCS("not JSON"));
    check_error("{\"const\":\"a\\u0000b\"}", U, DOCS("\\u0000"));
    check_error("{\"const\":\"\xff\"}", F, DOCS("/const", "UTF-8"));
    check_error("{\"const\":1e400}", U, DOCS("/const"));
    check_error("{\"minimum\":1e400}", F, DOCS("/minimum"));
    /* nesting: 64 levels are translated, 65 are not */
    char deep[1200] = "", closing[200] = "";
    for (int i = 0; i < 63; i++) strcat(deep, "{\"items\":"), strcat(closing, "}");
    char schema[2200];
    snprintf(schema, sizeof schema, "%s{}%s", deep, closing);
    check_docs(schema, DOCS("[[[[]]]]"), NONE);
    snprintf(schema, sizeof schema, "%s{\"items\":{}}%s", deep, closing);
    check_error(schema, U, DOCS("nested over 64"));
    /* required properties outside properties share one rule for additionalProperties: nested,
     * copies would double at each level */
    char nest[2000] = "", tail[64] = "";
    for (int i = 0; i < 40; i++)
        strcat(nest, "{\"required\":[\"a\",\"b\"],\"additionalProperties\":"), strcat(tail, "}");
    snprintf(schema, sizeof schema, "%s{\"type\":\"integer\"}%s", nest, tail);
    elm_error err;
    char *text = NULL;
    CHECK(elm_json_schema_to_gbnf(schema, strlen(schema), "schema.json", &text, &err) == ELM_OK &&
              strlen(text) < 20000, "%s", text ? "too long a grammar" : err.msg);
    free(text);
    /* lengths and counts that would expand past what the grammar parser takes */
    char many[4000] = "{\"anyOf\":[";
    for (int i = 0; i < 60; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"type\":\"string\",\"maxLength\":%d}", i ? "," : "", 9000 + i);
    strcat(many, "]}");
    check_error(many, U, DOCS("elements"));
}

static void check_json_object(void) {
    const char *text = elm_json_object_gbnf();
    elm_grammar *g = NULL;
    elm_error err;
    CHECK(elm_grammar_parse(text, strlen(text), "json_object", &g, &err) == ELM_OK, "%s", err.msg);
    if (!g) return;
    static const char *const good[] = {"{}", "{\"a\":[1,{\"b\":null}],\"c\":\"x\",\"d\":-1.5e3}",
                                       "{ \"a\" : true }", "{\"a\":{\"a\":{\"a\":{}}}}"};
    static const char *const bad[] = {"[]", "1", "\"{}\"", " {}", "{} ", "{\"a\"}", "{\"a\":1,}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(match(g, good[i]) == 2, "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(match(g, bad[i]) != 2, "%s", bad[i]);
    CHECK(match(g, "{\"a\":[1,") == 1, "a prefix");
    elm_grammar_free(g);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    check_types();
    check_strings();
    check_integers();
    check_numbers();
    check_objects();
    check_odd_names();
    check_arrays();
    check_values();
    check_combinators();
    check_refs();
    check_errors();
    check_json_object();
    return check_done();
}
