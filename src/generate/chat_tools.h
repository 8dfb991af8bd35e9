/* What the chat templates (chat_template.c) and the tool-call code (chat_tools*.c) share: the
 * families' tool-call syntaxes, JSON as Python's json.dumps writes it, the check of an OpenAI
 * "tools" array, and the text each syntax writes for tools, calls and tool results. */
#ifndef EDGELM_GENERATE_CHAT_TOOLS_H
#define EDGELM_GENERATE_CHAT_TOOLS_H

#include <cjson/cJSON.h>

#include "core/strbuf.h"
#include "edgelm/chat.h"

/* The block that holds one call in the Hermes (Qwen3, Granite) and Qwen3.5 syntaxes */
#define ELM_TOOL_CALL_OPEN "<tool_call>"
#define ELM_TOOL_CALL_CLOSE "</tool_call>"
/* Mistral's markers (control tokens in its vocabulary): each call is OPEN NAME ARGS {json} */
#define ELM_MISTRAL_CALL_OPEN "[TOOL_CALLS]"
#define ELM_MISTRAL_ARGS "[ARGS]"
#define ELM_MISTRAL_CALL_ID "[CALL_ID]"
/* The length of the call ids Mistral Small 3.2's template requires */
#define ELM_MISTRAL_ID_LEN 9

/* The block that holds a reply's calls in LFM2's syntax (control tokens in LFM2's vocabulary) */
#define ELM_LFM2_CALL_OPEN "<|tool_call_start|>"
#define ELM_LFM2_CALL_CLOSE "<|tool_call_end|>"

/* How a family's template writes tools and calls (each from reading its Jinja template). */
typedef enum elm_tool_syntax {
    ELM_TOOLS_NONE = 0,
    ELM_TOOLS_HERMES,   /* Qwen3: the tools as JSON lines in <tools></tools> in the system turn,
                         * each call <tool_call>\n{"name": N, "arguments": A}\n</tool_call>, the
                         * results a user turn of <tool_response> blocks */
    ELM_TOOLS_GRANITE,  /* Granite 4.0: Hermes calls and results in its own system text and turns */
    ELM_TOOLS_QWEN_XML, /* Qwen3.5: <tool_call>\n<function=N>\n<parameter=K>\nV\n</parameter>\n...
                         * </function>\n</tool_call>, V a string as it is, other values as JSON */
    ELM_TOOLS_LLAMA,    /* Llama 3.1-3.3: the tools (json.dumps, indent 4) in the first user turn,
                         * a call the whole reply {"name": N, "parameters": A}, one at a time, the
                         * results "ipython" turns */
    ELM_TOOLS_GEMMA4,   /* Gemma 4: <|tool>declaration:N{...}<tool|> in the system turn, each call
                         * <|tool_call>call:N{k:V,...}<tool_call|> in Gemma's value syntax (keys
                         * sorted and bare, strings between <|"|> tokens), the results
                         * <|tool_response>response:N{value:V}<tool_response|> in the same turn */
    ELM_TOOLS_PHI4_MINI, /* Phi-4-mini: the functions as one JSON list in <|tool|>..<|/tool|> at the
                          * end of the system turn (its template's message['tools']), the calls
                          * functools[{"name": N, "arguments": A}, ...] (as the parser Microsoft
                          * wrote for vLLM reads them), the results <|tool|> turns */
    ELM_TOOLS_MISTRAL,  /* Ministral 3: [AVAILABLE_TOOLS]json.dumps(tools)[/AVAILABLE_TOOLS] after
                         * the system block, each call [TOOL_CALLS]N[ARGS]A after the reply's text,
                         * each result [TOOL_RESULTS]R[/TOOL_RESULTS] */
    ELM_TOOLS_MISTRAL_IDS, /* Mistral Small 3.2: the tools block before the last user message,
                            * a reply with calls only its calls [TOOL_CALLS]N[CALL_ID]ID[ARGS]A,
                            * each result [TOOL_RESULTS]ID[TOOL_CONTENT]R[/TOOL_RESULTS] */
    ELM_TOOLS_MISTRAL_V3,  /* Mistral Nemo: the tools before the last user message, each
                            * {"type": "function", "function": {...}} with string values unescaped,
                            * a reply with calls only [TOOL_CALLS][{"name": N, "arguments": A,
                            * "id": ID}, ...], each result
                            * [TOOL_RESULTS]{"content": R, "call_id": "ID"}[/TOOL_RESULTS] */
    ELM_TOOLS_LFM2,     /* LFM2: the tools as "List of tools: <|tool_list_start|>[JSON, ...]
                         * <|tool_list_end|>" in the system turn, the calls a Python list of calls
                         * <|tool_call_start|>[N(K=V, ...), ...]<|tool_call_end|> (V a Python
                         * literal) in the assistant's text, each result a "tool" turn in
                         * <|tool_response_start|> <|tool_response_end|>. The template renders no
                         * tool_calls: the calls are written where the model wrote them, into the
                         * content */
    ELM_TOOLS_LFM25,    /* LFM2.5: LFM2's calls; the tools without the list tokens, each result a
                         * "tool" turn of its text */
    ELM_TOOLS_HARMONY,  /* gpt-oss (chat_harmony.c): the tools as TypeScript-like types in
                         * "namespace functions" in the developer message, each call a message
                         * <|start|>assistant to=functions.N<|channel|>commentary json<|message|>A
                         * <|call|> (the model also writes <|channel|>commentary to=functions.N
                         * <|constrain|>json<|message|>A), each result
                         * <|start|>functions.N to=assistant<|channel|>commentary<|message|>"R"
                         * <|end|> */
} elm_tool_syntax;

/* What every harmony call has between its channel and its function's name */
#define ELM_HARMONY_CALL_OPEN " to=functions."

/* gpt-oss's system message (model identity, knowledge cutoff, date YYYY-MM-DD, reasoning effort
 * low|medium|high, channels) and, when there is a system text or tools, its developer message
 * (the text as its instructions, the tools as "namespace functions"), as OpenAI's template
 * writes them. In chat_harmony.c. */
void elm_harmony_put_opening(elm_sbuf *t, const char *system, const cJSON *tools,
                             const char *effort, const char *date);

/* gpt-oss's messages msgs [first, n) (no system message among them) and with
 * add_generation_prompt its generation prompt, as its template writes them: a reply's reasoning, or
 * without one its text, before calls as analysis (dropped once a later reply answers; both given is
 * ELM_ERR_ARG), the reasoning of a last reply without a generation prompt too, each call a message
 * of its own (the template writes one a message), each result named by the call its tool_call_id
 * names (else the one at its place). ELM_ERR_ARG naming the message for a tool result without a
 * call before it or an unknown role. */
elm_status elm_harmony_put_messages(elm_sbuf *t, const elm_chat_msg *msgs, int32_t first,
                                    int32_t n, bool add_generation_prompt, elm_error *err);

/* A gpt-oss reply read into out (zeroed by the caller): the analysis channel's text as
 * out->reasoning, the final and other channels' as out->content, each message to=functions.NAME
 * a call (its text the arguments object; one cut short at the reply's end dropped). Text without
 * message headers is all content. ELM_ERR_FORMAT for a complete call whose arguments are not an
 * object; ELM_ERR_NOMEM (out is then freed, as on every error). */
elm_status elm_harmony_parse(const char *reply, elm_tool_calls *out, elm_error *err);

/* elm_chat_reply_settled of a gpt-oss reply. In chat_harmony.c. */
size_t elm_harmony_settled(const char *text, size_t len);

/* Appends the call name [len] with arguments `args` (an object, taken over) to out; on
 * ELM_ERR_NOMEM out is freed. In chat_tools_parse.c. */
elm_status elm_tool_calls_add(elm_tool_calls *out, const char *name, size_t len, cJSON *args,
                              elm_error *err);

/* What opens Phi-4-mini's calls */
#define ELM_PHI4_CALL_OPEN "functools["

/* Gemma 4's string quote (a token of its own, which no string may contain) and the tokens
 * around a call */
#define ELM_GEMMA4_QUOTE "<|\"|>"
#define ELM_GEMMA4_CALL_OPEN "<|tool_call>"
#define ELM_GEMMA4_CALL_CLOSE "<tool_call|>"
/* Whether s is one of Mistral's syntaxes ([TOOL_CALLS] calls, the tools in their own block). */
static inline bool elm_tools_is_mistral(elm_tool_syntax s) {
    return s == ELM_TOOLS_MISTRAL || s == ELM_TOOLS_MISTRAL_IDS || s == ELM_TOOLS_MISTRAL_V3;
}

/* Whether s writes each call's id, of ELM_MISTRAL_ID_LEN characters, and a reply with calls as
 * its calls only (Mistral Small 3.2's and Nemo's). */
static inline bool elm_tools_mistral_ids(elm_tool_syntax s) {
    return s == ELM_TOOLS_MISTRAL_IDS || s == ELM_TOOLS_MISTRAL_V3;
}

/* The syntax of template t (ELM_TOOLS_NONE for a template without tools). In chat_template.c. */
elm_tool_syntax elm_chat_template_tool_syntax(elm_chat_template t);

/* The text a reply's first call opens with in syntax s, NULL for ELM_TOOLS_NONE. */
const char *elm_tools_call_open(elm_tool_syntax s);

/* The texts of the special tokens syntax s writes its calls with, NULL-terminated (none for
 * ELM_TOOLS_NONE and Llama's bare JSON): what elm_chat_tool_preserved_ids looks up. */
const char *const *elm_tools_marker_tokens(elm_tool_syntax s);

/* v as json.dumps(v, ensure_ascii=False, indent=indent) writes it: indent < 0 for none (", " and
 * ": " separators), else one item a line, indented by `indent` spaces a level. Keys in order. */
void elm_put_py_json(elm_sbuf *t, const cJSON *v, int indent);

/* Jinja's truth of a value, as the templates test one: absent (NULL), null, false, 0, "", [] and
 * {} are false. */
bool elm_jinja_truthy(const cJSON *v);

/* v as a Python literal, as LFM2's calls write an argument: json.dumps(v) but for True, False and
 * None. */
void elm_put_py_literal(elm_sbuf *t, const cJSON *v);

/* Python call syntax (chat_tools_pycall.c): how a read of one call ended. */
typedef enum elm_pycall_result {
    ELM_PYCALL_OK,
    ELM_PYCALL_SHORT, /* the text ends inside the call (a reply cut short) */
    ELM_PYCALL_BAD,   /* not such a call */
    ELM_PYCALL_NOMEM
} elm_pycall_result;

/* Reads one call NAME(KEY=VALUE, ...) from text [p, end), blanks allowed between its parts: NAME
 * of [A-Za-z0-9_.-], keyword arguments only, each VALUE a Python literal (a string in ' or " with
 * Python's escapes and JSON's, a number, True, False, None, a list, a tuple, a dict of string
 * keys; JSON's true, false and null too). ELM_PYCALL_OK: *name [*name_len] points into the text,
 * *args is the arguments as a JSON object (caller frees) and *next follows the ")";
 * otherwise *args is NULL. */
elm_pycall_result elm_pycall_read(const char *p, const char *end, const char **name,
                                  size_t *name_len, cJSON **args, const char **next);

/* ELM_OK when tools is an array of {"type": "function", "function": {"name": 1-64 of
 * [A-Za-z0-9_.-], "parameters": object or absent}}; else ELM_ERR_FORMAT naming src[i] and the
 * field. */
elm_status elm_tools_check(const cJSON *tools, const char *src, elm_error *err);

/* The system turn with tools of syntax s (not ELM_TOOLS_LLAMA or Mistral's, whose system turn
 * is the template's own): the system text (NULL: no system message) and the tools. */
void elm_tools_put_system(elm_sbuf *t, elm_tool_syntax s, const char *system, const cJSON *tools);

/* The tools of syntax s that go at the end of the system turn (Gemma 4's declarations, each
 * <|tool>declaration:NAME{...}<tool|>; Phi-4-mini's list); nothing for the other syntaxes. */
void elm_tools_put_in_system(elm_sbuf *t, elm_tool_syntax s, const cJSON *tools);

/* Gemma 4's declarations of the tools (elm_tools_put_in_system). */
void elm_tools_put_gemma4_declarations(elm_sbuf *t, const cJSON *tools);

/* Gemma 4's block of function name's result `content`. */
void elm_tools_put_gemma4_result(elm_sbuf *t, const char *name, const char *content);

/* Gemma 4's value syntax of v (its template's format_argument): strings between quote tokens,
 * objects with their keys sorted (case-insensitively, as Jinja's dictsort) and quoted only when
 * quote_keys, other values as Python's str writes them. */
void elm_put_gemma4_value(elm_sbuf *t, const cJSON *v, bool quote_keys);

/* A deep copy of v with every object's members in the order Gemma 4's template writes them
 * (Jinja's dictsort: keys case-insensitively, ties in their order), for the grammar of its calls;
 * NULL when out of memory. */
cJSON *elm_gemma4_sorted_copy(const cJSON *v);

/* The tools block of syntaxes that write it apart from the system turn (Mistral's, where the
 * caller places it); nothing for the others. */
void elm_tools_put_list(elm_sbuf *t, elm_tool_syntax s, const cJSON *tools);

/* Llama 3.1's first user turn with tools: the instructions, each tool, then `user` trimmed. */
void elm_tools_put_llama_user(elm_sbuf *t, const cJSON *tools, const char *user);

/* An assistant message's calls [n] (their arguments JSON objects and, where the syntax writes
 * them, their ids, checked by the caller); after text (after_text), the separator the syntax
 * writes between a reply's text and its calls. */
void elm_tools_put_calls(elm_sbuf *t, elm_tool_syntax s, const elm_tool_call *calls, int32_t n,
                         bool after_text);

/* A "tool" message's content and call id (checked by the caller where the syntax writes it);
 * first and last: whether it opens or closes a run of them. */
void elm_tools_put_result(elm_sbuf *t, elm_tool_syntax s, const char *content, const char *id,
                          bool first, bool last);

#endif
