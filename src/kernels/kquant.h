/* Products with ggml's super-block weight types (k-quants Q2_K..Q6_K, IQ4_XS) and the 32-weight
 * grid types IQ4_NL and MXFP4, in integers as llama.cpp computes them.
 *
 * Activations: for the 256-weight types, q8_K rows (llama.cpp's block_q8_K scheme, here laid out
 * as arrays): per 256 values a float scale d = max/-127 with max the signed value of largest
 * magnitude, int8 quants q = round(x/d) (to nearest even, at most 127), and the int16 sums of
 * each 16 quants. IQ4_NL and MXFP4 take the q8 rows of the 32-weight types (kernels.h), as
 * llama.cpp pairs them with q8_0: a block is 32 grid values (int8) and one float scale.
 *
 * Weights: every super-block type is decoded ("unpacked") into one canonical form, so one integer
 * dot product serves all of them:
 *   value[j] = d·sc[j/16]·q[j] - dmin·m[j/16],  q int8 with |q| <= 127, sc and m int16.
 * A super-block against a q8_K block then gives, exactly in integers,
 *   isum = Σ_g sc[g]·Σ_{j in g} q[j]·x.q[j],   msum = Σ_g m[g]·x.bsum[g],
 * and the float result (d·x.d)·isum - (dmin·x.d)·msum. The scalar table defines these bits; the
 * SIMD tables compute the same integers but may sum their parts in another float order.
 *
 * The kernel matmul of each table hands these types to elm_kquant_matmul, which quantizes the
 * activations itself, a chunk of tokens at a time, into the thread's scratch. Decode and the
 * tables without gemm16 take the rows one or two at a time, 4 tokens per pass (dot_packed from
 * the file's bytes where the table has it, else a row unpacked once per chunk and dot); prefill
 * with gemm16 unpacks 16 rows and runs every token of the chunk over their repacked tile. Weights
 * packed at load (elm_weights.packed_by: Q4_K, Q5_K, Q6_K, IQ4_XS) go through the table's
 * tile_kx16 micro-kernels. */
#ifndef EDGELM_KERNELS_KQUANT_H
#define EDGELM_KERNELS_KQUANT_H

#include "codecs/iquant_codec.h"
#include "codecs/kquant_codec.h"
#include "codecs/mxfp4.h"
#include "core/half.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

/* Whether products with weights of type t go through elm_kquant_matmul (the sub-4-bit i-quants
 * too, kernels/iquant.h). */
static inline bool elm_type_kquant(elm_type t) {
    return t == ELM_TYPE_Q2_K || t == ELM_TYPE_Q3_K || t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K ||
           t == ELM_TYPE_Q6_K || t == ELM_TYPE_IQ4_XS || t == ELM_TYPE_IQ4_NL ||
           t == ELM_TYPE_MXFP4 || elm_type_iquant(t);
}

/* Whether t is one of the 32-weight grid types, IQ4_NL and MXFP4. */
static inline bool elm_type_grid32(elm_type t) {
    return t == ELM_TYPE_IQ4_NL || t == ELM_TYPE_MXFP4;
}

/* Where the 32-weight grid types IQ4_NL and MXFP4 keep their parts: each block of block_bytes
 * holds its scale, then at qs_at 16 bytes of 4-bit indices into grid (weight j < 16 the low
 * nibble of byte j, the others the high nibbles). */
typedef struct elm_grid32_layout {
    const int8_t *grid;
    int block_bytes, qs_at;
} elm_grid32_layout;

static inline elm_grid32_layout elm_grid32_layout_of(elm_type t) {
    return t == ELM_TYPE_MXFP4 ? (elm_grid32_layout){elm_mxfp4_grid, ELM_MXFP4_BLOCK_BYTES, 1}
                               : (elm_grid32_layout){elm_iq4nl_grid, 18, 2};
}

/* The scale of block b at src: IQ4_NL's f16 d, MXFP4's E8M0 byte halved (codecs/mxfp4.h). */
static inline float elm_grid32_scale(elm_type t, const uint8_t *src, int64_t b) {
    return t == ELM_TYPE_MXFP4 ? elm_e8m0_half(src[ELM_MXFP4_BLOCK_BYTES * b])
                               : elm_load_f16(src + 18 * b);
}

/* One unpacked super-block (see above); 32-byte aligned for the SIMD loads. */
typedef struct elm_kq_block {
    int8_t q[ELM_QK_K];
    int16_t sc[ELM_QK_K / 16];
    int16_t m[ELM_QK_K / 16];
    float d, dmin;
} __attribute__((aligned(32))) elm_kq_block;

/* A q8_K activation row of cols values (a multiple of 256): int8 qs[cols], float d[cols/256],
 * int16 bsum[cols/16]; rows are elm_q8k_row_bytes(cols) apart, a multiple of 64. */
typedef struct elm_q8k_row {
    const int8_t *qs;
    const float *d;
    const int16_t *bsum;
} elm_q8k_row;

static inline size_t elm_q8k_row_bytes(int64_t cols) {
    return ((size_t)cols + (size_t)cols / ELM_QK_K * 4 + (size_t)cols / 16 * 2 + 63) / 64 * 64;
}

static inline elm_q8k_row elm_q8k_at(const void *buf, int64_t cols, int64_t t) {
    const int8_t *base = (const int8_t *)buf + (size_t)t * elm_q8k_row_bytes(cols);
    const float *d = (const float *)(base + cols);
    return (elm_q8k_row){base, d, (const int16_t *)(d + cols / ELM_QK_K)};
}

/* Whether type t's super-blocks carry mins (m, dmin): Q2_K, Q4_K, Q5_K. */
static inline bool elm_kq_has_mins(elm_type t) {
    return t == ELM_TYPE_Q2_K || t == ELM_TYPE_Q4_K || t == ELM_TYPE_Q5_K;
}

/* The pieces an ISA supplies (NULL entries fall back to the scalar ones). */
typedef struct elm_kq_kernels {
    /* Unpacks n super-blocks of type t (not IQ4_NL) at src into out[n]. */
    void (*unpack)(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out);
    /* out[i] = Σ over n super-blocks of w · x[i] (the float result above) for i < nx <= 4
     * tokens (the weights are loaded once for all of them); mins: whether any m is non-zero. */
    void (*dot)(const elm_kq_block *w, const elm_q8k_row *x, int nx, int64_t n, bool mins,
                float *out);
    /* IQ4_NL or MXFP4 (t): n 32-weight blocks at src as q[32n] (grid values) and d[n] (the
     * blocks' scales, elm_grid32_scale). */
    void (*unpack_grid32)(elm_type t, const uint8_t *src, int64_t n, int8_t *q, float *d);
    /* Σ_b d[b]·(x.d[b]·Σ_i q[32b+i]·x.qs[32b+i]) over n blocks (of IQ4_NL or MXFP4). */
    float (*dot_iq4_nl)(const int8_t *q, const float *d, elm_q8_row x, int64_t n);
    /* The same straight from the file's blocks (18 bytes each), without unpacking: y[r] = row r
     * · x for r < n_rows rows of n blocks, row_bytes apart from src. Decode's product, where a
     * row meets fewer tokens than its unpacking costs. Optional. */
    void (*rows_iq4_nl)(const uint8_t *src, size_t row_bytes, int64_t n_rows, elm_q8_row x,
                        int64_t n, float *y);
    /* As rows_iq4_nl, for MXFP4's 17-byte blocks. Optional. */
    void (*rows_mxfp4)(const uint8_t *src, size_t row_bytes, int64_t n_rows, elm_q8_row x,
                       int64_t n, float *y);
    /* As dot, but straight from nr <= 2 rows (row_bytes apart) of n packed super-blocks of type
     * t at src (as stored in the file), decoded in registers: no unpacked copy, the same
     * integers; out[4·r + i] for row r, token i. Optional; serves the types whose bit (1ull << t)
     * is set in packed_types, the others go through unpack and dot. */
    void (*dot_packed)(elm_type t, const uint8_t *src, size_t row_bytes, int nr,
                       const elm_q8k_row *x, int nx, int64_t n, float *out);
    uint64_t packed_types; /* 64 bits: type ids go up to 39 */
    /* Decode, optional, for the packed_types: y[r] = row r · x for r < n_rows rows (row_bytes
     * apart) of n packed super-blocks at src, the float result above in any float order. */
    void (*decode_rows)(elm_type t, const uint8_t *src, size_t row_bytes, int64_t n_rows,
                        elm_q8k_row x, int64_t n, float *y);
    /* Prefill, optional, for every 256-weight type: y[t·ldy + r] = row r · token t for r <
     * n_rows <= 16 rows unpacked at blk (cols/256 blocks each, row after row) and t < nt q8_K
     * rows at xq; scratch: ELM_KQ_TILE_SB_BYTES per 256 columns, 64-byte aligned. */
    void (*gemm16)(elm_type t, const elm_kq_block *blk, int n_rows, int64_t cols, const void *xq,
                   int64_t nt, float *y, int64_t ldy, void *scratch);
    uint64_t gemm16_types; /* the types (bit 1ull << t) gemm16 serves */
    /* The micro-kernel of packed type t (packed.h's q4_kx16, q5_kx16, q6_kx16 and iq4_xsx16, for
     * the tables that pack them; NULL for a type the table does not pack), every token count:
     * gemm.h's elm_tile_q8_fn over one tile of nb super-blocks, with q8_K rows at xq
     * (elm_q8k_at(xq, 256·nb, t)), up to tile_kx16_tokens tokens a call; the float result above
     * per row. */
    elm_tile_q8_fn (*tile_kx16)(elm_type t);
    int tile_kx16_tokens;
    /* The packed types (bit 1ull << t) whose products of 4 tokens or more go through gemm16
     * instead, on rows read back from the tiles (elm_kx16_blocks): where the micro-kernel's
     * decoding of the codes on every pass over a tile costs more than gemm16's, once per chunk
     * of tokens. */
    uint64_t gemm16_packed_types;
} elm_kq_kernels;

/* Scratch bytes of gemm16's repacked tile per super-block of its 16 rows. */
#define ELM_KQ_TILE_SB_BYTES (64 * 64 + 16 * 64 + 8 * 64 + 2 * 64)

/* Quantizes cols floats (a multiple of 256) into a q8_K row at row (llama.cpp's
 * quantize_row_q8_K_ref, bit for bit). */
void elm_quantize_q8_k(const float *x, int64_t cols, void *row);

/* The same for one super-block of 256 floats at x, into its parts of a row: qs[256], d,
 * bsum[16]. */
void elm_quantize_q8_k_block(const float *x, int8_t *qs, float *d, int16_t *bsum);

/* Rows [r0, r1) of a->y for k-quant/i-quant weights and MXFP4 (kernels.h's matmul contract:
 * a->xq holds q8 rows for IQ4_NL and MXFP4; for the 256-weight types it is NULL or holds
 * a->n_tok q8_K rows of a->x, elm_quantize_q8_k's, which callers splitting one product across
 * threads quantize once for all). scratch: elm_matmul_scratch_bytes(cols). */
void elm_kquant_matmul(const elm_kq_kernels *k, const elm_matmul_args *a, int64_t r0, int64_t r1,
                       void *scratch);

/* The scalar pieces (the oracle). */
extern const elm_kq_kernels elm_kq_scalar;
void elm_kq_unpack_scalar(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out);

/* The SIMD pieces of each ISA (defined only where built). */
extern const elm_kq_kernels elm_kq_avx2, elm_kq_avx512, elm_kq_neon;

#endif
