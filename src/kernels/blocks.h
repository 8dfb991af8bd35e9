/* The ggml weight blocks (docs/formats.md, "ggml blocks") seen as signed 8-bit integers: every type
 * here decodes as value[j] = d·q[j] + m, with q in -128..127. The scalar oracle and the prefill
 * repacking use this one view, so a block layout is read in one place outside types.c. */
#ifndef EDGELM_KERNELS_BLOCKS_H
#define EDGELM_KERNELS_BLOCKS_H

#include <string.h>

#include "core/half.h"
#include "edgelm/types.h"
#include "kernels/kquant.h"

/* Whether every q of type t's blocks (below) is within ±15 (Q4_0, Q4_1, Q5_0; MXFP4's ±12). */
static inline bool elm_block_small_codes(elm_type t) {
    return t == ELM_TYPE_Q4_0 || t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_0 || t == ELM_TYPE_MXFP4;
}

/* 32 weights of one block of type t (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) at b: q[32],
 * scale d and offset m (0 for the symmetric and grid types, whose zero point is folded into q). */
static inline void elm_block_unpack(elm_type t, const uint8_t *b, int8_t q[ELM_QK], float *d,
                                    float *m) {
    *m = 0;
    if (elm_type_grid32(t)) {
        const elm_grid32_layout g = elm_grid32_layout_of(t);
        *d = elm_grid32_scale(t, b, 0);
        for (int j = 0; j < ELM_QK / 2; j++) {
            q[j] = g.grid[b[g.qs_at + j] & 0x0f];
            q[j + 16] = g.grid[b[g.qs_at + j] >> 4];
        }
        return;
    }
    *d = elm_load_f16(b);
    if (t == ELM_TYPE_Q8_0) {
        memcpy(q, b + 2, ELM_QK);
        return;
    }
    const bool asym = t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_1;
    const bool five = t == ELM_TYPE_Q5_0 || t == ELM_TYPE_Q5_1;
    if (asym) *m = elm_load_f16(b + 2);
    const uint8_t *p = b + (asym ? 4 : 2);
    uint32_t h = 0;
    if (five) {
        h = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
    }
    const int off = asym ? 0 : five ? 16 : 8;
    for (int j = 0; j < ELM_QK / 2; j++) {
        int lo = p[j] & 0x0f, hi = p[j] >> 4;
        if (five) {
            lo |= (int)((h >> j) & 1) << 4;
            hi |= (int)((h >> (j + 16)) & 1) << 4;
        }
        q[j] = (int8_t)(lo - off);
        q[j + 16] = (int8_t)(hi - off);
    }
}

#endif
