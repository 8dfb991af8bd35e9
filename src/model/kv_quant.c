/* KV cache element codecs (see kv_quant.h). Written for any even block length rather than
 * reusing the 32-element codecs of the types table, because a head of 8 dimensions needs blocks of
 * 8; tests check that 32-element blocks give the table's bytes. */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "model/kv_quant.h"

int32_t elm_kv_block(elm_type t, int32_t head_dim) {
    if (t == ELM_TYPE_F32 || t == ELM_TYPE_F16) return 1;
    if (t != ELM_TYPE_Q8_0 && t != ELM_TYPE_Q4_0) return 0;
    if (head_dim <= 0) return 0;
    if (head_dim % ELM_QK == 0) return ELM_QK;
    if (ELM_QK % head_dim == 0 && (t == ELM_TYPE_Q8_0 || head_dim % 2 == 0)) return head_dim;
    return 0;
}

size_t elm_kv_bytes(elm_type t, int32_t block, int64_t n) {
    switch (t) {
    case ELM_TYPE_F32: return (size_t)n * 4;
    case ELM_TYPE_F16: return (size_t)n * 2;
    case ELM_TYPE_Q8_0: return (size_t)(n / block) * (2 + (size_t)block);
    case ELM_TYPE_Q4_0: return (size_t)(n / block) * (2 + (size_t)block / 2);
    default: return 0;
    }
}

static void q8_encode(int32_t B, const float *x, uint8_t *b) {
    float amax = 0;
    for (int32_t j = 0; j < B; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    elm_store_f16(b, d);
    for (int32_t j = 0; j < B; j++) {
        const float v = roundf(x[j] * id); /* NaN/inf input pinned, not overflowed */
        b[2 + j] = (uint8_t)(int8_t)(v >= 127 ? 127 : v <= -127 ? -127 : v == v ? v : 0);
    }
}

static void q4_encode(int32_t B, const float *x, uint8_t *b) {
    float amax = 0, max = 0;
    for (int32_t j = 0; j < B; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = max / -8.0f, id = d != 0 ? 1.0f / d : 0.0f;
    elm_store_f16(b, d);
    uint8_t *qs = b + 2;
    for (int32_t j = 0; j < B / 2; j++) {
        int q[2];
        for (int h = 0; h < 2; h++) {
            const float v = x[j + h * B / 2] * id + 8.5f;
            q[h] = !(v > 0) ? 0 : v >= 15.0f ? 15 : (int)v;
        }
        qs[j] = (uint8_t)(q[0] | q[1] << 4);
    }
}

void elm_kv_encode(elm_type t, int32_t B, const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    switch (t) {
    case ELM_TYPE_F32: memcpy(dst, x, (size_t)n * sizeof(float)); break;
    case ELM_TYPE_F16:
        for (int64_t i = 0; i < n; i++) elm_store_f16(b + 2 * i, x[i]);
        break;
    case ELM_TYPE_Q8_0:
        for (int64_t i = 0; i < n; i += B, b += 2 + B) q8_encode(B, x + i, b);
        break;
    case ELM_TYPE_Q4_0:
        for (int64_t i = 0; i < n; i += B, b += 2 + B / 2) q4_encode(B, x + i, b);
        break;
    default: break;
    }
}

void elm_kv_decode(elm_type t, int32_t B, const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    switch (t) {
    case ELM_TYPE_F32: memcpy(y, src, (size_t)n * sizeof(float)); break;
    case ELM_TYPE_F16:
        for (int64_t i = 0; i < n; i++) y[i] = elm_load_f16(b + 2 * i);
        break;
    case ELM_TYPE_Q8_0:
        for (int64_t i = 0; i < n; i += B, b += 2 + B) {
            const float d = elm_load_f16(b);
            for (int32_t j = 0; j < B; j++) y[i + j] = d * (float)(int8_t)b[2 + j];
        }
        break;
    case ELM_TYPE_Q4_0:
        for (int64_t i = 0; i < n; i += B, b += 2 + B / 2) {
            const float d = elm_load_f16(b);
            for (int32_t j = 0; j < B / 2; j++) {
                y[i + j] = d * (float)((b[2 + j] & 0x0f) - 8);
                y[i + j + B / 2] = d * (float)((b[2 + j] >> 4) - 8);
            }
        }
        break;
    default: break;
    }
}
