/* Encoders of the lattice-codebook i-quants IQ2_XXS, IQ2_XS, IQ2_S (8 weights per E8-lattice grid
 * point) and IQ3_XXS, IQ3_S (4 weights per D4 point), bit-exact with llama-quantize (llama.cpp's
 * ggml-quants.c, quantize_row_iq2_xxs_impl and its siblings; Kawrakow's i-quants). Layouts and
 * codebooks: docs/kquants.md, "Sub-4-bit i-quants".
 *
 * Each sub-block (16 or 32 weights, one 4-bit scale) is searched the same way: signs are split off
 * (the *_XXS and IQ2_XS types store 7 of every 8 and flip the least important weight to make
 * the count even), the magnitudes are rounded to the odd levels 2l+1 at 13 to 31 trial scales,
 * each group of 8 (or 4) levels that is not a grid point replaced by the nearest of its listed
 * neighbours (weighted distance), and the trial with the best least-squares fit kept, then refit
 * once at its own scale. The neighbour lists are llama.cpp's (iq2xs_init_impl, iq3xs_init_impl):
 * for every code off the grid, the grid points at its one to three smallest squared distances,
 * nearest first and by index within a distance, built here from edgelm's codebooks
 * (iquant_grids.c) at each type's first use. Float operations follow the reference order term by term (no FMA
 * contraction: the build's -ffp-contract=off), since the chosen points depend on every rounding.
 *
 * Speed: nearly all the time goes to the neighbour lists' distances (tens of points per IQ2
 * list, at every trial scale). The distances to all an IQ2 list's points are lanes of one loop
 * the compiler vectorizes, each lane summing its terms in the reference's order, the points'
 * coordinates taken from their level codes (a small table that stays in cache). IQ3's lists hold
 * a few points, so there the trial scales are the lanes instead (trials_d4): every trial's
 * rounding and fit side by side, and each group's list searched once for the run of trials at
 * which it rounds to the same code. The sub-block search is built for AVX2 and AVX-512 as the
 * scale searches are (quant_search.h). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codecs.h"
#include "codecs/iquant_codec.h"
#include "codecs/quant_search.h"
#include "core/half.h"

/* ---- the grids with their neighbour lists ---- */

enum { LAT_IQ2XXS, LAT_IQ2XS, LAT_IQ2S, LAT_IQ3XXS, LAT_IQ3S, N_LAT };

/* Codes of 8 coordinates of 2 bits below level 3 are < 0xAAAB; of 4 of 3 bits, < 4096. The list
 * lengths (a count, then the points padded to ELM_NB_LANES) are what these codebooks give;
 * build() checks them. */
enum { IQ2_MAP = 0xAAAB, IQ3_MAP = 4096 };
enum { NB_IQ2XXS = 141665, NB_IQ2XS = 209425, NB_IQ2S = 74601, NB_IQ3XXS = 22825, NB_IQ3S = 28317 };

typedef struct lattice {
    const uint16_t *codes; /* the grid points' level codes (iquant_codec.h) */
    int n, dim, bits;      /* points, coordinates per point, bits per coordinate in a code */
    int levels;            /* levels 0..levels-1 the search rounds to (kMaxQ in llama.cpp) */
    int nwant;             /* distances whose points a neighbour list holds */
    int lanes;             /* lists padded to a multiple: ELM_NB_LANES, their points searched
                            * side by side, or 1 (IQ3's lists of a few points, searched for
                            * several trial scales side by side: trials_d4) */
    int8_t (*pos)[8];      /* [n] each point's coordinates 2l+1 */
    float (*posf)[4];      /* the same as floats, for the 4-coordinate (IQ3) grids; else NULL */
    int32_t *map;          /* code -> grid index, or -1 - the offset of its list in nb */
    uint16_t *nb;          /* the lists: a count, then grid indices */
    int nb_cap;
} lattice;

/* The most points a grid has, so the most a (padded) list can hold. */
enum { NB_MAX = 1024 };

static int8_t pos2xxs[256][8], pos2xs[512][8], pos2s[1024][8], pos3xxs[256][8], pos3s[512][8];
static float posf3xxs[256][4], posf3s[512][4];
static int32_t map2[3][IQ2_MAP], map3[2][IQ3_MAP];
static uint16_t nb2xxs[NB_IQ2XXS], nb2xs[NB_IQ2XS], nb2s[NB_IQ2S], nb3xxs[NB_IQ3XXS], nb3s[NB_IQ3S];

static lattice lats[N_LAT] = {
    [LAT_IQ2XXS] = {elm_iq2xxs_codes, 256, 8, 2, 3, 2, ELM_NB_LANES, pos2xxs, NULL, map2[0],
                    nb2xxs, NB_IQ2XXS},
    [LAT_IQ2XS] = {elm_iq2xs_codes, 512, 8, 2, 3, 2, ELM_NB_LANES, pos2xs, NULL, map2[1], nb2xs,
                   NB_IQ2XS},
    [LAT_IQ2S] = {elm_iq2s_codes, 1024, 8, 2, 3, 1, ELM_NB_LANES, pos2s, NULL, map2[2], nb2s,
                  NB_IQ2S},
    [LAT_IQ3XXS] = {elm_iq3xxs_codes, 256, 4, 3, 8, 2, 1, pos3xxs, posf3xxs, map3[0], nb3xxs,
                    NB_IQ3XXS},
    [LAT_IQ3S] = {elm_iq3s_codes, 512, 4, 3, 8, 3, 1, pos3s, posf3s, map3[1], nb3s, NB_IQ3S},
};
/* each lattice built at its type's first use: double-checked under one lock */
static atomic_bool lats_built[N_LAT];
static bool lats_ok[N_LAT];
static pthread_mutex_t lats_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fills lt's points, map and lists; false if the lists would not fit (other codebooks). Only
 * codes whose levels are all below lt->levels get a list: the search never rounds to others. */
static bool build(lattice *lt) {
    const int mask = (1 << lt->bits) - 1, size = lt->dim == 8 ? IQ2_MAP : IQ3_MAP;
    for (int k = 0; k < lt->n; k++)
        for (int i = 0; i < lt->dim; i++)
            lt->pos[k][i] = (int8_t)(2 * (lt->codes[k] >> (lt->bits * i) & mask) + 1);
    for (int k = 0; k < lt->n && lt->posf; k++)
        for (int i = 0; i < 4; i++) lt->posf[k][i] = lt->pos[k][i];
    for (int u = 0; u < size; u++) lt->map[u] = -1;
    for (int k = 0; k < lt->n; k++) lt->map[lt->codes[k]] = k;
    int used = 0, d2[1024];
    for (int u = 0; u < size; u++) {
        bool searched = lt->map[u] < 0;
        for (int i = 0; i < lt->dim; i++) searched &= (u >> (lt->bits * i) & mask) < lt->levels;
        if (!searched) continue;
        for (int k = 0; k < lt->n; k++) {
            int s = 0;
            for (int i = 0; i < lt->dim; i++) {
                const int d = lt->pos[k][i] - (2 * (u >> (lt->bits * i) & mask) + 1);
                s += d * d;
            }
            d2[k] = s;
        }
        if (used == lt->nb_cap) return false;
        const int start = used++;
        /* the nwant smallest distances in turn, each distance's points by index */
        for (int w = 0, prev = -1; w < lt->nwant; w++) {
            int next = INT_MAX;
            for (int k = 0; k < lt->n; k++)
                if (d2[k] > prev && d2[k] < next) next = d2[k];
            if (next == INT_MAX) break;
            for (int k = 0; k < lt->n; k++)
                if (d2[k] == next) {
                    if (used == lt->nb_cap) return false;
                    lt->nb[used++] = (uint16_t)k;
                }
            prev = next;
        }
        /* padded to lanes of 8 with copies of the last point, which never win a tie */
        while ((used - start - 1) % lt->lanes) {
            if (used == lt->nb_cap) return false;
            lt->nb[used] = lt->nb[used - 1];
            used++;
        }
        lt->nb[start] = (uint16_t)(used - start - 1);
        lt->map[u] = -1 - start;
    }
    return true;
}

/* Lattice l, built on first use (thread-safe); NULL if its lists did not fit. */
static const lattice *lattice_get(int l) {
    if (!atomic_load_explicit(&lats_built[l], memory_order_acquire)) {
        pthread_mutex_lock(&lats_lock);
        if (!atomic_load_explicit(&lats_built[l], memory_order_relaxed)) {
            lats_ok[l] = build(&lats[l]);
            atomic_store_explicit(&lats_built[l], true, memory_order_release);
        }
        pthread_mutex_unlock(&lats_lock);
    }
    return lats_ok[l] ? &lats[l] : NULL;
}

/* Grid index of the neighbour nearest to x (weights w, the points scaled by `scale`) in the list
 * at nb + start, the first in list order on ties; its levels into L. Lists padded to lanes: the
 * distances of all the list's points are lanes of the inner loop, each summed over the
 * coordinates in order. IQ3's lists of a few points: the reference's loop, one point at a time
 * (lanes of points cost more than they save there; this is IQ3's refit, its trials go through
 * nearest_run). */
static inline __attribute__((always_inline)) int
nearest_listed(const lattice *lt, int start, const float *x, const float *w, float scale,
               int8_t *L) {
    const uint16_t *list = lt->nb + start;
    const int n = list[0];
    int g = list[1];
    if (lt->lanes == 1) {
        float best = FLT_MAX;
        for (int j = 1; j <= n; j++) {
            const int8_t *p = lt->pos[list[j]];
            float d2 = 0;
            for (int i = 0; i < lt->dim; i++) {
                const float diff = scale * p[i] - x[i];
                d2 += w[i] * diff * diff;
            }
            if (d2 < best) best = d2, g = list[j];
        }
    } else {
        const int mask = (1 << lt->bits) - 1;
        uint16_t code[NB_MAX];
        float d2[NB_MAX];
        for (int j = 0; j < n; j++) code[j] = lt->codes[list[j + 1]];
        for (int i = 0; i < lt->dim; i++) {
            const float xi = x[i], wi = w[i];
            const int sh = lt->bits * i;
            for (int j = 0; j < n; j++) {
                const float diff = scale * (2 * (code[j] >> sh & mask) + 1) - xi;
                /* (the first term stored, not added to 0: a zero's sign aside, which no test
                 * sees) */
                d2[j] = i ? d2[j] + wi * diff * diff : wi * diff * diff;
            }
        }
        const int j = elm_first_least(d2, n);
        if (j >= 0) g = list[j + 1];
    }
    for (int i = 0; i < lt->dim; i++) L[i] = (int8_t)((lt->pos[g][i] - 1) / 2);
    return g;
}

/* Grid index for the levels of x rounded at inverse scale id into L: the point itself when the
 * rounding lands on the grid, else its nearest listed neighbour at `scale`; *on whether it did. */
static inline __attribute__((always_inline)) int
round_group(const lattice *lt, const float *x, const float *waux, float id, float scale, int8_t *L,
            bool *on) {
    int u = 0;
    for (int i = 0; i < lt->dim; i++) {
        int l = elm_nearest_int(0.5f * (id * x[i] - 1));
        l = l < 0 ? 0 : l > lt->levels - 1 ? lt->levels - 1 : l;
        L[i] = (int8_t)l;
        u |= l << (lt->bits * i);
    }
    const int g = lt->map[u];
    *on = g >= 0;
    return g >= 0 ? g : nearest_listed(lt, -g - 1, x, waux, scale, L);
}

/* ---- the sub-block search ---- */

/* After the trial scales, which groups are rounded again at the best fit's scale: all (IQ2_XXS),
 * those off the grid (IQ2_XS, IQ2_S, IQ3_XXS), or all when any is off (IQ3_S). */
typedef enum { REFIT_ALL, REFIT_OFF, REFIT_ANY_OFF } refit_mode;

typedef struct iq_kind {
    elm_type type;
    int lat, sub;       /* lattice, weights per sub-block */
    int steps;          /* trial inverse scales (2·levels - 1 + is·step)/max, |is| <= steps */
    float step, eps;    /* eps: the largest magnitude below which a sub-block is all zeros */
    bool twice_sigma;   /* σ² = 2·Σx²/256 in the weights, else Σx²/256 */
    bool parity;        /* 7 sign bits stored per 8 weights, the count of minus signs even */
    bool qp_start;      /* the trials around make_qp_quants' scale, not the largest magnitude */
    bool sigma_no_qw;   /* without importances w = σ²/4 + x² (IQ2_S), else x² */
    refit_mode refit;
    float fudge;        /* the stored d is max_scale/31 times this */
} iq_kind;

/* IQ3_S's zero test is max == 0: for magnitudes, max < the smallest subnormal. */
static const iq_kind kinds[] = {
    {ELM_TYPE_IQ2_XXS, LAT_IQ2XXS, 32, 6, 0.1f, 1e-15f, false, true, true, false, REFIT_ALL, 1.f},
    {ELM_TYPE_IQ2_XS, LAT_IQ2XS, 16, 9, 0.1f, 1e-15f, false, true, false, false, REFIT_OFF, 1.f},
    {ELM_TYPE_IQ2_S, LAT_IQ2S, 16, 9, 0.1f, 1e-8f, true, false, false, true, REFIT_OFF, 0.9875f},
    {ELM_TYPE_IQ3_XXS, LAT_IQ3XXS, 32, 15, 0.2f, 1e-8f, true, true, false, false, REFIT_OFF,
     1.0125f},
    {ELM_TYPE_IQ3_S, LAT_IQ3S, 32, 9, 0.2f, 0x1p-149f, true, false, false, false, REFIT_ANY_OFF,
     1.033f},
};

/* Σ w·x·q and Σ w·q² over n weights at levels L (q = 2L + 1). */
static void fit(int n, const float *w, const float *x, const int8_t *L, float *sqx, float *sq2) {
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < n; i++) {
        const float q = 2 * L[i] + 1;
        sumqx += w[i] * x[i] * q;
        sumq2 += w[i] * q * q;
    }
    *sqx = sumqx;
    *sq2 = sumq2;
}

/* The magnitudes v[n] of the weights x[n] and their sign bits (bit i set: x[i] < 0). With
 * parity (7 sign bits stored per 8), an odd count of minus signs is made even by giving the
 * weight of least weight·x² the wrong sign: its v is then -|x|. */
static unsigned split_signs(const float *x, const float *weight, int n, bool parity, float *v) {
    int nflip = 0;
    unsigned s = 0;
    for (int i = 0; i < n; i++) {
        if (x[i] >= 0) {
            v[i] = x[i];
        } else {
            v[i] = -x[i];
            nflip++;
            s |= 1u << i;
        }
    }
    if (parity && nflip % 2) {
        int imin = 0;
        float min = weight[0] * x[0] * x[0];
        for (int i = 1; i < n; i++) {
            const float ax = weight[i] * x[i] * x[i];
            if (ax < min) min = ax, imin = i;
        }
        v[imin] = -v[imin];
        s ^= 1u << imin;
    }
    return s;
}

/* ---- IQ3: the trial scales side by side ---- */

/* IQ3's sub-blocks are 8 groups of 4 weights (D4 points, 3-bit levels) with at most 31 trial
 * scales (IQ3_XXS). The trials are lanes: each weight's levels at every trial side by side, and
 * each group's neighbour search over the run of consecutive trials at which it rounds to the same
 * off-grid code, 8 trials at a time. On tl1's weights nearly 9 groups in 10 round off the grid,
 * in runs of about 5 trials (4 to 6 runs per group), lists of 5 to 7 points on average. */
enum { TRIALS = 32, LANES3 = 8 };

/* a if c, else b: by its bits, since GCC makes `best[k] = c ? a : best[k]` in a vectorized loop a
 * masked store, whose value the next step's load waits for */
static inline float select_bits(bool c, float a, float b) {
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    const uint32_t m = -(uint32_t)c, r = (ua & m) | (ub & ~m);
    float f;
    memcpy(&f, &r, 4);
    return f;
}

/* The nearest point of `list` to the group x (weights w) at the scales sc of trials t0..t1-1
 * (list order on ties): its levels into lv[0..3][t]. Each lane adds its terms in the order of
 * nearest_listed's one-point-at-a-time loop, the point's coordinates read as floats (posf).
 * (GCC vectorizes this form; a table of the scaled levels, or the first term stored instead of
 * added to 0, left it scalar and twice as slow.) */
static inline __attribute__((always_inline)) void
nearest_run(const lattice *lt, const uint16_t *list, int t0, int t1, const float *x,
            const float *w, const float *sc, int8_t lv[][TRIALS]) {
    const int n = list[0];
    for (int w0 = t0; w0 < t1; w0 += LANES3) {
        float best[LANES3];
        int32_t bg[LANES3];
        for (int k = 0; k < LANES3; k++) best[k] = FLT_MAX, bg[k] = list[1];
        for (int j = 1; j <= n; j++) {
            const int32_t c = list[j];
            const float *p = lt->posf[c];
            for (int k = 0; k < LANES3; k++) {
                const float s = sc[w0 + k];
                float d2 = 0;
                for (int i = 0; i < 4; i++) {
                    const float diff = s * p[i] - x[i];
                    d2 += w[i] * diff * diff;
                }
                const bool less = d2 < best[k];
                best[k] = select_bits(less, d2, best[k]);
                bg[k] = less ? c : bg[k];
            }
        }
        for (int k = 0; k < LANES3 && w0 + k < t1; k++)
            for (int i = 0; i < 4; i++) lv[i][w0 + k] = (int8_t)(lt->pos[bg[k]][i] >> 1);
    }
}

/* The trial scales of an IQ3 sub-block (magnitudes xval, largest top): the best fit's levels into
 * L, its groups' grid indices into g and whether each was on the grid into on, its scale into
 * *scale; all left as they are when no trial fits. The same choices as the one-trial-at-a-time
 * loop of search(): each trial's rounding, neighbours and sums are its own lane's. */
static inline __attribute__((always_inline)) void
trials_d4(const iq_kind *kd, const lattice *lt, const float *xval, const float *weight,
          const float *waux, float top, int8_t *L, uint16_t *g, bool *on, float *scale) {
    const int nt = 2 * kd->steps + 1, kmax = lt->levels;
    /* the lanes past the last trial repeat it; its runs read up to LANES3 - 1 past it */
    float id[TRIALS + LANES3], sc[TRIALS + LANES3];
    for (int t = 0; t < TRIALS + LANES3; t++) {
        const int is = (t < nt ? t : nt - 1) - kd->steps;
        id[t] = (2 * kmax - 1 + is * kd->step) / top;
        sc[t] = 1 / id[t];
    }
    int8_t lv[32][TRIALS];
    for (int i = 0; i < 32; i++)
        for (int t = 0; t < TRIALS; t++) {
            const int l = elm_nearest_int(0.5f * (id[t] * xval[i] - 1));
            lv[i][t] = (int8_t)(l < 0 ? 0 : l > kmax - 1 ? kmax - 1 : l);
        }
    /* each group's code at each trial; its neighbours, run by run */
    int16_t u[8][TRIALS];
    for (int grp = 0; grp < 8; grp++)
        for (int t = 0; t < TRIALS; t++)
            u[grp][t] = (int16_t)(lv[4 * grp][t] | lv[4 * grp + 1][t] << 3 |
                                  lv[4 * grp + 2][t] << 6 | lv[4 * grp + 3][t] << 9);
    for (int grp = 0; grp < 8; grp++)
        for (int t0 = 0, t1; t0 < nt; t0 = t1) {
            for (t1 = t0 + 1; t1 < nt && u[grp][t1] == u[grp][t0];) t1++;
            const int m = lt->map[u[grp][t0]];
            if (m < 0)
                nearest_run(lt, lt->nb - m - 1, t0, t1, xval + 4 * grp, waux + 4 * grp, sc,
                            lv + 4 * grp);
        }
    /* each trial's fit */
    float sumqx[TRIALS] = {0}, sumq2[TRIALS] = {0};
    for (int i = 0; i < 32; i++) {
        const float wx = weight[i] * xval[i], wi = weight[i];
        for (int t = 0; t < TRIALS; t++) {
            const float q = 2 * lv[i][t] + 1;
            sumqx[t] += wx * q;
            sumq2[t] += wi * q * q;
        }
    }
    float best = 0;
    int tbest = -1;
    for (int t = 0; t < nt; t++)
        if (sumq2[t] > 0 && sumqx[t] * sumqx[t] > best * sumq2[t]) {
            *scale = sumqx[t] / sumq2[t];
            best = *scale * sumqx[t];
            tbest = t;
        }
    if (tbest < 0) return;
    for (int i = 0; i < 32; i++) L[i] = lv[i][tbest];
    for (int grp = 0; grp < 8; grp++) {
        on[grp] = lt->map[u[grp][tbest]] >= 0;
        g[grp] = (uint16_t)lt->map[L[4 * grp] | L[4 * grp + 1] << 3 | L[4 * grp + 2] << 6 |
                                   L[4 * grp + 3] << 9];
    }
}

/* One sub-block xb[kd->sub] with importances qw (or NULL): its grid indices g[sub/dim] and sign
 * bytes signs[sub/8]; returns false for a sub-block written as zeros (nothing packed), else
 * true with its scale (>= 0) in *scale. */
ELM_SEARCH_CLONES static bool search(const iq_kind *kd, const lattice *lt, const float *xb,
                                     const float *qw, float sigma2, uint16_t *g, uint8_t *signs,
                                     float *scale_out) {
    const int n = kd->sub, ng = n / lt->dim, kmax = lt->levels;
    float weight[32], waux[32], xval[32] = {0}; /* (all set below: zeroed for the compiler) */
    int8_t L[32], Laux[32];
    uint16_t gaux[8];
    bool on[8], onaux[8];
    for (int i = 0; i < n; i++)
        weight[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i])
                       : kd->sigma_no_qw ? 0.25f * sigma2 + xb[i] * xb[i] : xb[i] * xb[i];
    for (int i = 0; i < n; i++) waux[i] = sqrtf(weight[i]);
    for (int k = 0; k < n / 8; k++) {
        const unsigned s = split_signs(xb + 8 * k, weight + 8 * k, 8, kd->parity, xval + 8 * k);
        signs[k] = (uint8_t)(kd->parity ? s & 127 : s);
    }
    float max = xval[0];
    for (int i = 1; i < n; i++) max = max > xval[i] ? max : xval[i];
    if (max < kd->eps) return false;
    float scale = max / (2 * kmax - 1), top = max;
    if (kd->qp_start) {
        scale = elm_make_qp_quants(n, kmax + 1, xval, (uint8_t *)L, weight);
        top = scale * kmax;
        if (top <= 0) return false;
    }
    memset(L, 0, sizeof L);
    for (int k = 0; k < ng; k++) g[k] = 0, on[k] = kd->refit != REFIT_ANY_OFF;
    if (lt->lanes == 1) {
        trials_d4(kd, lt, xval, weight, waux, top, L, g, on, &scale);
    } else {
        float best = 0;
        for (int is = -kd->steps; is <= kd->steps; is++) {
            const float id = (2 * kmax - 1 + is * kd->step) / top, this_scale = 1 / id;
            for (int k = 0; k < ng; k++)
                gaux[k] = (uint16_t)round_group(lt, xval + lt->dim * k, waux + lt->dim * k, id,
                                                this_scale, Laux + lt->dim * k, &onaux[k]);
            float sumqx, sumq2;
            fit(n, weight, xval, Laux, &sumqx, &sumq2);
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                memcpy(L, Laux, (size_t)n);
                memcpy(g, gaux, sizeof(uint16_t) * (size_t)ng);
                memcpy(on, onaux, sizeof(bool) * (size_t)ng);
            }
        }
    }
    int n_off = 0;
    for (int k = 0; k < ng; k++) n_off += !on[k];
    if (scale > 0 && (kd->refit == REFIT_ALL || n_off > 0)) {
        const float id = 1 / scale;
        for (int k = 0; k < ng; k++) {
            bool dummy;
            if (kd->refit == REFIT_OFF && on[k]) continue;
            g[k] = (uint16_t)round_group(lt, xval + lt->dim * k, waux + lt->dim * k, id, scale,
                                         L + lt->dim * k, &dummy);
        }
        float sumqx, sumq2;
        fit(n, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
        /* (a negative fit; llama.cpp keeps the scale positive and flips the signs) */
        scale = -scale;
        for (int k = 0; k < n / 8; k++)
            signs[k] = (uint8_t)(kd->parity ? ~signs[k] & 127 : ~signs[k]);
    }
    *scale_out = scale;
    return true;
}

/* ---- blocks ---- */

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* The 4-bit code of a sub-block scale, against the super-block's d = max_scale/31. */
static unsigned scale_code(float id, float scale) {
    const int l = elm_nearest_int(0.5f * (id * scale - 1));
    return (unsigned)(l < 0 ? 0 : l > 15 ? 15 : l);
}

/* Seven sign bits per byte of four bytes into one word. */
static uint32_t signs28(const uint8_t *s) {
    return (uint32_t)s[0] | (uint32_t)s[1] << 7 | (uint32_t)s[2] << 14 | (uint32_t)s[3] << 21;
}

/* Writes the grid indices g, sign bytes and 4-bit scale codes of a block's sub-blocks into y
 * (zeroed, its f16 d already stored); a sub-block not `packed` keeps its zeros. */
static void pack_block(const iq_kind *kd, const lattice *lt, const unsigned code[16],
                       const uint16_t g[16][8], const uint8_t signs[16][4], const bool packed[16],
                       uint8_t *y) {
    const int nsub = ELM_QK_K / kd->sub, gps = kd->sub / lt->dim;
    uint8_t *qs = y + 2;
    switch (kd->type) {
    case ELM_TYPE_IQ2_XXS: /* per 32: four grid bytes, then 4×7 sign bits and the scale */
        for (int ib = 0; ib < nsub; ib++) {
            if (packed[ib])
                put32(qs + 8 * ib, (uint32_t)g[ib][0] | (uint32_t)g[ib][1] << 8 |
                                       (uint32_t)g[ib][2] << 16 | (uint32_t)g[ib][3] << 24);
            put32(qs + 8 * ib + 4,
                  (packed[ib] ? signs28(signs[ib]) : 0) | (uint32_t)code[ib] << 28);
        }
        return;
    case ELM_TYPE_IQ2_XS: /* per 16: two 16-bit words of 9-bit grid index and 7 sign bits */
        for (int ib = 0; ib < nsub; ib++) {
            for (int k = 0; k < 2 && packed[ib]; k++) {
                const unsigned v = g[ib][k] | (unsigned)signs[ib][k] << 9;
                qs[4 * ib + 2 * k] = (uint8_t)v;
                qs[4 * ib + 2 * k + 1] = (uint8_t)(v >> 8);
            }
            y[66 + ib / 2] |= (uint8_t)(code[ib] << 4 * (ib % 2));
        }
        return;
    case ELM_TYPE_IQ2_S: /* grid low bytes, sign bytes, 2 high bits per point, scales */
        for (int ib = 0; ib < nsub; ib++) {
            for (int k = 0; k < 2 && packed[ib]; k++) {
                const int i8 = 2 * ib + k;
                qs[i8] = (uint8_t)g[ib][k];
                y[66 + i8 / 4] |= (uint8_t)((g[ib][k] >> 8) << 2 * (i8 % 4));
                qs[32 + i8] = signs[ib][k];
            }
            y[74 + ib / 2] |= (uint8_t)(code[ib] << 4 * (ib % 2));
        }
        return;
    case ELM_TYPE_IQ3_XXS: /* 64 grid bytes, then per 32: 4×7 sign bits and the scale */
        for (int ib = 0; ib < nsub; ib++) {
            for (int k = 0; k < 8 && packed[ib]; k++) qs[8 * ib + k] = (uint8_t)g[ib][k];
            put32(qs + 64 + 4 * ib,
                  (packed[ib] ? signs28(signs[ib]) : 0) | (uint32_t)code[ib] << 28);
        }
        return;
    case ELM_TYPE_IQ3_S: {
        /* grid low bytes, a high bit per point, sign bytes, scales. llama.cpp moves on in qs and
         * signs only past a sub-block it packs, so those of an all-zero sub-block go to the next
         * one's place (the high bits stay in place) */
        uint8_t *q = qs, *qh = y + 66, *sg = y + 74;
        for (int ib = 0; ib < nsub; ib++) {
            if (!packed[ib]) continue;
            for (int k = 0; k < gps; k++) {
                q[k] = (uint8_t)g[ib][k];
                qh[(ib * gps + k) / 8] |= (uint8_t)((g[ib][k] >> 8) << ((ib * gps + k) % 8));
            }
            memcpy(sg, signs[ib], 4);
            q += gps;
            sg += 4;
        }
        for (int ib = 0; ib < nsub; ib += 2)
            y[106 + ib / 2] = (uint8_t)(code[ib] | code[ib + 1] << 4);
        return;
    }
    default: return;
    }
}

static void encode_block(const iq_kind *kd, const lattice *lt, const float *x, const float *qw,
                         uint8_t *y, size_t bytes) {
    const int nsub = ELM_QK_K / kd->sub;
    float scales[16], max_scale = 0, sumx2 = 0;
    uint16_t g[16][8];
    uint8_t signs[16][4];
    bool packed[16];
    unsigned code[16] = {0};
    for (int i = 0; i < ELM_QK_K; i++) sumx2 += x[i] * x[i];
    const float sigma2 = kd->twice_sigma ? 2 * sumx2 / ELM_QK_K : sumx2 / ELM_QK_K;
    for (int ib = 0; ib < nsub; ib++) {
        scales[ib] = 0;
        packed[ib] = search(kd, lt, x + kd->sub * ib, qw ? qw + kd->sub * ib : NULL, sigma2, g[ib],
                            signs[ib], &scales[ib]);
        max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
    }
    memset(y, 0, bytes);
    /* IQ2_XXS, IQ2_XS and IQ3_XXS gather their codes aside and write none for an all-zero
     * super-block; IQ2_S and IQ3_S write them in place, before knowing (with zero scales) */
    const bool in_place = kd->type == ELM_TYPE_IQ2_S || kd->type == ELM_TYPE_IQ3_S;
    if (!max_scale && !in_place) return;
    if (max_scale) {
        const float d = max_scale / 31, id = 1 / d;
        elm_store_f16(y, d * kd->fudge);
        for (int ib = 0; ib < nsub; ib++) code[ib] = scale_code(id, scales[ib]);
    }
    pack_block(kd, lt, code, g, signs, packed, y);
}

static const iq_kind *kind_of(elm_type type) {
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (kinds[k].type == type) return &kinds[k];
    return NULL;
}

bool elm_iquant_grid_encode(elm_type type, const float *x, void *dst, int64_t n,
                            const float *qw) {
    const iq_kind *kd = kind_of(type);
    if (!kd || (!qw && (type == ELM_TYPE_IQ2_XXS || type == ELM_TYPE_IQ2_XS))) return false;
    const lattice *lt = lattice_get(kd->lat);
    if (!lt) return false;
    const size_t bytes = elm_type_get((uint32_t)type)->block_bytes;
    uint8_t *y = dst;
    for (int64_t i = 0; i < n / ELM_QK_K; i++)
        encode_block(kd, lt, x + ELM_QK_K * i, qw ? qw + ELM_QK_K * i : NULL,
                     y + bytes * (size_t)i, bytes);
    return true;
}

void elm_iq2_s_from_float(const float *src, void *dst, int64_t n) {
    elm_iquant_grid_encode(ELM_TYPE_IQ2_S, src, dst, n, NULL);
}

void elm_iq3_xxs_from_float(const float *src, void *dst, int64_t n) {
    elm_iquant_grid_encode(ELM_TYPE_IQ3_XXS, src, dst, n, NULL);
}

void elm_iq3_s_from_float(const float *src, void *dst, int64_t n) {
    elm_iquant_grid_encode(ELM_TYPE_IQ3_S, src, dst, n, NULL);
}

/* ---- one group at a given step (GPTQ) ---- */

/* The decoded magnitudes of kd's lattice points, dim bytes per point (iquant_codec.h). */
static const uint8_t *magnitudes(const iq_kind *kd) {
    const elm_iq_grids *G = elm_iq_grids_get();
    switch (kd->lat) {
    case LAT_IQ2XXS: return G->iq2xxs[0];
    case LAT_IQ2XS: return G->iq2xs[0];
    case LAT_IQ2S: return G->iq2s[0];
    case LAT_IQ3XXS: return G->iq3xxs[0];
    default: return G->iq3s[0];
    }
}

int elm_iquant_group(elm_type type) {
    if (type == ELM_TYPE_IQ1_S || type == ELM_TYPE_IQ1_M) return 8;
    const iq_kind *kd = kind_of(type);
    if (!kd) return 0;
    return kd->parity ? 8 : lats[kd->lat].dim;
}

/* The magnitudes of magnitudes(kd) as floats by coordinate, [dim][points]: the distances to
 * every point then vectorize over the points. Built at the first call (thread-safe). */
static float mag_t[N_LAT][8 * 1024];
static pthread_once_t mag_t_once = PTHREAD_ONCE_INIT;

static void mag_t_build(void) {
    for (size_t l = 0; l < sizeof kinds / sizeof kinds[0]; l++) {
        const lattice *lt = &lats[kinds[l].lat];
        const uint8_t *mag = magnitudes(&kinds[l]);
        for (int k = 0; k < lt->n; k++)
            for (int i = 0; i < lt->dim; i++)
                mag_t[kinds[l].lat][i * lt->n + k] = mag[k * lt->dim + i];
    }
}

void elm_iquant_nearest(elm_type type, const float *x, const float *w, float step, int8_t *q) {
    const iq_kind *kd = kind_of(type);
    const lattice *lt = &lats[kd->lat];
    const uint8_t *mag = magnitudes(kd);
    const int n = elm_iquant_group(type);
    float v[8], ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, d2[1024];
    if (!w) w = ones;
    pthread_once(&mag_t_once, mag_t_build);
    const float *mt = mag_t[kd->lat];
    const unsigned s = split_signs(x, w, n, kd->parity, v);
    /* every point, as the error feedback moves the weights anywhere: at most 1024 of 8 */
    for (int k0 = 0; k0 < n; k0 += lt->dim) {
        for (int k = 0; k < lt->n; k++) d2[k] = 0;
        for (int i = 0; i < lt->dim; i++) {
            const float *m = mt + i * lt->n, vi = v[k0 + i], wi = w[k0 + i];
            for (int k = 0; k < lt->n; k++) {
                const float diff = step * m[k] - vi;
                d2[k] += wi * diff * diff;
            }
        }
        int best = 0;
        for (int k = 1; k < lt->n; k++)
            if (d2[k] < d2[best]) best = k;
        for (int i = 0; i < lt->dim; i++) {
            const int a = mag[(size_t)best * (size_t)lt->dim + (size_t)i];
            q[k0 + i] = (int8_t)(s >> (k0 + i) & 1 ? -a : a);
        }
    }
}

bool elm_iquant_put(elm_type type, float d, const int8_t sc[16], const int8_t q[256], void *dst) {
    const iq_kind *kd = kind_of(type);
    const lattice *lt = kd ? lattice_get(kd->lat) : NULL;
    if (!lt) return false;
    const uint8_t *mag = magnitudes(kd);
    const int nsub = ELM_QK_K / kd->sub, gps = kd->sub / lt->dim, mask = (1 << lt->bits) - 1;
    /* a magnitude's level index, from the codebook itself */
    int8_t level[64];
    memset(level, -1, sizeof level);
    for (int k = 0; k < lt->n; k++)
        for (int i = 0; i < lt->dim; i++)
            level[mag[k * lt->dim + i]] = (int8_t)(lt->codes[k] >> (lt->bits * i) & mask);
    uint16_t g[16][8];
    uint8_t signs[16][4];
    bool packed[16];
    unsigned code[16];
    for (int ib = 0; ib < nsub; ib++) {
        const int8_t *qb = q + kd->sub * ib;
        packed[ib] = true;
        code[ib] = (unsigned)(sc[kd->sub * ib / 16] - 1) / 2;
        for (int k = 0; k < gps; k++) {
            int u = 0;
            for (int i = 0; i < lt->dim; i++) {
                const int a = abs(qb[lt->dim * k + i]);
                if (a >= 64 || level[a] < 0) return false;
                u |= level[a] << (lt->bits * i);
            }
            if (lt->map[u] < 0 || lt->codes[lt->map[u]] != u) return false;
            g[ib][k] = (uint16_t)lt->map[u];
        }
        for (int k = 0; k < kd->sub / 8; k++) {
            unsigned s = 0;
            for (int i = 0; i < 8; i++) s |= (unsigned)(qb[8 * k + i] < 0) << i;
            signs[ib][k] = (uint8_t)(kd->parity ? s & 127 : s);
        }
    }
    const size_t bytes = elm_type_get((uint32_t)type)->block_bytes;
    uint8_t *y = dst;
    memset(y, 0, bytes);
    /* d is the f16 value times a power of two (elm_iquant_scales) */
    const float unit = type == ELM_TYPE_IQ3_S ? 1.0f : type == ELM_TYPE_IQ3_XXS ? 0.25f : 0.125f;
    elm_store_f16(y, d / unit);
    pack_block(kd, lt, code, g, signs, packed, y);
    return true;
}
