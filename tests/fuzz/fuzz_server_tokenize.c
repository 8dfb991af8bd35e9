/* libFuzzer harness: the server's POST /tokenize and /detokenize bodies (srv_tokenize) with the
 * stories260K model's vocabulary and no socket. The first byte picks the endpoint (bit 0:
 * /detokenize); the rest is the body. A refusal must be 400 with a one-line message, or 500 (out
 * of memory); an accepted body must give {"tokens": [ids in the vocabulary, or {"id", "piece"}]}
 * or {"content": a string}. */
#include <cjson/cJSON.h>

#include "edgelm/model.h"
#include "fuzz.h"
#include "server/tokenize.h"

/* Whether a /tokenize reply holds only ids of v, bare or as {"id", "piece"}. */
static bool ids_ok(const cJSON *o, const elm_vocab *v) {
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(o, "tokens"), *t;
    if (!cJSON_IsArray(tokens)) return false;
    cJSON_ArrayForEach(t, tokens) {
        const cJSON *id = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "id") : t;
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= v->n_tokens) return false;
        if (cJSON_IsObject(t) && !cJSON_GetObjectItemCaseSensitive(t, "piece")) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    if (size == 0) return 0;
    const bool detok = data[0] & 1;
    /* a copy of its own, so that reading past the body is caught by ASan */
    char *body = malloc(size - 1 ? size - 1 : 1);
    if (!body) return 0;
    memcpy(body, data + 1, size - 1);
    cJSON *out;
    char msg[512] = "";
    const int rc = srv_tokenize(body, size - 1, detok, &m->vocab, &out, msg, sizeof msg);
    free(body);
    if (rc == 0) {
        const bool ok = detok ? cJSON_IsString(cJSON_GetObjectItemCaseSensitive(out, "content"))
                              : ids_ok(out, &m->vocab);
        if (!ok) abort();
        cJSON_Delete(out);
    } else if (!((rc == 400 && msg[0] && !strchr(msg, '\n')) || rc == 500) || out) {
        fprintf(stderr, "refused with %d and message '%s'\n", rc, msg);
        abort();
    }
    return 0;
}
