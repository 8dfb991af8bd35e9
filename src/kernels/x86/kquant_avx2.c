/* The k-quant/i-quant kernels (kquant_body.h) for AVX2+FMA+F16C. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KQ_FN __attribute__((target(ELM_TARGET_AVX2)))
#define KQ_TABLE elm_kq_avx2
#include "kernels/targets.h"
#include "kernels/x86/kquant_body.h"
#endif
