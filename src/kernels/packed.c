/* The packed layouts of packed.h, in portable C: packing runs once per matrix at load. */
#include "kernels/packed.h"

#include <string.h>

bool elm_packs_qx16(elm_type t, int64_t rows, int64_t cols) {
    return (t == ELM_TYPE_Q4_0 || t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_0 || t == ELM_TYPE_Q5_1 ||
            t == ELM_TYPE_Q8_0) &&
           rows > 0 && rows % ELM_TILE_ROWS == 0 && cols > 0 && cols % ELM_QK == 0;
}

/* Every (tile of 16 rows, block) pair of w in file order, the block's 16 rows written by put into
 * one `tile` bytes of out: both layouts interleave the rows of a block, field by field. */
typedef void (*put_row_fn)(uint8_t *tile, const uint8_t *block, int r, elm_type t);

static void pack_tiles(const elm_weights *w, size_t block, size_t tile, put_row_fn put,
                       void *out) {
    const int64_t nb = w->cols / elm_type_get(w->type)->block_size;
    const size_t row_bytes = (size_t)nb * block;
    uint8_t *o = out;
    for (int64_t r0 = 0; r0 < w->rows; r0 += ELM_TILE_ROWS) {
        const uint8_t *src = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
        for (int64_t b = 0; b < nb; b++, o += tile)
            for (int r = 0; r < ELM_TILE_ROWS; r++)
                put(o, src + (size_t)r * row_bytes + (size_t)b * block, r, w->type);
    }
}

/* Copies n bytes from a block's field to its place in a tile (put) or back. */
static void move_field(uint8_t *in_tile, uint8_t *in_block, size_t n, bool put) {
    if (put) memcpy(in_tile, in_block, n);
    else memcpy(in_block, in_tile, n);
}

/* n 32-bit words of row r at blk, interleaved with the other rows' in the tile at o. */
static void move_words(uint8_t *o, uint8_t *blk, int n, int r, bool put) {
    for (int v = 0; v < n; v++) move_field(o + (v * ELM_TILE_ROWS + r) * 4, blk + 4 * v, 4, put);
}

static void put_q4q5(uint8_t *o, const uint8_t *blk, int r, elm_type t) {
    const bool asym = t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_1;
    const bool five = t == ELM_TYPE_Q5_0 || t == ELM_TYPE_Q5_1;
    const size_t m_at = 2 + (asym ? 2 : 0), qs_at = m_at + (five ? 4 : 0); /* in a file block */
    const size_t d_out = elm_qx16_d_at(five);
    move_words(o, (uint8_t *)blk + qs_at, 4, r, true); /* only read */
    if (five) {
        const uint8_t *h = blk + m_at;
        const uint32_t qh = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                            (uint32_t)h[3] << 24;
        for (int e = 0; e < 4; e++) {
            uint8_t v = 0;
            for (int k = 0; k < 8; k++) v |= (uint8_t)(((qh >> (4 * k + e)) & 1) << k);
            o[ELM_QX16_QH + 4 * r + e] = v;
        }
    }
    memcpy(o + d_out + 2 * r, blk, 2);
    if (asym) memcpy(o + d_out + 32 + 2 * r, blk + 2, 2);
}

static void put_q8_0(uint8_t *o, const uint8_t *blk, int r, elm_type t) {
    (void)t;
    move_words(o, (uint8_t *)blk + 2, ELM_QK / 4, r, true); /* only read */
    memcpy(o + ELM_Q8_0X16_D + 2 * r, blk, 2);
}

static void put_mxfp4(uint8_t *o, const uint8_t *blk, int r, elm_type t) {
    (void)t;
    move_words(o, (uint8_t *)blk + 1, 4, r, true); /* only read */
    o[ELM_MXFP4X16_E + r] = blk[0];
}

void elm_pack_qx16(const elm_weights *w, void *out) {
    const bool asym = w->type == ELM_TYPE_Q4_1 || w->type == ELM_TYPE_Q5_1;
    const bool five = w->type == ELM_TYPE_Q5_0 || w->type == ELM_TYPE_Q5_1;
    const size_t block = elm_type_get(w->type)->block_bytes;
    if (w->type == ELM_TYPE_Q8_0) pack_tiles(w, block, ELM_Q8_0X16_BYTES, put_q8_0, out);
    else if (w->type == ELM_TYPE_MXFP4) pack_tiles(w, block, ELM_MXFP4X16_BYTES, put_mxfp4, out);
    else pack_tiles(w, block, elm_qx16_bytes(asym, five), put_q4q5, out);
}

bool elm_packs_kx16(elm_type t, int64_t rows, int64_t cols) {
    return (t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K || t == ELM_TYPE_Q6_K ||
            t == ELM_TYPE_IQ4_XS) &&
           rows > 0 &&
           rows % ELM_TILE_ROWS == 0 && cols > 0 && cols % ELM_QK_K == 0;
}

/* Row r's fields of a Q4_K, Q5_K, Q6_K or IQ4_XS super-block between its file block blk and the
 * tile o (packed.h's q4_kx16, q5_kx16, q6_kx16 and iq4_xsx16): one description of the layouts for
 * packing and reading back. */
static void kx16_fields(uint8_t *o, uint8_t *blk, int r, elm_type t, bool put) {
    const bool five = t == ELM_TYPE_Q5_K, q4_k = t == ELM_TYPE_Q4_K || five;
    if (t == ELM_TYPE_Q6_K) { /* ql[128], qh[64], scales[16], d */
        move_words(o, blk, 32, r, put);
        move_words(o + ELM_Q6_KX16_QH, blk + 128, 16, r, put);
        move_words(o + ELM_Q6_KX16_SC, blk + 192, 4, r, put);
        move_field(o + ELM_Q6_KX16_D + 2 * r, blk + 208, 2, put);
        return;
    }
    move_words(o, blk + (five ? 48 : q4_k ? 16 : 8), 32, r, put);
    if (q4_k) { /* d, dmin, 12 bytes of 6-bit scales and mins, Q5_K's qh[32] */
        const size_t sm = elm_kx16_sm_at(five);
        if (five) move_words(o + ELM_Q5_KX16_QH, blk + 16, 8, r, put);
        move_words(o + sm, blk + 4, 3, r, put);
        move_field(o + sm + 192 + 2 * r, blk, 2, put);
        move_field(o + sm + 224 + 2 * r, blk + 2, 2, put);
        return;
    } /* d, scales_h, scales_l[4] */
    move_field(o + ELM_IQ4_XSX16_SL + 4 * r, blk + 4, 4, put);
    move_field(o + ELM_IQ4_XSX16_SH + 2 * r, blk + 2, 2, put);
    move_field(o + ELM_IQ4_XSX16_D + 2 * r, blk, 2, put);
}

static void put_kx16(uint8_t *o, const uint8_t *blk, int r, elm_type t) {
    kx16_fields(o, (uint8_t *)blk, r, t, true); /* only read */
}

void elm_kx16_blocks(const elm_weights *w, int64_t r, int64_t s0, int n, uint8_t *blocks) {
    const size_t block = elm_type_get(w->type)->block_bytes, tile = ELM_TILE_ROWS * block;
    const int64_t at = r / ELM_TILE_ROWS * (w->cols / ELM_QK_K) + s0; /* the tile's index */
    uint8_t *o = (uint8_t *)w->data + (size_t)at * tile;
    for (int i = 0; i < n; i++, o += tile, blocks += block)
        kx16_fields(o, blocks, (int)(r % ELM_TILE_ROWS), w->type, false); /* only read */
}

void elm_pack_kx16(const elm_weights *w, void *out) {
    const size_t block = elm_type_get(w->type)->block_bytes;
    pack_tiles(w, block, ELM_TILE_ROWS * block, put_kx16, out);
}

bool elm_packs_x16(elm_type t, int64_t rows, int64_t cols) {
    /* IQ4_NL's and MXFP4's blocks are Q4_0's nibbles and a scale */
    return elm_packs_qx16(t, rows, cols) || elm_packs_kx16(t, rows, cols) ||
           ((t == ELM_TYPE_IQ4_NL || t == ELM_TYPE_MXFP4) &&
            elm_packs_qx16(ELM_TYPE_Q4_0, rows, cols));
}

void elm_pack_x16(const elm_weights *w, void *out) {
    if (elm_type_get(w->type)->block_size == ELM_QK_K) elm_pack_kx16(w, out);
    else elm_pack_qx16(w, out);
}

void elm_packed_matmul(elm_tile_q8_fn tile, int max_tokens, const void *data, int64_t rows,
                       int64_t nb, size_t tile_bytes, const void *xq, size_t x_row, int64_t n_tok,
                       float *y, int64_t r0, int64_t r1) {
    enum { PANEL = 4 * ELM_TILE_ROWS };
    for (int64_t p0 = r0; p0 < r1; p0 += PANEL) {
        const int64_t p1 = p0 + PANEL < r1 ? p0 + PANEL : r1;
        for (int64_t t0 = 0; t0 < n_tok; t0 += max_tokens) {
            const int nt = (int)(n_tok - t0 < max_tokens ? n_tok - t0 : max_tokens);
            for (int64_t r = p0; r < p1; r += ELM_TILE_ROWS)
                tile((const uint8_t *)data + (size_t)(r / ELM_TILE_ROWS) * tile_bytes, nb,
                     (const char *)xq + (size_t)t0 * x_row, nt, y + t0 * rows + r, rows,
                     (int)(p1 - r < ELM_TILE_ROWS ? p1 - r : ELM_TILE_ROWS));
        }
    }
}

void elm_packed_qx16_matmul(elm_tile_q8_fn tile, int max_tokens, const elm_matmul_args *a,
                            int64_t r0, int64_t r1) {
    const int64_t nb = a->w.cols / ELM_QK;
    const size_t tile_bytes = (size_t)nb * ELM_TILE_ROWS * elm_type_get(a->w.type)->block_bytes;
    elm_packed_matmul(tile, max_tokens, a->w.data, a->w.rows, nb, tile_bytes,
                      a->xq, elm_q8_row_bytes(a->w.cols), a->n_tok, a->y, r0, r1);
}
