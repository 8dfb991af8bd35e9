/* GGUF reader (src/formats/gguf_read.c over gguf_parse.c): the fixture loads with the right
 * hyper-parameters and vocab, and every class of bad input fails with a non-OK status and a message
 * naming the file and the problem. Bad files are patched copies of stories260K-f32.gguf (offsets
 * found by walking its header here, independently of the library) or tiny synthetic GGUFs built
 * here, written into a mkdtemp folder that is removed at the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/model.h"
#include "formats/loaders.h"
#include "model/builder.h"

static char *tmpdir;
static uint8_t *orig;
static size_t orig_size;

/* ---- an independent walk of the fixture's layout ---- */

#define MAXN 64
static struct {
    size_t n_tensors_at, n_kv_at;
    int n_kv;
    char key[MAXN][64];
    size_t kv_at[MAXN];    /* key length field */
    size_t vtype_at[MAXN]; /* value type field */
    size_t val_at[MAXN];   /* value (arrays: element type field) */
    int n_t;
    size_t t_at[MAXN], t_ndims_at[MAXN], t_ne_at[MAXN], t_type_at[MAXN], t_off_at[MAXN];
    size_t data_at;
} L;

static uint64_t get64(size_t at) {
    uint64_t v;
    memcpy(&v, orig + at, 8);
    return v;
}
static uint32_t get32(size_t at) {
    uint32_t v;
    memcpy(&v, orig + at, 4);
    return v;
}

static size_t skip(size_t p, uint32_t type) {
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) return p + 8 + get64(p);
    if (type != 9) return p + sz[type];
    uint32_t et = get32(p);
    uint64_t n = get64(p + 4);
    p += 12;
    for (uint64_t i = 0; i < n; i++) p = skip(p, et);
    return p;
}

static void walk(void) {
    size_t p = 8;
    L.n_tensors_at = p;
    L.n_kv_at = p + 8;
    L.n_t = (int)get64(p);
    L.n_kv = (int)get64(p + 8);
    p += 16;
    for (int i = 0; i < L.n_kv; i++) {
        L.kv_at[i] = p;
        uint64_t len = get64(p);
        snprintf(L.key[i], sizeof L.key[i], "%.*s", (int)len, (const char *)orig + p + 8);
        p += 8 + len;
        L.vtype_at[i] = p;
        L.val_at[i] = p + 4;
        p = skip(p + 4, get32(p));
    }
    for (int i = 0; i < L.n_t; i++) {
        L.t_at[i] = p;
        p += 8 + get64(p);
        L.t_ndims_at[i] = p;
        uint32_t nd = get32(p);
        L.t_ne_at[i] = p + 4;
        p += 4 + 8 * nd;
        L.t_type_at[i] = p;
        L.t_off_at[i] = p + 4;
        p += 12;
    }
    L.data_at = (p + 31) / 32 * 32;
}

static int t_index(const char *name) {
    for (int i = 0; i < L.n_t; i++)
        if (get64(L.t_at[i]) == strlen(name) && !memcmp(orig + L.t_at[i] + 8, name, strlen(name)))
            return i;
    return 0;
}

static int kv_index(const char *key) {
    for (int i = 0; i < L.n_kv; i++)
        if (!strcmp(L.key[i], key)) return i;
    return -1;
}

/* ---- writing variants ---- */

static const char *write_file(const char *name, const void *buf, size_t len) {
    static char path[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    FILE *f = fopen(path[k], "wb");
    if (!f || fwrite(buf, 1, len, f) != len) {
        perror(path[k]);
        exit(1);
    }
    fclose(f);
    return path[k];
}

/* Copy of the fixture with `n` bytes at `at` replaced, cut to `len` bytes (0: whole). */
static const char *patched(const char *name, size_t at, const void *bytes, size_t n, size_t len) {
    uint8_t *buf = malloc(orig_size);
    memcpy(buf, orig, orig_size);
    if (n) memcpy(buf + at, bytes, n);
    const char *p = write_file(name, buf, len ? len : orig_size);
    free(buf);
    return p;
}

static const char *patch32(const char *name, size_t at, uint32_t v) {
    return patched(name, at, &v, 4, 0);
}
static const char *patch64(const char *name, size_t at, uint64_t v) {
    return patched(name, at, &v, 8, 0);
}

/* Loads `path` through elm_model_load (or elm_load_gguf directly when `direct`), mapped and read
 * into memory; expects failure with `code` (or any error when code is ELM_OK) and a message
 * holding the path and `phrase`. */
static void expect_fail_as(const char *what, const char *path, bool direct, elm_status code,
                           const char *phrase) {
    for (int in_memory = 0; in_memory < 2; in_memory++) {
        elm_error err;
        elm_error_clear(&err);
        elm_status st;
        elm_model *m = NULL;
        if (direct) {
            m = elm_model_new(path, "gguf", &err);
            st = elm_load_gguf(m, path, in_memory, &err);
        } else {
            const elm_load_opts opts = {.in_memory = in_memory};
            st = elm_model_load(path, &opts, &m, &err);
        }
        elm_model_free(m);
        CHECK(st != ELM_OK, "%s: loaded without error", what);
        if (code != ELM_OK)
            CHECK(st == code, "%s: status %d, expected %d (%s)", what, st, code, err.msg);
        CHECK(strstr(err.msg, path) != NULL, "%s: message does not name the file: %s", what,
              err.msg);
        CHECK(strstr(err.msg, phrase) != NULL, "%s: message lacks '%s': %s", what, phrase,
              err.msg);
    }
}

static void expect_fail(const char *what, const char *path, elm_status code, const char *phrase) {
    expect_fail_as(what, path, false, code, phrase);
}

/* ---- a tiny synthetic GGUF builder ---- */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n) {
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void put32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(buf *b, uint64_t v) { put(b, &v, 8); }
static void putstr(buf *b, const char *s) {
    put64(b, strlen(s));
    put(b, s, strlen(s));
}
static void kv_str(buf *b, const char *k, const char *v) {
    putstr(b, k);
    put32(b, 8);
    putstr(b, v);
}
static void header(buf *b, uint64_t n_tensors, uint64_t n_kv) {
    put(b, "GGUF", 4);
    put32(b, 3);
    put64(b, n_tensors);
    put64(b, n_kv);
}
/* tokenizer.ggml.tokens as an array of `elem_type` holding three elements */
static void kv_tokens(buf *b, uint32_t elem_type) {
    putstr(b, "tokenizer.ggml.tokens");
    put32(b, 9);
    put32(b, elem_type);
    put64(b, 3);
    for (int i = 0; i < 3; i++) {
        if (elem_type == 8) putstr(b, i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else put32(b, (uint32_t)i);
    }
}

/* ---- the cases ---- */

static void test_good(void) {
    elm_model *m = NULL;
    elm_error err;
    elm_status st = elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err);
    CHECK(st == ELM_OK, "load: %s", err.msg);
    if (st) return;
    const elm_hparams *hp = &m->hp;
    CHECK(hp->dim == 64 && hp->n_layers == 5 && hp->n_heads == 8 && hp->n_kv_heads == 4 &&
              hp->ffn_dim == 172 && hp->n_vocab == 512 && hp->n_ctx_train == 512,
          "hparams dim %d layers %d heads %d/%d ffn %d vocab %d ctx %d", hp->dim, hp->n_layers,
          hp->n_heads, hp->n_kv_heads, hp->ffn_dim, hp->n_vocab, hp->n_ctx_train);
    CHECK(hp->rms_eps > 0.99e-5f && hp->rms_eps < 1.01e-5f && hp->rope_theta == 10000.0f &&
              hp->rope_dim == 8 && hp->head_dim == 8 && !strcmp(hp->arch, "llama"),
          "eps %g theta %g rope dim %d", hp->rms_eps, hp->rope_theta, hp->rope_dim);
    CHECK(m->n_tensors == 48 && !strcmp(m->name, "llama") && !strcmp(m->format, "gguf") &&
              m->file_type == 0,
          "%d tensors, name '%s'", m->n_tensors, m->name);
    /* output.weight is stored although tied: it stays a tensor of its own */
    const elm_tensor *out = elm_model_find(m, "output.weight");
    CHECK(out && m->output == out && m->output != m->tok_embd && out->type == ELM_TYPE_F32 &&
              out->ne[0] == 64 && out->ne[1] == 512,
          "output.weight");
    /* tensor data points at the file's bytes (data section + offset) */
    const elm_tensor *q = elm_model_find(m, "blk.0.attn_q.weight");
    CHECK(q && q->nbytes == 64 * 64 * 4 &&
              !memcmp(q->data, orig + L.data_at + get64(L.t_off_at[3]), q->nbytes),
          "blk.0.attn_q.weight bytes differ from the file");
    const elm_vocab *v = &m->vocab;
    CHECK(v->n_tokens == 512 && v->bos_id == 1 && v->eos_id == 2 && v->unk_id == 0 &&
              v->pad_id == -1 && v->add_bos && v->scores && v->types[0] == ELM_TOKEN_UNKNOWN &&
              !strcmp(v->pieces[1], "<s>"),
          "vocab: %d tokens, bos %d eos %d unk %d pad %d", v->n_tokens, v->bos_id, v->eos_id,
          v->unk_id, v->pad_id);
    elm_model_free(m);

    elm_vocab voc;
    st = elm_vocab_load(fixture("vocab/ggml-vocab-llama-spm.gguf"), &voc, &err);
    CHECK(st == ELM_OK, "vocab-only load: %s", err.msg);
    if (!st) {
        CHECK(voc.n_tokens == 32000 && voc.bos_id == 1 && voc.eos_id == 2 && voc.add_bos &&
                  !voc.add_eos && voc.scores && !strcmp(voc.pieces[2], "</s>"),
              "llama-spm vocab: %d tokens, bos %d", voc.n_tokens, voc.bos_id);
        elm_vocab_free(&voc);
    }
    st = elm_vocab_load(fixture("vocab/ggml-vocab-gpt-2.gguf"), &voc, &err);
    CHECK(st == ELM_OK && voc.n_tokens == 50257 && !strcmp(voc.model, "gpt2") && voc.merges,
          "gpt2 vocab: %d %s", st, err.msg);
    if (!st) elm_vocab_free(&voc);
    st = elm_vocab_load(fixture("stories260K/stories260K-f32.gguf"), &voc, &err);
    CHECK(st == ELM_OK && voc.n_tokens == 512, "vocab of the model file: %s", err.msg);
    if (!st) elm_vocab_free(&voc);
}

static void test_header(void) {
    char missing[600];
    snprintf(missing, sizeof missing, "%s/missing.gguf", tmpdir);
    expect_fail("missing file", missing, ELM_ERR_IO, "No such file");
    expect_fail_as("wrong magic", patched("magic.gguf", 0, "GGUX", 4, 0), true, ELM_ERR_FORMAT,
                   "bad magic");
    expect_fail("version 1", patch32("v1.gguf", 4, 1), ELM_ERR_UNSUPPORTED, "version 1");
    expect_fail("version 4", patch32("v4.gguf", 4, 4), ELM_ERR_UNSUPPORTED, "version 4");
    expect_fail("n_kv 2^60", patch64("nkv.gguf", L.n_kv_at, UINT64_C(1) << 60), ELM_ERR_FORMAT,
                "key/value pairs");
    /* one key too many: the first tensor info is read as a key and its bytes run off the end */
    expect_fail("n_kv off by one", patch64("nkv1.gguf", L.n_kv_at, (uint64_t)L.n_kv + 1),
                ELM_ERR_FORMAT, "past end of file");
    expect_fail_as("empty file", write_file("empty.gguf", "", 0), true, ELM_ERR_FORMAT, "bad magic");
    expect_fail("n_tensors 2^62", patch64("nt.gguf", L.n_tensors_at, UINT64_C(1) << 62),
                ELM_ERR_FORMAT, "4611686018427387904 tensors, which would run past end of file");
    expect_fail("n_tensors 2^32", patch64("nt32.gguf", L.n_tensors_at, UINT64_C(1) << 32),
                ELM_ERR_FORMAT, "tensors");
    /* a version 2 file is read like version 3 */
    elm_model *m = NULL;
    elm_error err;
    elm_status st = elm_model_load(patch32("v2.gguf", 4, 2), NULL, &m, &err);
    CHECK(st == ELM_OK, "version 2: %s", err.msg);
    elm_model_free(m);
}

static void test_truncated(void) {
    const struct { const char *what; size_t at; } cuts[] = {
        {"in the magic", 3},
        {"in the header", 10},
        {"in the first key", L.kv_at[0] + 12},
        {"in the token strings", L.val_at[0] + 300},
        {"in the scores", L.val_at[kv_index("tokenizer.ggml.scores")] + 100},
        {"in the last value", L.val_at[L.n_kv - 1] + 2},
        {"in a tensor name", L.t_at[2] + 10},
        {"in a tensor's dims", L.t_ne_at[5] + 3},
        {"before the data", L.data_at},
        {"in the data", L.data_at + 1000},
        {"one byte short", orig_size - 1},
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "truncated %s (%zu bytes)", cuts[i].what, cuts[i].at);
        const char *p = patched("cut.gguf", 0, NULL, 0, cuts[i].at);
        const char *phrase = cuts[i].at < 4 ? "bad magic" : "past end of file";
        expect_fail_as(what, p, true, ELM_ERR_FORMAT, phrase);
    }
    /* every cut through the header, key/values and tensor infos fails cleanly */
    int loaded = 0;
    for (size_t at = 4; at < L.data_at + 64; at += 53) {
        elm_model *m = elm_model_new("x", "gguf", NULL);
        elm_error err;
        const char *p = patched("cut.gguf", 0, NULL, 0, at);
        if (elm_load_gguf(m, p, at % 2, &err) == ELM_OK || !strstr(err.msg, p)) loaded++;
        elm_model_free(m);
    }
    CHECK(loaded == 0, "%d truncated copies loaded or gave a message without the path", loaded);
}

static void test_kv(void) {
    /* key length far past the end of the file */
    expect_fail("string length past EOF", patch64("strlen.gguf", L.kv_at[0], UINT64_C(1) << 40),
                ELM_ERR_FORMAT, "string of length 1099511627776 runs past end of file");
    int arch = kv_index("general.architecture");
    expect_fail("string value length past EOF", patch64("strval.gguf", L.val_at[arch], orig_size),
                ELM_ERR_FORMAT, "runs past end of file");
    expect_fail("unknown value type", patch32("vtype.gguf", L.vtype_at[arch], 13), ELM_ERR_FORMAT,
                "unknown value type 13");
    int toks = kv_index("tokenizer.ggml.tokens");
    expect_fail("array count past EOF", patch64("count.gguf", L.val_at[toks] + 4, UINT64_C(1) << 59),
                ELM_ERR_FORMAT, "array of 576460752303423488 elements runs past end of file");
    expect_fail("array of unknown type", patch32("etype.gguf", L.val_at[toks], 99), ELM_ERR_FORMAT,
                "unknown type 99");
    /* same-size element types swapped: the file stays well formed, the tokenizer refuses it */
    expect_fail("scores as i32",
                patch32("scores.gguf", L.val_at[kv_index("tokenizer.ggml.scores")], 5),
                ELM_ERR_FORMAT,
                "'tokenizer.ggml.scores' is an array of i32, expected an array of f32");
    expect_fail("token_type as f32",
                patch32("ttype.gguf", L.val_at[kv_index("tokenizer.ggml.token_type")], 6),
                ELM_ERR_FORMAT, "'tokenizer.ggml.token_type' is an array of f32");
    expect_fail("block_count as f32",
                patch32("bc.gguf", L.vtype_at[kv_index("llama.block_count")], 6),
                ELM_ERR_FORMAT, "'llama.block_count' has type f32, expected an integer");
    expect_fail("tokenizer model as u32",
                patch32("tm.gguf", L.vtype_at[kv_index("tokenizer.ggml.model")], 4), ELM_ERR_FORMAT,
                "past end of file");

    /* tokens of the wrong element type, in a synthetic vocab-only file */
    buf b = {0};
    header(&b, 0, 2);
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_tokens(&b, 5);
    const char *p = write_file("tokens-i32.gguf", b.b, b.n);
    elm_vocab v;
    elm_error err;
    elm_status st = elm_vocab_load(p, &v, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, p) &&
              strstr(err.msg,
                     "'tokenizer.ggml.tokens' is an array of i32, expected an array of string"),
          "tokens as i32: %d %s", st, err.msg);

    /* a key given twice: neither copy may silently win */
    b.n = 0;
    header(&b, 0, 3);
    kv_str(&b, "general.architecture", "llama");
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_str(&b, "general.architecture", "qwen2");
    expect_fail("architecture twice", write_file("arch2.gguf", b.b, b.n), ELM_ERR_FORMAT,
                "metadata key 'general.architecture' appears more than once");
    b.n = 0;
    header(&b, 0, 3);
    kv_str(&b, "tokenizer.ggml.model", "llama");
    kv_tokens(&b, 8);
    kv_tokens(&b, 8);
    p = write_file("tokens2.gguf", b.b, b.n);
    st = elm_vocab_load(p, &v, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, p) &&
              strstr(err.msg, "metadata key 'tokenizer.ggml.tokens' appears more than once"),
          "tokens twice: %d %s", st, err.msg);

    /* a key holding a newline (found by fuzz_gguf): the message stays one line */
    b.n = 0;
    header(&b, 0, 1);
    putstr(&b, "general.n\ne");
    put32(&b, 99);
    p = write_file("newline.gguf", b.b, b.n);
    expect_fail("newline in a key", p, ELM_ERR_FORMAT, "key 'general.n?e' has unknown value type 99");

    /* hyper-parameters that parse but cannot run */
    const uint32_t nan = 0x7fc00000u, inf = 0x7f800000u;
    int eps = kv_index("llama.attention.layer_norm_rms_epsilon");
    CHECK(eps >= 0, "fixture has no rms epsilon key");
    if (eps >= 0) {
        expect_fail("rms_eps NaN", patch32("eps-nan.gguf", L.val_at[eps], nan), ELM_ERR_FORMAT,
                    "hyper-parameter rms_eps = nan is out of range");
        float neg = -1e-5f;
        expect_fail("rms_eps < 0", patched("eps-neg.gguf", L.val_at[eps], &neg, 4, 0),
                    ELM_ERR_FORMAT, "hyper-parameter rms_eps = -1e-05 is out of range");
    }
    /* the fixture has no rope.freq_base: an infinite epsilon stands for the other floats */
    if (eps >= 0)
        expect_fail("rms_eps inf", patch32("eps-inf.gguf", L.val_at[eps], inf), ELM_ERR_FORMAT,
                    "hyper-parameter rms_eps = inf is out of range");
    expect_fail("context 2^31-1",
                patch32("ctx.gguf", L.val_at[kv_index("llama.context_length")], INT32_MAX),
                ELM_ERR_FORMAT, "hyper-parameter context_length = 2.14748e+09 is out of range");

    /* a well-formed file of another architecture is stopped by elm_model_bind */
    b.n = 0;
    header(&b, 0, 3);
    kv_str(&b, "general.architecture", "gpt-neox");
    kv_str(&b, "tokenizer.ggml.model", "gpt2");
    kv_tokens(&b, 8);
    expect_fail("gpt-neox", write_file("neox.gguf", b.b, b.n), ELM_ERR_UNSUPPORTED,
                "unsupported architecture 'gpt-neox'");

    /* deeply nested arrays are refused rather than recursed into */
    b.n = 0;
    header(&b, 0, 1);
    putstr(&b, "deep");
    put32(&b, 9);
    for (int i = 0; i < 100; i++) {
        put32(&b, 9);
        put64(&b, 1);
    }
    expect_fail("nested arrays", write_file("deep.gguf", b.b, b.n), ELM_ERR_FORMAT,
                "nested too deeply");
}

static void test_tensors(void) {
    int last = L.n_t - 1;
    uint64_t past = (orig_size - L.data_at + 31) / 32 * 32;
    expect_fail("offset past EOF", patch64("off.gguf", L.t_off_at[last], past), ELM_ERR_FORMAT,
                "offset+size past end of file");
    expect_fail("offset+size wraps", patch64("wrap.gguf", L.t_off_at[last], UINT64_MAX - 31),
                ELM_ERR_FORMAT, "offset+size past end of file");
    expect_fail("unaligned offset", patch64("align.gguf", L.t_off_at[1], 4), ELM_ERR_FORMAT,
                "not a multiple of the alignment");
    expect_fail("dimension 0", patch64("dim0.gguf", L.t_ne_at[0], 0), ELM_ERR_FORMAT,
                "dimension of size 0");
    uint64_t big[2] = {UINT64_C(1) << 32, UINT64_C(1) << 32};
    expect_fail("dims overflow 64 bits", patched("ovf.gguf", L.t_ne_at[0], big, 16, 0),
                ELM_ERR_FORMAT, "element count overflows 64 bits");
    uint64_t big2[2] = {UINT64_C(1) << 31, UINT64_C(1) << 31}; /* 2^62 f32: 2^64 bytes */
    expect_fail("bytes overflow 64 bits", patched("ovf2.gguf", L.t_ne_at[0], big2, 16, 0),
                ELM_ERR_FORMAT, "byte size overflows 64 bits");
    expect_fail("5 dimensions", patch32("nd5.gguf", L.t_ndims_at[0], 5), ELM_ERR_FORMAT,
                "has 5 dimensions");
    expect_fail("0 dimensions", patch32("nd0.gguf", L.t_ndims_at[0], 0), ELM_ERR_FORMAT,
                "has 0 dimensions");
    /* a k-quant on 64-weight rows: the 256-weight super-block does not fit */
    expect_fail("type q4_K", patch32("q4k.gguf", L.t_type_at[0], 12), ELM_ERR_FORMAT,
                "tensor 'token_embd.weight' row of 64 is not a multiple of the q4_k block size 256");
    expect_fail("type q8_1", patch32("q81.gguf", L.t_type_at[0], 9), ELM_ERR_UNSUPPORTED,
                "tensor 'token_embd.weight' has unsupported tensor type 9");
    /* an i-quant on 64-weight rows */
    expect_fail("type iq2_xxs", patch32("iq2.gguf", L.t_type_at[0], 16), ELM_ERR_FORMAT,
                "tensor 'token_embd.weight' row of 64 is not a multiple of the iq2_xxs block size "
                "256");
    expect_fail("type 99", patch32("t99.gguf", L.t_type_at[2], 99), ELM_ERR_UNSUPPORTED,
                "tensor 'output.weight' has unsupported tensor type 99");
    expect_fail("name length past EOF", patch64("tname.gguf", L.t_at[0], orig_size),
                ELM_ERR_FORMAT, "past end of file");
    /* data ranges that share bytes: attn_k moved into attn_q's range, output onto the embedding */
    int q = t_index("blk.0.attn_q.weight"), k = t_index("blk.0.attn_k.weight");
    int emb = t_index("token_embd.weight"), out = t_index("output.weight");
    const char *p = patch64("k-in-q.gguf", L.t_off_at[k], get64(L.t_off_at[q]) + 4096);
    expect_fail("attn_k inside attn_q", p, ELM_ERR_FORMAT,
                "tensors 'blk.0.attn_q.weight' and 'blk.0.attn_k.weight' have overlapping offsets");
    p = patch64("out-on-emb.gguf", L.t_off_at[out], get64(L.t_off_at[emb]));
    expect_fail("output on token_embd", p, ELM_ERR_FORMAT, "overlapping offsets");
    expect_fail("output on token_embd", p, ELM_ERR_FORMAT, "'token_embd.weight'");
    expect_fail("output on token_embd", p, ELM_ERR_FORMAT, "'output.weight'");
    /* blk.0.attn_k.weight renamed to blk.0.attn_q.weight (same length) */
    expect_fail("duplicate name", patched("dup.gguf", L.t_at[4] + 8, "blk.0.attn_q.weight", 19, 0),
                ELM_ERR_FORMAT, "duplicate tensor 'blk.0.attn_q.weight'");
}

/* A model of many tensors (a file may declare up to one per 32 bytes), through the name index's
 * regrowths: every name is found at its own index, one never added is not, a repeated one is
 * refused. (Loading was quadratic in the tensor count before the index; that is for a benchmark
 * to show, not a test.) */
static void test_many_tensors(void) {
    enum { N = 200000 };
    static float one[1];
    elm_error err;
    elm_model *m = elm_model_new("many.gguf", "gguf", &err);
    CHECK(m != NULL, "elm_model_new");
    if (!m) return;
    char name[64];
    const int64_t ne[1] = {1};
    int added = 0, found = 0;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "t.%d.weight", i);
        added += elm_model_add_tensor(m, name, ELM_TYPE_F32, 1, ne, one, sizeof one, &err) == ELM_OK;
    }
    for (int i = 0; i < N; i += 7) {
        snprintf(name, sizeof name, "t.%d.weight", i);
        const elm_tensor *t = elm_model_find(m, name);
        found += t != NULL && t == &m->tensors[i];
    }
    CHECK(added == N && m->n_tensors == N, "%d of %d tensors added", added, N);
    CHECK(found == (N + 6) / 7, "%d of %d names found at their index", found, (N + 6) / 7);
    CHECK(elm_model_find(m, "t.200000.weight") == NULL, "a name never added is not found");
    const elm_status st =
        elm_model_add_tensor(m, "t.199999.weight", ELM_TYPE_F32, 1, ne, one, sizeof one, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, "many.gguf: duplicate tensor 't.199999.weight'"),
          "repeated name: %s", st ? err.msg : "accepted");
    elm_model_free(m);
}

/* Random byte flips in the header region must never crash (ASan/UBSan watch); a failure names
 * the file. */
static void test_flips(void) {
    uint64_t s = 12345;
    int unnamed = 0;
    uint8_t *b = malloc(orig_size);
    for (int i = 0; i < 200; i++) {
        memcpy(b, orig, orig_size);
        for (int k = 0; k < 4; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(s >> 33) % L.data_at;
            b[at] ^= (uint8_t)(1u << ((s >> 20) & 7));
        }
        const char *p = write_file("flip.gguf", b, orig_size);
        elm_model *m = NULL;
        elm_error err;
        if (elm_model_load(p, NULL, &m, &err) != ELM_OK) unnamed += strstr(err.msg, p) == NULL;
        elm_model_free(m);
    }
    free(b);
    CHECK(unnamed == 0, "%d flipped files failed without naming the file", unnamed);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    FILE *f = fopen(fixture("stories260K/stories260K-f32.gguf"), "rb");
    if (!f) {
        perror("setup");
        return 1;
    }
    if (!(tmpdir = check_tmp_dir())) return check_skip("cannot create a temporary folder");
    fseek(f, 0, SEEK_END);
    orig_size = (size_t)ftell(f);
    rewind(f);
    orig = malloc(orig_size);
    if (fread(orig, 1, orig_size, f) != orig_size) return 1;
    fclose(f);
    walk();
    CHECK(L.n_t == 48 && L.n_kv == 19 && kv_index("tokenizer.ggml.scores") >= 0,
          "fixture layout: %d tensors, %d keys", L.n_t, L.n_kv);

    test_good();
    test_header();
    test_truncated();
    test_kv();
    test_tensors();
    test_many_tensors();
    test_flips();

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK(system(cmd) == 0, "cleanup of %s", tmpdir);
    free(tmpdir);
    free(orig);
    return check_done();
}
