/* Private: what the app API's handles hold. */
#ifndef EDGELM_API_API_H
#define EDGELM_API_API_H

#include <stdbool.h>

#include "edgelm/chat.h"
#include "edgelm/grammar.h"
#include "edgelm/context.h"
#include "edgelm/edgelm.h"
#include "edgelm/generate.h"
#include "edgelm/model.h"
#include "edgelm/session.h"
#include "edgelm/speculative.h"
#include "edgelm/vocab.h"

struct edgelm_model {
    elm_model *m;
};

struct edgelm_ctx {
    edgelm_model *model;
    elm_context *c, *draft;
    elm_spec_params spec;
    elm_chat *chat;
    elm_chat_template tmpl;
    char *system;    /* the app's system prompt (copied), or NULL */
    bool docs_system; /* the chat's system message is an edgelm_chat_docs one */
    char *citations; /* edgelm_last_citations (malloc'd), NULL: "[]" */
    elm_grammar *grammar;
    elm_gen_stats gs;
    elm_error err;
};

typedef elm_status (*edgelm_turn_fn)(elm_chat *, const char *, elm_token_cb, void *,
                                     elm_gen_stats *, elm_error *);

/* One turn on h: checks n_predict, then streams turn's reply to fn (edgelm_chat's steps). Clears
 * h's error first. */
int edgelm_ctx_run(edgelm_ctx *h, edgelm_turn_fn turn, const char *text, int32_t n_predict,
                   edgelm_token_fn fn, void *user);

/* Copies msg into errbuf [errcap] (NUL-terminated, truncated); no-op without a buffer. */
void edgelm_error_out(char *errbuf, size_t errcap, const char *msg);

#endif
