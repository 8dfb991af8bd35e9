/* The IQ1_S and IQ1_M encoders (iquant_codec.h), bit-exact with llama.cpp's quantize_iq1_s and
 * quantize_iq1_m (ggml-quants.c, Kawrakow's 1.5- and 1.75-bit i-quants). Every sub-block (32
 * weights in IQ1_S, 16 in IQ1_M) is coded as trits t in {-1, 0, 1} shifted by ±1/8 toward one
 * side, x ≈ s·(t ± 1/8); its eight-weight groups must be points of the 2048-point IQ1 grid.
 *
 * Per sub-block: with three levels the best split is found exhaustively. The weights are sorted,
 * and every pair of cut points (i1 <= i2) assigns the lowest i1 to -1, the next ones to 0, the rest
 * to +1; the least-squares scale of each split, under both shifts (IQ1_M: the shift of each half
 * on its own, four combinations), scores sumqx²/sumq2, and the best wins. A group whose trits are
 * not a grid point moves to the nearest of its listed neighbours under the weighted error at that
 * scale, and the scale is refitted. The super-block then stores one f16 scale and 3-bit odd
 * multipliers 2l+1 of it per sub-block. Float operations follow the reference's order term by
 * term (the build does not contract them into FMAs), so the bytes are llama-quantize's.
 *
 * The weighted error uses w = qw·sqrt(σ² + x²), σ² twice the block's mean x²; IQ1_M without
 * importance (llama-quantize's token embedding and output) uses w = x². */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "codecs/iquant_codec.h"
#include "codecs/quant_search.h"

/* ---- the grid's neighbourhoods ---- */

/* Trit patterns of eight weights (levels 0, 1, 2 for -1, 0, +1) as base-3 numbers, weight j the
 * digit of 3^j. 4513 of the 6561 are off the grid; each has as neighbours the grid points at its
 * three smallest distinct squared distances, ordered by distance then index (llama.cpp's
 * iq2xs_init_impl with nwant 3): 327721 in all, stored after a count per pattern, each list
 * padded to a multiple of ELM_NB_LANES with copies of its last point (which never win a tie). */
enum { N_PATTERNS = 6561, N_NEIGHBOUR_SLOTS = 4513 * ELM_NB_LANES + 327721, N_NB_MAX = 2048 };

static int32_t pattern_at[N_PATTERNS]; /* grid index, or -(slot + 1) of its neighbour count */
static uint16_t neighbours[N_NEIGHBOUR_SLOTS];
static uint8_t grid_levels[2048][8];
static pthread_once_t lattice_once = PTHREAD_ONCE_INIT;

static void build_lattice(void) {
    static bool on_grid[N_PATTERNS];
    for (int g = 0; g < 2048; g++) {
        int p = 0;
        for (int j = 7; j >= 0; j--) {
            grid_levels[g][j] = (uint8_t)((elm_iq1s_codes[g] >> (2 * j)) & 3);
            p = 3 * p + grid_levels[g][j];
        }
        pattern_at[p] = g;
        on_grid[p] = true;
    }
    static int d2[2048];
    int slot = 0;
    for (int p = 0; p < N_PATTERNS; p++) {
        if (on_grid[p]) continue;
        int lv[8];
        for (int j = 0, r = p; j < 8; j++, r /= 3) lv[j] = r % 3;
        for (int g = 0; g < 2048; g++) {
            d2[g] = 0;
            for (int j = 0; j < 8; j++) {
                const int dl = grid_levels[g][j] - lv[j];
                d2[g] += dl * dl;
            }
        }
        const int count_slot = slot++;
        pattern_at[p] = -(count_slot + 1);
        int below = -1; /* distances up to `below` are taken */
        for (int want = 0; want < 3; want++) {
            int next = INT32_MAX;
            for (int g = 0; g < 2048; g++)
                if (d2[g] > below && d2[g] < next) next = d2[g];
            if (next == INT32_MAX) break;
            for (int g = 0; g < 2048 && slot < N_NEIGHBOUR_SLOTS; g++)
                if (d2[g] == next) neighbours[slot++] = (uint16_t)g;
            below = next;
        }
        while ((slot - count_slot - 1) % ELM_NB_LANES && slot < N_NEIGHBOUR_SLOTS) {
            neighbours[slot] = neighbours[slot - 1];
            slot++;
        }
        neighbours[count_slot] = (uint16_t)(slot - count_slot - 1);
    }
}

/* The grid point for eight weights x at scale `scale` with level values xx[3], their levels L
 * (0..2): the pattern itself when it is on the grid, else the neighbour of least Σ w·(scale·q - x)²
 * (the first listed of equal ones). Sets *on_grid. A weight's term takes one of three values,
 * one per level, computed once; each neighbour's sum adds its terms in the weights' order, the
 * neighbours side by side (their levels from the codebook's 2-bit codes, which stay in cache). */
ELM_SEARCH_CLONES static uint16_t snap_group(const int8_t *L, const float *x, const float *w,
                                             float scale, const float *xx, bool *on_grid) {
    int p = 0;
    for (int j = 7; j >= 0; j--) p = 3 * p + L[j];
    if (pattern_at[p] >= 0) return (uint16_t)pattern_at[p];
    *on_grid = false;
    const int slot = -pattern_at[p] - 1, n = neighbours[slot];
    const uint16_t *nb = neighbours + slot + 1;
    uint16_t code[N_NB_MAX];
    for (int k = 0; k < n; k++) code[k] = elm_iq1s_codes[nb[k]];
    float d2[N_NB_MAX];
    for (int j = 0; j < 8; j++) {
        float e[3];
        for (int l = 0; l < 3; l++) {
            const float diff = scale * xx[l] - x[j];
            e[l] = w[j] * diff * diff;
        }
        /* (the first term stored, not added to 0: a zero's sign aside, which no test sees) */
        for (int k = 0; k < n; k++) {
            const int l = code[k] >> (2 * j) & 3;
            const float term = l == 0 ? e[0] : l == 1 ? e[1] : e[2];
            d2[k] = j ? d2[k] + term : term;
        }
    }
    const int k = elm_first_least(d2, n);
    return nb[k < 0 ? 0 : k];
}

/* The least-squares scale of groups x (8 each, group k with level values xx[k]) coded as grid
 * points index[k], replacing *scale when positive */
static void refit(const float *x, const float *w, int n_groups, const uint16_t *index,
                  const float *const *xx, float *scale) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < n_groups; k++)
        for (int j = 0; j < 8; j++) {
            const float q = xx[k][grid_levels[index[k]][j]];
            sumqx += w[8 * k + j] * q * x[8 * k + j];
            sumq2 += w[8 * k + j] * q * q;
        }
    if (sumqx > 0 && sumq2 > 0) *scale = sumqx / sumq2;
}

/* ---- sorting a sub-block ---- */

typedef struct ranked {
    float x;
    int32_t i;
} ranked;

static float max_abs(const float *x, int n) {
    float m = fabsf(x[0]);
    for (int i = 1; i < n; i++) m = m > fabsf(x[i]) ? m : fabsf(x[i]);
    return m;
}

/* x[n] ascending, with their positions, and *max the largest |x|; false (nothing sorted) when
 * that is below eps, a sub-block left at zero. Equal values (0 and -0 too) keep their order: the
 * reference's qsort is glibc's, a merge sort, stable for these sizes. An insertion sort, stable
 * too, gives the same order without a call per comparison. */
static bool rank(const float *x, int n, float eps, ranked *out, float *max) {
    *max = max_abs(x, n);
    if (*max < eps) return false;
    for (int j = 0; j < n; j++) {
        int i = j;
        for (; i > 0 && x[j] < out[i - 1].x; i--) out[i] = out[i - 1];
        out[i] = (ranked){x[j], j};
    }
    return true;
}

/* The best split so far: cut points, shift choice k, its scale and score sumqx²/sumq2 */
typedef struct split {
    float best, scale;
    int i1, i2, k;
} split;

/* takes the split (i1, i2, k) when its least-squares fit scores better */
static void consider(split *b, float sumqx, float sumq2, int i1, int i2, int k) {
    if (sumq2 > 0 && sumqx * sumqx > b->best * sumq2) {
        b->scale = sumqx / sumq2;
        b->best = b->scale * sumqx;
        b->i1 = i1;
        b->i2 = i2;
        b->k = k;
    }
}

/* The levels of split b: ranks below i1 at 0 (-1), below i2 at 1 (0), the rest 2 (+1), mirrored
 * when its scale is negative (which the caller then makes positive, mirroring the shifts too) */
static void split_levels(const ranked *r, int n, const split *b, int8_t *L) {
    for (int j = 0; j < n; j++) {
        const int l = j < b->i1 ? 0 : j < b->i2 ? 1 : 2;
        L[r[j].i] = (int8_t)(b->scale < 0 ? 2 - l : l);
    }
}

/* Groups of 8 of sub-block x with levels L moved onto the grid (index[k]) at *scale, level values
 * xs[k] for group k; the scale refitted when a group moved */
static void snap_groups(const int8_t *L, const float *x, const float *w, int n_groups,
                        const float *const *xs, float *scale, uint16_t *index) {
    bool on_grid = true;
    for (int k = 0; k < n_groups; k++)
        index[k] = snap_group(L + 8 * k, x + 8 * k, w + 8 * k, *scale, xs[k], &on_grid);
    if (!on_grid) refit(x, w, n_groups, index, xs, scale);
}

static const float x_plus[3] = {-1 + 0.125f, 0.125f, 1 + 0.125f};
static const float x_minus[3] = {-1 - 0.125f, -0.125f, 1 - 0.125f};

/* σ², twice the mean square of the super-block's 256 weights */
static float sigma2_of(const float *x) {
    float s = 0;
    for (int i = 0; i < ELM_QK_K; i++) s += x[i] * x[i];
    return 2 * s / ELM_QK_K;
}

static void put16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* ---- IQ1_S: f16 d, qs[32] (grid index low bytes), qh[8] (per 32: 3 high index bits per group,
 * the 3-bit multiplier in bits 12-14, the shift's sign in bit 15) ---- */

ELM_SEARCH_CLONES static void iq1_s_block(const float *xbl, const float *qw, uint8_t *y) {
    memset(y, 0, 50);
    uint16_t qh[8] = {0};
    float scales[8], max_scale = 0;
    int shifts[8];
    const float sigma2 = sigma2_of(xbl);
    for (int ib = 0; ib < 8; ib++) {
        const float *xb = xbl + 32 * ib;
        float w[32];
        for (int i = 0; i < 32; i++) w[i] = qw[32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
        scales[ib] = 0;
        shifts[ib] = 1;
        ranked r[32];
        float max;
        if (!rank(xb, 32, 1e-12f, r, &max)) continue;
        float sx[33], sw[33];
        sx[0] = sw[0] = 0;
        for (int j = 0; j < 32; j++) {
            sx[j + 1] = sx[j] + w[r[j].i] * xb[r[j].i];
            sw[j + 1] = sw[j] + w[r[j].i];
        }
        split b = {.best = -FLT_MAX, .scale = max, .i1 = -1, .i2 = -1, .k = 0};
        for (int i1 = 0; i1 <= 32; i1++) {
            /* the sums of every i2 and shift (+1/8, then -1/8) side by side, then weighed in
             * the reference's order */
            float qx[2][33], q2[2][33];
            for (int h = 0; h < 2; h++) {
                const float *v = h == 0 ? x_plus : x_minus;
                for (int i2 = i1; i2 <= 32; i2++) {
                    qx[h][i2] = (sx[i1] - sx[0]) * v[0] + (sx[i2] - sx[i1]) * v[1] +
                                (sx[32] - sx[i2]) * v[2];
                    q2[h][i2] = (sw[i1] - sw[0]) * v[0] * v[0] + (sw[i2] - sw[i1]) * v[1] * v[1] +
                                (sw[32] - sw[i2]) * v[2] * v[2];
                }
            }
            for (int i2 = i1; i2 <= 32; i2++)
                for (int h = 0; h < 2; h++)
                    consider(&b, qx[h][i2], q2[h][i2], i1, i2, h == 0 ? 1 : -1);
        }
        if (b.i1 < 0) continue;
        int8_t L[32];
        split_levels(r, 32, &b, L);
        float scale = fabsf(b.scale);
        const int shift = b.scale < 0 ? -b.k : b.k;
        const float *xx = shift == 1 ? x_plus : x_minus;
        const float *const xs[4] = {xx, xx, xx, xx};
        uint16_t index[4];
        snap_groups(L, xb, w, 4, xs, &scale, index);
        for (int k = 0; k < 4; k++) {
            y[2 + 4 * ib + k] = (uint8_t)index[k];
            qh[ib] |= (uint16_t)((index[k] >> 8) << (3 * k));
        }
        scales[ib] = scale;
        shifts[ib] = shift;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale) {
        const float d = max_scale / 15;
        put16(y, elm_f32_to_f16(d * 1.125f)); /* llama.cpp's fudge factor */
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            int l = elm_nearest_int(0.5f * (id * scales[ib] - 1));
            l = l < 0 ? 0 : l > 7 ? 7 : l;
            qh[ib] |= (uint16_t)((l | (shifts[ib] == -1 ? 8 : 0)) << 12);
        }
    }
    for (int ib = 0; ib < 8; ib++) put16(y + 34 + 2 * ib, qh[ib]);
}

/* n weights as super-blocks of `bytes` by `block`, super-block i weighted by qw + 256·i, or
 * by none when qw is NULL */
static void encode_blocks(void (*block)(const float *, const float *, uint8_t *), size_t bytes,
                          const float *x, void *dst, int64_t n, const float *qw) {
    pthread_once(&lattice_once, build_lattice);
    for (int64_t i = 0; i < n / ELM_QK_K; i++)
        block(x + ELM_QK_K * i, qw ? qw + ELM_QK_K * i : NULL, (uint8_t *)dst + bytes * i);
}

void elm_iq1_s_encode(const float *x, void *dst, int64_t n, const float *qw) {
    if (qw) encode_blocks(iq1_s_block, 50, x, dst, n, qw);
}

/* ---- IQ1_M: qs[32] (grid index low bytes), qh[16] (per 16: each group's 3 high index bits and
 * its shift's sign, bits 3 and 7), scales[8] (four 16-bit words: 3-bit multipliers of 4
 * sub-blocks each, the f16 scale's nibbles in their top 4 bits) ---- */

/* sub-block weights: importance as IQ1_S's, or x² without */
static void iq1_m_weights(const float *xb, const float *qw, float sigma2, float *w) {
    for (int i = 0; i < 16; i++) w[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
}

/* shifts k of the two halves: bit 1 the first's, bit 0 the second's (set: minus) */
static const float *half_levels(int k, int half) {
    return ((half == 0 ? k >> 1 : k) & 1) ? x_minus : x_plus;
}

/* a[k] += b[k], k < 8 */
static inline void add8(float *a, const float *b) {
    for (int k = 0; k < 8; k++) a[k] += b[k];
}

ELM_SEARCH_CLONES static void iq1_m_block(const float *xbl, const float *qw, uint8_t *y) {
    memset(y, 0, 56);
    float scales[16], max_scale = 0, w[16];
    int shifts[16];
    const float sigma2 = sigma2_of(xbl);
    for (int ib = 0; ib < 16; ib++) {
        const float *xb = xbl + 16 * ib;
        iq1_m_weights(xb, qw ? qw + 16 * ib : NULL, sigma2, w);
        scales[ib] = 0;
        shifts[ib] = 0;
        ranked r[16];
        float max;
        if (!rank(xb, 16, 1e-7f, r, &max)) continue;
        /* term[lv][j]: rank j's terms at level lv, sumqx's of the four shift choices, then
         * sumq2's. Each split's sums add them from rank 0 up, as the reference does; the sums
         * below i1, and below i2 for a given i1, are the same for every split sharing them, so
         * they are carried over rather than added again (the same additions in the same order) */
        float term[3][16][8];
        for (int j = 0; j < 16; j++)
            for (int lv = 0; lv < 3; lv++)
                for (int k = 0; k < 4; k++) {
                    const int i = r[j].i;
                    const float v = half_levels(k, i >= 8)[lv];
                    term[lv][j][k] = w[i] * v * xb[i];
                    term[lv][j][4 + k] = w[i] * v * v;
                }
        split b = {.best = -FLT_MAX, .scale = max, .i1 = -1, .i2 = -1, .k = -1};
        float below_i1[8] = {0};
        for (int i1 = 0; i1 <= 16; i1++) {
            float below_i2[8];
            memcpy(below_i2, below_i1, sizeof below_i2);
            for (int i2 = i1; i2 <= 16; i2++) {
                float sum[8];
                memcpy(sum, below_i2, sizeof sum);
                for (int j = i2; j < 16; j++) add8(sum, term[2][j]);
                for (int k = 0; k < 4; k++) consider(&b, sum[k], sum[4 + k], i1, i2, k);
                if (i2 < 16) add8(below_i2, term[1][i2]);
            }
            if (i1 < 16) add8(below_i1, term[0][i1]);
        }
        if (b.i1 < 0) continue;
        int8_t L[16];
        split_levels(r, 16, &b, L);
        float scale = fabsf(b.scale);
        const int bk = b.scale < 0 ? 3 - b.k : b.k; /* both halves' shifts mirrored */
        const float *const xs[2] = {half_levels(bk, 0), half_levels(bk, 1)};
        uint16_t index[2];
        snap_groups(L, xb, w, 2, xs, &scale, index);
        y[2 * ib] = (uint8_t)index[0];
        y[2 * ib + 1] = (uint8_t)index[1];
        y[32 + ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = bk;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) return;
    /* the multipliers, then the super-block scale refitted to them over the whole block */
    uint16_t sc[4] = {0};
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < 16; ib++) {
        int l = elm_nearest_int(0.5f * (id * scales[ib] - 1));
        l = l < 0 ? 0 : l > 7 ? 7 : l;
        sc[ib / 4] |= (uint16_t)(l << (3 * (ib % 4)));
        y[32 + ib] |= (uint8_t)((shifts[ib] & 1 ? 0x80 : 0) | (shifts[ib] & 2 ? 0x08 : 0));
        const float *xb = xbl + 16 * ib;
        iq1_m_weights(xb, qw ? qw + 16 * ib : NULL, sigma2, w);
        for (int k = 0; k < 2; k++) {
            const float *xx = half_levels(shifts[ib], k);
            const int g = y[2 * ib + k] | ((y[32 + ib] >> (4 * k)) & 7) << 8;
            for (int j = 0; j < 8; j++) {
                const float q = xx[grid_levels[g][j]] * (float)(2 * l + 1);
                sumqx += w[8 * k + j] * q * xb[8 * k + j];
                sumq2 += w[8 * k + j] * q * q;
            }
        }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t h = elm_f32_to_f16(d * 1.1125f); /* llama.cpp's fudge factor */
    for (int i = 0; i < 4; i++)
        put16(y + 48 + 2 * i, sc[i] | (uint16_t)(((h >> (4 * i)) & 0xf) << 12));
}

void elm_iq1_m_encode(const float *x, void *dst, int64_t n, const float *qw) {
    encode_blocks(iq1_m_block, 56, x, dst, n, qw);
}

void elm_iq1_m_from_float(const float *x, void *dst, int64_t n) {
    elm_iq1_m_encode(x, dst, n, NULL);
}

/* ---- one group at a given step (GPTQ) ---- */

/* The grid's levels -1, 0, 1 as floats by coordinate, [8][2048]: the distances to every point
 * then vectorize over the points. */
static float levels_t[8][2048];
static pthread_once_t levels_t_once = PTHREAD_ONCE_INIT;

static void levels_t_build(void) {
    for (int g = 0; g < 2048; g++)
        for (int j = 0; j < 8; j++) levels_t[j][g] = (float)grid_levels[g][j] - 1;
}

void elm_iq1_nearest(const float *x, const float *w, float step, int shift, int8_t q[8]) {
    pthread_once(&lattice_once, build_lattice);
    pthread_once(&levels_t_once, levels_t_build);
    static const float ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    if (!w) w = ones;
    float d2[2048], best_d2 = FLT_MAX;
    int best = 0, best_s = shift ? shift : 1;
    for (int s = 1; s >= -1; s -= 2) {
        if (shift && s != shift) continue;
        for (int g = 0; g < 2048; g++) d2[g] = 0;
        const float a = 8 * step, b = (float)s * step;
        for (int j = 0; j < 8; j++) {
            const float *m = levels_t[j], c = b - x[j], wj = w[j];
            for (int g = 0; g < 2048; g++) {
                const float diff = a * m[g] + c;
                d2[g] += wj * diff * diff;
            }
        }
        for (int g = 0; g < 2048; g++)
            if (d2[g] < best_d2) best_d2 = d2[g], best = g, best_s = s;
    }
    for (int j = 0; j < 8; j++) q[j] = (int8_t)(8 * (grid_levels[best][j] - 1) + best_s);
}

/* Group i's grid index and shift (set: -1/8) from its values q[8] = 8·t ± 1; false off the
 * grid. */
static bool iq1_group(const int8_t *q, int *index, bool *minus) {
    *minus = ((q[0] % 8) + 8) % 8 == 7;
    const int s = *minus ? -1 : 1;
    int p = 0;
    for (int j = 7; j >= 0; j--) {
        const int t = q[j] - s;
        if (t % 8 || t < -8 || t > 8) return false;
        p = 3 * p + t / 8 + 1;
    }
    *index = pattern_at[p];
    return *index >= 0;
}

bool elm_iq1_put(elm_type type, float d, const int8_t sc[16], const int8_t q[256], void *dst) {
    pthread_once(&lattice_once, build_lattice);
    uint8_t *y = dst;
    int index[32];
    bool minus[32];
    for (int i = 0; i < 32; i++)
        if (!iq1_group(q + 8 * i, &index[i], &minus[i])) return false;
    const uint16_t h = elm_f32_to_f16(d / 0.125f);
    if (type == ELM_TYPE_IQ1_S) {
        memset(y, 0, 50);
        put16(y, h);
        for (int ib = 0; ib < 8; ib++) {
            unsigned qh = (unsigned)(sc[2 * ib] - 1) / 2 << 12 | (minus[4 * ib] ? 0x8000u : 0);
            for (int k = 0; k < 4; k++) {
                if (minus[4 * ib + k] != minus[4 * ib]) return false; /* one shift per 32 */
                y[2 + 4 * ib + k] = (uint8_t)index[4 * ib + k];
                qh |= (unsigned)(index[4 * ib + k] >> 8) << (3 * k);
            }
            put16(y + 34 + 2 * ib, qh);
        }
        return true;
    }
    if (type != ELM_TYPE_IQ1_M) return false;
    memset(y, 0, 56);
    unsigned words[4] = {0};
    for (int i = 0; i < 32; i++) {
        y[i] = (uint8_t)index[i];
        y[32 + i / 2] |= (uint8_t)(((index[i] >> 8) | (minus[i] ? 8 : 0)) << (4 * (i % 2)));
    }
    for (int k = 0; k < 16; k++) words[k / 4] |= (unsigned)(sc[k] - 1) / 2 << (3 * (k % 4));
    for (int i = 0; i < 4; i++) put16(y + 48 + 2 * i, words[i] | ((h >> (4 * i)) & 0xfu) << 12);
    return true;
}
