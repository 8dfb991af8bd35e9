/* libFuzzer harness: the server's request parser (srv_request_parse), a JSON body of
 * /v1/chat/completions or /v1/completions into a job, with the stories260K model's vocabulary and
 * no socket. The first byte picks the endpoint (bit 0: chat) and the chat template (the rest); the
 * rest is the body. A refusal must be 400 with a one-line message, or 500 (out of memory); an
 * accepted request must hold a prompt that fits the slot and a reply budget within it. */
#include "edgelm/chat.h"
#include "edgelm/model.h"
#include "edgelm/sampler.h"
#include "fuzz.h"
#include "server/request.h"

enum { SLOT_CTX = 128 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    const elm_chat_template t = (elm_chat_template)((data[0] >> 1) % ELM_TEMPLATE_COUNT);
    const srv_defaults d = {.m = m, .tmpl = t,
                            .eot_id = elm_chat_special_id(&m->vocab, elm_chat_template_eot(t)),
                            .sampling = elm_sampler_defaults(), .seed_set = data[0] & 0x80,
                            .slot_ctx = SLOT_CTX, .n_slots = 4};
    /* a copy of its own, so that reading past the body is caught by ASan */
    char *body = malloc(size - 1 ? size - 1 : 1);
    if (!body) return 0;
    memcpy(body, data + 1, size - 1);
    srv_request r;
    char msg[512] = "";
    const int rc = srv_request_parse(body, size - 1, chat, &d, &r, msg, sizeof msg);
    free(body);
    if (rc == 0) {
        const srv_job_params *j = &r.job;
        if (!r.prompt || r.n_prompt < 1 || r.n_prompt >= SLOT_CTX || j->max_tokens < 1 ||
            j->max_tokens > SLOT_CTX || j->n_stop < 0 || j->n_stop > SRV_MAX_STOP ||
            j->sampling.top_k < 0 || j->sampling.top_k > m->hp.n_vocab)
            abort();
        for (int32_t i = 0; i < r.n_prompt; i++)
            if (r.prompt[i] < 0 || r.prompt[i] >= m->hp.n_vocab) abort();
        free(r.prompt);
        free(r.tools);
        elm_grammar_free(r.job.grammar);
    } else if (!((rc == 400 && msg[0] && !strchr(msg, '\n')) || rc == 500) || r.prompt) {
        fprintf(stderr, "refused with %d and message '%s'\n", rc, msg);
        abort();
    }
    return 0;
}
