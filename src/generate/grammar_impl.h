/* The compiled form of a grammar (grammar.h), shared by its parser and its matcher.
 *
 * Every rule is a list of alternatives; every alternative a run of elements in `elems` ended by
 * GR_END. An element is a byte set (an index >= 0 into `sets`: 256 bits, the bytes it accepts)
 * or a reference to a rule (GR_RULE(r) <= -2). Character classes, repetitions and groups are
 * rules of their own, made by the parser, so the matcher knows only bytes, sequences and rules. */
#ifndef EDGELM_GENERATE_GRAMMAR_IMPL_H
#define EDGELM_GENERATE_GRAMMAR_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "edgelm/grammar.h"

#define GR_END (-1)
#define GR_RULE(r) (-2 - (r))
#define GR_IS_RULE(e) ((e) <= -2)
#define GR_RULE_OF(e) (-2 - (e))

typedef struct { uint32_t w[8]; } gr_byteset;

static inline bool gr_byteset_has(const gr_byteset *s, unsigned char b) {
    return s->w[b >> 5] >> (b & 31) & 1;
}

struct elm_grammar {
    int32_t *elems;     /* [n_elems] */
    int32_t n_elems;
    int32_t *alt_start; /* [n_alts] offset in elems of each alternative, rule by rule */
    int32_t n_alts;
    int32_t *rule_alt;  /* [n_rules + 1]: rule r's alternatives are alt_start[rule_alt[r] ..
                         * rule_alt[r + 1]) */
    int32_t n_rules;
    int32_t root;
    gr_byteset *sets;   /* [n_sets] */
    int32_t n_sets;
};

#endif
