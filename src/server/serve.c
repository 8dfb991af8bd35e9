/* elm_server (include/edgelm/server.h): the scheduler (server.h) and its HTTP face (http.h)
 * started and stopped together. */
#include <stdlib.h>

#include "edgelm/server.h"
#include "server/http.h"

struct elm_server {
    srv_server *s;
    srv_http *h;
    srv_defaults def;
    srv_metrics *metrics;
    srv_docs *docs; /* --docs, or NULL */
};

elm_status elm_server_start(const elm_model *m, const elm_server_params *p, elm_server **out,
                            elm_error *err) {
    *out = NULL;
    elm_server *e = calloc(1, sizeof *e);
    if (!e || !(e->metrics = srv_metrics_new())) {
        free(e);
        return elm_errorf(err, ELM_ERR_NOMEM, "server: out of memory");
    }
    if (p->docs && p->docs_k < 1)
        return elm_errorf(err, ELM_ERR_ARG, "docs_k %d: want at least 1", (int)p->docs_k);
    const int32_t eot = elm_chat_special_id(&m->vocab, elm_chat_template_eot(p->tmpl));
    srv_params sp = {.n_slots = p->n_slots, .slot_ctx = p->slot_ctx, .n_batch = p->n_batch,
                           .n_queue = p->n_queue, .n_threads = p->n_threads, .type_k = p->type_k,
                           .type_v = p->type_v, .ggml_rounding = p->ggml_rounding,
                           .eot_id = eot, .metrics = e->metrics};
    sp.n_preserved = elm_chat_tool_preserved_ids(p->tmpl, &m->vocab, sp.preserved);
    if (p->docs && !(e->docs = srv_docs_new(p->docs, p->docs_ctx, p->docs_mode, p->docs_k))) {
        srv_metrics_free(e->metrics);
        free(e);
        return elm_errorf(err, ELM_ERR_NOMEM, "server: out of memory");
    }
    elm_status st = srv_new(m, &sp, &e->s, err);
    if (st) {
        srv_docs_free(e->docs);
        srv_metrics_free(e->metrics);
        free(e);
        return st;
    }
    e->def = (srv_defaults){.m = m, .tmpl = p->tmpl,
                            .eot_id = eot,
                            .sampling = p->sampling, .seed_set = p->seed_set,
                            .max_tokens = p->max_tokens, .slot_ctx = p->slot_ctx,
                            .n_slots = p->n_slots,
                            .ignore_eos = p->ignore_eos, .docs = e->docs};
    const srv_http_params hp = {.host = p->host, .port = p->port, .api_key = p->api_key,
                                .max_body = p->max_body, .model_id = p->model_id,
                                .model_path = p->model_path, .build_info = p->build_info,
                                .metrics = e->metrics, .log = p->log, .log_user = p->log_user,
                                .log_json = p->log_json};
    if ((st = srv_http_start(e->s, &e->def, &hp, &e->h, err))) {
        srv_free(e->s);
        srv_docs_free(e->docs);
        srv_metrics_free(e->metrics);
        free(e);
        return st;
    }
    *out = e;
    return ELM_OK;
}

int elm_server_port(const elm_server *e) { return srv_http_port(e->h); }

void elm_server_stop(elm_server *e) {
    if (!e) return;
    srv_stop(e->s);     /* requests end first, so the connection threads can finish */
    srv_http_stop(e->h);
    srv_free(e->s);
    srv_docs_free(e->docs);       /* after the HTTP threads, which retrieve */
    srv_metrics_free(e->metrics); /* after both: the HTTP threads and the scheduler count in it */
    free(e);
}
