/* Tools, tool calls and tool results as the families' templates write them (chat_tools.h): JSON
 * as transformers' tojson (json.dumps, ensure_ascii off) writes it, and each syntax's text, read
 * off its Jinja template (tests/data/templates; tests/data/prompts holds what jinja2 renders
 * from them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate/chat_tools.h"

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

static void put_newline(elm_sbuf *t, int indent, int level) {
    elm_sb_puts(t, "\n");
    for (int i = 0; i < indent * level; i++) elm_sb_put(t, " ", 1);
}

/* v as json.dumps writes it, or with `py` as a Python literal (True, False, None). */
static void put_json(elm_sbuf *t, const cJSON *v, int indent, int level, bool py) {
    if (cJSON_IsNull(v)) elm_sb_puts(t, py ? "None" : "null");
    else if (cJSON_IsTrue(v)) elm_sb_puts(t, py ? "True" : "true");
    else if (cJSON_IsFalse(v)) elm_sb_puts(t, py ? "False" : "false");
    else if (cJSON_IsNumber(v)) put_number(t, v->valuedouble);
    else if (cJSON_IsString(v)) put_string(t, v->valuestring);
    else {
        const bool obj = cJSON_IsObject(v);
        elm_sb_puts(t, obj ? "{" : "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            if (c != v->child) elm_sb_puts(t, indent < 0 ? ", " : ",");
            if (indent >= 0) put_newline(t, indent, level + 1);
            if (obj) {
                put_string(t, c->string);
                elm_sb_puts(t, ": ");
            }
            put_json(t, c, indent, level + 1, py);
        }
        if (indent >= 0 && v->child) put_newline(t, indent, level);
        elm_sb_puts(t, obj ? "}" : "]");
    }
}

void elm_put_py_json(elm_sbuf *t, const cJSON *v, int indent) { put_json(t, v, indent, 0, false); }

void elm_put_py_literal(elm_sbuf *t, const cJSON *v) { put_json(t, v, -1, 0, true); }

bool elm_jinja_truthy(const cJSON *v) {
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return false;
    if (cJSON_IsNumber(v)) return v->valuedouble != 0;
    if (cJSON_IsString(v)) return v->valuestring[0] != '\0';
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child != NULL;
    return true;
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
        int k = 0; /* a call names its function: two of one name would be one */
        for (const cJSON *u = tools->child; u != t; u = u->next, k++)
            if (!strcmp(cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(u, "function"), "name")->valuestring,
                        name->valuestring))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s[%d].function.name: '%s' is also "
                                  "%s[%d]'s", src, i, name->valuestring, src, k);
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s[%d].function.parameters: expected a JSON schema object", src, i);
        /* the syntaxes that write each parameter on its own read them by name from here */
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
        if (props && !cJSON_IsObject(props))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s[%d].function.parameters.properties: expected an object", src, i);
    }
    return ELM_OK;
}

const char *elm_tools_call_open(elm_tool_syntax s) {
    switch (s) {
    case ELM_TOOLS_HERMES:
    case ELM_TOOLS_GRANITE:
    case ELM_TOOLS_QWEN_XML: return ELM_TOOL_CALL_OPEN;
    case ELM_TOOLS_LLAMA: return "{\"name\": \"";
    case ELM_TOOLS_LFM2:
    case ELM_TOOLS_LFM25: return ELM_LFM2_CALL_OPEN;
    case ELM_TOOLS_GEMMA4: return ELM_GEMMA4_CALL_OPEN;
    case ELM_TOOLS_PHI4_MINI: return ELM_PHI4_CALL_OPEN;
    case ELM_TOOLS_HARMONY: return ELM_HARMONY_CALL_OPEN;
    case ELM_TOOLS_MISTRAL:
    case ELM_TOOLS_MISTRAL_IDS:
    case ELM_TOOLS_MISTRAL_V3: return ELM_MISTRAL_CALL_OPEN;
    case ELM_TOOLS_NONE: break;
    }
    return NULL;
}

const char *const *elm_tools_marker_tokens(elm_tool_syntax s) {
    static const char *const tool_call[] = {ELM_TOOL_CALL_OPEN, ELM_TOOL_CALL_CLOSE, NULL};
    static const char *const mistral[] = {ELM_MISTRAL_CALL_OPEN, ELM_MISTRAL_ARGS, NULL};
    static const char *const mistral_ids[] = {ELM_MISTRAL_CALL_OPEN, ELM_MISTRAL_CALL_ID,
                                              ELM_MISTRAL_ARGS, NULL};
    static const char *const mistral_v3[] = {ELM_MISTRAL_CALL_OPEN, NULL};
    static const char *const lfm2[] = {ELM_LFM2_CALL_OPEN, ELM_LFM2_CALL_CLOSE, NULL};
    static const char *const gemma4[] = {ELM_GEMMA4_CALL_OPEN, ELM_GEMMA4_CALL_CLOSE,
                                         ELM_GEMMA4_QUOTE, NULL};
    static const char *const harmony[] = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>",
                                          "<|constrain|>", NULL};
    static const char *const none[] = {NULL};
    switch (s) {
    case ELM_TOOLS_HERMES:
    case ELM_TOOLS_GRANITE:
    case ELM_TOOLS_QWEN_XML: return tool_call;
    case ELM_TOOLS_MISTRAL: return mistral;
    case ELM_TOOLS_MISTRAL_IDS: return mistral_ids;
    case ELM_TOOLS_MISTRAL_V3: return mistral_v3;
    case ELM_TOOLS_LFM2:
    case ELM_TOOLS_LFM25: return lfm2;
    case ELM_TOOLS_HARMONY: return harmony;
    case ELM_TOOLS_GEMMA4: return gemma4; /* user-defined tokens in its vocabulary: text already */
    case ELM_TOOLS_NONE:
    case ELM_TOOLS_LLAMA:
    case ELM_TOOLS_PHI4_MINI: break; /* text */
    }
    return none;
}

/* each tool on a line of its own, as the Hermes-style templates list them */
static void put_tool_lines(elm_sbuf *t, const cJSON *tools) {
    for (const cJSON *tool = tools->child; tool; tool = tool->next) {
        elm_sb_puts(t, "\n");
        elm_put_py_json(t, tool, -1);
    }
}

#define HERMES_FORMAT                                                                             \
    "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
#define QWEN_XML_FORMAT                                                                           \
    "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"     \
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"   \
    "</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\n" \
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\n"      \
    "Reminder:\n- Function calls MUST follow the specified format: an inner <function=...>"       \
    "</function> block must be nested within <tool_call></tool_call> XML tags\n- Required "       \
    "parameters MUST be specified\n- You may provide optional reasoning for your function call "  \
    "in natural language BEFORE the function call, but NOT after\n- If there is no function "     \
    "call available, answer the question like normal with your current knowledge and do not "    \
    "tell the user about function calls\n</IMPORTANT>"

/* s without leading and trailing whitespace (Jinja's trim) */
static void put_trimmed(elm_sbuf *t, const char *s) {
    const char *e = s + strlen(s);
    while (*s && strchr(" \t\n\r\v\f", *s)) s++;
    while (e > s && strchr(" \t\n\r\v\f", e[-1])) e--;
    elm_sb_put(t, s, (size_t)(e - s));
}

static bool blank(const char *s) {
    return s[strspn(s, " \t\n\r\v\f")] == '\0';
}

void elm_tools_put_system(elm_sbuf *t, elm_tool_syntax s, const char *system, const cJSON *tools) {
    switch (s) {
    case ELM_TOOLS_HERMES:
        elm_sb_puts(t, "<|im_start|>system\n");
        if (system) {
            elm_sb_puts(t, system);
            elm_sb_puts(t, "\n\n");
        }
        elm_sb_puts(t, "# Tools\n\nYou may call one or more functions to assist with the user "
                       "query.\n\nYou are provided with function signatures within <tools></tools> "
                       "XML tags:\n<tools>");
        put_tool_lines(t, tools);
        elm_sb_puts(t, "\n</tools>\n\nFor each function call, return a json object with function "
                       "name and arguments within <tool_call></tool_call> XML tags:\n" HERMES_FORMAT
                       "<|im_end|>\n");
        break;
    case ELM_TOOLS_GRANITE:
        elm_sb_puts(t, "<|start_of_role|>system<|end_of_role|>");
        if (system) {
            elm_sb_puts(t, system);
            elm_sb_puts(t, "\n\n");
        }
        elm_sb_puts(t, "You are a helpful assistant with access to the following tools. You may "
                       "call one or more tools to assist with the user query.\n\nYou are provided "
                       "with function signatures within <tools></tools> XML tags:\n<tools>");
        put_tool_lines(t, tools);
        elm_sb_puts(t, "\n</tools>\n\nFor each tool call, return a json object with function name "
                       "and arguments within <tool_call></tool_call> XML tags:\n" HERMES_FORMAT
                       ". If a tool does not exist in the provided list of tools, notify the user "
                       "that you do not have the ability to fulfill the request.<|end_of_text|>\n");
        break;
    case ELM_TOOLS_QWEN_XML:
        elm_sb_puts(t, "<|im_start|>system\n# Tools\n\nYou have access to the following "
                       "functions:\n\n<tools>");
        put_tool_lines(t, tools);
        elm_sb_puts(t, "\n</tools>\n\n" QWEN_XML_FORMAT);
        if (system && !blank(system)) {
            elm_sb_puts(t, "\n\n");
            put_trimmed(t, system);
        }
        elm_sb_puts(t, "<|im_end|>\n");
        break;
    case ELM_TOOLS_LFM2:
    case ELM_TOOLS_LFM25: {
        /* the tools as json.dumps each, ", " between, after the system text and a newline */
        const bool lfm2 = s == ELM_TOOLS_LFM2;
        elm_sb_puts(t, "<|im_start|>system\n");
        if (system && *system) {
            elm_sb_puts(t, system);
            elm_sb_puts(t, "\n");
        }
        elm_sb_puts(t, lfm2 ? "List of tools: <|tool_list_start|>[" : "List of tools: [");
        for (const cJSON *tool = tools->child; tool; tool = tool->next) {
            if (tool != tools->child) elm_sb_puts(t, ", ");
            elm_put_py_json(t, tool, -1);
        }
        elm_sb_puts(t, lfm2 ? "]<|tool_list_end|><|im_end|>\n" : "]<|im_end|>\n");
        break;
    }
    case ELM_TOOLS_HARMONY: /* chat_harmony.c writes its own */
    case ELM_TOOLS_NONE:
    case ELM_TOOLS_LLAMA:
    case ELM_TOOLS_GEMMA4:
    case ELM_TOOLS_PHI4_MINI:
    case ELM_TOOLS_MISTRAL:
    case ELM_TOOLS_MISTRAL_IDS:
    case ELM_TOOLS_MISTRAL_V3: break;
    }
}

void elm_tools_put_in_system(elm_sbuf *t, elm_tool_syntax s, const cJSON *tools) {
    if (s == ELM_TOOLS_GEMMA4) {
        elm_tools_put_gemma4_declarations(t, tools);
    } else if (s == ELM_TOOLS_PHI4_MINI) { /* the functions, as its model card lists them */
        elm_sb_puts(t, "<|tool|>[");
        for (const cJSON *tool = tools->child; tool; tool = tool->next) {
            if (tool != tools->child) elm_sb_puts(t, ", ");
            elm_put_py_json(t, cJSON_GetObjectItemCaseSensitive(tool, "function"), -1);
        }
        elm_sb_puts(t, "]<|/tool|>");
    }
}

/* Nemo's tools: each written key by key, a string value between quotes as it is (unescaped),
 * others as JSON, the function's "return" left out */
static void put_v3_tools(elm_sbuf *t, const cJSON *tools) {
    for (const cJSON *tool = tools->child; tool; tool = tool->next) {
        elm_sb_puts(t, tool == tools->child ? "{\"type\": \"function\", \"function\": {"
                                            : ", {\"type\": \"function\", \"function\": {");
        bool first = true;
        for (const cJSON *kv = cJSON_GetObjectItemCaseSensitive(tool, "function")->child; kv;
             kv = kv->next) {
            if (!strcmp(kv->string, "return")) continue;
            elm_sb_printf(t, "%s\"%s\": ", first ? "" : ", ", kv->string);
            first = false;
            if (cJSON_IsString(kv)) elm_sb_printf(t, "\"%s\"", kv->valuestring);
            else elm_put_py_json(t, kv, -1);
        }
        elm_sb_puts(t, "}}");
    }
}

void elm_tools_put_list(elm_sbuf *t, elm_tool_syntax s, const cJSON *tools) {
    if (!elm_tools_is_mistral(s)) return;
    elm_sb_puts(t, "[AVAILABLE_TOOLS]");
    if (s == ELM_TOOLS_MISTRAL_V3) {
        elm_sb_puts(t, "[");
        put_v3_tools(t, tools);
        elm_sb_puts(t, "]");
    } else {
        elm_put_py_json(t, tools, -1);
    }
    elm_sb_puts(t, "[/AVAILABLE_TOOLS]");
}

void elm_tools_put_llama_user(elm_sbuf *t, const cJSON *tools, const char *user) {
    elm_sb_puts(t, "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, "
                   "please respond with a JSON for a function call with its proper arguments that "
                   "best answers the given prompt.\n\nRespond in the format {\"name\": function "
                   "name, \"parameters\": dictionary of argument name and its value}.Do not use "
                   "variables.\n\n");
    for (const cJSON *tool = tools->child; tool; tool = tool->next) {
        elm_put_py_json(t, tool, 4);
        elm_sb_puts(t, "\n\n");
    }
    put_trimmed(t, user);
    elm_sb_puts(t, "<|eot_id|>");
}

/* Python's str() of an argument's value, as Qwen3.5's template writes a parameter (`| string`),
 * containers as tojson */
static void put_py_str(elm_sbuf *t, const cJSON *v) {
    if (cJSON_IsString(v)) elm_sb_puts(t, v->valuestring);
    else if (cJSON_IsTrue(v)) elm_sb_puts(t, "True");
    else if (cJSON_IsFalse(v)) elm_sb_puts(t, "False");
    else if (cJSON_IsNull(v)) elm_sb_puts(t, "None");
    else elm_put_py_json(t, v, -1);
}

/* LFM2's call: NAME(KEY=VALUE, ...), each value a Python literal. */
static void put_pycall(elm_sbuf *t, const char *name, const cJSON *args) {
    elm_sb_printf(t, "%s(", name);
    for (const cJSON *a = args ? args->child : NULL; a; a = a->next) {
        elm_sb_printf(t, "%s%s=", a == args->child ? "" : ", ", a->string);
        elm_put_py_literal(t, a);
    }
    elm_sb_puts(t, ")");
}

/* {"name": N, "arguments": A} as json.dumps writes a call, with its "id" after when with_id */
static void put_json_call(elm_sbuf *t, const elm_tool_call *c, const cJSON *args, bool with_id) {
    elm_sb_printf(t, "{\"name\": \"%s\", \"arguments\": ", c->name);
    elm_put_py_json(t, args, -1);
    if (with_id) elm_sb_printf(t, ", \"id\": \"%s\"", c->id);
    elm_sb_puts(t, "}");
}

void elm_tools_put_calls(elm_sbuf *t, elm_tool_syntax s, const elm_tool_call *calls, int32_t n,
                         bool after_text) {
    const bool lfm2 = s == ELM_TOOLS_LFM2 || s == ELM_TOOLS_LFM25;
    if (lfm2 && n > 0) elm_sb_puts(t, ELM_LFM2_CALL_OPEN "[");
    for (int32_t i = 0; i < n; i++) {
        cJSON *args = cJSON_Parse(calls[i].arguments);
        switch (s) {
        case ELM_TOOLS_HERMES:
        case ELM_TOOLS_GRANITE:
            if (i > 0 || after_text) elm_sb_puts(t, "\n");
            elm_sb_printf(t, ELM_TOOL_CALL_OPEN "\n{\"name\": \"%s\", \"arguments\": ",
                          calls[i].name);
            elm_put_py_json(t, args, -1);
            elm_sb_puts(t, "}\n" ELM_TOOL_CALL_CLOSE);
            break;
        case ELM_TOOLS_QWEN_XML:
            elm_sb_puts(t, i > 0 ? "\n" : after_text ? "\n\n" : "");
            elm_sb_printf(t, ELM_TOOL_CALL_OPEN "\n<function=%s>\n", calls[i].name);
            for (const cJSON *a = args ? args->child : NULL; a; a = a->next) {
                elm_sb_printf(t, "<parameter=%s>\n", a->string);
                put_py_str(t, a);
                elm_sb_puts(t, "\n</parameter>\n");
            }
            elm_sb_puts(t, "</function>\n" ELM_TOOL_CALL_CLOSE);
            break;
        case ELM_TOOLS_PHI4_MINI:
            elm_sb_puts(t, i > 0 ? ", " : after_text ? "\n" ELM_PHI4_CALL_OPEN : ELM_PHI4_CALL_OPEN);
            put_json_call(t, &calls[i], args, false);
            if (i == n - 1) elm_sb_puts(t, "]");
            break;
        case ELM_TOOLS_GEMMA4:
            elm_sb_printf(t, ELM_GEMMA4_CALL_OPEN "call:%s", calls[i].name);
            elm_put_gemma4_value(t, args, false);
            elm_sb_puts(t, ELM_GEMMA4_CALL_CLOSE);
            break;
        case ELM_TOOLS_MISTRAL:
        case ELM_TOOLS_MISTRAL_IDS:
            elm_sb_printf(t, ELM_MISTRAL_CALL_OPEN "%s", calls[i].name);
            if (s == ELM_TOOLS_MISTRAL_IDS) elm_sb_printf(t, ELM_MISTRAL_CALL_ID "%s", calls[i].id);
            elm_sb_puts(t, ELM_MISTRAL_ARGS);
            elm_put_py_json(t, args, -1);
            break;
        case ELM_TOOLS_MISTRAL_V3: /* json.dumps of the function, then its id */
            elm_sb_puts(t, i == 0 ? ELM_MISTRAL_CALL_OPEN "[" : ", ");
            put_json_call(t, &calls[i], args, true);
            if (i == n - 1) elm_sb_puts(t, "]");
            break;
        case ELM_TOOLS_LLAMA:
            elm_sb_printf(t, "{\"name\": \"%s\", \"parameters\": ", calls[i].name);
            elm_put_py_json(t, args, -1);
            elm_sb_puts(t, "}");
            break;
        case ELM_TOOLS_LFM2:
        case ELM_TOOLS_LFM25:
            if (i > 0) elm_sb_puts(t, ", ");
            put_pycall(t, calls[i].name, args);
            break;
        case ELM_TOOLS_HARMONY: /* chat_harmony.c writes its own */
        case ELM_TOOLS_NONE: break;
        }
        cJSON_Delete(args);
    }
    if (lfm2 && n > 0) elm_sb_puts(t, "]" ELM_LFM2_CALL_CLOSE);
}

void elm_tools_put_result(elm_sbuf *t, elm_tool_syntax s, const char *content, const char *id,
                          bool first, bool last) {
    if (s == ELM_TOOLS_PHI4_MINI) { /* its template's <|role|>content<|end|> */
        elm_sb_puts(t, "<|tool|>");
        elm_sb_puts(t, content);
        elm_sb_puts(t, "<|end|>");
        return;
    }
    if (s == ELM_TOOLS_LLAMA) {
        /* the template tests `content is iterable`, which a string is: tojson */
        elm_sb_puts(t, "<|start_header_id|>ipython<|end_header_id|>\n\n");
        put_string(t, content);
        elm_sb_puts(t, "<|eot_id|>");
        return;
    }
    if (elm_tools_is_mistral(s)) {
        elm_sb_puts(t, "[TOOL_RESULTS]");
        if (s == ELM_TOOLS_MISTRAL_IDS) elm_sb_printf(t, "%s[TOOL_CONTENT]", id);
        if (s == ELM_TOOLS_MISTRAL_V3) elm_sb_puts(t, "{\"content\": ");
        elm_sb_puts(t, content);
        if (s == ELM_TOOLS_MISTRAL_V3) elm_sb_printf(t, ", \"call_id\": \"%s\"}", id);
        elm_sb_puts(t, "[/TOOL_RESULTS]");
        return;
    }
    if (s == ELM_TOOLS_LFM2 || s == ELM_TOOLS_LFM25) { /* a turn each */
        const bool lfm2 = s == ELM_TOOLS_LFM2;
        elm_sb_puts(t, lfm2 ? "<|im_start|>tool\n<|tool_response_start|>" : "<|im_start|>tool\n");
        elm_sb_puts(t, content);
        elm_sb_puts(t, lfm2 ? "<|tool_response_end|><|im_end|>\n" : "<|im_end|>\n");
        return;
    }
    const bool granite = s == ELM_TOOLS_GRANITE;
    if (first) elm_sb_puts(t, granite ? "<|start_of_role|>user<|end_of_role|>" : "<|im_start|>user");
    elm_sb_puts(t, "\n<tool_response>\n");
    if (s == ELM_TOOLS_QWEN_XML) put_trimmed(t, content);
    else elm_sb_puts(t, content);
    elm_sb_puts(t, "\n</tool_response>");
    if (last) elm_sb_puts(t, granite ? "<|end_of_text|>\n" : "<|im_end|>\n");
}
