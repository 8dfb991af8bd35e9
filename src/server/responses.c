/* The Responses API as a translation of the chat completions path (see responses.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/strbuf.h"
#include "server/fields.h"
#include "server/responses.h"

/* Copies field `from` of in to `to` of out when present. */
static void copy_field(const cJSON *in, const char *from, cJSON *out, const char *to) {
    const cJSON *f = srv_field(in, from);
    if (f) cJSON_AddItemToObject(out, to, cJSON_Duplicate(f, true));
}

/* A message's content: a string, or the texts of an array of parts joined. NULL: not that. */
static char *content_text(const cJSON *c) {
    if (cJSON_IsString(c)) return strdup(c->valuestring);
    if (!cJSON_IsArray(c)) return NULL;
    elm_sbuf t = {0};
    elm_sb_puts(&t, "");
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(text)) {
            free(t.s);
            return NULL;
        }
        elm_sb_puts(&t, text->valuestring);
    }
    return elm_sb_finish(&t);
}

/* Drops a last message that holds only reasoning (a reasoning item no call followed: the
 * templates drop the reasoning before an answer). */
static void drop_lone_reasoning(cJSON *msgs) {
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(last, "tool_calls");
    if (calls && !calls->child) cJSON_Delete(cJSON_DetachItemViaPointer(msgs, last));
}

/* Input item i into the chat messages. */
static int input_item(const cJSON *item, int i, cJSON *msgs, char *msg, size_t cap) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "message";
    if (!cJSON_IsObject(item)) return srv_bad(msg, cap, "input[%d]: expected an object", i);
    if (strcmp(t, "function_call")) drop_lone_reasoning(msgs);
    if (!strcmp(t, "reasoning")) {
        /* the calls that follow it take it as their reasoning_content */
        char *text = content_text(cJSON_GetObjectItemCaseSensitive(item, "content"));
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddNullToObject(m, "content");
        cJSON_AddStringToObject(m, "reasoning_content", text ? text : "");
        cJSON_AddArrayToObject(m, "tool_calls");
        cJSON_AddItemToArray(msgs, m);
        free(text);
        return 0;
    }
    if (!strcmp(t, "message")) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(item, "role");
        char *text = content_text(cJSON_GetObjectItemCaseSensitive(item, "content"));
        if (!cJSON_IsString(role) || !text) {
            free(text);
            return srv_bad(msg, cap, "input[%d]: expected a role and a content (a string or "
                                     "text parts)", i);
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", strcmp(role->valuestring, "developer") ? role->valuestring
                                                                                 : "system");
        cJSON_AddStringToObject(m, "content", text);
        free(text);
        cJSON_AddItemToArray(msgs, m);
        return 0;
    }
    if (!strcmp(t, "function_call")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "call_id");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(item, "arguments");
        if (!cJSON_IsString(id) || !cJSON_IsString(name) || !cJSON_IsString(args))
            return srv_bad(msg, cap, "input[%d]: a function_call needs call_id, name and "
                                     "arguments (strings)", i);
        /* calls in a row are one assistant message */
        cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
        cJSON *calls = cJSON_GetObjectItemCaseSensitive(last, "tool_calls");
        if (!calls) {
            last = cJSON_CreateObject();
            cJSON_AddStringToObject(last, "role", "assistant");
            cJSON_AddNullToObject(last, "content");
            calls = cJSON_AddArrayToObject(last, "tool_calls");
            cJSON_AddItemToArray(msgs, last);
        }
        cJSON *c = cJSON_CreateObject(), *f = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(c, "id", id->valuestring);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddStringToObject(f, "name", name->valuestring);
        cJSON_AddStringToObject(f, "arguments", args->valuestring);
        cJSON_AddItemToArray(calls, c);
        return 0;
    }
    if (!strcmp(t, "function_call_output")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "call_id");
        char *out = content_text(cJSON_GetObjectItemCaseSensitive(item, "output"));
        if (!cJSON_IsString(id) || !out) {
            free(out);
            return srv_bad(msg, cap, "input[%d]: a function_call_output needs call_id and output", i);
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "tool");
        cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
        cJSON_AddStringToObject(m, "content", out);
        free(out);
        cJSON_AddItemToArray(msgs, m);
        return 0;
    }
    return srv_bad(msg, cap, "input[%d].type: expected \"message\", \"function_call\", "
                             "\"function_call_output\" or \"reasoning\"", i);
}

/* Flat function tools ({"type": "function", "name", "description", "parameters"}) as chat's. */
static int tools(const cJSON *in, cJSON *out, char *msg, size_t cap) {
    const cJSON *t = srv_field(in, "tools");
    if (!t) return 0;
    if (!cJSON_IsArray(t)) return srv_bad(msg, cap, "tools: expected an array");
    cJSON *arr = cJSON_AddArrayToObject(out, "tools");
    int i = 0;
    for (const cJSON *x = t->child; x; x = x->next, i++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(x, "type");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function"))
            return srv_bad(msg, cap, "tools[%d].type: only \"function\" tools are served", i);
        cJSON *c = cJSON_CreateObject(), *f = cJSON_AddObjectToObject(c, "function");
        cJSON_AddStringToObject(c, "type", "function");
        copy_field(x, "name", f, "name");
        copy_field(x, "description", f, "description");
        copy_field(x, "parameters", f, "parameters");
        cJSON_AddItemToArray(arr, c);
    }
    const cJSON *choice = srv_field(in, "tool_choice");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(choice, "name");
    if (cJSON_IsObject(choice) && cJSON_IsString(name)) {
        cJSON *c = cJSON_AddObjectToObject(out, "tool_choice");
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(c, "function"), "name", name->valuestring);
    } else {
        copy_field(in, "tool_choice", out, "tool_choice");
    }
    return 0;
}

/* text.format into response_format. */
static void text_format(const cJSON *in, cJSON *out) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(srv_field(in, "text"), "format");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(f, "type");
    if (!cJSON_IsString(type)) return;
    cJSON *rf = cJSON_AddObjectToObject(out, "response_format");
    cJSON_AddStringToObject(rf, "type", type->valuestring);
    if (strcmp(type->valuestring, "json_schema")) return;
    cJSON *js = cJSON_AddObjectToObject(rf, "json_schema");
    copy_field(f, "name", js, "name");
    copy_field(f, "schema", js, "schema");
    copy_field(f, "strict", js, "strict");
}

int srv_responses_to_chat(const char *body, size_t len, char **chat_body, char *msg, size_t cap) {
    *chat_body = NULL;
    cJSON *in;
    int rc = srv_parse_body(body, len, &in, msg, cap);
    if (rc) return rc;
    cJSON *out = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(out, "messages");
    const cJSON *input = srv_field(in, "input"), *instr = srv_field(in, "instructions");
    if (srv_field(in, "previous_response_id"))
        rc = srv_bad(msg, cap, "previous_response_id: edgelm keeps no responses; send the whole "
                               "conversation as input");
    else if (instr && !cJSON_IsString(instr))
        rc = srv_bad(msg, cap, "instructions: expected a string");
    else if (!input) rc = srv_bad(msg, cap, "input: required");
    else if (!cJSON_IsString(input) && !cJSON_IsArray(input))
        rc = srv_bad(msg, cap, "input: expected a string or an array of items");
    else if (cJSON_IsArray(input) && !input->child)
        rc = srv_bad(msg, cap, "input: an empty array (no message to answer)");
    if (!rc && instr) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", instr->valuestring);
        cJSON_AddItemToArray(msgs, m);
    }
    if (!rc && cJSON_IsString(input)) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", input->valuestring);
        cJSON_AddItemToArray(msgs, m);
    }
    int i = 0;
    for (const cJSON *item = cJSON_IsArray(input) ? input->child : NULL; !rc && item;
         item = item->next, i++)
        rc = input_item(item, i, msgs, msg, cap);
    drop_lone_reasoning(msgs);
    if (!rc) rc = tools(in, out, msg, cap);
    if (!rc) {
        static const char *same[] = {"model", "temperature", "top_p", "top_k", "min_p", "seed",
                                     "stream", "parallel_tool_calls", "repeat_penalty",
                                     "grammar"};
        for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) copy_field(in, same[k], out, same[k]);
        copy_field(in, "max_output_tokens", out, "max_tokens");
        copy_field(srv_field(in, "reasoning"), "effort", out, "reasoning_effort");
        text_format(in, out);
        if (!(*chat_body = cJSON_PrintUnformatted(out))) rc = 500;
    }
    cJSON_Delete(in);
    cJSON_Delete(out);
    return rc;
}

/* An output item {"type": type, "id": "PREFIX_ID"}. */
static cJSON *new_item(const char *type, const char *prefix, const char *id) {
    cJSON *o = cJSON_CreateObject();
    char item_id[96];
    snprintf(item_id, sizeof item_id, "%s_%s", prefix, id);
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "id", item_id);
    return o;
}

/* {"type": "message", ...} holding text, with `status`. */
static cJSON *message_item(const char *id, const char *text, const char *status) {
    cJSON *m = new_item("message", "msg", id), *content = cJSON_CreateArray();
    cJSON_AddStringToObject(m, "status", status);
    cJSON_AddStringToObject(m, "role", "assistant");
    if (text) {
        cJSON *part = cJSON_CreateObject();
        cJSON_AddStringToObject(part, "type", "output_text");
        cJSON_AddStringToObject(part, "text", text);
        cJSON_AddItemToObject(part, "annotations", cJSON_CreateArray());
        cJSON_AddItemToArray(content, part);
    }
    cJSON_AddItemToObject(m, "content", content);
    return m;
}

/* A chat tool call ({"id", "function": {"name", "arguments"}}) as a function_call item. */
static cJSON *call_item(const cJSON *tc, const char *status, bool with_arguments) {
    const cJSON *f = cJSON_GetObjectItem(tc, "function");
    const char *call_id = cJSON_GetStringValue(cJSON_GetObjectItem(tc, "id"));
    char item_id[96];
    snprintf(item_id, sizeof item_id, "fc_%s", call_id ? call_id : "");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", "function_call");
    cJSON_AddStringToObject(c, "id", item_id);
    cJSON_AddStringToObject(c, "call_id", call_id ? call_id : "");
    cJSON_AddStringToObject(c, "name", cJSON_GetStringValue(cJSON_GetObjectItem(f, "name")));
    cJSON_AddStringToObject(c, "arguments",
                            with_arguments ? cJSON_GetStringValue(cJSON_GetObjectItem(f, "arguments"))
                                           : "");
    cJSON_AddStringToObject(c, "status", status);
    return c;
}

/* The response object around `output`: status from the chat finish_reason (NULL: in progress),
 * usage from the chat usage (NULL: none yet), and edgelm's extension of the chat object (NULL:
 * none; --docs: the citations) as it is. */
static cJSON *response(const char *id, const char *model, double created, const char *finish,
                       const cJSON *usage, const cJSON *ext, cJSON *output) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", id);
    cJSON_AddStringToObject(r, "object", "response");
    cJSON_AddNumberToObject(r, "created_at", created);
    const bool cut = finish && !strcmp(finish, "length");
    cJSON_AddStringToObject(r, "status", !finish ? "in_progress" : cut ? "incomplete" : "completed");
    if (cut) cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "incomplete_details"), "reason",
                                     "max_output_tokens");
    else cJSON_AddNullToObject(r, "incomplete_details");
    cJSON_AddNullToObject(r, "error");
    cJSON_AddStringToObject(r, "model", model ? model : "");
    cJSON_AddItemToObject(r, "output", output);
    if (usage) {
        const double in = cJSON_GetNumberValue(cJSON_GetObjectItem(usage, "prompt_tokens"));
        const double out = cJSON_GetNumberValue(cJSON_GetObjectItem(usage, "completion_tokens"));
        const cJSON *det = cJSON_GetObjectItem(usage, "prompt_tokens_details");
        cJSON *u = cJSON_AddObjectToObject(r, "usage");
        cJSON_AddNumberToObject(u, "input_tokens", in);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens",
                                cJSON_GetNumberValue(cJSON_GetObjectItem(det, "cached_tokens")));
        cJSON_AddNumberToObject(u, "output_tokens", out);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"),
                                "reasoning_tokens", 0);
        cJSON_AddNumberToObject(u, "total_tokens", in + out);
    }
    if (ext) cJSON_AddItemToObject(r, "edgelm", cJSON_Duplicate(ext, true));
    return r;
}

/* {"type": "reasoning", ...} holding text (NULL: none yet), with `status`. */
static cJSON *reasoning_item(const char *id, const char *text, const char *status) {
    cJSON *r = new_item("reasoning", "rs", id), *content = cJSON_CreateArray();
    cJSON_AddItemToObject(r, "summary", cJSON_CreateArray());
    if (text) {
        cJSON *part = cJSON_CreateObject();
        cJSON_AddStringToObject(part, "type", "reasoning_text");
        cJSON_AddStringToObject(part, "text", text);
        cJSON_AddItemToArray(content, part);
    }
    cJSON_AddItemToObject(r, "content", content);
    cJSON_AddStringToObject(r, "status", status);
    return r;
}

/* The items of a reply: its reasoning (when any: gpt-oss's analysis channel), its text (when
 * any) and its calls. */
static cJSON *output_items(const char *id, const char *reasoning, const char *text,
                           const cJSON *calls) {
    cJSON *out = cJSON_CreateArray();
    if (reasoning && *reasoning)
        cJSON_AddItemToArray(out, reasoning_item(id, reasoning, "completed"));
    if (text && *text) cJSON_AddItemToArray(out, message_item(id, text, "completed"));
    const cJSON *tc;
    cJSON_ArrayForEach(tc, calls) cJSON_AddItemToArray(out, call_item(tc, "completed", true));
    return out;
}

cJSON *srv_response_from_chat(const cJSON *completion, const char *id) {
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(completion, "choices"), 0);
    const cJSON *m = cJSON_GetObjectItem(c, "message");
    return response(id, cJSON_GetStringValue(cJSON_GetObjectItem(completion, "model")),
                    cJSON_GetNumberValue(cJSON_GetObjectItem(completion, "created")),
                    cJSON_GetStringValue(cJSON_GetObjectItem(c, "finish_reason")),
                    cJSON_GetObjectItem(completion, "usage"),
                    cJSON_GetObjectItem(completion, "edgelm"),
                    output_items(id,
                                 cJSON_GetStringValue(cJSON_GetObjectItem(m, "reasoning_content")),
                                 cJSON_GetStringValue(cJSON_GetObjectItem(m, "content")),
                                 cJSON_GetObjectItem(m, "tool_calls")));
}

struct srv_resp_stream {
    char id[64], model[128];
    double created;
    int seq;
    bool started, message_open;
    bool reasoning_open; /* a reasoning item (output 0) is being streamed */
    elm_sbuf reasoning;  /* its text so far */
    elm_sbuf text;
};

srv_resp_stream *srv_resp_stream_new(const char *id, const char *model) {
    srv_resp_stream *rs = calloc(1, sizeof *rs);
    if (!rs) return NULL;
    snprintf(rs->id, sizeof rs->id, "%s", id);
    snprintf(rs->model, sizeof rs->model, "%s", model ? model : "");
    rs->created = (double)time(NULL);
    return rs;
}

void srv_resp_stream_free(srv_resp_stream *rs) {
    if (!rs) return;
    free(rs->text.s);
    free(rs->reasoning.s);
    free(rs);
}

/* A new event of `type` in events, numbered. */
static cJSON *event(srv_resp_stream *rs, cJSON *events, const char *type) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddNumberToObject(e, "sequence_number", rs->seq++);
    cJSON_AddItemToArray(events, e);
    return e;
}

/* The fields that place an event in part 0 of item PREFIX_ID, output `index`. */
static void at_part(const srv_resp_stream *rs, cJSON *e, const char *prefix, int index) {
    char item_id[96];
    snprintf(item_id, sizeof item_id, "%s_%s", prefix, rs->id);
    cJSON_AddStringToObject(e, "item_id", item_id);
    cJSON_AddNumberToObject(e, "output_index", index);
    cJSON_AddNumberToObject(e, "content_index", 0);
}

/* A text event's place: the message item, after the reasoning item when there is one. */
static void at_text(srv_resp_stream *rs, cJSON *e) { at_part(rs, e, "msg", rs->reasoning.len > 0); }

/* A reasoning event's place: the reasoning item, output 0. */
static void at_reasoning(srv_resp_stream *rs, cJSON *e) { at_part(rs, e, "rs", 0); }

/* Closes the reasoning item being streamed (its text done, the item done). */
static void close_reasoning(srv_resp_stream *rs, cJSON *events) {
    if (!rs->reasoning_open) return;
    rs->reasoning_open = false;
    const char *text = rs->reasoning.s ? rs->reasoning.s : "";
    cJSON *e = event(rs, events, "response.reasoning_text.done");
    at_reasoning(rs, e);
    cJSON_AddStringToObject(e, "text", text);
    e = event(rs, events, "response.output_item.done");
    cJSON_AddNumberToObject(e, "output_index", 0);
    cJSON_AddItemToObject(e, "item", reasoning_item(rs->id, text, "completed"));
}

static cJSON *text_part(const char *text) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "output_text");
    cJSON_AddStringToObject(p, "text", text);
    cJSON_AddItemToObject(p, "annotations", cJSON_CreateArray());
    return p;
}

bool srv_resp_stream_chunk(srv_resp_stream *rs, const cJSON *chunk, cJSON *events) {
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(chunk, "choices"), 0);
    const cJSON *d = cJSON_GetObjectItem(c, "delta");
    const char *delta = cJSON_GetStringValue(cJSON_GetObjectItem(d, "content"));
    const char *thought = cJSON_GetStringValue(cJSON_GetObjectItem(d, "reasoning_content"));
    const char *finish = cJSON_GetStringValue(cJSON_GetObjectItem(c, "finish_reason"));
    if (!rs->started) {
        rs->started = true;
        cJSON_AddItemToObject(event(rs, events, "response.created"), "response",
                              response(rs->id, rs->model, rs->created, NULL, NULL, NULL,
                                       cJSON_CreateArray()));
    }
    /* reasoning comes first (gpt-oss's analysis channel): its own item, output 0 */
    if (thought && *thought && !rs->message_open) {
        if (!rs->reasoning_open) {
            rs->reasoning_open = true;
            cJSON *e = event(rs, events, "response.output_item.added");
            cJSON_AddNumberToObject(e, "output_index", 0);
            cJSON_AddItemToObject(e, "item", reasoning_item(rs->id, NULL, "in_progress"));
        }
        elm_sb_puts(&rs->reasoning, thought);
        cJSON *e = event(rs, events, "response.reasoning_text.delta");
        at_reasoning(rs, e);
        cJSON_AddStringToObject(e, "delta", thought);
    }
    if ((delta && *delta) || finish) close_reasoning(rs, events);
    if (delta && *delta) {
        if (!rs->message_open) {
            rs->message_open = true;
            cJSON *e = event(rs, events, "response.output_item.added");
            cJSON_AddNumberToObject(e, "output_index", rs->reasoning.len > 0);
            cJSON_AddItemToObject(e, "item", message_item(rs->id, NULL, "in_progress"));
            e = event(rs, events, "response.content_part.added");
            at_text(rs, e);
            cJSON_AddItemToObject(e, "part", text_part(""));
        }
        elm_sb_puts(&rs->text, delta);
        cJSON *e = event(rs, events, "response.output_text.delta");
        at_text(rs, e);
        cJSON_AddStringToObject(e, "delta", delta);
    }
    if (!finish) return !rs->text.oom && !rs->reasoning.oom;
    const char *text = rs->text.s ? rs->text.s : "";
    if (rs->message_open) {
        cJSON *e = event(rs, events, "response.output_text.done");
        at_text(rs, e);
        cJSON_AddStringToObject(e, "text", text);
        e = event(rs, events, "response.content_part.done");
        at_text(rs, e);
        cJSON_AddItemToObject(e, "part", text_part(text));
        e = event(rs, events, "response.output_item.done");
        cJSON_AddNumberToObject(e, "output_index", rs->reasoning.len > 0);
        cJSON_AddItemToObject(e, "item", message_item(rs->id, text, "completed"));
    }
    const cJSON *calls = cJSON_GetObjectItem(d, "tool_calls"), *tc;
    int k = (rs->reasoning.len > 0) + rs->message_open;
    cJSON_ArrayForEach(tc, calls) {
        cJSON *e = event(rs, events, "response.output_item.added");
        cJSON_AddNumberToObject(e, "output_index", k);
        cJSON_AddItemToObject(e, "item", call_item(tc, "in_progress", false));
        cJSON *item = call_item(tc, "completed", true);
        e = event(rs, events, "response.function_call_arguments.done");
        cJSON_AddStringToObject(e, "item_id", cJSON_GetStringValue(cJSON_GetObjectItem(item, "id")));
        cJSON_AddNumberToObject(e, "output_index", k);
        cJSON_AddStringToObject(e, "arguments",
                                cJSON_GetStringValue(cJSON_GetObjectItem(item, "arguments")));
        e = event(rs, events, "response.output_item.done");
        cJSON_AddNumberToObject(e, "output_index", k++);
        cJSON_AddItemToObject(e, "item", item);
    }
    const bool cut = !strcmp(finish, "length"); /* the last event says how it ended */
    cJSON_AddItemToObject(event(rs, events, cut ? "response.incomplete" : "response.completed"),
                          "response",
                          response(rs->id, rs->model, rs->created, finish,
                                   cJSON_GetObjectItem(chunk, "usage"),
                                   cJSON_GetObjectItem(chunk, "edgelm"),
                                   output_items(rs->id, rs->reasoning.s, text, calls)));
    return !rs->text.oom && !rs->reasoning.oom;
}
