/* Reading the fields of a JSON request body with a message that names the bad field, shared by
 * the parsers of the server's request bodies (request.c, responses.c, embeddings.c, tokenize.c).
 * Absent and null fields are the same: the caller's default stays. */
#ifndef EDGELM_SERVER_FIELDS_H
#define EDGELM_SERVER_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Writes the message to msg[cap]; returns 400, the status of a bad request. */
int srv_bad(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses a request body of len bytes into *root, a JSON object (the caller cJSON_Deletes it): 0,
 * or 400 with msg saying the body is not JSON, not an object, or holds a \u0000 escape (cJSON
 * would cut such a string short without a word, so it is refused on the raw text). */
int srv_parse_body(const char *body, size_t len, cJSON **root, char *msg, size_t cap);

/* The field `name` when present and not null, else NULL. */
const cJSON *srv_field(const cJSON *o, const char *name);

/* A number field in [lo, hi] (integer when `integer`) into *out; false with msg otherwise. */
bool srv_number(const cJSON *o, const char *name, double lo, double hi, bool integer, double *out,
                char *msg, size_t cap);

/* A true/false field into *out; false with msg otherwise. */
bool srv_boolean(const cJSON *o, const char *name, bool *out, char *msg, size_t cap);

#endif
