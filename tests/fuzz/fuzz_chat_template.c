/* libFuzzer harness: chat-template rendering of arbitrary message text, with and without tools,
 * and the parsing of tool calls out of arbitrary text (and how much of it is settled, for
 * templates with channels). The input is split at NUL
 * bytes into a system prompt and messages (alternately user and assistant); the first byte picks
 * the template and whether a generation prompt follows. Also renders one turn at a time, and
 * detects a template from the whole input taken as a Jinja text. */
#include "edgelm/chat.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const elm_chat_template t = (elm_chat_template)(data[0] % ELM_TEMPLATE_COUNT);
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    elm_chat_msg msgs[16] = {{0}};
    int32_t n = 0;
    for (char *p = text; n < 16 && p < text + size - 1; p += strlen(p) + 1) {
        msgs[n].role = n == 0 ? "system" : n % 2 ? "user" : "assistant";
        msgs[n].content = p;
        n++;
    }
    if (n == 0) msgs[n++] = (elm_chat_msg){.role = "user", .content = text};
    elm_error err;
    char *out = NULL;
    if (elm_chat_render(t, msgs, n, data[0] & 0x80, &out, &err) == ELM_OK && !out) abort();
    free(out);
    out = NULL;
    /* with tools, the messages' texts as results and as a call's arguments (Qwen3's template) */
    static const char tools[] = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                                "\"parameters\": {\"type\": \"object\"}}}]";
    const elm_tool_call call = {"f", msgs[n - 1].content, NULL};
    for (int32_t i = 1; i < n; i++) msgs[i].role = i % 3 == 2 ? "tool" : i % 3 ? "user" : "assistant";
    if (n > 3) msgs[3].tool_calls = &call, msgs[3].n_tool_calls = 1;
    if (elm_chat_render_tools(t, msgs, n, tools, true, &out, &err) == ELM_OK && !out) abort();
    free(out);
    out = NULL;
    elm_tool_calls calls;
    if (elm_chat_parse_tool_calls(t, tools, msgs[0].content, &calls, &err) == ELM_OK) elm_tool_calls_free(&calls);
    if (elm_chat_reply_settled(t, msgs[0].content, strlen(msgs[0].content)) > strlen(msgs[0].content))
        abort();
    if (elm_chat_render_turn(t, msgs[0].content, n > 1 ? msgs[1].content : "", n < 3, &out, &err) ==
            ELM_OK && !out)
        abort();
    free(out);
    (void)elm_chat_template_detect(text);
    free(text);
    return 0;
}
