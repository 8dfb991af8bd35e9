/* The packed layouts of packed.h, in portable C: packing runs once per matrix at load. */
#include "kernels/packed.h"

#include <string.h>

bool elm_packs_q4_0x16(elm_type t, int64_t rows, int64_t cols) {
    return t == ELM_TYPE_Q4_0 && rows > 0 && rows % ELM_TILE_ROWS == 0 && cols > 0 &&
           cols % ELM_QK == 0;
}

void elm_pack_q4_0x16(const elm_weights *w, void *out) {
    enum { BLOCK = 18 };
    const int64_t nb = w->cols / ELM_QK;
    const size_t row_bytes = (size_t)nb * BLOCK;
    uint8_t *o = out;
    for (int64_t r0 = 0; r0 < w->rows; r0 += ELM_TILE_ROWS) {
        const uint8_t *src = (const uint8_t *)w->data + (size_t)r0 * row_bytes;
        for (int64_t b = 0; b < nb; b++, o += ELM_Q4_0X16_BYTES)
            for (int r = 0; r < ELM_TILE_ROWS; r++) {
                const uint8_t *blk = src + (size_t)r * row_bytes + (size_t)b * BLOCK;
                for (int j = 0; j < 4; j++) memcpy(o + (j * ELM_TILE_ROWS + r) * 4, blk + 2 + 4 * j, 4);
                memcpy(o + 4 * ELM_TILE_ROWS * 4 + 2 * r, blk, 2);
            }
    }
}
