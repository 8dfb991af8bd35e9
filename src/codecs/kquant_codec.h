/* ggml's super-block quantized types (k-quants Q2_K..Q6_K and the non-linear IQ4_NL, IQ4_XS):
 * the pieces of their layouts that kernels and encoders share (their traits-table codecs are in
 * codecs/codecs.h). Layouts: docs/kquants.md. */
#ifndef EDGELM_CODECS_KQUANT_CODEC_H
#define EDGELM_CODECS_KQUANT_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelm/types.h"

/* n weights x of one of the types above into dst, weighted by the per-weight importances qw[n]
 * (llama.cpp's quantize_q*_K / quantize_iq4_* with quant_weights; NULL: the reference encoder).
 * Other types: nothing written. */
void elm_kquant_encode(elm_type type, const float *x, void *dst, int64_t n, const float *qw);

/* The scales of one block of the types above as stored: the f16 super-block scale d and min
 * scale dmin (as floats; dmin 0 for the types without mins), and each sub-block's integer scale
 * (signed: Q3_K's and IQ4_XS's offset 32 removed, Q6_K's int8) and min. A weight of sub-block s
 * decodes to d·sc[s]·level(q) - dmin·mn[s] (docs/kquants.md); IQ4_NL has d only. */
typedef struct elm_kquant_scales {
    float d, dmin;
    int8_t sc[16];
    uint8_t mn[16];
} elm_kquant_scales;

/* Reads the scales of one block of `type` (Q2_K..Q6_K, IQ4_NL, IQ4_XS). */
void elm_kquant_get_scales(elm_type type, const void *block, elm_kquant_scales *s);

/* Writes one block of `type` from its scales (d and dmin f16-representable) and its weights'
 * codes L as stored: Q2_K 0..3, Q3_K 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63, IQ4_NL/IQ4_XS
 * grid indices 0..15 (ELM_QK_K codes, ELM_QK for IQ4_NL). */
void elm_kquant_put(elm_type type, const elm_kquant_scales *s, const uint8_t *L, void *block);

/* The 16 levels of IQ4_NL/IQ4_XS's non-linear 4-bit grid. */
extern const int8_t elm_iq4nl_grid[16];

/* Q4_K/Q5_K: the 6-bit scale and min of sub-block j < 8 from the 12 packed bytes s. */
void elm_kquant_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m);

/* Q3_K: the sixteen signed sub-block scales (6 bits, offset 32 removed) from the 12 bytes s. */
void elm_q3_k_scales(const uint8_t *s, int8_t out[16]);

#endif
