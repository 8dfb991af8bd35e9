/* Chat requests answered from a document index (see docs.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/docs.h"
#include "server/fields.h"

struct srv_docs {
    pthread_mutex_t lock; /* over ix and c */
    elm_index *ix;
    elm_context *c;
    elm_search_mode mode;
    int32_t k;
};

srv_docs *srv_docs_new(elm_index *ix, elm_context *c, elm_search_mode mode, int32_t k) {
    srv_docs *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    pthread_mutex_init(&d->lock, NULL);
    d->ix = ix;
    d->c = c;
    d->mode = mode;
    d->k = k;
    return d;
}

void srv_docs_free(srv_docs *d) {
    if (!d) return;
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* The status of a library error: the request's (400, naming field) when the error is of kind
 * `theirs`, else the server's (500: memory, an index that cannot be read). */
static int refusal(const elm_error *err, bool theirs, const char *field, char *msg, size_t cap) {
    if (theirs) return srv_bad(msg, cap, "%s: %s", field, err->msg);
    srv_bad(msg, cap, "documents: %s", err->msg);
    return 500;
}

int srv_docs_prompt(srv_docs *d, const elm_vocab *v, elm_chat_template t, const elm_chat_msg *msgs,
                    int32_t n, const char *tools, int32_t slot_ctx, int32_t n_reply, char **text,
                    char **citations, char *msg, size_t cap) {
    *text = *citations = NULL;
    int32_t q = n - 1;
    while (q >= 0 && strcmp(msgs[q].role, "user")) q--;
    elm_hit *hits = NULL;
    int32_t n_hits = 0;
    elm_error err;
    int rc = 0;
    if (q >= 0) {
        pthread_mutex_lock(&d->lock);
        const elm_status st = elm_retrieve(d->ix, d->c, msgs[q].content, d->mode, d->k, &hits,
                                           &n_hits, &err);
        pthread_mutex_unlock(&d->lock);
        char field[48];
        snprintf(field, sizeof field, "messages[%d].content", (int)q);
        if (st) return refusal(&err, st == ELM_ERR_ARG, field, msg, cap);
    }
    elm_docs_prompt p;
    const elm_status st = elm_docs_prompt_build(v, t, msgs, n, tools, hits, n_hits, slot_ctx,
                                                n_reply, &p, &err);
    if (st) rc = refusal(&err, st != ELM_ERR_NOMEM, "messages", msg, cap);
    else if (!(*citations = elm_hits_json(hits, p.n_docs, "index")))
        rc = 500;
    if (!rc) {
        *text = p.text;
        p.text = NULL;
    }
    elm_docs_prompt_free(&p);
    elm_hits_free(hits, n_hits);
    return rc;
}
