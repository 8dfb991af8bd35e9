/* The in-memory tiny models behind elm_synth_tiny_write (edgelm/shapes.h), for tests that run
 * them without a file. */
#ifndef EDGELM_SHAPES_SYNTH_TINY_H
#define EDGELM_SHAPES_SYNTH_TINY_H

#include "edgelm/shapes.h"

/* Builds the model in memory, F32, bound and ready to run or write. Shapes: dim 64, 2 layers,
 * 4 heads of 16 and 2 KV heads (grouped-query attention), FFN 128; Gemma's heads are 32 wide, so
 * that q (128) is wider than dim as in the real models. Each family as shipped: Llama in Llama
 * 3.1's shape (RoPE base 500000 with "llama3" scaling, so rope_freqs is there), tied output;
 * Qwen2 with q/k/v biases, tied; Phi-3 with fused qkv and gate/up, untied; Gemma with GeGLU,
 * scaled embeddings, tied; Gemma 3 like Gemma plus q/k norms and post-norms, 6 layers of which
 * the first 5 see a window of 16 positions, RoPE base 1e6 with linear scaling ×8 on the global
 * layer and 10000 on the others (as Gemma 3 4B); with o->longrope, Phi-3 with Phi-4-mini's RoPE
 * (on 12 of 16 dimensions per head, LongRoPE factors drawn so that long != short, trained
 * context 4096 extended from an original 512, attention factor as the converter computes it);
 * gemma-embedding as Gemma 3 without its linear scaling, with mean pooling and Dense layers of
 * 2·dim (EmbeddingGemma: 4·dim); o->pooling writes another pooling (any family), and with last-token
 * pooling a tokenizer that appends its EOS (add_eos, as Qwen3-Embedding's).
 * Norm weights are 1 + noise. When the model has rope_freqs, llama3
 * receives its rope_scaling (factor, low, high, original context) for an HF config; may be NULL
 * otherwise. Errors: ELM_ERR_ARG for an unknown arch (or longrope with another than phi3), the
 * vocab loader's errors. */
elm_status elm_synth_tiny_model(const elm_synth_tiny *o, elm_model **out, float llama3[4],
                                elm_error *err);

#endif
