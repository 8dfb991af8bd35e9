/* A local OpenAI-compatible HTTP server over a loaded model (what `edgelm serve` runs): POST
 * /v1/chat/completions and /v1/completions (streamed as Server-Sent Events when asked), POST
 * /v1/embeddings (edgelm/embed.h's vectors, on a context of their own), GET /v1/models, llama-server's POST /tokenize, POST /detokenize and GET /props, GET /health, GET
 * /metrics (Prometheus text), and a chat page at GET /. Up to n_slots conversations are served at
 * once, their next tokens batched into one forward pass per step (continuous batching, with
 * prompts prefilled in chunks between decode steps); a request that begins with what a slot
 * still holds reuses that KV cache (prefix caching). HTTP is libmicrohttpd's, one thread per
 * connection; the server's own threads are the scheduler and the context's pool. With a document
 * index (docs), each chat completion is answered from the chunks its last user message retrieves,
 * which come back as "edgelm": {"citations": [...]} (src/server/docs.h, docs/rag.md). */
#ifndef EDGELM_SERVER_H
#define EDGELM_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/chat.h"
#include "edgelm/rag.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_server_params {
    /* listening */
    const char *host;      /* IPv4 address, e.g. "127.0.0.1" (this machine only) */
    int port;              /* 0: any free port (elm_server_port tells which) */
    const char *api_key;   /* non-NULL: every route but /health needs "Authorization: Bearer KEY" */
    size_t max_body;       /* request body limit in bytes (413 beyond) */
    const char *model_id;  /* the name /v1/models lists */
    const char *model_path, *build_info; /* what GET /props says ("edgelm 0.1.0"); NULL: "" */
    /* access log: one line per answered request (method, path, status, tokens, times, slot),
     * without its newline, handed to log from the connection threads (so log must be
     * thread-safe); NULL: none. JSON objects when log_json, else text for people. */
    void (*log)(void *user, const char *line);
    void *log_user;
    bool log_json;
    /* serving */
    int32_t n_slots;       /* conversations at once (1..64) */
    int32_t slot_ctx;      /* KV cache positions of each slot (prompt + reply) */
    int32_t n_batch;       /* most tokens per forward pass (> n_slots) */
    int32_t n_queue;       /* requests that may wait for a slot (503 beyond) */
    int32_t n_threads;
    elm_type type_k, type_v;
    bool ggml_rounding;
    /* what requests get when they do not say */
    elm_chat_template tmpl;
    elm_sampler_params sampling;
    bool seed_set;         /* use sampling.seed; else a fresh seed per request */
    int32_t max_tokens;    /* 0: until the slot's context is full */
    bool ignore_eos;
    /* answering from documents: chat completions get the k best chunks of the index docs (NULL:
     * none) by docs_mode, as many as fit the slot beside the reply (elm_docs_prompt_build) */
    elm_index *docs;       /* borrowed, used under the server's lock */
    elm_context *docs_ctx; /* a context of the index's embedding model for questions (borrowed;
                            * NULL for BM25) */
    elm_search_mode docs_mode;
    int32_t docs_k;
} elm_server_params;

typedef struct elm_server elm_server;

/* Starts serving model m (borrowed: it must outlive the server; so must p's strings).
 * ELM_ERR_ARG for a bad parameter or host, ELM_ERR_IO when the port cannot be bound, and the
 * context's errors. */
elm_status elm_server_start(const elm_model *m, const elm_server_params *p, elm_server **out,
                            elm_error *err);

/* The TCP port it listens on. */
int elm_server_port(const elm_server *s);

/* Stops gracefully: running and queued requests end (streams get their last chunk), connections
 * close, then everything is freed. NULL is a no-op. */
void elm_server_stop(elm_server *s);

#ifdef __cplusplus
}
#endif
#endif
