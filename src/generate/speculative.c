/* Speculative generation (see speculative.h).
 *
 * Invariant of the loop: the target's cache holds every token of the sequence but the last one,
 * `cur`. A step proposes d_1..d_k, runs [cur, d_1..d_k] through the target in one pass (k+1 rows
 * of logits), and walks the rows: row i is the target's distribution p_i after d_1..d_i. d_{i+1}
 * is kept with probability min(1, p_i(d)/q_i(d)), q_i being the distribution it was drawn from;
 * the first rejection is replaced by a draw from norm(max(0, p_i - q_i)), and when all k are kept
 * a bonus token is drawn from p_k (Leviathan et al. 2023, algorithm 1). Greedy decoding keeps a
 * draft exactly when it is the target's argmax, so it reproduces plain greedy output. The cache
 * is then cut back to the kept tokens (elm_context_truncate).
 *
 * A draft model proposes by sampling its own sampler distribution q (greedy: its argmax); prompt
 * lookup proposes deterministic tokens (q a point mass). Both decide how many tokens to propose
 * from what they saw before drawing the next one (the draft's top probability against
 * draft_min_p), which keeps each proposal distributed as q and the output exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "edgelm/speculative.h"
#include "edgelm/vocab.h"
#include "generate/gen_stats.h"

int32_t elm_lookup_propose(const int32_t *tokens, int32_t n_tokens, int32_t max_ngram,
                           int32_t max_draft, int32_t *draft) {
    for (int32_t n = max_ngram < n_tokens - 1 ? max_ngram : n_tokens - 1; n >= 1; n--) {
        const int32_t *tail = tokens + n_tokens - n;
        /* the latest earlier occurrence: its continuation is the most likely to repeat */
        for (int32_t s = n_tokens - n - 1; s >= 0; s--) {
            if (memcmp(tokens + s, tail, sizeof(int32_t) * (size_t)n) != 0) continue;
            int32_t k = 0;
            while (k < max_draft && s + n + k < n_tokens) {
                draft[k] = tokens[s + n + k];
                k++;
            }
            return k;
        }
    }
    return 0;
}

/* A draw from weights probs [n] with u uniform in [0, Σ probs). */
static int32_t draw(const float *probs, int32_t n, double u) {
    double cum = 0;
    int32_t last = 0;
    for (int32_t i = 0; i < n; i++) {
        if (probs[i] <= 0) continue;
        cum += probs[i];
        last = i;
        if (u < cum) return i;
    }
    return last;
}

typedef struct spec_run {
    elm_context *c, *draft;
    const elm_gen_params *p;
    const elm_spec_params *sp;
    int32_t n_vocab;
    elm_sampler *s, *ds;     /* target sampler (verification draws), draft sampler */
    int32_t *hist;           /* prompt + generated (the repetition penalty's window) */
    int32_t n_hist;
    int32_t *seq;            /* [n_ctx + 1] the target's cached tokens, then cur */
    int32_t *prop;           /* [draft_max] proposed tokens */
    float *q;                /* [draft_max, n_vocab] their distributions (sampling drafts) */
    bool q_point;            /* proposals are point masses (lookup, or greedy decoding) */
    float *logits;           /* [draft_max + 1, n_vocab] target rows */
    float *probs, *resid;    /* [n_vocab] each: a target row's distribution, a residual */
    float *dlogits;          /* [n_vocab] draft row */
    bool measure_plain;      /* time plain decode steps after generation (stats wanted) */
} spec_run;

/* Brings the draft's cache to seq[0 .. n_seq) and leaves its logits for the next token in
 * r->dlogits. The draft keeps its longest common prefix with seq. */
static elm_status draft_sync(spec_run *r, const int32_t *seq, int32_t n_seq, elm_error *err) {
    elm_context *d = r->draft;
    const int32_t *have = elm_context_tokens(d);
    int32_t common = 0, n_have = elm_context_n_past(d);
    while (common < n_have && common < n_seq - 1 && have[common] == seq[common]) common++;
    elm_status st = elm_context_truncate(d, common, err);
    if (!st) st = elm_forward_batched(d, seq + common, n_seq - common, r->dlogits, false, NULL, NULL, err);
    return st;
}

/* Draft-model proposals after seq [n_seq]: up to k_max tokens into r->prop (and r->q). */
static elm_status propose_draft(spec_run *r, int32_t n_seq, int32_t k_max, int32_t *k,
                                elm_error *err) {
    *k = 0;
    const int32_t room = elm_context_n_ctx(r->draft) - n_seq;
    if (room < 0) return ELM_OK; /* the draft's context is shorter than the conversation */
    if (k_max > room) k_max = room;
    elm_status st = draft_sync(r, r->seq, n_seq, err);
    const int32_t V = r->n_vocab;
    const bool greedy = r->p->sampling.temp <= 0;
    while (!st && *k < k_max) {
        /* the decision to go on uses only what the draft saw so far (exactness, see top) */
        float *q = r->q + (size_t)*k * V;
        const int32_t top = elm_argmax(r->dlogits, V);
        float top_p;
        int32_t tok;
        if (greedy) {
            /* confidence of a greedy draft: its softmax at temperature 1 */
            double sum = 0;
            for (int32_t i = 0; i < V; i++) sum += exp((double)(r->dlogits[i] - r->dlogits[top]));
            top_p = (float)(1.0 / sum);
            tok = top;
        } else {
            elm_sampler_probs(r->ds, r->dlogits, r->hist, r->n_hist + *k, q);
            top_p = q[elm_argmax(q, V)];
            tok = draw(q, V, elm_sampler_uniform(r->ds));
        }
        if (top_p < r->sp->draft_min_p) break;
        r->prop[(*k)++] = tok;
        r->hist[r->n_hist + *k - 1] = tok; /* the draft's own penalty window sees its tokens */
        if (*k < k_max) st = elm_forward(r->draft, &tok, 1, r->dlogits, false, err);
    }
    return st;
}

/* Emits token id: returns true when generation stops here (EOS, callback, n_predict). */
typedef struct emitter {
    const elm_gen_params *p;
    const elm_vocab *vocab;
    elm_token_cb cb;
    void *user;
    elm_detok dt;
    int32_t *out_ids, max_out, *n_out;
    double t_first;
} emitter;

static bool emit(emitter *e, spec_run *r, int32_t id) {
    if (*e->n_out == 0) e->t_first = elm_now_ms();
    if (id == e->vocab->eos_id && !e->p->ignore_eos) return true;
    r->hist[r->n_hist++] = id;
    if (e->out_ids && *e->n_out < e->max_out) e->out_ids[*e->n_out] = id;
    (*e->n_out)++;
    char piece[512];
    const size_t len = elm_detok_push(&e->dt, id, piece, sizeof piece);
    if (e->cb && e->cb(piece, len, id, e->user)) return true;
    return *e->n_out >= e->p->n_predict;
}

/* One plain decode step's cost on the target, measured after generation and undone. */
static double plain_step_ms(spec_run *r, int32_t cur) {
    elm_context *c = r->c;
    const int32_t n0 = elm_context_n_past(c), reps = 3;
    if (n0 + reps > elm_context_n_ctx(c)) return 0;
    const double t0 = elm_now_ms();
    int32_t tok = cur;
    for (int32_t i = 0; i < reps; i++) {
        if (elm_forward(c, &tok, 1, r->logits, false, NULL)) return 0;
        tok = elm_sampler_sample(r->s, r->logits, r->hist, r->n_hist);
    }
    const double ms = (elm_now_ms() - t0) / reps;
    elm_context_truncate(c, n0, NULL);
    return ms;
}

/* Proposals for the tokens after cur at position P (the cache holds P tokens): prompt lookup
 * first, else the draft model; at most what n_predict, the batch and the context leave room for.
 * Fills r->seq [P + 1 + *k] and r->prop. */
static elm_status spec_propose(spec_run *r, int32_t cur, int32_t n_out, int32_t *k, elm_error *err) {
    elm_context *c = r->c;
    const elm_spec_params *sp = r->sp;
    const int32_t n_ctx = elm_context_n_ctx(c), P = elm_context_n_past(c);
    const int32_t lookup_max = sp->lookup, draft_max = sp->draft ? sp->draft_max : 0;
    int32_t k_max = lookup_max > draft_max ? lookup_max : draft_max;
    const int32_t left = r->p->n_predict - n_out - 1; /* tokens beyond the next one */
    if (k_max > left) k_max = left;
    if (k_max > elm_context_n_batch(c) - 1) k_max = elm_context_n_batch(c) - 1;
    if (k_max > n_ctx - P - 1) k_max = n_ctx - P - 1;

    memcpy(r->seq, elm_context_tokens(c), sizeof(int32_t) * (size_t)P);
    r->seq[P] = cur;
    *k = 0;
    r->q_point = true;
    if (lookup_max > 0 && k_max > 0)
        *k = elm_lookup_propose(r->seq, P + 1, sp->lookup_ngram > 0 ? sp->lookup_ngram : 3,
                                k_max < lookup_max ? k_max : lookup_max, r->prop);
    if (*k == 0 && r->draft && k_max > 0) {
        elm_status st = propose_draft(r, P + 1, k_max < draft_max ? k_max : draft_max, k, err);
        if (st) return st;
        r->q_point = r->p->sampling.temp <= 0;
    }
    memcpy(r->seq + P + 1, r->prop, sizeof(int32_t) * (size_t)*k);
    return ELM_OK;
}

/* The token row i of the target's logits gives when proposal i (if i < k) is drawn against it:
 * the proposal itself when accepted (*accepted), else a draw from the residual. */
static int32_t spec_row_token(spec_run *r, int32_t i, int32_t k, bool *accepted) {
    const int32_t V = r->n_vocab;
    const bool greedy = r->p->sampling.temp <= 0;
    elm_sampler_probs(r->s, r->logits + (size_t)i * V, r->hist, r->n_hist, r->probs);
    *accepted = false;
    if (i == k) return greedy ? elm_argmax(r->probs, V) : draw(r->probs, V, elm_sampler_uniform(r->s));
    const int32_t d = r->prop[i];
    const double qd = r->q_point ? 1.0 : r->q[(size_t)i * V + d];
    if (greedy) *accepted = r->probs[d] > 0;
    else *accepted = r->probs[d] > 0 && elm_sampler_uniform(r->s) * qd < r->probs[d];
    if (*accepted) return d;
    /* residual norm(max(0, p - q)); a point mass just removes d. It is empty only when p == q up
     * to rounding, where p itself is the answer. */
    double sum = 0;
    for (int32_t x = 0; x < V; x++) {
        const float qx = r->q_point ? (x == d) : r->q[(size_t)i * V + x];
        r->resid[x] = r->probs[x] > qx ? r->probs[x] - qx : 0;
        sum += r->resid[x];
    }
    const float *from = sum > 0 ? r->resid : r->probs;
    if (greedy) return elm_argmax(from, V);
    return draw(from, V, elm_sampler_uniform(r->s) * (sum > 0 ? sum : 1));
}

/* One target pass over cur and k proposals (r->seq from position P): emits the accepted drafts
 * and one corrected or bonus token, leaves the last emitted in *cur, and keeps in the cache only
 * what precedes it. */
static elm_status spec_verify(spec_run *r, emitter *e, elm_spec_stats *ss, int32_t k, int32_t *cur,
                              bool *done, elm_error *err) {
    const int32_t P = elm_context_n_past(r->c);
    elm_status st = elm_forward(r->c, r->seq + P, k + 1, r->logits, true, err);
    if (st) return st;
    ss->target_passes++;
    int32_t emitted = 0;
    for (int32_t i = 0; i <= k && !*done; i++) {
        bool accepted;
        const int32_t tok = spec_row_token(r, i, k, &accepted);
        if (accepted) ss->accepted++;
        emitted = i + 1;
        *done = emit(e, r, tok);
        *cur = tok;
        if (!accepted) break;
    }
    return elm_context_truncate(r->c, P + emitted, err);
}

/* Flushes the detokenizer and fills the stats. */
static void spec_finish(spec_run *r, emitter *e, int32_t n_prompt, int32_t cur, double t0,
                        double t_prefill, elm_gen_stats *stats, elm_spec_stats *ss) {
    const double t_end = elm_now_ms();
    char piece[64];
    const size_t len = elm_detok_flush(&e->dt, piece, sizeof piece);
    if (e->cb) e->cb(piece, len, -1, e->user);
    const int32_t n = *e->n_out;
    elm_gen_stats_set(stats, n_prompt, n, t0, t_prefill, e->t_first, t_end);
    ss->acceptance_rate = ss->drafted ? (double)ss->accepted / ss->drafted : 0;
    ss->tokens_per_pass = ss->target_passes ? (double)n / ss->target_passes : 0;
    ss->ms_per_token = n ? (t_end - t_prefill) / n : 0;
    ss->plain_ms_per_token = r->measure_plain ? plain_step_ms(r, cur) : 0;
    ss->speedup = ss->ms_per_token > 0 ? ss->plain_ms_per_token / ss->ms_per_token : 0;
}

/* Prefill all but the last prompt token, then propose and verify until done. */
static elm_status run_loop(spec_run *r, const int32_t *prompt, int32_t n_prompt, emitter *e,
                           elm_gen_stats *stats, elm_spec_stats *ss, elm_error *err) {
    elm_context *c = r->c;
    const double t0 = elm_now_ms();
    elm_status st = elm_forward_batched(c, prompt, n_prompt - 1, NULL, false, NULL, NULL, err);
    if (st) return st;
    const double t_prefill = elm_now_ms();
    e->t_first = t_prefill;
    int32_t cur = prompt[n_prompt - 1];
    bool done = false;
    while (!done) {
        /* room for cur: the cache shifts exactly where plain decoding shifts it (so greedy
         * output stays the same through shifts); proposals only use the room that is left */
        if (elm_context_n_past(c) + 1 > elm_context_n_ctx(c)) {
            if (r->p->no_context_shift) break;
            if ((st = elm_context_make_room(c, 1, r->p->n_keep, err))) return st;
        }
        int32_t k;
        if ((st = spec_propose(r, cur, *e->n_out, &k, err))) return st;
        ss->drafted += k;
        if ((st = spec_verify(r, e, ss, k, &cur, &done, err))) return st;
    }
    spec_finish(r, e, n_prompt, cur, t0, t_prefill, stats, ss);
    return ELM_OK;
}

elm_status elm_generate_speculative(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                                    const elm_gen_params *p, const elm_spec_params *sp,
                                    elm_token_cb cb, void *user, int32_t *out_ids, int32_t max_out,
                                    int32_t *n_out, elm_gen_stats *stats, elm_spec_stats *sstats,
                                    elm_error *err) {
    elm_spec_stats ss_local;
    elm_spec_stats *ss = sstats ? sstats : &ss_local;
    memset(ss, 0, sizeof *ss);
    if (!sp || (!sp->draft && sp->lookup <= 0))
        return elm_generate(c, prompt, n_prompt, p, cb, user, out_ids, max_out, n_out, stats, err);

    const elm_model *m = elm_context_model(c);
    const int32_t V = m->hp.n_vocab, n_ctx = elm_context_n_ctx(c);
    *n_out = 0;
    if (p->grammar)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "a grammar or JSON schema cannot be combined with speculative decoding");
    memset(stats, 0, sizeof *stats);
    if (n_prompt <= 0) return elm_errorf(err, ELM_ERR_ARG, "empty prompt");
    if (p->n_predict <= 0) return elm_errorf(err, ELM_ERR_ARG, "n_predict must be > 0");
    if (sp->draft && elm_context_model(sp->draft)->hp.n_vocab != V)
        return elm_errorf(err, ELM_ERR_ARG, "%s: draft vocabulary has %d tokens, target %s has %d",
                          elm_context_model(sp->draft)->path,
                          elm_context_model(sp->draft)->hp.n_vocab, m->path, V);
    if (sp->draft && sp->draft_max <= 0)
        return elm_errorf(err, ELM_ERR_ARG, "draft_max must be > 0 with a draft model");
    if (elm_context_n_past(c) + n_prompt > n_ctx) {
        elm_status st = p->no_context_shift
                            ? ELM_ERR_ARG
                            : elm_context_make_room(c, n_prompt, p->n_keep, NULL);
        if (st)
            return elm_errorf(err, ELM_ERR_ARG, "prompt has %d tokens, context holds %d",
                              n_prompt, n_ctx - elm_context_n_past(c));
    }

    const int32_t k_cap = (sp->draft_max > sp->lookup ? sp->draft_max : sp->lookup) + 1;
    spec_run r = {.c = c, .draft = sp->draft, .p = p, .sp = sp, .n_vocab = V,
                  .measure_plain = sstats != NULL};
    elm_sampler_params dsp = p->sampling;
    dsp.seed = p->sampling.seed ^ 0xD1B54A32D192ED03ull; /* the draft's own stream */
    r.s = elm_sampler_new(&p->sampling, V);
    r.ds = elm_sampler_new(&dsp, V);
    r.hist = malloc(sizeof(int32_t) * ((size_t)n_prompt + (size_t)p->n_predict + (size_t)k_cap));
    r.seq = malloc(sizeof(int32_t) * ((size_t)n_ctx + (size_t)k_cap + 1));
    r.prop = malloc(sizeof(int32_t) * (size_t)k_cap);
    r.q = sp->draft ? malloc(sizeof(float) * (size_t)k_cap * (size_t)V) : NULL;
    r.logits = malloc(sizeof(float) * (size_t)k_cap * (size_t)V);
    r.probs = malloc(sizeof(float) * (size_t)V);
    r.resid = malloc(sizeof(float) * (size_t)V);
    r.dlogits = malloc(sizeof(float) * (size_t)V);
    elm_status st;
    if (!r.s || !r.ds || !r.hist || !r.seq || !r.prop || (sp->draft && !r.q) || !r.logits ||
        !r.probs || !r.resid || !r.dlogits) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory starting speculative generation");
    } else {
        memcpy(r.hist, prompt, sizeof(int32_t) * (size_t)n_prompt);
        r.n_hist = n_prompt;
        emitter e = {.p = p, .vocab = &m->vocab, .cb = cb, .user = user, .out_ids = out_ids,
                     .max_out = max_out, .n_out = n_out};
        elm_detok_init(&e.dt, &m->vocab, false);
        elm_detok_preserve(&e.dt, p->preserved, p->n_preserved);
        st = run_loop(&r, prompt, n_prompt, &e, stats, ss, err);
    }
    elm_sampler_free(r.s);
    elm_sampler_free(r.ds);
    free(r.hist);
    free(r.seq);
    free(r.prop);
    free(r.q);
    free(r.logits);
    free(r.probs);
    free(r.resid);
    free(r.dlogits);
    return st;
}
