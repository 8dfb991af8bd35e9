/* OpenAI's tool_choice against a request's tools and the chat template (chat.h,
 * elm_tool_choice_parse): the one reading of it, which the server and the Python package share. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "edgelm/chat.h"

elm_status elm_tool_choice_parse(elm_chat_template t, const char *tools, const char *tool_choice,
                                 elm_tool_choice *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    cJSON *tl = tools ? cJSON_Parse(tools) : NULL, *ch = tool_choice ? cJSON_Parse(tool_choice) : NULL;
    elm_status st = ELM_OK;
    if (tools && !cJSON_IsArray(tl))
        st = elm_errorf(err, ELM_ERR_ARG, "tools: expected an array");
    else if (tool_choice && !ch)
        st = elm_errorf(err, ELM_ERR_ARG, "tool_choice: not JSON");
    const bool none = cJSON_IsString(ch) && !strcmp(ch->valuestring, "none");
    if (!st && cJSON_GetArraySize(tl) == 0) {
        /* absent, or "none": no calls */
        if (ch && !none) st = elm_errorf(err, ELM_ERR_ARG, "tool_choice: no tools given");
    } else if (!st && !elm_chat_template_has_tools(t)) {
        st = elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools: the chat template %s has no tool calls "
                        "in edgelm (%s have)", elm_chat_template_name(t),
                        elm_chat_tool_template_names());
    } else if (!st) {
        out->mode = ELM_TOOL_CHOICE_AUTO;
        if (cJSON_IsString(ch)) {
            const char *m = ch->valuestring;
            if (!strcmp(m, "none")) out->mode = ELM_TOOL_CHOICE_NONE;
            else if (!strcmp(m, "required")) out->mode = ELM_TOOL_CHOICE_REQUIRED;
            else if (strcmp(m, "auto"))
                st = elm_errorf(err, ELM_ERR_ARG, "tool_choice: expected \"none\", \"auto\", "
                                "\"required\" or {\"type\": \"function\", \"function\": {\"name\": "
                                "...}}");
        } else if (ch) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(ch, "function"), "name");
            if (!cJSON_IsString(name) || !elm_tool_name_ok(name->valuestring))
                st = elm_errorf(err, ELM_ERR_ARG, "tool_choice: expected a string or {\"type\": "
                                "\"function\", \"function\": {\"name\": 1 to 64 of a-z A-Z 0-9 _ - "
                                ".}}");
            else {
                out->mode = ELM_TOOL_CHOICE_REQUIRED;
                snprintf(out->only, sizeof out->only, "%s", name->valuestring);
            }
        }
    }
    cJSON_Delete(tl);
    cJSON_Delete(ch);
    return st;
}
