/* libmicrohttpd glue for the server (see http.h). Each connection has its own thread, so a
 * non-streaming request simply waits for its jobs (one per choice), and a stream's content
 * callback blocks until the scheduler publishes text for any of them. A client that goes away
 * makes the next write fail; libmicrohttpd then drops the response, whose free callback cancels
 * the jobs, and the scheduler frees their slots at its next step. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "server/access_log.h"
#include "server/embeddings.h"
#include "server/http.h"
#include "server/logprobs.h"
#include "server/responses.h"
#include "server/tokenize.h"

extern const unsigned char srv_page_html[];
extern const size_t srv_page_html_len;

struct srv_http {
    struct MHD_Daemon *d;
    srv_server *s;
    const srv_defaults *def;
    srv_embedder *emb; /* POST /v1/embeddings, its own context (embeddings.h) */
    srv_http_params p;
    int port;
    unsigned long next_id;
    char run_tag[20]; /* this run's, in the tool calls' ids: unique past a restart and a choice */
    int inflight; /* requests between their first call and their completion (atomic) */
};

/* Per request: the body as it arrives, and what /metrics counts and the access log says when it
 * has been answered. */
typedef struct conn_state {
    char *body;
    size_t len, cap;
    bool too_big;
    char method[16], path[128]; /* cut short */
    struct timespec arrived;    /* wall clock */
    double t0;                  /* elm_now_ms at arrival */
    bool has_job;               /* a completion that ran to its end: job holds its result */
    srv_job_result job;
} conn_state;

static enum MHD_Result send_body(struct MHD_Connection *conn, unsigned status, const char *type,
                                 const void *data, size_t len) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    const enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, cJSON *o) {
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return MHD_NO;
    const enum MHD_Result ret = send_body(conn, status, "application/json", text, strlen(text));
    free(text);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *code,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *code,
                                  const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 401   ? "authentication_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddStringToObject(e, "code", code);
    return send_json(conn, status, o);
}

/* A request body's parser said no: 400 (msg names the field) or 500 (out of memory). */
static enum MHD_Result send_refusal(struct MHD_Connection *conn, int rc, const char *msg) {
    return send_error(conn, (unsigned)rc, rc == 400 ? "invalid_request" : "internal_error", "%s", msg);
}

/* Compares in time that depends on the lengths only, not on where the strings differ. */
static bool same_secret(const char *a, const char *b) {
    const size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la; i++) diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

static bool authorized(const srv_http *h, struct MHD_Connection *conn) {
    if (!h->p.api_key) return true;
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7)) return false;
    return same_secret(auth + 7, h->p.api_key);
}

static cJSON *usage_json(const srv_job_result *r) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", r->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", r->prompt_tokens + r->completion_tokens);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"), "cached_tokens",
                            r->cached_tokens);
    return u;
}

/* Counts choice i's result r into its request's *total (all its choices done): the prompt and the
 * timings once, choice 0's, as OpenAI counts the prompt once; the completion tokens of each. */
static void count_choice(srv_job_result *total, const srv_job_result *r, int i) {
    if (i == 0) *total = *r;
    else total->completion_tokens += r->completion_tokens;
}

/* edgelm's timings (as llama-server's "timings"): what the page and the benchmark read. */
static cJSON *timings_json(const srv_job_result *r) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "prompt_n", r->prompt_tokens - r->cached_tokens);
    cJSON_AddNumberToObject(t, "prompt_ms", r->prefill_ms);
    cJSON_AddNumberToObject(t, "ttft_ms", r->ttft_ms);
    cJSON_AddNumberToObject(t, "predicted_n", r->completion_tokens);
    cJSON_AddNumberToObject(t, "predicted_ms", r->decode_ms);
    cJSON_AddNumberToObject(t, "predicted_per_second",
                            r->completion_tokens > 1 && r->decode_ms > 0
                                ? (r->completion_tokens - 1) / (r->decode_ms / 1e3)
                                : 0);
    return t;
}

/* edgelm's extension of a chat completion under --docs: "edgelm": {"citations": [...]} from the
 * JSON array text of the chunks the prompt held (docs.h); nothing for NULL. */
static void put_citations(cJSON *o, const char *citations) {
    cJSON *c = citations ? cJSON_Parse(citations) : NULL;
    if (c) cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "edgelm"), "citations", c);
}

/* The skeleton of a response object: id, object, created, model. */
static cJSON *response_head(const srv_http *h, const char *id, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)time(NULL));
    cJSON_AddStringToObject(o, "model", h->p.model_id);
    return o;
}

/* Choice `index`: a chat message / delta, or a completion's text. text NULL: no content field.
 * lp (taken): its "logprobs", or NULL (null for completions, none for chat). */
static cJSON *choice(bool chat, bool delta, int index, const char *text, const char *finish,
                     bool role, cJSON *lp) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", index);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(c, delta ? "delta" : "message");
        if (role) cJSON_AddStringToObject(m, "role", "assistant");
        if (text) cJSON_AddStringToObject(m, "content", text);
        if (lp) cJSON_AddItemToObject(c, "logprobs", lp);
    } else {
        cJSON_AddStringToObject(c, "text", text ? text : "");
        if (lp) cJSON_AddItemToObject(c, "logprobs", lp);
        else cJSON_AddNullToObject(c, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    return c;
}

/* The "logprobs" of the job's tokens from *sent on whose text ends within the reply's first `upto`
 * bytes; *sent advances past them. NULL when out of memory. */
static cJSON *logprobs_json(srv_http *h, srv_job *job, bool chat, int32_t *sent, size_t upto) {
    srv_logprob *r;
    int32_t n;
    if (!srv_take_logprobs(h->s, job, *sent, upto, &r, &n)) return NULL;
    cJSON *o = srv_logprobs_json(&h->def->m->vocab, r, n, chat);
    *sent += n;
    free(r);
    return o;
}

/* Puts calls c into choice `index` made by choice(): "tool_calls" in its message or delta (ids
 * from the response's id, the server run and the choice, in the form the template takes back),
 * content null when the reply had no text, finish_reason "tool_calls" unless it ended otherwise
 * than at a stop. */
static void put_tool_calls(const srv_http *h, cJSON *c, bool delta, const elm_tool_calls *calls,
                           const char *id, int index) {
    char tag[80];
    snprintf(tag, sizeof tag, "%s-%s-%d", id, h->run_tag, index);
    cJSON *m = cJSON_GetObjectItem(c, delta ? "delta" : "message");
    if (!delta) {
        cJSON_DeleteItemFromObject(m, "content");
        if (calls->content[0]) cJSON_AddStringToObject(m, "content", calls->content);
        else cJSON_AddNullToObject(m, "content");
    }
    cJSON *arr = cJSON_AddArrayToObject(m, "tool_calls");
    for (int32_t i = 0; i < calls->n; i++) {
        cJSON *tc = cJSON_CreateObject();
        char call_id[ELM_TOOL_CALL_ID_MAX];
        elm_chat_tool_call_id(h->def->tmpl, tag, i, call_id);
        if (delta) cJSON_AddNumberToObject(tc, "index", i);
        cJSON_AddStringToObject(tc, "id", call_id);
        cJSON_AddStringToObject(tc, "type", "function");
        cJSON *f = cJSON_AddObjectToObject(tc, "function");
        cJSON_AddStringToObject(f, "name", calls->calls[i].name);
        cJSON_AddStringToObject(f, "arguments", calls->calls[i].arguments);
        cJSON_AddItemToArray(arr, tc);
    }
    const cJSON *fr = cJSON_GetObjectItem(c, "finish_reason");
    if (!cJSON_IsString(fr) || !strcmp(fr->valuestring, "stop"))
        cJSON_ReplaceItemInObject(c, "finish_reason", cJSON_CreateString("tool_calls"));
}

/* The reply's tool calls of the request's tools (*calls, n 0 when none or when they do not parse:
 * a reply cut short is text); false when out of memory. */
static bool reply_tool_calls(const srv_http *h, const char *tools, const char *text,
                             elm_tool_calls *calls) {
    elm_error err;
    const elm_status st = elm_chat_parse_tool_calls(h->def->tmpl, tools, text, calls, &err);
    if (st == ELM_ERR_NOMEM) return false;
    if (st) memset(calls, 0, sizeof *calls);
    return true;
}

/* How much of text [len] can go out as content while tool calls may follow: all of it before
 * the first call's opening `open` (elm_chat_tool_call_open), short of an end that could begin
 * one. The text before `from` is known to hold none. */
static size_t content_before_calls(const char *open, const char *text, size_t from, size_t len) {
    const size_t ol = strlen(open);
    for (size_t i = from; i < len; i++) {
        const size_t k = len - i < ol ? len - i : ol;
        if (!memcmp(text + i, open, k)) return i;
    }
    return len;
}

/* ---- streaming ---- */

/* One choice of a stream: its job and how much of its reply has gone out. */
typedef struct stream_choice {
    srv_job *job;
    bool role_sent, finished;
    size_t seen;         /* reply bytes taken from the job */
    int32_t lp_sent;     /* tokens whose log-probabilities were sent */
    elm_sbuf reply;      /* with tools or channels: the text so far */
    size_t content_sent; /* with tools: bytes of it sent as content; with channels: bytes of its
                          * content (elm_tool_calls.content) sent */
    size_t reasoning_sent; /* with channels: bytes of its reasoning sent */
} stream_choice;

/* A streamed request. Its choices' chunks go out in the order their text arrives, each ending
 * with a finish chunk of its own; the last of those carries the usage of all, then [DONE]. */
typedef struct stream {
    srv_http *h;
    conn_state *cs; /* its request's; read only while the response is being sent */
    bool chat, finished, logprobs;
    bool channels;  /* the replies are in channels (elm_chat_template_channels): read as they
                     * grow into content and reasoning deltas */
    char *tools;    /* the request's tools when the replies may end in tool calls (their text
                     * is then kept in `reply`), else NULL */
    char *citations; /* --docs: the chunks the prompt held (srv_request), on the last chunk */
    char id[48];
    srv_resp_stream *rs; /* /v1/responses (one choice): the chunks go out as its events */
    char *out;           /* formatted SSE bytes not yet handed to libmicrohttpd */
    size_t out_len, out_off;
    int n, n_finished;
    stream_choice ch[]; /* [n] */
} stream;

/* Room for n more bytes at the end of the unsent output; NULL when out of memory. */
static char *out_room(stream *st, size_t n) {
    char *p = realloc(st->out, st->out_len + n);
    if (!p) return NULL;
    st->out = p;
    return p + st->out_len;
}

/* One server-sent event: "event: NAME" when named, then the data line. */
static bool queue_sse(stream *st, const char *name, cJSON *o) {
    char *json = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!json) return false;
    const size_t need = strlen(json) + (name ? strlen(name) + 8 : 0) + 9;
    char *p = out_room(st, need);
    if (p)
        st->out_len += (size_t)snprintf(p, need, "%s%s%sdata: %s\n\n", name ? "event: " : "",
                                        name ? name : "", name ? "\n" : "", json);
    free(json);
    return p != NULL;
}

/* A chat or completions chunk, or for /v1/responses the events it stands for. */
static bool queue_event(stream *st, cJSON *o) {
    if (!st->rs) return queue_sse(st, NULL, o);
    cJSON *events = cJSON_CreateArray();
    bool ok = events && o && srv_resp_stream_chunk(st->rs, o, events);
    cJSON_Delete(o);
    while (ok && events->child) {
        cJSON *e = cJSON_DetachItemViaPointer(events, events->child);
        char name[64];
        snprintf(name, sizeof name, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(e, "type")));
        ok = queue_sse(st, name, e);
    }
    cJSON_Delete(events);
    return ok;
}

/* A chunk holding one choice c (taken). */
static cJSON *chunk(const stream *st, cJSON *c) {
    cJSON *o = response_head(st->h, st->id, st->chat ? "chat.completion.chunk" : "text_completion");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
    return o;
}

/* Adds to delta d what choice c's reply in channels, read (elm_chat_parse_tool_calls) as far as
 * it is settled, has beyond what was sent: "content" and "reasoning_content" (nothing when they
 * are empty). Returns the reading (*calls: caller frees); false when out of memory. */
static bool read_channels(stream *st, stream_choice *c, bool whole, cJSON *d,
                          elm_tool_calls *calls) {
    memset(calls, 0, sizeof *calls);
    elm_sb_put(&c->reply, "", 0);
    if (c->reply.oom) return false;
    const size_t n = whole ? c->reply.len
                           : elm_chat_reply_settled(st->h->def->tmpl, c->reply.s, c->reply.len);
    char *settled = strndup(c->reply.s, n);
    const bool ok = settled && reply_tool_calls(st->h, st->tools, settled, calls);
    free(settled);
    if (!ok) return false;
    const char *content = calls->content ? calls->content : "";
    const char *reasoning = calls->reasoning ? calls->reasoning : "";
    if (strlen(content) > c->content_sent) {
        cJSON_AddStringToObject(d, "content", content + c->content_sent);
        c->content_sent = strlen(content);
    }
    if (strlen(reasoning) > c->reasoning_sent) {
        cJSON_AddStringToObject(d, "reasoning_content", reasoning + c->reasoning_sent);
        c->reasoning_sent = strlen(reasoning);
    }
    return true;
}

/* Sends what choice c's reply in channels has settled beyond what was sent, as one delta (none
 * when there is nothing new). */
static bool channel_deltas(stream *st, stream_choice *c, bool whole) {
    cJSON *ch = choice(st->chat, true, (int)(c - st->ch), NULL, NULL, !c->role_sent, NULL);
    cJSON *d = cJSON_GetObjectItem(ch, "delta");
    elm_tool_calls calls;
    const bool ok = read_channels(st, c, whole, d, &calls);
    elm_tool_calls_free(&calls);
    const bool news = cJSON_GetObjectItem(d, "content") || cJSON_GetObjectItem(d, "reasoning_content");
    if (!ok || !news) {
        cJSON_Delete(ch);
        return ok;
    }
    c->role_sent = true;
    return queue_event(st, chunk(st, ch));
}

/* Sends text [len] (taken) of choice c as a delta; with tools, only the part before where a call
 * could begin (the call goes out whole in the finish chunk). */
static bool choice_text(stream *st, stream_choice *c, char *text, size_t len) {
    c->seen += len;
    if (st->channels) {
        elm_sb_put(&c->reply, text, len);
        free(text);
        return !c->reply.oom && channel_deltas(st, c, false);
    }
    if (st->tools) {
        elm_sb_put(&c->reply, text, len);
        free(text);
        if (c->reply.oom) return false;
        const size_t upto = content_before_calls(elm_chat_tool_call_open(st->h->def->tmpl),
                                                 c->reply.s, c->content_sent, c->reply.len);
        if (upto <= c->content_sent) return true;
        len = upto - c->content_sent;
        if (!(text = strndup(c->reply.s + c->content_sent, len))) return false;
        c->content_sent = upto;
    }
    cJSON *lp = NULL;
    if (st->logprobs && !(lp = logprobs_json(st->h, c->job, st->chat, &c->lp_sent, c->seen))) {
        free(text);
        return false;
    }
    cJSON *o = chunk(st, choice(st->chat, true, (int)(c - st->ch), text, NULL, !c->role_sent, lp));
    c->role_sent = true;
    free(text);
    return queue_event(st, o);
}

/* Sends choice c's finish chunk (with tools: its calls, or the text held back for them); after
 * the last choice's, the request's usage and [DONE]. */
static bool choice_end(stream *st, stream_choice *c) {
    const srv_job_result r = srv_job_result_get(st->h->s, c->job);
    cJSON *ch = choice(st->chat, true, (int)(c - st->ch), st->chat ? NULL : "", r.finish_reason,
                       !c->role_sent, NULL);
    cJSON *o = chunk(st, ch);
    c->finished = true;
    if (st->channels) {
        elm_tool_calls calls;
        if (!read_channels(st, c, true, cJSON_GetObjectItem(ch, "delta"), &calls)) {
            elm_tool_calls_free(&calls);
            cJSON_Delete(o);
            return false;
        }
        if (calls.n > 0) put_tool_calls(st->h, ch, true, &calls, st->id, (int)(c - st->ch));
        elm_tool_calls_free(&calls);
    } else if (st->tools && c->reply.len > c->content_sent) {
        elm_tool_calls calls;
        elm_sb_put(&c->reply, "", 0);
        if (c->reply.oom || !reply_tool_calls(st->h, st->tools, c->reply.s, &calls)) {
            cJSON_Delete(o);
            return false;
        }
        cJSON *d = cJSON_GetObjectItem(ch, "delta");
        if (calls.n > 0) {
            if (strlen(calls.content) > c->content_sent)
                cJSON_AddStringToObject(d, "content", calls.content + c->content_sent);
            put_tool_calls(st->h, ch, true, &calls, st->id, (int)(c - st->ch));
        } else {
            cJSON_AddStringToObject(d, "content", c->reply.s + c->content_sent);
        }
        elm_tool_calls_free(&calls);
    }
    if (++st->n_finished < st->n) return queue_event(st, o);
    srv_job_result total = {0};
    for (int i = 0; i < st->n; i++) {
        const srv_job_result ri = srv_job_result_get(st->h->s, st->ch[i].job);
        count_choice(&total, &ri, i);
    }
    st->cs->job = total;
    st->cs->has_job = true;
    cJSON_AddItemToObject(o, "usage", usage_json(&total));
    cJSON_AddItemToObject(o, "timings", timings_json(&total));
    put_citations(o, st->citations);
    if (!queue_event(st, o)) return false;
    st->finished = true;
    /* the Responses API ends at response.completed */
    if (st->rs) return true;
    static const char end[] = "data: [DONE]\n\n";
    char *p = out_room(st, sizeof end - 1);
    if (p) {
        memcpy(p, end, sizeof end - 1);
        st->out_len += sizeof end - 1;
    }
    return p != NULL;
}

/* What choice c has new: its text, or its end. */
static bool choice_step(stream *st, stream_choice *c) {
    char *text;
    size_t len;
    bool done;
    if (!srv_take(st->h->s, c->job, c->seen, false, 0, &text, &len, &done)) return false;
    if (text) return choice_text(st, c, text, len);
    return !done || choice_end(st, c);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    stream *st = cls;
    while (st->out_off == st->out_len) {
        st->out_len = st->out_off = 0;
        if (st->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        srv_job *jobs[SRV_MAX_SLOTS];
        size_t from[SRV_MAX_SLOTS];
        int k = 0;
        for (int i = 0; i < st->n; i++)
            if (!st->ch[i].finished) jobs[k] = st->ch[i].job, from[k++] = st->ch[i].seen;
        srv_wait_any(st->h->s, jobs, from, k, 1000);
        for (int i = 0; i < st->n; i++)
            if (!st->ch[i].finished && !choice_step(st, &st->ch[i]))
                return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    const size_t n = st->out_len - st->out_off < max ? st->out_len - st->out_off : max;
    memcpy(buf, st->out + st->out_off, n);
    st->out_off += n;
    return (ssize_t)n;
}

/* The response is gone: sent, or the client left. Either way no choice is wanted any more. */
static void stream_free(void *cls) {
    stream *st = cls;
    for (int i = 0; i < st->n; i++) {
        srv_cancel(st->h->s, st->ch[i].job);
        srv_job_release(st->h->s, st->ch[i].job);
        free(st->ch[i].reply.s);
    }
    srv_resp_stream_free(st->rs);
    free(st->tools);
    free(st->citations);
    free(st->out);
    free(st);
}

/* ---- routes ---- */

/* Waits for job's whole reply and makes choice `index` of it (its calls, its log-probabilities);
 * *res gets the job's result. NULL when out of memory. */
static cJSON *whole_choice(srv_http *h, srv_job *job, const srv_request *r, const char *id,
                           int index, srv_job_result *res) {
    char *text = NULL;
    size_t len = 0;
    bool done = false;
    while (!done) {
        free(text);
        text = NULL;
        if (!srv_take(h->s, job, 0, true, 1000, &text, &len, &done)) return NULL;
    }
    *res = srv_job_result_get(h->s, job);
    int32_t lp_sent = 0;
    cJSON *lp = r->job.logprobs ? logprobs_json(h, job, r->chat, &lp_sent, len) : NULL;
    elm_tool_calls calls = {0};
    cJSON *c = NULL;
    const bool read = r->chat && (r->job.tool_calls || r->job.channels);
    if ((!r->job.logprobs || lp) &&
        (!read || reply_tool_calls(h, r->tools, text ? text : "", &calls))) {
        /* a reply in channels: its answer as the content (else the text, which did not parse) */
        const char *content = r->job.channels && calls.content ? calls.content : text ? text : "";
        c = choice(r->chat, false, index, content, res->finish_reason, true, lp);
        lp = NULL;
        if (calls.reasoning)
            cJSON_AddStringToObject(cJSON_GetObjectItem(c, "message"), "reasoning_content",
                                    calls.reasoning);
        if (calls.n > 0) put_tool_calls(h, c, false, &calls, id, index);
    }
    cJSON_Delete(lp);
    elm_tool_calls_free(&calls);
    free(text);
    return c;
}

/* Jobs [n] of one request: submitted, each with its own grammar and the next seed (the first
 * takes r's params). Returns how many were queued; on a shortfall *refusal is the reason. */
static int submit_choices(srv_http *h, srv_request *r, srv_job **jobs, int n, int *refusal) {
    *refusal = 0;
    const elm_grammar *g = r->job.grammar;
    for (int i = 0; i < n; i++) {
        srv_job_params p = r->job;
        p.sampling.seed += (uint64_t)i;
        /* the last job takes r's grammar, the others a copy */
        p.grammar = g && i < n - 1 ? elm_grammar_copy(g) : (elm_grammar *)g;
        if (g && !p.grammar) return *refusal = 500, i;
        if (i == n - 1) r->job.grammar = NULL;
        jobs[i] = srv_job_new(r->prompt, r->n_prompt, &p);
        if (!jobs[i]) return *refusal = 500, i;
        const srv_submit_status ss = srv_submit(h->s, jobs[i]);
        if (ss != SRV_OK) {
            srv_job_release(h->s, jobs[i]);
            return *refusal = ss == SRV_FULL ? 503 : 504, i;
        }
    }
    return n;
}

/* Cancels and releases jobs [n] of a request that will not be answered. */
static void drop_jobs(srv_http *h, srv_job **jobs, int n) {
    for (int i = 0; i < n; i++) {
        srv_cancel(h->s, jobs[i]);
        srv_job_release(h->s, jobs[i]);
    }
}

/* A chat or completions request (body [len]); `responses`: a chat request made from a
 * /v1/responses one, answered in that API's shapes. */
static enum MHD_Result completion(srv_http *h, struct MHD_Connection *conn, bool chat,
                                  bool responses, const char *body, size_t len, conn_state *cs) {
    srv_request r;
    char msg[512];
    const int rc = srv_request_parse(body, len, chat, h->def, &r, msg, sizeof msg);
    if (rc) return send_refusal(conn, rc, msg);
    const int n = r.n > 0 ? r.n : 1;
    srv_job *jobs[SRV_MAX_SLOTS];
    int refusal;
    const int queued = submit_choices(h, &r, jobs, n, &refusal);
    free(r.prompt);
    elm_grammar_free(r.job.grammar);
    if (queued < n) {
        drop_jobs(h, jobs, queued);
        free(r.tools);
        free(r.citations);
        if (refusal == 500) return send_error(conn, 500, "internal_error", "out of memory");
        return send_error(conn, 503, refusal == 503 ? "server_busy" : "shutting_down", "%s",
                          refusal == 503 ? "all slots are busy and the queue is full; retry later"
                                         : "the server is stopping");
    }
    char id[48];
    snprintf(id, sizeof id, "%s-%lu", responses ? "resp" : chat ? "chatcmpl" : "cmpl",
             __atomic_add_fetch(&h->next_id, 1, __ATOMIC_RELAXED));
    if (r.stream) {
        stream *st = calloc(1, sizeof *st + sizeof st->ch[0] * (size_t)n);
        if (!st) {
            drop_jobs(h, jobs, n);
            free(r.tools);
            free(r.citations);
            return send_error(conn, 500, "internal_error", "out of memory");
        }
        st->h = h;
        st->cs = cs;
        st->chat = chat;
        st->logprobs = r.job.logprobs;
        st->channels = chat && r.job.channels;
        st->tools = r.tools; /* the stream's now (set for chat requests only) */
        r.tools = NULL;
        st->citations = r.citations;
        st->n = n;
        for (int i = 0; i < n; i++) st->ch[i].job = jobs[i];
        memcpy(st->id, id, sizeof id);
        if (responses && !(st->rs = srv_resp_stream_new(id, h->p.model_id))) {
            stream_free(st);
            return send_error(conn, 500, "internal_error", "out of memory");
        }
        struct MHD_Response *resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
        if (!resp) {
            stream_free(st);
            return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        const enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    /* not streamed: wait for every choice's whole reply */
    cJSON *o = response_head(h, id, chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    srv_job_result total = {0};
    bool ok = true;
    for (int i = 0; i < n; i++) {
        srv_job_result res;
        cJSON *c = ok ? whole_choice(h, jobs[i], &r, id, i, &res) : NULL;
        if (!c) {
            ok = false;
            srv_cancel(h->s, jobs[i]);
        } else {
            cJSON_AddItemToArray(choices, c);
            count_choice(&total, &res, i);
        }
        srv_job_release(h->s, jobs[i]);
    }
    free(r.tools);
    cs->job = total;
    cs->has_job = true;
    if (!ok) {
        cJSON_Delete(o);
        free(r.citations);
        return send_error(conn, 500, "internal_error", "out of memory");
    }
    cJSON_AddItemToObject(o, "usage", usage_json(&total));
    cJSON_AddItemToObject(o, "timings", timings_json(&total));
    put_citations(o, r.citations);
    free(r.citations);
    if (responses) {
        cJSON *resp = srv_response_from_chat(o, id);
        cJSON_Delete(o);
        if (!resp) return send_error(conn, 500, "internal_error", "out of memory");
        o = resp;
    }
    return send_json(conn, 200, o);
}

/* POST /v1/responses: the chat request it stands for, answered as a response. */
static enum MHD_Result respond(srv_http *h, struct MHD_Connection *conn, conn_state *cs) {
    char *chat_body, msg[512];
    const int rc = srv_responses_to_chat(cs->body ? cs->body : "", cs->len, &chat_body, msg,
                                         sizeof msg);
    if (rc) return send_refusal(conn, rc, msg);
    const enum MHD_Result ret = completion(h, conn, true, true, chat_body, strlen(chat_body), cs);
    free(chat_body);
    return ret;
}

static enum MHD_Result models(srv_http *h, struct MHD_Connection *conn) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", h->p.model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)time(NULL));
    cJSON_AddStringToObject(m, "owned_by", "edgelm");
    const srv_params *sp = srv_get_params(h->s);
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddNumberToObject(meta, "n_ctx_slot", sp->slot_ctx);
    cJSON_AddNumberToObject(meta, "n_slots", sp->n_slots);
    cJSON_AddStringToObject(meta, "chat_template", elm_chat_template_name(h->def->tmpl));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
    return send_json(conn, 200, o);
}

static enum MHD_Result metrics(srv_http *h, struct MHD_Connection *conn) {
    int busy, waiting;
    srv_load(h->s, &busy, &waiting);
    char *text = srv_metrics_render(h->p.metrics, busy, srv_get_params(h->s)->n_slots, waiting);
    if (!text) return send_error(conn, 500, "internal_error", "out of memory");
    const enum MHD_Result ret =
        send_body(conn, 200, "text/plain; version=0.0.4; charset=utf-8", text, strlen(text));
    free(text);
    return ret;
}

static enum MHD_Result tokenize(srv_http *h, struct MHD_Connection *conn, bool detok,
                                const conn_state *cs) {
    cJSON *o;
    char msg[512];
    const int rc = srv_tokenize(cs->body ? cs->body : "", cs->len, detok, &h->def->m->vocab, &o,
                                msg, sizeof msg);
    if (rc) return send_refusal(conn, rc, msg);
    return send_json(conn, 200, o);
}

/* A token's text as written in the vocabulary ("<s>"), or "" when the model has none. */
static const char *token_text(const elm_vocab *v, int32_t id) {
    return id >= 0 && id < v->n_tokens ? v->pieces[id] : "";
}

/* A float setting as it was written (0.8, not 0.800000011920929). */
static double shortest(float f) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", f);
    return strtod(buf, NULL);
}

/* GET /props: what llama-server's says that applies here (its field names), and edgelm's
 * recognised template under chat_template_name. */
static enum MHD_Result props(srv_http *h, struct MHD_Connection *conn) {
    const srv_defaults *d = h->def;
    const elm_vocab *v = &d->m->vocab;
    cJSON *o = cJSON_CreateObject();
    cJSON *g = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(g, "n_ctx", d->slot_ctx);
    cJSON *p = cJSON_AddObjectToObject(g, "params");
    cJSON_AddNumberToObject(p, "temperature", shortest(d->sampling.temp));
    cJSON_AddNumberToObject(p, "top_k", d->sampling.top_k);
    cJSON_AddNumberToObject(p, "top_p", shortest(d->sampling.top_p));
    cJSON_AddNumberToObject(p, "min_p", shortest(d->sampling.min_p));
    cJSON_AddNumberToObject(p, "repeat_penalty", shortest(d->sampling.repeat_penalty));
    cJSON_AddNumberToObject(p, "repeat_last_n", d->sampling.repeat_last_n);
    /* -1: a fresh seed per request (llama-server's "random seed" value) */
    cJSON_AddNumberToObject(p, "seed", d->seed_set ? (double)d->sampling.seed : -1);
    cJSON_AddNumberToObject(p, "n_predict", d->max_tokens > 0 ? d->max_tokens : -1);
    cJSON_AddBoolToObject(p, "ignore_eos", d->ignore_eos);
    cJSON_AddNumberToObject(o, "total_slots", srv_get_params(h->s)->n_slots);
    cJSON_AddStringToObject(o, "model_alias", h->p.model_id);
    cJSON_AddStringToObject(o, "model_path", h->p.model_path ? h->p.model_path : "");
    cJSON_AddStringToObject(o, "chat_template", v->chat_template ? v->chat_template : "");
    cJSON_AddStringToObject(o, "chat_template_name", elm_chat_template_name(d->tmpl));
    cJSON_AddStringToObject(o, "bos_token", token_text(v, v->bos_id));
    cJSON_AddStringToObject(o, "eos_token", token_text(v, v->eos_id));
    cJSON_AddStringToObject(o, "build_info", h->p.build_info ? h->p.build_info : "");
    cJSON_AddBoolToObject(o, "docs", d->docs != NULL); /* edgelm's: chat answers from --docs */
    return send_json(conn, 200, o);
}

static enum MHD_Result embeddings(srv_http *h, struct MHD_Connection *conn, const conn_state *cs) {
    cJSON *o;
    char msg[512];
    const int rc = srv_embeddings(h->emb, cs->body ? cs->body : "", cs->len, h->p.model_id, &o,
                                  msg, sizeof msg);
    return rc ? send_refusal(conn, rc, msg) : send_json(conn, 200, o);
}

static enum MHD_Result health(srv_http *h, struct MHD_Connection *conn) {
    int busy, waiting;
    srv_load(h->s, &busy, &waiting);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddNumberToObject(o, "slots_busy", busy);
    cJSON_AddNumberToObject(o, "slots_idle", srv_get_params(h->s)->n_slots - busy);
    cJSON_AddNumberToObject(o, "requests_waiting", waiting);
    return send_json(conn, 200, o);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
    (void)version;
    srv_http *h = cls;
    conn_state *cs = *con_cls;
    if (!cs) { /* first call: the headers */
        if (!(cs = calloc(1, sizeof *cs))) return MHD_NO;
        *con_cls = cs;
        __atomic_add_fetch(&h->inflight, 1, __ATOMIC_RELAXED);
        snprintf(cs->path, sizeof cs->path, "%s", url);
        snprintf(cs->method, sizeof cs->method, "%s", method);
        clock_gettime(CLOCK_REALTIME, &cs->arrived);
        cs->t0 = elm_now_ms();
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        cs->too_big = cl && strtoull(cl, NULL, 10) > h->p.max_body;
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        if (!cs->too_big && cs->len + *upload_size > h->p.max_body) cs->too_big = true;
        if (!cs->too_big) {
            if (cs->len + *upload_size + 1 > cs->cap) {
                size_t cap = (cs->len + *upload_size + 1) * 2;
                char *b = realloc(cs->body, cap);
                if (!b) return MHD_NO;
                cs->body = b;
                cs->cap = cap;
            }
            memcpy(cs->body + cs->len, upload, *upload_size);
            cs->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    const bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(url, "/health") && get) return health(h, conn);
    if (!strcmp(url, "/") && get)
        return send_body(conn, 200, "text/html; charset=utf-8", srv_page_html, srv_page_html_len);
    const bool chat = !strcmp(url, "/v1/chat/completions"), compl = !strcmp(url, "/v1/completions");
    const bool tok = !strcmp(url, "/tokenize"), detok = !strcmp(url, "/detokenize");
    const bool list = !strcmp(url, "/v1/models"), scrape = !strcmp(url, "/metrics");
    const bool about = !strcmp(url, "/props"), embed = !strcmp(url, "/v1/embeddings");
    const bool resp = !strcmp(url, "/v1/responses");
    if (!chat && !compl && !tok && !detok && !list && !scrape && !about && !embed && !resp)
        return send_error(conn, 404, "not_found", "no route %s %s", method, url);
    if (!authorized(h, conn))
        return send_error(conn, 401, "invalid_api_key",
                          "missing or wrong API key (send Authorization: Bearer KEY)");
    if (list || scrape || about) {
        if (!get) return send_error(conn, 405, "method_not_allowed", "%s %s: use GET", method, url);
        return list ? models(h, conn) : scrape ? metrics(h, conn) : props(h, conn);
    }
    if (!post) return send_error(conn, 405, "method_not_allowed", "%s %s: use POST", method, url);
    if (cs->too_big)
        return send_error(conn, 413, "request_too_large", "request body: over the limit of %zu bytes",
                          h->p.max_body);
    if (tok || detok) return tokenize(h, conn, detok, cs);
    if (embed) return embeddings(h, conn, cs);
    if (resp) return respond(h, conn, cs);
    return completion(h, conn, chat, false, cs->body ? cs->body : "", cs->len, cs);
}

/* The request is over (answered, or the client left): counted and logged, if a response was
 * queued (a client that leaves before has nothing to count). */
static void log_request(const srv_http *h, const conn_state *cs, unsigned status) {
    if (!h->p.log) return;
    const srv_access a = {.arrived = cs->arrived, .method = cs->method, .path = cs->path,
                          .status = status, .total_ms = elm_now_ms() - cs->t0,
                          .job = cs->has_job ? &cs->job : NULL};
    char *line = srv_access_line(&a, h->p.log_json);
    if (line) h->p.log(h->p.log_user, line);
    free(line);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)toe;
    srv_http *h = cls;
    conn_state *cs = *con_cls;
    if (cs) {
        const union MHD_ConnectionInfo *st =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
        if (st && st->http_status) {
            srv_metrics_request(h->p.metrics, cs->path, st->http_status);
            log_request(h, cs, st->http_status);
        }
        free(cs->body);
        __atomic_sub_fetch(&h->inflight, 1, __ATOMIC_RELAXED);
    }
    free(cs);
    *con_cls = NULL;
}

elm_status srv_http_start(srv_server *s, const srv_defaults *d, const srv_http_params *p,
                          srv_http **out, elm_error *err) {
    *out = NULL;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port)};
    if (inet_pton(AF_INET, p->host, &addr.sin_addr) != 1)
        return elm_errorf(err, ELM_ERR_ARG, "--host: '%s' is not an IPv4 address", p->host);
    if (p->port < 0 || p->port > 65535)
        return elm_errorf(err, ELM_ERR_ARG, "--port: %d out of range 0..65535", p->port);
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    const srv_params *sp = srv_get_params(s);
    *h = (srv_http){.s = s, .def = d, .p = *p,
                    .emb = srv_embedder_new(d->m, sp->slot_ctx, sp->n_threads, sp->type_k,
                                            sp->type_v, sp->ggml_rounding)};
    if (!h->emb) {
        free(h);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(h->run_tag, sizeof h->run_tag, "%lx",
             (unsigned long)now.tv_sec * 1000003ul ^ (unsigned long)now.tv_nsec ^
                 (unsigned long)getpid() << 20);
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                            (uint16_t)p->port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, h,
                            MHD_OPTION_CONNECTION_LIMIT, 256u, MHD_OPTION_CONNECTION_TIMEOUT,
                            120u, MHD_OPTION_END);
    if (!h->d) {
        srv_embedder_free(h->emb);
        free(h);
        return elm_errorf(err, ELM_ERR_IO, "cannot listen on %s:%d (port in use?)", p->host, p->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : p->port;
    *out = h;
    return ELM_OK;
}

int srv_http_port(const srv_http *h) { return h->port; }

void srv_http_stop(srv_http *h) {
    if (!h) return;
    /* the jobs have ended (srv_stop): let their responses go out, streams their last chunk and
     * [DONE], for up to 3 s, before the connections are closed */
    for (int i = 0; i < 300 && __atomic_load_n(&h->inflight, __ATOMIC_RELAXED) > 0; i++)
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    MHD_stop_daemon(h->d);
    srv_embedder_free(h->emb);
    free(h);
}
