/* gpt-oss's "harmony" chat format (see chat_tools.h, ELM_TOOLS_HARMONY), written from reading
 * OpenAI's published chat template (tests/data/templates/openai-gpt-oss-120b.jinja) and read back
 * from what the model writes: messages <|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>, the
 * reasoning in the analysis channel, the answer in final, calls in commentary addressed
 * to=functions.NAME. */
#include <stdlib.h>
#include <string.h>

#include "generate/chat_tools.h"

#define H_START "<|start|>"
#define H_END "<|end|>"
#define H_MESSAGE "<|message|>"
#define H_CHANNEL "<|channel|>"
#define H_CONSTRAIN "<|constrain|>"
#define H_CALL "<|call|>"
#define H_RETURN "<|return|>"

static const cJSON *item(const cJSON *o, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static bool is_type(const cJSON *spec, const char *type) {
    const cJSON *t = item(spec, "type");
    return cJSON_IsString(t) && !strcmp(t->valuestring, type);
}

/* v as Jinja's string conversion writes it: a string as it is, other values as JSON; NULL as
 * nothing (a tool without a description, an error in jinja2, gets an empty one). */
static void put_str(elm_sbuf *t, const cJSON *v) {
    if (cJSON_IsString(v)) elm_sb_puts(t, v->valuestring);
    else if (v) elm_put_py_json(t, v, -1);
}

/* Whether the string `name` is in the list `required` (absent: none). */
static bool listed(const cJSON *required, const char *name) {
    for (const cJSON *r = cJSON_IsArray(required) ? required->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && !strcmp(r->valuestring, name)) return true;
    return false;
}

/* Characters (code points) of the UTF-8 text s [n], Jinja's |length of a string. */
static size_t utf8_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static void put_ts_type(elm_sbuf *t, const cJSON *spec);

/* The template's render_typescript_type for an array: the items' type with "[]" (any[] for an
 * object pair or a type of over 50 characters), " | null" when nullable. */
static void put_ts_array(elm_sbuf *t, const cJSON *spec) {
    const cJSON *items = item(spec, "items");
    static const char *const simple[][2] = {{"string", "string[]"}, {"number", "number[]"},
                                            {"integer", "number[]"}, {"boolean", "boolean[]"}};
    const char *direct = elm_jinja_truthy(items) ? NULL : "any[]";
    for (size_t i = 0; !direct && i < sizeof simple / sizeof simple[0]; i++)
        if (is_type(items, simple[i][0])) direct = simple[i][1];
    if (direct) {
        elm_sb_puts(t, direct);
    } else {
        elm_sbuf inner = {0};
        put_ts_type(&inner, items);
        const char *s = inner.s ? inner.s : "";
        if (!strcmp(s, "object | object") || utf8_chars(s, inner.len) > 50) {
            elm_sb_puts(t, "any[]");
        } else {
            elm_sb_put(t, s, inner.len);
            elm_sb_puts(t, "[]");
        }
        t->oom = t->oom || inner.oom;
        free(inner.s);
    }
    if (elm_jinja_truthy(item(spec, "nullable"))) elm_sb_puts(t, " | null");
}

/* render_typescript_type: the TypeScript-like type of a JSON schema, with the template's own
 * whitespace (a line break and 16 spaces before each property's type, one before each oneOf
 * variant after the first). */
static void put_ts_type(elm_sbuf *t, const cJSON *spec) {
    const cJSON *type = item(spec, "type"), *one_of = item(spec, "oneOf");
    if (is_type(spec, "array")) {
        put_ts_array(t, spec);
    } else if (cJSON_IsArray(type) && type->child) { /* a list of types, as Union[dict, list] */
        for (const cJSON *x = type->child; x; x = x->next) {
            if (x != type->child) elm_sb_puts(t, " | ");
            put_str(t, x);
        }
    } else if (elm_jinja_truthy(one_of)) {
        /* (the template's has_object_variants is set inside its loop, so never seen: every
         * variant is written) */
        for (const cJSON *v = one_of->child; v; v = v->next) {
            put_ts_type(t, v);
            const cJSON *d = item(v, "description"), *def = item(v, "default");
            if (elm_jinja_truthy(d)) {
                elm_sb_puts(t, "// ");
                put_str(t, d);
            }
            if (def) {
                elm_sb_puts(t, "                    // default: ");
                elm_put_py_json(t, def, -1);
            }
            if (v->next) elm_sb_puts(t, " | \n");
        }
    } else if (is_type(spec, "string")) {
        const cJSON *en = item(spec, "enum");
        if (elm_jinja_truthy(en)) {
            for (const cJSON *e = en->child; e; e = e->next) {
                elm_sb_puts(t, e == en->child ? "\"" : "\" | \"");
                put_str(t, e);
            }
            elm_sb_puts(t, "\"");
        } else {
            elm_sb_puts(t, elm_jinja_truthy(item(spec, "nullable")) ? "string | null" : "string");
        }
    } else if (is_type(spec, "number") || is_type(spec, "integer")) {
        elm_sb_puts(t, "number");
    } else if (is_type(spec, "boolean")) {
        elm_sb_puts(t, "boolean");
    } else if (is_type(spec, "object")) {
        const cJSON *props = item(spec, "properties"), *req = item(spec, "required");
        if (!elm_jinja_truthy(props)) {
            elm_sb_puts(t, "object");
            return;
        }
        elm_sb_puts(t, "{\n");
        for (const cJSON *p = props->child; p; p = p->next) {
            elm_sb_printf(t, "%s%s: \n                ", p->string,
                          listed(req, p->string) ? "" : "?");
            put_ts_type(t, p);
            if (p->next) elm_sb_puts(t, ", ");
        }
        elm_sb_puts(t, "}");
    } else {
        elm_sb_puts(t, "any");
    }
}

/* One function of the tools as render_tool_namespace writes it: its description as a comment,
 * then its type, each parameter with its description, "?" when optional, and its default. */
static void put_function(elm_sbuf *t, const cJSON *f) {
    const cJSON *params = item(f, "parameters");
    const cJSON *props = item(params, "properties"), *req = item(params, "required");
    elm_sb_puts(t, "// ");
    put_str(t, item(f, "description"));
    elm_sb_printf(t, "\ntype %s = ", item(f, "name")->valuestring);
    if (!elm_jinja_truthy(props)) {
        elm_sb_puts(t, "() => any;\n\n");
        return;
    }
    elm_sb_puts(t, "(_: {\n");
    for (const cJSON *p = props->child; p; p = p->next) {
        const cJSON *d = item(p, "description"), *def = item(p, "default");
        if (elm_jinja_truthy(d)) {
            elm_sb_puts(t, "// ");
            put_str(t, d);
            elm_sb_puts(t, "\n");
        }
        elm_sb_printf(t, "%s%s: ", p->string, listed(req, p->string) ? "" : "?");
        put_ts_type(t, p);
        if (def && elm_jinja_truthy(item(p, "enum"))) {
            elm_sb_puts(t, ", // default: ");
            put_str(t, def);
        } else if (def && elm_jinja_truthy(item(p, "oneOf"))) {
            elm_sb_puts(t, "// default: ");
            put_str(t, def);
        } else if (def) {
            elm_sb_puts(t, ", // default: ");
            elm_put_py_json(t, def, -1);
        }
        elm_sb_puts(t, ",\n");
    }
    elm_sb_puts(t, "}) => any;\n\n");
}

void elm_harmony_put_opening(elm_sbuf *t, const char *system, const cJSON *tools,
                             const char *effort, const char *date) {
    elm_sb_printf(t, H_START "system" H_MESSAGE "You are ChatGPT, a large language model trained "
                  "by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: %s\n\nReasoning: %s\n\n"
                  "# Valid channels: analysis, commentary, final. Channel must be included for "
                  "every message.%s" H_END, date, effort,
                  tools ? "\nCalls to these tools must go to the commentary channel: 'functions'."
                        : "");
    if (!(system && *system) && !tools) return;
    elm_sb_puts(t, H_START "developer" H_MESSAGE);
    if (system && *system) elm_sb_printf(t, "# Instructions\n\n%s\n\n", system);
    if (tools) {
        elm_sb_puts(t, "# Tools\n\n## functions\n\nnamespace functions {\n\n");
        for (const cJSON *x = tools->child; x; x = x->next) put_function(t, item(x, "function"));
        elm_sb_puts(t, "} // namespace functions");
    }
    elm_sb_puts(t, H_END);
}

/* The name of the call a "tool" message answers: the one of the last calls its tool_call_id
 * names, else the one at its place among the results after them, else the last call. */
static const char *result_name(const elm_chat_msg *calls_msg, const elm_chat_msg *m,
                               int32_t place) {
    for (int32_t c = 0; m->tool_call_id && c < calls_msg->n_tool_calls; c++)
        if (calls_msg->tool_calls[c].id && !strcmp(calls_msg->tool_calls[c].id, m->tool_call_id))
            return calls_msg->tool_calls[c].name;
    if (place < calls_msg->n_tool_calls) return calls_msg->tool_calls[place].name;
    return calls_msg->tool_calls[calls_msg->n_tool_calls - 1].name;
}

elm_status elm_harmony_put_messages(elm_sbuf *t, const elm_chat_msg *msgs, int32_t first,
                                    int32_t n, bool add_generation_prompt, elm_error *err) {
    const elm_chat_msg *calls_msg = NULL; /* the last assistant message with calls */
    int32_t place = 0;                    /* results since it */
    for (int32_t i = first; i < n; i++) {
        const elm_chat_msg *m = &msgs[i];
        if (!strcmp(m->role, "user")) {
            elm_sb_printf(t, H_START "user" H_MESSAGE "%s" H_END, m->content);
        } else if (!strcmp(m->role, "assistant") && m->n_tool_calls > 0) {
            /* its text is reasoning before the calls, dropped once a later reply answers */
            bool answered = false;
            for (int32_t k = i + 1; k < n; k++)
                answered = answered ||
                           (!strcmp(msgs[k].role, "assistant") && !msgs[k].n_tool_calls);
            const bool reasoned = m->reasoning && *m->reasoning;
            if (*m->content && reasoned)
                return elm_errorf(err, ELM_ERR_ARG, "chat message %d: both content and reasoning "
                                  "with tool calls (the template takes one as the reasoning)", i);
            if ((*m->content || reasoned) && !answered)
                elm_sb_printf(t, H_START "assistant" H_CHANNEL "analysis" H_MESSAGE "%s" H_END,
                              reasoned ? m->reasoning : m->content);
            /* the template writes one call a message: each call is a message of its own */
            for (int32_t c = 0; c < m->n_tool_calls; c++) {
                elm_sb_printf(t, H_START "assistant to=functions.%s" H_CHANNEL "commentary json"
                              H_MESSAGE, m->tool_calls[c].name);
                cJSON *args = cJSON_Parse(m->tool_calls[c].arguments);
                elm_put_py_json(t, args, -1);
                cJSON_Delete(args);
                elm_sb_puts(t, H_CALL);
            }
            calls_msg = m;
            place = 0;
        } else if (!strcmp(m->role, "assistant")) {
            const bool closing = i == n - 1 && !add_generation_prompt; /* (training only) */
            if (closing && m->reasoning)
                elm_sb_printf(t, H_START "assistant" H_CHANNEL "analysis" H_MESSAGE "%s" H_END,
                              m->reasoning);
            elm_sb_printf(t, H_START "assistant" H_CHANNEL "final" H_MESSAGE "%s%s", m->content,
                          closing ? H_RETURN : H_END);
            calls_msg = NULL;
        } else if (!strcmp(m->role, "tool") && calls_msg) {
            elm_sb_printf(t, H_START "functions.%s to=assistant" H_CHANNEL "commentary" H_MESSAGE,
                          result_name(calls_msg, m, place++));
            cJSON *s = cJSON_CreateString(m->content);
            if (!s) t->oom = true;
            elm_put_py_json(t, s, -1);
            cJSON_Delete(s);
            elm_sb_puts(t, H_END);
        } else {
            return elm_errorf(err, ELM_ERR_ARG, "chat message %d: %s", i,
                              !strcmp(m->role, "tool") ? "a tool result with no assistant call "
                                                         "before it"
                                                       : "role is not user, assistant or tool");
        }
    }
    if (add_generation_prompt) elm_sb_puts(t, H_START "assistant");
    return ELM_OK;
}

/* ---- reading a reply ---- */

size_t elm_harmony_settled(const char *text, size_t len) {
    static const char *const markers[] = {H_START, H_END, H_MESSAGE, H_CHANNEL, H_CONSTRAIN,
                                          H_CALL, H_RETURN};
    /* a reply opening with a header (<|channel|>..., or " to=functions.N" of a call) is not read
     * before its first text begins */
    const size_t k = len < 4 ? len : 4;
    if (len > 0 && (text[0] == '<' || !memcmp(text, " to=", k)) &&
        !memmem(text, len, H_MESSAGE, strlen(H_MESSAGE)))
        return 0;
    const char *lt = NULL;
    for (size_t i = len; i > 0 && len - i < strlen(H_CONSTRAIN); i--)
        if (text[i - 1] == '<') {
            lt = text + i - 1;
            break;
        }
    const size_t tail = lt ? len - (size_t)(lt - text) : 0;
    for (size_t i = 0; lt && i < sizeof markers / sizeof markers[0]; i++)
        if (tail < strlen(markers[i]) && !memcmp(lt, markers[i], tail)) return len - tail;
    return len;
}

/* The first of the markers that end a message's text in [p, ...), or the end of the text. */
static const char *body_end(const char *p) {
    static const char *const ends[] = {H_END, H_CALL, H_RETURN, H_START};
    const char *best = p + strlen(p);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        const char *e = strstr(p, ends[i]);
        if (e && e < best) best = e;
    }
    return best;
}

/* Appends [b, e) to *dst (a malloc'd string or NULL). */
static bool append(char **dst, const char *b, const char *e) {
    const size_t old = *dst ? strlen(*dst) : 0, n = (size_t)(e - b);
    char *s = realloc(*dst, old + n + 1);
    if (!s) return false;
    memcpy(s + old, b, n);
    s[old + n] = '\0';
    *dst = s;
    return true;
}

/* The word after `key` in header [h, e) (up to a blank, a marker or the end), or NULL. */
static const char *header_word(const char *h, const char *e, const char *key, size_t *len) {
    const size_t k = strlen(key);
    for (const char *p = h; p + k <= e; p++) {
        if (strncmp(p, key, k)) continue;
        const char *w = p + k, *x = w;
        while (x < e && *x != ' ' && *x != '<' && *x != '\n') x++;
        *len = (size_t)(x - w);
        return w;
    }
    return NULL;
}

/* elm_harmony_parse, leaving what it read in out on an error. */
static elm_status parse_messages(const char *reply, elm_tool_calls *out, elm_error *err) {
    const char *p = reply;
    /* text without any message header (a model that writes none): all of it the answer */
    if (!strstr(reply, H_MESSAGE))
        return append(&out->content, reply, reply + strlen(reply))
                   ? ELM_OK
                   : elm_errorf(err, ELM_ERR_NOMEM, "reply: out of memory");
    while (*p) {
        if (!strncmp(p, H_START, strlen(H_START))) p += strlen(H_START);
        const char *msg = strstr(p, H_MESSAGE);
        if (!msg) break; /* a header cut short */
        const char *body = msg + strlen(H_MESSAGE), *end = body_end(body);
        size_t clen = 0, rlen = 0;
        const char *channel = header_word(p, msg, H_CHANNEL, &clen);
        const char *to = header_word(p, msg, "to=functions.", &rlen);
        bool ok = true;
        if (to) {
            cJSON *args = NULL;
            const char *at = NULL;
            if ((args = cJSON_ParseWithLengthOpts(body, (size_t)(end - body), &at, false)) &&
                cJSON_IsObject(args)) {
                elm_status st = elm_tool_calls_add(out, to, rlen, args, err);
                if (st) return st;
            } else {
                cJSON_Delete(args);
                if (*end) /* a complete call (cut short at the reply's end: no call) */
                    return elm_errorf(err, ELM_ERR_FORMAT, "tool call %d (%.*s): the arguments "
                                      "are not a JSON object", out->n, (int)rlen, to);
            }
        } else if (channel && clen == 8 && !strncmp(channel, "analysis", 8)) {
            ok = append(&out->reasoning, body, end);
        } else {
            ok = append(&out->content, body, end);
        }
        if (!ok) return elm_errorf(err, ELM_ERR_NOMEM, "reply: out of memory");
        p = end;
        if (!strncmp(p, H_END, strlen(H_END))) p += strlen(H_END);
        else if (!strncmp(p, H_CALL, strlen(H_CALL))) p += strlen(H_CALL);
        else if (!strncmp(p, H_RETURN, strlen(H_RETURN))) p += strlen(H_RETURN);
    }
    if (!out->content && !(out->content = strdup("")))
        return elm_errorf(err, ELM_ERR_NOMEM, "reply: out of memory");
    return ELM_OK;
}

elm_status elm_harmony_parse(const char *reply, elm_tool_calls *out, elm_error *err) {
    const elm_status st = parse_messages(reply, out, err);
    if (st) elm_tool_calls_free(out);
    return st;
}
