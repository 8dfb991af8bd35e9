/* Sampler chain: greedy, determinism per seed, top-k/top-p/min-p filtering, temperature and the
 * repetition penalty, each checked on hand-made logits where the answer is known; top-k over a
 * large vocabulary with ties against a sort of the whole of it. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "edgelm/sampler.h"

#define V 8

static int draw_counts(elm_sampler_params p, const float *logits, int n_draws, int *counts) {
    elm_sampler *s = elm_sampler_new(&p, V);
    int distinct = 0;
    for (int i = 0; i < V; i++) counts[i] = 0;
    for (int d = 0; d < n_draws; d++) {
        float l[V];
        for (int i = 0; i < V; i++) l[i] = logits[i];
        int id = elm_sampler_sample(s, l, NULL, 0);
        if (id >= 0 && id < V && counts[id]++ == 0) distinct++;
    }
    elm_sampler_free(s);
    return distinct;
}

typedef struct {
    float logit;
    int id;
} ranked;

static int by_rank(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

/* top-k 50 of 3001 logits on a coarse grid (many ties, broken by the lower id): the kept
 * tokens and their probabilities are those of the first 50 of the whole vocabulary sorted. */
static void check_top_k_ties(void) {
    enum { N = 3001, K = 50 };
    static float logits[N], probs[N];
    static ranked r[N];
    unsigned seed = 5;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        logits[i] = (float)((seed >> 16) % 64) * 0.25f;
        r[i] = (ranked){logits[i], i};
    }
    qsort(r, N, sizeof *r, by_rank);
    elm_sampler_params p = elm_sampler_defaults();
    p.top_k = K, p.top_p = 1, p.min_p = 0, p.temp = 1;
    elm_sampler *s = elm_sampler_new(&p, N);
    elm_sampler_probs(s, logits, NULL, 0, probs);
    elm_sampler_free(s);
    double sum = 0, worst = 0;
    for (int i = 0; i < K; i++) sum += exp(r[i].logit - r[0].logit);
    for (int i = 0; i < K; i++)
        worst = fmax(worst, fabs(probs[r[i].id] - exp(r[i].logit - r[0].logit) / sum));
    int kept = 0;
    for (int i = 0; i < N; i++) kept += probs[i] > 0;
    CHECK(kept == K && worst < 1e-6, "top-k %d of %d with ties: %d kept, probabilities off by %g",
          K, N, kept, worst);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const float logits[V] = {1.0f, 3.0f, 2.9f, 0.5f, -1.0f, 2.0f, 0.0f, -3.0f};
    int counts[V];
    elm_sampler_params p = elm_sampler_defaults();

    p.temp = 0;
    CHECK(draw_counts(p, logits, 20, counts) == 1 && counts[1] == 20, "greedy picks the argmax");

    p = elm_sampler_defaults();
    p.top_k = 0, p.top_p = 1, p.min_p = 0, p.temp = 1, p.seed = 42;
    int distinct = draw_counts(p, logits, 4000, counts);
    CHECK(distinct >= 6, "full distribution reaches most tokens (%d)", distinct);
    /* p(1)/p(2) = e^0.1 ≈ 1.105 */
    double ratio = (double)counts[1] / counts[2];
    CHECK(ratio > 0.95 && ratio < 1.3, "frequencies follow softmax (ratio %.3f)", ratio);
    int again[V];
    draw_counts(p, logits, 4000, again);
    int same = 1;
    for (int i = 0; i < V; i++) same &= again[i] == counts[i];
    CHECK(same, "same seed, same draws");

    p.top_k = 2;
    CHECK(draw_counts(p, logits, 500, counts) == 2 && counts[1] + counts[2] == 500, "top-k 2");
    p.top_k = 0, p.top_p = 0.5f;
    CHECK(draw_counts(p, logits, 500, counts) <= 2 && counts[0] == 0, "top-p 0.5 keeps the head");
    p.top_p = 1, p.min_p = 0.5f; /* keeps p >= p_max / 2: ids 1 and 2 (id 5 has e^-1 of p_max) */
    draw_counts(p, logits, 2000, counts);
    CHECK(counts[0] == 0 && counts[5] == 0 && counts[1] > 0 && counts[2] > 0, "min-p 0.5");
    p.min_p = 0, p.temp = 0.05f; /* near-greedy */
    draw_counts(p, logits, 200, counts);
    CHECK(counts[1] > 170, "low temperature concentrates on the argmax (%d)", counts[1]);

    /* repetition penalty: token 1 seen recently drops below token 2 */
    p = elm_sampler_defaults();
    p.temp = 0, p.repeat_penalty = 1.5f, p.repeat_last_n = 4;
    elm_sampler *s = elm_sampler_new(&p, V);
    float l[V];
    for (int i = 0; i < V; i++) l[i] = logits[i];
    const int32_t hist[] = {1, 6};
    CHECK(elm_sampler_sample(s, l, hist, 2) == 2, "penalised token loses");
    for (int i = 0; i < V; i++) l[i] = logits[i];
    const int32_t old[] = {1, 6, 6, 6, 6, 6};
    CHECK(elm_sampler_sample(s, l, old, 6) == 1, "outside the window, no penalty");
    elm_sampler_free(s);
    CHECK(elm_argmax(logits, V) == 1, "argmax");
    check_top_k_ties();
    return check_done();
}
