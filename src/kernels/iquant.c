/* The sub-4-bit i-quants' unpacking into the canonical super-block (iquant.h). */
#include "kernels/iquant.h"

#include "codecs/iquant_codec.h"

void elm_iq_unpack_with(elm_iq_values_fn values, elm_type t, const uint8_t *src, int64_t n,
                        elm_kq_block *out) {
    const elm_iq_grids *G = elm_iq_grids_get();
    const size_t bytes = elm_type_get(t)->block_bytes;
    for (int64_t i = 0; i < n; i++, src += bytes, out++) {
        int8_t sc[16];
        elm_iquant_scales(t, src, &out->d, sc);
        out->dmin = 0;
        for (int g = 0; g < 16; g++) out->sc[g] = sc[g], out->m[g] = 0;
        values(t, G, src, out->q);
    }
}

void elm_iq_unpack(elm_type t, const uint8_t *src, int64_t n, elm_kq_block *out) {
    elm_iq_unpack_with(elm_iquant_values, t, src, n, out);
}
