/* Constrained decoding: a grammar the generated text must follow, enforced at sampling time.
 *
 * Grammars are written in llama.cpp's GBNF (grammars/README.md in llama.cpp): rules
 * `name ::= alternatives`, `|` between alternatives, "literals" and [character classes] with
 * ranges and `^`, `.` for any character, ( groups ), the repetitions `*` `+` `?` `{m}` `{m,}`
 * `{m,n}`, `#` comments; the start rule is `root`. Escapes in literals and classes: \n \r \t \\
 * \" \] \[ \- \xHH \uHHHH \UHHHHHHHH. JSON schemas are compiled to GBNF text
 * (elm_json_schema_to_gbnf) and go through the same parser.
 *
 * A compiled grammar (elm_grammar) works on bytes: character classes become the UTF-8 byte
 * sequences of their code points, so a token's bytes are matched whatever characters they cut.
 * A matcher (elm_grammar_matcher) is one generation's position in it: the set of parse stacks
 * after the bytes accepted so far. A token is allowed when all its bytes can be accepted from
 * there; an end token (EOS, end of turn) when the text so far is a complete match. */
#ifndef EDGELM_GRAMMAR_H
#define EDGELM_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_grammar elm_grammar;                 /* immutable once parsed */
typedef struct elm_grammar_vocab elm_grammar_vocab;     /* a vocabulary's token bytes, sorted */
typedef struct elm_grammar_matcher elm_grammar_matcher; /* one generation's state */

/* Parses GBNF text [len bytes] into *out (free with elm_grammar_free). `src` names the text in
 * errors ("grammar.gbnf", "request field grammar"). ELM_ERR_FORMAT with the line and column of a
 * syntax error, a rule used but not defined, a missing `root`, a left-recursive rule, or a
 * repetition count over 10000 (a grammar over 4M elements once expanded). */
elm_status elm_grammar_parse(const char *text, size_t len, const char *src, elm_grammar **out,
                             elm_error *err);
void elm_grammar_free(elm_grammar *g);

/* A copy of g of its own (the server's n choices each own theirs); NULL when out of memory. */
elm_grammar *elm_grammar_copy(const elm_grammar *g);

/* Translates a JSON schema [len bytes of JSON text] into GBNF (malloc'd, NUL-terminated, caller
 * frees), whose every complete match is a JSON document valid under the schema. `src` names the
 * schema in errors. ELM_ERR_FORMAT when the text is not JSON or a keyword's value has the wrong
 * type; ELM_ERR_UNSUPPORTED naming the keyword and its place (a JSON pointer) when the schema uses
 * one the translation cannot enforce: never a grammar that ignores part of the schema. */
elm_status elm_json_schema_to_gbnf(const char *schema, size_t len, const char *src, char **gbnf,
                                   elm_error *err);

/* GBNF of any JSON object (OpenAI's response_format json_object): static text. */
const char *elm_json_object_gbnf(void);

/* How text [len bytes] stands against the grammar from its start: 2 a complete match, 1 a proper
 * prefix of one (more bytes needed), 0 neither. For tests and tools; generation uses a matcher. */
int elm_grammar_match_text(const elm_grammar *g, const char *text, size_t len);

/* The token bytes of vocabulary v (elm_token_to_bytes), sorted, for matchers over v; build once
 * per model and share it between matchers (read-only). end_ids [n_end] are the ids that end a
 * generation (EOS, end of turn; -1 entries ignored). NULL on allocation failure. v must outlive
 * it. */
elm_grammar_vocab *elm_grammar_vocab_new(const elm_vocab *v, const int32_t *end_ids,
                                         int32_t n_end);

/* elm_grammar_vocab_new where the control tokens preserved [n_preserved] (-1 entries and other
 * types ignored) have their pieces' text as bytes instead of none, so a grammar (and a lazy
 * matcher's trigger) sees them as that text and can allow or require them: the vocabulary of a
 * reply that may hold tool calls written with control tokens (elm_chat_tool_preserved_ids), whose
 * detokenizer preserves the same ids (elm_detok_preserve). Other requests keep a vocabulary
 * without them, where a control token is never text. NULL on allocation failure. */
elm_grammar_vocab *elm_grammar_vocab_new_preserved(const elm_vocab *v, const int32_t *end_ids,
                                                   int32_t n_end, const int32_t *preserved,
                                                   int32_t n_preserved);
void elm_grammar_vocab_free(elm_grammar_vocab *gv);

/* A matcher at the start of grammar g over vocabulary gv (both must outlive it). NULL on
 * allocation failure. */
elm_grammar_matcher *elm_grammar_matcher_new(const elm_grammar *g, const elm_grammar_vocab *gv);
void elm_grammar_matcher_free(elm_grammar_matcher *m);

/* Makes the matcher lazy (OpenAI's tool_choice "auto"): until the text accepted contains
 * `trigger` (copied), every token is allowed and the grammar waits; from there the grammar holds
 * the text after the trigger (the rest of the token that completed it included). ELM_ERR_NOMEM,
 * or ELM_ERR_ARG for an empty trigger or one set after tokens were accepted. */
elm_status elm_grammar_matcher_set_trigger(elm_grammar_matcher *m, const char *trigger,
                                           elm_error *err);

/* Whether token id may come next: its bytes keep the text a prefix of a match, or it is an end
 * token and the text is a complete match. Tokens with no bytes (control tokens not preserved)
 * never are. */
bool elm_grammar_allows(elm_grammar_matcher *m, int32_t id);

/* Sets logits [n_vocab] of every token elm_grammar_allows refuses to -INFINITY. Returns the
 * number of tokens allowed (0: the grammar cannot go on with this vocabulary). */
int32_t elm_grammar_mask(elm_grammar_matcher *m, float *logits);

/* Advances past token id, which must be allowed (ELM_ERR_ARG otherwise, the state unchanged).
 * An end token leaves the state as it is. */
elm_status elm_grammar_accept(elm_grammar_matcher *m, int32_t id, elm_error *err);

/* The first of the vocabulary's end tokens, or -1 when it has none: what a sampler takes when
 * the grammar allows no token (it asks for text this vocabulary cannot spell), so generation
 * stops. */
int32_t elm_grammar_end_id(const elm_grammar_matcher *m);

/* True once the text is a complete match that no byte can extend: only end tokens are allowed. */
bool elm_grammar_done(const elm_grammar_matcher *m);

#ifdef __cplusplus
}
#endif
#endif
