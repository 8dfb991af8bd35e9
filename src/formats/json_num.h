/* Reading integers out of cJSON values, which holds every number as a double: loaders use this to
 * accept only exact, non-negative integers (a shape of 1.5 or -3 is a format error, not a cast). */
#ifndef EDGELM_FORMATS_JSON_NUM_H
#define EDGELM_FORMATS_JSON_NUM_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/* Largest integer a double holds exactly (2^53): the ceiling of anything read from JSON. */
#define ELM_JSON_INT_MAX (UINT64_C(1) << 53)

/* True when item is a JSON number that is an integer in [0, max] (max <= ELM_JSON_INT_MAX);
 * stores it in *out. False for NULL, non-numbers, fractions, negatives and values above max. */
bool elm_json_uint(const cJSON *item, uint64_t max, uint64_t *out);

#endif
