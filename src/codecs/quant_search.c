/* Scale searches of ggml's super-block and importance-weighted encoders (quant_search.h). Each
 * expression keeps the reference's operand order (w·x·l is (w·x)·l), because the encoders must
 * reproduce llama-quantize's bytes, and a different rounding of one sum can flip a code. */
#include <math.h>
#include <string.h>

#include "codecs/quant_search.h"

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The signed value of largest magnitude in x [n] (the first on ties) into *max; false, with L
 * zeroed, when every |x| is below ELM_GROUP_EPS (the group quantizes to zeros). */
static bool signed_max(int n, const float *x, float *max, int8_t *L) {
    float amax = 0;
    *max = 0;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            *max = x[i];
        }
    }
    if (amax >= ELM_GROUP_EPS) return true;
    memset(L, 0, (size_t)n);
    return false;
}

/* The reference's search: its first pass (iscale = -nmax/max), then is = -9..9 but 0, each
 * taking the codes and scale of a strictly better Σ(w·x·l)²/Σ(w·l²). The 19 passes' sums are
 * independent, so they run side by side in one walk over x, each still in the reference's order
 * (exact), and only the winner's codes are written; the passes one after another spent most of
 * their time waiting on their chains of dependent float additions. Within the walk the code l is
 * kept as a float: (v + 1.5·2^23) - 1.5·2^23 is nearest_int(v) exactly for |v| < 2^22 (here
 * |v| <= nmax + 1), so the loop over the passes vectorizes (padded to QX_LANES; the padding pass
 * repeats the first and is never chosen). */
enum { QX_PASSES = 19, QX_LANES = 20, QX_MAX_N = 32 };

ELM_SEARCH_CLONES float elm_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *qw) {
    float max;
    if (!signed_max(n, x, &max, L)) return 0.f;
    float iscale[QX_LANES], sumlx[QX_LANES] = {0}, suml2[QX_LANES] = {0};
    iscale[0] = -nmax / max;
    for (int is = -9, k = 1; is <= 9; is++)
        if (is != 0) iscale[k++] = -(nmax + 0.1f * is) / max;
    iscale[QX_PASSES] = iscale[0];
    const float lo = (float)-nmax, hi = (float)(nmax - 1);
    float wv[QX_MAX_N]; /* the weights first: no branch is left in the walk to stop it vectorizing */
    for (int i = 0; i < n; i++) wv[i] = qw ? qw[i] : x[i] * x[i];
    for (int i = 0; i < n; i++) {
        const float w = wv[i], wx = w * x[i];
        for (int k = 0; k < QX_LANES; k++) {
            float l = (iscale[k] * x[i] + 12582912.f) - 12582912.f;
            l = l < lo ? lo : l > hi ? hi : l;
            sumlx[k] += wx * l;
            suml2[k] += w * l * l;
        }
    }
    float scale = suml2[0] ? sumlx[0] / suml2[0] : 0.0f;
    float best = scale * sumlx[0];
    int win = 0;
    for (int k = 1; k < QX_PASSES; k++)
        if (suml2[k] > 0 && sumlx[k] * sumlx[k] > best * suml2[k]) {
            scale = sumlx[k] / suml2[k];
            best = scale * sumlx[k];
            win = k;
        }
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(nmax + clampi(elm_nearest_int(iscale[win] * x[i]), -nmax, nmax - 1));
    return scale;
}

float elm_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float max;
    if (!signed_max(n, x, &max, L)) return 0.f;
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clampi(elm_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                const int new_l = clampi(elm_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The reference's search runs group by group, and within a group candidate by candidate: a
 * candidate that beats the best so far moves the min that the later ones start from, so neither
 * the candidates nor the walk over x can be reordered. The groups, though, are independent: here
 * they run side by side, one lane each (x transposed to [i][group]), every lane taking the
 * reference's steps in its order and the data-dependent choices made per lane by selects, so
 * that the inner loops over the groups vectorize and each group's result is the reference's.
 * Within the walk a code is kept as a float: (v + 1.5·2^23) - 1.5·2^23 is elm_nearest_int(v)
 * exactly for |v| < 2^22 (here 0 <= v <= nmax + 1). */
static inline __attribute__((always_inline)) void
qkx_search(int ng, int n, int nmax, const float *x, const float *w, uint8_t *L, float *scale_out,
           float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    /* every loop over the groups runs over all G lanes, a count the vectorizer takes whole;
     * lanes past ng hold all-zero groups, never chosen */
    enum { G = ELM_QKX_MAX_GROUPS, N = ELM_QKX_MAX_N };
    float xt[N][G] = {{0}}, wt[N][G] = {{0}}, Lb[N][G], la[N][G];
    float min[G], max[G], sum_w[G], sum_x[G], scale[G], best[G] = {0}, iscale[G];
    int32_t live[G]; /* (ints, not bools: selects on them vectorize) */
    for (int j = 0; j < ng; j++)
        for (int i = 0; i < n; i++) {
            xt[i][j] = x[(size_t)n * j + i];
            wt[i][j] = w[(size_t)n * j + i];
        }
    for (int j = 0; j < G; j++) {
        min[j] = max[j] = xt[0][j];
        sum_w[j] = wt[0][j];
        sum_x[j] = sum_w[j] * xt[0][j];
    }
    for (int i = 1; i < n; i++)
        for (int j = 0; j < G; j++) {
            min[j] = xt[i][j] < min[j] ? xt[i][j] : min[j];
            max[j] = xt[i][j] > max[j] ? xt[i][j] : max[j];
            sum_w[j] += wt[i][j];
            sum_x[j] += wt[i][j] * xt[i][j];
        }
    const float hi = (float)nmax;
    for (int j = 0; j < G; j++) {
        min[j] = min[j] > 0 ? 0 : min[j];
        live[j] = max[j] > min[j]; /* else all codes 0, scale 0 */
        iscale[j] = nmax / (max[j] - min[j]);
        scale[j] = 1 / iscale[j];
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < G; j++) {
            float l = (iscale[j] * (xt[i][j] - min[j]) + 12582912.f) - 12582912.f;
            l = l < 0 ? 0 : l > hi ? hi : l;
            Lb[i][j] = l;
            float diff = scale[j] * l + min[j] - xt[i][j];
            diff = use_mad ? fabsf(diff) : diff * diff;
            best[j] += wt[i][j] * diff;
        }
    for (int is = 0; is <= nstep; is++) {
        float sl[G] = {0}, sl2[G] = {0}, sxl[G] = {0}, tsc[G], tmn[G], err[G] = {0};
        int32_t win[G];
        for (int j = 0; j < G; j++) iscale[j] = (rmin + rdelta * is + nmax) / (max[j] - min[j]);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < G; j++) {
                float l = (iscale[j] * (xt[i][j] - min[j]) + 12582912.f) - 12582912.f;
                l = l < 0 ? 0 : l > hi ? hi : l;
                la[i][j] = l;
                const float wl = wt[i][j] * l;
                sl[j] += wl;
                sl2[j] += wl * l;
                sxl[j] += wl * xt[i][j];
            }
        for (int j = 0; j < G; j++) {
            /* a non-positive determinant skips the candidate */
            const float D = sum_w[j] * sl2[j] - sl[j] * sl[j];
            win[j] = live[j] & (D > 0);
            const float ts = (sum_w[j] * sxl[j] - sum_x[j] * sl[j]) / D;
            const float tm = (sl2[j] * sum_x[j] - sl[j] * sxl[j]) / D;
            const float tq = sxl[j] / sl2[j];
            tsc[j] = tm > 0 ? tq : ts;
            tmn[j] = tm > 0 ? 0 : tm;
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < G; j++) {
                float diff = tsc[j] * la[i][j] + tmn[j] - xt[i][j];
                diff = use_mad ? fabsf(diff) : diff * diff;
                err[j] += wt[i][j] * diff;
            }
        for (int j = 0; j < G; j++) {
            win[j] = win[j] & (err[j] < best[j]);
            best[j] = win[j] ? err[j] : best[j];
            scale[j] = win[j] ? tsc[j] : scale[j];
            min[j] = win[j] ? tmn[j] : min[j];
        }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < G; j++) Lb[i][j] = win[j] ? la[i][j] : Lb[i][j];
    }
    for (int j = 0; j < ng; j++) {
        for (int i = 0; i < n; i++) L[(size_t)n * j + i] = live[j] ? (uint8_t)Lb[i][j] : 0;
        scale_out[j] = live[j] ? scale[j] : 0;
        neg_min[j] = -min[j];
    }
}

/* use_mad a constant in each of the search's two copies, so that no select on it is left in the
 * loops (GCC does not vectorize one) */
ELM_SEARCH_CLONES void elm_make_qkx_quants(int ng, int n, int nmax, const float *x,
                                           const float *w, uint8_t *L, float *scale,
                                           float *neg_min, float rmin, float rdelta, int nstep,
                                           bool use_mad) {
    if (use_mad) qkx_search(ng, n, nmax, x, w, L, scale, neg_min, rmin, rdelta, nstep, true);
    else qkx_search(ng, n, nmax, x, w, L, scale, neg_min, rmin, rdelta, nstep, false);
}

float elm_make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *qw) {
    float max = 0;
    for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];
    if (max < ELM_GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = nmax / max;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)elm_nearest_int(iscale * x[i]);
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * L[i];
        best_mse += qw[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * is + nmax) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            int l = elm_nearest_int(iscale_is * x[i]);
            if (l > nmax) l = nmax;
            const float diff = x[i] - scale_is * l;
            mse += qw[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = elm_nearest_int(iscale * x[i]);
        if (l > nmax) l = nmax;
        L[i] = (uint8_t)l;
        sumlx += qw[i] * x[i] * l;
        suml2 += qw[i] * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = qw[i];
            float slx = sumlx - w * x[i] * L[i];
            float sl2 = suml2 - w * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = elm_nearest_int(x[i] * sl2 / slx);
                if (new_l > nmax) new_l = nmax;
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* For x strictly inside the table, the binary search leaves val[lo] <= x < val[lo + 1] and picks
 * lo + 1 when x - val[lo] >= val[lo + 1] - x; that test, made for every step i, holds exactly for
 * the steps below the one chosen (x >= val[i] makes its left side positive and its right one not
 * positive; x < val[i - 1] the other way round: a float difference is 0 only for equal operands),
 * and outside the table it holds for none or all of them. So the index is the count of the steps
 * that pass, with each test the same float operations as the search's: branch-free, and the
 * loop over the values vectorizes. */
ELM_SEARCH_CLONES void elm_best_index_int8_n(int nval, const int8_t *val, int n, const float *x, uint8_t *idx) {
    memset(idx, 0, (size_t)n);
    for (int i = 1; i < nval; i++) {
        const float a = val[i - 1], b = val[i];
        for (int j = 0; j < n; j++) idx[j] = (uint8_t)(idx[j] + (x[j] - a >= b - x[j]));
    }
}

int elm_best_index_int8(int n, const int8_t *val, float x) {
    uint8_t idx;
    elm_best_index_int8_n(n, val, 1, &x, &idx);
    return idx;
}
