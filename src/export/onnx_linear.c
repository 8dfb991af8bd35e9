/* Weights into ONNX initializers (onnx_linear.h). ggml blocks (little-endian) are:
 * Q4_0 {f16 d; u8 qs[16]}: element j = qs[j] & 15, element j + 16 = qs[j] >> 4, value (q - 8)·d;
 * Q4_1 {f16 d, m; u8 qs[16]}: same nibbles, value q·d + m; Q8_0 {f16 d; i8 qs[32]}: value q·d.
 * MatMulNBits (ONNX Runtime contrib op) takes B [N, K/32, blob] with element i of a block in byte
 * i/2 (low nibble first) for 4 bits, scales [N·K/32] and zero points (packed uint8 for 4 bits, or
 * floats), value (q - zp)·scale. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/onnx_linear.h"

enum { QK = 32 };

static float f16_at(const unsigned char *p) { return elm_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* MatMulNBits node over prepared B, scales and zero points. */
static const char *nbits_node(ox_graph *g, const elm_tensor *w, const char *x, int bits,
                              const unsigned char *b, const float *scales, const void *zp,
                              int zp_type, size_t zp_bytes) {
    const int64_t K = w->ne[0], N = w->ne[1], nb = K / QK, blob = QK * bits / 8;
    const int64_t bd[3] = {N, nb, blob}, sd[1] = {N * nb}, zd[1] = {(int64_t)(zp_type == OX_FLOAT ? N * nb : (int64_t)zp_bytes)};
    const char *bn = ox_init_raw(g, ox_name(g, "%s.qweight", w->name), OX_UINT8, bd, 3, b, (size_t)(N * nb * blob));
    const char *sn = ox_init_raw(g, ox_name(g, "%s.scales", w->name), OX_FLOAT, sd, 1, scales, sizeof(float) * (size_t)(N * nb));
    const char *zn = ox_init_raw(g, ox_name(g, "%s.zero_points", w->name), zp_type, zd, 1, zp, zp_bytes);
    const char *y = ox_op(g, "com.microsoft", "MatMulNBits", NULL, x, bn, sn, zn, NULL);
    ox_attr_i(g, "K", K);
    ox_attr_i(g, "N", N);
    ox_attr_i(g, "bits", bits);
    ox_attr_i(g, "block_size", QK);
    ox_attr_i(g, "accuracy_level", g->accuracy_level);
    return y;
}

/* Converts blocks of w (Q4_0, Q4_1 or Q8_0 layout in data) into MatMulNBits tensors. */
static const char *nbits(ox_graph *g, const elm_tensor *w, elm_type type, const unsigned char *data,
                         const char *x) {
    const int64_t K = w->ne[0], N = w->ne[1], nb = K / QK, n_blocks = N * nb;
    const int bits = type == ELM_TYPE_Q8_0 ? 8 : 4;
    const size_t bb = elm_type_get(type)->block_bytes;
    unsigned char *b = malloc((size_t)n_blocks * QK * bits / 8);
    float *scales = malloc(sizeof(float) * (size_t)n_blocks);
    /* uint8 zero points: 4-bit pairs packed per row of N (ceil(nb/2) bytes), or one byte each */
    const size_t zp_row = bits == 4 ? (size_t)(nb + 1) / 2 : (size_t)nb;
    const bool fzp = type == ELM_TYPE_Q4_1;
    void *zp = fzp ? malloc(sizeof(float) * (size_t)n_blocks) : calloc((size_t)N, zp_row);
    const char *y = "";
    if (!b || !scales || !zp) {
        g->oom = true;
        goto done;
    }
    for (int64_t i = 0; i < n_blocks; i++) {
        const unsigned char *blk = data + (size_t)i * bb;
        float d = f16_at(blk);
        if (bits == 8) {
            unsigned char *o = b + (size_t)i * QK;
            for (int j = 0; j < QK; j++) o[j] = (unsigned char)((signed char)blk[2 + j] + 128);
            ((unsigned char *)zp)[i] = 128; /* row r, block k: r·nb + k == i */
        } else {
            const unsigned char *qs = blk + (fzp ? 4 : 2);
            unsigned char q[QK];
            for (int j = 0; j < QK / 2; j++) q[j] = qs[j] & 15, q[j + QK / 2] = qs[j] >> 4;
            if (fzp) {
                const float m = f16_at(blk + 2);
                float z = d != 0.0f ? -m / d : -1.0f;
                if (d == 0.0f) {
                    memset(q, 0, sizeof q);
                    d = m;
                }
                ((float *)zp)[i] = z;
            } else {
                const int64_t r = i / nb, k = i % nb;
                ((unsigned char *)zp)[(size_t)r * zp_row + (size_t)k / 2] |= (unsigned char)(8 << (4 * (k & 1)));
            }
            unsigned char *o = b + (size_t)i * (QK / 2);
            for (int j = 0; j < QK / 2; j++) o[j] = (unsigned char)(q[2 * j] | q[2 * j + 1] << 4);
        }
        scales[i] = d;
    }
    y = nbits_node(g, w, x, bits, b, scales, zp, fzp ? OX_FLOAT : OX_UINT8,
                   fzp ? sizeof(float) * (size_t)n_blocks : (size_t)N * zp_row);
done:
    free(b);
    free(scales);
    free(zp);
    return y;
}

/* x · W for W [K, N], the float weight named wt; "" when wt is "" (out of memory). */
static const char *matmul(ox_graph *g, const char *x, const char *wt) {
    return *wt ? ox_op(g, "", "MatMul", NULL, x, wt, NULL) : "";
}

/* The QDQ form of Q4_0 / Q8_0 blocks (onnx_linear.h): signed codes transposed to [K, N] (int4
 * packed two per byte, element e = k·N + n in byte e/2, low nibble first), scales [K/32, N],
 * DequantizeLinear (opset 21, axis 0, block_size 32, zero point 0) into the float weight for
 * MatMul; returns its name. */
static const char *qdq(ox_graph *g, const elm_tensor *w, elm_type type, const unsigned char *data) {
    const int64_t K = w->ne[0], N = w->ne[1], nb = K / QK;
    const bool q4 = type == ELM_TYPE_Q4_0;
    const size_t bb = elm_type_get(type)->block_bytes, n = (size_t)(K * N);
    unsigned char *c = calloc(q4 ? (n + 1) / 2 : n, 1);
    float *scales = malloc(sizeof(float) * (size_t)(nb * N));
    const char *wf = "";
    if (!c || !scales) {
        g->oom = true;
        goto done;
    }
    for (int64_t r = 0; r < N; r++)
        for (int64_t b = 0; b < nb; b++) {
            const unsigned char *blk = data + (size_t)(r * nb + b) * bb;
            scales[b * N + r] = f16_at(blk);
            for (int j = 0; j < QK; j++) {
                const size_t e = (size_t)((b * QK + j) * N + r);
                if (!q4) {
                    c[e] = blk[2 + j];
                    continue;
                }
                const int q = (j < QK / 2 ? blk[2 + j] & 15 : blk[2 + j - QK / 2] >> 4) - 8;
                c[e / 2] |= (unsigned char)((q & 15) << (4 * (e & 1)));
            }
        }
    const int64_t cd[2] = {K, N}, sd[2] = {nb, N};
    const char *cn = ox_init_raw(g, ox_name(g, "%s.codes", w->name), q4 ? OX_INT4 : OX_INT8, cd, 2, c, q4 ? (n + 1) / 2 : n);
    const char *sn = ox_init_raw(g, ox_name(g, "%s.scales", w->name), OX_FLOAT, sd, 2, scales, sizeof(float) * (size_t)(nb * N));
    wf = ox_op(g, "", "DequantizeLinear", NULL, cn, sn, NULL);
    ox_attr_i(g, "axis", 0);
    ox_attr_i(g, "block_size", QK);
done:
    free(c);
    free(scales);
    return wf;
}

/* Q4_0, Q4_1 and Q8_0 blocks in the graph's form; false when the form has no place for type. */
static bool blocks(ox_graph *g, const elm_tensor *w, elm_type type, const unsigned char *data,
                   const char *x, const char **y) {
    if (g->qdq && type == ELM_TYPE_Q4_1) return false;
    *y = g->qdq ? matmul(g, x, qdq(g, w, type, data)) : nbits(g, w, type, data, x);
    return true;
}

/* Decodes rows [r0, r1) of t into out [(r1 - r0), ne0] floats. */
static void decode_rows(const elm_tensor *t, int64_t r0, int64_t r1, float *out) {
    const size_t row = elm_row_bytes(t->type, t->ne[0]);
    for (int64_t r = r0; r < r1; r++)
        elm_type_get(t->type)->to_float((const char *)t->data + (size_t)r * row,
                                        out + (size_t)(r - r0) * t->ne[0], t->ne[0]);
}

const char *ox_table_f32(ox_graph *g, const elm_tensor *t) {
    const int64_t dims[2] = {t->ne[1], t->ne[0]};
    float *f = malloc(sizeof(float) * (size_t)(t->ne[0] * t->ne[1]));
    if (!f) {
        g->oom = true;
        return "";
    }
    decode_rows(t, 0, t->ne[1], f);
    const char *n = ox_init_raw(g, ox_name(g, "%s.rows", t->name), OX_FLOAT, dims, 2, f, sizeof(float) * (size_t)(t->ne[0] * t->ne[1]));
    free(f);
    return n;
}

/* The transposed weight [K, N] for MatMul: F16 kept as F16 behind a Cast, others as F32; returns
 * its float name. */
static const char *dense(ox_graph *g, const elm_tensor *w) {
    const int64_t K = w->ne[0], N = w->ne[1];
    const bool half = w->type == ELM_TYPE_F16;
    const size_t es = half ? 2 : 4, n = (size_t)(K * N);
    float *row = malloc(sizeof(float) * (size_t)K);
    unsigned char *t = malloc(n * es);
    const char *wn = "";
    if (!row || !t) {
        g->oom = true;
        goto done;
    }
    const size_t rb = elm_row_bytes(w->type, K);
    for (int64_t r = 0; r < N; r++) {
        if (half) {
            const uint16_t *src = (const uint16_t *)((const char *)w->data + (size_t)r * rb);
            for (int64_t k = 0; k < K; k++) memcpy(t + ((size_t)k * N + r) * 2, &src[k], 2);
        } else {
            decode_rows(w, r, r + 1, row);
            for (int64_t k = 0; k < K; k++) memcpy(t + ((size_t)k * N + r) * 4, &row[k], 4);
        }
    }
    const int64_t dims[2] = {K, N};
    wn = ox_init_raw(g, w->name, half ? OX_FLOAT16 : OX_FLOAT, dims, 2, t, n * es);
    if (half) {
        wn = ox_op(g, "", "Cast", NULL, wn, NULL);
        ox_attr_i(g, "to", OX_FLOAT);
    }
done:
    free(row);
    free(t);
    return wn;
}

const char *ox_linear(ox_graph *g, const elm_tensor *w, const char *x, elm_export_warn_fn warn,
                      void *user) {
    const char *y = "";
    switch (w->type) {
    case ELM_TYPE_Q4_0:
    case ELM_TYPE_Q4_1:
    case ELM_TYPE_Q8_0:
        if (blocks(g, w, w->type, w->data, x, &y)) return y;
        break;
    case ELM_TYPE_F32:
    case ELM_TYPE_F16:
    case ELM_TYPE_BF16: return matmul(g, x, dense(g, w));
    default: break;
    }
    /* re-quantize row by row: memory stays one Q8_0 copy of the tensor */
    const elm_type_traits *q8 = elm_type_get(ELM_TYPE_Q8_0);
    const size_t rb = elm_row_bytes(ELM_TYPE_Q8_0, w->ne[0]);
    float *row = malloc(sizeof(float) * (size_t)w->ne[0]);
    unsigned char *q = malloc(rb * (size_t)w->ne[1]);
    if (!row || !q || rb == 0) {
        g->oom = !row || !q;
    } else {
        for (int64_t r = 0; r < w->ne[1]; r++) {
            decode_rows(w, r, r + 1, row);
            q8->from_float(row, q + (size_t)r * rb, w->ne[0]);
        }
        if (warn) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s: %s has no %s form; re-quantized to q8_0", w->name,
                     elm_type_get(w->type)->name, g->qdq ? "DequantizeLinear" : "MatMulNBits");
            warn(msg, user);
        }
        blocks(g, w, ELM_TYPE_Q8_0, q, x, &y);
    }
    free(row);
    free(q);
    return y;
}
