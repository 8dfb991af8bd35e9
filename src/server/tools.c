/* Tool fields into the prompt, the grammar and the job (see tools.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fields.h"
#include "server/tools.h"

int srv_message_tool_calls(const cJSON *e, int i, elm_tool_call **calls, int32_t *n, char *msg,
                           size_t cap) {
    *calls = NULL;
    *n = 0;
    const cJSON *tc = srv_field(e, "tool_calls");
    if (!tc) return 0;
    if (!cJSON_IsArray(tc)) return srv_bad(msg, cap, "messages[%d].tool_calls: expected an array", i);
    const int k = cJSON_GetArraySize(tc);
    if (k == 0) return 0;
    if (!(*calls = calloc((size_t)k, sizeof **calls))) return 500;
    for (int j = 0; j < k; j++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tc, j), "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
        if (!cJSON_IsString(name) || !cJSON_IsString(args)) {
            free(*calls);
            *calls = NULL;
            return srv_bad(msg, cap, "messages[%d].tool_calls[%d].function: expected \"name\" "
                                     "and \"arguments\" (a JSON string)", i, j);
        }
        (*calls)[j] = (elm_tool_call){.name = name->valuestring, .arguments = args->valuestring};
    }
    *n = k;
    return 0;
}

int srv_tools_parse(const cJSON *root, elm_chat_template tmpl, srv_job_params *jp, char **tools,
                    char *msg, size_t cap) {
    *tools = NULL;
    const cJSON *t = srv_field(root, "tools"), *choice = srv_field(root, "tool_choice");
    bool parallel = true;
    if (!srv_boolean(root, "parallel_tool_calls", &parallel, msg, cap)) return 400;
    if (!t || (cJSON_IsArray(t) && cJSON_GetArraySize(t) == 0)) {
        if (choice && !(cJSON_IsString(choice) && !strcmp(choice->valuestring, "none")))
            return srv_bad(msg, cap, "tool_choice: no tools given");
        return 0;
    }
    if (!elm_chat_template_has_tools(tmpl))
        return srv_bad(msg, cap, "tools: the chat template %s has no tool calls in edgelm (%s "
                                 "have)", elm_chat_template_name(tmpl),
                       elm_chat_tool_template_names());
    const char *mode = "auto", *only = NULL;
    if (cJSON_IsString(choice)) {
        mode = choice->valuestring;
        if (strcmp(mode, "auto") && strcmp(mode, "none") && strcmp(mode, "required"))
            return srv_bad(msg, cap, "tool_choice: expected \"none\", \"auto\", \"required\" or "
                                     "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else if (choice) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(choice, "function"), "name");
        if (!cJSON_IsString(name) || !elm_tool_name_ok(name->valuestring))
            return srv_bad(msg, cap, "tool_choice: expected a string or {\"type\": \"function\", "
                                     "\"function\": {\"name\": 1 to 64 of a-z A-Z 0-9 _ - .}}");
        mode = "required";
        only = name->valuestring;
    }
    if (!(*tools = cJSON_PrintUnformatted(t))) return 500;
    if (!strcmp(mode, "none")) return 0;
    if (jp->grammar) {
        free(*tools);
        *tools = NULL;
        return srv_bad(msg, cap, "tools: cannot be combined with response_format or grammar");
    }
    const bool lazy = !strcmp(mode, "auto");
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_error err;
    elm_status st = elm_chat_tool_grammar(tmpl, *tools, only, parallel, lazy, &gbnf, &trigger, &err);
    if (!st) st = elm_grammar_parse(gbnf, strlen(gbnf), "tools", &jp->grammar, &err);
    free(gbnf);
    if (st) {
        free(*tools);
        *tools = NULL;
        if (st == ELM_ERR_NOMEM) return 500;
        return srv_bad(msg, cap, "%s", err.msg);
    }
    jp->tool_calls = true;
    if (lazy) snprintf(jp->trigger, sizeof jp->trigger, "%s", trigger);
    return 0;
}
