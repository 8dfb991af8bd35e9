/* The HTTP face of the server, over libmicrohttpd (one thread per connection): the OpenAI routes
 * (POST /v1/chat/completions and /v1/completions, streamed as Server-Sent Events when asked;
 * POST /v1/embeddings, embeddings.h; GET /v1/models), llama-server's POST /tokenize, POST /detokenize and GET /props, GET /health,
 * GET /metrics (Prometheus text) and the chat page at GET /. Errors are OpenAI-shaped JSON,
 * {"error": {"message", "type", "code"}}: 400 bad field, 401 missing or wrong API key, 404 no
 * such route, 405 wrong method, 413 body over the limit, 503 queue full or stopping. */
#ifndef EDGELM_SERVER_HTTP_H
#define EDGELM_SERVER_HTTP_H

#include "server/request.h"
#include "server/scheduler.h"

typedef struct srv_http_params {
    const char *host;     /* IPv4 address to listen on ("127.0.0.1") */
    int port;             /* 0: any free port (srv_http_port tells which) */
    const char *api_key;  /* NULL: no authentication */
    size_t max_body;      /* request body limit in bytes */
    const char *model_id; /* the name /v1/models lists and responses carry */
    const char *model_path, *build_info; /* what GET /props says; NULL: "" */
    srv_metrics *metrics; /* borrowed: what GET /metrics renders; requests are counted in it */
    /* the access log: one line per answered request (access_log.h) handed to log, called from the
     * connection threads; NULL for none */
    void (*log)(void *user, const char *line);
    void *log_user;
    bool log_json;
} srv_http_params;

typedef struct srv_http srv_http;

/* Starts listening; requests go to s with the defaults d (both borrowed, must outlive the
 * listener; the strings of p too). ELM_ERR_ARG for a bad host, ELM_ERR_IO when the port cannot be
 * bound. */
elm_status srv_http_start(srv_server *s, const srv_defaults *d, const srv_http_params *p,
                          srv_http **out, elm_error *err);

/* The port listened on. */
int srv_http_port(const srv_http *h);

/* Waits (up to 3 s) for the requests in flight to be answered, then closes the connections and
 * frees. Call srv_stop first, so that their jobs end. */
void srv_http_stop(srv_http *h);

#endif
