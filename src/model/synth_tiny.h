/* Tiny random models of each family (`edgelm synth --arch A --tiny`): small enough to write and
 * run in a test, with a real vocabulary, and weights drawn so that next-token distributions are
 * peaked (greedy decoding is then insensitive to the rounding differences between runtimes). */
#ifndef EDGELM_MODEL_SYNTH_TINY_H
#define EDGELM_MODEL_SYNTH_TINY_H

#include <stdint.h>
#include "edgelm/model.h"

typedef struct elm_synth_tiny {
    const char *arch;       /* GGUF architecture: llama, qwen2, qwen3, phi3, gemma, smollm3 */
    const char *vocab_path; /* a GGUF file with a tokenizer (vocab-only files work) */
    uint64_t seed;
    float std;              /* standard deviation of the weights; 0 means 0.3 */
} elm_synth_tiny;

/* Builds the model in memory, F32, bound and ready to run or write. Shapes: dim 64, 2 layers,
 * 4 heads of 16 and 2 KV heads (grouped-query attention), FFN 128; Gemma's heads are 32 wide, so
 * that q (128) is wider than dim as in the real models. Each family as shipped: Llama in Llama
 * 3.1's shape (RoPE base 500000 with "llama3" scaling, so rope_freqs is there), tied output;
 * Qwen2 with q/k/v biases, tied; Phi-3 with fused qkv and gate/up, untied; Gemma with GeGLU,
 * scaled embeddings, tied. Norm weights are 1 + noise. When the model has rope_freqs, llama3
 * receives its rope_scaling (factor, low, high, original context) for an HF config; may be NULL
 * otherwise. Errors: ELM_ERR_ARG for an unknown arch, the vocab loader's errors. */
elm_status elm_synth_tiny_model(const elm_synth_tiny *o, elm_model **out, float llama3[4],
                                elm_error *err);

#endif
