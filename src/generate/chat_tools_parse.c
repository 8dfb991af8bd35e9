/* Tool calls parsed out of a reply, in the syntax of its template's family (chat.h,
 * elm_chat_parse_tool_calls; LFM2's Python calls are read by chat_tools_pycall.c). A last call
 * cut short (max_tokens) is no call; a complete one that does not hold a name and arguments is an
 * error naming it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate/chat_tools.h"


void elm_tool_calls_free(elm_tool_calls *c) {
    for (int32_t i = 0; c->calls && i < c->n; i++) {
        free((char *)c->calls[i].name);
        free((char *)c->calls[i].arguments);
    }
    free(c->calls);
    free(c->content);
    free(c->reasoning);
    memset(c, 0, sizeof *c);
}

static elm_status nomem(elm_tool_calls *c, elm_error *err) {
    elm_tool_calls_free(c);
    return elm_errorf(err, ELM_ERR_NOMEM, "tool calls: out of memory");
}

static elm_status bad_call(elm_tool_calls *c, elm_error *err, const char *expected) {
    const int k = c->n;
    elm_tool_calls_free(c);
    return elm_errorf(err, ELM_ERR_FORMAT, "tool call %d: expected %s", k, expected);
}

/* The text before `end` (NULL: all of reply), trailing whitespace trimmed, as out->content. */
static bool set_content(elm_tool_calls *out, const char *reply, const char *end) {
    size_t keep = end ? (size_t)(end - reply) : strlen(reply);
    while (keep > 0 && strchr(" \t\r\n", reply[keep - 1])) keep--;
    free(out->content);
    return (out->content = strndup(reply, keep)) != NULL;
}

elm_status elm_tool_calls_add(elm_tool_calls *out, const char *name, size_t len, cJSON *args,
                              elm_error *err) {
    elm_tool_call *calls = realloc(out->calls, sizeof *calls * (size_t)(out->n + 1));
    if (calls) out->calls = calls;
    char *a = cJSON_PrintUnformatted(args), *nm = strndup(name, len);
    cJSON_Delete(args);
    if (!calls || !a || !nm) {
        free(a);
        free(nm);
        return nomem(out, err);
    }
    out->calls[out->n++] = (elm_tool_call){.name = nm, .arguments = a};
    return ELM_OK;
}

/* Appends the call JSON object j (taken over) holds: {"name": string, KEY: object}, where Llama's
 * KEY "parameters" may also be "arguments". */
static elm_status add_json_call(elm_tool_calls *out, cJSON *j, const char *key, elm_error *err) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    cJSON *args = cJSON_DetachItemFromObjectCaseSensitive(j, key);
    if (!args) args = cJSON_DetachItemFromObjectCaseSensitive(j, "arguments");
    elm_status st;
    if (cJSON_IsString(name) && cJSON_IsObject(args)) {
        st = elm_tool_calls_add(out, name->valuestring, strlen(name->valuestring), args, err);
    } else {
        char expected[64];
        snprintf(expected, sizeof expected, "{\"name\": string, \"%s\": object}", key);
        cJSON_Delete(args);
        st = bad_call(out, err, expected);
    }
    cJSON_Delete(j);
    return st;
}

/* Qwen3's and Granite's blocks: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call> */
static elm_status parse_hermes(const char *reply, elm_tool_calls *out, elm_error *err) {
    for (const char *p = strstr(reply, ELM_TOOL_CALL_OPEN); p; p = strstr(p, ELM_TOOL_CALL_OPEN)) {
        p += strlen(ELM_TOOL_CALL_OPEN);
        const char *close = strstr(p, ELM_TOOL_CALL_CLOSE);
        cJSON *j = cJSON_ParseWithLength(p, close ? (size_t)(close - p) : strlen(p));
        if (!close && !j) break;
        const elm_status st = add_json_call(out, j, "arguments", err);
        if (st || !close) return st;
        p = close + strlen(ELM_TOOL_CALL_CLOSE);
    }
    return ELM_OK;
}

/* The schema of parameter key [len] of function `name` in the tools, or NULL. */
static const cJSON *param_schema(const cJSON *tools, const char *name, size_t nlen,
                                 const char *key, size_t len) {
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
        const char *fn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
        if (!fn || strlen(fn) != nlen || memcmp(fn, name, nlen)) continue;
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(f, "parameters"), "properties");
        for (const cJSON *p = props ? props->child : NULL; p; p = p->next)
            if (strlen(p->string) == len && !memcmp(p->string, key, len)) return p;
    }
    return NULL;
}

/* v [n] as one JSON value and nothing after it but whitespace, or NULL */
static cJSON *parse_whole(const char *v, size_t n) {
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(v, n, &end, false);
    while (j && end < v + n && strchr(" \t\r\n", *end)) end++;
    if (j && end == v + n) return j;
    cJSON_Delete(j);
    return NULL;
}

/* A parameter's value text [n] as JSON: as it is for a string parameter (unless written as a
 * JSON string), else parsed as JSON, Python's True/False/None, or a string. */
static cJSON *xml_value(const char *v, size_t n, const cJSON *schema) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    const bool str = cJSON_IsString(type) && !strcmp(type->valuestring, "string");
    cJSON *j = !str || (n >= 2 && v[0] == '"') ? parse_whole(v, n) : NULL;
    if (j && (!str || cJSON_IsString(j))) return j;
    cJSON_Delete(j);
    if (!str && n == 4 && !memcmp(v, "True", 4)) return cJSON_CreateTrue();
    if (!str && n == 5 && !memcmp(v, "False", 5)) return cJSON_CreateFalse();
    if (!str && n == 4 && !memcmp(v, "None", 4)) return cJSON_CreateNull();
    char *s = strndup(v, n);
    if (!s) return NULL;
    j = cJSON_CreateString(s);
    free(s);
    return j;
}

/* Qwen3.5's blocks: <tool_call>\n<function=N>\n<parameter=K>\nV\n</parameter>\n</function>\n
 * </tool_call>. Returns -1 for a call cut short, 0 when parsed, else the error. */
static int parse_xml_call(const char *p, const char *end, const cJSON *tools, elm_tool_calls *out,
                          elm_error *err) {
    const char *f = strstr(p, "<function=");
    const char *gt = f && f < end ? strchr(f, '>') : NULL;
    if (!gt || gt >= end) return -1;
    const char *name = f + strlen("<function="), *fend = strstr(gt, "</function>");
    if (!fend || fend > end) return -1;
    cJSON *args = cJSON_CreateObject();
    if (!args) return nomem(out, err);
    for (const char *q = gt + 1;;) {
        const char *pa = strstr(q, "<parameter=");
        if (!pa || pa > fend) break;
        const char *key = pa + strlen("<parameter="), *kend = strchr(key, '>');
        const char *v = kend ? kend + 1 : NULL, *vend = v ? strstr(v, "</parameter>") : NULL;
        if (!vend || vend > fend) {
            cJSON_Delete(args);
            return bad_call(out, err, "<parameter=NAME>\\nVALUE\\n</parameter>");
        }
        if (*v == '\n') v++;
        if (vend > v && vend[-1] == '\n') vend--;
        cJSON *val = xml_value(v, (size_t)(vend - v),
                               param_schema(tools, name, (size_t)(gt - name), key, (size_t)(kend - key)));
        char *k = strndup(key, (size_t)(kend - key));
        if (!val || !k || !cJSON_AddItemToObject(args, k, val)) {
            free(k);
            cJSON_Delete(val);
            cJSON_Delete(args);
            return nomem(out, err);
        }
        free(k);
        q = strstr(vend, "</parameter>") + strlen("</parameter>");
    }
    return elm_tool_calls_add(out, name, (size_t)(gt - name), args, err);
}

static elm_status parse_xml(const char *reply, const char *tools_json, elm_tool_calls *out,
                            elm_error *err) {
    cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
    elm_status st = ELM_OK;
    for (const char *p = strstr(reply, ELM_TOOL_CALL_OPEN); p && !st;
         p = strstr(p, ELM_TOOL_CALL_OPEN)) {
        p += strlen(ELM_TOOL_CALL_OPEN);
        const char *close = strstr(p, ELM_TOOL_CALL_CLOSE);
        const int r = parse_xml_call(p, close ? close : p + strlen(p), tools, out, err);
        if (r == -1 && close) st = bad_call(out, err, "<function=NAME>...</function>");
        else if (r == -1 || !close) break;
        else st = (elm_status)r;
        p = close + strlen(ELM_TOOL_CALL_CLOSE);
    }
    cJSON_Delete(tools);
    return st;
}

/* One LFM2 block's list of calls, [p, end) after its opening: [N(K=V, ...), ...]. `closed`:
 * the block's closing marker follows end; an open block (a reply cut short) ends at the first
 * call cut short, which is dropped. */
static elm_status parse_pycall_list(const char *p, const char *end, bool closed,
                                    elm_tool_calls *out, elm_error *err) {
    static const char expected[] = "[NAME(KEY=VALUE, ...), ...]";
    p += strspn(p, " \t\r\n");
    if (p >= end) return closed ? bad_call(out, err, expected) : ELM_OK;
    if (*p++ != '[') return bad_call(out, err, expected);
    for (int k = 0;; k++) {
        p += strspn(p, " \t\r\n");
        if (p < end && *p == ']' && k > 0) break; /* a trailing comma */
        const char *name;
        size_t len;
        cJSON *args;
        const elm_pycall_result r = elm_pycall_read(p, end, &name, &len, &args, &p);
        if (r == ELM_PYCALL_NOMEM) return nomem(out, err);
        if (r == ELM_PYCALL_SHORT && !closed) return ELM_OK;
        if (r != ELM_PYCALL_OK) return bad_call(out, err, expected);
        const elm_status st = elm_tool_calls_add(out, name, len, args, err);
        if (st) return st;
        p += strspn(p, " \t\r\n");
        if (p < end && *p == ',') p++;
        else if (p < end && *p == ']') break;
        else return p >= end && !closed ? ELM_OK : bad_call(out, err, expected);
    }
    p += 1 + strspn(p + 1, " \t\r\n");
    return p >= end ? ELM_OK : bad_call(out, err, expected);
}

/* LFM2's blocks <|tool_call_start|>[...]<|tool_call_end|>, anywhere in the reply; the text around
 * them is the content (the model may write text after its calls). */
static elm_status parse_lfm2(const char *reply, elm_tool_calls *out, elm_error *err) {
    static const size_t open_len = sizeof ELM_LFM2_CALL_OPEN - 1;
    static const size_t close_len = sizeof ELM_LFM2_CALL_CLOSE - 1;
    elm_sbuf text = {0};
    elm_sb_put(&text, "", 0);
    const char *p = reply;
    for (const char *open; (open = strstr(p, ELM_LFM2_CALL_OPEN));) {
        elm_sb_put(&text, p, (size_t)(open - p));
        const char *body = open + open_len, *close = strstr(body, ELM_LFM2_CALL_CLOSE);
        const elm_status st = parse_pycall_list(body, close ? close : body + strlen(body),
                                                close != NULL, out, err);
        if (st || !close) {
            free(text.s);
            return st;
        }
        p = close + close_len;
    }
    elm_sb_puts(&text, p);
    char *content = elm_sb_finish(&text);
    if (!content) return nomem(out, err);
    const elm_status st = set_content(out, content, NULL) ? ELM_OK : nomem(out, err);
    free(content);
    return st;
}

/* Llama 3.1's: the reply is {"name": ..., "parameters": {...}} (one, or several separated by ";"
 * as the models sometimes write); text that does not parse is no call. */
static elm_status parse_llama(const char *reply, elm_tool_calls *out, elm_error *err) {
    const char *p = strstr(reply, "{\"name\"");
    if (!p) return ELM_OK;
    const char *start = p;
    while (*p == '{') {
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(p, &end, false);
        if (!j) break;
        const elm_status st = add_json_call(out, j, "parameters", err);
        if (st) return st;
        p = end + strspn(end, " \t\r\n;");
    }
    if (out->n > 0 && !set_content(out, reply, start)) return nomem(out, err);
    return ELM_OK;
}

/* Gemma 4's value syntax (elm_put_gemma4_value) at *p, before end, read back as JSON, *p moved
 * past it; NULL when it does not parse. Keys may be bare or quoted; Python's None is null. */
static cJSON *gemma4_value(const char **p, const char *end, int depth) {
    static const char quote[] = ELM_GEMMA4_QUOTE;
    const size_t ql = sizeof quote - 1;
    const char *s = *p;
    cJSON *v = NULL;
    if (depth > 64 || s >= end) return NULL;
    if ((size_t)(end - s) >= ql && !memcmp(s, quote, ql)) {
        const char *b = s + ql, *e = b;
        while ((size_t)(end - e) >= ql && memcmp(e, quote, ql)) e++;
        if ((size_t)(end - e) < ql) return NULL;
        char *text = strndup(b, (size_t)(e - b));
        v = text ? cJSON_CreateString(text) : NULL;
        free(text);
        *p = e + ql;
        return v;
    }
    if (*s == '{' || *s == '[') {
        const bool obj = *s == '{';
        v = obj ? cJSON_CreateObject() : cJSON_CreateArray();
        bool ok = v != NULL;
        for (s++; ok && s < end && *s != (obj ? '}' : ']');) {
            ok = false;
            char *key = NULL;
            if (obj) {
                const char *k = s, *ke;
                if ((size_t)(end - s) >= ql && !memcmp(s, quote, ql)) {
                    k = s + ql;
                    for (ke = k; (size_t)(end - ke) >= ql && memcmp(ke, quote, ql); ke++) {}
                    s = (size_t)(end - ke) >= ql ? ke + ql : end;
                } else {
                    for (ke = k; ke < end && !strchr(":{}[],", *ke); ke++) {}
                    s = ke;
                }
                if (s >= end || *s != ':' || !(key = strndup(k, (size_t)(ke - k)))) break;
                s++;
            }
            cJSON *item = gemma4_value(&s, end, depth + 1);
            const bool added = item && (obj ? cJSON_AddItemToObject(v, key, item)
                                            : cJSON_AddItemToArray(v, item));
            free(key);
            if (!added) {
                cJSON_Delete(item);
                break;
            }
            if (s < end && *s == ',') s++;
            else if (s >= end || *s != (obj ? '}' : ']')) break;
            ok = true;
        }
        if (!ok || s >= end || *s != (obj ? '}' : ']')) {
            cJSON_Delete(v);
            return NULL;
        }
        *p = s + 1;
        return v;
    }
    static const struct { const char *word; int type; } words[] = {
        {"true", cJSON_True}, {"false", cJSON_False}, {"null", cJSON_NULL}, {"None", cJSON_NULL}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        const size_t n = strlen(words[i].word);
        if ((size_t)(end - s) >= n && !memcmp(s, words[i].word, n)) {
            *p = s + n;
            return words[i].type == cJSON_True    ? cJSON_CreateTrue()
                   : words[i].type == cJSON_False ? cJSON_CreateFalse()
                                                  : cJSON_CreateNull();
        }
    }
    char *e = NULL;
    const double d = strtod(s, &e); /* the reply is NUL-terminated; the number ends before end */
    if (e == s || e > end) return NULL;
    *p = e;
    return cJSON_CreateNumber(d);
}

/* Gemma 4's calls: <|tool_call>call:NAME{k:V,...}<tool_call|>, one after another */
static elm_status parse_gemma4(const char *reply, elm_tool_calls *out, elm_error *err) {
    for (const char *p = strstr(reply, ELM_GEMMA4_CALL_OPEN); p;
         p = strstr(p, ELM_GEMMA4_CALL_OPEN)) {
        p += strlen(ELM_GEMMA4_CALL_OPEN);
        const char *close = strstr(p, ELM_GEMMA4_CALL_CLOSE);
        if (!close) break; /* cut short */
        const char *name = p + strlen("call:"), *brace = name;
        while (brace < close && *brace != '{') brace++;
        const char *q = brace;
        cJSON *args = strncmp(p, "call:", 5) ? NULL : gemma4_value(&q, close, 0);
        if (!cJSON_IsObject(args) || q != close || brace == name) {
            cJSON_Delete(args);
            return bad_call(out, err, "call:NAME{ARGUMENTS}");
        }
        const elm_status st = elm_tool_calls_add(out, name, (size_t)(brace - name), args, err);
        if (st) return st;
        p = close + strlen(ELM_GEMMA4_CALL_CLOSE);
    }
    return ELM_OK;
}

/* Mistral's: [TOOL_CALLS]NAME[ARGS]{...} one after another, a call id ([CALL_ID]ID, which
 * Mistral Small 3.2 writes) before [ARGS] skipped. A last call whose arguments do not parse is
 * cut short; one followed by another call is an error. */
static elm_status parse_mistral(const char *reply, elm_tool_calls *out, elm_error *err) {
    const size_t open = strlen(ELM_MISTRAL_CALL_OPEN);
    for (const char *p = strstr(reply, ELM_MISTRAL_CALL_OPEN); p;) {
        const char *name = p + open, *args = strstr(name, ELM_MISTRAL_ARGS);
        if (!args) return ELM_OK;
        const char *next = strstr(name, ELM_MISTRAL_CALL_OPEN);
        if (next && next < args) return bad_call(out, err, "NAME[ARGS]{...}");
        const char *name_end = strstr(name, "[CALL_ID]");
        if (!name_end || name_end > args) name_end = args;
        const char *a = args + strlen(ELM_MISTRAL_ARGS), *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(a, &end, false);
        if (!j && !next) return ELM_OK;
        if (!cJSON_IsObject(j) || name_end == name) {
            cJSON_Delete(j);
            return bad_call(out, err, "NAME[ARGS] and an object of arguments");
        }
        const elm_status st = elm_tool_calls_add(out, name, (size_t)(name_end - name), j, err);
        if (st) return st;
        p = strstr(end, ELM_MISTRAL_CALL_OPEN);
    }
    return ELM_OK;
}

/* A JSON list of calls {"name": ..., "arguments": {...}} (an "id" the model writes ignored)
 * after `open`, which may end with the list's "[": Phi-4-mini's functools[...], Mistral Nemo's
 * [TOOL_CALLS][...]. Read call by call, so that a list cut short keeps its complete calls; a
 * call that does not parse is cut short, unless the reply ends with the list's "]" (an error). */
static elm_status parse_json_list(const char *reply, const char *open, elm_tool_calls *out,
                                  elm_error *err) {
    const char *p = strstr(reply, open);
    if (!p) return ELM_OK;
    p += strlen(open);
    if (p[-1] != '[') { /* the list's "[" after the opening */
        p += strspn(p, " \t\r\n");
        if (*p != '[') return *p ? bad_call(out, err, "a list of calls") : ELM_OK;
        p++;
    }
    for (;;) {
        p += strspn(p, " \t\r\n");
        if (*p == ']') return ELM_OK;
        const char *end = NULL;
        cJSON *j = cJSON_ParseWithOpts(p, &end, false);
        if (!j) {
            const char *e = p + strlen(p);
            while (e > p && strchr(" \t\r\n", e[-1])) e--;
            return e > p && e[-1] == ']' ? bad_call(out, err, "a list of {\"name\": N, "
                                                              "\"arguments\": {...}}")
                                         : ELM_OK;
        }
        const elm_status st = add_json_call(out, j, "arguments", err);
        if (st) return st;
        p = end + strspn(end, " \t\r\n");
        if (*p != ',') return ELM_OK; /* "]", or the end of a list cut short */
        p++;
    }
}

elm_status elm_chat_parse_tool_calls(elm_chat_template t, const char *tools, const char *reply,
                                     elm_tool_calls *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    const elm_tool_syntax s = elm_chat_template_tool_syntax(t);
    if (s == ELM_TOOLS_NONE)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tool calls: template %s has none",
                          elm_chat_template_name(t));
    if (s == ELM_TOOLS_HARMONY) return elm_harmony_parse(reply, out, err);
    if (!set_content(out, reply, s == ELM_TOOLS_LLAMA ? NULL : strstr(reply, elm_tools_call_open(s))))
        return nomem(out, err);
    switch (s) {
    case ELM_TOOLS_LLAMA: return parse_llama(reply, out, err);
    case ELM_TOOLS_QWEN_XML: return parse_xml(reply, tools, out, err);
    case ELM_TOOLS_GEMMA4: return parse_gemma4(reply, out, err);
    case ELM_TOOLS_PHI4_MINI: return parse_json_list(reply, ELM_PHI4_CALL_OPEN, out, err);
    case ELM_TOOLS_LFM2:
    case ELM_TOOLS_LFM25: return parse_lfm2(reply, out, err);
    case ELM_TOOLS_MISTRAL:
    case ELM_TOOLS_MISTRAL_IDS: return parse_mistral(reply, out, err);
    case ELM_TOOLS_MISTRAL_V3: return parse_json_list(reply, ELM_MISTRAL_CALL_OPEN, out, err);
    default: return parse_hermes(reply, out, err);
    }
}
