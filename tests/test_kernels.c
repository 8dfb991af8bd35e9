/* Every kernel table agrees with the scalar oracle: matmul for every weight type on odd shapes
 * (rows not a multiple of anything, one and many tokens), dot, RMSNorm, softmax and SwiGLU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/kernels.h"

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void compare_tables(const elm_kernels *k, const elm_kernels *ref) {
    const elm_type types[] = {ELM_TYPE_F32, ELM_TYPE_F16, ELM_TYPE_BF16, ELM_TYPE_Q8_0,
                              ELM_TYPE_Q4_0, ELM_TYPE_Q4_1, ELM_TYPE_Q5_0, ELM_TYPE_Q5_1};
    const int64_t cols = 96, rows = 37, n_tok = 5;
    unsigned seed = 7;
    float *wf = malloc(sizeof(float) * cols * rows), *x = malloc(sizeof(float) * cols * n_tok);
    float *y1 = malloc(sizeof(float) * rows * n_tok), *y2 = malloc(sizeof(float) * rows * n_tok);
    float scratch[96];
    for (int64_t i = 0; i < cols * rows; i++) wf[i] = frand(&seed);
    for (int64_t i = 0; i < cols * n_tok; i++) x[i] = frand(&seed);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const elm_type_traits *tt = elm_type_get(types[ti]);
        size_t nbytes = elm_row_bytes(types[ti], cols) * rows;
        void *data = malloc(nbytes);
        tt->from_float(wf, data, cols * rows);
        elm_tensor w = {.type = types[ti], .n_dims = 2, .ne = {cols, rows, 1, 1}, .data = data, .nbytes = nbytes};
        for (int64_t nt = 1; nt <= n_tok; nt += n_tok - 1) {
            ref->matmul_rows(&w, x, nt, y1, 0, rows, scratch);
            k->matmul_rows(&w, x, nt, y2, 3, rows, scratch); /* a row range not starting at 0 */
            k->matmul_rows(&w, x, nt, y2, 0, 3, scratch);
            float maxdiff = 0;
            for (int64_t i = 0; i < rows * nt; i++) maxdiff = fmaxf(maxdiff, fabsf(y1[i] - y2[i]));
            CHECK(maxdiff < 1e-4f, "%s %s matmul n_tok %lld differs by %g", k->isa, tt->name,
                  (long long)nt, maxdiff);
        }
        free(data);
    }
    for (int64_t n = 1; n < 70; n += 7)
        CHECK(fabsf(k->dot_f32(wf, x, n) - ref->dot_f32(wf, x, n)) < 1e-4f, "%s dot n %lld", k->isa, (long long)n);
    float a[33], b[33];
    memcpy(a, x, sizeof a);
    memcpy(b, x, sizeof b);
    k->softmax(a, 33);
    ref->softmax(b, 33);
    float sum = 0;
    for (int i = 0; i < 33; i++) sum += a[i];
    CHECK(fabsf(sum - 1) < 1e-5f && fabsf(a[5] - b[5]) < 1e-6f, "%s softmax", k->isa);
    k->rmsnorm(a, x, wf, 33, 1e-5f);
    ref->rmsnorm(b, x, wf, 33, 1e-5f);
    CHECK(fabsf(a[7] - b[7]) < 1e-5f, "%s rmsnorm", k->isa);
    free(wf), free(x), free(y1), free(y2);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const elm_kernels *ref = elm_kernels_scalar();
    /* the oracle itself against a plain loop */
    float a[] = {1, 2, 3}, b[] = {4, 5, 6};
    CHECK(ref->dot_f32(a, b, 3) == 32.0f, "scalar dot");
    float g[] = {0.0f, 1.0f}, u[] = {2.0f, 3.0f}, o[2];
    ref->swiglu(o, g, u, 2);
    CHECK(o[0] == 0.0f && fabsf(o[1] - 3.0f / (1.0f + expf(-1.0f))) < 1e-6f, "swiglu");
    compare_tables(ref, ref);
    const elm_kernels *avx2 = elm_kernels_avx2();
    if (avx2) compare_tables(avx2, ref);
    else printf("avx2 not available on this CPU: only the scalar table is checked\n");
    return check_done();
}
