/* llama.cpp's float arithmetic for --ggml-rounding (ggml_exact.h), and the kernel table that
 * runs it (elm_kernels_ggml). Each function names the ggml kernel it follows
 * (ggml/src/ggml-cpu/arch/x86/quants.c, repack.cpp, vec.h, ops.cpp). */
#include "kernels/ggml_exact.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "core/clones.h"
#include "core/half.h"
#include "codecs/kquant_codec.h"
#include "codecs/mxfp4.h"
#include "kernels/kquant.h"

/* fmaf is one instruction only in code built for FMA: the baseline x86-64 build calls libm's, a
 * call per product (3/4 of a tiny model's --ggml-rounding run). The loops that fuse are also built
 * for x86-64-v3 (core/clones.h); fmaf is exact either way, so both versions give the same floats. */
#define FUSED ELM_CLONES("arch=x86-64-v3", "default")

/* Nearest integer, ties to even, of |v| < 2^22 (the float adder's rounding, as
 * _mm256_round_ps(_MM_ROUND_NEAREST) and ggml's nearest_int). */
static int32_t nearest_even(float v) {
    const float f = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &f, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* A q8 row (kernels.h) as ggml's x86 quantize_row_q8_0 / q8_1 compute it: codes x·(127/max)
 * rounded to nearest even, d = max/127 and s = d·Σq both stored as f16. */
static void quantize_q8(const float *x, int64_t cols, void *row) {
    const int64_t nb = cols / ELM_QK;
    int8_t *qs = row;
    float *d = (float *)(qs + cols), *s = d + nb;
    int32_t *sum = (int32_t *)(s + nb);
    for (int64_t b = 0; b < nb; b++, x += ELM_QK) {
        float amax = 0;
        for (int j = 0; j < ELM_QK; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        /* 127/max, not 1/d: the two differ in the last bit for some max */
        const float db = amax / 127.0f, id = amax != 0 ? 127.0f / amax : 0.0f;
        int32_t total = 0;
        for (int j = 0; j < ELM_QK; j++) {
            qs[b * ELM_QK + j] = (int8_t)nearest_even(x[j] * id);
            total += qs[b * ELM_QK + j];
        }
        d[b] = elm_round_f16(db);
        sum[b] = total;
        s[b] = elm_round_f16(db * (float)total); /* q8_1's s: the unrounded d times Σq */
    }
}

/* ggml's hsum_float_8: the upper 128-bit half added to the lower, then pairs, then the two. */
static float hsum8(const float a[8]) {
    const float r0 = a[0] + a[4], r1 = a[1] + a[5], r2 = a[2] + a[6], r3 = a[3] + a[7];
    return (r0 + r2) + (r1 + r3);
}

/* _mm512_reduce_add_ps as gcc expands it: the 256-bit halves added, then the 128-bit halves, then
 * lanes {0,1} + {2,3}, then the two. */
static float reduce16(const float a[16]) {
    float h[8], q[4];
    for (int i = 0; i < 8; i++) h[i] = a[i + 8] + a[i];
    for (int i = 0; i < 4; i++) q[i] = h[i + 4] + h[i];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

/* acc[j][l] += x[(16j + l)·stride]·y[16j + l], fused, for j < 4 and l < 16. */
static inline __attribute__((always_inline)) void fused_run64(float acc[4][16], const float *x,
                                                              size_t stride, const float *y) {
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < 16; l++)
            acc[j][l] = fmaf(x[(size_t)(16 * j + l) * stride], y[16 * j + l], acc[j][l]);
}

/* ggml_vec_dot_f32 with AVX-512 over n values, of which those [off, off + n_real) are given,
 * x[i] = xs[(i - off)·stride] and y[i - off], and the others are zeros (a KV length padded as
 * llama.cpp pads it, and the rows its mask leaves out before a window): four accumulators of 16
 * lanes, value i < n rounded down to 64 into accumulator (i/16) mod 4, lane i mod 16, fused;
 * 0 += 2, 1 += 3, 0 += 1 and reduce16; then the leftovers in order as gcc vectorized that loop
 * in the zen4 library: by 16 and then by 8, products rounded before they are added, the last
 * fewer than 8 fused (vfmadd231ss). */
FUSED static float vec_dot_f32(const float *xs, size_t stride, const float *y, int64_t off,
                         int64_t n_real, int64_t n) {
    const int64_t np = n & ~(int64_t)63, end = off + n_real;
#define GIVEN(i) ((i) >= off && (i) < end)
#define X(i) xs[(size_t)((i) - off) * stride]
#define Y(i) y[(i) - off]
    float acc[4][16] = {{0}};
    const int64_t fused_end = end < np ? end : np;
    int64_t f = off;
    for (; f < fused_end && f % 64; f++)
        acc[f / 16 % 4][f % 16] = fmaf(X(f), Y(f), acc[f / 16 % 4][f % 16]);
    /* whole runs of 64, the same lanes in loops the compiler vectorizes (contiguous rows apart) */
    for (; f + 64 <= fused_end; f += 64)
        if (stride == 1)
            fused_run64(acc, &X(f), 1, &Y(f));
        else
            fused_run64(acc, &X(f), stride, &Y(f));
    for (; f < fused_end; f++)
        acc[f / 16 % 4][f % 16] = fmaf(X(f), Y(f), acc[f / 16 % 4][f % 16]);
    for (int l = 0; l < 16; l++) {
        acc[0][l] += acc[2][l];
        acc[1][l] += acc[3][l];
        acc[0][l] += acc[1][l];
    }
    float sum = reduce16(acc[0]);
    int64_t i = np;
    for (; n - i >= 16; i += 16)
        for (int l = 0; l < 16; l++)
            if (GIVEN(i + l)) sum += X(i + l) * Y(i + l);
    for (; n - i >= 8; i += 8)
        for (int l = 0; l < 8; l++)
            if (GIVEN(i + l)) sum += X(i + l) * Y(i + l);
    for (; i < n; i++)
        if (GIVEN(i)) sum = fmaf(X(i), Y(i), sum);
    return sum;
}

/* ggml_vec_dot_f16 with AVX-512 and no AVX512-FP16 (the zen4 library) over x[0, n) and y: the
 * values converted to float, the lanes of vec_dot_f32 over the first n rounded down to 64, then
 * the others' products added in double (ggml_float), the sum rounded to float last. */
static float vec_dot_f16(const float *x, const float *y, int64_t n) {
    const int64_t np = n & ~(int64_t)63;
    double sum = vec_dot_f32(x, 1, y, 0, np, np);
    for (int64_t i = np; i < n; i++) sum += (double)(x[i] * y[i]);
    return (float)sum;
}

/* llamafile's tinyBLAS<16, __m512> (F32 and F16 products of 2 or more columns) over the values
 * [off, off + n_real) of a vector as vec_dot_f32's: one accumulator of 16 lanes per output,
 * value i into lane i mod 16, fused; then reduce16. */
FUSED static float sgemm_dot_f32(const float *xs, size_t stride, const float *y, int64_t off,
                           int64_t n_real) {
    float acc[16] = {0};
    for (int64_t i = off; i < off + n_real; i++) acc[i % 16] = fmaf(X(i), Y(i), acc[i % 16]);
    return reduce16(acc);
#undef GIVEN
#undef X
#undef Y
}

/* IQ4_NL and MXFP4 rows repacked 8 at a time (every product whose row count is a multiple of 8:
 * llama.cpp moves them to its CPU_REPACK buffer on AVX2): gemv/gemm_q4_b32_8x8_q8_0_lut_avx keep
 * one float per row and token and fuse each block in, acc = fma(Σq·x, d_w·d_x, acc). */
FUSED static float dot_grid32(elm_type type, const uint8_t *w, elm_q8_row x, int64_t nb) {
    const elm_grid32_layout g = elm_grid32_layout_of(type);
    float acc = 0;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qs = w + g.block_bytes * b + g.qs_at;
        int32_t isum = 0;
        for (int l = 0; l < 16; l++) {
            isum += g.grid[qs[l] & 0x0f] * x.qs[ELM_QK * b + l];
            isum += g.grid[qs[l] >> 4] * x.qs[ELM_QK * b + l + 16];
        }
        acc = fmaf((float)isum, elm_grid32_scale(type, w, b) * x.d[b], acc);
    }
    return acc;
}

/* The AVX2 k-quant kernels sum a super-block's integers in 8 int32 lanes: lane k holds the
 * positions j with (j mod 32) / 4 == k (4 bytes of each 32-byte load, maddubs then madd_epi16
 * with the group's scale). */
static int lane_of(int j) {
    return (j % 32) / 4;
}

/* ggml_vec_dot_{q3_K,q5_K,q6_K,iq4_xs,iq2_*,iq3_*}_q8_K (AVX2): per super-block, lane sums as
 * above of sc·q·x (Q6_K: its unsigned codes 0..63, less 32·Σ sc·bsum per lane, groups 2k and 2k+1 in
 * lane k: madd_epi16 of bsums and scales), acc_k = fma(d, lane_k, acc_k) with d = x.d·d_w, then
 * hsum8. Q5_K's mins go to one float beside, summs = fma(-x.d·dmin, Σ m·bsum, summs) (quants.c
 * is C in GNU mode: the zen4 library has a vfmadd231ss there), added after the lanes. */
FUSED static float dot_lanes(elm_type t, const elm_kq_block *w, elm_q8k_row x, int64_t nsb) {
    float acc[8] = {0}, summs = 0;
    const int off = t == ELM_TYPE_Q6_K ? 32 : 0;
    for (int64_t s = 0; s < nsb; s++, w++) {
        const int8_t *xq = x.qs + s * ELM_QK_K;
        const int16_t *bs = x.bsum + s * (ELM_QK_K / 16);
        int32_t lane[8] = {0};
        for (int j = 0; j < ELM_QK_K; j++)
            lane[lane_of(j)] += w->sc[j / 16] * (w->q[j] + off) * xq[j];
        for (int k = 0; k < 8 && off; k++)
            lane[k] -= off * (bs[2 * k] * w->sc[2 * k] + bs[2 * k + 1] * w->sc[2 * k + 1]);
        const float d = x.d[s] * w->d;
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lane[k], acc[k]);
        if (t == ELM_TYPE_Q5_K) {
            int32_t msum = 0;
            for (int g = 0; g < 16; g++) msum += w->m[g] * bs[g];
            summs = fmaf(-x.d[s] * w->dmin, (float)msum, summs);
        }
    }
    return hsum8(acc) + summs;
}

/* Q2_K (AVX-512) and Q4_K (AVX2) rows repacked 8 at a time (ggml_gemv/gemm_q{2,4}_K_8x8_q8_K):
 * one lane per row holds the exact Σ sc·Σq·x and Σ m·bsum of a piece of `piece` values;
 * acc = fma(isum, d_w·x.d, acc) and accm = fma(msum, dmin_w·x.d, accm) piece by piece, then
 * acc - accm. The pieces: a super-block in gemv; in gemm, the span of its inner loop (128
 * values for Q2_K, 64 for Q4_K). */
FUSED static float dot_repacked(const elm_kq_block *w, elm_q8k_row x, int64_t nsb, int piece) {
    float acc = 0, accm = 0;
    for (int64_t s = 0; s < nsb; s++, w++)
        for (int p0 = 0; p0 < ELM_QK_K; p0 += piece) {
            const int8_t *xq = x.qs + s * ELM_QK_K;
            int32_t isum = 0, msum = 0;
            for (int g = p0 / 16; g < (p0 + piece) / 16; g++) {
                int32_t dot = 0;
                for (int j = 0; j < 16; j++) dot += w->q[16 * g + j] * xq[16 * g + j];
                isum += w->sc[g] * dot;
                msum += w->m[g] * x.bsum[16 * s + g];
            }
            acc = fmaf((float)isum, w->d * x.d[s], acc);
            accm = fmaf((float)msum, w->dmin * x.d[s], accm);
        }
    return acc - accm;
}

/* The piece of dot_repacked for token t of n_tok: llama.cpp's repacked products run gemm on
 * the tokens in fours when there are more than 3 (forward_mul_mat_one_chunk), gemv on the rest. */
static int repacked_piece(elm_type type, int64_t t, int64_t n_tok) {
    if (n_tok <= 3 || t < 0 || t >= n_tok - n_tok % 4) return ELM_QK_K;
    return type == ELM_TYPE_Q2_K ? 128 : 64;
}

/* Whether llama.cpp repacks weights w on this machine class (ggml_repack_get_optimal_repack_type
 * for AVX2 with AVX-512). */
static bool repacked(const elm_weights *w) {
    return w->rows % 8 == 0 &&
           (w->type == ELM_TYPE_IQ4_NL || w->type == ELM_TYPE_MXFP4 || w->type == ELM_TYPE_Q4_K ||
            w->type == ELM_TYPE_Q2_K);
}

/* The IQ2 and IQ3 types, whose AVX2 vec_dot sums in dot_lanes' lanes too (the IQ2 types' factor
 * 1/8, IQ3_XXS's 1/4, applied to the hsum there, is folded into the unpacked d here: a power of
 * two, so the same bits; checked against llama.cpp's library on tests/data/iquant). IQ1 and TQ
 * sum otherwise and go through the wrapped table's order. */
static bool lanes_iquant(elm_type t) {
    return t == ELM_TYPE_IQ2_XXS || t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ2_S ||
           t == ELM_TYPE_IQ3_XXS || t == ELM_TYPE_IQ3_S;
}

bool elm_ggml_matmul_has(const elm_weights *w) {
    return repacked(w) || w->type == ELM_TYPE_F32 || w->type == ELM_TYPE_F16 ||
           w->type == ELM_TYPE_Q3_K || w->type == ELM_TYPE_Q5_K ||
           w->type == ELM_TYPE_Q6_K || w->type == ELM_TYPE_IQ4_XS || lanes_iquant(w->type);
}

void elm_ggml_matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    const int64_t cols = a->w.cols, rows = a->w.rows, first = a->out_first;
    const size_t row_bytes = elm_row_bytes(a->w.type, cols);
    if (elm_type_grid32(a->w.type)) {
        for (int64_t r = r0; r < r1; r++)
            for (int64_t t = 0; t < a->n_tok; t++)
                a->y[t * rows + r] =
                    dot_grid32(a->w.type, (const uint8_t *)a->w.data + (size_t)r * row_bytes,
                               elm_q8_at(a->xq, cols, t), cols / ELM_QK);
        return;
    }
    if (a->w.type == ELM_TYPE_F32 || a->w.type == ELM_TYPE_F16) {
        /* llamafile's tinyBLAS takes products of 2 or more tokens when its tiles fit (cols a
         * multiple of 16, rows of 4), ggml_vec_dot_f32 or _f16 the others. An F16 row is
         * converted into scratch; x holds f16 values already (round_float_act), as the F16
         * copy of the activations ggml takes. */
        const bool f16 = a->w.type == ELM_TYPE_F16;
        const bool sgemm = a->n_tok - first >= 2 && cols % 16 == 0 && rows % 4 == 0;
        for (int64_t r = r0; r < r1; r++) {
            const float *w = (const float *)a->w.data + (size_t)r * (size_t)cols;
            if (f16) {
                const uint8_t *row = (const uint8_t *)a->w.data + (size_t)r * row_bytes;
                elm_type_get(ELM_TYPE_F16)->to_float(row, scratch, cols);
                w = scratch;
            }
            for (int64_t t = 0; t < a->n_tok; t++) {
                const float *x = a->x + t * cols;
                a->y[t * rows + r] = sgemm ? sgemm_dot_f32(w, 1, x, 0, cols)
                                     : f16 ? vec_dot_f16(w, x, cols)
                                           : vec_dot_f32(w, 1, x, 0, cols, cols);
            }
        }
        return;
    }
    const int64_t nsb = cols / ELM_QK_K;
    elm_kq_block *blk = scratch;
    uint8_t *own = (uint8_t *)(blk + nsb); /* one token's q8_K row when the caller has none */
    for (int64_t r = r0; r < r1; r++) {
        elm_kq_unpack_scalar(a->w.type, (const uint8_t *)a->w.data + (size_t)r * row_bytes, nsb,
                             blk);
        for (int64_t t = 0; t < a->n_tok; t++) {
            const void *xq = a->xq;
            if (!xq) {
                elm_quantize_q8_k(a->x + t * cols, cols, own);
                xq = own;
            }
            const elm_q8k_row x = elm_q8k_at(xq, cols, a->xq ? t : 0);
            const int piece = repacked_piece(a->w.type, t - first, a->n_tok - first);
            a->y[t * rows + r] = repacked(&a->w) ? dot_repacked(blk, x, nsb, piece)
                                                 : dot_lanes(a->w.type, blk, x, nsb);
        }
    }
}

/* ggml_v_expf, AVX-512 (ggml-cpu/vec.h): exp by 2^n·p(b) with a degree-5 polynomial, lane by
 * lane; 0 or infinity where |n| > 192. */
static float v_expf(float x) {
    const float r = 0x1.8p23f, z = fmaf(x, 0x1.715476p+0f, r), n = z - r;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (fabsf(n) > 192) return n <= 0 ? 0.0f : INFINITY;
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                              fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    return ldexpf(j, (int)n);
}

/* llama.cpp's KV length is a multiple of 256 (its cache pads n_kv so); only its being a
 * multiple of 64 matters to vec_dot_f32, and zeros past the positions leave the sums as they are */
enum { KV_PAD = 256 };

/* One query head's attention as llama.cpp's graph without flash attention computes it (kq by
 * ggml_vec_dot_f32, soft_max_ext, kqv by ggml_vec_dot_f32 or, for 2 or more tokens in the batch
 * (sgemm), llamafile's tinyBLAS) over a cache whose row p holds position p, the rows before
 * pos0 masked; arguments as elm_kernels.attention. */
FUSED static void attention_head(const float *q, const float *k, const float *v, size_t stride,
                           int32_t n_pos, int32_t pos0, int head_dim, float scale, float sink,
                           bool sgemm, float *scores, float *out) {
    /* kq (ggml_vec_dot_f32 over head_dim), then soft_max_ext: scaled, exp by v_expf, the sum of
     * each 16 exps of the row (reduce16, from row 0: the masked ones 0) added in double, the
     * sink's expf after them (-INFINITY: none, 0), the row scaled by (float)(1/sum) */
    float max = -INFINITY;
    for (int32_t p = 0; p < n_pos; p++) {
        scores[p] = vec_dot_f32(k + (size_t)p * stride, 1, q, 0, head_dim, head_dim) * scale;
        max = scores[p] > max ? scores[p] : max;
    }
    max = sink > max ? sink : max;
    double sum = 0;
    for (int32_t b0 = pos0 / 16 * 16; b0 < pos0 + n_pos; b0 += 16) {
        float e[16] = {0};
        for (int32_t i = b0 > pos0 ? b0 : pos0; i < b0 + 16 && i < pos0 + n_pos; i++)
            e[i - b0] = scores[i - pos0] = v_expf(scores[i - pos0] - max);
        sum += (double)reduce16(e);
    }
    sum += (double)expf(sink - max);
    const float inv = (float)(1.0 / sum);
    for (int32_t p = 0; p < n_pos; p++) scores[p] *= inv;
    /* kqv: V is cached transposed in llama.cpp, so each output dimension is one dot over the
     * positions: vec_dot_f32 in decode, tinyBLAS in prefill */
    const int64_t n_kv = ((int64_t)pos0 + n_pos + KV_PAD - 1) / KV_PAD * KV_PAD;
    for (int d = 0; d < head_dim; d++)
        out[d] = sgemm ? sgemm_dot_f32(v + d, stride, scores, pos0, n_pos)
                       : vec_dot_f32(v + d, stride, scores, pos0, n_pos, n_kv);
}

/* llama.cpp computes each head of a GQA group on its own. */
static void attention(const float *q, int n_q, const float *k, const float *v, size_t stride,
                      int32_t n_pos, int32_t pos0, int head_dim, float scale,
                      const float *sinks, int32_t n_tok, float *scores, float *out) {
    for (int i = 0; i < n_q; i++)
        attention_head(q + i * head_dim, k, v, stride, n_pos, pos0, head_dim, scale,
                       sinks ? sinks[i] : -INFINITY, n_tok >= 2, scores, out + i * head_dim);
}

/* out[i] = silu(g[i]) · u[i] as ggml_vec_swiglu_f32 with AVX-512 computes it. */
static void swiglu(float *out, const float *g, const float *u, int64_t n) {
    /* ggml_vec_swiglu_f32: x / (1 + v_expf(0 - x)) · u in 16-lane blocks, the tail with expf */
    const int64_t nv = n - n % 16;
    for (int64_t i = 0; i < nv; i++) out[i] = g[i] / (1.0f + v_expf(0.0f - g[i])) * u[i];
    for (int64_t i = nv; i < n; i++) out[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GeGLU as ggml's CPU backend computes it (ggml_vec_geglu_f32, GGML_GELU_FP16): the gate is
 * rounded to f16 and GELU read from a table of f16 results, 0 at or below -10 and the identity at
 * or above 10. The table differs from GELU in f32 by up to one f16 step (4e-3 relative), which
 * alone moved a tiny Gemma's logits 4e-3 from llama.cpp's. */
static void geglu(float *out, const float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        float y = x <= -10.0f ? 0.0f : x;
        if (x > -10.0f && x < 10.0f) {
            /* ggml's order of operations: its f32 value decides which f16 the table holds, and
             * one f16 step is 4e-3 */
            const float h = elm_round_f16(x);
            y = elm_round_f16(0.5f * h *
                              (1.0f + tanhf(0.79788456080286535587989211986876f * h *
                                            (1.0f + 0.044715f * h * h))));
        }
        out[i] = y * u[i];
    }
}

/* RMSNorm as ggml_compute_forward_rms_norm_f32 (then ggml_mul): each square rounded to float,
 * summed in double, the mean rounded to float, the scale taken in float (the tables' sum differs
 * in the last bit, enough to move a q8 code of the next product). */
static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* rotate_pairs in ggml-cpu/ops.cpp as gcc compiles it (C++, so a·b ± c·d contracts): the first
 * product fused with the rounded second, x0·cos - x1·sin and x0·sin + x1·cos. */
static void rotate(float *p0, float *p1, float c, float s) {
    const float x0 = *p0, x1 = *p1;
    *p0 = fmaf(x0, c, -(x1 * s));
    *p1 = fmaf(x0, s, x1 * c);
}

FUSED static void rope_pairs(float *v, int n_heads, int head_dim, int rope_dim, const float *cs,
                       bool neox) {
    const int half = rope_dim / 2;
    for (int h = 0; h < n_heads; h++)
        for (int i = 0; i < half; i++) {
            float *p = v + (size_t)h * head_dim + (neox ? i : 2 * i);
            rotate(p, p + (neox ? half : 1), cs[2 * i], cs[2 * i + 1]);
        }
}

static void rope(float *v, int n_heads, int head_dim, int rope_dim, const float *cs) {
    rope_pairs(v, n_heads, head_dim, rope_dim, cs, false);
}

static void rope_neox(float *v, int n_heads, int head_dim, int rope_dim, const float *cs) {
    rope_pairs(v, n_heads, head_dim, rope_dim, cs, true);
}

/* ggml's angles (ggml_rope_cache_init): pos · base^(-2i/d) as a running float product from pos,
 * then over the frequency divisor and times the scale, each rounded to float, blended with the
 * unscaled angle by YaRN's ramp (rope_yarn, where r has an ext_factor); cos and sin times
 * mscale (YaRN's magnitude in it already: elm_rope_freqs_yarn). */
static void rope_cs(const elm_rope_freqs *r, const int32_t *pos, int32_t n, float *cs) {
    const float step = powf(r->base, -2.0f / r->rope_dim);
    for (int32_t t = 0; t < n; t++, cs += r->rope_dim) {
        float theta = (float)pos[t];
        for (int i = 0; i < r->rope_dim / 2; i++) {
            const float extrap = theta / (r->ff ? r->ff[i] : 1.0f);
            float angle = r->scale * extrap;
            if (r->ext_factor != 0) {
                const float mix = elm_rope_yarn_ramp(r, i) * r->ext_factor;
                angle = angle * (1 - mix) + extrap * mix;
            }
            theta *= step;
            cs[2 * i] = cosf(angle) * r->mscale;
            cs[2 * i + 1] = sinf(angle) * r->mscale;
        }
    }
}

static const elm_kernels *wrapped;
static elm_kernels ggml_kernels;
static pthread_once_t ggml_once = PTHREAD_ONCE_INIT;

/* The products llama.cpp's order is known for; the others are the wrapped table's, on inputs
 * prepared as ggml prepares them (q8 rows of quantize_q8, float inputs rounded to the weights'
 * type: round_float_act). */
static void matmul(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch) {
    if (!a->w.packed_by && elm_ggml_matmul_has(&a->w)) elm_ggml_matmul(a, r0, r1, scratch);
    else wrapped->matmul(a, r0, r1, scratch);
}

/* The wrapped table's kernels where llama.cpp's arithmetic is not followed or is the same. No
 * packs: weights stay in the file's layout, the one llama.cpp's order is written for. */
static void build_ggml_kernels(void) {
    wrapped = elm_kernels_best();
    ggml_kernels = (elm_kernels){
        .isa = "ggml-rounding", .dot_f32 = wrapped->dot_f32, .quantize_q8 = quantize_q8,
        .quantize_q8_k = wrapped->quantize_q8_k,
        .transpose16 = wrapped->transpose16, .matmul = matmul,
        .bf16_act_tokens = wrapped->bf16_act_tokens, .pair16 = wrapped->pair16,
        .round_float_act = true, .fused_conv = true, .rmsnorm = rmsnorm,
        .softmax = wrapped->softmax, .swiglu = swiglu, .geglu = geglu, .rope_cs = rope_cs,
        .rope = rope, .rope_neox = rope_neox, .attention = attention,
    };
}

const elm_kernels *elm_kernels_ggml(void) {
    pthread_once(&ggml_once, build_ggml_kernels);
    return &ggml_kernels;
}
