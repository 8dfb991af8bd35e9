/* Entry points of the per-layout loaders, called by elm_model_load (load.c). Each fills an empty
 * elm_model (from elm_model_new, model/builder.h): hyper-parameters, tensors under GGUF names
 * (interleaved RoPE order), and a finalized vocab. elm_model_load then calls elm_model_bind. Every size, offset and count is validated before use;
 * errors name the file and the problem. */
#ifndef EDGELM_FORMATS_LOADERS_H
#define EDGELM_FORMATS_LOADERS_H

#include "model/builder.h"

/* GGUF v2/v3, mmapped (gguf_read.c). */
elm_status elm_load_gguf(elm_model *m, const char *path, bool in_memory, elm_error *err);

/* Hugging Face directory: config.json + model.safetensors or model.safetensors.index.json, and
 * tokenizer.json (hf.c). */
elm_status elm_load_hf(elm_model *m, const char *dir, elm_error *err);

/* llama2.c checkpoint (version 0) and tokenizer.bin; tokenizer_path NULL means "tokenizer.bin"
 * (or "tok*.bin" when exactly one exists) beside the checkpoint (llama2c.c). */
elm_status elm_load_llama2c(elm_model *m, const char *path, const char *tokenizer_path,
                            elm_error *err);

#endif
