/* The fields of a request that constrain its reply (request.c): OpenAI's response_format
 * (json_object, json_schema with its schema) and llama-server's grammar (GBNF) and json_schema,
 * compiled into one grammar. */
#ifndef EDGELM_SERVER_CONSTRAINT_H
#define EDGELM_SERVER_CONSTRAINT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "edgelm/grammar.h"

/* The grammar body `root` asks for into *g (NULL: free text). Returns 0, 400 with a message
 * naming the field (a schema keyword the translation cannot enforce, a grammar that does not
 * parse, two constraints at once) or 500 when out of memory. */
int srv_constraint_parse(const cJSON *root, elm_grammar **g, char *msg, size_t cap);

#endif
