/* POST /v1/embeddings (see embeddings.h): the body's inputs into token ids, each embedded in turn
 * by the embedder's own context, the vectors written as JSON numbers (9 significant digits: a
 * float exactly) or as base64 of their little-endian float32 bytes (what the openai clients ask
 * for by default and decode). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/embeddings.h"
#include "server/fields.h"

/* ---- the request ---- */

void srv_embed_request_free(srv_embed_request *r) {
    for (int32_t i = 0; r->ids && i < r->n; i++) free(r->ids[i]);
    free(r->ids);
    free(r->n_ids);
    memset(r, 0, sizeof *r);
}

/* What the parse of one body needs and fills. */
typedef struct parse {
    const elm_vocab *v;
    int32_t max_tokens;
    srv_embed_request *r;
    char *msg;
    size_t cap;
} parse;

/* Whether j is a whole number. */
static bool is_integer(const cJSON *j) {
    return cJSON_IsNumber(j) && isfinite(j->valuedouble) && j->valuedouble == floor(j->valuedouble);
}

/* Input k has n tokens: not none, not over the most an input may have (where names it). */
static int check_count(const parse *ps, int64_t n, const char *where) {
    if (n == 0) return srv_bad(ps->msg, ps->cap, "%s: no tokens", where);
    if (n > ps->max_tokens)
        return srv_bad(ps->msg, ps->cap, "%s: %lld tokens, over the %d an input may have", where,
                       (long long)n, ps->max_tokens);
    return 0;
}

/* Input k from the token ids of array a. */
static int take_ids(const parse *ps, const cJSON *a, int32_t k, const char *where) {
    const int n = cJSON_GetArraySize(a);
    int rc = check_count(ps, n, where);
    if (rc) return rc;
    if (!(ps->r->ids[k] = malloc(sizeof(int32_t) * (size_t)n))) return 500;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, a) {
        if (!is_integer(t))
            return srv_bad(ps->msg, ps->cap, "%s[%d]: expected an integer token id", where, i);
        if (t->valuedouble < 0 || t->valuedouble >= ps->v->n_tokens)
            return srv_bad(ps->msg, ps->cap, "%s[%d]: %.15g is not in the vocabulary (0..%d)",
                           where, i, t->valuedouble, ps->v->n_tokens - 1);
        ps->r->ids[k][i++] = (int32_t)t->valuedouble;
    }
    ps->r->n_ids[k] = n;
    return 0;
}

/* Input k from a text, tokenized as elm_embed_tokenize does. */
static int take_text(const parse *ps, const char *text, int32_t k, const char *where) {
    elm_error err;
    int64_t n = 0;
    if (elm_embed_tokenize(ps->v, text, strlen(text), &ps->r->ids[k], &n, &err))
        return err.code == ELM_ERR_NOMEM ? 500 : srv_bad(ps->msg, ps->cap, "%s: %s", where, err.msg);
    const int rc = check_count(ps, n, where);
    if (!rc) ps->r->n_ids[k] = (int32_t)n;
    return rc;
}

/* "input": a string, an array of strings, an array of token ids or an array of arrays of them. */
static int parse_input(const parse *ps, const cJSON *in) {
    srv_embed_request *r = ps->r;
    if (!cJSON_IsString(in) && !cJSON_IsArray(in))
        return srv_bad(ps->msg, ps->cap, "input: expected a string, an array of strings, an "
                       "array of token ids or an array of arrays of token ids");
    if (cJSON_IsArray(in) && !in->child) return srv_bad(ps->msg, ps->cap, "input: an empty array");
    const bool many = cJSON_IsArray(in) && (cJSON_IsString(in->child) || cJSON_IsArray(in->child));
    const int n = many ? cJSON_GetArraySize(in) : 1;
    if (n > SRV_EMBED_MAX_INPUTS)
        return srv_bad(ps->msg, ps->cap, "input: %d inputs, over the %d a request may have", n,
                       SRV_EMBED_MAX_INPUTS);
    r->ids = calloc((size_t)n, sizeof *r->ids);
    r->n_ids = calloc((size_t)n, sizeof *r->n_ids);
    if (!r->ids || !r->n_ids) return 500;
    r->n = n;
    if (!many) return cJSON_IsString(in) ? take_text(ps, in->valuestring, 0, "input")
                                         : take_ids(ps, in, 0, "input");
    const bool texts = cJSON_IsString(in->child);
    int32_t k = 0;
    int rc = 0;
    const cJSON *e;
    char where[32];
    cJSON_ArrayForEach(e, in) {
        snprintf(where, sizeof where, "input[%d]", k);
        if (texts && !cJSON_IsString(e))
            return srv_bad(ps->msg, ps->cap, "%s: expected a string, as input[0] is", where);
        if (!texts && !cJSON_IsArray(e))
            return srv_bad(ps->msg, ps->cap, "%s: expected an array of token ids, as input[0] is",
                           where);
        if ((rc = texts ? take_text(ps, e->valuestring, k, where) : take_ids(ps, e, k, where)))
            return rc;
        k++;
    }
    return 0;
}

static int parse_fields(const parse *ps, const cJSON *root, int32_t dim) {
    const cJSON *model = srv_field(root, "model"), *format = srv_field(root, "encoding_format");
    if (model && !cJSON_IsString(model)) return srv_bad(ps->msg, ps->cap, "model: expected a string");
    if (format && !(cJSON_IsString(format) && (!strcmp(format->valuestring, "float") ||
                                               !strcmp(format->valuestring, "base64"))))
        return srv_bad(ps->msg, ps->cap, "encoding_format: expected \"float\" or \"base64\"");
    ps->r->base64 = format && !strcmp(format->valuestring, "base64");
    double dims = 0;
    if (!srv_number(root, "dimensions", 1, dim, true, &dims, ps->msg, ps->cap)) return 400;
    ps->r->dimensions = (int32_t)dims;
    const cJSON *in = srv_field(root, "input");
    return in ? parse_input(ps, in) : srv_bad(ps->msg, ps->cap, "input: required");
}

int srv_embed_parse(const char *body, size_t len, const elm_vocab *v, int32_t dim,
                    int32_t max_tokens, srv_embed_request *r, char *msg, size_t cap) {
    memset(r, 0, sizeof *r);
    cJSON *root;
    int rc = srv_parse_body(body, len, &root, msg, cap);
    if (rc) return rc;
    const parse ps = {.v = v, .max_tokens = max_tokens, .r = r, .msg = msg, .cap = cap};
    rc = parse_fields(&ps, root, dim);
    cJSON_Delete(root);
    if (rc) srv_embed_request_free(r);
    if (rc == 500) snprintf(msg, cap, "out of memory");
    return rc;
}

/* ---- the embedder ---- */

struct srv_embedder {
    const elm_model *m;
    int32_t max_tokens, n_threads;
    elm_type type_k, type_v;
    bool ggml_rounding;
    pthread_mutex_t lock; /* one request at a time, on c */
    elm_context *c;       /* NULL until the first request */
};

srv_embedder *srv_embedder_new(const elm_model *m, int32_t max_tokens, int32_t n_threads,
                               elm_type type_k, elm_type type_v, bool ggml_rounding) {
    srv_embedder *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (max_tokens > m->hp.n_ctx_train) max_tokens = m->hp.n_ctx_train;
    *e = (srv_embedder){.m = m, .max_tokens = max_tokens > 0 ? max_tokens : 1,
                        .n_threads = n_threads, .type_k = type_k, .type_v = type_v,
                        .ggml_rounding = ggml_rounding};
    pthread_mutex_init(&e->lock, NULL);
    return e;
}

void srv_embedder_free(srv_embedder *e) {
    if (!e) return;
    elm_context_free(e->c);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

int32_t srv_embedder_max_tokens(const srv_embedder *e) { return e->max_tokens; }

/* A context with room for n tokens, under the lock: the one there, or a new one at least twice
 * as large (up to max_tokens), so that growing inputs make few. A non-causal model takes its
 * input in one batch; the others in batches of up to 512. */
static elm_status context_for(srv_embedder *e, int32_t n, elm_error *err) {
    if (e->c && elm_context_n_ctx(e->c) >= n) return ELM_OK;
    int32_t n_ctx = e->c ? 2 * elm_context_n_ctx(e->c) : 64;
    if (n_ctx < n) n_ctx = n;
    if (n_ctx > e->max_tokens) n_ctx = e->max_tokens;
    elm_context_free(e->c);
    e->c = NULL;
    const elm_context_params p = {
        .n_ctx = n_ctx, .n_batch = e->m->hp.non_causal || n_ctx < 512 ? n_ctx : 512,
        .n_threads = e->n_threads, .type_k = e->type_k, .type_v = e->type_v,
        .ggml_rounding = e->ggml_rounding};
    return elm_context_new(e->m, &p, &e->c, err);
}

/* Every input's embedding into v [r->n, dim]. */
static elm_status embed_all(srv_embedder *e, const srv_embed_request *r, float *v, int32_t dim,
                            elm_error *err) {
    int32_t longest = 0;
    for (int32_t k = 0; k < r->n; k++)
        if (r->n_ids[k] > longest) longest = r->n_ids[k];
    pthread_mutex_lock(&e->lock);
    elm_status st = context_for(e, longest, err);
    for (int32_t k = 0; k < r->n && !st; k++)
        st = elm_embed(e->c, r->ids[k], r->n_ids[k], NULL, v + (size_t)k * dim, err);
    pthread_mutex_unlock(&e->lock);
    return st;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* v [n] as base64 of its little-endian float32 bytes, malloc'd. */
static char *base64_floats(const float *v, int32_t n) {
    const size_t bytes = (size_t)n * 4;
    unsigned char *raw = malloc(bytes ? bytes : 1);
    char *s = malloc((bytes + 2) / 3 * 4 + 1), *p = s;
    if (!raw || !s) {
        free(raw);
        free(s);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; b++) raw[4 * i + b] = (unsigned char)(u >> (8 * b));
    }
    for (size_t i = 0; i < bytes; i += 3) {
        const uint32_t w = (uint32_t)raw[i] << 16 | (i + 1 < bytes ? (uint32_t)raw[i + 1] << 8 : 0) |
                           (i + 2 < bytes ? raw[i + 2] : 0);
        *p++ = b64[w >> 18 & 63];
        *p++ = b64[w >> 12 & 63];
        *p++ = i + 1 < bytes ? b64[w >> 6 & 63] : '=';
        *p++ = i + 2 < bytes ? b64[w & 63] : '=';
    }
    *p = '\0';
    free(raw);
    return s;
}

/* v [n] as a JSON array (9 significant digits; 0 for what is not finite), malloc'd. */
static char *json_floats(const float *v, int32_t n) {
    char *s = malloc((size_t)n * 18 + 3), *p = s;
    if (!s) return NULL;
    *p++ = '[';
    for (int32_t i = 0; i < n; i++)
        p += sprintf(p, "%s%.9g", i ? "," : "", isfinite(v[i]) ? v[i] : 0.0f);
    *p++ = ']';
    *p = '\0';
    return s;
}

/* The first d floats of v [dim] scaled to unit length again (OpenAI's "dimensions"). */
static void shorten(float *v, int32_t d) {
    double sum = 0;
    for (int32_t i = 0; i < d; i++) sum += (double)v[i] * v[i];
    const float scale = sum > 0 ? (float)(1.0 / sqrt(sum)) : 0.0f;
    for (int32_t i = 0; i < d; i++) v[i] *= scale;
}

static cJSON *response(const srv_embed_request *r, float *v, int32_t dim, const char *model_id) {
    const int32_t d = r->dimensions ? r->dimensions : dim;
    int64_t tokens = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int32_t k = 0; k < r->n; k++) {
        float *vk = v + (size_t)k * dim;
        if (d < dim) shorten(vk, d);
        char *text = r->base64 ? base64_floats(vk, d) : json_floats(vk, d);
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "object", "embedding");
        cJSON_AddNumberToObject(item, "index", k);
        if (!text || !cJSON_AddItemToObject(item, "embedding", r->base64 ? cJSON_CreateString(text)
                                                                         : cJSON_CreateRaw(text)) ||
            !cJSON_AddItemToArray(data, item)) {
            free(text);
            cJSON_Delete(item);
            cJSON_Delete(o);
            return NULL;
        }
        free(text);
        tokens += r->n_ids[k];
    }
    cJSON_AddStringToObject(o, "model", model_id);
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)tokens);
    cJSON_AddNumberToObject(u, "total_tokens", (double)tokens);
    return o;
}

int srv_embeddings(srv_embedder *e, const char *body, size_t len, const char *model_id,
                   cJSON **out, char *msg, size_t cap) {
    *out = NULL;
    const int32_t dim = elm_embed_dim(e->m);
    srv_embed_request r;
    int rc = srv_embed_parse(body, len, &e->m->vocab, dim, e->max_tokens, &r, msg, cap);
    if (rc) return rc;
    float *v = malloc(sizeof *v * (size_t)r.n * (size_t)dim);
    elm_error err;
    if (v && embed_all(e, &r, v, dim, &err)) snprintf(msg, cap, "%s", err.msg);
    else if (!v || !(*out = response(&r, v, dim, model_id))) snprintf(msg, cap, "out of memory");
    if (!*out) rc = 500;
    free(v);
    srv_embed_request_free(&r);
    return rc;
}
