/* The grammar of a reply's tool calls (chat.h, elm_chat_tool_grammar): each call written exactly
 * as its family's template writes one, with the arguments held to the function's parameters
 * schema. Each schema goes through the JSON-schema translator on its own, its rules renamed with
 * a prefix of their own, so that the calls' grammar is one set of rules. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/grammar.h"
#include "generate/chat_tools.h"
#include "generate/json_schema.h"

/* The translator's gbnf with every rule name prefixed: names are the words outside string
 * literals, character classes and repetition counts. */
static void put_prefixed(elm_sbuf *g, const char *gbnf, const char *prefix) {
    for (const char *p = gbnf; *p;) {
        const char *q = p;
        if (*p == '"' || *p == '[') {
            const char close = *p == '"' ? '"' : ']';
            for (q++; *q && *q != close; q++)
                if (*q == '\\' && q[1]) q++;
            if (*q) q++;
        } else if (*p == '{') {
            q = strchr(p, '}');
            q = q ? q + 1 : p + strlen(p);
        } else if (isalpha((unsigned char)*p)) {
            while (isalnum((unsigned char)*q) || *q == '-') q++;
            elm_sb_puts(g, prefix);
        } else {
            q++;
        }
        elm_sb_put(g, p, (size_t)(q - p));
        p = q;
    }
}

/* Translates schema (NULL: any object) into rules named PREFIX-..., PREFIX-root the value's, the
 * values in dialect d (Gemma 4's with the members sorted as its template sorts them); errors
 * name src. */
static elm_status schema_rules(elm_sbuf *g, const cJSON *schema, const char *src,
                               const char *prefix, js_dialect d, elm_error *err) {
    cJSON *sorted = d == JS_GEMMA4 && schema ? elm_gemma4_sorted_copy(schema) : NULL;
    if (d == JS_GEMMA4 && schema && !sorted)
        return elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
    const cJSON *x = sorted ? sorted : schema;
    char *text = x ? cJSON_PrintUnformatted(x) : strdup("{\"type\": \"object\"}");
    char *gbnf = NULL;
    elm_status st = text ? js_schema_to_gbnf(text, strlen(text), src, d, &gbnf, err)
                         : elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
    if (!st) put_prefixed(g, gbnf, prefix);
    free(gbnf);
    free(text);
    cJSON_Delete(sorted);
    return st;
}

/* Whether a property's value is written as plain text: a string with nothing to hold it to. */
static bool plain_string(const cJSON *s) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "string")) return false;
    static const char *const free_kw[] = {"type", "description", "title", "default", "examples",
                                          "$comment"};
    for (const cJSON *k = s->child; k; k = k->next) {
        size_t i = 0;
        while (i < sizeof free_kw / sizeof free_kw[0] && strcmp(k->string, free_kw[i])) i++;
        if (i == sizeof free_kw / sizeof free_kw[0]) return false;
    }
    return true;
}

/* ELM_OK when params (NULL: any) is an object schema of properties, what the syntaxes that write
 * each argument on its own (`syntax`'s) take; else ELM_ERR_UNSUPPORTED naming it. */
static elm_status check_object_params(const cJSON *params, int i, const char *syntax,
                                      elm_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(params, "type");
    if (params && (!cJSON_IsString(type) || strcmp(type->valuestring, "object") ||
                   cJSON_GetObjectItemCaseSensitive(params, "anyOf") ||
                   cJSON_GetObjectItemCaseSensitive(params, "oneOf") ||
                   cJSON_GetObjectItemCaseSensitive(params, "$ref")))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools[%d].function.parameters: the %s call "
                          "syntax takes an object schema of properties", i, syntax);
    /* the JSON translator, which checks the rest, sees each property alone: required here */
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
    if (req && !cJSON_IsArray(req))
        return elm_errorf(err, ELM_ERR_FORMAT, "tools[%d].function.parameters.required: expected "
                          "an array of strings", i);
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
        if (!cJSON_IsString(r))
            return elm_errorf(err, ELM_ERR_FORMAT, "tools[%d].function.parameters.required: "
                              "expected an array of strings", i);
        if (!cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools[%d].function.parameters.required: "
                              "'%s' is not in properties, and the %s call syntax writes only "
                              "those", i, r->valuestring, syntax);
    }
    return ELM_OK;
}

/* Whether property p of params is required. */
static bool is_required(const cJSON *params, const cJSON *p) {
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required");
    for (const cJSON *r = cJSON_IsArray(req) ? req->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && !strcmp(r->valuestring, p->string)) return true;
    return false;
}

/* The rules of property p's value (of function i's params) on its own, named SUB-..., SUB-root
 * the value's, with the function's definitions for its references. */
static elm_status property_rules(elm_sbuf *g, const cJSON *params, const cJSON *p, int i,
                                 const char *sub, js_dialect d, elm_error *err) {
    cJSON *s = cJSON_Duplicate(p, true);
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(params, "$defs");
    if (s && cJSON_IsObject(s) && defs && !cJSON_GetObjectItemCaseSensitive(s, "$defs"))
        cJSON_AddItemToObject(s, "$defs", cJSON_Duplicate(defs, true));
    char src[400];
    snprintf(src, sizeof src, "tools[%d].function.parameters.properties.%s", i, p->string);
    const elm_status st = schema_rules(g, s, src, sub, d, err);
    cJSON_Delete(s);
    return st;
}

/* One function's parameters in Qwen3.5's syntax, as rule PREFIX-params: the schema's properties
 * in order, the required ones required, each value text (plain strings), one of an enum's strings,
 * or JSON under its schema. */
static elm_status xml_params(elm_sbuf *g, const cJSON *params, int i, const char *prefix,
                             elm_error *err) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
    elm_status st = check_object_params(params, i, "Qwen3.5", err);
    if (st) return st;
    elm_sbuf rules = {0}, subs = {0};
    elm_sb_printf(g, "%sparams ::=", prefix);
    if ((!props || !props->child) && /* none */
        cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(params, "additionalProperties")))
        elm_sb_puts(g, " \"\"");
    else if (!props || !props->child) /* any parameters, their values text */
        elm_sb_puts(g, " ( \"<parameter=\" [a-zA-Z0-9_.-]+ \">\\n\" xml-text \"\\n</parameter>\\n\" )*");
    int j = 0;
    for (const cJSON *p = props ? props->child : NULL; p && !st; p = p->next, j++) {
        elm_sb_printf(g, " %sp%d%s", prefix, j, is_required(params, p) ? "" : "?");
        char sub[64];
        elm_sb_printf(&rules, "%sp%d ::= \"<parameter=\" ", prefix, j);
        if (!js_put_literal(&rules, p->string)) {
            st = elm_errorf(err, ELM_ERR_FORMAT, "tools[%d].function.parameters: a property name "
                            "is not UTF-8", i);
            break;
        }
        elm_sb_puts(&rules, " \">\\n\"");
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(p, "enum");
        bool strings = cJSON_IsArray(en) && en->child;
        for (const cJSON *e = cJSON_IsArray(en) ? en->child : NULL; e; e = e->next)
            strings = strings && cJSON_IsString(e) && !strchr(e->valuestring, '\n');
        if (plain_string(p)) {
            elm_sb_puts(&rules, " xml-text");
        } else if (strings) {
            elm_sb_puts(&rules, " (");
            for (const cJSON *e = en->child; e && !st; e = e->next) {
                elm_sb_puts(&rules, e == en->child ? " " : " | ");
                if (!js_put_literal(&rules, e->valuestring))
                    st = elm_errorf(err, ELM_ERR_FORMAT, "tools[%d].function.parameters.%s: an enum "
                                    "string is not UTF-8", i, p->string);
            }
            elm_sb_puts(&rules, " )");
        } else {
            snprintf(sub, sizeof sub, "%sp%d-", prefix, j);
            elm_sb_printf(&rules, " %sroot", sub);
            st = property_rules(&subs, params, p, i, sub, JS_JSON, err);
        }
        elm_sb_puts(&rules, " \"\\n</parameter>\\n\"\n");
    }
    elm_sb_puts(g, "\n");
    elm_sb_put(g, rules.s ? rules.s : "", rules.len);
    elm_sb_put(g, subs.s ? subs.s : "", subs.len);
    free(rules.s);
    free(subs.s);
    return st;
}

/* Whether s writes a call as [TOOL_CALLS]NAME[ARGS]{...} (Ministral 3's, Mistral Small 3.2's) */
static bool mistral_bare(elm_tool_syntax s) {
    return s == ELM_TOOLS_MISTRAL || s == ELM_TOOLS_MISTRAL_IDS;
}

/* Whether s is a Python name, which a keyword argument must be. */
static bool py_name(const char *s) {
    if (!*s || isdigit((unsigned char)*s)) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

/* One function's keyword arguments in LFM2's Python call syntax, as rule PREFIX-args: the
 * schema's properties in order, ", " between those written, the required ones required, each
 * value a Python literal under its schema (without properties: any names and values). Rules
 * PREFIX-hJ are the arguments from property J on with none before, PREFIX-tJ the same after one. */
static elm_status py_args(elm_sbuf *g, const cJSON *params, int i, const char *prefix,
                          elm_error *err) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
    elm_status st = check_object_params(params, i, "LFM2", err);
    if (st) return st;
    char sub[64];
    if ((!props || !props->child) &&
        cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(params, "additionalProperties"))) {
        elm_sb_printf(g, "%sargs ::= \"\"\n", prefix); /* no arguments: f() */
        return ELM_OK;
    }
    if (!props || !props->child) {
        elm_sb_printf(g, "%sargs ::= ( %skw ( \", \" %skw )* )?\n%skw ::= [a-zA-Z_] [a-zA-Z0-9_]* "
                      "\"=\" %sany-root\n", prefix, prefix, prefix, prefix, prefix);
        cJSON *any = cJSON_CreateObject();
        snprintf(sub, sizeof sub, "%sany-", prefix);
        st = any ? schema_rules(g, any, "tools", sub, JS_PYTHON, err)
                 : elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
        cJSON_Delete(any);
        return st;
    }
    elm_sb_printf(g, "%sargs ::= %sh0\n", prefix, prefix);
    int j = 0;
    for (const cJSON *p = props->child; p && !st; p = p->next, j++) {
        if (!py_name(p->string))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools[%d].function.parameters: property "
                              "'%s' is no Python name, which LFM2's keyword arguments need", i,
                              p->string);
        const bool req = is_required(params, p);
        elm_sb_printf(g, "%sa%d ::= \"%s=\" %sp%d-root\n", prefix, j, p->string, prefix, j);
        elm_sb_printf(g, "%sh%d ::= %sa%d %st%d", prefix, j, prefix, j, prefix, j + 1);
        elm_sb_printf(g, req ? "\n" : " | %sh%d\n", prefix, j + 1);
        elm_sb_printf(g, req ? "%st%d ::= \", \" %sa%d %st%d\n" : "%st%d ::= ( \", \" %sa%d )? %st%d\n",
                      prefix, j, prefix, j, prefix, j + 1);
        snprintf(sub, sizeof sub, "%sp%d-", prefix, j);
        st = property_rules(g, params, p, i, sub, JS_PYTHON, err);
    }
    elm_sb_printf(g, "%sh%d ::= \"\"\n%st%d ::= \"\"\n", prefix, j, prefix, j);
    return st;
}

/* The rule `call` of one call of the functions in tools (only the one named `only` when not NULL)
 * in syntax s, `call-body` the same after the call's opening ("<function=", {"name": " or
 * [TOOL_CALLS]), and the rules they use. */
static elm_status call_rules(elm_sbuf *g, elm_tool_syntax s, const cJSON *tools, const char *only,
                             elm_error *err) {
    elm_sbuf alts = {0}, rules = {0};
    elm_status st = ELM_OK;
    const bool lfm2 = s == ELM_TOOLS_LFM2 || s == ELM_TOOLS_LFM25;
    int i = 0, n = 0;
    for (const cJSON *tool = tools->child; tool && !st; tool = tool->next, i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(tool, "function");
        const char *name = cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring;
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
        if (cJSON_IsNull(params)) params = NULL;
        if (only && strcmp(name, only)) continue;
        char prefix[24], src[64], head[128];
        snprintf(prefix, sizeof prefix, "t%d-", i);
        snprintf(src, sizeof src, "tools[%d].function.parameters", i);
        elm_sb_puts(&alts, n++ ? " | " : " ");
        if (s == ELM_TOOLS_QWEN_XML) {
            snprintf(head, sizeof head, "%s>\n", name);
            js_put_literal(&alts, head); /* a name elm_tool_name_ok passed, ASCII */
            elm_sb_printf(&alts, " %sparams", prefix);
            st = xml_params(&rules, params, i, prefix, err);
        } else if (s == ELM_TOOLS_GEMMA4) {
            js_put_literal(&alts, name);
            elm_sb_printf(&alts, " %sroot", prefix);
            st = schema_rules(&rules, params, src, prefix, JS_GEMMA4, err);
        } else if (s == ELM_TOOLS_HARMONY) {
            /* NAME, the rest of the header in either of the model's orders, the arguments */
            js_put_literal(&alts, name);
            elm_sb_printf(&alts, " harmony-header %sroot", prefix);
            st = schema_rules(&rules, params, src, prefix, JS_JSON, err);
        } else if (lfm2) {
            snprintf(head, sizeof head, "%s(", name);
            js_put_literal(&alts, head);
            elm_sb_printf(&alts, " %sargs \")\"", prefix);
            st = py_args(&rules, params, i, prefix, err);
        } else {
            const bool bare = mistral_bare(s); /* NAME[ARGS]{...}, not a JSON object */
            if (bare)
                snprintf(head, sizeof head, "%s", name);
            else
                snprintf(head, sizeof head, "%s\", \"%s\": ", name,
                         s == ELM_TOOLS_LLAMA ? "parameters" : "arguments");
            js_put_literal(&alts, head); /* a name elm_tool_name_ok passed, ASCII */
            /* Mistral Small 3.2's and Nemo's templates write call ids: the model may */
            if (s == ELM_TOOLS_MISTRAL_IDS)
                elm_sb_puts(&alts, " ( \"" ELM_MISTRAL_CALL_ID "\" [a-zA-Z0-9]{9} )?");
            if (bare) elm_sb_puts(&alts, " \"" ELM_MISTRAL_ARGS "\"");
            elm_sb_printf(&alts, " %sroot", prefix);
            if (s == ELM_TOOLS_MISTRAL_V3)
                elm_sb_puts(&alts, " ( \", \\\"id\\\": \\\"\" [a-zA-Z0-9]{9} \"\\\"\" )?");
            if (!bare) elm_sb_puts(&alts, " \"}\"");
            st = schema_rules(&rules, params, src, prefix, JS_JSON, err);
        }
    }
    if (!st && n == 0)
        st = elm_errorf(err, ELM_ERR_FORMAT, only ? "tool_choice: no tool named %s"
                                                  : "tools: none given%s", only ? only : "");
    if (!st) {
        elm_sb_puts(g, s == ELM_TOOLS_QWEN_XML ? "call ::= \"<function=\" call-body \"</function>\"\n"
                       : s == ELM_TOOLS_GEMMA4 ? "call ::= \"call:\" call-body\n"
                       : mistral_bare(s)       ? "call ::= \"" ELM_MISTRAL_CALL_OPEN "\" call-body\n"
                       : lfm2                  ? "call ::= call-body\n"
                       : s == ELM_TOOLS_HARMONY
                           ? "call ::= call-body\nharmony-header ::= ( \" <|constrain|>json\" | "
                             "\"<|channel|>commentary json\" | \"<|channel|>commentary "
                             "<|constrain|>json\" ) \"<|message|>\"\n"
                                               : "call ::= \"{\\\"name\\\": \\\"\" call-body\n");
        elm_sb_puts(g, "call-body ::=");
        elm_sb_put(g, alts.s, alts.len);
        elm_sb_puts(g, "\n");
        elm_sb_put(g, rules.s ? rules.s : "", rules.len);
        if (s == ELM_TOOLS_QWEN_XML) js_put_text_until(g, "xml-text", "\n</parameter>");
    }
    free(alts.s);
    free(rules.s);
    return st;
}

elm_status elm_chat_tool_grammar(elm_chat_template t, const char *tools, const char *only,
                                 bool parallel, bool lazy, char **gbnf, const char **trigger,
                                 elm_error *err) {
    *gbnf = NULL;
    const elm_tool_syntax s = elm_chat_template_tool_syntax(t);
    const bool llama = s == ELM_TOOLS_LLAMA;
    if (trigger) *trigger = elm_chat_tool_call_open(t);
    if (s == ELM_TOOLS_NONE)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools: template %s has no tool calls",
                          elm_chat_template_name(t));
    cJSON *arr = cJSON_Parse(tools);
    elm_status st = elm_tools_check(arr, "tools", err);
    elm_sbuf g = {0};
    if (!st && (llama || mistral_bare(s))) /* the calls are the reply: nothing around them */
        elm_sb_printf(&g, "root ::= %s%s\n", lazy ? "call-body" : "call",
                      parallel && !llama ? " call*" : "");
    else if (!st && (s == ELM_TOOLS_PHI4_MINI || s == ELM_TOOLS_MISTRAL_V3)) {
        /* one JSON list after the opening (Phi-4-mini's ends with the list's "[") */
        const char *open = elm_tools_call_open(s);
        elm_sb_puts(&g, "root ::=");
        if (!lazy) js_put_literal(&g, open);
        elm_sb_printf(&g, "%s call%s \"]\"\n", open[strlen(open) - 1] == '[' ? "" : " \"[\"",
                      parallel ? " ( \", \" call )*" : "");
    } else if (!st && s == ELM_TOOLS_GEMMA4) /* the trigger is the whole opening */
        elm_sb_printf(&g, "root ::= %s call \"" ELM_GEMMA4_CALL_CLOSE "\"%s\n",
                      lazy ? "" : "\"" ELM_GEMMA4_CALL_OPEN "\"",
                      parallel ? " ( \"" ELM_GEMMA4_CALL_OPEN "\" call \"" ELM_GEMMA4_CALL_CLOSE
                                 "\" )*" : "");
    else if (!st && s == ELM_TOOLS_HARMONY) /* one call a reply: <|call|> ends it */
        elm_sb_printf(&g, "root ::= %scall\n",
                      lazy ? "" : "\"<|channel|>commentary" ELM_HARMONY_CALL_OPEN "\" ");
    else if (!st && (s == ELM_TOOLS_LFM2 || s == ELM_TOOLS_LFM25)) /* one list of calls */
        elm_sb_printf(&g, "root ::= \"%s[\" call%s \"]" ELM_LFM2_CALL_CLOSE "\"\n",
                      lazy ? "" : ELM_LFM2_CALL_OPEN, parallel ? " (\", \" call)*" : "");
    else if (!st)
        elm_sb_printf(&g, "root ::= %s call \"\\n" ELM_TOOL_CALL_CLOSE "\"%s\n",
                      lazy ? "\"\\n\"" : "\"" ELM_TOOL_CALL_OPEN "\\n\"",
                      parallel ? " (\"\\n" ELM_TOOL_CALL_OPEN "\\n\" call \"\\n" ELM_TOOL_CALL_CLOSE
                                 "\")*" : "");
    if (!st) st = call_rules(&g, s, arr, only, err);
    cJSON_Delete(arr);
    if (!st && !(*gbnf = elm_sb_finish(&g))) st = elm_errorf(err, ELM_ERR_NOMEM, "tools: out of memory");
    if (st) free(g.s);
    return st;
}
