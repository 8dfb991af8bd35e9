/* Activation ranges and their QDQ pairs (onnx_act.h). The scale and zero point follow ONNX
 * Runtime's quantization tool (and QNN's min/max encodings): the observed range [lo, hi] is
 * widened to hold 0, so that 0 (padding, masked values) is exact, then split into 2^bits - 1
 * steps. */
#include <math.h>
#include <stdlib.h>

#include "export/onnx_act.h"
#include "quant/capture.h"

enum { KEYS_PER_LAYER = 4 };

void ox_act_free(ox_act_quant *q) {
    free(q->keys);
    free(q->scale);
    free(q->zero_point);
    q->keys = NULL;
    q->scale = NULL;
    q->zero_point = NULL;
    q->n = 0;
}

elm_status ox_act_measure(const elm_model *m, const elm_calib_set *cs, int32_t n_threads, int bits,
                          ox_act_quant *out, elm_error *err) {
    const int32_t n = m->hp.n_layers * KEYS_PER_LAYER + 1;
    out->bits = bits;
    out->n = n;
    out->keys = calloc((size_t)n, sizeof *out->keys);
    out->scale = calloc((size_t)n, sizeof *out->scale);
    out->zero_point = calloc((size_t)n, sizeof *out->zero_point);
    elm_act_stats *s = calloc((size_t)n, sizeof *s);
    if (!out->keys || !out->scale || !out->zero_point || !s) {
        free(s);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory for activation ranges");
    }
    for (int32_t l = 0; l < m->hp.n_layers; l++) {
        const elm_layer *L = &m->layers[l];
        const elm_tensor *k[KEYS_PER_LAYER] = {L->wq, L->wo, L->w_gate, L->w_down};
        for (int i = 0; i < KEYS_PER_LAYER; i++) out->keys[l * KEYS_PER_LAYER + i] = k[i];
    }
    out->keys[n - 1] = m->output;
    elm_status st = ELM_OK;
    int32_t ready = 0;
    for (; ready < n && !st; ready++)
        st = elm_act_stats_init(&s[ready], out->keys[ready], -1, false, err);
    if (!st) st = elm_capture(m, 0, m->hp.n_layers, true, cs, n_threads, NULL, NULL, s, n, err);
    const double qmax = ldexp(1.0, bits) - 1;
    for (int32_t i = 0; i < n && !st; i++) {
        const double lo = fmin(s[i].lo, 0), hi = fmax(s[i].hi, 0);
        const double scale = hi > lo ? (hi - lo) / qmax : 1.0;
        out->scale[i] = (float)scale;
        out->zero_point[i] = (int32_t)fmin(fmax(nearbyint(-lo / (float)scale), 0), qmax);
    }
    for (int32_t i = 0; i < ready; i++) elm_act_stats_free(&s[i]);
    free(s);
    return st;
}

const char *ox_act_qdq(ox_graph *g, const ox_act_quant *q, const elm_tensor *key, const char *x) {
    for (int32_t i = 0; q && i < q->n; i++) {
        if (q->keys[i] != key) continue;
        const uint16_t z16 = (uint16_t)q->zero_point[i];
        const uint8_t z8 = (uint8_t)q->zero_point[i];
        const char *s = ox_init_raw(g, ox_name(g, "%s.input_scale", key->name), OX_FLOAT, NULL, 0,
                                    &q->scale[i], sizeof(float));
        const char *z = q->bits == 16
            ? ox_init_raw(g, ox_name(g, "%s.input_zero_point", key->name), OX_UINT16, NULL, 0, &z16, 2)
            : ox_init_raw(g, ox_name(g, "%s.input_zero_point", key->name), OX_UINT8, NULL, 0, &z8, 1);
        return ox_op(g, "", "DequantizeLinear", NULL, ox_op(g, "", "QuantizeLinear", NULL, x, s, z, NULL),
                     s, z, NULL);
    }
    return x;
}
