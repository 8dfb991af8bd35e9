/* Speculative decoding (Leviathan, Kalman & Matias 2023, "Fast Inference from Transformers via
 * Speculative Decoding", arXiv:2211.17192): a cheap proposer guesses the next few tokens, the
 * target model scores all of them in one batched pass, and rejection sampling keeps the longest
 * prefix the target agrees with, so the output has exactly the target's distribution (greedy:
 * exactly the target's greedy tokens) while the target runs fewer passes than tokens.
 *
 * Proposers: a smaller draft model sharing the vocabulary, and draft-free prompt lookup (Saxena
 * 2023, "Prompt Lookup Decoding"): the continuation of the latest earlier occurrence of the last
 * n-gram of the context. */
#ifndef EDGELM_SPECULATIVE_H
#define EDGELM_SPECULATIVE_H

#include <stdint.h>
#include "edgelm/generate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_spec_params {
    elm_context *draft;      /* context of the draft model (same vocabulary size), or NULL */
    int32_t draft_max;       /* most tokens the draft proposes per target pass (>= 1) */
    float draft_min_p;       /* the draft stops proposing at a token it gives probability < this
                              * (0: always draft_max) */
    int32_t lookup;          /* prompt lookup: most tokens copied per target pass (0 = off); tried
                              * before the draft model when both are set */
    int32_t lookup_ngram;    /* longest n-gram matched (tried longest first, down to 1); 0 = 3 */
} elm_spec_params;

typedef struct elm_spec_stats {
    int32_t target_passes;     /* batched target forward calls after the prompt */
    int32_t drafted, accepted; /* proposed tokens and those the target kept */
    double acceptance_rate;    /* accepted / drafted (0 when nothing was drafted) */
    double tokens_per_pass;    /* generated tokens / target passes */
    double ms_per_token;       /* wall time of generation after the prompt / generated tokens */
    double plain_ms_per_token; /* one plain decode step (target forward of 1 token + sampling),
                                * measured in the same run after generation (3 steps, undone) */
    double speedup;            /* plain_ms_per_token / ms_per_token */
} elm_spec_stats;

/* elm_generate with speculation: same contract (prompt appended to the context's cache, streaming
 * callback, stop at EOS / n_predict / callback, stats), and the same context shift when the cache
 * fills. The draft context's cache is kept in step with the target's (its previous contents are
 * discarded where they differ). sp NULL or without a proposer: plain elm_generate. sstats may be
 * NULL (then the plain-step timing is skipped). Returns ELM_ERR_ARG for a draft whose vocabulary size differs from the target's. */
elm_status elm_generate_speculative(elm_context *c, const int32_t *prompt, int32_t n_prompt,
                                    const elm_gen_params *p, const elm_spec_params *sp,
                                    elm_token_cb cb, void *user, int32_t *out_ids, int32_t max_out,
                                    int32_t *n_out, elm_gen_stats *stats, elm_spec_stats *sstats,
                                    elm_error *err);

/* Prompt lookup on its own: finds the latest earlier occurrence of the last n tokens of
 * tokens [n_tokens] (n from max_ngram down to 1) and copies up to max_draft of the tokens that
 * followed it into draft. Returns the number copied (0 when no n-gram recurs). */
int32_t elm_lookup_propose(const int32_t *tokens, int32_t n_tokens, int32_t max_ngram,
                           int32_t max_draft, int32_t *draft);

#ifdef __cplusplus
}
#endif
#endif
