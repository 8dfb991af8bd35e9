/* Request bodies into jobs (see request.h). Field checks follow the OpenAI API reference: every
 * sampling field is optional and null means absent; unknown fields are ignored, as OpenAI-style
 * servers do, so clients that send more (presence_penalty, stream_options) work. Fields that
 * constrain the reply (constraint.c) are never ignored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "edgelm/vocab.h"
#include "server/constraint.h"
#include "server/fields.h"
#include "server/request.h"
#include "server/tools.h"

enum { MAX_MESSAGES = 4096 };

static int stop_strings(const cJSON *o, srv_job_params *jp, char *msg, size_t cap) {
    const cJSON *f = srv_field(o, "stop");
    if (!f) return 0;
    const cJSON *one = cJSON_IsString(f) ? f : NULL;
    if (!one && !cJSON_IsArray(f))
        return srv_bad(msg, cap, "stop: expected a string or an array of strings");
    const int n = one ? 1 : cJSON_GetArraySize(f);
    if (n > SRV_MAX_STOP) return srv_bad(msg, cap, "stop: %d strings, at most %d", n, SRV_MAX_STOP);
    for (int i = 0; i < n; i++) {
        const cJSON *s = one ? one : cJSON_GetArrayItem(f, i);
        if (!cJSON_IsString(s)) return srv_bad(msg, cap, "stop[%d]: expected a string", i);
        const size_t l = strlen(s->valuestring);
        if (l == 0 || l > SRV_MAX_STOP_LEN)
            return srv_bad(msg, cap, "stop[%d]: length %zu out of range 1..%d", i, l, SRV_MAX_STOP_LEN);
        memcpy(jp->stop[jp->n_stop++], s->valuestring, l + 1);
    }
    return 0;
}

/* Chat: "logprobs" true and "top_logprobs" 0..20 alternatives; completions (legacy): "logprobs"
 * 0..5, the alternatives. */
static int logprobs(const cJSON *o, bool chat, srv_job_params *jp, char *msg, size_t cap) {
    double top = 0;
    if (!chat) {
        top = -1;
        if (!srv_number(o, "logprobs", 0, 5, true, &top, msg, cap)) return 400;
        jp->logprobs = top >= 0;
        jp->top_logprobs = top >= 0 ? (int32_t)top : 0;
        return 0;
    }
    if (!srv_boolean(o, "logprobs", &jp->logprobs, msg, cap) ||
        !srv_number(o, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, true, &top, msg, cap))
        return 400;
    if (top > 0 && !jp->logprobs) return srv_bad(msg, cap, "top_logprobs: needs \"logprobs\": true");
    jp->top_logprobs = (int32_t)top;
    return 0;
}

/* A message's content: a string, or an array of {"type": "text", "text": ...} parts joined.
 * *owned is set when the text was joined here (caller frees). */
static int content_text(const cJSON *c, int i, const char **text, char **owned, char *msg,
                        size_t cap) {
    if (cJSON_IsString(c)) {
        *text = c->valuestring;
        return 0;
    }
    if (!cJSON_IsArray(c))
        return srv_bad(msg, cap, "messages[%d].content: expected a string or an array of text parts", i);
    size_t total = 1;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(t))
            return srv_bad(msg, cap, "messages[%d].content: only text parts are supported", i);
        total += strlen(t->valuestring);
    }
    if (!(*owned = malloc(total))) return 500;
    char *end = *owned; /* appended at the end, not by strcat: many parts stay linear */
    cJSON_ArrayForEach(p, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        const size_t n = strlen(t);
        memcpy(end, t, n);
        end += n;
    }
    *end = '\0';
    *text = *owned;
    return 0;
}

/* The chat's prompt: the template over the messages, then tokens as `edgelm chat` makes them for
 * the same conversation (control tokens parsed, BOS in front when the model wants it). */
static int chat_prompt(const cJSON *root, const srv_defaults *d, const char *tools,
                       int32_t n_reply, char **text, char **citations, char *msg, size_t cap) {
    const cJSON *msgs = srv_field(root, "messages");
    if (!msgs) return srv_bad(msg, cap, "messages: required");
    if (!cJSON_IsArray(msgs)) return srv_bad(msg, cap, "messages: expected an array");
    const int n = cJSON_GetArraySize(msgs);
    if (n < 1 || n > MAX_MESSAGES)
        return srv_bad(msg, cap, "messages: %d messages, expected 1..%d", n, MAX_MESSAGES);
    elm_chat_msg *m = calloc((size_t)n, sizeof *m);
    char **owned = calloc((size_t)n, sizeof *owned);
    elm_tool_call **calls = calloc((size_t)n, sizeof *calls);
    int rc = m && owned && calls ? 0 : 500;
    const bool with_tools = elm_chat_template_has_tools(d->tmpl);
    for (int i = 0; i < n && !rc; i++) {
        const cJSON *e = cJSON_GetArrayItem(msgs, i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsObject(e)) rc = srv_bad(msg, cap, "messages[%d]: expected an object", i);
        else if (!cJSON_IsString(role) ||
                 (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
                  strcmp(role->valuestring, "assistant") &&
                  (!with_tools || strcmp(role->valuestring, "tool"))))
            rc = srv_bad(msg, cap, "messages[%d].role: expected \"system\", \"user\", "
                                   "\"assistant\"%s", i, with_tools ? " or \"tool\"" : "");
        else if (!strcmp(role->valuestring, "system") && i > 0)
            rc = srv_bad(msg, cap, "messages[%d].role: a system message must come first", i);
        else if (!(rc = srv_message_tool_calls(e, i, &calls[i], &m[i].n_tool_calls, msg, cap))) {
            m[i].tool_calls = calls[i];
            if (!srv_field(e, "content") && m[i].n_tool_calls > 0) m[i].content = "";
            else if (!content) rc = srv_bad(msg, cap, "messages[%d].content: required", i);
            else rc = content_text(content, i, &m[i].content, &owned[i], msg, cap);
            m[i].role = role->valuestring;
            m[i].tool_call_id = cJSON_GetStringValue(srv_field(e, "tool_call_id"));
            m[i].reasoning = cJSON_GetStringValue(srv_field(e, "reasoning_content"));
        }
    }
    elm_error err;
    /* gpt-oss's reasoning effort (OpenAI's reasoning_effort; other templates have none to set) */
    const cJSON *effort = srv_field(root, "reasoning_effort");
    elm_chat_opts opts = {.reasoning_effort = NULL, .now = 0};
    if (!rc && effort && !cJSON_IsString(effort))
        rc = srv_bad(msg, cap, "reasoning_effort: expected \"low\", \"medium\" or \"high\"");
    else if (!rc && effort && elm_chat_effort_check(effort->valuestring, &err))
        rc = srv_bad(msg, cap, "%s", err.msg);
    else if (effort)
        opts.reasoning_effort = effort->valuestring;
    if (!rc && d->docs)
        rc = srv_docs_prompt(d->docs, &d->m->vocab, d->tmpl, m, n, tools, d->slot_ctx, n_reply,
                             text, citations, msg, cap);
    else if (!rc && elm_chat_render_with(d->tmpl, m, n, tools, true, &opts, text, &err))
        rc = err.code == ELM_ERR_NOMEM ? 500 : srv_bad(msg, cap, "messages: %s", err.msg);
    for (int i = 0; owned && i < n; i++) free(owned[i]);
    for (int i = 0; calls && i < n; i++) free(calls[i]);
    free(owned);
    free(calls);
    free(m);
    return rc;
}

static int tokens(const srv_defaults *d, const char *text, bool chat, srv_request *r, char *msg,
                  size_t cap) {
    const elm_vocab *v = &d->m->vocab;
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_error err;
    /* one spare in front for BOS */
    if (elm_tokenize_alloc(v, text, strlen(text), !chat && v->add_bos, chat, &ids, &n, &err))
        return err.code == ELM_ERR_NOMEM ? 500
                                         : srv_bad(msg, cap, "%s: %s", chat ? "messages" : "prompt", err.msg);
    if (chat && v->add_bos && v->bos_id >= 0 && (n == 0 || ids[0] != v->bos_id)) {
        int32_t *p = realloc(ids, sizeof(int32_t) * (size_t)(n + 1));
        if (!p) {
            free(ids);
            return 500;
        }
        memmove(p + 1, p, sizeof(int32_t) * (size_t)n);
        p[0] = v->bos_id;
        ids = p;
        n++;
    }
    if (n == 0) {
        free(ids);
        return srv_bad(msg, cap, "%s: empty prompt", chat ? "messages" : "prompt");
    }
    if (n >= d->slot_ctx) {
        free(ids);
        return srv_bad(msg, cap,
                   "%s: the prompt has %lld tokens, a slot's context holds %d (prompt and reply)",
                   chat ? "messages" : "prompt", (long long)n, d->slot_ctx);
    }
    r->prompt = ids;
    r->n_prompt = (int32_t)n;
    return 0;
}

static int parse(const cJSON *root, bool chat, const srv_defaults *d, srv_request *r, char *msg,
                 size_t cap) {
    const cJSON *model = srv_field(root, "model");
    if (model && !cJSON_IsString(model)) return srv_bad(msg, cap, "model: expected a string");
    srv_job_params *jp = &r->job;
    jp->sampling = d->sampling;
    jp->ignore_eos = d->ignore_eos;
    jp->eot_id = chat ? d->eot_id : -1;
    double temp = jp->sampling.temp, top_p = jp->sampling.top_p, min_p = jp->sampling.min_p;
    double top_k = jp->sampling.top_k, rp = jp->sampling.repeat_penalty, nn = 1, dummy = 0;
    double max_tokens = d->max_tokens > 0 ? d->max_tokens : d->slot_ctx;
    double seed = -1;
    if (!srv_number(root, "temperature", 0, 100, false, &temp, msg, cap) ||
        !srv_number(root, "top_p", 0, 1, false, &top_p, msg, cap) ||
        !srv_number(root, "min_p", 0, 1, false, &min_p, msg, cap) ||
        !srv_number(root, "top_k", 0, d->m->hp.n_vocab, true, &top_k, msg, cap) ||
        !srv_number(root, "repeat_penalty", 0, 100, false, &rp, msg, cap) ||
        !srv_number(root, "presence_penalty", -2, 2, false, &dummy, msg, cap) ||
        !srv_number(root, "frequency_penalty", -2, 2, false, &dummy, msg, cap) ||
        !srv_number(root, "n", 1, d->n_slots > 1 ? d->n_slots : 1, true, &nn, msg, cap) ||
        !srv_number(root, "max_tokens", 1, d->slot_ctx, true, &max_tokens, msg, cap) ||
        !srv_number(root, "max_completion_tokens", 1, d->slot_ctx, true, &max_tokens, msg, cap) ||
        !srv_number(root, "seed", -9007199254740991.0, 9007199254740991.0, true, &seed, msg, cap) ||
        !srv_boolean(root, "stream", &r->stream, msg, cap) ||
        !srv_boolean(root, "ignore_eos", &jp->ignore_eos, msg, cap))
        return 400;
    r->n = (int32_t)nn;
    jp->sampling.temp = (float)temp;
    jp->sampling.top_p = (float)top_p;
    jp->sampling.min_p = (float)min_p;
    jp->sampling.top_k = (int32_t)top_k;
    jp->sampling.repeat_penalty = (float)rp;
    jp->max_tokens = (int32_t)max_tokens;
    if (srv_field(root, "seed")) jp->sampling.seed = (uint64_t)(int64_t)seed;
    else if (!d->seed_set) { /* a fresh draw per request, as OpenAI does without a seed */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        jp->sampling.seed = (uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec ^
                            ((uint64_t)getpid() << 40);
    }
    int rc = logprobs(root, chat, jp, msg, cap);
    if (!rc) rc = stop_strings(root, jp, msg, cap);
    if (!rc) rc = srv_constraint_parse(root, &jp->grammar, msg, cap);
    if (rc) return rc;

    char *text = NULL;
    if (chat) {
        /* the reply's share of the slot when documents fill the prompt */
        const bool max_given = srv_field(root, "max_tokens") || srv_field(root, "max_completion_tokens");
        const int32_t n_reply = max_given || d->max_tokens > 0 ? jp->max_tokens
                                : d->slot_ctx > 4 ? d->slot_ctx / 4 : 1;
        char *tools = NULL;
        rc = srv_tools_parse(root, d->tmpl, jp, &tools, msg, cap);
        jp->channels = elm_chat_template_channels(d->tmpl);
        if (!rc) rc = chat_prompt(root, d, tools, n_reply, &text, &r->citations, msg, cap);
        if (!rc && jp->tool_calls) r->tools = tools;
        else free(tools);
        if (rc) return rc;
    } else {
        const cJSON *p = srv_field(root, "prompt");
        if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1) p = cJSON_GetArrayItem(p, 0);
        if (!p) return srv_bad(msg, cap, "prompt: required");
        if (!cJSON_IsString(p)) return srv_bad(msg, cap, "prompt: expected a string");
        if (!(text = strdup(p->valuestring))) return 500;
    }
    rc = tokens(d, text, chat, r, msg, cap);
    free(text);
    return rc;
}

int srv_request_parse(const char *body, size_t len, bool chat, const srv_defaults *d,
                      srv_request *r, char *msg, size_t cap) {
    memset(r, 0, sizeof *r);
    r->chat = chat;
    msg[0] = '\0';
    cJSON *root;
    int rc = srv_parse_body(body, len, &root, msg, cap);
    if (rc) return rc;
    rc = parse(root, chat, d, r, msg, cap);
    cJSON_Delete(root);
    if (rc) {
        free(r->prompt);
        r->prompt = NULL;
        free(r->tools);
        r->tools = NULL;
        free(r->citations);
        r->citations = NULL;
        elm_grammar_free(r->job.grammar);
        r->job.grammar = NULL;
        if (rc == 500 && !msg[0]) snprintf(msg, cap, "out of memory");
    }
    return rc;
}
