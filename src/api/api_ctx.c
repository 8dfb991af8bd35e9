/* App API (edgelm.h): contexts, each a KV cache, a draft cache when speculating, and a
 * conversation (elm_chat) with its sampler settings; errors stay with the handle. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "api/api.h"

edgelm_params edgelm_default_params(void) {
    const elm_sampler_params s = elm_sampler_defaults();
    return (edgelm_params){.temp = s.temp, .top_k = s.top_k, .top_p = s.top_p, .min_p = s.min_p,
                           .repeat_penalty = s.repeat_penalty, .repeat_last_n = s.repeat_last_n,
                           .draft_max = 8, .draft_min_p = 0.5f};
}

static bool cache_type(const char *name, elm_type *out) {
    if (!name) {
        *out = ELM_TYPE_F32;
        return true;
    }
    return elm_kv_type_from_name(name, out);
}

static elm_status setup(edgelm_ctx *h, const edgelm_params *p, elm_error *err) {
    const elm_model *m = h->model->m;
    elm_context_params cp = {.n_ctx = p->n_ctx, .n_batch = p->n_batch, .n_threads = p->n_threads};
    if (!cp.n_ctx) cp.n_ctx = m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    if (!cache_type(p->cache_type_k, &cp.type_k) || !cache_type(p->cache_type_v, &cp.type_v))
        return elm_errorf(err, ELM_ERR_ARG, "cache type '%s'/'%s': expected " ELM_KV_TYPE_NAMES,
                          p->cache_type_k ? p->cache_type_k : "f32",
                          p->cache_type_v ? p->cache_type_v : "f32");
    elm_status st = elm_context_new(m, &cp, &h->c, err);
    if (st) return st;

    elm_chat_params chp = {.system = p->system_prompt};
    if (!p->chat_template || !strcmp(p->chat_template, "auto")) {
        if (!elm_chat_template_recognise(m->vocab.chat_template, &chp.tmpl))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: chat template not recognised (set "
                              "chat_template to one of: %s)", m->path, elm_chat_template_names());
    } else if (!elm_chat_template_parse(p->chat_template, &chp.tmpl)) {
        return elm_errorf(err, ELM_ERR_ARG, "unknown chat template '%s' (%s)", p->chat_template,
                          elm_chat_template_names());
    }
    if (p->no_think) chp.tmpl = elm_chat_template_thinking(chp.tmpl, false);
    h->tmpl = chp.tmpl;
    if (p->system_prompt && !(h->system = strdup(p->system_prompt)))
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    chp.gen.n_predict = 1; /* set per call */
    chp.gen.n_keep = p->n_keep;
    chp.gen.no_context_shift = p->no_context_shift != 0;
    chp.gen.sampling = (elm_sampler_params){.temp = p->temp, .top_k = p->top_k, .top_p = p->top_p,
                                            .min_p = p->min_p, .repeat_penalty = p->repeat_penalty,
                                            .repeat_last_n = p->repeat_last_n, .seed = p->seed};
    if (p->grammar && p->json_schema)
        return elm_errorf(err, ELM_ERR_ARG, "grammar and json_schema: give one of them");
    if ((p->grammar || p->json_schema) && (p->draft || p->lookup > 0))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "a grammar or JSON schema cannot be combined "
                                                    "with speculative decoding (draft, lookup)");
    if (p->grammar || p->json_schema) {
        char *gbnf = NULL;
        const char *text = p->grammar;
        if (p->json_schema &&
            (st = elm_json_schema_to_gbnf(p->json_schema, strlen(p->json_schema), "json_schema",
                                          &gbnf, err)))
            return st;
        st = elm_grammar_parse(gbnf ? gbnf : text, strlen(gbnf ? gbnf : text),
                               gbnf ? "json_schema" : "grammar", &h->grammar, err);
        free(gbnf);
        if (st) return st;
        chp.gen.grammar = h->grammar;
    }
    if (p->draft || p->lookup > 0) {
        if (p->draft && (st = elm_context_new(p->draft->m, &cp, &h->draft, err))) return st;
        h->spec = (elm_spec_params){.draft = h->draft, .draft_max = p->draft_max,
                                    .draft_min_p = p->draft_min_p, .lookup = p->lookup};
        chp.spec = &h->spec;
    }
    return elm_chat_new(h->c, &chp, &h->chat, err);
}

int edgelm_ctx_new(edgelm_model *m, const edgelm_params *p, edgelm_ctx **out, char *errbuf,
                   size_t errcap) {
    *out = NULL;
    edgelm_ctx *h = calloc(1, sizeof *h);
    if (!h) {
        edgelm_error_out(errbuf, errcap, "out of memory");
        return ELM_ERR_NOMEM;
    }
    h->model = m;
    elm_error_clear(&h->err);
    const elm_status st = setup(h, p, &h->err);
    edgelm_error_out(errbuf, errcap, h->err.msg);
    if (st) {
        edgelm_ctx_free(h);
        return st;
    }
    *out = h;
    return ELM_OK;
}

void edgelm_ctx_free(edgelm_ctx *h) {
    if (!h) return;
    elm_chat_free(h->chat);
    elm_grammar_free(h->grammar);
    elm_context_free(h->draft);
    elm_context_free(h->c);
    free(h->system);
    free(h->citations);
    free(h);
}

typedef struct bridge {
    edgelm_token_fn fn;
    void *user;
} bridge;

/* elm_token_cb -> edgelm_token_fn: the library's pieces are NUL-terminated already. */
static int forward_piece(const char *text, size_t len, int32_t id, void *user) {
    (void)len;
    const bridge *b = user;
    return b->fn ? b->fn(text, id, b->user) : 0;
}

int edgelm_ctx_run(edgelm_ctx *h, edgelm_turn_fn turn, const char *text, int32_t n_predict,
               edgelm_token_fn fn, void *user) {
    elm_error_clear(&h->err);
    if (n_predict <= 0) return elm_errorf(&h->err, ELM_ERR_ARG, "n_predict must be > 0");
    elm_chat_set_n_predict(h->chat, n_predict);
    bridge b = {fn, user};
    return turn(h->chat, text, forward_piece, &b, &h->gs, &h->err);
}

int edgelm_chat(edgelm_ctx *h, const char *user_message, int32_t n_predict, edgelm_token_fn fn,
                void *user) {
    return edgelm_ctx_run(h, elm_chat_turn, user_message, n_predict, fn, user);
}

int edgelm_generate(edgelm_ctx *h, const char *text, int32_t n_predict, edgelm_token_fn fn,
                    void *user) {
    return edgelm_ctx_run(h, elm_chat_append, text, n_predict, fn, user);
}

const char *edgelm_last_reply(const edgelm_ctx *h) { return elm_chat_reply(h->chat); }

void edgelm_reset(edgelm_ctx *h) {
    elm_chat_reset(h->chat);
    free(h->citations);
    h->citations = NULL;
    if (h->docs_system && !elm_chat_set_system(h->chat, h->system, &h->err))
        h->docs_system = false; /* copying the prompt back can only fail for want of memory */
    if (h->draft) elm_context_reset(h->draft);
    memset(&h->gs, 0, sizeof h->gs);
}

int edgelm_save(edgelm_ctx *h, const char *path) {
    elm_error_clear(&h->err);
    return elm_chat_save(h->chat, path, &h->err);
}

int edgelm_load(edgelm_ctx *h, const char *path) {
    elm_error_clear(&h->err);
    return elm_chat_load(h->chat, path, &h->err);
}

edgelm_stats edgelm_get_stats(const edgelm_ctx *h) {
    const elm_gen_stats *g = &h->gs;
    struct rusage ru;
    const double rss = getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss / 1024.0 : 0;
    const int32_t after_first = g->generated_tokens > 1 ? g->generated_tokens - 1 : 0;
    return (edgelm_stats){.prompt_tokens = g->prompt_tokens, .tokens = g->generated_tokens,
                          .prefill_ms = g->prefill_ms, .ttft_ms = g->ttft_ms,
                          .decode_avg_ms = after_first ? g->decode_ms / after_first : 0,
                          .tokens_per_sec = g->decode_tps, .peak_rss_mib = rss,
                          .kv_cache_bytes = elm_context_kv_bytes(h->c),
                          .acceptance_rate = elm_chat_spec_stats(h->chat)->acceptance_rate};
}

const char *edgelm_last_error(const edgelm_ctx *h) { return h->err.msg; }

const char *edgelm_last_citations(const edgelm_ctx *h) {
    return h->citations ? h->citations : "[]";
}
