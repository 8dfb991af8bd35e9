/* libFuzzer harness: the server's POST /v1/embeddings bodies (srv_embed_parse) with the
 * stories260K model's vocabulary, no socket and no model run. The first byte is the most tokens
 * an input may have (1..256); the rest is the body. A refusal must be 400 with a one-line message,
 * or 500 (out of memory), and leave nothing allocated; an accepted body must give 1 to
 * SRV_EMBED_MAX_INPUTS inputs of 1 to that many ids of the vocabulary each, and dimensions in
 * 0..dim. */
#include "fuzz.h"
#include "server/embeddings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    if (size == 0) return 0;
    const int32_t max_tokens = 1 + data[0];
    /* a copy of its own, so that reading past the body is caught by ASan */
    char *body = malloc(size - 1 ? size - 1 : 1);
    if (!body) return 0;
    memcpy(body, data + 1, size - 1);
    srv_embed_request r;
    char msg[512] = "";
    const int rc = srv_embed_parse(body, size - 1, &m->vocab, m->hp.dim, max_tokens, &r, msg,
                                   sizeof msg);
    free(body);
    if (rc == 0) {
        bool ok = r.n >= 1 && r.n <= SRV_EMBED_MAX_INPUTS && r.dimensions >= 0 &&
                  r.dimensions <= m->hp.dim;
        for (int32_t k = 0; ok && k < r.n; k++) {
            ok = r.n_ids[k] >= 1 && r.n_ids[k] <= max_tokens;
            for (int32_t i = 0; ok && i < r.n_ids[k]; i++)
                ok = r.ids[k][i] >= 0 && r.ids[k][i] < m->vocab.n_tokens;
        }
        if (!ok) abort();
        srv_embed_request_free(&r);
    } else if (!((rc == 400 && msg[0] && !strchr(msg, '\n')) || rc == 500) || r.ids || r.n) {
        fprintf(stderr, "refused with %d and message '%s'\n", rc, msg);
        abort();
    }
    return 0;
}
