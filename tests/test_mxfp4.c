/* MXFP4 (codecs/mxfp4.h) against a decoder written here from the OCP microscaling spec (E2M1
 * codes: sign, 2 exponent bits, 1 mantissa bit; E8M0 scale 2^(e-127)), on the weights of the
 * stories260K fixture, as they are and scaled by 2^-20 and 2^20:
 * - each block's scale byte is floor(log2 amax) - 2 + 127 (0 for an all-zero block), computed
 *   here with frexp;
 * - to_float equals the spec's value of every code times the scale, bit for bit;
 * - every code is a nearest one: no other E2M1 value times the scale is strictly closer;
 * - the traits' bad_block finds no bad scale in the encoded weights, and finds the first block
 *   whose scale byte is set to 0xff (E8M0's NaN).
 * That the bytes are llama-quantize's own is checked by tests/cli_hybrid_llamacpp.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/model.h"
#include "edgelm/types.h"

/* The spec's E2M1 value of code c. */
static double e2m1(int c) {
    const int e = (c >> 1) & 3, m = c & 1;
    const double v = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, e - 1);
    return c & 8 ? -v : v;
}

static int nib(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

/* Checks n weights x encoded as blocks q; returns the number of wrong blocks. */
static int check_blocks(const float *x, const uint8_t *q, const float *y, int64_t n) {
    int bad = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b;
        const uint8_t *qb = q + 17 * b;
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j]));
        int k = 0;
        frexpf(amax, &k); /* amax = m·2^k, m in [0.5, 1): floor(log2 amax) = k - 1 */
        const int e = amax > 0 ? k - 1 - 2 + 127 : 0;
        const double scale = ldexp(1.0, e - 127);
        bool ok = qb[0] == e;
        for (int j = 0; j < 32 && ok; j++) {
            const int c = nib(qb + 1, j);
            ok &= y[32 * b + j] == (float)(e2m1(c) * scale);
            const double err = fabs(e2m1(c) * scale - xb[j]);
            for (int o = 0; o < 16; o++) ok &= !(fabs(e2m1(o) * scale - xb[j]) < err * (1 - 1e-6));
        }
        bad += !ok;
    }
    return bad;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) == ELM_OK,
          "load: %s", err.msg);
    if (!m) return check_done();
    const elm_type_traits *tt = elm_type_get(ELM_TYPE_MXFP4);
    CHECK(tt && tt->block_size == 32 && tt->block_bytes == 17 && tt->bad_block, "mxfp4 traits");
    if (!tt) return check_done();
    int64_t n_weights = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        if (t->type != ELM_TYPE_F32 || t->n_dims < 2 || t->ne[0] % 32) continue;
        const int64_t n = (int64_t)(t->nbytes / 4);
        float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
        uint8_t *q = malloc((size_t)n / 32 * 17);
        for (int s = -1; s <= 1; s++) {
            for (int64_t j = 0; j < n; j++) x[j] = ldexpf(((const float *)t->data)[j], 20 * s);
            tt->from_float(x, q, n);
            tt->to_float(q, y, n);
            const int bad = check_blocks(x, q, y, n);
            CHECK(bad == 0, "%s ×2^%d: %d of %lld blocks wrong", t->name, 20 * s, bad,
                  (long long)(n / 32));
            CHECK(tt->bad_block(q, n / 32) == -1, "%s: a bad scale found in good blocks", t->name);
        }
        const int64_t at = n / 32 / 2;
        q[17 * at] = 0xff;
        q[17 * (n / 32 - 1)] = 0xff;
        CHECK(tt->bad_block(q, n / 32) == at, "%s: block %lld's bad scale not found", t->name,
              (long long)at);
        n_weights += n;
        free(x), free(y), free(q);
    }
    CHECK(n_weights > 100000, "only %lld weights checked", (long long)n_weights);
    elm_model_free(m);
    return check_done();
}
