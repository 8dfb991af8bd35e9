/* The k-quant/i-quant kernels (kquant_body.h) for the AVX-512 table: the same 256-bit code with
 * the AVX-512VL encodings (32 vector registers) and VNNI's fused int16 multiply-add, plus the
 * 16-row prefill tiles of kquant_gemm_avx512.h; used alongside avx512.c's kernels. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KQ_FN __attribute__((target(ELM_TARGET_AVX512)))
#define KQ_TABLE elm_kq_avx512
#define KQ_VNNI 1
#define KQ_TILES 1
#define KQ_DECODE512 1
#include "kernels/targets.h"
#include "kernels/x86/kquant_body.h"
#endif
