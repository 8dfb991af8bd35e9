/* Answering from retrieved chunks (include/edgelm/rag.h, elm_docs_prompt_build): the hits as the
 * numbered sources of the "rag" chat preset's context, and as many of them as fit the context
 * beside the conversation and the reply. `edgelm chat --docs` and `edgelm serve --docs` both
 * build their prompts here, and a chat readies its conversation with them (elm_docs_turn_prepare). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "edgelm/model.h"
#include "edgelm/rag.h"

char *elm_docs_context(const elm_hit *hits, int32_t n) {
    elm_sbuf b = {0};
    elm_sb_puts(&b, "Numbered sources follow. Cite the ones your answer uses by their numbers, as "
                    "[1], [2].");
    if (n == 0) elm_sb_puts(&b, "\n\n(no document matched the question)");
    for (int32_t i = 0; i < n; i++) {
        elm_sb_printf(&b, "\n\n[%d] %s:%d-%d%s%s\n%s", (int)i + 1, elm_base_name(hits[i].file),
                      (int)hits[i].line_start, (int)hits[i].line_end, hits[i].heading[0] ? ", " : "",
                      hits[i].heading, hits[i].text);
    }
    return elm_sb_finish(&b);
}

/* The system message with the first n hits: the preset over their context, then the
 * conversation's own system text (NULL: none) after a blank line, as `chat --system` adds to a
 * preset. */
static elm_status system_with(const elm_hit *hits, int32_t n, const char *own, char **out,
                              elm_error *err) {
    *out = NULL;
    char *context = elm_docs_context(hits, n), *preset = NULL;
    float temp;
    if (!context) return elm_errorf(err, ELM_ERR_NOMEM, "documents: out of memory");
    elm_status st = elm_chat_preset("rag", NULL, NULL, context, &preset, &temp, err);
    free(context);
    if (st || !own || !*own) {
        *out = preset;
        return st;
    }
    elm_sbuf b = {0};
    elm_sb_printf(&b, "%s\n\n%s", preset, own);
    free(preset);
    return (*out = elm_sb_finish(&b)) ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "documents: out of memory");
}

/* The tokens of a rendered prompt as a chat prefills it: control tokens parsed, BOS in front
 * when the vocabulary adds one and the text does not open with it. */
static elm_status prompt_tokens(const elm_vocab *v, const char *text, int32_t *n, elm_error *err) {
    int32_t *ids = NULL;
    int64_t k = 0;
    elm_status st = elm_tokenize_alloc(v, text, strlen(text), false, true, &ids, &k, err);
    if (!st) {
        const bool bos = v->add_bos && v->bos_id >= 0 && (k == 0 || ids[0] != v->bos_id);
        *n = (int32_t)(k + bos);
    }
    free(ids);
    return st;
}

/* The conversation with the first n_docs hits: its system message, rendered text and tokens. */
typedef struct fit_args {
    const elm_vocab *v;
    elm_chat_template t;
    const elm_chat_msg *msgs;
    int32_t n_msgs;
    const char *tools;
    const elm_hit *hits;
} fit_args;

static elm_status try_docs(const fit_args *a, int32_t n_docs, elm_docs_prompt *p, elm_error *err) {
    memset(p, 0, sizeof *p);
    p->n_docs = n_docs;
    const bool own = a->n_msgs > 0 && !strcmp(a->msgs[0].role, "system");
    elm_status st = system_with(a->hits, n_docs, own ? a->msgs[0].content : NULL, &p->system, err);
    elm_chat_msg *m = st ? NULL : malloc(sizeof *m * (size_t)(a->n_msgs + 1));
    if (!st && !m) st = elm_errorf(err, ELM_ERR_NOMEM, "documents: out of memory");
    if (!st) {
        m[0] = (elm_chat_msg){.role = "system", .content = p->system};
        memcpy(m + 1, a->msgs + own, sizeof *m * (size_t)(a->n_msgs - own));
        st = elm_chat_render_tools(a->t, m, a->n_msgs + 1 - own, a->tools, true, &p->text, err);
    }
    free(m);
    if (!st) st = prompt_tokens(a->v, p->text, &p->n_tokens, err);
    if (st) elm_docs_prompt_free(p);
    return st;
}

elm_status elm_docs_prompt_build(const elm_vocab *v, elm_chat_template t, const elm_chat_msg *msgs,
                                 int32_t n_msgs, const char *tools, const elm_hit *hits,
                                 int32_t n_hits, int32_t n_ctx, int32_t n_reply,
                                 elm_docs_prompt *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    if (n_reply < 0 || n_hits < 0)
        return elm_errorf(err, ELM_ERR_ARG, "documents: reply budget %d or hit count %d below 0",
                          (int)n_reply, (int)n_hits);
    const fit_args a = {v, t, msgs, n_msgs, tools, hits};
    const int32_t budget = n_ctx - n_reply;
    /* the most hits that fit: all of them, or none, or the boundary found by halving (a prompt
     * only grows with each source added) */
    elm_docs_prompt best, p;
    elm_status st = try_docs(&a, n_hits, &best, err);
    if (st || best.n_tokens <= budget) {
        *out = best;
        return st;
    }
    elm_docs_prompt_free(&best);
    if ((st = try_docs(&a, 0, &best, err))) return st;
    if (best.n_tokens > budget) {
        st = elm_errorf(err, ELM_ERR_ARG, "the prompt has %d tokens without any document, but "
                        "the context holds %d with %d of them kept for the reply",
                        (int)best.n_tokens, (int)n_ctx, (int)n_reply);
        elm_docs_prompt_free(&best);
        return st;
    }
    int32_t hi = n_hits; /* does not fit */
    while (hi - best.n_docs > 1) {
        const int32_t mid = best.n_docs + (hi - best.n_docs) / 2;
        if ((st = try_docs(&a, mid, &p, err))) {
            elm_docs_prompt_free(&best);
            return st;
        }
        if (p.n_tokens <= budget) {
            elm_docs_prompt_free(&best);
            best = p;
        } else {
            elm_docs_prompt_free(&p);
            hi = mid;
        }
    }
    *out = best;
    return ELM_OK;
}

void elm_docs_prompt_free(elm_docs_prompt *p) {
    if (!p) return;
    free(p->system);
    free(p->text);
    memset(p, 0, sizeof *p);
}

elm_status elm_docs_turn_prepare(elm_chat *ch, const elm_context *c, const elm_docs_turn_params *p,
                                 const char *question, elm_docs_turn *out, elm_error *err) {
    memset(out, 0, sizeof *out);
    const elm_chat_msg msgs[2] = {{.role = "system", .content = p->system},
                                  {.role = "user", .content = question}};
    const int skip = p->system ? 0 : 1;
    elm_status st = elm_retrieve(p->ix, p->embed, question, p->mode, p->k, &out->hits,
                                 &out->n_hits, err);
    if (!st)
        st = elm_docs_prompt_build(&elm_context_model(c)->vocab, p->tmpl, msgs + skip, 2 - skip,
                                   NULL, out->hits, out->n_hits, elm_context_n_ctx(c), p->n_reply,
                                   &out->prompt, err);
    if (!st) st = elm_chat_set_system(ch, out->prompt.system, err);
    if (st) elm_docs_turn_free(out);
    return st;
}

void elm_docs_turn_free(elm_docs_turn *t) {
    if (!t) return;
    elm_hits_free(t->hits, t->n_hits);
    elm_docs_prompt_free(&t->prompt);
    memset(t, 0, sizeof *t);
}
