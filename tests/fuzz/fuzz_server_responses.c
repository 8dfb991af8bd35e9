/* libFuzzer harness: the server's Responses API parser (srv_responses_to_chat), a body of
 * POST /v1/responses into the chat request it stands for, which then goes through the chat
 * request parser (srv_request_parse) with the stories260K model's vocabulary on Qwen3's template
 * (the one with tool calls), no socket. A refusal must be 400 with a one-line message, or 500;
 * what it makes must be JSON the chat parser reads. */
#include "edgelm/chat.h"
#include "edgelm/model.h"
#include "edgelm/sampler.h"
#include "fuzz.h"
#include "server/request.h"
#include "server/responses.h"

enum { SLOT_CTX = 128 };

static void check_refusal(int rc, const char *msg) {
    if (!((rc == 400 && msg[0] && !strchr(msg, '\n')) || rc == 500)) {
        fprintf(stderr, "refused with %d and message '%s'\n", rc, msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    char *body = malloc(size ? size : 1), *chat = NULL, msg[512] = "";
    if (!body) return 0;
    memcpy(body, data, size);
    int rc = srv_responses_to_chat(body, size, &chat, msg, sizeof msg);
    free(body);
    if (rc) {
        check_refusal(rc, msg);
        if (chat) abort();
        return 0;
    }
    const srv_defaults d = {.m = m, .tmpl = ELM_TEMPLATE_QWEN3,
                            .eot_id = elm_chat_special_id(&m->vocab, elm_chat_template_eot(ELM_TEMPLATE_QWEN3)),
                            .sampling = elm_sampler_defaults(), .slot_ctx = SLOT_CTX, .n_slots = 2};
    srv_request r;
    msg[0] = '\0';
    rc = srv_request_parse(chat, strlen(chat), true, &d, &r, msg, sizeof msg);
    free(chat);
    if (rc == 0) {
        free(r.prompt);
        free(r.tools);
        elm_grammar_free(r.job.grammar);
    } else {
        check_refusal(rc, msg);
    }
    return 0;
}
