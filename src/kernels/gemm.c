/* Prefill products over repacked tiles (see gemm.h). The order of the loops keeps everything
 * in cache: a panel of up to PANEL_TILES tiles is repacked once, then every chunk of tokens runs
 * over it; a chunk's activations (transposed, for float weights) are reused by all the panel's
 * tiles. Float products can also go by blocks of columns (elm_gemm_kernels.f32_kc): at 128, a
 * block of a tile and of the chunk (8 KiB each) stay in L1 while a micro-kernel of 6 tokens passes
 * over them 3 times per tile and 4 tiles share the chunk's block. Without the blocking each pass
 * streamed a whole tile and chunk (128 KiB each at 2048 columns, 352 KiB at 5632) from L2 or, on
 * CPUs with a 512 KiB L2, from L3; a kernel that takes all 16 tokens at once passes only once. */
#include "kernels/gemm.h"

#include "kernels/blocks.h"

enum { PANEL_TILES = 4, CHUNK = 16 };

size_t elm_matmul_scratch_bytes(int64_t max_cols) {
    const size_t nb = (size_t)(max_cols + ELM_QK - 1) / ELM_QK;
    const size_t q8 = PANEL_TILES * nb * ELM_TILE_Q8_BYTES;
    /* float tiles and a chunk; BF16 pair tiles: as many bytes of tiles, a chunk and its pairs */
    const size_t f32 = (PANEL_TILES + 1) * (size_t)max_cols * ELM_TILE_ROWS * sizeof(float) +
                       (size_t)max_cols * ELM_TILE_ROWS * 2;
    return (q8 > f32 ? q8 : f32) + 64;
}

void elm_repack_q8_tile(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile) {
    const int64_t nb = w->cols / ELM_QK;
    const size_t bb = elm_type_get(w->type)->block_bytes;
    const size_t row_bytes = (size_t)nb * bb;
    for (int r = 0; r < ELM_TILE_ROWS; r++) {
        const uint8_t *row =
            r < n_rows ? (const uint8_t *)w->data + (size_t)(r0 + r) * row_bytes : NULL;
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *tb = tile + b * ELM_TILE_Q8_BYTES;
            int8_t q[ELM_QK] = {0};
            float d = 0, m = 0;
            if (row) elm_block_unpack(w->type, row + b * bb, q, &d, &m);
            for (int k = 0; k < ELM_QK / 4; k++)
                memcpy(tb + (k * ELM_TILE_ROWS + r) * 4, q + 4 * k, 4);
            memcpy(tb + ELM_TILE_ROWS * ELM_QK + r * 4, &d, 4);
            memcpy(tb + ELM_TILE_ROWS * ELM_QK + (ELM_TILE_ROWS + r) * 4, &m, 4);
        }
    }
}

void elm_repack_f32_cols(const elm_weights *w, int64_t r0, int n_rows, int64_t c0, float *tile) {
    enum { CHUNK = 256 };
    const int64_t cols = w->cols;
    const elm_type_traits *tt = elm_type_get(w->type);
    const size_t row_bytes = elm_row_bytes(w->type, cols);
    float buf[CHUNK];
    for (int r = 0; r < ELM_TILE_ROWS; r++) {
        const uint8_t *row =
            r < n_rows ? (const uint8_t *)w->data + (size_t)(r0 + r) * row_bytes : NULL;
        for (int64_t c1 = c0; c1 < cols; c1 += CHUNK) {
            const int64_t n = cols - c1 < CHUNK ? cols - c1 : CHUNK;
            if (row) tt->to_float(row + (size_t)c1 / tt->block_size * tt->block_bytes, buf, n);
            else memset(buf, 0, sizeof buf);
            for (int64_t c = 0; c < n; c++) tile[(c1 + c) * ELM_TILE_ROWS + r] = buf[c];
        }
    }
}

void elm_repack_f32_tile(const elm_weights *w, int64_t r0, int n_rows, float *tile) {
    elm_repack_f32_cols(w, r0, n_rows, 0, tile);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The codes of a tile of nb blocks + 16 (gemm.h's q8_small). */
static void offset_codes(uint8_t *tile, int64_t nb) {
    for (int64_t b = 0; b < nb; b++, tile += ELM_TILE_Q8_BYTES)
        for (int i = 0; i < ELM_TILE_ROWS * ELM_QK; i++) tile[i] = (uint8_t)(tile[i] + 16);
}

static void gemm_q8(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0, int64_t r1,
                    uint8_t *panel) {
    const int64_t rows = a->w.rows, nb = a->w.cols / ELM_QK;
    const size_t tile_bytes = (size_t)nb * ELM_TILE_Q8_BYTES;
    const bool small = g->q8_small && elm_block_small_codes(a->w.type);
    const elm_tile_q8_fn tile_fn = small ? g->q8_small : g->q8;
    for (int64_t p0 = r0; p0 < r1; p0 += PANEL_TILES * ELM_TILE_ROWS) {
        const int64_t np = min64(PANEL_TILES * ELM_TILE_ROWS, r1 - p0);
        const int n_tiles = (int)((np + ELM_TILE_ROWS - 1) / ELM_TILE_ROWS);
        const elm_repack_q8_fn repack = g->repack_q8 ? g->repack_q8 : elm_repack_q8_tile;
        for (int i = 0; i < n_tiles; i++) {
            repack(&a->w, p0 + i * ELM_TILE_ROWS, (int)min64(ELM_TILE_ROWS, np - i * ELM_TILE_ROWS),
                   panel + i * tile_bytes);
            if (small) offset_codes(panel + i * tile_bytes, nb);
        }
        for (int64_t t0 = 0; t0 < a->n_tok; t0 += g->q8_tokens) {
            const int nt = (int)min64(g->q8_tokens, a->n_tok - t0);
            for (int i = 0; i < n_tiles; i++)
                tile_fn(panel + i * tile_bytes, nb,
                      (const char *)a->xq + t0 * elm_q8_row_bytes(a->w.cols), nt,
                      a->y + t0 * rows + p0 + i * ELM_TILE_ROWS, rows,
                      (int)min64(ELM_TILE_ROWS, np - i * ELM_TILE_ROWS));
        }
    }
}

void elm_transpose_x16(const float *x, int64_t ldx, int n_tok, int64_t cols, float *xt) {
    for (int64_t c = 0; c < cols; c++)
        for (int t = 0; t < CHUNK; t++) xt[c * CHUNK + t] = t < n_tok ? x[t * ldx + c] : 0.0f;
}

/* Float tiles, or BF16 pair tiles where the table has them (h): both take 16 rows and 16 tokens
 * per 64 bytes of a column (a pair of columns for h), so the offsets differ only by es, the bytes
 * of one weight in a tile. */
static void gemm_f32(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0, int64_t r1,
                     uint8_t *panel) {
    const int64_t rows = a->w.rows, cols = a->w.cols;
    const elm_gemm_bf16 *h = a->w.type == ELM_TYPE_BF16 && cols % 2 == 0 ? g->bf16 : NULL;
    const size_t es = h ? 2 : sizeof(float), tile_bytes = (size_t)cols * ELM_TILE_ROWS * es;
    const int panel_tiles = h ? 2 * PANEL_TILES : PANEL_TILES; /* the same bytes */
    float *xt = (float *)(panel + panel_tiles * tile_bytes);
    uint32_t *xp = (uint32_t *)(xt + (size_t)cols * CHUNK); /* the paired chunk (h) */
    const elm_transpose_fn transpose = g->transpose ? g->transpose : elm_transpose_x16;
    const int tokens = h ? h->tokens : g->f32_tokens, kc = h ? h->kc : g->f32_kc;
    const int64_t block = kc ? kc : cols;
    int64_t paired = -1; /* the chunk xp holds */
    for (int64_t p0 = r0; p0 < r1; p0 += panel_tiles * ELM_TILE_ROWS) {
        const int64_t np = min64(panel_tiles * ELM_TILE_ROWS, r1 - p0);
        const int n_tiles = (int)((np + ELM_TILE_ROWS - 1) / ELM_TILE_ROWS);
        for (int i = 0; i < n_tiles; i++) {
            const int64_t r = p0 + i * ELM_TILE_ROWS;
            const int n = (int)min64(ELM_TILE_ROWS, np - i * ELM_TILE_ROWS);
            if (h) h->repack(&a->w, r, n, panel + i * tile_bytes);
            else if (g->repack_f32) g->repack_f32(&a->w, r, n, (float *)(panel + i * tile_bytes));
            else elm_repack_f32_tile(&a->w, r, n, (float *)(panel + i * tile_bytes));
        }
        for (int64_t t0 = 0; t0 < a->n_tok; t0 += CHUNK) {
            const int nt = (int)min64(CHUNK, a->n_tok - t0);
            const float *chunk = a->xt ? a->xt + t0 * cols : xt;
            const uint32_t *pairs = h && a->xp ? a->xp + t0 * cols / 2 : xp;
            if (!a->xt && !(h && (a->xp || paired == t0)))
                transpose(a->x + t0 * cols, cols, nt, cols, xt);
            if (h && !a->xp && paired != t0) h->pair(chunk, cols, xp);
            paired = t0;
            const uint8_t *x = h ? (const uint8_t *)pairs : (const uint8_t *)chunk;
            for (int64_t k0 = 0; k0 < cols; k0 += block) {
                const int64_t kc = min64(block, cols - k0);
                for (int i = 0; i < n_tiles; i++)
                    for (int tt = 0; tt < nt; tt += tokens) {
                        const uint8_t *tile = panel + i * tile_bytes + k0 * ELM_TILE_ROWS * es;
                        const uint8_t *xk = x + (k0 * CHUNK * es + tt * sizeof(float));
                        float *y = a->y + (t0 + tt) * rows + p0 + i * ELM_TILE_ROWS;
                        const int n_tk = nt - tt < tokens ? nt - tt : tokens;
                        const int n_rows = (int)min64(ELM_TILE_ROWS, np - i * ELM_TILE_ROWS);
                        if (h)
                            h->tile(tile, kc / 2, (const uint32_t *)xk, n_tk, y, rows, n_rows,
                                    k0 > 0);
                        else
                            g->f32((const float *)tile, kc, (const float *)xk, n_tk, y, rows,
                                   n_rows, k0 > 0);
                    }
            }
        }
    }
}

void elm_gemm(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0, int64_t r1,
              void *scratch) {
    if (elm_type_q8_act(a->w.type)) gemm_q8(g, a, r0, r1, scratch);
    else gemm_f32(g, a, r0, r1, scratch);
}
