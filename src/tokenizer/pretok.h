/* Pre-tokenizers of BPE vocabularies: the regular expressions that cut text into the pieces BPE
 * then merges within, applied in turn (each to the pieces the previous one left, as a Hugging
 * Face Sequence of Split "Isolated" steps), selected by GGUF's tokenizer.ggml.pre name or given
 * by a tokenizer.json pre_tokenizer. Matching uses PCRE2 with Unicode properties. */
#ifndef EDGELM_TOKENIZER_PRETOK_H
#define EDGELM_TOKENIZER_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include "edgelm/error.h"

#define ELM_PRETOK_MAX_REGEX 8 /* regexes in one pre-tokenizer */

typedef struct elm_pretok elm_pretok; /* one compiled pre-tokenizer, read-only once built */

/* The canonical name ("gpt-2", "llama-bpe", "qwen2", ...) of a tokenizer.ggml.pre value, aliases
 * included (llama.cpp's "llama3", "phi-2", ...), or NULL when edgelm does not know it. */
const char *elm_pretok_canonical(const char *name);

/* The names accepted, for error messages: "gpt-2, llama-bpe, qwen2 (...)". */
const char *elm_pretok_names(void);

/* The regexes of pre-tokenizer `name` (canonical or alias), applied in turn: sets *patterns to
 * the list and returns its length (1..ELM_PRETOK_MAX_REGEX), or 0 (*patterns NULL) when unknown. */
int elm_pretok_patterns(const char *name, const char *const **patterns);

/* Compiles the n regexes `patterns` (PCRE2 syntax, applied in turn). ELM_ERR_UNSUPPORTED naming
 * src and the regex when one does not compile or n is out of 1..ELM_PRETOK_MAX_REGEX;
 * ELM_ERR_NOMEM. */
elm_status elm_pretok_compile(const char *const *patterns, int n, const char *src,
                              elm_pretok **out, elm_error *err);

/* Compiles the pre-tokenizer `name` (canonical or alias). ELM_ERR_UNSUPPORTED naming src when
 * the name is unknown; ELM_ERR_NOMEM. */
elm_status elm_pretok_new(const char *name, const char *src, elm_pretok **out, elm_error *err);
void elm_pretok_free(elm_pretok *p);

/* Cuts text[0, len) into consecutive pieces covering every byte, in order: each regex's matches
 * and the text between them (Hugging Face's Split "Isolated" behaviour), the next regex cutting
 * each of those pieces again (a piece ends the text for lookaheads). Bytes that are not valid
 * UTF-8 never match and so end up in the in-between pieces. Calls piece(user, start, n) for each;
 * returns false when piece returns false or memory runs out. */
bool elm_pretok_split(const elm_pretok *p, const char *text, size_t len,
                      bool (*piece)(void *user, size_t start, size_t n), void *user);

#endif
