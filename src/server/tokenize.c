/* /tokenize and /detokenize (see tokenize.h). Tokens are made as the completions endpoint makes a
 * prompt's (elm_tokenize_special: add_special puts the model's BOS in front, parse_special turns
 * control tokens written in the text into those tokens); /detokenize drops the leading space a
 * SentencePiece vocabulary prepends, so that text tokenized and detokenized comes back as it was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "server/fields.h"
#include "server/tokenize.h"

/* A token as {"id", "piece"}: its text as printed, a control token's as written ("<s>"). */
static cJSON *piece_json(const elm_vocab *v, int32_t id) {
    char buf[512];
    size_t n;
    if (v->types && v->types[id] == ELM_TOKEN_CONTROL) {
        n = v->piece_len[id] < sizeof buf ? v->piece_len[id] : sizeof buf;
        memcpy(buf, v->pieces[id], n);
    } else n = elm_token_to_bytes(v, id, buf, sizeof buf);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    if (elm_utf8_valid(buf, n) && !memchr(buf, 0, n)) {
        buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
        cJSON_AddStringToObject(o, "piece", buf);
    } else {
        cJSON *bytes = cJSON_AddArrayToObject(o, "piece");
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)buf[i]));
    }
    return o;
}

static int tokenize(const cJSON *root, const elm_vocab *v, cJSON **out, char *msg, size_t cap) {
    const cJSON *content = srv_field(root, "content");
    if (!content) return srv_bad(msg, cap, "content: required");
    if (!cJSON_IsString(content)) return srv_bad(msg, cap, "content: expected a string");
    bool add_special = false, parse_special = true, with_pieces = false;
    if (!srv_boolean(root, "add_special", &add_special, msg, cap) ||
        !srv_boolean(root, "parse_special", &parse_special, msg, cap) ||
        !srv_boolean(root, "with_pieces", &with_pieces, msg, cap))
        return 400;
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_error err;
    if (elm_tokenize_alloc(v, content->valuestring, strlen(content->valuestring),
                           add_special && v->add_bos, parse_special, &ids, &n, &err))
        return err.code == ELM_ERR_NOMEM ? 500 : srv_bad(msg, cap, "content: %s", err.msg);
    *out = cJSON_CreateObject();
    cJSON *tokens = cJSON_AddArrayToObject(*out, "tokens");
    for (int64_t i = 0; i < n; i++)
        cJSON_AddItemToArray(tokens, with_pieces ? piece_json(v, ids[i]) : cJSON_CreateNumber(ids[i]));
    free(ids);
    return 0;
}

static int detokenize(const cJSON *root, const elm_vocab *v, cJSON **out, char *msg, size_t cap) {
    const cJSON *tokens = srv_field(root, "tokens");
    if (!tokens) return srv_bad(msg, cap, "tokens: required");
    if (!cJSON_IsArray(tokens)) return srv_bad(msg, cap, "tokens: expected an array of token ids");
    const int n = cJSON_GetArraySize(tokens);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!ids) return 500;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tokens) {
        const bool number = cJSON_IsNumber(t) && isfinite(t->valuedouble);
        if (!number || t->valuedouble != floor(t->valuedouble)) {
            free(ids);
            return srv_bad(msg, cap, "tokens[%d]: expected an integer token id", i);
        }
        if (t->valuedouble < 0 || t->valuedouble >= v->n_tokens) {
            free(ids);
            return srv_bad(msg, cap, "tokens[%d]: %.15g is not in the vocabulary (0..%d)", i,
                           t->valuedouble, v->n_tokens - 1);
        }
        ids[i++] = (int32_t)t->valuedouble;
    }
    char *text = elm_detokenize(v, ids, n, v->add_space_prefix);
    free(ids);
    if (!text) return 500;
    *out = cJSON_CreateObject();
    cJSON_AddStringToObject(*out, "content", text);
    free(text);
    return 0;
}

int srv_tokenize(const char *body, size_t len, bool detok, const elm_vocab *v, cJSON **out,
                 char *msg, size_t cap) {
    *out = NULL;
    cJSON *root;
    int rc = srv_parse_body(body, len, &root, msg, cap);
    if (rc) return rc;
    rc = detok ? detokenize(root, v, out, msg, cap) : tokenize(root, v, out, msg, cap);
    cJSON_Delete(root);
    if (!rc && !*out) rc = 500;
    if (rc) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    if (rc == 500) snprintf(msg, cap, "out of memory");
    return rc;
}
