/* elm_model: the one in-memory model. Owns mappings and buffers handed over by loaders, validates
 * tensors as they are added, and binds GGUF tensor names to layer slots (elm_model_bind). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edgelm/model.h"
#include "formats/loaders.h"

struct elm_model_storage {
    int n, cap;
    struct { void *addr; size_t len; } *items; /* len 0: malloc'd buffer; else mmap */
};

elm_model *elm_model_new(const char *path, const char *format, elm_error *err) {
    elm_model *m = calloc(1, sizeof *m);
    if (m) m->storage = calloc(1, sizeof *m->storage);
    if (!m || !m->storage) {
        free(m);
        elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    snprintf(m->path, sizeof m->path, "%s", path);
    snprintf(m->format, sizeof m->format, "%s", format);
    return m;
}

static elm_status storage_push(elm_model *m, void *addr, size_t len, elm_error *err) {
    elm_model_storage *s = m->storage;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        void *p = realloc(s->items, (size_t)cap * sizeof *s->items);
        if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
        s->items = p;
        s->cap = cap;
    }
    s->items[s->n].addr = addr;
    s->items[s->n].len = len;
    s->n++;
    return ELM_OK;
}

elm_status elm_model_own_buffer(elm_model *m, void *buf, elm_error *err) {
    elm_status st = storage_push(m, buf, 0, err);
    if (st) free(buf);
    return st;
}

elm_status elm_model_own_mapping(elm_model *m, void *addr, size_t len, elm_error *err) {
    elm_status st = storage_push(m, addr, len, err);
    if (st) elm_unmap(addr, len);
    return st;
}

elm_status elm_model_add_tensor(elm_model *m, const char *name, elm_type type, int n_dims,
                                const int64_t *ne, void *data, size_t nbytes, elm_error *err) {
    const elm_type_traits *tt = elm_type_get(type);
    if (!tt) return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' has unsupported type %d",
                               m->path, name, (int)type);
    if (strlen(name) >= ELM_NAME_MAX)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor name too long", m->path);
    if (n_dims < 1 || n_dims > ELM_MAX_DIMS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions (1..4 allowed)",
                          m->path, name, n_dims);
    uint64_t count = 1;
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] <= 0)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has dimension %d of size %lld",
                              m->path, name, i, (long long)ne[i]);
        if ((uint64_t)ne[i] > (UINT64_C(1) << 62) / count)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' element count overflows",
                              m->path, name);
        count *= (uint64_t)ne[i];
    }
    if (ne[0] % tt->block_size != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' row of %lld is not a multiple of the %s block size %d",
                          m->path, name, (long long)ne[0], tt->name, tt->block_size);
    uint64_t want = count / (uint64_t)tt->block_size * tt->block_bytes;
    if (want != nbytes)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %zu bytes, %s shape needs %llu",
                          m->path, name, nbytes, tt->name, (unsigned long long)want);
    if (elm_model_find(m, name))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: duplicate tensor '%s'", m->path, name);
    if (m->n_tensors % 64 == 0) {
        void *p = realloc(m->tensors, ((size_t)m->n_tensors + 64) * sizeof *m->tensors);
        if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
        m->tensors = p;
    }
    elm_tensor *t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = n_dims;
    for (int i = 0; i < ELM_MAX_DIMS; i++) t->ne[i] = i < n_dims ? ne[i] : 1;
    t->data = data;
    t->nbytes = nbytes;
    return ELM_OK;
}

elm_tensor *elm_model_find(const elm_model *m, const char *name) {
    for (int32_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

size_t elm_model_bytes(const elm_model *m) {
    size_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) n += m->tensors[i].nbytes;
    return n;
}

int64_t elm_model_params(const elm_model *m) {
    int64_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++)
        n += m->tensors[i].ne[0] * m->tensors[i].ne[1] * m->tensors[i].ne[2] * m->tensors[i].ne[3];
    return n;
}

/* Finds `name` and checks it is a matrix [rows, cols] (ne = {cols, rows}) or, with rows 0, a
 * vector of cols. */
static elm_status bind_one(elm_model *m, elm_tensor **slot, const char *name, int64_t cols,
                           int64_t rows, elm_error *err) {
    elm_tensor *t = elm_model_find(m, name);
    if (!t) return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor '%s'", m->path, name);
    int64_t want_rows = rows ? rows : 1;
    if (t->ne[0] != cols || t->ne[1] != want_rows || t->ne[2] != 1 || t->ne[3] != 1)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", m->path,
                          name, (long long)t->ne[1], (long long)t->ne[0], (long long)want_rows,
                          (long long)cols);
    *slot = t;
    return ELM_OK;
}

elm_status elm_model_bind(elm_model *m, elm_error *err) {
    elm_hparams *hp = &m->hp;
    if (strcmp(hp->arch, "llama") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: unsupported architecture '%s'", m->path,
                          hp->arch);
    if (hp->dim <= 0 || hp->n_layers <= 0 || hp->n_heads <= 0 || hp->n_kv_heads <= 0 ||
        hp->ffn_dim <= 0 || hp->n_vocab <= 0 || hp->dim > (1 << 20) || hp->n_layers > 4096 ||
        hp->ffn_dim > (1 << 22) || hp->n_vocab > (1 << 24))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: invalid hyper-parameters (dim %d, layers %d, heads %d/%d, ffn %d, "
                          "vocab %d)", m->path, hp->dim, hp->n_layers, hp->n_heads, hp->n_kv_heads,
                          hp->ffn_dim, hp->n_vocab);
    if (hp->dim % hp->n_heads != 0 || hp->n_heads % hp->n_kv_heads != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: %d heads do not divide dim %d or are not a multiple of %d KV heads",
                          m->path, hp->n_heads, hp->dim, hp->n_kv_heads);
    hp->head_dim = hp->dim / hp->n_heads;
    if (hp->rope_dim <= 0) hp->rope_dim = hp->head_dim;
    if (hp->rope_dim > hp->head_dim || hp->rope_dim % 2)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: RoPE dimension %d invalid for head size %d",
                          m->path, hp->rope_dim, hp->head_dim);
    if (hp->rms_eps <= 0) hp->rms_eps = 1e-5f;
    if (hp->rope_theta <= 0) hp->rope_theta = 10000.0f;
    if (hp->n_ctx_train <= 0) hp->n_ctx_train = 2048;
    if (m->vocab.n_tokens != hp->n_vocab)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: vocabulary has %d tokens, model expects %d",
                          m->path, m->vocab.n_tokens, hp->n_vocab);

    int64_t kv = (int64_t)hp->n_kv_heads * hp->head_dim;
    elm_status st;
    if ((st = bind_one(m, &m->tok_embd, "token_embd.weight", hp->dim, hp->n_vocab, err))) return st;
    if ((st = bind_one(m, &m->output_norm, "output_norm.weight", hp->dim, 0, err))) return st;
    if (elm_model_find(m, "output.weight")) {
        if ((st = bind_one(m, &m->output, "output.weight", hp->dim, hp->n_vocab, err))) return st;
        hp->tied_output = false;
    } else {
        m->output = m->tok_embd;
        hp->tied_output = true;
    }
    free(m->layers);
    m->layers = calloc((size_t)hp->n_layers, sizeof *m->layers);
    if (!m->layers) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int l = 0; l < hp->n_layers; l++) {
        elm_layer *L = &m->layers[l];
        struct { elm_tensor **slot; const char *suffix; int64_t cols, rows; } want[] = {
            {&L->attn_norm, "attn_norm", hp->dim, 0},   {&L->wq, "attn_q", hp->dim, hp->dim},
            {&L->wk, "attn_k", hp->dim, kv},            {&L->wv, "attn_v", hp->dim, kv},
            {&L->wo, "attn_output", hp->dim, hp->dim},  {&L->ffn_norm, "ffn_norm", hp->dim, 0},
            {&L->w_gate, "ffn_gate", hp->dim, hp->ffn_dim}, {&L->w_up, "ffn_up", hp->dim, hp->ffn_dim},
            {&L->w_down, "ffn_down", hp->ffn_dim, hp->dim},
        };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            char name[ELM_NAME_MAX];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, want[i].suffix);
            if ((st = bind_one(m, want[i].slot, name, want[i].cols, want[i].rows, err))) return st;
        }
    }
    return ELM_OK;
}

void elm_model_free(elm_model *m) {
    if (!m) return;
    if (m->storage) {
        for (int i = 0; i < m->storage->n; i++) {
            if (m->storage->items[i].len) elm_unmap(m->storage->items[i].addr, m->storage->items[i].len);
            else free(m->storage->items[i].addr);
        }
        free(m->storage->items);
        free(m->storage);
    }
    elm_vocab_free(&m->vocab);
    free(m->tensors);
    free(m->layers);
    free(m);
}

/* A llama2.c checkpoint has no magic: anything that is not a directory or GGUF is tried as one
 * (its loader checks the header against the file size). */
elm_status elm_model_load(const char *path, const elm_load_opts *opts, elm_model **out,
                          elm_error *err) {
    *out = NULL;
    elm_model *m = NULL;
    elm_status st;
    if (elm_is_dir(path)) {
        if (!(m = elm_model_new(path, "hf", err))) return ELM_ERR_NOMEM;
        st = elm_load_hf(m, path, err);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f) return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
        unsigned char magic[4] = {0};
        size_t got = fread(magic, 1, 4, f);
        fclose(f);
        bool gguf = got == 4 && memcmp(magic, "GGUF", 4) == 0;
        if (!(m = elm_model_new(path, gguf ? "gguf" : "llama2c", err))) return ELM_ERR_NOMEM;
        st = gguf ? elm_load_gguf(m, path, err)
                  : elm_load_llama2c(m, path, opts ? opts->tokenizer_path : NULL, err);
    }
    if (!st) st = elm_model_bind(m, err);
    if (st) {
        elm_model_free(m);
        return st;
    }
    *out = m;
    return ELM_OK;
}
