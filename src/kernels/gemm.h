/* Tiled matrix-matrix products for prefill, shared by the SIMD tables. A thread's weight rows are
 * repacked, ELM_TILE_ROWS rows at a time, into a layout where one vector register holds the same
 * columns of consecutive rows, so a micro-kernel multiplies one loaded weight vector with many
 * tokens' broadcast activations (the weights are read once per call, the activations stay in
 * cache). Each ISA supplies only the two micro-kernels.
 *
 * Integer tile (block types, q8 activations), per 32-column block b of the 16 rows, 640 bytes:
 *   int8  q[8][16][4]   q[k][r][i] = weight (row r, column 32b + 4k + i), signed (blocks.h)
 *   float d[16], m[16]  row r's block scale and offset: value = d·q + m
 * Float tile (F32, F16, BF16): float w[cols][16], w[c][r] = weight (row r, column c); the
 * activations are transposed alike, 16 tokens at a time.
 * BF16 pair tile (a table with 16-bit dot products, elm_gemm_bf16): uint16 w[cols/2][16][2],
 * w[p][r][i] = the BF16 weight (row r, column 2p + i); the activations rounded to BF16 and paired
 * alike, x[p][t][i] = token t's column 2p + i, so one 32-bit broadcast gives a token's pair.
 * Rows past the end of the matrix are zero. */
#ifndef EDGELM_KERNELS_GEMM_H
#define EDGELM_KERNELS_GEMM_H

#include "kernels/kernels.h"

#define ELM_TILE_Q8_BYTES (ELM_TILE_ROWS * ELM_QK + 2 * ELM_TILE_ROWS * (int)sizeof(float))

/* y[t·ldy + r] = Σ_b d[r]·(x_t.d[b] · Σ_i q[r][i]·x_t.qs[32b + i]) + m[r]·x_t.s[b] for t < n_tok,
 * r < n_rows, b < nb, x_t = elm_q8_at(xq, 32·nb, t). n_tok is at most the kernel's token count. */
typedef void (*elm_tile_q8_fn)(const uint8_t *tile, int64_t nb, const void *xq, int n_tok, float *y,
                               int64_t ldy, int n_rows);

/* y[t·ldy + r] (+)= Σ_c w[c][r]·xt[16c + t] for t < n_tok, c < cols, r < n_rows: the activations
 * of a chunk of up to 16 tokens transposed ([cols][16]), so a kernel broadcasts them from one
 * pointer at fixed offsets. add: accumulate into y (the later column blocks of a row, see
 * elm_gemm); else overwrite it. n_tok is at most the kernel's token count. */
typedef void (*elm_tile_f32_fn)(const float *tile, int64_t cols, const float *xt, int n_tok,
                                float *y, int64_t ldy, int n_rows, bool add);

/* For the float micro-kernels of up to 6 tokens: op(0) ... op(5), each op a block guarded by
 * `if (nt > k)` on the kernel's constant token count, naming token k's accumulators by pasting
 * (a##k##0, ...). gcc 12 stored an array of accumulators to the stack after every column (the
 * vector loads may alias it), as many stores as multiply-adds; named ones stay in registers. */
#define ELM_FOR_6_TOKENS(op) op(0) op(1) op(2) op(3) op(4) op(5)

/* Calls f(args..., k) for k = n_tok (1..6; more: 6) with k a constant, so that each token count
 * runs its own micro-kernel of the form above. */
#define ELM_CALL_6_TOKENS(n_tok, f, ...)                                                           \
    switch (n_tok) {                                                                               \
    case 1: f(__VA_ARGS__, 1); break;                                                              \
    case 2: f(__VA_ARGS__, 2); break;                                                              \
    case 3: f(__VA_ARGS__, 3); break;                                                              \
    case 4: f(__VA_ARGS__, 4); break;                                                              \
    case 5: f(__VA_ARGS__, 5); break;                                                              \
    default: f(__VA_ARGS__, 6); break;                                                             \
    }

/* y[t·ldy + r] (+)= Σ_p Σ_i w[p][r][i]·x[p][t][i] for t < n_tok, p < pairs, r < n_rows, with
 * the pair tile and paired activations above; as elm_tile_f32_fn otherwise. */
typedef void (*elm_tile_bf16_fn)(const uint8_t *tile, int64_t pairs, const uint32_t *xp, int n_tok,
                                 float *y, int64_t ldy, int n_rows, bool add);

/* Rows [r0, r0 + n_rows) of w (n_rows <= 16) into one tile of the layout above. */
typedef void (*elm_repack_q8_fn)(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile);
typedef void (*elm_repack_f32_fn)(const elm_weights *w, int64_t r0, int n_rows, float *tile);

/* As elm_kernels.transpose16. */
typedef void (*elm_transpose_fn)(const float *x, int64_t ldx, int n_tok, int64_t cols, float *xt);

/* BF16 weights by 16-bit dot products (vdpbf16ps), for an even column count: the activations are
 * rounded to BF16 (to nearest, ties to even), so the products differ from float ones by up to
 * 2^-9·Σ|w·x| (elm_kernels.bf16_act_tokens). */
typedef struct elm_gemm_bf16 {
    elm_tile_bf16_fn tile;
    int tokens; /* most tokens per tile call, up to 16 */
    int kc;     /* columns per block (even), 0: all */
    /* Rows [r0, r0 + n_rows) of BF16 weights w (n_rows <= 16) into one pair tile. */
    void (*repack)(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile);
    /* A transposed 16-token chunk (elm_transpose_fn's xt, cols even) into paired BF16. */
    void (*pair)(const float *xt, int64_t cols, uint32_t *xp);
} elm_gemm_bf16;

/* x86/avx512_bf16.c (x86-64 only): for CPUs with AVX512_BF16 besides the AVX-512 table's set;
 * its pairing, also the table's pair16. */
extern const elm_gemm_bf16 elm_gemm_bf16_avx512;
void elm_pair_bf16_avx512(const float *xt, int64_t cols, uint32_t *xp);
/* arm/neon_bf16.c (ARM64 Linux only): for CPUs with FEAT_BF16 besides the NEON table's set. */
extern const elm_gemm_bf16 elm_gemm_bf16_neon;
void elm_pair_bf16_neon(const float *xt, int64_t cols, uint32_t *xp);

typedef struct elm_gemm_kernels {
    elm_tile_q8_fn q8;
    int q8_tokens; /* most tokens per q8 call */
    /* As q8, for the tiles of the types with 5-bit codes (elm_block_small_codes) repacked with
     * u = q + 16 in place of q (unsigned, 1..31); or NULL: those go by q8 too. */
    elm_tile_q8_fn q8_small;
    elm_tile_f32_fn f32;
    int f32_tokens;               /* most tokens per f32 call */
    int f32_kc;                   /* columns per block of float products (elm_gemm), 0: all */
    elm_repack_q8_fn repack_q8;   /* SIMD repacking, or NULL for elm_repack_q8_tile */
    elm_repack_f32_fn repack_f32; /* or NULL for elm_repack_f32_tile */
    elm_transpose_fn transpose;   /* or NULL for elm_transpose_x16 */
    const elm_gemm_bf16 *bf16;    /* or NULL: BF16 weights go by float tiles */
} elm_gemm_kernels;

/* Rows [r0, r1) of a->y by tiles (see kernels.h's matmul); scratch as elm_matmul_scratch_bytes. */
void elm_gemm(const elm_gemm_kernels *g, const elm_matmul_args *a, int64_t r0, int64_t r1,
              void *scratch);

/* The portable repacking (the reference for the SIMD ones). */
void elm_repack_q8_tile(const elm_weights *w, int64_t r0, int n_rows, uint8_t *tile);
void elm_repack_f32_tile(const elm_weights *w, int64_t r0, int n_rows, float *tile);
/* As elm_repack_f32_tile for columns [c0, cols) only: the tail a SIMD repacking leaves. */
void elm_repack_f32_cols(const elm_weights *w, int64_t r0, int n_rows, int64_t c0, float *tile);
void elm_transpose_x16(const float *x, int64_t ldx, int n_tok, int64_t cols, float *xt);

#endif
