/* Compute kernels behind one dispatch table, chosen once from CPU features (or EDGELM_ISA).
 * The scalar table is always built and is the oracle the tests compare other paths against.
 * Kernels are pure functions over caller-owned buffers and never allocate.
 *
 * Products with the 32-weight block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) take their activations
 * quantized to 8 bits per 32-value block (W8A8 / W4A8, as llama.cpp does with its q8 blocks): the
 * inner loops are integer dot products and only one scale product per block is done in float.
 * Every table, the scalar one included, quantizes activations to the same bits, so tables differ
 * only in the order of float additions. Float weights (F32, F16, BF16) take float activations,
 * except BF16 in prefill on CPUs with BF16 dot products (elm_kernels.bf16_act_tokens). */
#ifndef EDGELM_KERNELS_H
#define EDGELM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/system.h"
#include "edgelm/types.h"

/* Activations quantized for the block types, one row per token. A row of cols values (a multiple
 * of 32) is nb = cols/32 blocks laid out as arrays, so SIMD code loads several blocks' values,
 * scales or sums with one instruction:
 *   int8  qs[cols]   x[j] ≈ d[j/32]·qs[j], qs = x/d rounded to nearest even
 *   float d[nb]      the block's max|x| / 127
 *   float s[nb]      d·Σqs: carries the offset m of Q4_1/Q5_1 (Σ m·x = m·s)
 *   int32 sum[nb]    Σqs: carries the zero point of the unsigned 4/5-bit codes in integer form
 * Rows are elm_q8_row_bytes(cols) apart, a multiple of 64. */
typedef struct elm_q8_row {
    const int8_t *qs;
    const float *d, *s;
    const int32_t *sum;
} elm_q8_row;

static inline size_t elm_q8_row_bytes(int64_t cols) {
    const size_t nb = (size_t)cols / ELM_QK;
    return (nb * (ELM_QK + 12) + 63) / 64 * 64;
}

/* Row t of a q8 activation buffer of cols-wide rows. */
static inline elm_q8_row elm_q8_at(const void *xq, int64_t cols, int64_t t) {
    const int8_t *base = (const int8_t *)xq + (size_t)t * elm_q8_row_bytes(cols);
    const float *d = (const float *)(base + cols);
    const size_t nb = (size_t)cols / ELM_QK;
    return (elm_q8_row){base, d, d + nb, (const int32_t *)(d + 2 * nb)};
}

/* Whether products with weights of type t take q8 activations (xq in elm_matmul_args). IQ4_NL
 * and MXFP4 do too (kernels/kquant.h); the 256-weight super-block types quantize their own. */
static inline bool elm_type_q8_act(elm_type t) {
    return t == ELM_TYPE_Q8_0 || t == ELM_TYPE_Q4_0 || t == ELM_TYPE_Q4_1 || t == ELM_TYPE_Q5_0 ||
           t == ELM_TYPE_Q5_1 || t == ELM_TYPE_IQ4_NL || t == ELM_TYPE_MXFP4;
}

struct elm_kernels;

/* A weight matrix as the kernels see it: rows × cols elements of one type, row after row
 * (elm_row_bytes(type, cols) bytes apart), as a linear layer's W in y = W·x; or, when packed_by
 * is set, in the layout that table's pack wrote (packed.h), which only its matmul reads. */
typedef struct elm_weights {
    elm_type type;
    const void *data;
    int64_t rows, cols;
    const struct elm_kernels *packed_by; /* NULL: row after row, as in the file */
} elm_weights;

/* One product Y = X · Wᵀ. */
typedef struct elm_matmul_args {
    elm_weights w;       /* any supported type */
    const float *x;      /* [n_tok, cols] */
    const void *xq;      /* n_tok q8 rows of x (quantize_q8), when elm_type_q8_act; for the
                          * 256-weight super-block types NULL or their q8_K rows (kquant.h) */
    /* Float weights, optional: x transposed by chunks of 16 tokens ([ceil(n_tok/16)][cols][16],
     * transpose16), which prefill kernels would otherwise redo for every panel of rows; or NULL */
    const float *xt;
    /* BF16 weights with an even column count, from elm_kernels.bf16_act_tokens tokens on,
     * optional: xt's chunks rounded to BF16 and paired (pair16: [ceil(n_tok/16)][cols/2][16]);
     * or NULL */
    const uint32_t *xp;
    int64_t n_tok;
    float *y; /* [n_tok, rows] */
    /* The first token whose outputs the caller keeps (0: all). Every table computes the rows of
     * all n_tok tokens; a table may add them as a product of only the tokens [out_first, n_tok)
     * would, as llama.cpp's last layer computes its output rows alone (how many tokens a product
     * has decides how some of its sums add). */
    int64_t out_first;
} elm_matmul_args;

/* Prefill products work on tiles of this many weight rows; callers splitting rows across
 * threads should cut at multiples of it (any cut is correct, these are faster). */
#define ELM_TILE_ROWS 16

/* From this many tokens on, callers should pass elm_matmul_args.xt for float weights. */
#define ELM_XT_MIN_TOKENS 16

/* Scratch bytes one thread's matmul needs for weights of up to max_cols columns. */
size_t elm_matmul_scratch_bytes(int64_t max_cols);

/* The frequencies RoPE turns the pairs of a head by: pair i < rope_dim/2 turns by
 * pos · base^(-2i/rope_dim) · scale / ff[i] at position pos (Su et al. 2021; scale: linear
 * scaling, ff: Llama 3.1's or LongRoPE's frequency divisors, llama.cpp's freq_factors), its
 * cosine and sine multiplied by mscale (ggml's mscale: elm_hparams.rope_attn_factor). */
typedef struct elm_rope_freqs {
    int rope_dim;
    float base, scale;
    const float *ff;       /* [rope_dim / 2], or NULL: all 1 */
    const float *inv_freq; /* [rope_dim / 2] base^(-2i/rope_dim) · scale / ff[i], in double
                            * rounded to float (elm_rope_freqs_init) */
    float mscale;          /* cos and sin × this (float product); 1 from elm_rope_freqs_init */
    /* YaRN (elm_rope_freqs_yarn; 0 from elm_rope_freqs_init): pair i's angle is the scaled one
     * blended with the unscaled by ggml's ramp(i) · ext_factor, the ramp falling from 1 to 0
     * between the correction dimensions corr_lo and corr_hi */
    float ext_factor, corr_lo, corr_hi;
} elm_rope_freqs;

/* Sets r's fields (mscale 1) and fills inv_freq[rope_dim / 2], which r then points at; ff may be
 * NULL. */
void elm_rope_freqs_init(elm_rope_freqs *r, int rope_dim, float base, float scale,
                         const float *ff, float *inv_freq);

/* Turns r (from elm_rope_freqs_init) into YaRN's as llama.cpp runs it (ext_factor 1): the
 * correction dimensions of beta_fast and beta_slow rotations over n_ctx_orig positions
 * (ggml_rope_yarn_corr_dims), inv_freq blended by the ramp, and mscale × 1 + 0.1·ln(1 / scale)
 * (rope_yarn's magnitude). */
void elm_rope_freqs_yarn(elm_rope_freqs *r, int32_t n_ctx_orig, float beta_fast, float beta_slow,
                         float *inv_freq);

/* ggml's rope_yarn_ramp: 1 below pair i = corr_lo, 0 from corr_hi on, linear between. */
float elm_rope_yarn_ramp(const elm_rope_freqs *r, int i);

typedef struct elm_kernels {
    const char *isa; /* the table's name: "scalar", "avx2", "avx512", "neon", "ggml-rounding" */

    /* Σ a[i]·b[i] over n floats. */
    float (*dot_f32)(const float *a, const float *b, int64_t n);

    /* Quantizes one token's cols floats (a multiple of 32) into a q8 row at `row` (see
     * elm_q8_row; elm_q8_row_bytes(cols) bytes, 4-byte aligned). Bit-identical across tables. */
    void (*quantize_q8)(const float *x, int64_t cols, void *row);
    /* The same into a q8_K row (kquant.h's elm_q8k_row; cols a multiple of 256,
     * elm_q8k_row_bytes(cols) bytes): elm_quantize_q8_k's bytes in every table. */
    void (*quantize_q8_k)(const float *x, int64_t cols, void *row);

    /* xt[16c + t] = x[t·ldx + c] for t < n_tok (at most 16; zeros up to 16), c < cols: one
     * chunk of elm_matmul_args.xt. */
    void (*transpose16)(const float *x, int64_t ldx, int n_tok, int64_t cols, float *xt);

    /* Rows [r0, r1) of a->y: y[t, r] = Σ_c x[t, c]·w[r, c] for every token t. scratch: at least
     * elm_matmul_scratch_bytes(cols) bytes, 64-byte aligned, private to the calling thread. */
    void (*matmul)(const elm_matmul_args *a, int64_t r0, int64_t r1, void *scratch);

    /* Optional (NULL: the table reads only row-major weights). Whether pack lays out rows × cols
     * weights of type t, in as many bytes as they take row-major; and the packing of w (row-major)
     * into out, which must not overlap w->data. matmul then takes them with packed_by set to this
     * table, and for some token counts (a batched decode step) runs faster so. */
    bool (*packs)(elm_type t, int64_t rows, int64_t cols);
    void (*pack)(const elm_weights *w, void *out);

    /* From this many tokens on, matmul takes the activations of BF16 weights with an even column
     * count rounded to BF16 (to nearest, ties to even), the operands of a 16-bit dot-product
     * instruction, as llama.cpp does: products then differ from float ones by up to 2^-9·Σ|w·x|.
     * 0: never (float activations at every token count). */
    int64_t bf16_act_tokens;
    /* Where bf16_act_tokens > 0: one chunk of elm_matmul_args.xt (cols even) rounded to BF16 and
     * paired into a chunk of elm_matmul_args.xp, xp[16p + t] = token t's columns 2p (low half)
     * and 2p + 1, so that the products of a group share one pairing. NULL elsewhere. */
    void (*pair16)(const float *xt, int64_t cols, uint32_t *xp);

    /* Whether matmul wants the float input of F16 (BF16) weights rounded to f16 (bf16) by the
     * caller, elm_matmul_args.x (and xt) holding the rounded values, as ggml converts the
     * activations to the weights' type before its dot products. false: float activations. */
    bool round_float_act;

    /* Whether the causal convolutions of the recurrent layers (elm_causal_conv) fuse each tap's
     * multiply-add (fmaf), as llama.cpp's ssm_conv does where its compiler contracts the loop
     * (gcc for x86 with FMA, as node-llama-cpp's AVX2 and AVX-512 libraries are built). false:
     * the product rounded, then added. */
    bool fused_conv;

    /* out[i] = x[i] / sqrt(mean(x²) + eps) · w[i] over n (RMSNorm, Zhang & Sennrich 2019). */
    void (*rmsnorm)(float *out, const float *x, const float *w, int64_t n, float eps);

    /* In-place softmax over n. */
    void (*softmax)(float *x, int64_t n);

    /* out[i] = silu(g[i]) · u[i] (SwiGLU, Shazeer 2020). */
    void (*swiglu)(float *out, const float *g, const float *u, int64_t n);

    /* out[i] = gelu(g[i]) · u[i] (GeGLU, Shazeer 2020; Gemma) with GELU's tanh approximation
     * (Hendrycks & Gimpel 2016): gelu(x) = x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))). */
    void (*geglu)(float *out, const float *g, const float *u, int64_t n);

    /* The cosine and sine of every pair's angle for n positions, times r->mscale:
     * cs[t·rope_dim + 2i] and cs[t·rope_dim + 2i + 1] for pair i < rope_dim/2 at position pos[t]
     * of r (the rope kernels' cs, computed once per position and shared by the layers). */
    void (*rope_cs)(const elm_rope_freqs *r, const int32_t *pos, int32_t n, float *cs);

    /* Interleaved RoPE (Su et al. 2021): for each of n_heads heads of head_dim floats in v, pairs
     * (v[2i], v[2i+1]), i < rope_dim/2, rotate by the angle whose cosine and sine are cs[2i] and
     * cs[2i+1] (rope_cs). */
    void (*rope)(float *v, int n_heads, int head_dim, int rope_dim, const float *cs);

    /* Rotate-half ("NEOX") RoPE, as GPT-NeoX and the Hugging Face models run it (Qwen2, Phi-3,
     * Gemma): as rope, but pair i is (v[i], v[i + rope_dim/2]). */
    void (*rope_neox)(float *v, int n_heads, int head_dim, int rope_dim, const float *cs);

    /* n_q query heads that share one KV head (a GQA group; 1 without GQA), each over n_pos
     * cached positions: out[i·head_dim + d] = Σ_p softmax_p(q_i·k_p · scale) v_p[d] for i < n_q,
     * q_i = q + i·head_dim. k and v point at the first position the query sees, pos0 (0 but in
     * a sliding window), of the KV head; consecutive positions are `stride` floats apart. scores
     * holds n_q·n_pos floats of scratch. The heads are n_q independent products: taking them
     * together lets a kernel reuse each k and v row. n_tok (>= 1): how many tokens' attention
     * the caller computes in this pass, of which this is one; a table may add as a batched
     * product of that many tokens would (llama.cpp's does), and as one over a cache whose row p
     * holds position p, the rows before pos0 masked (llama.cpp's windowed layers). sinks: NULL,
     * or one logit per query head (gpt-oss's attention sinks, ggml_soft_max_add_sinks) that
     * joins its softmax's denominator as a position without a value. */
    void (*attention)(const float *q, int n_q, const float *k, const float *v, size_t stride,
                      int32_t n_pos, int32_t pos0, int head_dim, float scale,
                      const float *sinks, int32_t n_tok, float *scores, float *out);
} elm_kernels;

/* The table for this CPU: the widest one it supports, unless EDGELM_ISA names another (scalar,
 * avx2, avx512, neon); a named ISA this CPU or build lacks gives the scalar table. Never NULL. */
const elm_kernels *elm_kernels_best(void);
const elm_kernels *elm_kernels_scalar(void);

/* The tables of each ISA, or NULL when this CPU (or build) lacks it: x86-64 AVX2+FMA+F16C;
 * x86-64 AVX-512 F/BW/VL/DQ with VNNI and VBMI (Ice Lake, Sapphire Rapids, Zen 4 and later;
 * older AVX-512 CPUs get the AVX2 table); ARM64 NEON with the dot-product extension. */
const elm_kernels *elm_kernels_avx2(void);
const elm_kernels *elm_kernels_avx512(void);
const elm_kernels *elm_kernels_neon(void);

/* llama.cpp's float arithmetic (ggml_exact.h) over elm_kernels_best() as it is at the first
 * call: the table of elm_context_params.ggml_rounding. Its RMSNorm, SwiGLU, GeGLU, RoPE and its
 * angles, attention, q8 activations (f16 scales), and the products ggml_exact.h follows are
 * llama.cpp's; the other products are the wrapped table's, with F16/BF16 inputs rounded to the
 * weights' type (round_float_act). It packs nothing. Built once, thread-safe; never NULL. */
const elm_kernels *elm_kernels_ggml(void);

/* Scalar pieces SIMD tables reuse where vector code would not pay. */
void elm_scalar_quantize_q8(const float *x, int64_t cols, void *row);
void elm_scalar_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
void elm_scalar_softmax(float *x, int64_t n);
void elm_scalar_swiglu(float *out, const float *g, const float *u, int64_t n);
void elm_scalar_rope(float *v, int n_heads, int head_dim, int rope_dim, const float *cs);
void elm_scalar_geglu(float *out, const float *g, const float *u, int64_t n);
void elm_scalar_rope_neox(float *v, int n_heads, int head_dim, int rope_dim, const float *cs);
void elm_scalar_rope_cs(const elm_rope_freqs *r, const int32_t *pos, int32_t n, float *cs);
void elm_scalar_attention(const float *q, int n_q, const float *k, const float *v, size_t stride,
                          int32_t n_pos, int32_t pos0, int head_dim, float scale,
                          const float *sinks, int32_t n_tok, float *scores, float *out);
/* In-place softmax over n logits and one more, sink (-INFINITY: none), whose share is dropped. */
void elm_scalar_softmax_sink(float *x, int64_t n, float sink);

#endif
