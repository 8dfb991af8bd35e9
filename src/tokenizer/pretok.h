/* Pre-tokenizers of byte-level BPE vocabularies: the regular expression that cuts text into the
 * pieces BPE then merges within, selected by GGUF's tokenizer.ggml.pre name (or recognized from a
 * Hugging Face tokenizer.json Split pattern). Matching uses PCRE2 with Unicode properties. */
#ifndef EDGELM_TOKENIZER_PRETOK_H
#define EDGELM_TOKENIZER_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include "edgelm/error.h"

typedef struct elm_pretok elm_pretok; /* one compiled pre-tokenizer, read-only once built */

/* The canonical name ("gpt-2", "llama-bpe", "qwen2") of a tokenizer.ggml.pre value, aliases
 * included (llama.cpp's "llama3", "phi-2", ...), or NULL when edgelm does not know it. */
const char *elm_pretok_canonical(const char *name);

/* The names accepted, for error messages: "gpt-2, llama-bpe, qwen2 (...)". */
const char *elm_pretok_names(void);

/* The regex of pre-tokenizer `name` (canonical or alias), or NULL when unknown. */
const char *elm_pretok_pattern(const char *name);

/* The canonical name whose regex is exactly `pattern` (a tokenizer.json Split pattern), or NULL. */
const char *elm_pretok_by_pattern(const char *pattern);

/* Compiles the pre-tokenizer `name` (canonical or alias). ELM_ERR_UNSUPPORTED naming src when
 * the name is unknown; ELM_ERR_NOMEM. */
elm_status elm_pretok_new(const char *name, const char *src, elm_pretok **out, elm_error *err);
void elm_pretok_free(elm_pretok *p);

/* Cuts text[0, len) into consecutive pieces covering every byte, in order: the regex matches and
 * the text between them (Hugging Face's Split "Isolated" behaviour). Bytes that are not valid
 * UTF-8 never match and so end up in the in-between pieces. Calls piece(user, start, n) for each;
 * returns false when piece returns false or memory runs out. */
bool elm_pretok_split(const elm_pretok *p, const char *text, size_t len,
                      bool (*piece)(void *user, size_t start, size_t n), void *user);

#endif
