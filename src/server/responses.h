/* OpenAI's Responses API (POST /v1/responses) over the chat completions path: a request is
 * translated into the chat request it stands for (input items into messages, instructions into
 * the system message, flat function tools into chat tools, text.format into response_format),
 * served as that, and the chat completion (or its stream of chunks) translated back into a
 * response object (or its stream of events). Text in and out, function calls, streaming. */
#ifndef EDGELM_SERVER_RESPONSES_H
#define EDGELM_SERVER_RESPONSES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The chat completions body (malloc'd JSON text) that Responses body [len] asks for. Returns 0,
 * 400 with a message naming the field (an input item or tool type edgelm does not serve,
 * previous_response_id: no response is stored), or 500. */
int srv_responses_to_chat(const char *body, size_t len, char **chat_body, char *msg, size_t cap);

/* The response object of a chat completion (choices[0], usage), as response `id`. NULL when out
 * of memory. */
cJSON *srv_response_from_chat(const cJSON *completion, const char *id);

/* A stream of response events made from a stream of chat chunks. */
typedef struct srv_resp_stream srv_resp_stream;
srv_resp_stream *srv_resp_stream_new(const char *id, const char *model);
void srv_resp_stream_free(srv_resp_stream *rs);

/* The events chat chunk `chunk` stands for, appended to the array `events` (each an object with
 * "type" and "sequence_number"; the first call adds response.created, the chunk with a
 * finish_reason closes the items and adds response.completed, or response.incomplete at
 * max_output_tokens). False when out of memory. */
bool srv_resp_stream_chunk(srv_resp_stream *rs, const cJSON *chunk, cJSON *events);

#endif
