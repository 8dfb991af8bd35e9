/* Token sampling from logits, in llama.cpp's default order: repetition penalty over the last N
 * tokens, top-k, top-p (nucleus, Holtzman et al. 2019, arXiv:1904.09751), min-p (Nguyen et al.
 * 2024, arXiv:2407.01082), temperature, then a draw from the renormalised distribution.
 * temp <= 0 is greedy: the argmax after the penalty. */
#ifndef EDGELM_SAMPLER_H
#define EDGELM_SAMPLER_H

#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/grammar.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elm_sampler_params {
    float temp;            /* <= 0: greedy; default 0.8 */
    int32_t top_k;         /* <= 0: off; default 40 */
    float top_p;           /* >= 1: off; default 0.95 */
    float min_p;           /* <= 0: off; default 0.05 */
    float repeat_penalty;  /* 1: off (default); > 1 penalises tokens seen in the window */
    int32_t repeat_last_n; /* window in tokens; default 64 */
    uint64_t seed;         /* RNG seed */
} elm_sampler_params;

/* llama.cpp's defaults (seed 0: caller should set it). */
elm_sampler_params elm_sampler_defaults(void);

typedef struct elm_sampler elm_sampler;

/* n_vocab > 0; the sampler keeps scratch for n_vocab candidates. NULL on allocation failure. */
elm_sampler *elm_sampler_new(const elm_sampler_params *p, int32_t n_vocab);
void elm_sampler_free(elm_sampler *s);

/* Picks the next token from logits [n_vocab] (modified in place by the penalty, and by the
 * grammar's mask when the first draw is refused) given the token history (the last
 * repeat_last_n entries are used). With a grammar attached, the token is one the grammar allows
 * (or its end token when it allows none) and the grammar is advanced past it. */
int32_t elm_sampler_sample(elm_sampler *s, float *logits, const int32_t *history,
                           int32_t n_history);

/* Attaches matcher g (not owned; NULL detaches): elm_sampler_sample then draws only tokens g
 * allows and advances g. elm_sampler_probs ignores it. */
void elm_sampler_set_grammar(elm_sampler *s, elm_grammar_matcher *g);

/* The distribution elm_sampler_sample draws from, written densely into probs [n_vocab] (zero
 * outside the kept candidates; one-hot at the argmax when greedy). logits are modified in place by
 * the penalty as in elm_sampler_sample. Speculative decoding verifies drafts against it. */
void elm_sampler_probs(elm_sampler *s, float *logits, const int32_t *history, int32_t n_history,
                       float *probs);

/* The next draw of the sampler's generator, uniform in [0, 1). */
double elm_sampler_uniform(elm_sampler *s);

/* Index of the largest value (first on ties). */
int32_t elm_argmax(const float *x, int32_t n);

#ifdef __cplusplus
}
#endif
#endif
