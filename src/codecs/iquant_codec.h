/* ggml's sub-4-bit super-block types: the lattice-codebook i-quants IQ1_S, IQ1_M, IQ2_XXS,
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (Kawrakow's i-quants in llama.cpp) and the ternary TQ1_0, TQ2_0
 * (for BitNet b1.58 models, Ma et al. 2024). edgelm reads and runs them, and writes them: the
 * IQ2 and IQ3 types (iquant_encode_grid.c), IQ1_S, IQ1_M (iquant_encode_iq1.c), TQ1_0 and TQ2_0
 * (ternary_encode.c). Layouts and codebooks:
 * docs/kquants.md, "Sub-4-bit i-quants". */
#ifndef EDGELM_CODECS_IQUANT_CODEC_H
#define EDGELM_CODECS_IQUANT_CODEC_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelm/types.h"

/* Whether t is one of the nine types above. */
static inline bool elm_type_iquant(elm_type t) {
    return t == ELM_TYPE_IQ2_XXS || t == ELM_TYPE_IQ2_XS || t == ELM_TYPE_IQ2_S ||
           t == ELM_TYPE_IQ3_XXS || t == ELM_TYPE_IQ3_S || t == ELM_TYPE_IQ1_S ||
           t == ELM_TYPE_IQ1_M || t == ELM_TYPE_TQ1_0 || t == ELM_TYPE_TQ2_0;
}

/* The grid points as stored (iquant_grids.c, written by scripts/iquant_grids.py): one 16-bit code
 * per point of per-coordinate level indices, coordinate c in bits [b·c, b·c + b) (b = 2 for the
 * 8-coordinate IQ2 and IQ1 grids, 3 for the 4-coordinate IQ3 grids). */
extern const uint16_t elm_iq2xxs_codes[256], elm_iq2xs_codes[512], elm_iq2s_codes[1024];
extern const uint16_t elm_iq3xxs_codes[256], elm_iq3s_codes[512], elm_iq1s_codes[2048];

/* The codebooks expanded to one byte per coordinate: the IQ2 grids' magnitudes (8, 25 or 43),
 * the IQ3 grids' magnitudes (IQ3_XXS 4..52 step 8 and 62; IQ3_S the odd 1..15), IQ1's signed
 * -1, 0, +1; and ksigns, the 7-bit sign codes completed to 8 sign bits of even parity. Also
 * the stored codes of IQ2_XS, IQ3_XXS and IQ3_S split into their low and high bytes (*_lo,
 * *_hi), tables for byte lookups by index (vpermi2b), which kernels expand to levels. */
typedef struct elm_iq_grids {
    uint8_t iq2xxs[256][8], iq2xs[512][8], iq2s[1024][8];
    uint8_t iq3xxs[256][4], iq3s[512][4];
    int8_t iq1s[2048][8];
    uint8_t ksigns[128];
    uint8_t iq2xs_lo[512], iq2xs_hi[512], iq3xxs_lo[256], iq3xxs_hi[256];
    uint8_t iq3s_lo[512], iq3s_hi[512];
} elm_iq_grids;

/* The expanded codebooks, built at the first call (thread-safe); never NULL. */
const elm_iq_grids *elm_iq_grids_get(void);

/* One block of type t (elm_type_iquant) in integers: weight j = (d·sc[j/16])·q[j] in float, the
 * products rounded in that order, which gives ggml's dequantize_row_* bits. d is the f16 scale
 * times the type's fixed factor (1/8 for IQ2 and IQ1, 1/4 for IQ3_XXS, 1 for IQ3_S and TQ);
 * sc the odd sub-block scale (1 for TQ); q the signed grid value (IQ1: 8·g ± 1, its ±1/8 shift
 * folded in; TQ: the trit or 2-bit code minus 1). |q| <= 62, 1 <= sc <= 31. */
void elm_iquant_ints(elm_type t, const uint8_t *block, float *d, int8_t sc[16], int8_t q[256]);

/* elm_iquant_ints in two parts: the scales d and sc, and the grid values q from the codebooks G
 * (elm_iq_grids_get()), the scalar oracle of the SIMD unpacking (kernels/iquant.h). */
void elm_iquant_scales(elm_type t, const uint8_t *block, float *d, int8_t sc[16]);
void elm_iquant_values(elm_type t, const elm_iq_grids *G, const uint8_t *block, int8_t q[256]);

/* Encodes n weights x (a multiple of 256) of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS or IQ3_S into dst
 * as llama-quantize does (ggml's quantize_iq2_xxs .. quantize_iq3_s), with the per-weight
 * importances qw[n] (llama.cpp's quant_weights), or without them (qw NULL: IQ2_S, IQ3_XXS and
 * IQ3_S only; llama.cpp has no IQ2_XXS or IQ2_XS encoder without). Returns false, writing
 * nothing, for another type or a NULL qw that the type needs. */
bool elm_iquant_grid_encode(elm_type type, const float *x, void *dst, int64_t n, const float *qw);

/* The pieces of elm_iquant_grid_encode that GPTQ (quant/grid.h) drives one group at a time, for
 * IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S:
 * - elm_iquant_group: the weights whose codes are chosen together, 8 (a sign group: the types
 *   storing 7 sign bits of even parity, and IQ2_S's 8-weight points; IQ1_S's and IQ1_M's points)
 *   or 4 (IQ3_S's points); 0 for another type.
 * - elm_iquant_nearest: the signed grid values q[group] (elm_iquant_ints' q) for the weights x
 *   at the fixed step (d·sc of their sub-block): signs split off as the encoder does (with
 *   parity, the weight of least w·x² takes the wrong sign), then of every grid point the one of
 *   least Σ w·(step·|q| - |x|)² over each point's coordinates (w NULL: 1).
 * - elm_iquant_put: one block from d and sc[16] as elm_iquant_scales reads them (d an f16 value
 *   times the type's factor, sc odd, 1..31, equal within a sub-block) and q[256] as
 *   elm_iquant_nearest gives them; false (nothing written) for q off the codebook or another
 *   type. It decodes to (d·sc[j/16])·q[j]. */
int elm_iquant_group(elm_type type);
void elm_iquant_nearest(elm_type type, const float *x, const float *w, float step, int8_t *q);
bool elm_iquant_put(elm_type type, float d, const int8_t sc[16], const int8_t q[256], void *dst);

/* The IQ1 counterparts (iquant_encode_iq1.c): elm_iq1_nearest gives the values q[8] = 8·t ± 1
 * (elm_iquant_ints' q) of the grid point t and shift of least Σ w·(x - step·q)² (w NULL: 1),
 * the shift fixed to `shift` (+1 or -1: IQ1_S's one per 32 weights) or either (0: IQ1_M's per 8);
 * elm_iq1_put packs an IQ1_S or IQ1_M block from d and sc[16] as elm_iquant_scales reads them and
 * such q[256] (false, the block unusable, for q off the grid, or IQ1_S shifts that differ within
 * 32 weights). */
void elm_iq1_nearest(const float *x, const float *w, float step, int shift, int8_t q[8]);
bool elm_iq1_put(elm_type type, float d, const int8_t sc[16], const int8_t q[256], void *dst);

/* One TQ1_0 or TQ2_0 block from its scale d (f16-representable) and the 256 weights' trits
 * t + 1 in {0, 1, 2}, as llama.cpp lays them out: it decodes to d·t. */
void elm_tq_put(elm_type type, float d, const uint8_t t[256], void *dst);

/* n weights x (a multiple of 256) as IQ1_S or IQ1_M blocks into dst, weighted by the per-weight
 * importances qw[n] as llama.cpp's quantize_iq1_s and quantize_iq1_m do (bit-exact). qw NULL:
 * IQ1_M weighs each weight by x², as llama.cpp does for a tensor without importance; IQ1_S, which
 * llama.cpp never encodes without (its trait has no from_float), writes nothing. */
void elm_iq1_s_encode(const float *x, void *dst, int64_t n, const float *qw);
void elm_iq1_m_encode(const float *x, void *dst, int64_t n, const float *qw);

#endif
