/* The bodies of POST /tokenize and POST /detokenize (llama-server's shapes) into their replies:
 * {"content", "add_special", "parse_special", "with_pieces"} -> {"tokens": [ids]} or, with
 * pieces, {"tokens": [{"id", "piece"}]} (a piece that is not whole UTF-8 as its byte values);
 * {"tokens": [ids]} -> {"content"}. */
#ifndef EDGELM_SERVER_TOKENIZE_H
#define EDGELM_SERVER_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "edgelm/vocab.h"

/* Parses a /tokenize (detok false) or /detokenize (detok true) body [len] against vocabulary v. Returns 0
 * with the reply in *out (the caller deletes it); 400 with a one-line message naming the field in
 * msg[cap]; 500 when out of memory. */
int srv_tokenize(const char *body, size_t len, bool detok, const elm_vocab *v, cJSON **out,
                 char *msg, size_t cap);

#endif
