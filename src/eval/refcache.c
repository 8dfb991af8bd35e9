/* The reference log-prob file (`--save-ref` / `--ref-logits`, docs/eval-ref-cache.md): the
 * baseline's float32 log-probs at every scored position, with the token ids they were computed
 * on, so many quantized files are compared against one baseline pass.
 *
 * Layout (little-endian, version 1): a 128-byte header, then int32 token ids [n_chunks * n_ctx],
 * then float32 log-probs [n_scored, n_vocab]. The checksum is 64-bit FNV-1a over the payload
 * (everything after the header) followed by the header with its checksum field zeroed, so it can
 * be computed while the rows stream out and closed once the header is known. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edgelm/eval.h"

#define HEADER_BYTES 128
static const char MAGIC[8] = {'E', 'L', 'M', 'R', 'E', 'F', 'L', 'P'};

/* header field offsets */
enum {
    OFF_VERSION = 8, OFF_N_VOCAB = 12, OFF_N_CTX = 16, OFF_N_CHUNKS = 20, OFF_N_SCORED = 24,
    OFF_N_TEXT = 32, OFF_MODEL_BYTES = 40, OFF_PPL = 48, OFF_PPL_STDERR = 56, OFF_MEAN_NLL = 64,
    OFF_CHECKSUM = 72, OFF_NAME = 80
};

/* Limits that keep every size below 2^62 bytes, checked before any arithmetic. */
#define MAX_VOCAB (1 << 24)
#define MAX_CTX (1 << 20)
#define MAX_CHUNKS (1 << 30)

#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static int64_t scored_per_chunk(int32_t n_ctx) { return n_ctx - n_ctx / 2 - 1; }

/* Payload bytes implied by the sizes (all within the limits above, so no overflow). */
static uint64_t payload_bytes(int32_t n_vocab, int32_t n_ctx, int32_t n_chunks) {
    const uint64_t tokens = (uint64_t)n_chunks * (uint64_t)n_ctx;
    const uint64_t rows = (uint64_t)n_chunks * (uint64_t)scored_per_chunk(n_ctx);
    return 4 * tokens + 4 * rows * (uint64_t)n_vocab;
}

/* Header encoding: the hosts edgelm runs on (x86-64, AArch64) are little-endian, so fields are
 * copied as they lie in memory. */
static void put32(unsigned char *h, int off, uint32_t v) { memcpy(h + off, &v, 4); }
static void put64(unsigned char *h, int off, uint64_t v) { memcpy(h + off, &v, 8); }
static void putf64(unsigned char *h, int off, double v) { memcpy(h + off, &v, 8); }
static uint32_t get32(const unsigned char *h, int off) { uint32_t v; memcpy(&v, h + off, 4); return v; }
static uint64_t get64(const unsigned char *h, int off) { uint64_t v; memcpy(&v, h + off, 8); return v; }
static double getf64(const unsigned char *h, int off) { double v; memcpy(&v, h + off, 8); return v; }

static void encode_header(const elm_ref_info *in, uint64_t checksum, unsigned char *h) {
    memset(h, 0, HEADER_BYTES);
    memcpy(h, MAGIC, sizeof MAGIC);
    put32(h, OFF_VERSION, in->version);
    put32(h, OFF_N_VOCAB, (uint32_t)in->n_vocab);
    put32(h, OFF_N_CTX, (uint32_t)in->n_ctx);
    put32(h, OFF_N_CHUNKS, (uint32_t)in->n_chunks);
    put64(h, OFF_N_SCORED, (uint64_t)in->n_scored);
    put64(h, OFF_N_TEXT, (uint64_t)in->n_text_tokens);
    put64(h, OFF_MODEL_BYTES, in->model_bytes);
    putf64(h, OFF_PPL, in->ppl);
    putf64(h, OFF_PPL_STDERR, in->ppl_stderr);
    putf64(h, OFF_MEAN_NLL, in->mean_nll);
    put64(h, OFF_CHECKSUM, checksum);
    memcpy(h + OFF_NAME, in->model_name, strnlen(in->model_name, ELM_REF_NAME_MAX - 1));
}

static void decode_header(const unsigned char *h, elm_ref_info *out) {
    memset(out, 0, sizeof *out);
    out->version = get32(h, OFF_VERSION);
    out->n_vocab = (int32_t)get32(h, OFF_N_VOCAB);
    out->n_ctx = (int32_t)get32(h, OFF_N_CTX);
    out->n_chunks = (int32_t)get32(h, OFF_N_CHUNKS);
    out->n_scored = (int64_t)get64(h, OFF_N_SCORED);
    out->n_text_tokens = (int64_t)get64(h, OFF_N_TEXT);
    out->model_bytes = get64(h, OFF_MODEL_BYTES);
    out->ppl = getf64(h, OFF_PPL);
    out->ppl_stderr = getf64(h, OFF_PPL_STDERR);
    out->mean_nll = getf64(h, OFF_MEAN_NLL);
    memcpy(out->model_name, h + OFF_NAME, ELM_REF_NAME_MAX - 1);
    out->model_name[ELM_REF_NAME_MAX - 1] = '\0';
}

/* Checksum of a complete file image: payload, then the header with the checksum field zeroed. */
static uint64_t checksum_of(const unsigned char *file, size_t size) {
    unsigned char h[HEADER_BYTES];
    memcpy(h, file, HEADER_BYTES);
    put64(h, OFF_CHECKSUM, 0);
    return fnv1a(fnv1a(FNV_BASIS, file + HEADER_BYTES, size - HEADER_BYTES), h, HEADER_BYTES);
}

/* ------------------------------------------------------------------------------ reading */

static elm_status validate(const char *path, const unsigned char *p, size_t size, elm_ref_info *info,
                           elm_error *err) {
    if (size < HEADER_BYTES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: truncated reference file (%zu bytes, the header alone is %d)",
                          path, size, HEADER_BYTES);
    if (memcmp(p, MAGIC, sizeof MAGIC) != 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm reference log-prob file (bad magic)", path);
    decode_header(p, info);
    if (info->version != ELM_REF_VERSION)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: reference file version %u not supported (this edgelm reads version %d)",
                          path, info->version, ELM_REF_VERSION);
    if (info->n_vocab < 1 || info->n_vocab > MAX_VOCAB || info->n_ctx < 4 || info->n_ctx > MAX_CTX ||
        info->n_chunks < 1 || info->n_chunks > MAX_CHUNKS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: header out of range (n_vocab %d, n_ctx %d, n_chunks %d)",
                          path, info->n_vocab, info->n_ctx, info->n_chunks);
    if (info->n_scored != (int64_t)info->n_chunks * scored_per_chunk(info->n_ctx) ||
        info->n_text_tokens < (int64_t)info->n_chunks * info->n_ctx)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: inconsistent header (%lld scored positions, %lld text tokens for %d chunks of %d)",
                          path, (long long)info->n_scored, (long long)info->n_text_tokens, info->n_chunks,
                          info->n_ctx);
    const uint64_t want = HEADER_BYTES + payload_bytes(info->n_vocab, info->n_ctx, info->n_chunks);
    if ((uint64_t)size < want)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: truncated reference file (%zu bytes, the header implies %llu)",
                          path, size, (unsigned long long)want);
    if ((uint64_t)size > want)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %zu bytes, the header implies %llu (trailing data)",
                          path, size, (unsigned long long)want);
    if (checksum_of(p, size) != get64(p, OFF_CHECKSUM))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: checksum mismatch (the file is corrupt)", path);
    return ELM_OK;
}

elm_status elm_ref_open(const char *path, elm_ref **out, elm_error *err) {
    *out = NULL;
    elm_ref *r = calloc(1, sizeof *r);
    if (!r) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    snprintf(r->path, sizeof r->path, "%s", path);
    elm_status st = elm_map_file(path, &r->map, &r->map_size, err);
    if (!st) st = validate(path, r->map, r->map_size, &r->info, err);
    if (st) {
        elm_ref_close(r);
        return st;
    }
    const unsigned char *p = r->map;
    r->tokens = (const int32_t *)(p + HEADER_BYTES);
    r->logprobs = (const float *)(r->tokens + (size_t)r->info.n_chunks * (size_t)r->info.n_ctx);
    *out = r;
    return ELM_OK;
}

void elm_ref_close(elm_ref *r) {
    if (!r) return;
    elm_unmap(r->map, r->map_size);
    free(r);
}

elm_status elm_ref_check(const elm_ref *r, int32_t n_vocab, int32_t n_ctx, const int32_t *tokens,
                         int64_t n_tokens, elm_error *err) {
    const elm_ref_info *in = &r->info;
    if (n_vocab != in->n_vocab)
        return elm_errorf(err, ELM_ERR_ARG, "%s: reference has a vocabulary of %d tokens, the model has %d",
                          r->path, in->n_vocab, n_vocab);
    if (n_ctx != in->n_ctx)
        return elm_errorf(err, ELM_ERR_ARG, "%s: reference was made with -c %d, this run uses -c %d",
                          r->path, in->n_ctx, n_ctx);
    const int64_t chunks = n_tokens / n_ctx;
    if (chunks != in->n_chunks)
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: reference was made from other tokens (%d chunks, this text has %lld)", r->path,
                          in->n_chunks, (long long)chunks);
    for (int64_t i = 0; i < chunks * n_ctx; i++)
        if (tokens[i] != r->tokens[i])
            return elm_errorf(err, ELM_ERR_ARG,
                              "%s: reference was made from other tokens (token %lld is %d here, %d there)",
                              r->path, (long long)i, tokens[i], r->tokens[i]);
    return ELM_OK;
}

/* ------------------------------------------------------------------------------ writing */

struct elm_ref_writer {
    elm_out out;
    elm_ref_info info;
    uint64_t hash;    /* FNV-1a state over the payload so far */
    int64_t rows;
    elm_error err;    /* first error of add(), reported by finish() */
};

static void writer_put(elm_ref_writer *w, const void *data, size_t n) {
    if (w->err.code) return;
    if (elm_out_write(&w->out, data, n, &w->err) == ELM_OK) w->hash = fnv1a(w->hash, data, n);
}

elm_status elm_ref_writer_open(const char *path, const elm_ref_info *info, const int32_t *tokens,
                               elm_ref_writer **out, elm_error *err) {
    *out = NULL;
    if (info->n_vocab < 1 || info->n_vocab > MAX_VOCAB || info->n_ctx < 4 || info->n_ctx > MAX_CTX ||
        info->n_chunks < 1 || info->n_chunks > MAX_CHUNKS)
        return elm_errorf(err, ELM_ERR_ARG, "%s: reference sizes out of range (n_vocab %d, n_ctx %d, n_chunks %d)",
                          path, info->n_vocab, info->n_ctx, info->n_chunks);
    elm_ref_writer *w = calloc(1, sizeof *w);
    if (!w) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    w->info = *info;
    w->info.version = ELM_REF_VERSION;
    w->info.n_scored = (int64_t)info->n_chunks * scored_per_chunk(info->n_ctx);
    w->info.model_name[ELM_REF_NAME_MAX - 1] = '\0';
    w->hash = FNV_BASIS;
    elm_error_clear(&w->err);
    elm_status st = elm_out_open(&w->out, path, err);
    if (st) {
        free(w);
        return st;
    }
    const unsigned char placeholder[HEADER_BYTES] = {0};
    if ((st = elm_out_write(&w->out, placeholder, HEADER_BYTES, err))) {
        elm_ref_writer_abort(w);
        return st;
    }
    writer_put(w, tokens, sizeof(int32_t) * (size_t)info->n_chunks * (size_t)info->n_ctx);
    *out = w;
    return ELM_OK;
}

void elm_ref_writer_add(elm_ref_writer *w, const float *logprobs) {
    if (w->err.code) return;
    if (w->rows >= w->info.n_scored) {
        elm_errorf(&w->err, ELM_ERR_ARG, "%s: more than %lld scored rows", w->out.path,
                   (long long)w->info.n_scored);
        return;
    }
    writer_put(w, logprobs, sizeof(float) * (size_t)w->info.n_vocab);
    w->rows++;
}

elm_status elm_ref_writer_finish(elm_ref_writer *w, const elm_ppl_result *ppl, elm_error *err) {
    elm_status st = w->err.code;
    if (st) {
        *err = w->err;
    } else if (w->rows != w->info.n_scored) {
        st = elm_errorf(err, ELM_ERR_ARG, "%s: %lld of %lld scored rows written", w->out.path,
                        (long long)w->rows, (long long)w->info.n_scored);
    }
    if (st) {
        elm_ref_writer_abort(w);
        return st;
    }
    w->info.ppl = ppl->ppl;
    w->info.ppl_stderr = ppl->ppl_stderr;
    w->info.mean_nll = ppl->mean_nll;
    unsigned char h[HEADER_BYTES];
    encode_header(&w->info, 0, h);
    put64(h, OFF_CHECKSUM, fnv1a(w->hash, h, HEADER_BYTES));
    if (fseek(w->out.f, 0, SEEK_SET) != 0) st = elm_errorf(err, ELM_ERR_IO, "%s: seek failed", w->out.path);
    if (!st) st = elm_out_write(&w->out, h, HEADER_BYTES, err);
    if (!st) st = elm_out_commit(&w->out, err);
    if (st) elm_out_abort(&w->out);
    free(w);
    return st;
}

void elm_ref_writer_abort(elm_ref_writer *w) {
    if (!w) return;
    elm_out_abort(&w->out);
    free(w);
}
