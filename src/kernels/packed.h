/* Weights laid out once, at load, the way a table's kernels read them (elm_weights.packed), so
 * that products of a few tokens (a batched decode step, a short prompt) get the tiles' layout
 * without repacking it on every call as elm_gemm does.
 *
 * Q4_0 by 16 rows ("q4_0x16", the x86 tables'): per tile of rows [16i, 16i + 16) and block b
 * (32 columns) of each, 288 bytes at (i·nb + b)·288, nb = cols / 32:
 *   uint8 qs[4][16][4]  qs[j][r][e] = byte 4j + e of row r's block: the low nibble is weight
 *                       4j + e, the high nibble weight 16 + 4j + e (the file's own 16 bytes,
 *                       unchanged, only interleaved by 32-bit words across the rows)
 *   f16   d[16]         row r's block scale, as in the file
 * A 512-bit vector of qs[j] holds one 32-bit word of every row (AVX2: two 256-bit halves of 8 rows):
 * masked it gives the unsigned codes of weights 4j..4j+3 of the 16 rows, shifted those of
 * 16+4j..16+4j+3, ready for vpdpbusd (or maddubs) against four broadcast activation bytes. The layout takes exactly the file's bytes (16 rows × 18 bytes
 * per block), so a matrix is packed in place. Only matrices of a multiple of 16 rows are packed. */
#ifndef EDGELM_KERNELS_PACKED_H
#define EDGELM_KERNELS_PACKED_H

#include "kernels/gemm.h"

#define ELM_Q4_0X16_BYTES (ELM_TILE_ROWS * 18)

/* How far ahead the x86 q4_0x16 micro-kernels prefetch from 2 tokens on: there they compute more
 * per byte than the hardware prefetcher alone keeps up with (a 4-token product took the time of
 * its loads plus its arithmetic); 4 KiB ahead, into the next tile at a tile's end, gave 15-30% at
 * 4 tokens out of cache on Zen 4. One token streams as fast without. */
#define ELM_Q4_0X16_PREFETCH 4096

/* Whether elm_pack_q4_0x16 lays out a rows × cols matrix of type t (Q4_0, rows a multiple of 16). */
bool elm_packs_q4_0x16(elm_type t, int64_t rows, int64_t cols);

/* Writes w (Q4_0, row-major, not packed) in the q4_0x16 layout to out (as many bytes as w's data,
 * not overlapping it). */
void elm_pack_q4_0x16(const elm_weights *w, void *out);

/* Rows [r0, r1) (r0 a multiple of 16) of a product with packed Q4_0 weights, any token count,
 * through a table's micro-kernel over one tile (the tile argument: a q4_0x16 tile instead of
 * gemm.h's; up to max_tokens tokens a call): for a panel of a few tiles, every chunk of tokens,
 * so that a chunk's activations are read from L1 by the panel's tiles and the tiles from L2 by
 * every chunk. */
void elm_packed_q4_0x16_matmul(elm_tile_q8_fn tile, int max_tokens, const elm_matmul_args *a,
                               int64_t r0, int64_t r1);

#endif
