/* The timing figures of elm_gen_stats, from the four instants every generation loop records. */
#ifndef EDGELM_GENERATE_GEN_STATS_H
#define EDGELM_GENERATE_GEN_STATS_H

#include "edgelm/generate.h"

/* t0: prompt submitted; t_prefill: prompt processed; t_first: first token sampled; t_end: last
 * token done (milliseconds, one clock). n_out tokens were generated after n_prompt. */
static inline void elm_gen_stats_set(elm_gen_stats *s, int32_t n_prompt, int32_t n_out, double t0,
                                     double t_prefill, double t_first, double t_end) {
    s->prompt_tokens = n_prompt;
    s->generated_tokens = n_out;
    s->prefill_ms = t_prefill - t0;
    s->ttft_ms = t_first - t0;
    s->decode_ms = t_end - t_first;
    s->prefill_tps = s->prefill_ms > 0 ? n_prompt / (s->prefill_ms / 1e3) : 0;
    s->decode_tps = n_out > 1 && s->decode_ms > 0 ? (n_out - 1) / (s->decode_ms / 1e3) : 0;
}

#endif
