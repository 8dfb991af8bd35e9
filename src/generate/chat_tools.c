/* Tool calls in the families' own syntax (chat.h): the tools' JSON as the templates write it, the
 * calls parsed back out of a reply, and the grammar that holds a reply to valid calls. The format
 * here is the Hermes-style one of Qwen3's template: after the system text, a "# Tools" block
 * listing each tool as json.dumps writes it inside <tools></tools>, and each call a block
 * <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "generate/chat_tools.h"

#define HERMES_OPEN "<tool_call>"
#define HERMES_CLOSE "</tool_call>"

/* A number as Python's repr: integers without a fraction, others in the fewest digits that read
 * back the same (cJSON keeps no "1.0" apart from "1": both are written as 1). */
static void put_number(elm_sbuf *t, double v) {
    char buf[40];
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(buf, sizeof buf, "%.0f", v);
    } else {
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
    elm_sb_puts(t, buf);
}

static void put_string(elm_sbuf *t, const char *s) {
    elm_sb_put(t, "\"", 1);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
        if (esc) elm_sb_puts(t, esc);
        else if (c < 0x20) elm_sb_printf(t, "\\u%04x", c);
        else elm_sb_put(t, s, 1); /* ensure_ascii=False: UTF-8 as it is */
    }
    elm_sb_put(t, "\"", 1);
}

void elm_put_py_json(elm_sbuf *t, const cJSON *v) {
    if (cJSON_IsNull(v)) elm_sb_puts(t, "null");
    else if (cJSON_IsTrue(v)) elm_sb_puts(t, "true");
    else if (cJSON_IsFalse(v)) elm_sb_puts(t, "false");
    else if (cJSON_IsNumber(v)) put_number(t, v->valuedouble);
    else if (cJSON_IsString(v)) put_string(t, v->valuestring);
    else {
        const bool obj = cJSON_IsObject(v);
        elm_sb_puts(t, obj ? "{" : "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            if (c != v->child) elm_sb_puts(t, ", ");
            if (obj) {
                put_string(t, c->string);
                elm_sb_puts(t, ": ");
            }
            elm_put_py_json(t, c);
        }
        elm_sb_puts(t, obj ? "}" : "]");
    }
}

bool elm_tool_name_ok(const char *name) {
    const size_t n = strlen(name);
    return n > 0 && n <= 64 &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

elm_status elm_tools_check(const cJSON *tools, const char *src, elm_error *err) {
    if (!cJSON_IsArray(tools)) return elm_errorf(err, ELM_ERR_FORMAT, "%s: expected an array", src);
    int i = 0;
    for (const cJSON *t = tools->child; t; t = t->next, i++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
        if (!cJSON_IsObject(t) || !cJSON_IsString(type) || strcmp(type->valuestring, "function"))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s[%d].type: expected \"function\"", src, i);
        if (!cJSON_IsObject(f))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s[%d].function: expected an object", src, i);
        if (!cJSON_IsString(name) || !elm_tool_name_ok(name->valuestring))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s[%d].function.name: expected 1 to 64 of a-z A-Z 0-9 _ - .", src, i);
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s[%d].function.parameters: expected a JSON schema object", src, i);
    }
    return ELM_OK;
}

void elm_tools_put_hermes(elm_sbuf *t, const char *system, const cJSON *tools) {
    elm_sb_puts(t, "<|im_start|>system\n");
    if (system) {
        elm_sb_puts(t, system);
        elm_sb_puts(t, "\n\n");
    }
    elm_sb_puts(t, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                   "You are provided with function signatures within <tools></tools> XML tags:\n"
                   "<tools>");
    for (const cJSON *tool = tools->child; tool; tool = tool->next) {
        elm_sb_puts(t, "\n");
        elm_put_py_json(t, tool);
    }
    elm_sb_puts(t, "\n</tools>\n\nFor each function call, return a json object with function name "
                   "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                   "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
                   "</tool_call><|im_end|>\n");
}

void elm_tools_put_hermes_calls(elm_sbuf *t, const elm_tool_call *calls, int32_t n,
                                bool after_text) {
    for (int32_t i = 0; i < n; i++) {
        if (i > 0 || after_text) elm_sb_puts(t, "\n");
        elm_sb_puts(t, HERMES_OPEN "\n{\"name\": \"");
        elm_sb_puts(t, calls[i].name);
        elm_sb_puts(t, "\", \"arguments\": ");
        elm_sb_puts(t, calls[i].arguments);
        elm_sb_puts(t, "}\n" HERMES_CLOSE);
    }
}

void elm_tool_calls_free(elm_tool_calls *c) {
    for (int32_t i = 0; c->calls && i < c->n; i++) {
        free((char *)c->calls[i].name);
        free((char *)c->calls[i].arguments);
    }
    free(c->calls);
    free(c->content);
    memset(c, 0, sizeof *c);
}

static elm_status nomem(elm_tool_calls *c, elm_error *err) {
    elm_tool_calls_free(c);
    return elm_errorf(err, ELM_ERR_NOMEM, "tool calls: out of memory");
}

elm_status elm_chat_parse_tool_calls(elm_chat_template t, const char *reply, elm_tool_calls *out,
                                     elm_error *err) {
    memset(out, 0, sizeof *out);
    if (!elm_chat_template_has_tools(t))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tool calls: template %s has none",
                          elm_chat_template_name(t));
    const char *open = strstr(reply, HERMES_OPEN);
    size_t keep = open ? (size_t)(open - reply) : strlen(reply);
    while (open && keep > 0 && strchr(" \t\r\n", reply[keep - 1])) keep--;
    if (!(out->content = malloc(keep + 1))) return nomem(out, err);
    memcpy(out->content, reply, keep);
    out->content[keep] = '\0';
    for (const char *p = open; p; p = strstr(p, HERMES_OPEN)) {
        p += strlen(HERMES_OPEN);
        const char *close = strstr(p, HERMES_CLOSE);
        const size_t len = close ? (size_t)(close - p) : strlen(p);
        cJSON *j = cJSON_ParseWithLength(p, len);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "arguments");
        if (!close && !j) break; /* a last call cut short (max_tokens) is no call */
        if (!cJSON_IsString(name) || !cJSON_IsObject(args)) {
            cJSON_Delete(j);
            const int k = out->n;
            elm_tool_calls_free(out);
            return elm_errorf(err, ELM_ERR_FORMAT, "tool call %d: expected {\"name\": string, "
                                                   "\"arguments\": object}", k);
        }
        elm_tool_call *calls = realloc(out->calls, sizeof *calls * (size_t)(out->n + 1));
        if (calls) out->calls = calls;
        char *a = cJSON_PrintUnformatted(args), *nm = strdup(name->valuestring);
        cJSON_Delete(j);
        if (!calls || !a || !nm) {
            free(a);
            free(nm);
            return nomem(out, err);
        }
        out->calls[out->n++] = (elm_tool_call){.name = nm, .arguments = a};
        if (!close) break;
        p = close + strlen(HERMES_CLOSE);
    }
    return ELM_OK;
}

/* The schema of one call of tool f: {"name": its name, "arguments": its parameters}. */
static cJSON *call_schema(const cJSON *f) {
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
    cJSON *s = cJSON_CreateObject(), *props = cJSON_AddObjectToObject(s, "properties");
    cJSON_AddStringToObject(s, "type", "object");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "name"), "const",
                            cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring);
    if (cJSON_IsObject(params)) cJSON_AddItemToObject(props, "arguments", cJSON_Duplicate(params, true));
    else cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "arguments"), "type", "object");
    cJSON *req = cJSON_AddArrayToObject(s, "required");
    cJSON_AddItemToArray(req, cJSON_CreateString("name"));
    cJSON_AddItemToArray(req, cJSON_CreateString("arguments"));
    cJSON_AddFalseToObject(s, "additionalProperties");
    return s;
}

/* Whether gbnf refers to a rule `root` anywhere but in its definition, the first line: a
 * parameters schema that refers to its own root ("$ref": "#"), which the wrapper cannot keep. */
static bool refers_to_root(const char *gbnf) {
    const char *p = strchr(gbnf, '\n');
    for (; p && (p = strstr(p, "root")); p += 4) {
        const char before = p[-1], after = p[4];
        if (strchr(" (|", before) && (strchr(" )|*+?{\n", after) || !after)) return true;
    }
    return false;
}

/* The error of the first function whose parameters schema does not translate, translated alone
 * so that the message names it (tools[i].function.parameters: ...): called once the schema of all
 * the calls failed. */
static elm_status name_bad_schema(const cJSON *tools, const char *only, elm_error *err) {
    elm_status st = ELM_OK;
    int i = 0;
    for (const cJSON *tool = tools->child; !st && tool; tool = tool->next, i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(tool, "function");
        if (only && strcmp(cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring, only)) continue;
        cJSON *s = call_schema(f);
        char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "properties"), "arguments"));
        char src[64], *gbnf = NULL;
        snprintf(src, sizeof src, "tools[%d].function.parameters", i);
        st = text ? elm_json_schema_to_gbnf(text, strlen(text), src, &gbnf, err)
                  : elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
        free(gbnf);
        free(text);
        cJSON_Delete(s);
    }
    return st ? st : elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools: the calls' schema cannot be enforced");
}

elm_status elm_chat_tool_grammar(elm_chat_template t, const char *tools, const char *only,
                                 bool parallel, bool lazy, char **gbnf, const char **trigger,
                                 elm_error *err) {
    *gbnf = NULL;
    if (trigger) *trigger = HERMES_OPEN;
    if (!elm_chat_template_has_tools(t))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools: template %s has no tool calls",
                          elm_chat_template_name(t));
    cJSON *arr = cJSON_Parse(tools);
    elm_status st = elm_tools_check(arr, "tools", err);
    cJSON *any = st ? NULL : cJSON_CreateObject(), *alts = cJSON_AddArrayToObject(any, "anyOf");
    char *all = NULL, *text = NULL;
    int i = 0, n = 0;
    for (const cJSON *tool = arr ? arr->child : NULL; !st && tool; tool = tool->next, i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(tool, "function");
        if (only && strcmp(cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring, only)) continue;
        cJSON_AddItemToArray(alts, call_schema(f));
        n++;
    }
    if (!st && n == 0)
        st = elm_errorf(err, ELM_ERR_FORMAT, only ? "tool_choice: no tool named %s"
                                                  : "tools: none given%s", only ? only : "");
    if (!st && !(text = cJSON_PrintUnformatted(any)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
    if (!st && (st = elm_json_schema_to_gbnf(text, strlen(text), "tools", &all, err)) &&
        st != ELM_ERR_NOMEM)
        st = name_bad_schema(arr, only, err);
    if (!st && (strncmp(all, "root ::= ", 9) || refers_to_root(all)))
        st = elm_errorf(err, ELM_ERR_UNSUPPORTED,
                        "tools: a parameters schema that refers to its root (\"$ref\": \"#\")");
    if (!st) {
        elm_sbuf g = {0};
        elm_sb_printf(&g, "root ::= %s call \"\\n" HERMES_CLOSE "\"%s\n",
                      lazy ? "\"\\n\"" : "\"" HERMES_OPEN "\\n\"",
                      parallel ? " (\"\\n" HERMES_OPEN "\\n\" call \"\\n" HERMES_CLOSE "\")*" : "");
        elm_sb_puts(&g, "call");
        elm_sb_puts(&g, all + 4); /* "root ::= ..." becomes "call ::= ..." */
        if (!(*gbnf = elm_sb_finish(&g))) st = elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
    }
    free(text);
    free(all);
    cJSON_Delete(any);
    cJSON_Delete(arr);
    return st;
}
