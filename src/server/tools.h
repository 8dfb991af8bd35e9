/* The tool fields of a chat request (request.c): "tools", "tool_choice", "parallel_tool_calls",
 * and the messages' "tool_calls" and "tool" role, for the templates that have tool calls
 * (elm_chat_template_has_tools). */
#ifndef EDGELM_SERVER_TOOLS_H
#define EDGELM_SERVER_TOOLS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "edgelm/chat.h"
#include "server/scheduler.h"

/* Reads the request's tools into *tools (the array as compact JSON, malloc'd; NULL without
 * tools) and, by tool_choice, the job's grammar and trigger: "auto" (the default) lets the model
 * write text and holds it to valid calls from the family's opening of a call on; "required" and
 * a named function make the reply calls (of that function); "none" renders the tools and takes
 * the reply as text. parallel_tool_calls false allows one call. Returns 0, 400 naming the field
 * (tools for a template without them, a schema the grammar cannot hold, a tool_choice naming no
 * tool, tools with response_format or grammar), or 500. */
int srv_tools_parse(const cJSON *root, elm_chat_template tmpl, srv_job_params *jp, char **tools,
                    char *msg, size_t cap);

/* Message i's tool calls (an assistant's "tool_calls": [{"type": "function", "function": {"name",
 * "arguments": JSON text}}]) into *calls [*n] (malloc'd array; its strings point into e). */
int srv_message_tool_calls(const cJSON *e, int i, elm_tool_call **calls, int32_t *n, char *msg,
                           size_t cap);

#endif
