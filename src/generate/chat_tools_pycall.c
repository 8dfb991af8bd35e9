/* One call in Python's call syntax, its keyword arguments' Python literals read into a JSON
 * object (chat_tools.h, elm_pycall_read): what LFM2 writes between its call markers,
 * [get_weather(city="Paris", days=2)]. The reader is lenient where models drift towards JSON
 * (true, false, null, \/ and \uD83D\uDE00 pairs) and strict about structure, so that a call cut
 * short is told apart from one that is not a call. */
#include <stdlib.h>
#include <string.h>

#include "generate/chat_tools.h"

#define MAX_DEPTH 64

/* A read over text [p, end): where it stands, and how it ended when it could not go on. */
typedef struct {
    const char *p, *end;
    elm_pycall_result fail; /* ELM_PYCALL_OK while it goes on */
} reader;

/* Fails the read: the text ended (short) or is wrong (bad); always NULL, for returns. */
static cJSON *stop(reader *r, elm_pycall_result why) {
    if (r->fail == ELM_PYCALL_OK) r->fail = why;
    return NULL;
}

/* Fails for the byte under the cursor: short at the end of the text, else bad. */
static cJSON *unexpected(reader *r) {
    return stop(r, r->p >= r->end ? ELM_PYCALL_SHORT : ELM_PYCALL_BAD);
}

static void skip_blanks(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' || *r->p == '\n'))
        r->p++;
}

/* Whether c may be in a name (a function's: also . and -), or begin one (first). */
static bool name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '.' || c == '-'));
}

/* Whether the text goes on with word w (not followed by a name character), then past it. */
static bool word(reader *r, const char *w) {
    const size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n)) return false;
    if (r->p + n < r->end && name_char(r->p[n], false)) return false;
    r->p += n;
    return true;
}

/* The value of n hex digits at the cursor, or -1. */
static long hex(reader *r, int n) {
    if (r->end - r->p < n) return stop(r, ELM_PYCALL_SHORT), -1;
    long v = 0;
    for (int i = 0; i < n; i++) {
        const char c = r->p[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return stop(r, ELM_PYCALL_BAD), -1;
        v = v * 16 + d;
    }
    r->p += n;
    return v;
}

static void put_utf8(elm_sbuf *b, unsigned long cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) u[0] = (char)cp, n = 1;
    else if (cp < 0x800) u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    else
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    elm_sb_put(b, u, n);
}

/* A \u escape's code point after the "u": a UTF-16 pair written as two escapes (JSON's way) is
 * one; -1 on failure. */
static long unicode_escape(reader *r) {
    long cp = hex(r, 4);
    if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 2 && r->p[0] == '\\' && r->p[1] == 'u') {
        r->p += 2;
        const long lo = hex(r, 4);
        if (lo < 0xDC00 || lo > 0xDFFF) return stop(r, ELM_PYCALL_BAD), -1;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return cp; /* a lone surrogate is refused by the caller */
}

/* The escape after a backslash into b; false on failure. Unknown escapes stay as written, as
 * Python keeps them. */
static bool escape(reader *r, elm_sbuf *b) {
    if (r->p >= r->end) return stop(r, ELM_PYCALL_SHORT), false;
    static const char in[] = "nrtbfv0\\'\"/", out[] = "\n\r\t\b\f\v\0\\'\"/";
    const char c = *r->p++;
    const char *simple = c ? strchr(in, c) : NULL;
    long cp;
    if (simple) {
        elm_sb_put(b, &out[simple - in], 1);
        return true;
    }
    switch (c) {
    case '\n': return true; /* a line continued */
    case 'x': cp = hex(r, 2); break;
    case 'u': cp = unicode_escape(r); break;
    case 'U': cp = hex(r, 8); break;
    default: elm_sb_put(b, (const char[]){'\\', c}, 2); return true;
    }
    if (cp < 0) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) /* not a character */
        return stop(r, ELM_PYCALL_BAD), false;
    put_utf8(b, (unsigned long)cp);
    return true;
}

/* A string in ' or " at the cursor; one holding NUL (\0, \x00) is refused: a JSON string of
 * cJSON's cannot hold it. */
static cJSON *string(reader *r) {
    const char q = *r->p++;
    elm_sbuf b = {0};
    elm_sb_put(&b, "", 0);
    while (r->p < r->end && *r->p != q)
        if (*r->p == '\\') {
            r->p++;
            if (!escape(r, &b)) break;
        } else {
            elm_sb_put(&b, r->p++, 1);
        }
    cJSON *s = NULL;
    if (r->fail == ELM_PYCALL_OK) {
        if (r->p >= r->end) stop(r, ELM_PYCALL_SHORT);
        else if (b.oom || memchr(b.s, 0, b.len)) stop(r, b.oom ? ELM_PYCALL_NOMEM : ELM_PYCALL_BAD);
        else if (!(s = cJSON_CreateString(b.s))) stop(r, ELM_PYCALL_NOMEM);
        else r->p++; /* the closing quote */
    }
    free(b.s);
    return s;
}

/* A number: [-+] digits [. digits] [e [-+] digits], or a fraction .5; at the text's end it may
 * still go on, which is short. */
static cJSON *number(reader *r) {
    const char *s = r->p;
    if (r->p < r->end && (*r->p == '-' || *r->p == '+')) r->p++;
    const char *digits = r->p;
    while (r->p < r->end && ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' || *r->p == 'e' ||
                             *r->p == 'E' ||
                             ((*r->p == '-' || *r->p == '+') && (r->p[-1] == 'e' || r->p[-1] == 'E'))))
        r->p++;
    if (r->p >= r->end) return stop(r, ELM_PYCALL_SHORT);
    char buf[64];
    const size_t n = (size_t)(r->p - s);
    if (r->p == digits || n >= sizeof buf) return stop(r, ELM_PYCALL_BAD);
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e;
    const double v = strtod(buf, &e);
    if (*e) return stop(r, ELM_PYCALL_BAD);
    cJSON *j = cJSON_CreateNumber(v);
    return j ? j : stop(r, ELM_PYCALL_NOMEM);
}

static cJSON *value(reader *r, int depth);

/* The items of a list [..] or tuple (..) at the cursor, up to `close`; a trailing comma allowed. */
static cJSON *sequence(reader *r, char close, int depth) {
    r->p++;
    cJSON *a = cJSON_CreateArray();
    if (!a) return stop(r, ELM_PYCALL_NOMEM);
    for (;;) {
        skip_blanks(r);
        if (r->p < r->end && *r->p == close) break;
        cJSON *x = value(r, depth + 1);
        if (!x) break;
        cJSON_AddItemToArray(a, x);
        skip_blanks(r);
        if (r->p < r->end && *r->p == ',') r->p++;
        else if (r->p >= r->end || *r->p != close) break;
    }
    if (r->fail == ELM_PYCALL_OK && (r->p >= r->end || *r->p != close)) unexpected(r);
    if (r->fail != ELM_PYCALL_OK) return cJSON_Delete(a), NULL;
    r->p++;
    return a;
}

/* A dict {KEY: VALUE, ...} of string keys at the cursor; a trailing comma allowed. */
static cJSON *dict(reader *r, int depth) {
    r->p++;
    cJSON *o = cJSON_CreateObject();
    if (!o) return stop(r, ELM_PYCALL_NOMEM);
    for (;;) {
        skip_blanks(r);
        if (r->p < r->end && *r->p == '}') break;
        if (r->p >= r->end || (*r->p != '"' && *r->p != '\'')) break;
        cJSON *k = string(r);
        if (!k) break;
        skip_blanks(r);
        cJSON *v = NULL;
        if (r->p < r->end && *r->p == ':') {
            r->p++;
            v = value(r, depth + 1);
        }
        if (v && cJSON_GetObjectItemCaseSensitive(o, k->valuestring)) stop(r, ELM_PYCALL_BAD);
        else if (v) cJSON_AddItemToObject(o, k->valuestring, v), v = NULL;
        else if (r->fail == ELM_PYCALL_OK) unexpected(r);
        cJSON_Delete(k);
        cJSON_Delete(v);
        if (r->fail != ELM_PYCALL_OK) break;
        skip_blanks(r);
        if (r->p < r->end && *r->p == ',') r->p++;
        else if (r->p >= r->end || *r->p != '}') break;
    }
    if (r->fail == ELM_PYCALL_OK && (r->p >= r->end || *r->p != '}')) unexpected(r);
    if (r->fail != ELM_PYCALL_OK) return cJSON_Delete(o), NULL;
    r->p++;
    return o;
}

/* The literal at the cursor (after blanks), or NULL with r->fail set. */
static cJSON *value(reader *r, int depth) {
    skip_blanks(r);
    if (depth > MAX_DEPTH) return stop(r, ELM_PYCALL_BAD);
    if (r->p >= r->end) return stop(r, ELM_PYCALL_SHORT);
    const char c = *r->p;
    if (c == '"' || c == '\'') return string(r);
    if (c == '[') return sequence(r, ']', depth);
    if (c == '(') return sequence(r, ')', depth);
    if (c == '{') return dict(r, depth);
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.') return number(r);
    cJSON *j = word(r, "True") || word(r, "true")     ? cJSON_CreateTrue()
               : word(r, "False") || word(r, "false") ? cJSON_CreateFalse()
               : word(r, "None") || word(r, "null")   ? cJSON_CreateNull()
                                                      : NULL;
    if (j) return j;
    /* a word cut short ("Tr") is short, anything else bad */
    static const char *const words[] = {"True", "False", "None", "true", "false", "null"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if ((size_t)(r->end - r->p) < strlen(words[i]) &&
            !memcmp(r->p, words[i], (size_t)(r->end - r->p)))
            return stop(r, ELM_PYCALL_SHORT);
    return stop(r, ELM_PYCALL_BAD);
}

/* The keyword arguments after "(" up to ")" into object o. */
static void arguments(reader *r, cJSON *o) {
    for (;;) {
        skip_blanks(r);
        if (r->p < r->end && *r->p == ')') break;
        const char *key = r->p;
        while (r->p < r->end && name_char(*r->p, r->p == key) && *r->p != '.' && *r->p != '-')
            r->p++;
        const size_t klen = (size_t)(r->p - key);
        skip_blanks(r);
        if (!klen || r->p >= r->end || *r->p != '=') {
            unexpected(r);
            return;
        }
        r->p++;
        cJSON *v = value(r, 1);
        char *k = v ? strndup(key, klen) : NULL;
        if (v && !k) stop(r, ELM_PYCALL_NOMEM);
        else if (v && cJSON_GetObjectItemCaseSensitive(o, k)) stop(r, ELM_PYCALL_BAD);
        else if (v) cJSON_AddItemToObject(o, k, v), v = NULL;
        free(k);
        cJSON_Delete(v);
        if (r->fail != ELM_PYCALL_OK) return;
        skip_blanks(r);
        if (r->p < r->end && *r->p == ',') r->p++;
        else if (r->p >= r->end || *r->p != ')') break;
    }
    if (r->p >= r->end || *r->p != ')') unexpected(r);
}

elm_pycall_result elm_pycall_read(const char *p, const char *end, const char **name,
                                  size_t *name_len, cJSON **args, const char **next) {
    *args = NULL;
    reader r = {p, end, ELM_PYCALL_OK};
    skip_blanks(&r);
    *name = r.p;
    while (r.p < r.end && name_char(*r.p, r.p == *name)) r.p++;
    *name_len = (size_t)(r.p - *name);
    skip_blanks(&r);
    if (!*name_len || r.p >= r.end || *r.p != '(') {
        unexpected(&r);
        return r.fail;
    }
    r.p++;
    cJSON *o = cJSON_CreateObject();
    if (!o) return ELM_PYCALL_NOMEM;
    arguments(&r, o);
    if (r.fail != ELM_PYCALL_OK) {
        cJSON_Delete(o);
        return r.fail;
    }
    *args = o;
    *next = r.p + 1;
    return ELM_PYCALL_OK;
}
