/* Per-position comparison of two next-token distributions (docs/formats.md, "KL divergence and
 * friends"): KL(P_ref || P_q), argmax agreement, top-5 overlap and Δp of the true next token,
 * accumulated over the scored positions and summarised with mean ± stderr, median, p99 and max.
 *
 * Unlike llama-perplexity, which skips terms with log P_i <= -16 and keeps the reference in 16
 * bits, every vocabulary term is summed in double from float32 log-probs: edgelm is the float64
 * reference. Both sides are rounded to float32 the same way, so a distribution compared with
 * itself gives exactly 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/eval.h"

#define TOPK 5

struct elm_kld_acc {
    int64_t cap, n;
    double sum, sum2, max;
    int64_t top1;
    double top5_sum;      /* Σ |top5(P) ∩ top5(Q)| / 5 */
    double sum_dp2;
    double kld[];         /* [cap] per-position values, for the order statistics */
};

void elm_log_softmax_f32(const float *logits, int32_t n, float *out) {
    float max = logits[0];
    for (int32_t i = 1; i < n; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += exp((double)logits[i] - max);
    const double shift = max + log(sum);
    for (int32_t i = 0; i < n; i++) out[i] = (float)((double)logits[i] - shift);
}

elm_kld_acc *elm_kld_acc_new(int64_t capacity) {
    if (capacity <= 0 || (uint64_t)capacity > (SIZE_MAX - sizeof(elm_kld_acc)) / sizeof(double))
        return NULL;
    elm_kld_acc *a = calloc(1, sizeof *a + sizeof(double) * (size_t)capacity);
    if (!a) return NULL;
    a->cap = capacity;
    return a;
}

void elm_kld_acc_free(elm_kld_acc *a) { free(a); }

/* Indices of the k largest values, largest first; the lower index wins a tie (as argmax does). */
static void top_k(const float *x, int32_t n, int32_t *idx, int k) {
    int have = 0;
    for (int32_t i = 0; i < n; i++) {
        if (have == k && !(x[i] > x[idx[k - 1]])) continue;
        int pos = have < k ? have++ : k - 1;
        while (pos > 0 && x[i] > x[idx[pos - 1]]) {
            idx[pos] = idx[pos - 1];
            pos--;
        }
        idx[pos] = i;
    }
}

bool elm_kld_acc_add(elm_kld_acc *a, const float *ref_lp, const float *q_lp, int32_t n_vocab,
                     int32_t next) {
    if (a->n >= a->cap) return false;
    double kl = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        const double lp = ref_lp[i];
        const double p = exp(lp);
        if (p > 0) kl += p * (lp - (double)q_lp[i]); /* 0·log 0 = 0, not NaN */
    }
    int32_t tp[TOPK], tq[TOPK];
    const int k = n_vocab < TOPK ? n_vocab : TOPK;
    top_k(ref_lp, n_vocab, tp, k);
    top_k(q_lp, n_vocab, tq, k);
    int hits = 0;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) hits += tp[i] == tq[j];
    const double dp = exp((double)q_lp[next]) - exp((double)ref_lp[next]);

    a->kld[a->n++] = kl;
    a->sum += kl;
    a->sum2 += kl * kl;
    a->max = a->n == 1 || kl > a->max ? kl : a->max;
    a->top1 += tp[0] == tq[0];
    a->top5_sum += (double)hits / k;
    a->sum_dp2 += dp * dp;
    return true;
}

static int cmp_double(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Linear interpolation between the order statistics around rank q*(n-1) of sorted v [n]. */
static double percentile(const double *v, int64_t n, double q) {
    const double rank = q * (double)(n - 1);
    const int64_t lo = (int64_t)rank;
    const int64_t hi = lo + 1 < n ? lo + 1 : lo;
    const double frac = rank - (double)lo;
    return v[lo] + (v[hi] - v[lo]) * frac;
}

void elm_kld_acc_finish(elm_kld_acc *a, elm_kld_stats *out) {
    memset(out, 0, sizeof *out);
    const int64_t n = a->n;
    out->n = n;
    if (n == 0) return;
    const double mean = a->sum / (double)n, var = a->sum2 / (double)n - mean * mean;
    qsort(a->kld, (size_t)n, sizeof(double), cmp_double);
    out->kld_mean = mean;
    out->kld_stderr = n > 1 && var > 0 ? sqrt(var / (double)(n - 1)) : 0;
    out->kld_median = percentile(a->kld, n, 0.5);
    out->kld_p99 = percentile(a->kld, n, 0.99);
    out->kld_max = a->max;
    out->top1_pct = 100.0 * (double)a->top1 / (double)n;
    out->top5_overlap_pct = 100.0 * a->top5_sum / (double)n;
    out->rms_dp_pct = 100.0 * sqrt(a->sum_dp2 / (double)n);
}
