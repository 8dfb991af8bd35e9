/* The generation loop: one batched prefill of the prompt, then one decode step per token, with a
 * per-token callback for streaming and timing stats. */
#ifndef EDGELM_GENERATE_H
#define EDGELM_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/context.h"
#include "edgelm/grammar.h"
#include "edgelm/sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per generated token with its complete-UTF-8 text (possibly empty while a multi-byte
 * character is incomplete) and id; a non-zero return stops generation. At the end it is called
 * once more with id -1 and any held-back text. */
typedef int (*elm_token_cb)(const char *text, size_t len, int32_t id, void *user);

typedef struct elm_gen_params {
    int32_t n_predict;        /* most tokens to generate (> 0) */
    bool ignore_eos;          /* keep going past EOS */
    elm_sampler_params sampling;
    /* A full cache is shifted (elm_context_make_room: the first n_keep tokens, at least BOS,
     * stay, the oldest half of the rest goes) so generation goes on, unless no_context_shift. */
    int32_t n_keep;
    bool no_context_shift;
    /* NULL: free text. Else every token drawn keeps the text a prefix of a match of the grammar
     * (grammar.h), which ends only by an end token of grammar_vocab: that vocabulary (the
     * model's, built once by the caller and shared, with the same preserved tokens as below) or,
     * when NULL, one built for the call with the model's EOS as its end token and the preserved
     * tokens' text (elm_grammar_vocab_new_preserved). */
    const elm_grammar *grammar;
    const elm_grammar_vocab *grammar_vocab;
    /* With a grammar: NULL holds the whole text to it; else the text is free until it contains
     * this (OpenAI's tool_choice "auto": elm_chat_tool_grammar's lazy trigger), the grammar
     * holding what follows (elm_grammar_matcher_set_trigger). */
    const char *grammar_trigger;
    /* Control tokens [n_preserved] (borrowed, ids of the model's vocabulary) decoded as their text
     * (elm_detok_preserve) and, in a grammar vocabulary built for the call, matched as it: the
     * tool-call markers of a request with tools (elm_chat_tool_preserved_ids), so a lazy trigger
     * written with one fires and the reply keeps them for the parser. NULL, 0: none, a control
     * token has no text. */
    const int32_t *preserved;
    int32_t n_preserved;
} elm_gen_params;

typedef struct elm_gen_stats {
    int32_t prompt_tokens, generated_tokens;
    double prefill_ms;        /* wall time of the prompt's forward pass */
    double ttft_ms;           /* prompt submitted -> first token sampled */
    double decode_ms;         /* wall time of the decode steps after the first token */
    double prefill_tps;       /* prompt tokens / prefill seconds */
    double decode_tps;        /* (generated - 1) / decode seconds: tokens after the first */
} elm_gen_stats;

/* Generates after `prompt` [n_prompt ids] from the context's current state (usually empty).
 * Writes up to max_out generated ids to out_ids (may be NULL) and their count to *n_out. Stops at
 * EOS (not emitted, unless ignore_eos), after n_predict tokens, when the callback returns non-zero
 * or, with no_context_shift, when the context is full; the token it stops on is not fed to the
 * cache. ELM_ERR_ARG when the prompt is empty or does not fit in the context even after a shift
 * ("prompt has N tokens, context holds C"). */
elm_status elm_generate(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                        const elm_gen_params *p, elm_token_cb cb, void *user, int32_t *out_ids,
                        int32_t max_out, int32_t *n_out, elm_gen_stats *stats, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
