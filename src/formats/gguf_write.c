/* GGUF v3 writer (see gguf_write.h; layout from docs/formats.md, "GGUF v3").
 *
 * The header needs the number of key/value pairs before any of them is written, so the metadata
 * is emitted twice by one function: a dry pass that only counts, then the real pass. Errors are
 * sticky in the writer so the emit code reads as a list of keys. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/gguf_write.h"
#include "tokenizer/pretok.h"

#define GGUF_ALIGNMENT 32
#define GGUF_VERSION 3
#define GGUF_QUANTIZATION_VERSION 2

enum { T_U32 = 4, T_I32 = 5, T_F32 = 6, T_BOOL = 7, T_STRING = 8, T_ARRAY = 9 };

typedef struct gw {
    elm_out out;
    bool dry;       /* count only */
    uint64_t n_kv;  /* pairs emitted so far */
    uint64_t pos;   /* bytes emitted so far */
    elm_status st;  /* first error, sticky */
    elm_error *err;
} gw;

static void put(gw *w, const void *p, size_t n) {
    if (w->st) return;
    if (!w->dry) w->st = elm_out_write(&w->out, p, n, w->err);
    w->pos += n;
}

static void put_u32(gw *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(gw *w, uint64_t v) { put(w, &v, 8); }

static void put_str(gw *w, const char *s, size_t len) {
    put_u64(w, len);
    put(w, s, len);
}

static void pad(gw *w) {
    static const uint8_t zeros[GGUF_ALIGNMENT];
    put(w, zeros, (size_t)((GGUF_ALIGNMENT - w->pos % GGUF_ALIGNMENT) % GGUF_ALIGNMENT));
}

static void key(gw *w, const char *k, uint32_t type) {
    w->n_kv++;
    put_str(w, k, strlen(k));
    put_u32(w, type);
}

static void kv_u32(gw *w, const char *k, uint32_t v) {
    key(w, k, T_U32);
    put_u32(w, v);
}

static void kv_f32(gw *w, const char *k, float v) {
    key(w, k, T_F32);
    put(w, &v, 4);
}

static void kv_bool(gw *w, const char *k, bool v) {
    uint8_t b = v;
    key(w, k, T_BOOL);
    put(w, &b, 1);
}

static void kv_str(gw *w, const char *k, const char *s) {
    key(w, k, T_STRING);
    put_str(w, s, strlen(s));
}

static void array_head(gw *w, const char *k, uint32_t elem_type, uint64_t count) {
    key(w, k, T_ARRAY);
    put_u32(w, elem_type);
    put_u64(w, count);
}

/* <arch>.<suffix> */
static void kv_arch_u32(gw *w, const char *arch, const char *suffix, int32_t v) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, suffix);
    kv_u32(w, k, (uint32_t)v);
}

static void kv_arch_f32(gw *w, const char *arch, const char *suffix, float v) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, suffix);
    kv_f32(w, k, v);
}

static void emit_vocab(gw *w, const elm_vocab *v) {
    /* Gemma 4's tokenizer is a llama vocab cut at newlines here, its own model name in GGUF */
    const bool gemma4 = strcmp(v->pre, "gemma4") == 0;
    kv_str(w, "tokenizer.ggml.model", gemma4 ? "gemma4" : v->model[0] ? v->model : "llama");
    if (strcmp(v->model, "gpt2") == 0) kv_str(w, "tokenizer.ggml.pre", v->pre);
    array_head(w, "tokenizer.ggml.tokens", T_STRING, (uint64_t)v->n_tokens);
    for (int32_t i = 0; i < v->n_tokens; i++) put_str(w, v->pieces[i], v->piece_len[i]);
    if (v->scores) {
        array_head(w, "tokenizer.ggml.scores", T_F32, (uint64_t)v->n_tokens);
        put(w, v->scores, (size_t)v->n_tokens * sizeof(float));
    }
    array_head(w, "tokenizer.ggml.token_type", T_I32, (uint64_t)v->n_tokens);
    put(w, v->types, (size_t)v->n_tokens * sizeof(int32_t));
    if (v->merges) {
        array_head(w, "tokenizer.ggml.merges", T_STRING, (uint64_t)v->n_merges);
        for (int32_t i = 0; i < v->n_merges; i++) put_str(w, v->merges[i], strlen(v->merges[i]));
    }
    const struct { const char *k; int32_t id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", v->bos_id},
        {"tokenizer.ggml.eos_token_id", v->eos_id},
        {"tokenizer.ggml.unknown_token_id", v->unk_id},
        {"tokenizer.ggml.padding_token_id", v->pad_id},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) kv_u32(w, ids[i].k, (uint32_t)ids[i].id);
    kv_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    kv_bool(w, "tokenizer.ggml.add_eos_token", v->add_eos);
    kv_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
    if (v->chat_template) kv_str(w, "tokenizer.chat_template", v->chat_template);
}

static void emit_metadata(gw *w, const elm_gguf_out *src) {
    const elm_model *m = src->m;
    const elm_hparams *hp = &m->hp;
    const char *arch = hp->arch[0] ? hp->arch : "llama";
    kv_str(w, "general.architecture", arch);
    if (m->name[0]) kv_str(w, "general.name", m->name);
    kv_u32(w, "general.file_type", src->file_type);
    kv_u32(w, "general.quantization_version", GGUF_QUANTIZATION_VERSION);
    kv_arch_u32(w, arch, "context_length", hp->n_ctx_train);
    kv_arch_u32(w, arch, "embedding_length", hp->dim);
    kv_arch_u32(w, arch, "block_count", hp->n_layers);
    kv_arch_u32(w, arch, "feed_forward_length", hp->ffn_dim);
    kv_arch_u32(w, arch, "attention.head_count", hp->n_heads);
    kv_arch_u32(w, arch, "attention.head_count_kv", hp->n_kv_heads);
    if (hp->rope_dim > 0) kv_arch_u32(w, arch, "rope.dimension_count", hp->rope_dim);
    kv_arch_f32(w, arch, "attention.layer_norm_rms_epsilon", hp->rms_eps);
    kv_arch_f32(w, arch, "rope.freq_base", hp->rope_theta);
    kv_arch_u32(w, arch, "vocab_size", hp->n_vocab);
    /* what llama.cpp reads beyond the Llama keys: a head size not dim / heads (Gemma), Mistral's
     * window, linear RoPE scaling (Llama 3.1's comes as the rope_freqs tensor) */
    if (hp->head_dim > 0 && hp->head_dim * hp->n_heads != hp->dim) {
        kv_arch_u32(w, arch, "attention.key_length", hp->head_dim);
        kv_arch_u32(w, arch, "attention.value_length", hp->head_dim);
    }
    if (hp->n_swa > 0) kv_arch_u32(w, arch, "attention.sliding_window", hp->n_swa);
    /* Gemma 3's local layers: written when not llama.cpp's defaults (every 6th global, 10000) */
    if (hp->swa_period > 0 && hp->swa_period != 6)
        kv_arch_u32(w, arch, "attention.sliding_window_pattern", hp->swa_period);
    if (hp->rope_theta_swa > 0 && hp->rope_theta_swa != 10000.0f)
        kv_arch_f32(w, arch, "rope.freq_base_swa", hp->rope_theta_swa);
    if (hp->logit_softcap > 0) kv_arch_f32(w, arch, "final_logit_softcapping", hp->logit_softcap);
    if (hp->rope_freq_scale > 0 && hp->rope_freq_scale != 1.0f) {
        char k[128];
        snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
        kv_str(w, k, "linear");
        kv_arch_f32(w, arch, "rope.scaling.factor", 1.0f / hp->rope_freq_scale);
    }
    if (m->vocab.n_tokens > 0) emit_vocab(w, &m->vocab);
}

/* Tensor bytes from type and shape, checked against t->nbytes. */
static elm_status check_tensor(const char *path, const elm_tensor *t, elm_error *err) {
    const elm_type_traits *tt = elm_type_get(t->type);
    size_t row = tt ? elm_row_bytes(t->type, t->ne[0]) : 0;
    uint64_t rows = 1;
    bool dims_ok = t->n_dims >= 1 && t->n_dims <= ELM_MAX_DIMS;
    for (int d = 1; dims_ok && d < t->n_dims; d++) rows *= (uint64_t)t->ne[d];
    if (!row || !dims_ok || row * rows != t->nbytes)
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: tensor '%s': type %s and shape do not give %zu bytes", path, t->name,
                          tt ? tt->name : "?", t->nbytes);
    return ELM_OK;
}

elm_status elm_gguf_write(const char *path, const elm_gguf_out *src, uint64_t *file_bytes,
                          elm_error *err) {
    size_t max_bytes = 0;
    const elm_vocab *v = &src->m->vocab;
    /* GGUF names a pre-tokenizer; regexes from a tokenizer.json that match none cannot be said */
    if (v->n_tokens > 0 && !strcmp(v->model, "gpt2") && !v->pre[0])
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: the tokenizer's pre-tokenizer (regexes "
                          "from tokenizer.json) is none GGUF can name (%s)", path,
                          elm_pretok_names());
    for (int32_t i = 0; i < src->n_tensors; i++) {
        elm_status st = check_tensor(path, &src->tensors[i], err);
        if (st) return st;
        if (src->tensors[i].nbytes > max_bytes) max_bytes = src->tensors[i].nbytes;
    }
    gw w = {.dry = true, .err = err};
    emit_metadata(&w, src);
    uint64_t n_kv = w.n_kv;

    void *scratch = NULL;
    if (src->fill && !(scratch = malloc(max_bytes ? max_bytes : 1)))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, max_bytes);
    w = (gw){.err = err};
    if ((w.st = elm_out_open(&w.out, path, err))) {
        free(scratch);
        return w.st;
    }
    put(&w, "GGUF", 4);
    put_u32(&w, GGUF_VERSION);
    put_u64(&w, (uint64_t)src->n_tensors);
    put_u64(&w, n_kv);
    emit_metadata(&w, src);

    uint64_t offset = 0;
    for (int32_t i = 0; i < src->n_tensors; i++) {
        const elm_tensor *t = &src->tensors[i];
        put_str(&w, t->name, strlen(t->name));
        put_u32(&w, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(&w, (uint64_t)t->ne[d]);
        put_u32(&w, (uint32_t)t->type);
        put_u64(&w, offset);
        offset += (t->nbytes + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT;
    }
    for (int32_t i = 0; i < src->n_tensors && !w.st; i++) {
        const elm_tensor *t = &src->tensors[i];
        pad(&w);
        if (src->fill && !w.st) w.st = src->fill(src->user, i, t, scratch, err);
        put(&w, src->fill ? scratch : t->data, t->nbytes);
    }
    free(scratch);
    if (w.st) {
        elm_out_abort(&w.out);
        return w.st;
    }
    if ((w.st = elm_out_commit(&w.out, err))) return w.st;
    if (file_bytes) *file_bytes = w.pos;
    return ELM_OK;
}

elm_status elm_gguf_write_model(const elm_model *m, const char *path, elm_error *err) {
    elm_gguf_out src = {.m = m, .tensors = m->tensors, .n_tensors = m->n_tensors,
                        .file_type = m->file_type};
    return elm_gguf_write(path, &src, NULL, err);
}
