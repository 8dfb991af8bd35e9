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
        const cJSON *call = cJSON_GetArrayItem(tc, j);
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(f, "arguments");
        if (!cJSON_IsString(name) || !cJSON_IsString(args)) {
            free(*calls);
            *calls = NULL;
            return srv_bad(msg, cap, "messages[%d].tool_calls[%d].function: expected \"name\" "
                                     "and \"arguments\" (a JSON string)", i, j);
        }
        (*calls)[j] = (elm_tool_call){.name = name->valuestring, .arguments = args->valuestring,
                                      .id = cJSON_GetStringValue(id)};
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
    char *choice_text = choice ? cJSON_PrintUnformatted(choice) : NULL;
    if ((t && !(*tools = cJSON_PrintUnformatted(t))) || (choice && !choice_text)) {
        free(choice_text);
        return 500;
    }
    elm_tool_choice tc;
    elm_error err;
    elm_status st = elm_tool_choice_parse(tmpl, *tools, choice_text, &tc, &err);
    free(choice_text);
    if (!st && tc.mode != ELM_TOOL_CHOICE_NONE && jp->grammar)
        st = elm_errorf(&err, ELM_ERR_ARG, "tools: cannot be combined with response_format or "
                        "grammar");
    char *gbnf = NULL;
    const char *trigger = NULL;
    const bool lazy = tc.mode == ELM_TOOL_CHOICE_AUTO;
    if (!st && tc.mode != ELM_TOOL_CHOICE_NONE &&
        !(st = elm_chat_tool_grammar(tmpl, *tools, tc.only[0] ? tc.only : NULL, parallel, lazy,
                                     &gbnf, &trigger, &err)))
        st = elm_grammar_parse(gbnf, strlen(gbnf), "tools", &jp->grammar, &err);
    free(gbnf);
    if (st || !cJSON_GetArraySize(t)) { /* no tools: nothing to render */
        free(*tools);
        *tools = NULL;
    }
    if (st) return st == ELM_ERR_NOMEM ? 500 : srv_bad(msg, cap, "%s", err.msg);
    if (tc.mode == ELM_TOOL_CHOICE_NONE) return 0;
    jp->tool_calls = true;
    if (lazy) snprintf(jp->trigger, sizeof jp->trigger, "%s", trigger);
    return 0;
}
