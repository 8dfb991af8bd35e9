/* Log-probabilities into JSON (see logprobs.h). */
#include <stdbool.h>
#include <string.h>

#include "core/utf8.h"
#include "server/logprobs.h"

/* The token's text (valid UTF-8) and, when bytes is not NULL, its bytes as numbers. */
static bool add_token(cJSON *o, const elm_vocab *v, int32_t id, cJSON *bytes) {
    unsigned char b[256];
    char text[256 * 3 + 1];
    const size_t n = elm_token_to_bytes(v, id, (char *)b, sizeof b);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const int l = elm_utf8_len(b + i, n - i);
        if (l) {
            memcpy(text + k, b + i, (size_t)l);
            k += (size_t)l;
            i += (size_t)l;
        } else {
            memcpy(text + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
        if (bytes) {
            for (size_t j = i - (l ? (size_t)l : 1); j < i; j++)
                cJSON_AddItemToArray(bytes, cJSON_CreateNumber(b[j]));
        }
    }
    text[k] = '\0';
    return cJSON_AddStringToObject(o, "token", text) != NULL;
}

static cJSON *chat_entry(const elm_vocab *v, int32_t id, float lp) {
    cJSON *e = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
    if (!e || !bytes || !add_token(e, v, id, bytes)) {
        cJSON_Delete(e);
        cJSON_Delete(bytes);
        return NULL;
    }
    cJSON_AddNumberToObject(e, "logprob", lp);
    cJSON_AddItemToObject(e, "bytes", bytes);
    return e;
}

static cJSON *chat_json(const elm_vocab *v, const srv_logprob *r, int32_t n) {
    cJSON *o = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(o, "content");
    for (int32_t i = 0; content && i < n; i++) {
        cJSON *e = chat_entry(v, r[i].id, r[i].logprob), *top = cJSON_CreateArray();
        for (int32_t k = 0; top && k < r[i].n_top; k++)
            cJSON_AddItemToArray(top, chat_entry(v, r[i].top_id[k], r[i].top_logprob[k]));
        if (!e || !top) {
            cJSON_Delete(e);
            cJSON_Delete(top);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(e, "top_logprobs", top);
        cJSON_AddItemToArray(content, e);
    }
    return o;
}

static cJSON *completion_json(const elm_vocab *v, const srv_logprob *r, int32_t n) {
    cJSON *o = cJSON_CreateObject();
    cJSON *tokens = cJSON_AddArrayToObject(o, "tokens");
    cJSON *lps = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs");
    cJSON *offsets = cJSON_AddArrayToObject(o, "text_offset");
    for (int32_t i = 0; offsets && i < n; i++) {
        cJSON *t = cJSON_CreateObject(), *top = cJSON_CreateObject();
        if (!t || !top || !add_token(t, v, r[i].id, NULL)) {
            cJSON_Delete(t);
            cJSON_Delete(top);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToArray(tokens, cJSON_Duplicate(cJSON_GetObjectItem(t, "token"), false));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(r[i].logprob));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)r[i].text_start));
        for (int32_t k = 0; k < r[i].n_top; k++) {
            cJSON *alt = cJSON_CreateObject();
            if (alt && add_token(alt, v, r[i].top_id[k], NULL))
                cJSON_AddNumberToObject(top, cJSON_GetObjectItem(alt, "token")->valuestring,
                                        r[i].top_logprob[k]);
            cJSON_Delete(alt);
        }
        cJSON_AddItemToArray(tops, top);
        cJSON_Delete(t);
    }
    return o;
}

cJSON *srv_logprobs_json(const elm_vocab *v, const srv_logprob *r, int32_t n, bool chat) {
    return chat ? chat_json(v, r, n) : completion_json(v, r, n);
}
