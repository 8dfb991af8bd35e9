/* A conversation kept in a context's KV cache (see chat.h).
 *
 * The cache always holds the conversation so far, except possibly the reply's last token (the
 * generation loop never feeds the token it stops on): that one is kept as `pending` and goes in
 * front of the next turn's tokens. A turn's text comes from elm_chat_render_turn (the close of the
 * previous reply, the user message, the generation prompt), so only it is tokenized and prefilled.
 * Replies stop at the template's end-of-turn token or at EOS, neither of which is fed: the next
 * turn's text starts with the end-of-turn marker itself. */
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "edgelm/chat.h"
#include "edgelm/session.h"

struct elm_chat {
    elm_context *c;
    const elm_vocab *vocab;
    elm_chat_template tmpl;
    char *system;
    elm_gen_params gen;
    const elm_spec_params *spec;
    elm_chat_opts opts; /* the turns' rendering */
    int32_t eot_id;  /* the template's end-of-turn token, or -1 */
    elm_grammar_vocab *gv; /* with gen.grammar: the vocabulary ending at EOS or end of turn,
                            * gen.preserved's tokens as their text */
    int32_t pending; /* last reply token not in the cache, or -1 */
    int32_t n_keep;  /* tokens a context shift keeps */
    bool keep_opening; /* n_keep is the opening's tokens (elm_chat_params.gen.n_keep 0) */
    elm_sbuf reply; /* the last reply's text */
    elm_spec_stats spec_stats;
};

int32_t elm_chat_special_id(const elm_vocab *v, const char *text) {
    int32_t ids[2];
    if (!text || elm_tokenize_special(v, text, strlen(text), false, true, ids, 2, NULL) != 1)
        return -1;
    return v->types[ids[0]] == ELM_TOKEN_NORMAL ? -1 : ids[0];
}

/* Tokenizes a turn's text with its control tokens, after the held-back token if any; the first
 * turn starts with BOS when the model wants one and the template's text does not already open
 * with it. *ids [*n] is malloc'd (also on failure: the caller frees it). */
static elm_status tokenize_turn(const elm_chat *ch, const char *text, bool first, int32_t **ids,
                                int64_t *n_ids, elm_error *err) {
    int32_t *text_ids = NULL;
    int64_t k = 0;
    elm_status st = elm_tokenize_alloc(ch->vocab, text, strlen(text), false, true, &text_ids, &k, err);
    if (st) return st;
    const int64_t head = 2; /* room for the held-back token and a BOS in front */
    int32_t *p = realloc(*ids, sizeof(int32_t) * (size_t)(head + k));
    if (!p) {
        free(text_ids);
        return elm_errorf(err, ELM_ERR_NOMEM, "chat: out of memory tokenizing a turn");
    }
    *ids = p;
    memcpy(p + head, text_ids, sizeof(int32_t) * (size_t)k);
    free(text_ids);
    int64_t n = 0;
    if (ch->pending >= 0) p[n++] = ch->pending;
    if (first && ch->vocab->add_bos && ch->vocab->bos_id >= 0 &&
        (k == 0 || p[head] != ch->vocab->bos_id))
        p[n++] = ch->vocab->bos_id;
    memmove(p + n, p + head, sizeof(int32_t) * (size_t)k);
    *n_ids = n + k;
    return ELM_OK;
}

/* Sets n_keep to the opening and system prompt: the tokens of a first turn with an empty
 * message (at most a quarter of the context). */
static elm_status count_opening(elm_chat *ch, elm_error *err) {
    char *opening = NULL;
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_status st =
        elm_chat_render_turn_with(ch->tmpl, ch->system, "", true, &ch->opts, &opening, err);
    if (!st) st = tokenize_turn(ch, opening, true, &ids, &n, err);
    free(opening);
    free(ids);
    const int32_t cap = elm_context_n_ctx(ch->c) / 4;
    if (!st) ch->n_keep = n < cap ? (int32_t)n : cap;
    return st;
}

elm_status elm_chat_new(elm_context *c, const elm_chat_params *p, elm_chat **out, elm_error *err) {
    *out = NULL;
    if ((unsigned)p->tmpl >= ELM_TEMPLATE_COUNT)
        return elm_errorf(err, ELM_ERR_ARG, "chat template %d unknown", (int)p->tmpl);
    if (p->gen.n_predict <= 0) return elm_errorf(err, ELM_ERR_ARG, "n_predict must be > 0");
    if (p->opts.reasoning_effort && elm_chat_effort_check(p->opts.reasoning_effort, err))
        return ELM_ERR_ARG;
    elm_chat *ch = calloc(1, sizeof *ch);
    if (!ch || (p->system && !(ch->system = strdup(p->system)))) {
        free(ch);
        return elm_errorf(err, ELM_ERR_NOMEM, "chat: out of memory");
    }
    ch->c = c;
    ch->vocab = &elm_context_model(c)->vocab;
    ch->tmpl = p->tmpl;
    ch->gen = p->gen;
    ch->spec = p->spec;
    ch->opts = p->opts;
    ch->eot_id = elm_chat_special_id(ch->vocab, elm_chat_template_eot(p->tmpl));
    ch->pending = -1;
    ch->n_keep = p->gen.n_keep;
    if (p->gen.grammar && !p->gen.grammar_vocab) {
        const int32_t ends[2] = {ch->vocab->eos_id, ch->eot_id};
        if (!(ch->gv = elm_grammar_vocab_new_preserved(ch->vocab, ends, 2, p->gen.preserved,
                                                       p->gen.n_preserved))) {
            elm_chat_free(ch);
            return elm_errorf(err, ELM_ERR_NOMEM, "chat: out of memory");
        }
        ch->gen.grammar_vocab = ch->gv;
    }
    ch->keep_opening = ch->n_keep <= 0;
    elm_status st = ch->keep_opening ? count_opening(ch, err) : ELM_OK;
    if (st) {
        elm_chat_free(ch);
        return st;
    }
    *out = ch;
    return ELM_OK;
}

void elm_chat_free(elm_chat *ch) {
    if (!ch) return;
    free(ch->system);
    free(ch->reply.s);
    elm_grammar_vocab_free(ch->gv);
    free(ch);
}

typedef struct turn_cb {
    elm_chat *ch;
    elm_token_cb cb;
    void *user;
    int32_t last;     /* last id generated */
    bool stop_token;  /* the reply ended at end-of-turn or EOS */
} turn_cb;

static int on_token(const char *text, size_t len, int32_t id, void *user) {
    turn_cb *t = user;
    if (id >= 0) {
        t->last = id;
        if (id == t->ch->eot_id || id == t->ch->vocab->eos_id) {
            t->stop_token = true;
            return 1;
        }
    }
    elm_sb_put(&t->ch->reply, text, len);
    if (t->ch->reply.oom) return 1;
    return t->cb ? t->cb(text, len, id, t->user) : 0;
}

/* Prefills `text` (a rendered turn or raw text) after the conversation and generates the reply. */
static elm_status run_turn(elm_chat *ch, const char *text, bool first, elm_token_cb cb,
                           void *cb_user, elm_gen_stats *stats, elm_error *err) {
    memset(stats, 0, sizeof *stats);
    memset(&ch->spec_stats, 0, sizeof ch->spec_stats);
    elm_sb_clear(&ch->reply);
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_status st = tokenize_turn(ch, text, first, &ids, &n, err);
    if (!st && n == 0) st = elm_errorf(err, ELM_ERR_ARG, "chat: empty message");
    if (st) {
        free(ids);
        return st;
    }
    if (n > elm_context_n_ctx(ch->c)) {
        free(ids);
        return elm_errorf(err, ELM_ERR_ARG, "chat: the message has %lld tokens, the context holds %d",
                          (long long)n, elm_context_n_ctx(ch->c));
    }
    elm_gen_params gp = ch->gen;
    gp.ignore_eos = true; /* EOS is a stop token seen by on_token, like end-of-turn */
    gp.n_keep = ch->n_keep;
    turn_cb t = {.ch = ch, .cb = cb, .user = cb_user, .last = -1};
    int32_t n_out = 0;
    st = elm_generate_speculative(ch->c, ids, (int32_t)n, &gp, ch->spec, on_token, &t, NULL, 0,
                                  &n_out, stats, &ch->spec_stats, err);
    free(ids);
    if (st) {
        ch->pending = -1;
        return st;
    }
    /* the prompt is in the cache now; of the reply, all but its last token */
    ch->pending = t.stop_token || t.last < 0 ? -1 : t.last;
    if (ch->reply.oom) return elm_errorf(err, ELM_ERR_NOMEM, "chat: out of memory for the reply");
    return ELM_OK;
}

static bool at_start(const elm_chat *ch) {
    return elm_context_n_past(ch->c) == 0 && ch->pending < 0;
}

elm_status elm_chat_turn(elm_chat *ch, const char *user, elm_token_cb cb, void *cb_user,
                         elm_gen_stats *stats, elm_error *err) {
    const bool first = at_start(ch);
    char *text = NULL;
    elm_status st =
        elm_chat_render_turn_with(ch->tmpl, ch->system, user, first, &ch->opts, &text, err);
    if (!st) st = run_turn(ch, text, first, cb, cb_user, stats, err);
    free(text);
    return st;
}

elm_status elm_chat_append(elm_chat *ch, const char *text, elm_token_cb cb, void *cb_user,
                           elm_gen_stats *stats, elm_error *err) {
    return run_turn(ch, text, at_start(ch), cb, cb_user, stats, err);
}

void elm_chat_set_n_predict(elm_chat *ch, int32_t n) {
    if (n > 0) ch->gen.n_predict = n;
}

const char *elm_chat_reply(const elm_chat *ch) { return ch->reply.s ? ch->reply.s : ""; }

const elm_spec_stats *elm_chat_spec_stats(const elm_chat *ch) { return &ch->spec_stats; }

void elm_chat_reset(elm_chat *ch) {
    elm_context_reset(ch->c);
    ch->pending = -1;
    elm_sb_clear(&ch->reply);
}

elm_status elm_chat_set_system(elm_chat *ch, const char *system, elm_error *err) {
    elm_chat_reset(ch);
    char *copy = system ? strdup(system) : NULL;
    if (system && !copy) return elm_errorf(err, ELM_ERR_NOMEM, "chat: out of memory");
    free(ch->system);
    ch->system = copy;
    return ch->keep_opening ? count_opening(ch, err) : ELM_OK;
}

elm_status elm_chat_save(elm_chat *ch, const char *path, elm_error *err) {
    if (ch->pending >= 0) {
        /* the session holds the whole conversation: feed the held-back token first */
        elm_status st = ch->gen.no_context_shift
                            ? ELM_OK
                            : elm_context_make_room(ch->c, 1, ch->n_keep, err);
        if (!st) st = elm_forward(ch->c, &ch->pending, 1, NULL, false, err);
        if (st) return st;
        ch->pending = -1;
    }
    return elm_session_save(ch->c, path, err);
}

elm_status elm_chat_load(elm_chat *ch, const char *path, elm_error *err) {
    elm_status st = elm_session_load(ch->c, path, err);
    if (st) return st;
    ch->pending = -1;
    elm_sb_clear(&ch->reply);
    return ELM_OK;
}
