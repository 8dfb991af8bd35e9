/* What the chat templates (chat_template.c) take from the tool-call code (chat_tools.c): JSON as
 * Python's json.dumps writes it, the check of an OpenAI "tools" array, and the Hermes-style tool
 * blocks of Qwen3's template. */
#ifndef EDGELM_GENERATE_CHAT_TOOLS_H
#define EDGELM_GENERATE_CHAT_TOOLS_H

#include <cjson/cJSON.h>

#include "core/strbuf.h"
#include "edgelm/chat.h"

/* v as json.dumps(v, ensure_ascii=False) writes it (", " and ": " separators, keys in order). */
void elm_put_py_json(elm_sbuf *t, const cJSON *v);

/* ELM_OK when tools is an array of {"type": "function", "function": {"name": 1-64 of
 * [A-Za-z0-9_.-], "parameters": object or absent}}; else ELM_ERR_FORMAT naming src[i] and the
 * field. */
elm_status elm_tools_check(const cJSON *tools, const char *src, elm_error *err);

/* The system turn of Qwen3's template with tools: the system text (NULL: none) then the tools. */
void elm_tools_put_hermes(elm_sbuf *t, const char *system, const cJSON *tools);

/* An assistant message's calls [n], after its text (after_text: a newline first). */
void elm_tools_put_hermes_calls(elm_sbuf *t, const elm_tool_call *calls, int32_t n,
                                bool after_text);

#endif
