/* OpenAI request bodies (POST /v1/chat/completions, /v1/completions) into server jobs: JSON
 * parsing, validation with a message naming the bad field, the chat template, tokenization. */
#ifndef EDGELM_SERVER_REQUEST_H
#define EDGELM_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "edgelm/chat.h"
#include "server/docs.h"
#include "server/scheduler.h"

/* What a request gets when it does not say. */
typedef struct srv_defaults {
    const elm_model *m;
    elm_chat_template tmpl;
    int32_t eot_id;               /* the template's end-of-turn token, or -1 */
    elm_sampler_params sampling;  /* the command line's */
    bool seed_set;                /* -s given: requests without "seed" use sampling.seed */
    int32_t max_tokens;           /* 0: until the slot's context is full */
    int32_t slot_ctx;
    int32_t n_slots;              /* the most choices ("n") a request may ask for */
    bool ignore_eos;
    srv_docs *docs;               /* --docs: chat answered from a document index, or NULL */
} srv_defaults;

typedef struct srv_request {
    bool chat, stream;
    int32_t n;       /* choices: jobs of their own, seeds seed, seed + 1, ... */
    srv_job_params job;
    int32_t *prompt; /* malloc'd token ids */
    int32_t n_prompt;
    char *tools;     /* with tool calls (job.tool_calls): the request's tools JSON, malloc'd, for
                      * reading the calls back (elm_chat_parse_tool_calls) */
    char *citations; /* a chat with --docs: the JSON array of the chunks its prompt holds
                      * (docs.h), malloc'd; else NULL */
} srv_request;

/* Parses body [len] as a chat (chat) or completions request. On success fills r (free r->prompt,
 * r->tools and r->citations; r->job.grammar goes to srv_job_new) and returns 0; otherwise returns
 * 400 with a one-line message naming the field in msg, or 500 (out of memory, a document index
 * that cannot be read). With d->docs a chat's prompt holds the chunks its last user message
 * retrieves that fit the slot beside the reply: max_tokens (or max_completion_tokens) when the
 * request gives it, else the server's default max_tokens, else a quarter of the slot. */
int srv_request_parse(const char *body, size_t len, bool chat, const srv_defaults *d,
                      srv_request *r, char *msg, size_t cap);

#endif
