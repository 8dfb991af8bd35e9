/* Private interface between the parts of the Hugging Face directory loader: hf_config.c reads
 * config.json, hf_tokenizer.c reads tokenizer.json (+ tokenizer_config.json), hf.c maps the
 * safetensors weights and puts it together (FORMATS.md, "Hugging Face Llama checkpoints"). */
#ifndef EDGELM_FORMATS_HF_H
#define EDGELM_FORMATS_HF_H

#include "edgelm/model.h"

/* Largest config.json / tokenizer.json read, bytes (a big vocabulary's tokenizer.json: ~10 MB). */
#define ELM_HF_MAX_JSON (256u << 20)

typedef struct elm_hf_config {
    elm_hparams hp;          /* tied_output from tie_word_embeddings (default false) */
    int32_t bos_id, eos_id;  /* bos_token_id / first eos_token_id, -1 when absent */
} elm_hf_config;

/* Reads `path` (config.json). Required keys: hidden_size, intermediate_size, num_hidden_layers,
 * num_attention_heads, vocab_size (ELM_ERR_FORMAT "PATH: missing required key 'X'"). Defaults:
 * num_key_value_heads = heads, rms_norm_eps 1e-6 and max_position_embeddings 2048 (as
 * transformers' LlamaConfig), rope_theta 10000, tie_word_embeddings false. A model_type or
 * architectures entry other than Llama sets hp.arch to it and returns ELM_ERR_UNSUPPORTED, as do
 * attention/MLP biases and a head_dim other than hidden_size / heads. */
elm_status elm_hf_read_config(const char *path, elm_hf_config *c, elm_error *err);

/* Fills and finalizes v from DIR/tokenizer.json (BPE with merges; ELM_ERR_UNSUPPORTED for other
 * models and byte-level pre-tokenizers) and the optional DIR/tokenizer_config.json (bos/eos token
 * strings, add_bos_token, add_eos_token, chat_template); ids it lacks come from config c. */
elm_status elm_hf_read_tokenizer(const char *dir, const elm_hf_config *c, elm_vocab *v,
                                 elm_error *err);

#endif
