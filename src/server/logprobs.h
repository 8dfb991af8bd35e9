/* The log-probabilities of a reply's tokens (srv_logprob) in OpenAI's two shapes: chat's
 * {"content": [{token, logprob, bytes, top_logprobs}]} and completions' legacy {tokens,
 * token_logprobs, top_logprobs, text_offset}. */
#ifndef EDGELM_SERVER_LOGPROBS_H
#define EDGELM_SERVER_LOGPROBS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "edgelm/vocab.h"
#include "server/scheduler.h"

/* The "logprobs" object of a choice for records r [n] (chat's, or completions'); NULL when out of
 * memory. A token's "token" is its bytes as UTF-8, a piece of a character as U+FFFD; "bytes"
 * are exact. */
cJSON *srv_logprobs_json(const elm_vocab *v, const srv_logprob *r, int32_t n, bool chat);

#endif
