/* The sampler chain (see sampler.h). Candidates are sorted once by logit; each filter shrinks the
 * kept prefix, which keeps top-k, top-p and min-p simple and in llama.cpp's order. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "edgelm/grammar.h"
#include "edgelm/sampler.h"

typedef struct { float logit, p; int32_t id; } candidate;

struct elm_sampler {
    elm_sampler_params p;
    int32_t n_vocab;
    uint64_t rng;
    elm_grammar_matcher *grammar; /* not owned; NULL: free text */
    candidate cand[]; /* [n_vocab] */
};

elm_sampler_params elm_sampler_defaults(void) {
    return (elm_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                                .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 0};
}

elm_sampler *elm_sampler_new(const elm_sampler_params *p, int32_t n_vocab) {
    if (n_vocab <= 0) return NULL;
    elm_sampler *s = calloc(1, sizeof *s + sizeof(candidate) * (size_t)n_vocab);
    if (!s) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    s->rng = p->seed ^ 0x9E3779B97F4A7C15ull;
    return s;
}

void elm_sampler_free(elm_sampler *s) { free(s); }

int32_t elm_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* splitmix64 (Steele et al. 2014): small, fast, good enough for sampling. */
static double next_uniform(elm_sampler *s) {
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static int by_logit_desc(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* CTRL's penalty (Keskar et al. 2019): positive logits divided, negative multiplied. */
static void apply_repeat_penalty(const elm_sampler *s, float *logits, const int32_t *history,
                                 int32_t n_history) {
    if (s->p.repeat_penalty == 1.0f || s->p.repeat_last_n <= 0) return;
    int32_t from = n_history > s->p.repeat_last_n ? n_history - s->p.repeat_last_n : 0;
    for (int32_t i = from; i < n_history; i++) {
        int32_t id = history[i];
        if (id < 0 || id >= s->n_vocab) continue;
        bool seen = false; /* penalise each distinct token once */
        for (int32_t j = from; j < i && !seen; j++) seen = history[j] == id;
        if (seen) continue;
        logits[id] = logits[id] > 0 ? logits[id] / s->p.repeat_penalty
                                    : logits[id] * s->p.repeat_penalty;
    }
}

/* Softmax over the first n candidates (sorted by logit) at temperature t. */
static void softmax_candidates(candidate *c, int32_t n, float t) {
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += c[i].p = expf((c[i].logit - c[0].logit) / t);
    for (int32_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
}

/* Restores the heap order of h[0..n) below i: each parent ranks after its children in
 * by_logit_desc's order, so h[0] is the last of the kept ones. */
static void sift_down(candidate *h, int32_t n, int32_t i) {
    for (;;) {
        int32_t worst = i;
        const int32_t l = 2 * i + 1, r = l + 1;
        if (l < n && by_logit_desc(&h[l], &h[worst]) > 0) worst = l;
        if (r < n && by_logit_desc(&h[r], &h[worst]) > 0) worst = r;
        if (worst == i) return;
        const candidate t = h[i];
        h[i] = h[worst], h[worst] = t;
        i = worst;
    }
}

/* The first k of the vocabulary in by_logit_desc's order into c[0..k), sorted: a heap of the k
 * best seen so far, then a sort of those alone. The same candidates in the same order as sorting
 * the whole vocabulary (the order is total), without sorting it: that sort was 8% of a TinyLlama
 * decode step at 32000 tokens. */
static void top_k_sorted(candidate *c, const float *logits, int32_t n_vocab, int32_t k) {
    for (int32_t i = 0; i < k; i++) c[i] = (candidate){logits[i], 0, i};
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(c, k, i);
    for (int32_t i = k; i < n_vocab; i++) {
        const candidate x = {logits[i], 0, i};
        if (x.logit < c[0].logit || by_logit_desc(&x, &c[0]) > 0) continue;
        c[0] = x;
        sift_down(c, k, 0);
    }
    qsort(c, (size_t)k, sizeof *c, by_logit_desc);
}

/* The chain after the penalty, for temp > 0: leaves the kept candidates first in s->cand, sorted
 * by logit, with their renormalised probabilities at the temperature; returns how many. */
static int32_t kept_candidates(elm_sampler *s, const float *logits) {
    candidate *c = s->cand;
    int32_t n = s->n_vocab;
    if (s->p.top_k > 0 && s->p.top_k < n) {
        n = s->p.top_k;
        top_k_sorted(c, logits, s->n_vocab, n);
    } else {
        for (int32_t i = 0; i < s->n_vocab; i++) c[i] = (candidate){logits[i], 0, i};
        qsort(c, (size_t)s->n_vocab, sizeof *c, by_logit_desc);
    }
    softmax_candidates(c, n, 1.0f);
    if (s->p.top_p < 1.0f) {
        double cum = 0;
        for (int32_t i = 0; i < n; i++) {
            cum += c[i].p;
            if (cum >= s->p.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (s->p.min_p > 0) {
        const float floor = c[0].p * s->p.min_p;
        int32_t keep = 1;
        while (keep < n && c[keep].p >= floor) keep++;
        n = keep;
    }
    softmax_candidates(c, n, s->p.temp);
    return n;
}

/* One draw from logits after the penalty: the argmax when greedy. */
static int32_t draw(elm_sampler *s, const float *logits) {
    if (s->p.temp <= 0) return elm_argmax(logits, s->n_vocab);
    const int32_t n = kept_candidates(s, logits);
    const candidate *c = s->cand;
    double r = next_uniform(s), cum = 0;
    for (int32_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (r < cum) return c[i].id;
    }
    return c[n - 1].id;
}

void elm_sampler_set_grammar(elm_sampler *s, elm_grammar_matcher *g) { s->grammar = g; }

/* With a grammar, the draw is first made as without one and kept when the grammar allows it
 * (llama.cpp's order: one token checked instead of the vocabulary); otherwise the refused tokens
 * are masked out and the draw made again. Greedy is exactly the argmax of the allowed tokens;
 * with sampling, the allowed tokens of the unconstrained chain keep their probabilities. */
int32_t elm_sampler_sample(elm_sampler *s, float *logits, const int32_t *history,
                           int32_t n_history) {
    apply_repeat_penalty(s, logits, history, n_history);
    int32_t id = draw(s, logits);
    if (!s->grammar) return id;
    if (!elm_grammar_allows(s->grammar, id)) {
        const int32_t end = elm_grammar_end_id(s->grammar);
        id = elm_grammar_mask(s->grammar, logits) ? draw(s, logits) : end >= 0 ? end : id;
    }
    elm_grammar_accept(s->grammar, id, NULL); /* refused only when nothing was allowed */
    return id;
}

void elm_sampler_probs(elm_sampler *s, float *logits, const int32_t *history, int32_t n_history,
                       float *probs) {
    apply_repeat_penalty(s, logits, history, n_history);
    for (int32_t i = 0; i < s->n_vocab; i++) probs[i] = 0;
    if (s->p.temp <= 0) {
        probs[elm_argmax(logits, s->n_vocab)] = 1;
        return;
    }
    const int32_t n = kept_candidates(s, logits);
    for (int32_t i = 0; i < n; i++) probs[s->cand[i].id] = s->cand[i].p;
}

double elm_sampler_uniform(elm_sampler *s) { return next_uniform(s); }
