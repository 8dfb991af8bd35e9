/* edgelm serve: a local OpenAI-compatible HTTP server with a chat page (src/server). It listens
 * until SIGINT or SIGTERM, then lets the connections close and exits 0. Its access log, one line
 * per request, goes to stderr. With --docs, chat completions are answered from a document index
 * (docs.h opens it and its embedding model). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"
#include "docs.h"
#include "edgelm/chat.h"
#include "edgelm/server.h"
#include "gen_opts.h"
#include "opts.h"

/* The access log's sink: one write per line, so that lines from concurrent requests never mix. */
static void log_line(void *user, const char *line) {
    (void)user;
    fprintf(stderr, "%s\n", line);
}

int cmd_serve(int argc, char **argv) {
    const char *model = NULL, *host = "127.0.0.1", *api_key = NULL, *tmpl_name = "auto";
    const char *tokenizer = NULL, *log_format = "text", *docs_db = NULL;
    long port = 8080, parallel = 1, queue = 16, max_body = 1 << 20, docs_k = 5;
    gen_opts o;
    gen_opts_init(&o);
    o.gp.n_predict = 0; /* not given: until the slot's context is full */
    const cli_opt opts[] = {
        CLI_OPT_MODEL(&model),
        {"--host", "ADDR", CLI_TEXT, &host, 0, 0, "IPv4 address to listen on (default 127.0.0.1: this machine only)", 0},
        {"--port", "N", CLI_INT, &port, 0, 65535, "TCP port (default 8080; 0 = any free port, printed at start)", 0},
        {"-np, --parallel", "N", CLI_INT, &parallel, 1, 64, "conversations served at once, batched into one forward pass\nper step (default 1)", 0},
        {"--queue", "N", CLI_INT, &queue, 0, 4096, "requests that may wait for a slot; beyond, 503 (default 16)", 0},
        {"--api-key", "KEY", CLI_TEXT, &api_key, 0, 0, "require 'Authorization: Bearer KEY' (all but /health)", 0},
        {"--max-body", "N", CLI_INT, &max_body, 1, 1L << 30, "request body limit in bytes (default 1048576; beyond, 413)", 0},
        {"--log-format", "FMT", CLI_TEXT, &log_format, 0, 0, "access log on stderr, one line per request: text (default),\njson (one object per line) or none", 0},
        {"--template", "NAME", CLI_TEXT, &tmpl_name, 0, 0, "auto (default: from the model) or a built-in template's name", 0},
        CLI_OPT_TOKENIZER(&tokenizer),
        {"--docs", "DB", CLI_TEXT, &docs_db, 0, 0, "answer chat completions from this document index (edgelm index):\nthe last user message's best chunks in the system message,\ncited in the response's \"edgelm\": {\"citations\"}", 0},
        {"--docs-k", "N", CLI_INT, &docs_k, 1, 100, "chunks retrieved per request (default 5; those that do not fit\nthe slot beside the reply are left out)", 0},
        {0}};
    const cli_spec spec = {
        "serve", "-m MODEL [options]", NULL, CLI_TABLES(opts, gen_opts_table(&o)),
        "Here -c is the context of each slot, -n the default max_tokens (default: until the\n"
        "slot's context is full), -b the most tokens per forward pass (default 512), and the\n"
        "sampling options are the defaults of requests that do not set them. --draft, --lookup\n"
        "and context shifting are not used by the server.\n"
        "endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,\n"
        "           POST /tokenize, POST /detokenize, GET /props, GET /metrics (Prometheus text),\n"
        "           GET / (chat page)",
        NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (!model) return cli_fail("serve: -m MODEL is required (see edgelm serve --help)");
    if (o.draft || o.lookup)
        return cli_fail("serve: --draft and --lookup are not supported by the server");
    if (api_key && !*api_key) return cli_fail("--api-key: empty key");
    const bool log_json = !strcmp(log_format, "json"), log_none = !strcmp(log_format, "none");
    if (!log_json && !log_none && strcmp(log_format, "text"))
        return cli_fail("--log-format: invalid value '%s' (expected text, json or none)", log_format);
    elm_chat_template tmpl = ELM_TEMPLATE_PLAIN;
    if (strcmp(tmpl_name, "auto") != 0 && !elm_chat_template_parse(tmpl_name, &tmpl))
        return cli_fail("--template: invalid value '%s' (expected auto, %s)", tmpl_name,
                        elm_chat_template_names());

    /* the signals are taken by sigwait below: every thread started from here on blocks them */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    elm_server *srv = NULL;
    elm_model *m = NULL;
    cli_docs docs = {0};
    const cli_docs_opts dopts = {.db = docs_db, .threads = o.n_threads};
    if (docs_db && !cli_docs_open(&docs, &dopts)) goto done;
    if (!(m = cli_load_model_to_run(model, tokenizer, gen_opts_mmap(&o)))) goto done;
    if (!strcmp(tmpl_name, "auto")) tmpl = elm_chat_template_detect(m->vocab.chat_template);
    long slot_ctx = o.n_ctx;
    if (slot_ctx == 0)
        slot_ctx = m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    long n_batch = o.n_batch ? o.n_batch : 512;
    if (n_batch <= parallel) n_batch = parallel + 1;
    const char *model_id = elm_base_name(model);
    o.gp.sampling.seed = (uint64_t)(o.seed >= 0 ? o.seed : 0);
    const elm_server_params sp = {
        .host = host, .port = (int)port, .api_key = api_key, .max_body = (size_t)max_body,
        .model_id = model_id, .model_path = model, .build_info = "edgelm " EDGELM_VERSION,
        .n_slots = (int32_t)parallel, .slot_ctx = (int32_t)slot_ctx,
        .n_batch = (int32_t)n_batch, .n_queue = (int32_t)queue, .n_threads = (int32_t)o.n_threads,
        .type_k = o.type_k, .type_v = o.type_v, .ggml_rounding = o.ggml_rounding, .tmpl = tmpl,
        .sampling = o.gp.sampling, .seed_set = o.seed >= 0, .max_tokens = o.gp.n_predict,
        .ignore_eos = o.gp.ignore_eos, .log = log_none ? NULL : log_line, .log_json = log_json,
        .docs = docs.ix, .docs_ctx = docs.ctx, .docs_mode = docs.mode, .docs_k = (int32_t)docs_k};
    elm_error err;
    elm_error_clear(&err);
    if (elm_server_start(m, &sp, &srv, &err)) {
        cli_fail("%s: %s", model, err.msg);
        goto done;
    }
    char kv[96];
    snprintf(kv, sizeof kv, "KV cache %s/%s %.2f MiB", elm_type_get(o.type_k)->name,
             elm_type_get(o.type_v)->name,
             elm_kv_cache_bytes(&m->hp, (int32_t)(slot_ctx * parallel), o.type_k, o.type_v) / 1048576.0);
    char docs_note[1100] = "";
    if (docs_db)
        snprintf(docs_note, sizeof docs_note, " | documents %s (%s, k %ld)", docs_db,
                 elm_search_mode_name(docs.mode), docs_k);
    fprintf(stderr, "edgelm: serving %s on http://%s:%d | %ld slots of %ld tokens | template %s | %s%s%s\n",
            model_id, host, elm_server_port(srv), parallel, slot_ctx, elm_chat_template_name(tmpl),
            kv, docs_note, api_key ? " | API key required" : "");
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fprintf(stderr, "edgelm: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
done:
    elm_server_stop(srv);
    elm_model_free(m);
    cli_docs_close(&docs);
    return rc;
}
