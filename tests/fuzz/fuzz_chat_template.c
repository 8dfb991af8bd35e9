/* libFuzzer harness: chat-template rendering of arbitrary message text. The input is split at NUL
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
    elm_chat_msg msgs[16];
    int32_t n = 0;
    for (char *p = text; n < 16 && p < text + size - 1; p += strlen(p) + 1) {
        msgs[n].role = n == 0 ? "system" : n % 2 ? "user" : "assistant";
        msgs[n].content = p;
        n++;
    }
    if (n == 0) msgs[n++] = (elm_chat_msg){"user", text};
    elm_error err;
    char *out = NULL;
    if (elm_chat_render(t, msgs, n, data[0] & 0x80, &out, &err) == ELM_OK && !out) abort();
    free(out);
    out = NULL;
    if (elm_chat_render_turn(t, msgs[0].content, n > 1 ? msgs[1].content : "", n < 3, &out, &err) ==
            ELM_OK && !out)
        abort();
    free(out);
    (void)elm_chat_template_detect(text);
    free(text);
    return 0;
}
