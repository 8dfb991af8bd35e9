/* The k-quant/i-quant products (kquant.h): q8_K activations, the scalar unpacking and integer dot
 * products that define the bits, and the driver every table's matmul hands these types to. */
#include "kernels/kquant.h"

#include <math.h>
#include <string.h>

#include "codecs/kquant_codec.h"
#include "codecs/mxfp4.h"
#include "kernels/blocks.h"
#include "kernels/iquant.h"
#include "kernels/packed.h"

/* Tokens quantized per pass: their q8_K rows, 16 unpacked weight rows and gemm16's tile (about
 * 72 + 22 + 23 bytes per column) fit the scratch of elm_matmul_scratch_bytes (320 bytes per
 * column). With the caller's q8_K rows nothing is quantized here, and a pass takes
 * XQ_TOKEN_CHUNK tokens (their rows about 280 bytes per column, still within L2 beside a tile):
 * each pass unpacks and repacks the rows again, which at 64 tokens took 18% of an AVX-512
 * IQ3_S prefill. From GEMM_MIN_TOKENS tokens on, a table's gemm16 takes the product. */
enum { TOKEN_CHUNK = 64, XQ_TOKEN_CHUNK = 256, GEMM_MIN_TOKENS = 4 };

void elm_quantize_q8_k_block(const float *x, int8_t *qs, float *d, int16_t *bsum) {
    /* the first value of largest magnitude, found in two passes that vectorize */
    float amax = 0, max = 0;
    for (int j = 0; j < ELM_QK_K; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    for (int j = 0; j < ELM_QK_K; j++)
        if (fabsf(x[j]) == amax) {
            max = x[j];
            break;
        }
    if (amax == 0) {
        *d = 0;
        memset(qs, 0, ELM_QK_K);
        memset(bsum, 0, ELM_QK_K / 16 * sizeof *bsum);
        return;
    }
    /* -127/max: the largest value maps to -127 whatever its sign, so |q| <= 127 */
    const float iscale = -127.0f / max;
    for (int j = 0; j < ELM_QK_K; j++) {
        /* round to nearest even through the float adder (|v| < 2^22), as ggml's nearest_int:
         * inline and vectorizable, unlike lrintf */
        const float f = iscale * x[j] + 12582912.0f;
        int32_t v;
        memcpy(&v, &f, 4);
        v = (v & 0x007fffff) - 0x00400000;
        qs[j] = (int8_t)(v > 127 ? 127 : v);
    }
    for (int g = 0; g < ELM_QK_K / 16; g++) {
        int sum = 0;
        for (int i = 0; i < 16; i++) sum += qs[16 * g + i];
        bsum[g] = (int16_t)sum;
    }
    *d = 1 / iscale;
}

void elm_quantize_q8_k(const float *x, int64_t cols, void *row) {
    const int64_t nsb = cols / ELM_QK_K;
    int8_t *qs = row;
    float *d = (float *)(qs + cols);
    int16_t *bsum = (int16_t *)(d + nsb);
    for (int64_t s = 0; s < nsb; s++)
        elm_quantize_q8_k_block(x + s * ELM_QK_K, qs + s * ELM_QK_K, d + s,
                                bsum + s * (ELM_QK_K / 16));
}

/* ---- scalar unpacking (layouts: src/codecs/kquant_decode.c, docs/kquants.md) ---- */

static void unpack_q2_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 80), o->dmin = elm_load_f16(b + 82);
    for (int g = 0; g < 16; g++) o->sc[g] = b[g] & 0x0f, o->m[g] = b[g] >> 4;
    for (int w = 0; w < ELM_QK_K; w++) {
        const int h = w / 128, k = (w % 128) / 32, l = w % 32;
        o->q[w] = (int8_t)((b[16 + 32 * h + l] >> (2 * k)) & 3);
    }
}

static void unpack_q3_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 108), o->dmin = 0;
    int8_t sc[16];
    elm_q3_k_scales(b + 96, sc);
    for (int g = 0; g < 16; g++) o->sc[g] = sc[g], o->m[g] = 0;
    for (int w = 0; w < ELM_QK_K; w++) {
        const int h = w / 128, k = (w % 128) / 32, l = w % 32;
        int q = (b[32 + 32 * h + l] >> (2 * k)) & 3;
        if (!(b[l] & (1 << (4 * h + k)))) q -= 4;
        o->q[w] = (int8_t)q;
    }
}

static void unpack_q45_k(const uint8_t *b, elm_kq_block *o, bool five) {
    o->d = elm_load_f16(b), o->dmin = elm_load_f16(b + 2);
    const uint8_t *qh = b + 16, *qs = b + (five ? 48 : 16);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        elm_kquant_scale_min(j, b + 4, &sc, &m);
        o->sc[2 * j] = o->sc[2 * j + 1] = sc;
        o->m[2 * j] = o->m[2 * j + 1] = m;
    }
    for (int w = 0; w < ELM_QK_K; w++) {
        const int p = w / 64, s = (w % 64) / 32, l = w % 32;
        int q = s ? qs[32 * p + l] >> 4 : qs[32 * p + l] & 0x0f;
        if (five && (qh[l] & (1 << (2 * p + s)))) q += 16;
        o->q[w] = (int8_t)q;
    }
}

static void unpack_q6_k(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b + 208), o->dmin = 0;
    for (int g = 0; g < 16; g++) o->sc[g] = (int8_t)b[192 + g], o->m[g] = 0;
    for (int w = 0; w < ELM_QK_K; w++) {
        const int h = w / 128, k = (w % 128) / 32, l = w % 32;
        const uint8_t lo = b[64 * h + l + 32 * (k & 1)];
        o->q[w] = (int8_t)(((k < 2 ? lo & 0x0f : lo >> 4) |
                            ((b[128 + 32 * h + l] >> (2 * k)) & 3) << 4) -
                           32);
    }
}

static void unpack_iq4_xs(const uint8_t *b, elm_kq_block *o) {
    o->d = elm_load_f16(b), o->dmin = 0;
    const unsigned sh = (unsigned)b[2] | (unsigned)b[3] << 8;
    for (int j = 0; j < 8; j++) {
        const int ls = ((b[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | (int)((sh >> (2 * j)) & 3) << 4;
        o->sc[2 * j] = o->sc[2 * j + 1] = (int16_t)(ls - 32);
        o->m[2 * j] = o->m[2 * j + 1] = 0;
        const uint8_t *qs = b + 8 + 16 * j;
        for (int l = 0; l < 16; l++) {
            o->q[32 * j + l] = elm_iq4nl_grid[qs[l] & 0x0f];
            o->q[32 * j + l + 16] = elm_iq4nl_grid[qs[l] >> 4];
        }
    }
}

void elm_kq_unpack_scalar(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out) {
    if (elm_type_iquant(t)) {
        elm_iq_unpack(t, src, n, out);
        return;
    }
    const size_t bb = elm_type_get(t)->block_bytes;
    for (int64_t i = 0; i < n; i++, src += bb, out++) switch (t) {
        case ELM_TYPE_Q2_K: unpack_q2_k(src, out); break;
        case ELM_TYPE_Q3_K: unpack_q3_k(src, out); break;
        case ELM_TYPE_Q4_K: unpack_q45_k(src, out, false); break;
        case ELM_TYPE_Q5_K: unpack_q45_k(src, out, true); break;
        case ELM_TYPE_Q6_K: unpack_q6_k(src, out); break;
        default: unpack_iq4_xs(src, out); break;
        }
}

static void dot_scalar(const elm_kq_block *w0, const elm_q8k_row *xs, int nx, int64_t n,
                       bool mins, float *out) {
    for (int i = 0; i < nx; i++) {
        const elm_kq_block *w = w0;
        const elm_q8k_row x = xs[i];
        float acc = 0;
        for (int64_t s = 0; s < n; s++, w++) {
            const int8_t *xq = x.qs + s * ELM_QK_K;
            int32_t isum = 0, msum = 0;
            for (int g = 0; g < 16; g++) {
                int32_t dot = 0;
                for (int j = 0; j < 16; j++) dot += w->q[16 * g + j] * xq[16 * g + j];
                isum += w->sc[g] * dot;
                msum += w->m[g] * x.bsum[16 * s + g];
            }
            acc += w->d * x.d[s] * (float)isum;
            if (mins) acc -= w->dmin * x.d[s] * (float)msum;
        }
        out[i] = acc;
    }
}

static void unpack_grid32_scalar(elm_type t, const uint8_t *src, int64_t n, int8_t *q, float *d) {
    const elm_grid32_layout g = elm_grid32_layout_of(t);
    for (int64_t b = 0; b < n; b++, q += ELM_QK) {
        const uint8_t *qs = src + g.block_bytes * b + g.qs_at;
        d[b] = elm_grid32_scale(t, src, b);
        for (int l = 0; l < 16; l++) {
            q[l] = g.grid[qs[l] & 0x0f];
            q[l + 16] = g.grid[qs[l] >> 4];
        }
    }
}

static float dot_iq4_nl_scalar(const int8_t *q, const float *d, elm_q8_row x, int64_t n) {
    float acc = 0;
    for (int64_t b = 0; b < n; b++) {
        int32_t dot = 0;
        for (int i = 0; i < ELM_QK; i++) dot += q[ELM_QK * b + i] * x.qs[ELM_QK * b + i];
        acc += d[b] * x.d[b] * (float)dot;
    }
    return acc;
}

const elm_kq_kernels elm_kq_scalar = {.unpack = elm_kq_unpack_scalar,
                                      .dot = dot_scalar,
                                      .unpack_grid32 = unpack_grid32_scalar,
                                      .dot_iq4_nl = dot_iq4_nl_scalar};


/* IQ4_NL and MXFP4: rows straight from the file's blocks (row) for decode, else unpacked once
 * (unpack_grid32) and dotted with each token (the x86 tables send prefill to gemm.c's tiles
 * instead: 3.9x the AVX-512 prefill of a 4-layer gpt-oss-20b, 1.4x AVX2). */
static void matmul_grid32(const elm_kq_kernels *k, const elm_matmul_args *a, int64_t r0,
                          int64_t r1, void *scratch) {
    void (*rows_of)(const uint8_t *, size_t, int64_t, elm_q8_row, int64_t, float *) =
        a->w.type == ELM_TYPE_MXFP4 ? k->rows_mxfp4 : k->rows_iq4_nl;
    const int64_t cols = a->w.cols, rows = a->w.rows, nb = cols / ELM_QK;
    const size_t row_bytes = elm_row_bytes(a->w.type, cols);
    const uint8_t *w = a->w.data;
    if (rows_of && a->n_tok < GEMM_MIN_TOKENS) {
        /* with more than one token, 16 rows at a time stay in cache for all of them */
        const int64_t chunk = a->n_tok > 1 ? 16 : r1 - r0;
        for (int64_t r = r0; r < r1; r += chunk)
            for (int64_t t = 0; t < a->n_tok; t++)
                rows_of(w + (size_t)r * row_bytes, row_bytes, r1 - r < chunk ? r1 - r : chunk,
                        elm_q8_at(a->xq, cols, t), nb, a->y + t * rows + r);
        return;
    }
    int8_t *q = scratch;
    float *d = (float *)(q + (cols + 63) / 64 * 64);
    for (int64_t r = r0; r < r1; r++) {
        k->unpack_grid32(a->w.type, w + (size_t)r * row_bytes, nb, q, d);
        for (int64_t t = 0; t < a->n_tok; t++)
            a->y[t * rows + r] = k->dot_iq4_nl(q, d, elm_q8_at(a->xq, cols, t), nb);
    }
}

/* Row r of w (row_bytes in the file's layout) unpacked, from the tiles where w is packed. */
static void unpack_row(const elm_kq_kernels *k, const elm_weights *w, int64_t r, size_t row_bytes,
                       elm_kq_block *out) {
    const int64_t nsb = w->cols / ELM_QK_K;
    if (!w->packed_by) {
        k->unpack(w->type, (const uint8_t *)w->data + (size_t)r * row_bytes, nsb, out);
        return;
    }
    enum { RUN = 16 };
    uint8_t blocks[RUN * 210]; /* Q6_K's, the largest of the packed types */
    for (int64_t s = 0; s < nsb; s += RUN) {
        const int n = nsb - s < RUN ? (int)(nsb - s) : RUN;
        elm_kx16_blocks(w, r, s, n, blocks);
        k->unpack(w->type, blocks, n, out + s);
    }
}

void elm_kquant_matmul(const elm_kq_kernels *k, const elm_matmul_args *a, int64_t r0, int64_t r1,
                       void *scratch) {
    const elm_kq_kernels *s = &elm_kq_scalar;
    const elm_kq_kernels kk = {
        .unpack = k->unpack ? k->unpack : s->unpack,
        .dot = k->dot ? k->dot : s->dot,
        .unpack_grid32 = k->unpack_grid32 ? k->unpack_grid32 : s->unpack_grid32,
        .dot_iq4_nl = k->dot_iq4_nl ? k->dot_iq4_nl : s->dot_iq4_nl,
        .rows_iq4_nl = k->rows_iq4_nl,
        .rows_mxfp4 = k->rows_mxfp4};
    if (elm_type_grid32(a->w.type)) {
        matmul_grid32(&kk, a, r0, r1, scratch);
        return;
    }
    const int64_t cols = a->w.cols, rows = a->w.rows, nsb = cols / ELM_QK_K;
    const size_t row_bytes = elm_row_bytes(a->w.type, cols), xrow = elm_q8k_row_bytes(cols);
    const bool mins = elm_kq_has_mins(a->w.type);
    /* products straight from the file's super-blocks (dot_packed) */
    const bool direct = k->dot_packed && (k->packed_types >> a->w.type & 1);
    /* scratch: the unpacked rows (16 of them with gemm16), gemm16's tile, the q8_K chunk */
    const bool tiles =
        k->gemm16 && (k->gemm16_types >> a->w.type & 1) && a->n_tok >= GEMM_MIN_TOKENS &&
        (!a->w.packed_by || (k->gemm16_packed_types >> a->w.type & 1));
    elm_kq_block *blk = scratch;
    uint8_t *tile = (uint8_t *)(blk + (tiles ? 16 : 1) * nsb);
    tile += (64 - (uintptr_t)tile % 64) % 64;
    uint8_t *own = tile + (tiles ? (size_t)nsb * ELM_KQ_TILE_SB_BYTES : 0);
    const int64_t chunk = a->xq ? XQ_TOKEN_CHUNK : TOKEN_CHUNK;
    for (int64_t t0 = 0; t0 < a->n_tok; t0 += chunk) {
        const int64_t nt = a->n_tok - t0 < chunk ? a->n_tok - t0 : chunk;
        /* the caller's q8_K rows, or the chunk's quantized here */
        const uint8_t *xq = a->xq ? (const uint8_t *)a->xq + (size_t)t0 * xrow : own;
        if (!a->xq)
            for (int64_t t = 0; t < nt; t++)
                elm_quantize_q8_k(a->x + (t0 + t) * cols, cols, own + t * xrow);
        if (a->w.packed_by && !tiles) {
            elm_packed_matmul(k->tile_kx16(a->w.type), k->tile_kx16_tokens, a->w.data, rows, nsb,
                              (size_t)nsb * ELM_TILE_ROWS * elm_type_get(a->w.type)->block_bytes,
                              xq, xrow, nt, a->y + t0 * rows, r0, r1);
            continue;
        }
        if (tiles) {
            for (int64_t r = r0; r < r1; r += 16) {
                const int n_rows = r1 - r < 16 ? (int)(r1 - r) : 16;
                for (int i = 0; i < n_rows; i++)
                    unpack_row(&kk, &a->w, r + i, row_bytes, blk + i * nsb);
                k->gemm16(a->w.type, blk, n_rows, cols, xq, nt, a->y + t0 * rows + r, rows, tile);
            }
            continue;
        }
        if (direct && nt == 1 && k->decode_rows) {
            k->decode_rows(a->w.type, (const uint8_t *)a->w.data + (size_t)r0 * row_bytes,
                           row_bytes, r1 - r0, elm_q8k_at(xq, cols, 0), nsb, a->y + t0 * rows + r0);
            continue;
        }
        /* tiles of nr rows (2 on the direct path) by up to 4 tokens */
        for (int64_t r = r0; r < r1;) {
            const uint8_t *src = (const uint8_t *)a->w.data + (size_t)r * row_bytes;
            const int nr = direct && nt > 1 && r1 - r >= 2 ? 2 : 1;
            if (!direct) kk.unpack(a->w.type, src, nsb, blk);
            for (int64_t t = 0; t < nt; t += 4) {
                const int nx = nt - t < 4 ? (int)(nt - t) : 4;
                elm_q8k_row x[4];
                float out[8];
                for (int i = 0; i < nx; i++) x[i] = elm_q8k_at(xq, cols, t + i);
                if (direct) k->dot_packed(a->w.type, src, row_bytes, nr, x, nx, nsb, out);
                else kk.dot(blk, x, nx, nsb, mins, out);
                for (int j = 0; j < nr; j++)
                    for (int i = 0; i < nx; i++) a->y[(t0 + t + i) * rows + r + j] = out[4 * j + i];
            }
            r += nr;
        }
    }
}
