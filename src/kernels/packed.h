/* Weights laid out once, at load, the way a table's kernels read them (elm_weights.packed), so
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
 * Only matrices of a multiple of 16 rows are packed.
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
 * shifts and masks (docs/kquants.md has the 12-byte packing). */
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

/* How far ahead the x86 q*x16 micro-kernels prefetch (the AVX-512 ones from 2 tokens on): they
 * compute more per byte than the hardware prefetcher alone keeps up with (a 4-token product took
 * the time of its loads plus its arithmetic); 4 KiB ahead, into the next tile at a tile's end,
 * gave 15-30% at 4 tokens out of cache on Zen 4, and Q5_0/Q5_1's one-token AVX2 decode 13-20 tok/s
 * without, 26-31 with (one thread). One token of Q4_0 or Q4_1: on Zen 4 AVX2 decode measured
 * 10-25% slower with it, on Zen 5 (2026-12-02) faster (Q4_0 `-t 2`: 54-62 without, 70-71 with, 3
 * alternating runs), so the AVX2 kernel prefetches at every token count; the AVX-512 one measured
 * no difference at one token there (Q4_0 62-70 either way). */
#define ELM_QX16_PREFETCH 4096

/* How far ahead the packed Q4_K micro-kernels prefetch: 4 super-blocks (9 KiB), into the next
 * tile at a tile's end. Decode of an all-Q4_K TinyLlama on Zen 5 (2026-12-02, 3 alternating
 * runs) rose with it: AVX2 `-t 1` from 25-34 to 42-48 tok/s, AVX-512 `-t 1` from 37-41 to 52-56
 * and `-t 2` from 51-57 to 61-96; without it the memory idled while a block computed. */
#define ELM_Q4_KX16_PREFETCH (4 * ELM_Q4_KX16_BYTES)

/* Prefetches the cache lines of [p, p + bytes) into L1 (a hint: addresses past the end of a
 * buffer do not fault). */
static inline void elm_prefetch_span(const uint8_t *p, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
}

/* Whether elm_pack_q4q5x16 lays out a rows × cols matrix of type t (Q4_0, Q4_1, Q5_0 or Q5_1,
 * rows a multiple of 16). */
bool elm_packs_q4q5x16(elm_type t, int64_t rows, int64_t cols);

/* Writes w (one of those types, row-major, not packed) in its q*x16 layout to out (as many bytes
 * as w's data, not overlapping it). */
void elm_pack_q4q5x16(const elm_weights *w, void *out);

/* Whether elm_pack_q4_kx16 lays out a rows × cols matrix of type t (Q4_K, rows a multiple of 16). */
bool elm_packs_q4_kx16(elm_type t, int64_t rows, int64_t cols);

/* Writes w (Q4_K, row-major, not packed) in the q4_kx16 layout to out (as many bytes as w's data,
 * not overlapping it). */
void elm_pack_q4_kx16(const elm_weights *w, void *out);

/* The 32-weight types and Q4_K by 16 rows, the x86 tables' packs and pack (kernels.h). */
bool elm_packs_x16(elm_type t, int64_t rows, int64_t cols);
void elm_pack_x16(const elm_weights *w, void *out);

/* A product over packed tiles: rows [r0, r1) (r0 a multiple of 16) of y[n_tok][rows], the tile
 * of rows [16i, 16i + 16) at data + i·tile_bytes, nb column blocks in each, the activations of
 * token t x_row bytes apart from xq. A table's micro-kernel takes one tile and up to max_tokens
 * tokens a call (tile: gemm.h's signature over a packed tile's nb blocks); the loop runs, for a
 * panel of a few tiles, every chunk of tokens, so that a chunk's activations are read from L1 by
 * the panel's tiles and the tiles from L2 by every chunk. */
void elm_packed_matmul(elm_tile_q8_fn tile, int max_tokens, const void *data, int64_t rows,
                       int64_t nb, size_t tile_bytes, const void *xq, size_t x_row, int64_t n_tok,
                       float *y, int64_t r0, int64_t r1);

/* elm_packed_matmul for packed Q4_0, Q4_1, Q5_0 or Q5_1 weights (a->xq: q8 rows; the tile
 * argument a micro-kernel of a->w.type's q*x16 tiles). */
void elm_packed_q4q5x16_matmul(elm_tile_q8_fn tile, int max_tokens, const elm_matmul_args *a,
                               int64_t r0, int64_t r1);

#endif
