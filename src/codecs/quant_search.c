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
enum { QX_PASSES = 19, QX_LANES = 20 };

float elm_make_qx_quants(int n, int nmax, const float *x, int8_t *L, const float *qw) {
    float max;
    if (!signed_max(n, x, &max, L)) return 0.f;
    float iscale[QX_LANES], sumlx[QX_LANES] = {0}, suml2[QX_LANES] = {0};
    iscale[0] = -nmax / max;
    for (int is = -9, k = 1; is <= 9; is++)
        if (is != 0) iscale[k++] = -(nmax + 0.1f * is) / max;
    iscale[QX_PASSES] = iscale[0];
    const float lo = (float)-nmax, hi = (float)(nmax - 1);
    for (int i = 0; i < n; i++) {
        const float w = qw ? qw[i] : x[i] * x[i], wx = w * x[i];
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

float elm_make_qkx_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                          float *neg_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                          bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(elm_nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(elm_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
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

int elm_best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < val[mid]) hi = mid;
        else lo = mid;
    }
    return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}
