/* Weights laid out once, at load, the way a table's kernels read them (elm_weights.packed_by), so
 * that products of a few tokens (a batched decode step, a short prompt) get the tiles' layout
 * without repacking it on every call as elm_gemm does.
 *
 * The 32-weight types Q4_0, Q4_1, Q5_0, Q5_1 by 16 rows ("q4_0x16" ... "q5_1x16", the x86
 * tables'): per tile of rows [16i, 16i + 16) and block b (32 columns) of each, 16 times the
 * type's block bytes B (288, 320, 352, 384) at (i·nb + b)·16·B, nb = cols / 32:
 *   uint8 qs[4][16][4]  qs[j][r][e] = byte 4j + e of row r's block: the low nibble is weight
 *                       4j + e, the high nibble weight 16 + 4j + e (the file's own 16 bytes,
 *                       unchanged, only interleaved by 32-bit words across the rows)
 *   uint8 qh[16][4]     Q5_0, Q5_1: bit v of qh[r][e] = the fifth bit of row r's weight 4v + e
 *                       (the file's 32 bits of qh, transposed so that vector v of codes takes
 *                       its fifth bits from one shift of qh and a mask)
 *   f16   d[16]         row r's block scale, as in the file
 *   f16   m[16]         Q4_1, Q5_1: row r's block offset
 * A 512-bit vector of qs[j] holds one 32-bit word of every row (AVX2: two 256-bit halves of 8 rows):
 * masked it gives the unsigned low nibbles of weights 4j..4j+3 of the 16 rows, shifted those of
 * 16+4j..16+4j+3, ready for vpdpbusd (or maddubs) against four broadcast activation bytes. The
 * layout takes exactly the file's bytes (16 rows × B per block), so a matrix is packed in place.
 * Only matrices of a multiple of 16 rows are packed. IQ4_NL's blocks are Q4_0's bytes (a scale
 * and 16 bytes of nibbles), so "iq4_nlx16" is q4_0x16's layout, its nibbles indices into the grid
 * (the tiles look them up with vpshufb).
 *
 * Q8_0 by 16 rows ("q8_0x16"): per tile and block, 544 bytes (16 × 34) at (i·nb + b)·544:
 *   int8 qs[8][16][4]   qs[j][r][e] = row r's weight 4j + e (the file's signed quants)
 *   f16  d[16]          row r's block scale
 * The codes lie as in the tiles a prefill repacks (gemm.h's ELM_TILE_Q8_BYTES, whose scales are
 * floats), so one micro-kernel serves both.
 *
 * MXFP4 by 16 rows ("mxfp4x16"): per tile and block, 272 bytes (16 × 17): q4_0x16's qs[4][16][4]
 * of the block's 16 bytes of nibbles (indices into elm_mxfp4_grid), then uint8 e[16], row r's
 * E8M0 scale byte (the weight is grid value · 2^(e - 128), elm_e8m0_half).
 *
 * Q4_K by 16 rows ("q4_kx16", the AVX-512 table's): per tile of rows [16i, 16i + 16) and
 * super-block s (256 columns) of each, 2304 bytes at (i·nsb + s)·2304, nsb = cols / 256:
 *   uint8 qs[32][16][4]  qs[8p + e][r][k] = byte 32p + 4e + k of row r's 128 code bytes: the low
 *                        nibble is weight 64p + 4e + k (sub-block 2p), the high nibble weight
 *                        64p + 32 + 4e + k (sub-block 2p + 1)
 *   uint8 sm[3][16][4]   sm[w][r][k] = byte 4w + k of row r's 12 bytes of 6-bit scales and mins
 *   f16   d[16], dmin[16]
 * Again the file's bytes, interleaved by 32-bit words: vector 8p + e, masked and shifted, holds
 * four codes of sub-blocks 2p and 2p + 1 of the 16 rows, for vpdpbusd against four broadcast
 * activation bytes; the three vectors of sm decode into every row's scales and mins with a few
 * shifts and masks (docs/kquants.md has the 12-byte packing).
 *
 * Q5_K by 16 rows ("q5_kx16"): 2816 bytes per tile and super-block, q4_kx16's fields with the
 * fifth bits between the codes and the scales:
 *   uint8 qs[32][16][4]  as Q4_K's
 *   uint8 qh[8][16][4]   qh[e][r][k] = byte 4e + k of row r's 32 bytes of fifth bits: bit 2p of
 *                        weight 64p + 4e + k's, bit 2p + 1 of weight 64p + 32 + 4e + k's
 *   uint8 sm[3][16][4]   at 2560, as Q4_K's
 *   f16   d[16], dmin[16]  at 2752, 2784
 *
 * IQ4_XS by 16 rows ("iq4_xsx16"): per tile and super-block, 2176 bytes at (i·nsb + s)·2176:
 *   uint8  qs[32][16][4]  qs[4j + e][r][k] = byte 16j + 4e + k of row r's 128 code bytes: the low
 *                         nibble indexes weight 32j + 4e + k, the high nibble weight
 *                         32j + 16 + 4e + k (both of sub-block j), into IQ4_NL's grid
 *   uint8  sl[16][4]      row r's scales_l: the low 4 bits of sub-block j's scale at bit 4j
 *   uint16 sh[16]         row r's scales_h: the high 2 bits of sub-block j's at bit 2j
 *   f16    d[16]
 * Sub-block j's scale is (those 6 bits) - 32; again the file's bytes, interleaved by rows.
 *
 * Q6_K by 16 rows ("q6_kx16"): per tile and super-block, 3360 bytes at (i·nsb + s)·3360:
 *   uint8 ql[32][16][4]  ql[v][r][k] = byte 4v + k of row r's 128 bytes of low 4 bits
 *   uint8 qh[16][16][4]  qh[u][r][k] = byte 4u + k of row r's 64 bytes of high 2 bits
 *   int8  sc[4][16][4]   sc[w][r][k] = row r's scale of 16-weight group 4w + k
 *   f16   d[16]
 * The file's bit places are kept: for h < 2, m < 8 and k < 4, the codes u = q + 32 of weights
 * 128h + 32·c + 4m + k (c < 4) are the low (c = 0, 1) or high (c = 2, 3) nibbles of ql vector
 * 16h + 8·(c % 2) + m with bits 2c, 2c + 1 of qh vector 8h + m above them. */
#ifndef EDGELM_KERNELS_PACKED_H
#define EDGELM_KERNELS_PACKED_H

#include "kernels/gemm.h"

/* A q*x16 block's bytes (16 rows of the type's blocks: 288, 320, 352, 384) and where its fifth
 * bits and scales lie: one place for the packing and the kernels of every table. */
static inline size_t elm_qx16_bytes(bool asym, bool five) {
    return (size_t)ELM_TILE_ROWS * (size_t)(18 + (asym ? 2 : 0) + (five ? 4 : 0));
}
#define ELM_QX16_QH 256
static inline size_t elm_qx16_d_at(bool five) { return ELM_QX16_QH + (five ? 64 : 0); }
#define ELM_Q4_KX16_BYTES (ELM_TILE_ROWS * 144)
#define ELM_Q5_KX16_BYTES (ELM_TILE_ROWS * 176)
/* q4_kx16's and q5_kx16's fields: Q5_K's fifth bits after the codes, then the 6-bit scales and
 * mins, d and dmin */
#define ELM_Q5_KX16_QH 2048
static inline size_t elm_kx16_sm_at(bool five) { return five ? 2560 : 2048; }
#define ELM_Q8_0X16_BYTES (ELM_TILE_ROWS * 34)
#define ELM_Q8_0X16_D (ELM_TILE_ROWS * ELM_QK)
#define ELM_MXFP4X16_BYTES (ELM_TILE_ROWS * 17)
#define ELM_MXFP4X16_E ELM_QX16_QH
#define ELM_IQ4_XSX16_BYTES (ELM_TILE_ROWS * 136)
#define ELM_IQ4_XSX16_SL 2048
#define ELM_IQ4_XSX16_SH 2112
#define ELM_IQ4_XSX16_D 2144
#define ELM_Q6_KX16_BYTES (ELM_TILE_ROWS * 210)
#define ELM_Q6_KX16_QH 2048
#define ELM_Q6_KX16_SC 3072
#define ELM_Q6_KX16_D 3328

/* How far ahead the x86 decode and tile loops prefetch the weights they stream: 2 KiB, into the
 * next row or tile at a row's (tile's) end. Rows dotted from the file's layout (Q8_0, F16, BF16,
 * Q5_K, Q6_K, IQ4_XS; the AVX-512 4/5-bit rows of a mapped file), the q*x16 tiles at every token
 * count and the Q4_K and IQ4_XS tiles (four 2.3 or 2.1 KiB super-blocks ahead) all do. On a 2-core
 * Intel Xeon with AVX-512 and AMX (2026-12-02, TinyLlama-shaped files, tg32 `-t 1,2`, two
 * alternating rounds of each) the hardware prefetcher alone left the memory idle: Q8_0 13.2 → 24.2
 * tok/s at `-t 2`, IQ4_XS 13.1 → 34.1, Q5_K_M 14.8 → 30.8, F16 11.8 → 13.3, BF16 11.0 → 13.1,
 * AVX-512 Q4_0 31-34 → 42-45 and Q5_1 27 → 33 (AVX2 Q5_1 23 → 31), all-Q4_K 35-37 → 39-40; 1 KiB
 * and 4 KiB ahead were slower than 2 KiB for each kind. Earlier, on AMD: the q*x16 kernels at 4
 * KiB had gained 15-30% at 4 tokens (Zen 4) and Q4_0's one-token AVX2 decode 54-62 → 70-71 tok/s
 * (Zen 5), where Zen 4 had measured it 10-25% slower; the Q4_K tiles at 9 KiB gained 20-60% on Zen
 * 5. */
#define ELM_PREFETCH_AHEAD 2048
#define ELM_Q4_KX16_PREFETCH (4 * ELM_Q4_KX16_BYTES)
#define ELM_Q5_KX16_PREFETCH (4 * ELM_Q5_KX16_BYTES)
#define ELM_IQ4_XSX16_PREFETCH (4 * ELM_IQ4_XSX16_BYTES)
#define ELM_Q6_KX16_PREFETCH (4 * ELM_Q6_KX16_BYTES)

/* Prefetches the cache line of p into L1 (a hint, as elm_prefetch_span). */
static inline void elm_prefetch_line(const uint8_t *p) {
    __builtin_prefetch(p, 0, 3);
}

/* Prefetches the cache lines of [p, p + bytes) into L1 (a hint: addresses past the end of a
 * buffer do not fault). */
static inline void elm_prefetch_span(const uint8_t *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
}

/* Whether elm_pack_qx16 lays out a rows × cols matrix of type t (Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0,
 * rows a multiple of 16). */
bool elm_packs_qx16(elm_type t, int64_t rows, int64_t cols);

/* Writes w (one of those types, row-major, not packed) in its q*x16 layout to out (as many bytes
 * as w's data, not overlapping it). */
void elm_pack_qx16(const elm_weights *w, void *out);

/* Whether elm_pack_kx16 lays out a rows × cols matrix of type t (Q4_K, Q5_K, Q6_K or IQ4_XS,
 * rows a multiple of 16). */
bool elm_packs_kx16(elm_type t, int64_t rows, int64_t cols);

/* Writes w (Q4_K, Q5_K, Q6_K or IQ4_XS, row-major, not packed) in the q4_kx16, q5_kx16, q6_kx16
 * or iq4_xsx16 layout to out (as many bytes as w's data, not overlapping it). */
void elm_pack_kx16(const elm_weights *w, void *out);

/* The file's bytes of super-blocks [s0, s0 + n) of row r of w (packed by elm_pack_kx16) into
 * blocks, one after another (144 bytes each for Q4_K, 176 for Q5_K, 210 for Q6_K, 136 for
 * IQ4_XS): the layout read back. */
void elm_kx16_blocks(const elm_weights *w, int64_t r, int64_t s0, int n, uint8_t *blocks);

/* The 32-weight types (the grid types IQ4_NL and MXFP4 among them), Q4_K, Q5_K, Q6_K and IQ4_XS
 * by 16 rows, the x86 tables' packs and pack (kernels.h). */
bool elm_packs_x16(elm_type t, int64_t rows, int64_t cols);
void elm_pack_x16(const elm_weights *w, void *out);

/* Whether w lies in a q*x16 layout: packed, and of a 32-weight type (the 256-weight types have
 * their own). The x86 tables send such products to elm_packed_qx16_matmul. */
static inline bool elm_packed_as_qx16(const elm_weights *w) {
    return w->packed_by && elm_type_get(w->type)->block_size == ELM_QK;
}

/* A product over packed tiles: rows [r0, r1) (r0 a multiple of 16) of y[n_tok][rows], the tile
 * of rows [16i, 16i + 16) at data + i·tile_bytes, nb column blocks in each, the activations of
 * token t x_row bytes apart from xq. A table's micro-kernel takes one tile and up to max_tokens
 * tokens a call (tile: gemm.h's signature over a packed tile's nb blocks); the loop runs, for a
 * panel of a few tiles, every chunk of tokens, so that a chunk's activations are read from L1 by
 * the panel's tiles and the tiles from L2 by every chunk. */
void elm_packed_matmul(elm_tile_q8_fn tile, int max_tokens, const void *data, int64_t rows,
                       int64_t nb, size_t tile_bytes, const void *xq, size_t x_row, int64_t n_tok,
                       float *y, int64_t r0, int64_t r1);

/* elm_packed_matmul for packed Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 or Q8_0 weights (a->xq: q8
 * rows; the tile argument a micro-kernel of a->w.type's q*x16 tiles). */
void elm_packed_qx16_matmul(elm_tile_q8_fn tile, int max_tokens, const elm_matmul_args *a,
                               int64_t r0, int64_t r1);

#endif
