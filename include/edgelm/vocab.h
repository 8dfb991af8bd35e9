/* The vocabulary and tokenizer of a model, whatever file it came from.
 *
 * Loaders fill the raw arrays (pieces as the model stores them: SentencePiece "▁" for space, byte
 * pieces "<0x0A>"; byte-level pieces in GPT-2's byte-to-unicode alphabet, "Ġ" for space) and call
 * elm_vocab_finalize(); the tokenizer then encodes text with one BPE engine in two modes:
 *  - model "llama": SentencePiece-style BPE, merge by piece score (GGUF "llama", llama2.c
 *    tokenizer.bin) or by merge rank when the source gives merges (Hugging Face tokenizer.json),
 *    with byte fallback;
 *  - model "gpt2": byte-level BPE (GPT-2, Llama 3, Qwen2), the text first split by the regex of
 *    the pre-tokenizer named in `pre`, each piece's bytes mapped to GPT-2's byte alphabet, then
 *    merged by merge rank.
 * Control and user-defined tokens written in the text (special tokens) are matched before that:
 * user-defined ones always, control ones only when asked (elm_tokenize_special), as llama.cpp. */
#ifndef EDGELM_VOCAB_H
#define EDGELM_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "edgelm/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Token types as GGUF's tokenizer.ggml.token_type. */
enum {
    ELM_TOKEN_NORMAL = 1,
    ELM_TOKEN_UNKNOWN = 2,
    ELM_TOKEN_CONTROL = 3,
    ELM_TOKEN_USER_DEFINED = 4,
    ELM_TOKEN_UNUSED = 5,
    ELM_TOKEN_BYTE = 6
};

typedef struct elm_vocab_index elm_vocab_index; /* private lookup tables */

typedef struct elm_vocab {
    char model[16];          /* "llama" (SentencePiece-style) or "gpt2" (byte-level BPE) */
    char pre[32];            /* pre-tokenizer name as GGUF tokenizer.ggml.pre ("gpt-2",
                              * "llama-bpe", "qwen2", see elm_pretok_names; "gemma4" cuts a
                              * llama vocab's text at newline runs); "" for plain llama */
    char **pre_regex;        /* owned, or NULL: the regexes applied in turn instead of those
                              * `pre` names (a tokenizer.json pre_tokenizer); `pre` is then the
                              * known name with the same regexes, or "" */
    int32_t n_pre_regex;
    bool ignore_merges;      /* gpt2: a piece that is itself a token is not merged (Llama 3) */
    int32_t n_tokens;
    char **pieces;           /* [n_tokens] NUL-terminated UTF-8, owned (malloc) */
    uint32_t *piece_len;     /* [n_tokens] bytes, pieces may contain NUL only if len says so */
    float *scores;           /* [n_tokens] or NULL when merges are given */
    int32_t *types;          /* [n_tokens] ELM_TOKEN_* */
    int32_t n_merges;
    char **merges;           /* [n_merges] "left right", owned; NULL when scores are used */
    int32_t bos_id, eos_id, unk_id, pad_id; /* -1 when absent */
    bool add_bos, add_eos;
    bool add_space_prefix;   /* SentencePiece add_dummy_prefix / HF Prepend("▁") normalizer */
    bool byte_fallback;
    char *chat_template;     /* owned, or NULL */
    elm_vocab_index *index;  /* built by elm_vocab_finalize */
} elm_vocab;

/* Allocates zeroed arrays for n tokens (pieces, piece_len, types; scores if with_scores) and sets
 * ids to -1, add_bos true, add_space_prefix true, byte_fallback true. n must be in (0, 2^24]. */
elm_status elm_vocab_alloc(elm_vocab *v, int32_t n, bool with_scores, elm_error *err);

/* Copies `len` bytes into piece i (NUL-terminated). */
elm_status elm_vocab_set_piece(elm_vocab *v, int32_t i, const char *s, size_t len, elm_error *err);

/* Validates ids and builds lookup tables; `src` names the file for error messages. */
elm_status elm_vocab_finalize(elm_vocab *v, const char *src, elm_error *err);

/* Frees everything the vocab owns and zeroes it. */
void elm_vocab_free(elm_vocab *v);

/* Encodes UTF-8 text of `len` bytes into ids. A BOS is prepended when add_bos is true (pass the
 * model's v->add_bos, or false for --no-bos). Control tokens written in the text are not parsed
 * (user-defined ones are, see elm_tokenize_special). Writes at
 * most max_ids ids; returns the number of ids the full encoding has (may exceed max_ids: call again
 * with a larger buffer), or -1 on allocation failure (err filled). */
int64_t elm_tokenize(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                     int32_t *ids, int64_t max_ids, elm_error *err);

/* elm_tokenize, and with parse_special the control tokens spelled out in the text ("<s>",
 * "<|im_start|>") become those tokens (chat templates need this). User-defined tokens are matched
 * either way; longer special tokens are matched first. */
int64_t elm_tokenize_special(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                             bool parse_special, int32_t *ids, int64_t max_ids, elm_error *err);

/* elm_tokenize_special into a malloc'd array that fits (*ids, *n_ids ids; caller frees *ids).
 * ELM_ERR_NOMEM on allocation failure. */
elm_status elm_tokenize_alloc(const elm_vocab *v, const char *text, size_t len, bool add_bos,
                              bool parse_special, int32_t **ids, int64_t *n_ids, elm_error *err);

/* The bytes a token stands for when printed: "▁" -> " ", byte pieces -> that byte, byte-level
 * (gpt2) pieces -> their bytes, user-defined tokens -> their text, control and unknown tokens ->
 * "" . Writes up to cap bytes to out; returns the number of bytes. */
size_t elm_token_to_bytes(const elm_vocab *v, int32_t id, char *out, size_t cap);

/* Streaming decoder: feeds token ids and returns only complete UTF-8 text, holding back the bytes
 * of an incomplete multi-byte sequence made of byte-fallback pieces until it completes; the leading
 * space the tokenizer prepended is dropped from the first piece when `strip_leading_space`. */
typedef struct elm_detok {
    const elm_vocab *vocab;
    bool strip_leading_space; /* true while the first text piece has not been produced */
    unsigned char pending[8];
    int n_pending;
    const int32_t *preserved; /* [n_preserved] control tokens written as their text, borrowed */
    int32_t n_preserved;
} elm_detok;

/* Starts a decoder over v that preserves no token. */
void elm_detok_init(elm_detok *d, const elm_vocab *v, bool strip_leading_space);

/* Makes the control tokens ids [n] (borrowed: they must outlive the decoder) "preserved": each is
 * decoded as its piece's text instead of nothing, as llama.cpp's preserved tokens (the control
 * tokens a chat template's tool calls are written with, which a parser needs to see; see
 * elm_chat_tool_preserved_ids). Ids of other types are decoded as ever. */
void elm_detok_preserve(elm_detok *d, const int32_t *ids, int32_t n);

/* Appends the text of token id to out (cap bytes, NUL-terminated when cap > 0); returns the
 * number of bytes written (excluding NUL). out needs room for the token's bytes + 8. */
size_t elm_detok_push(elm_detok *d, int32_t id, char *out, size_t cap);

/* Emits held-back bytes at the end of the stream (invalid sequences become U+FFFD). */
size_t elm_detok_flush(elm_detok *d, char *out, size_t cap);

/* Decodes a whole id sequence into a malloc'd NUL-terminated string (caller frees); NULL on
 * allocation failure. */
char *elm_detokenize(const elm_vocab *v, const int32_t *ids, int64_t n, bool strip_leading_space);

#ifdef __cplusplus
}
#endif
#endif
