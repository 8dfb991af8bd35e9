/* x86-64 AVX2 + FMA kernels. Compiled with per-function target attributes so the rest of the
 * build stays baseline x86-64; chosen at run time only when the CPU reports the features. */
#include "kernels/kernels.h"
#include "kernels/matmul_rows.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2_FN __attribute__((target("avx2,fma")))

AVX2_FN static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

AVX2_FN static inline float dot_f32(const float *a, const float *b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

ELM_DEFINE_MATMUL_ROWS(matmul_rows, dot_f32, AVX2_FN)

AVX2_FN static float dot_f32_entry(const float *a, const float *b, int64_t n) {
    return dot_f32(a, b, n);
}

static const elm_kernels avx2_kernels = {
    .isa = "avx2",
    .dot_f32 = dot_f32_entry,
    .matmul_rows = matmul_rows,
    .rmsnorm = elm_scalar_rmsnorm,
    .softmax = elm_scalar_softmax,
    .swiglu = elm_scalar_swiglu,
    .rope = elm_scalar_rope,
    .attention = elm_scalar_attention,
};

const elm_kernels *elm_kernels_avx2(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2_kernels;
    return NULL;
}
#else
const elm_kernels *elm_kernels_avx2(void) { return NULL; }
#endif
