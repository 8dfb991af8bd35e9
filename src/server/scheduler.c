/* The slots and the scheduler thread of the server (see server.h).
 *
 * Slot i owns the cache rows [i · slot_ctx, (i + 1) · slot_ctx) of the one context, and remembers
 * the ids those rows hold after its job ends, so a later prompt starting with them skips their
 * prefill. A step: take cancelled jobs off their slots, hand waiting jobs to idle slots (the
 * longest cached prefix wins, then the least recently used), gather the batch (one token per
 * generating slot, then prompt chunks of the prefilling slots up to n_batch), run one forward
 * pass without the lock, then sample each slot's next token and publish its text. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "edgelm/vocab.h"
#include "server/scheduler.h"

struct srv_job {
    int32_t *prompt;
    int32_t n_prompt;
    srv_job_params p;
    int refs; /* the submitter's and, while queued or running, the server's */
    bool cancelled, done;
    char *text; /* the reply so far, NUL-terminated */
    size_t len, cap;
    int32_t n_gen, n_cached;
    int32_t slot; /* -1 until a slot takes it */
    const char *finish;
    srv_logprob *lp; /* [n_lp] with params.logprobs */
    int32_t n_lp, cap_lp;
    double t_submit, t_start, t_first, t_last, t_end; /* t_last: the latest token */
    srv_job *next; /* the queue */
};

typedef struct srv_slot {
    int32_t *tokens; /* [slot_ctx] ids of the cached rows */
    int32_t n_past;  /* rows the cache holds */
    srv_job *job;    /* NULL when idle */
    int32_t n_fed;   /* prompt tokens in the cache */
    int32_t pending; /* the last sampled token, not yet in the cache, or -1 */
    elm_sampler *smp;
    elm_grammar_matcher *gm; /* the job's grammar, or NULL */
    elm_detok dt;
    uint64_t last_used;
} srv_slot;

struct srv_server {
    const elm_model *m;
    srv_params p;
    elm_context *c;
    srv_slot *slots;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the scheduler waits for jobs */
    pthread_cond_t changed; /* readers wait for text */
    srv_job *head, *tail;
    int n_waiting;
    bool stopping, joined;
    pthread_t thread;
    uint64_t clock;
    /* the batch of a step: [n_batch] each, in one block starting at b_tok */
    int32_t *b_tok, *b_pos, *b_row, *b_out, *b_slot_of_out;
    float *logits; /* [n_slots, n_vocab] */
    float *raw;    /* [n_vocab] a token's logits as the model gave them, for logprobs */
    elm_grammar_vocab *gv; /* the vocabulary's token bytes, for grammars (made at the first) */
    elm_grammar_vocab *gv_tools; /* the same with the preserved tokens' text, for jobs with tool
                                  * calls when the template has such tokens (made at the first) */
};

srv_job *srv_job_new(const int32_t *prompt, int32_t n_prompt, const srv_job_params *p) {
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->prompt = malloc(sizeof(int32_t) * (size_t)(n_prompt > 0 ? n_prompt : 1));
    j->text = malloc(j->cap = 256);
    if (!j->prompt || !j->text) {
        free(j->prompt);
        free(j->text);
        free(j);
        elm_grammar_free(p->grammar);
        return NULL;
    }
    memcpy(j->prompt, prompt, sizeof(int32_t) * (size_t)n_prompt);
    j->n_prompt = n_prompt;
    j->p = *p;
    j->text[0] = '\0';
    j->refs = 1;
    j->slot = -1;
    return j;
}

static void job_unref(srv_job *j) {
    if (--j->refs > 0) return;
    elm_grammar_free(j->p.grammar);
    free(j->lp);
    free(j->prompt);
    free(j->text);
    free(j);
}

void srv_job_release(srv_server *s, srv_job *job) {
    pthread_mutex_lock(&s->mu);
    job_unref(job);
    pthread_mutex_unlock(&s->mu);
}

/* Under the lock: the job ends with `reason`; the server's reference goes. */
static void finish(srv_server *s, srv_job *j, const char *reason) {
    j->finish = reason;
    j->done = true;
    j->t_end = elm_now_ms();
    if (j->t_first == 0) j->t_first = j->t_end;
    if (s->p.metrics) srv_metrics_job_end(s->p.metrics, j->n_gen);
    pthread_cond_broadcast(&s->changed);
    job_unref(j);
}

static void finish_slot(srv_server *s, srv_slot *sl, const char *reason) {
    elm_sampler_set_grammar(sl->smp, NULL); /* the matcher reads the job's grammar */
    elm_grammar_matcher_free(sl->gm);
    sl->gm = NULL;
    finish(s, sl->job, reason);
    sl->job = NULL;
    sl->last_used = ++s->clock;
}

/* Under the lock: appends a piece of reply text and ends the job at a stop string. */
static bool append_text(srv_server *s, srv_job *j, const char *piece, size_t n) {
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap * 2 > j->len + n + 1 ? j->cap * 2 : j->len + n + 1;
        char *t = realloc(j->text, cap);
        if (!t) return false;
        j->text = t;
        j->cap = cap;
    }
    const size_t old = j->len;
    memcpy(j->text + j->len, piece, n);
    j->len += n;
    j->text[j->len] = '\0';
    /* a stop string may have begun up to its length - 1 bytes before the new piece */
    size_t cut = j->len + 1;
    for (int i = 0; i < j->p.n_stop; i++) {
        const size_t sl = strlen(j->p.stop[i]);
        const size_t from = old >= sl ? old - sl + 1 : 0;
        const char *hit = strstr(j->text + from, j->p.stop[i]);
        if (hit && (size_t)(hit - j->text) < cut) cut = (size_t)(hit - j->text);
    }
    if (cut <= j->len) {
        j->len = cut;
        j->text[cut] = '\0';
        return true;
    }
    pthread_cond_broadcast(&s->changed);
    return false;
}

static int32_t common_prefix(const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
    int32_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

/* The token bytes job j's grammar is matched over, made at the first job that needs them: with
 * tool calls and a template whose calls are written with control tokens, the vocabulary where
 * those have their text (the job's detokenizer writes them so too); else the plain one, where a
 * control token is never text. NULL when out of memory. */
static const elm_grammar_vocab *grammar_vocab(srv_server *s, const srv_job *j) {
    const int32_t ends[2] = {s->m->vocab.eos_id, s->p.eot_id};
    if (j->p.tool_calls && s->p.n_preserved > 0) {
        if (!s->gv_tools)
            s->gv_tools = elm_grammar_vocab_new_preserved(&s->m->vocab, ends, 2, s->p.preserved,
                                                          s->p.n_preserved);
        return s->gv_tools;
    }
    if (!s->gv) s->gv = elm_grammar_vocab_new(&s->m->vocab, ends, 2);
    return s->gv;
}

/* Under the lock: gives the queue's head jobs to idle slots. */
static void assign(srv_server *s) {
    while (s->head) {
        srv_job *j = s->head;
        srv_slot *best = NULL;
        int32_t best_len = -1;
        for (int i = 0; i < s->p.n_slots; i++) {
            srv_slot *sl = &s->slots[i];
            if (sl->job) continue;
            const int32_t l = common_prefix(sl->tokens, sl->n_past, j->prompt, j->n_prompt);
            if (l > best_len || (l == best_len && sl->last_used < best->last_used)) {
                best = sl;
                best_len = l;
            }
        }
        if (!best) return;
        s->head = j->next;
        if (!s->head) s->tail = NULL;
        s->n_waiting--;
        /* the last prompt token always goes through the pass: its logits give the first token */
        if (best_len >= j->n_prompt) best_len = j->n_prompt - 1;
        /* a hybrid's recurrent state goes back to a checkpoint at or before the shared prefix */
        best_len = elm_context_seq_rewind(s->c, (int32_t)(best - s->slots) * s->p.slot_ctx,
                                          best_len);
        elm_sampler_free(best->smp);
        best->smp = elm_sampler_new(&j->p.sampling, s->m->hp.n_vocab);
        const elm_grammar_vocab *gv = j->p.grammar ? grammar_vocab(s, j) : NULL;
        if (gv) best->gm = elm_grammar_matcher_new(j->p.grammar, gv);
        if (best->gm && j->p.trigger[0] &&
            elm_grammar_matcher_set_trigger(best->gm, j->p.trigger, NULL)) {
            elm_grammar_matcher_free(best->gm);
            best->gm = NULL;
        }
        if (!best->smp || (j->p.grammar && !best->gm)) {
            finish(s, j, "error");
            continue;
        }
        elm_sampler_set_grammar(best->smp, best->gm);
        best->job = j;
        best->n_past = best->n_fed = best_len;
        best->pending = -1;
        elm_detok_init(&best->dt, &s->m->vocab, false);
        if (j->p.tool_calls || j->p.channels)
            elm_detok_preserve(&best->dt, s->p.preserved, s->p.n_preserved);
        j->n_cached = best_len;
        j->slot = (int32_t)(best - s->slots);
        j->t_start = elm_now_ms();
        if (s->p.metrics) srv_metrics_job_start(s->p.metrics, j->n_prompt, best_len);
    }
}

/* Under the lock: records token id's log-probability from s->raw, the logits it was drawn from,
 * and the job's top_logprobs best there, once its text is in the reply (from byte start on). */
static void add_logprob(srv_server *s, srv_job *j, int32_t id, size_t start) {
    if (j->n_lp == j->cap_lp) {
        const int32_t cap = j->cap_lp ? j->cap_lp * 2 : 64;
        srv_logprob *lp = realloc(j->lp, sizeof *lp * (size_t)cap);
        if (!lp) return; /* the reply goes on without the rest of its log-probabilities */
        j->lp = lp, j->cap_lp = cap;
    }
    const float *x = s->raw;
    const int32_t V = s->m->hp.n_vocab;
    float mx = x[0];
    for (int32_t i = 1; i < V; i++) mx = x[i] > mx ? x[i] : mx;
    double sum = 0;
    for (int32_t i = 0; i < V; i++) sum += exp((double)(x[i] - mx));
    const float lse = mx + (float)log(sum);
    srv_logprob *r = &j->lp[j->n_lp++];
    *r = (srv_logprob){.id = id, .logprob = x[id] - lse, .text_start = start, .text_end = j->len};
    const int32_t K = j->p.top_logprobs;
    for (int32_t i = 0; K > 0 && i < V; i++) { /* the best K so far, best first, by insertion */
        int32_t k = r->n_top;
        if (k == K) {
            if (x[i] <= x[r->top_id[K - 1]]) continue;
            k = K - 1;
        } else {
            r->n_top++;
        }
        for (; k > 0 && x[r->top_id[k - 1]] < x[i]; k--) r->top_id[k] = r->top_id[k - 1];
        r->top_id[k] = i;
    }
    for (int32_t k = 0; k < r->n_top; k++) r->top_logprob[k] = x[r->top_id[k]] - lse;
}

/* Samples slot sl's next token from its logits and publishes it (under the lock). */
static void next_token(srv_server *s, srv_slot *sl, float *logits) {
    srv_job *j = sl->job;
    if (j->p.logprobs) memcpy(s->raw, logits, sizeof *logits * (size_t)s->m->hp.n_vocab);
    const int32_t id = elm_sampler_sample(sl->smp, logits, sl->tokens, sl->n_past);
    const double t = elm_now_ms();
    const bool first = j->n_gen == 0;
    if (first) j->t_first = t;
    if (s->p.metrics)
        srv_metrics_token(s->p.metrics, first, (t - (first ? j->t_submit : j->t_last)) / 1e3);
    j->t_last = t;
    const elm_vocab *v = &s->m->vocab;
    if (!j->p.ignore_eos && (id == v->eos_id || (j->p.eot_id >= 0 && id == j->p.eot_id))) {
        char piece[64];
        const size_t n = elm_detok_flush(&sl->dt, piece, sizeof piece);
        if (n) append_text(s, j, piece, n);
        finish_slot(s, sl, "stop");
        return;
    }
    j->n_gen++;
    sl->pending = id;
    char piece[512];
    size_t n = elm_detok_push(&sl->dt, id, piece, sizeof piece);
    const bool full = j->n_gen >= j->p.max_tokens || sl->n_past + 1 >= s->p.slot_ctx;
    if (full) n += elm_detok_flush(&sl->dt, piece + n, sizeof piece - n);
    const size_t start = j->len;
    const bool stop = append_text(s, j, piece, n);
    if (j->p.logprobs) add_logprob(s, j, id, start < j->len ? start : j->len);
    if (stop) finish_slot(s, sl, "stop");
    else if (full) finish_slot(s, sl, "length");
}

/* One step; false when there is nothing to do (the caller waits). */
static bool step(srv_server *s) {
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->p.n_slots; i++)
        if (s->slots[i].job && s->slots[i].job->cancelled) finish_slot(s, &s->slots[i], "cancelled");
    assign(s);
    /* the batch: decode tokens first, then prompt chunks in slot order */
    int32_t n = 0, n_out = 0;
    int32_t fed[SRV_MAX_SLOTS] = {0};
    for (int i = 0; i < s->p.n_slots; i++) {
        srv_slot *sl = &s->slots[i];
        fed[i] = 0;
        if (!sl->job || sl->pending < 0) continue;
        s->b_tok[n] = sl->pending;
        s->b_pos[n] = sl->n_past;
        s->b_row[n] = i * s->p.slot_ctx;
        s->b_slot_of_out[n_out] = i;
        s->b_out[n_out++] = n++;
        fed[i] = 1;
    }
    for (int i = 0; i < s->p.n_slots && n < s->p.n_batch; i++) {
        srv_slot *sl = &s->slots[i];
        if (!sl->job || sl->pending >= 0) continue;
        const int32_t left = sl->job->n_prompt - sl->n_fed;
        const int32_t chunk = left < s->p.n_batch - n ? left : s->p.n_batch - n;
        for (int32_t k = 0; k < chunk; k++, n++) {
            s->b_tok[n] = sl->job->prompt[sl->n_fed + k];
            s->b_pos[n] = sl->n_past + k;
            s->b_row[n] = i * s->p.slot_ctx;
        }
        fed[i] = chunk;
        if (chunk == left) {
            s->b_slot_of_out[n_out] = i;
            s->b_out[n_out++] = n - 1;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (n == 0) return false;

    elm_error err;
    const elm_status st = elm_forward_seqs(s->c, s->b_tok, s->b_pos, s->b_row, n, s->b_out, n_out,
                                           s->logits, &err);
    pthread_mutex_lock(&s->mu);
    /* the fed tokens are in the cache now (also those of a job cancelled meanwhile) */
    for (int32_t t = 0; t < n && !st; t++) {
        srv_slot *sl = &s->slots[s->b_row[t] / s->p.slot_ctx];
        sl->tokens[s->b_pos[t]] = s->b_tok[t];
    }
    for (int i = 0; i < s->p.n_slots && !st; i++) {
        srv_slot *sl = &s->slots[i];
        if (!fed[i]) continue;
        sl->n_past += fed[i];
        if (sl->pending >= 0) sl->pending = -1;
        else sl->n_fed += fed[i];
    }
    for (int32_t o = 0; o < n_out && !st; o++) {
        srv_slot *sl = &s->slots[s->b_slot_of_out[o]];
        if (sl->job) next_token(s, sl, s->logits + (size_t)o * s->m->hp.n_vocab);
    }
    /* a failed pass (not expected: the batch is checked as it is built) ends every job in it, and
     * the slots forget what their caches hold */
    for (int i = 0; st && i < s->p.n_slots; i++)
        if (fed[i]) {
            s->slots[i].n_past = 0;
            if (s->slots[i].job) finish_slot(s, &s->slots[i], "error");
        }
    pthread_mutex_unlock(&s->mu);
    return true;
}

/* Requests that arrive together (an agent's parallel calls, a burst of users) are prefilled in one
 * batch: a scheduler woken from idle waits up to BURST_MS for more jobs, up to a slot each.
 * Without it the first prompt is prefilled alone, and the first stream's next token then waits
 * for the others' prefill; with it they start decoding together. */
#define BURST_MS 10

/* Under the lock: the wait for a burst's other jobs. */
static void gather_burst(srv_server *s) {
    const struct timespec until = elm_deadline_ms(BURST_MS);
    while (!s->stopping && s->n_waiting < s->p.n_slots &&
           !pthread_cond_timedwait(&s->work, &s->mu, &until)) {
    }
}

static void *scheduler(void *arg) {
    srv_server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool busy = s->head != NULL;
        for (int i = 0; i < s->p.n_slots && !busy; i++) busy = s->slots[i].job != NULL;
        if (!busy) {
            while (!s->stopping && !s->head) pthread_cond_wait(&s->work, &s->mu);
            gather_burst(s);
        }
        const bool stop = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stop) return NULL;
        step(s);
    }
}

elm_status srv_new(const elm_model *m, const srv_params *p, srv_server **out, elm_error *err) {
    *out = NULL;
    if (p->n_slots < 1 || p->n_slots > SRV_MAX_SLOTS)
        return elm_errorf(err, ELM_ERR_ARG, "server: %d slots out of range 1..%d", p->n_slots,
                          SRV_MAX_SLOTS);
    if (p->slot_ctx < 2 || (int64_t)p->slot_ctx * p->n_slots > (1 << 20))
        return elm_errorf(err, ELM_ERR_ARG, "server: %d slots of %d tokens: out of range",
                          p->n_slots, p->slot_ctx);
    if (p->n_batch < p->n_slots + 1 || p->n_queue < 0)
        return elm_errorf(err, ELM_ERR_ARG, "server: batch %d must exceed the %d slots",
                          p->n_batch, p->n_slots);
    srv_server *s = calloc(1, sizeof *s);
    if (!s) return elm_errorf(err, ELM_ERR_NOMEM, "server: out of memory");
    s->m = m;
    s->p = *p;
    const elm_context_params cp = {.n_ctx = p->n_slots * p->slot_ctx, .n_batch = p->n_batch,
                                   .n_threads = p->n_threads, .type_k = p->type_k,
                                   .type_v = p->type_v, .ggml_rounding = p->ggml_rounding,
                                   .swa_full = true, /* its slots share one cache */
                                   .n_seq = p->n_slots}; /* and each has its recurrent state */
    elm_status st = elm_context_new(m, &cp, &s->c, err);
    if (st) {
        free(s);
        return st;
    }
    const size_t nb = (size_t)p->n_batch;
    s->slots = calloc((size_t)p->n_slots, sizeof *s->slots);
    s->b_tok = malloc(sizeof(int32_t) * 5 * nb);
    s->logits = malloc(sizeof(float) * (size_t)p->n_slots * (size_t)m->hp.n_vocab);
    s->raw = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    bool ok = s->slots && s->b_tok && s->logits && s->raw;
    if (ok) {
        s->b_pos = s->b_tok + nb;
        s->b_row = s->b_pos + nb;
        s->b_out = s->b_row + nb;
        s->b_slot_of_out = s->b_out + nb;
    }
    for (int i = 0; ok && i < p->n_slots; i++) {
        ok = (s->slots[i].tokens = malloc(sizeof(int32_t) * (size_t)p->slot_ctx)) != NULL;
        s->slots[i].pending = -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->changed, NULL);
    if (!ok || pthread_create(&s->thread, NULL, scheduler, s)) {
        s->joined = true;
        srv_free(s);
        return elm_errorf(err, ELM_ERR_NOMEM, "server: out of memory starting the scheduler");
    }
    *out = s;
    return ELM_OK;
}

void srv_stop(srv_server *s) {
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    if (!s->joined) pthread_join(s->thread, NULL);
    s->joined = true;
    pthread_mutex_lock(&s->mu);
    while (s->head) {
        srv_job *j = s->head;
        s->head = j->next;
        finish(s, j, "cancelled");
    }
    s->tail = NULL;
    s->n_waiting = 0;
    for (int i = 0; i < s->p.n_slots; i++)
        if (s->slots[i].job) finish_slot(s, &s->slots[i], "cancelled");
    pthread_mutex_unlock(&s->mu);
}

void srv_free(srv_server *s) {
    if (!s) return;
    srv_stop(s);
    for (int i = 0; s->slots && i < s->p.n_slots; i++) {
        free(s->slots[i].tokens);
        elm_sampler_free(s->slots[i].smp);
        elm_grammar_matcher_free(s->slots[i].gm);
    }
    free(s->slots);
    elm_grammar_vocab_free(s->gv);
    elm_grammar_vocab_free(s->gv_tools);
    free(s->b_tok);
    free(s->logits);
    free(s->raw);
    elm_context_free(s->c);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->changed);
    free(s);
}

const srv_params *srv_get_params(const srv_server *s) { return &s->p; }

srv_submit_status srv_submit(srv_server *s, srv_job *job) {
    pthread_mutex_lock(&s->mu);
    int idle = 0;
    for (int i = 0; i < s->p.n_slots; i++) idle += s->slots[i].job == NULL;
    srv_submit_status r = SRV_OK;
    if (s->stopping) r = SRV_STOPPING;
    else if (s->n_waiting >= s->p.n_queue + idle) r = SRV_FULL;
    else {
        job->refs++;
        job->t_submit = elm_now_ms();
        job->next = NULL;
        if (s->tail) s->tail->next = job;
        else s->head = job;
        s->tail = job;
        s->n_waiting++;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* Bytes of the text that are final: all when done; else short of a possible stop string's start
 * and of an incomplete UTF-8 character. */
static size_t final_len(const srv_job *j) {
    if (j->done) return j->len;
    size_t hold = 0;
    for (int i = 0; i < j->p.n_stop; i++) {
        const size_t l = strlen(j->p.stop[i]);
        if (l > hold + 1) hold = l - 1;
    }
    size_t n = j->len > hold ? j->len - hold : 0;
    while (n > 0 && ((unsigned char)j->text[n] & 0xC0) == 0x80) n--;
    return n;
}

/* Under the lock: whether one of jobs [n] is done or has final text after its byte from[i]. */
static bool any_ready(srv_job *const *jobs, const size_t *from, int n) {
    for (int i = 0; i < n; i++)
        if (jobs[i]->done || final_len(jobs[i]) > from[i]) return true;
    return false;
}

/* Under the lock: waits until any_ready or timeout_ms passes. */
static void wait_ready(srv_server *s, srv_job *const *jobs, const size_t *from, int n,
                       int timeout_ms) {
    if (any_ready(jobs, from, n)) return;
    const struct timespec ts = elm_deadline_ms(timeout_ms);
    while (!any_ready(jobs, from, n))
        if (pthread_cond_timedwait(&s->changed, &s->mu, &ts)) break;
}

void srv_wait_any(srv_server *s, srv_job *const *jobs, const size_t *from, int n, int timeout_ms) {
    pthread_mutex_lock(&s->mu);
    wait_ready(s, jobs, from, n, timeout_ms);
    pthread_mutex_unlock(&s->mu);
}

bool srv_take(srv_server *s, srv_job *job, size_t from, bool wait, int timeout_ms, char **text,
              size_t *len, bool *done) {
    *text = NULL;
    *len = 0;
    pthread_mutex_lock(&s->mu);
    if (wait) wait_ready(s, &job, &from, 1, timeout_ms);
    const size_t end = final_len(job);
    bool ok = true;
    if (end > from) {
        *text = malloc(end - from + 1);
        if (*text) {
            memcpy(*text, job->text + from, end - from);
            (*text)[end - from] = '\0';
            *len = end - from;
        } else ok = false;
    }
    *done = job->done;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

bool srv_take_logprobs(srv_server *s, srv_job *job, int32_t first, size_t upto, srv_logprob **out,
                       int32_t *n) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    int32_t end = first;
    while (end < job->n_lp && job->lp[end].text_end <= upto && job->lp[end].text_end <= job->len)
        end++;
    bool ok = true;
    if (end > first) {
        if ((*out = malloc(sizeof **out * (size_t)(end - first)))) {
            memcpy(*out, job->lp + first, sizeof **out * (size_t)(end - first));
            *n = end - first;
        } else {
            ok = false;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

srv_job_result srv_job_result_get(srv_server *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    const double start = j->t_start ? j->t_start : j->t_submit;
    srv_job_result r = {.prompt_tokens = j->n_prompt, .cached_tokens = j->n_cached,
                        .completion_tokens = j->n_gen, .finish_reason = j->finish,
                        .prefill_ms = j->t_first - start, .ttft_ms = j->t_first - j->t_submit,
                        .decode_ms = j->t_end - j->t_first, .slot = j->slot};
    pthread_mutex_unlock(&s->mu);
    return r;
}

void srv_cancel(srv_server *s, srv_job *job) {
    pthread_mutex_lock(&s->mu);
    job->cancelled = true;
    /* a job still in the queue leaves it now */
    for (srv_job **pp = &s->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
        if (*pp == job) {
            *pp = job->next;
            if (s->tail == job) s->tail = prev;
            s->n_waiting--;
            finish(s, job, "cancelled");
            break;
        }
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

void srv_load(srv_server *s, int *busy, int *waiting) {
    pthread_mutex_lock(&s->mu);
    *busy = 0;
    for (int i = 0; i < s->p.n_slots; i++) *busy += s->slots[i].job != NULL;
    *waiting = s->n_waiting;
    pthread_mutex_unlock(&s->mu);
}
