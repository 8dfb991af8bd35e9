/* Private lookup tables of a finalized vocabulary (built by elm_vocab_finalize in vocab.c) and the
 * queries the encoder and decoder make of them. */
#ifndef EDGELM_TOKENIZER_VOCAB_INDEX_H
#define EDGELM_TOKENIZER_VOCAB_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "edgelm/vocab.h"

/* Id of the token whose piece is exactly the `len` bytes at s, or -1. When several tokens share a
 * piece the highest id wins (llama.cpp fills its text->id map in id order). */
int32_t elm_vocab_find(const elm_vocab *v, const char *s, size_t len);

/* Merge rule for the adjacent tokens (left, right) when the vocab has merges: true and its rank
 * (0 = applied first) and the id of the merged token, or false when no rule joins them. */
bool elm_vocab_merge_rule(const elm_vocab *v, int32_t left, int32_t right, int32_t *rank,
                          int32_t *merged);

/* Id of the byte-fallback token for byte b ("<0xXX>", BYTE type), or -1 when the vocab has none. */
int32_t elm_vocab_byte_id(const elm_vocab *v, unsigned char b);

/* Whether the ASCII byte b occurs in no piece longer than one byte, so no merge can ever join it
 * to a neighbour: the encoder then works on the text between such bytes ("\n" in SentencePiece
 * vocabs) one stretch at a time, which keeps its queue small. False for b >= 0x80. */
bool elm_vocab_is_wall(const elm_vocab *v, unsigned char b);

/* The byte a BYTE-type token stands for (its piece is "<0xXX>"), or -1 for any other token. */
int elm_vocab_token_byte(const elm_vocab *v, int32_t id);

/* The compiled pre-tokenizer of a gpt2 vocab, NULL for llama vocabs. */
const struct elm_pretok *elm_vocab_pretok(const elm_vocab *v);

/* The tokens text may spell out (control, user-defined, unknown; non-empty pieces), longest
 * piece first: sets *ids to the list and returns its length. */
int32_t elm_vocab_specials(const elm_vocab *v, const int32_t **ids);

#endif
