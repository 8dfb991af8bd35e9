/* Session files (see session.h): the cached tokens and the KV cache rows as the cache stores them,
 * then a hybrid's recurrent state (its one sequence's, at the last token), behind a header that
 * fingerprints the model and a checksum over the whole file. */
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/fileio.h"
#include "edgelm/session.h"
#include "model/context_state.h"

#define MAGIC "EDGELMSS"
#define HEADER_BYTES 72

typedef struct session_header {
    char magic[8];
    uint32_t version, header_bytes;
    int32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim;
    uint64_t params, fingerprint;
    uint32_t type_k, type_v;
    int32_t n_tokens;
    uint32_t reserved;
} session_header;

_Static_assert(sizeof(session_header) == HEADER_BYTES, "session header is 72 bytes");


static session_header header_for(const elm_context *c, int32_t n_tokens) {
    const elm_hparams *hp = &c->m->hp;
    session_header h = {.version = ELM_SESSION_VERSION, .header_bytes = HEADER_BYTES,
                        .n_vocab = hp->n_vocab, .dim = hp->dim, .n_layers = hp->n_layers,
                        .n_heads = hp->n_heads, .n_kv_heads = hp->n_kv_heads,
                        .head_dim = hp->head_dim, .params = (uint64_t)elm_model_params(c->m),
                        .fingerprint = elm_model_fingerprint(c->m), .type_k = c->type_k,
                        .type_v = c->type_v, .n_tokens = n_tokens};
    memcpy(h.magic, MAGIC, 8);
    return h;
}

/* Session files hold every position of every layer: a ring (sliding-window layers) has not. */
static elm_status refuse_ring(const elm_context *c, const char *path, elm_error *err) {
    if (!c->swa_rows) return ELM_OK;
    return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: sessions of a sliding-window KV cache are not "
                      "supported (swa_full keeps every position)", path);
}

/* Positions of layer l in a file of n_tokens: all, none for a recurrent layer or one reading
 * another's rows (Gemma 4). */
static size_t layer_rows(const elm_context *c, int l, int32_t n_tokens) {
    return c->kv[l].own && c->kv[l].rows > 0 ? (size_t)n_tokens : 0;
}

static size_t state_bytes(const elm_context *c) { return sizeof(float) * (size_t)c->state_floats; }

static size_t file_bytes(const elm_context *c, int32_t n_tokens) {
    size_t kv = 0;
    for (int l = 0; l < c->m->hp.n_layers; l++)
        kv += layer_rows(c, l, n_tokens) * (c->kv[l].k_row + c->kv[l].v_row);
    return HEADER_BYTES + sizeof(int32_t) * (size_t)n_tokens + kv + state_bytes(c) +
           sizeof(uint64_t);
}

elm_status elm_session_save(const elm_context *c, const char *path, elm_error *err) {
    const session_header h = header_for(c, c->n_past);
    elm_out o;
    elm_status st = refuse_ring(c, path, err);
    if (!st && c->state_floats && c->seq_pos[0] != c->n_past)
        st = elm_errorf(err, ELM_ERR_ARG, "%s: the recurrent state stands at position %d, the "
                        "cache at %d", path, c->seq_pos[0], c->n_past);
    if (!st) st = elm_out_open(&o, path, err);
    if (st) return st;
    uint64_t sum = elm_fnv1a(ELM_FNV1A_INIT, &h, sizeof h);
    st = elm_out_write(&o, &h, sizeof h, err);
    const size_t tok_bytes = sizeof(int32_t) * (size_t)c->n_past;
    sum = elm_fnv1a(sum, c->tokens, tok_bytes);
    if (!st) st = elm_out_write(&o, c->tokens, tok_bytes, err);
    for (int l = 0; l < c->m->hp.n_layers && !st; l++) {
        const unsigned char *k = elm_kv_layer_k(c, l), *v = elm_kv_layer_v(c, l);
        const size_t rows = layer_rows(c, l, c->n_past), kb = rows * c->kv[l].k_row,
                     vb = rows * c->kv[l].v_row;
        sum = elm_fnv1a(elm_fnv1a(sum, k, kb), v, vb);
        st = elm_out_write(&o, k, kb, err);
        if (!st) st = elm_out_write(&o, v, vb, err);
    }
    if (!st && c->state_floats) {
        sum = elm_fnv1a(sum, c->state, state_bytes(c));
        st = elm_out_write(&o, c->state, state_bytes(c), err);
    }
    if (!st) st = elm_out_write(&o, &sum, sizeof sum, err);
    if (st) {
        elm_out_abort(&o);
        return st;
    }
    return elm_out_commit(&o, err);
}

/* Header checks that need nothing but the header and the context. */
static elm_status check_header(const elm_context *c, const char *path, const session_header *h,
                               size_t size, elm_error *err) {
    const session_header want = header_for(c, h->n_tokens);
    if (memcmp(h->magic, MAGIC, 8) != 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm session file (bad magic)", path);
    if (h->version != ELM_SESSION_VERSION || h->header_bytes != HEADER_BYTES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: session version %u not supported (expected %d)",
                          path, h->version, ELM_SESSION_VERSION);
    if (h->n_vocab != want.n_vocab || h->dim != want.dim || h->n_layers != want.n_layers ||
        h->n_heads != want.n_heads || h->n_kv_heads != want.n_kv_heads ||
        h->head_dim != want.head_dim || h->params != want.params)
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: session is for another model (vocab %d, dim %d, %d layers, %d/%d "
                          "heads of %d) than %s (vocab %d, dim %d, %d layers, %d/%d heads of %d)",
                          path, h->n_vocab, h->dim, h->n_layers, h->n_heads, h->n_kv_heads,
                          h->head_dim, c->m->path, want.n_vocab, want.dim, want.n_layers,
                          want.n_heads, want.n_kv_heads, want.head_dim);
    if (h->fingerprint != want.fingerprint)
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: session is for a model of the same shape but other weights than %s",
                          path, c->m->path);
    if (h->type_k != want.type_k || h->type_v != want.type_v) {
        const elm_type_traits *tk = elm_type_get(h->type_k), *tv = elm_type_get(h->type_v);
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: session KV cache is %s/%s, this context's is %s/%s "
                          "(--cache-type-k/--cache-type-v)",
                          path, tk ? tk->name : "?", tv ? tv->name : "?",
                          elm_type_get(want.type_k)->name, elm_type_get(want.type_v)->name);
    }
    if (h->n_tokens < 0 || h->n_tokens > c->n_ctx)
        return elm_errorf(err, h->n_tokens < 0 ? ELM_ERR_FORMAT : ELM_ERR_ARG,
                          "%s: session holds %d tokens, the context %d (raise -c)", path,
                          h->n_tokens, c->n_ctx);
    if (size != file_bytes(c, h->n_tokens))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: session file is %zu bytes, its header implies %zu (truncated or "
                          "corrupted)",
                          path, size, file_bytes(c, h->n_tokens));
    return ELM_OK;
}

elm_status elm_session_load(elm_context *c, const char *path, elm_error *err) {
    void *map = NULL;
    size_t size = 0;
    elm_status st = refuse_ring(c, path, err);
    if (!st) st = elm_map_file(path, &map, &size, err);
    if (st) return st;
    session_header h;
    if (size < HEADER_BYTES + sizeof(uint64_t)) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm session file (%zu bytes)", path, size);
        goto done;
    }
    memcpy(&h, map, sizeof h);
    if ((st = check_header(c, path, &h, size, err))) goto done;
    uint64_t stored;
    memcpy(&stored, (const char *)map + size - sizeof stored, sizeof stored);
    if (elm_fnv1a(ELM_FNV1A_INIT, map, size - sizeof stored) != stored) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: session checksum mismatch (corrupted file)", path);
        goto done;
    }
    const unsigned char *p = (const unsigned char *)map + HEADER_BYTES;
    const int32_t n = h.n_tokens;
    for (int32_t i = 0; i < n; i++) {
        int32_t id;
        memcpy(&id, p + sizeof id * (size_t)i, sizeof id);
        if (id < 0 || id >= c->m->hp.n_vocab) {
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: session token %d has id %d, out of range 0..%d",
                            path, i, id, c->m->hp.n_vocab - 1);
            goto done;
        }
    }
    memcpy(c->tokens, p, sizeof(int32_t) * (size_t)n);
    p += sizeof(int32_t) * (size_t)n;
    for (int l = 0; l < c->m->hp.n_layers; l++) {
        const size_t rows = layer_rows(c, l, n), kb = rows * c->kv[l].k_row,
                     vb = rows * c->kv[l].v_row;
        memcpy(elm_kv_layer_k(c, l), p, kb);
        memcpy(elm_kv_layer_v(c, l), p + kb, vb);
        p += kb + vb;
    }
    c->n_past = n;
    if (c->state_floats) { /* the one sequence's state, and no checkpoint of another past */
        memcpy(c->state, p, state_bytes(c));
        c->seq_pos[0] = n;
        for (int i = 0; i < ELM_STATE_CKPTS; i++) c->ckpt_pos[i] = -1;
    }
done:
    elm_unmap(map, size);
    return st;
}
