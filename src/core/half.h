/* f16 fields of ggml blocks, read and written as 2 little-endian bytes: block sizes (18, 20, 22
 * bytes, ...) leave them unaligned, so they go through memcpy, never a uint16_t pointer. */
#ifndef EDGELM_CORE_HALF_H
#define EDGELM_CORE_HALF_H

#include <stdint.h>
#include <string.h>

#include "edgelm/types.h"

/* The f16 at p, as float. */
static inline float elm_load_f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return elm_f16_to_f32(h);
}

/* Stores f at p as f16 (round to nearest even). */
static inline void elm_store_f16(uint8_t *p, float f) {
    const uint16_t h = elm_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* f rounded to the nearest f16 value: a scale as it will be stored. */
static inline float elm_round_f16(float f) { return elm_f16_to_f32(elm_f32_to_f16(f)); }

#endif
