/* Generation loop (see generate.h): prefill in batches of the context's n_batch, then decode. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "edgelm/generate.h"
#include "generate/gen_stats.h"
#include "edgelm/vocab.h"

elm_status elm_generate(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                        const elm_gen_params *p, elm_token_cb cb, void *user, int32_t *out_ids,
                        int32_t max_out, int32_t *n_out, elm_gen_stats *stats, elm_error *err) {
    const elm_model *m = elm_context_model(c);
    const int32_t n_vocab = m->hp.n_vocab, n_ctx = elm_context_n_ctx(c);
    *n_out = 0;
    memset(stats, 0, sizeof *stats);
    if (n_prompt <= 0) return elm_errorf(err, ELM_ERR_ARG, "empty prompt");
    if (elm_context_n_past(c) + n_prompt > n_ctx &&
        (p->no_context_shift || elm_context_make_room(c, n_prompt, p->n_keep, NULL)))
        return elm_errorf(err, ELM_ERR_ARG, "prompt has %d tokens, context holds %d", n_prompt,
                          n_ctx - elm_context_n_past(c));
    if (p->n_predict <= 0) return elm_errorf(err, ELM_ERR_ARG, "n_predict must be > 0");

    /* history = prompt + generated ids, for the repetition penalty */
    int32_t *history = malloc(sizeof(int32_t) * ((size_t)n_prompt + (size_t)p->n_predict));
    float *logits = malloc(sizeof(float) * (size_t)n_vocab);
    elm_sampler *s = elm_sampler_new(&p->sampling, n_vocab);
    elm_grammar_vocab *own_gv = NULL;
    elm_grammar_matcher *gm = NULL;
    if (p->grammar && !p->grammar_vocab)
        own_gv = elm_grammar_vocab_new_preserved(&m->vocab, &m->vocab.eos_id, 1, p->preserved,
                                                 p->n_preserved);
    if (p->grammar && (p->grammar_vocab || own_gv))
        gm = elm_grammar_matcher_new(p->grammar, p->grammar_vocab ? p->grammar_vocab : own_gv);
    elm_status st = ELM_OK;
    if (!history || !logits || !s || (p->grammar && !gm)) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory starting generation");
        goto done;
    }
    if (gm && p->grammar_trigger && (st = elm_grammar_matcher_set_trigger(gm, p->grammar_trigger, err)))
        goto done;
    elm_sampler_set_grammar(s, gm);
    memcpy(history, prompt, sizeof(int32_t) * (size_t)n_prompt);
    int32_t n_hist = n_prompt;

    const double t0 = elm_now_ms();
    if ((st = elm_forward_batched(c, prompt, n_prompt, logits, false, NULL, NULL, err))) goto done;
    const double t_prefill = elm_now_ms();

    elm_detok dt;
    elm_detok_init(&dt, &m->vocab, false); /* the continuation keeps its leading space */
    elm_detok_preserve(&dt, p->preserved, p->n_preserved);
    char piece[512];
    double t_first = t_prefill;
    for (int32_t i = 0; i < p->n_predict; i++) {
        const int32_t id = elm_sampler_sample(s, logits, history, n_hist);
        if (i == 0) t_first = elm_now_ms();
        if (id == m->vocab.eos_id && !p->ignore_eos) break;
        history[n_hist++] = id;
        if (out_ids && *n_out < max_out) out_ids[*n_out] = id;
        (*n_out)++;
        size_t len = elm_detok_push(&dt, id, piece, sizeof piece);
        if (cb && cb(piece, len, id, user)) break;
        if (i + 1 == p->n_predict) break;
        if (elm_context_n_past(c) >= n_ctx) {
            if (p->no_context_shift) break;
            if ((st = elm_context_make_room(c, 1, p->n_keep, err))) goto done;
        }
        if ((st = elm_forward(c, &id, 1, logits, false, err))) goto done;
    }
    const double t_end = elm_now_ms();
    size_t len = elm_detok_flush(&dt, piece, sizeof piece);
    if (cb) cb(piece, len, -1, user);

    elm_gen_stats_set(stats, n_prompt, *n_out, t0, t_prefill, t_first, t_end);
done:
    elm_sampler_free(s);
    elm_grammar_matcher_free(gm);
    elm_grammar_vocab_free(own_gv);
    free(logits);
    free(history);
    return st;
}
