/* The serving core of `edgelm serve`: slots that each own a region of one context's KV cache, a
 * bounded FIFO of requests waiting for a slot, and a scheduler thread. Each scheduler step runs
 * ONE forward pass (elm_forward_seqs) over the next token of every generating slot plus a chunk
 * of the prompt of slots still prefilling (continuous batching: the weights are read once for all
 * streams, and a long prompt is cut into chunks so it does not stall the others). A request whose
 * prompt starts with what an idle slot still holds reuses those cached positions (prefix caching:
 * the second turn of a conversation prefills only its new tokens).
 *
 * Thread-safe: jobs are submitted, read and cancelled from the HTTP threads while the scheduler
 * runs; one mutex guards the queue, the slots' job pointers and the jobs' output. */
#ifndef EDGELM_SERVER_SCHEDULER_H
#define EDGELM_SERVER_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelm/chat.h"
#include "edgelm/context.h"
#include "edgelm/grammar.h"
#include "edgelm/sampler.h"
#include "server/metrics.h"

enum { SRV_MAX_STOP = 4, SRV_MAX_STOP_LEN = 64, SRV_MAX_TOP_LOGPROBS = 20, SRV_MAX_SLOTS = 64 };

typedef struct srv_params {
    int32_t n_slots;  /* conversations served at once (1..SRV_MAX_SLOTS) */
    int32_t slot_ctx; /* KV cache positions of each slot (prompt + reply) */
    int32_t n_batch;  /* most tokens per forward pass: decode tokens + one prefill chunk */
    int32_t n_queue;  /* requests that may wait for a slot; srv_submit refuses beyond */
    int32_t n_threads;
    elm_type type_k, type_v; /* KV cache types (elm_context_params) */
    bool ggml_rounding;
    int32_t eot_id;       /* the chat template's end-of-turn token (-1: none): with EOS, what
                           * ends a reply held to a grammar */
    int32_t preserved[ELM_TOOL_PRESERVED_MAX]; /* the template's tool-call control tokens
                           * (elm_chat_tool_preserved_ids): a job with tool_calls or channels
                           * decodes them as text and its grammar sees them so */
    int32_t n_preserved;
    srv_metrics *metrics; /* borrowed: counts prompts, tokens and latencies; NULL for none */
} srv_params;

/* What one request asks for. */
typedef struct srv_job_params {
    elm_sampler_params sampling;
    int32_t max_tokens;   /* > 0 */
    bool ignore_eos;      /* go on past EOS / end-of-turn (benchmarks) */
    int32_t eot_id;       /* a second token that ends the reply (the chat template's), or -1 */
    int n_stop;           /* stop strings: the reply ends before the first occurrence */
    char stop[SRV_MAX_STOP][SRV_MAX_STOP_LEN + 1];
    elm_grammar *grammar; /* the reply follows it (response_format, grammar), or NULL; owned by
                           * the job once srv_job_new is called */
    bool tool_calls;      /* the reply may hold tool calls (request tools) */
    bool channels;        /* the reply is written in channels (elm_chat_template_channels): its
                           * markers decoded as their text, tools or not */
    char trigger[32];     /* with the grammar: the text that starts it ("" from the start) */
    bool logprobs;        /* keep each token's log-probability ... */
    int32_t top_logprobs; /* ... and its most likely alternatives' (0..SRV_MAX_TOP_LOGPROBS) */
} srv_job_params;

/* A generated token's log-probability under the model (the log-softmax of its logits, before
 * the penalty, temperature and truncation of sampling) and the most likely tokens' there. */
typedef struct srv_logprob {
    int32_t id;
    float logprob;
    size_t text_start, text_end; /* the reply's length in bytes before and after its text */
    int32_t n_top;
    int32_t top_id[SRV_MAX_TOP_LOGPROBS];
    float top_logprob[SRV_MAX_TOP_LOGPROBS];
} srv_logprob;

typedef struct srv_job srv_job;
typedef struct srv_server srv_server;

/* What a finished job reports (valid once srv_take said done). */
typedef struct srv_job_result {
    int32_t prompt_tokens, cached_tokens, completion_tokens;
    const char *finish_reason; /* "stop", "length", "cancelled" or "error" */
    double prefill_ms;         /* from the slot taking the job to the first token */
    double ttft_ms;            /* from submission to the first token */
    double decode_ms;          /* first token to the last */
    int32_t slot;              /* the slot that ran it, or -1 when it never got one */
} srv_job_result;

/* Creates the server's context (n_slots · slot_ctx cache positions) on model m (borrowed, must
 * outlive the server) and starts the scheduler thread. ELM_ERR_ARG for a bad parameter, and
 * elm_context_new's errors. */
elm_status srv_new(const elm_model *m, const srv_params *p, srv_server **out, elm_error *err);

/* Stops the scheduler: queued and running jobs finish with "cancelled" (their readers wake);
 * later submissions are refused. Idempotent. */
void srv_stop(srv_server *s);

/* srv_stop, then frees. Every job must have been released before (the HTTP side first). */
void srv_free(srv_server *s);

/* Parameters the server was made with. */
const srv_params *srv_get_params(const srv_server *s);

/* A job for prompt [n_prompt] (copied; 0 < n_prompt < slot_ctx); it takes p->grammar (freed with
 * the job, or here when out of memory). NULL when out of memory. */
srv_job *srv_job_new(const int32_t *prompt, int32_t n_prompt, const srv_job_params *p);

typedef enum { SRV_OK = 0, SRV_FULL, SRV_STOPPING } srv_submit_status;

/* Queues job for a slot. On SRV_OK the server holds a reference until the job is done; the caller
 * keeps its own and must srv_job_release it. SRV_FULL when n_queue jobs already wait for a slot,
 * SRV_STOPPING after srv_stop. */
srv_submit_status srv_submit(srv_server *s, srv_job *job);

/* The reply text after byte `from` that is final (not possibly the start of a stop string, whole
 * UTF-8 characters), as a malloc'd copy in *text [*len] (NULL when none), and whether the job is
 * done. With wait, blocks until there is new text, the job is done or timeout_ms passes.
 * Returns false when out of memory. */
bool srv_take(srv_server *s, srv_job *job, size_t from, bool wait, int timeout_ms, char **text,
              size_t *len, bool *done);

/* Blocks until one of jobs [n] is done or has final text (as srv_take says it) after its byte
 * from[i], or timeout_ms passes: a stream of several choices waits for whichever moves first. */
void srv_wait_any(srv_server *s, srv_job *const *jobs, const size_t *from, int n, int timeout_ms);

/* The log-probabilities (params.logprobs) of the job's tokens from the index `first` on whose
 * text ends within the reply's first `upto` bytes, as a malloc'd copy in *out [*n] (NULL when
 * none). Returns false when out of memory. */
bool srv_take_logprobs(srv_server *s, srv_job *job, int32_t first, size_t upto, srv_logprob **out,
                       int32_t *n);

/* The result of a done job. */
srv_job_result srv_job_result_get(srv_server *s, srv_job *job);

/* Asks the scheduler to drop the job (client gone): its slot is freed at the next step. */
void srv_cancel(srv_server *s, srv_job *job);

/* Drops the caller's reference. */
void srv_job_release(srv_server *s, srv_job *job);

/* Slots busy and requests waiting, for /health. */
void srv_load(srv_server *s, int *busy, int *waiting);

#endif
