/* elm_model: the one in-memory model. Owns mappings and buffers handed over by loaders, validates
 * tensors as they are added, and binds GGUF tensor names to layer slots (elm_model_bind) for each
 * architecture of model/arch.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/hash.h"
#include "model/builder.h"
#include "model/arch.h"
#include "model/layer_kind.h"

struct elm_model_storage {
    int n, cap;
    /* len 0: malloc'd buffer; else mmap; file: a mapping of the file itself, whose pages are
     * read on first touch (elm_model_own_file_mapping) */
    struct { void *addr; size_t len; bool file; } *items;
    elm_tensor *views; /* [n_layers * 5]: row views of fused tensors (see bind_layer) */
    /* Tensor names, open-addressed by FNV-1a: slot values are tensor index + 1 (0: empty),
     * index_cap a power of two at least twice n_tensors, so adding and finding stay O(1) for
     * files of any tensor count (a linear search made loading quadratic in it). */
    int32_t *index;
    int64_t index_cap;
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

static elm_status storage_push(elm_model *m, void *addr, size_t len, bool file, elm_error *err) {
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
    s->items[s->n].file = file;
    s->n++;
    return ELM_OK;
}

elm_status elm_model_own_buffer(elm_model *m, void *buf, elm_error *err) {
    elm_status st = storage_push(m, buf, 0, false, err);
    if (st) free(buf);
    return st;
}

elm_status elm_model_own_mapping(elm_model *m, void *addr, size_t len, elm_error *err) {
    elm_status st = storage_push(m, addr, len, false, err);
    if (st) elm_unmap(addr, len);
    return st;
}

elm_status elm_model_own_file_mapping(elm_model *m, void *addr, size_t len, elm_error *err) {
    elm_status st = storage_push(m, addr, len, true, err);
    if (st) elm_unmap(addr, len);
    return st;
}

/* Whether data lies in a mapping of the file itself (pages not read yet). */
static bool in_file_mapping(const elm_model_storage *s, const void *data) {
    for (int i = 0; i < s->n; i++) {
        const char *a = s->items[i].addr;
        if (s->items[i].file && (const char *)data >= a && (const char *)data < a + s->items[i].len)
            return true;
    }
    return false;
}

static uint64_t name_hash(const char *name) {
    return elm_fnv1a(ELM_FNV1A_INIT, name, strlen(name));
}

static void index_put(elm_model_storage *s, const elm_tensor *tensors, int32_t i) {
    uint64_t h = name_hash(tensors[i].name);
    while (s->index[h & (uint64_t)(s->index_cap - 1)]) h++;
    s->index[h & (uint64_t)(s->index_cap - 1)] = i + 1;
}

/* Grows the name index, when needed, to hold n tensors (the first n - 1 re-entered). */
static bool index_room(elm_model_storage *s, const elm_tensor *tensors, int32_t n) {
    if (2 * (int64_t)n <= s->index_cap) return true;
    const int64_t cap = s->index_cap ? 2 * s->index_cap : 256;
    int32_t *index = calloc((size_t)cap, sizeof *index);
    if (!index) return false;
    free(s->index);
    s->index = index;
    s->index_cap = cap;
    for (int32_t i = 0; i < n - 1; i++) index_put(s, tensors, i);
    return true;
}

elm_status elm_check_block_scales(const char *path, const char *name, elm_type t, const void *data,
                                  int64_t n_blocks, int64_t first, elm_error *err) {
    const elm_type_traits *tt = elm_type_get(t);
    const int64_t bad = tt && tt->bad_block ? tt->bad_block(data, n_blocks) : -1;
    if (bad < 0) return ELM_OK;
    return elm_errorf(err, ELM_ERR_FORMAT,
                      "%s: tensor '%s' block %lld has a bad %s scale (not a finite number)", path,
                      name, (long long)(first + bad), tt->name);
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
    const int64_t n_blocks = (int64_t)(count / (uint64_t)tt->block_size);
    /* a scan reads every block: in a file mapping (--mmap) that would read the whole file at
     * load, which a model larger than RAM cannot afford, so there the scales are trusted (a 0xff
     * one decodes to 2^127: wrong outputs, never a fault); memory read in is scanned */
    if (data && !in_file_mapping(m->storage, data)) {
        elm_status st = elm_check_block_scales(m->path, name, type, data, n_blocks, 0, err);
        if (st) return st;
    }
    if (elm_model_find(m, name))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: duplicate tensor '%s'", m->path, name);
    if (!index_room(m->storage, m->tensors, m->n_tensors + 1))
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    /* the array's capacity is 64, then doubles when full: n is a capacity exactly when it is 0 or
     * a power of two from 64 on (a fixed step copied it quadratically: 5 minutes for 200,000 tensors
     * under ASan, whose realloc always copies) */
    const int32_t n = m->n_tensors;
    if (n == 0 || (n >= 64 && (n & (n - 1)) == 0)) {
        void *p = realloc(m->tensors, (n ? 2 * (size_t)n : 64) * sizeof *m->tensors);
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
    index_put(m->storage, m->tensors, m->n_tensors - 1);
    return ELM_OK;
}

elm_tensor *elm_model_find(const elm_model *m, const char *name) {
    const elm_model_storage *s = m->storage;
    if (!s || !s->index_cap) {
        /* a model not built by elm_model_add_tensor (a quantizer's working copy, synth's) */
        for (int32_t i = 0; i < m->n_tensors; i++)
            if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
        return NULL;
    }
    for (uint64_t h = name_hash(name);; h++) {
        const int32_t v = s->index[h & (uint64_t)(s->index_cap - 1)];
        if (!v) return NULL;
        if (strcmp(m->tensors[v - 1].name, name) == 0) return &m->tensors[v - 1];
    }
}

size_t elm_model_bytes(const elm_model *m) {
    size_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) n += m->tensors[i].nbytes;
    return n;
}

const elm_vocab *elm_model_vocab(const elm_model *m) { return &m->vocab; }

int64_t elm_model_params(const elm_model *m) {
    int64_t n = 0;
    for (int32_t i = 0; i < m->n_tensors; i++)
        n += m->tensors[i].ne[0] * m->tensors[i].ne[1] * m->tensors[i].ne[2] * m->tensors[i].ne[3];
    return n;
}

uint64_t elm_model_fingerprint(const elm_model *m) {
    uint64_t h = ELM_FNV1A_INIT;
    const elm_tensor *t[] = {m->tok_embd, m->output_norm};
    for (size_t i = 0; i < 2; i++) h = elm_fnv1a(h, t[i]->data, t[i]->nbytes < 4096 ? t[i]->nbytes : 4096);
    return h;
}

elm_status elm_model_bind_tensor(elm_model *m, elm_tensor **slot, const char *name, int64_t cols,
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

/* A view of rows [r0, r0 + rows) of matrix t, named after the tensor it stands for. */
static elm_tensor *row_view(elm_tensor *v, const elm_tensor *t, int64_t r0, int64_t rows,
                            const char *name) {
    const size_t row_bytes = elm_row_bytes(t->type, t->ne[0]);
    *v = *t;
    snprintf(v->name, sizeof v->name, "%s", name);
    v->ne[1] = rows;
    v->data = (char *)t->data + (size_t)r0 * row_bytes;
    v->nbytes = (size_t)rows * row_bytes;
    return v;
}

/* An F32 tensor [rows, cols] (rows 0: a vector) the pass reads as floats: a bias or the
 * attention sinks (GGUF keeps them F32; the HF loader converts them). */
static elm_status bind_f32(elm_model *m, elm_tensor **slot, const char *name, int64_t cols,
                           int64_t rows, elm_error *err) {
    elm_status st = elm_model_bind_tensor(m, slot, name, cols, rows, err);
    if (!st && (*slot)->type != ELM_TYPE_F32)
        st = elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, biases must be f32",
                        m->path, name, elm_type_get((*slot)->type)->name);
    return st;
}

/* 1-D F32 bias of n elements, optional unless required. */
static elm_status bind_bias(elm_model *m, elm_tensor **slot, const char *name, int64_t n,
                            bool required, elm_error *err) {
    if (!required && !elm_model_find(m, name)) return ELM_OK;
    return bind_f32(m, slot, name, n, 0, err);
}

/* Layer l's gate and up projections: ffn_gate + ffn_up, or a fused ffn_up [gate; up] (Phi-3) as
 * row views 3 and 4 of views. */
static elm_status bind_ffn(elm_model *m, int l, elm_tensor *views, elm_error *err) {
    const int64_t dim = m->hp.dim, ff = elm_layer_ffn_dim(&m->hp, l);
    elm_layer *L = &m->layers[l];
    char name[ELM_NAME_MAX], view[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
#define VIEW(suffix) (snprintf(view, sizeof view, "blk.%d.%s", l, suffix), view)
    elm_status st;
    elm_tensor *fused;
    if (elm_model_find(m, NAME("ffn_gate.weight"))) {
        if ((st = elm_model_bind_tensor(m, &L->w_gate, name, dim, ff, err)) ||
            (st = elm_model_bind_tensor(m, &L->w_up, NAME("ffn_up.weight"), dim, ff, err)))
            return st;
    } else {
        if ((st = elm_model_bind_tensor(m, &fused, NAME("ffn_up.weight"), dim, 2 * ff, err)))
            return st;
        L->w_gate = row_view(&views[3], fused, 0, ff, VIEW("ffn_gate.weight"));
        L->w_up = row_view(&views[4], fused, ff, ff, VIEW("ffn_up.weight"));
    }
#undef NAME
#undef VIEW
    return ELM_OK;
}

/* A vector of n floats (F32, F16 or BF16: the pass reads it as floats), optional unless
 * required. */
static elm_status bind_float_vector(elm_model *m, elm_tensor **slot, const char *name, int64_t n,
                                    bool required, elm_error *err) {
    *slot = NULL;
    if (!required && !elm_model_find(m, name)) return ELM_OK;
    elm_status st = elm_model_bind_tensor(m, slot, name, n, 0, err);
    if (!st && elm_type_get((*slot)->type)->block_size != 1)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is quantized", m->path, name);
    return st;
}

/* Block l's per-layer embedding (Gemma 4: inp_gate, proj, post_norm when hp.n_embd_per_layer)
 * and its output scale (layer_output_scale, optional). */
static elm_status bind_ple(elm_model *m, const elm_arch *a, int l, elm_error *err) {
    const int64_t dim = m->hp.dim, P = m->hp.n_embd_per_layer;
    elm_layer *L = &m->layers[l];
    char name[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
    elm_status st;
    L->ple_gate = L->ple_proj = L->ple_post_norm = L->out_scale = NULL;
    if (P > 0 &&
        ((st = elm_model_bind_tensor(m, &L->ple_gate, NAME("inp_gate.weight"), dim, P, err)) ||
         (st = elm_model_bind_tensor(m, &L->ple_proj, NAME("proj.weight"), P, dim, err)) ||
         (st = elm_model_bind_tensor(m, &L->ple_post_norm, NAME("post_norm.weight"), dim, 0,
                                     err))))
        return st;
    if (a->layer_scale &&
        (st = bind_float_vector(m, &L->out_scale, NAME("layer_output_scale.weight"), 1, false,
                                err)))
        return st;
#undef NAME
    return ELM_OK;
}

/* A stack of n matrices [rows, cols] (ggml ne {cols, rows, n}), as a mixture of experts keeps
 * its experts. */
static elm_status bind_stack(elm_model *m, elm_tensor **slot, const char *name, int64_t cols,
                             int64_t rows, int64_t n, elm_error *err) {
    elm_tensor *t = elm_model_find(m, name);
    if (!t) return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor '%s'", m->path, name);
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != n || t->ne[3] != 1)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has ne {%lld, %lld, %lld}, "
                          "expected {%lld, %lld, %lld} (%lld experts)", m->path, name,
                          (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                          (long long)cols, (long long)rows, (long long)n, (long long)n);
    *slot = t;
    return ELM_OK;
}

/* Block l's mixture of experts (elm_arch.moe): the router, its selection bias (elm_arch.moe_bias)
 * and the three stacks of experts. */
static elm_status bind_moe(elm_model *m, const elm_arch *a, int l, elm_error *err) {
    const int64_t dim = m->hp.dim, E = m->hp.n_expert, ff = m->hp.expert_ffn_dim;
    elm_layer *L = &m->layers[l];
    char name[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
    elm_status st;
    L->w_gate = L->w_up = L->w_down = L->router_bias = NULL;
    if ((st = elm_model_bind_tensor(m, &L->router, NAME("ffn_gate_inp.weight"), dim, E, err)) ||
        (a->moe_bias &&
         (st = elm_model_bind_tensor(m, &L->router_bias, NAME("exp_probs_b.bias"), E, 0, err))) ||
        (st = bind_stack(m, &L->gate_exps, NAME("ffn_gate_exps.weight"), dim, ff, E, err)) ||
        (st = bind_stack(m, &L->up_exps, NAME("ffn_up_exps.weight"), dim, ff, E, err)) ||
        (st = bind_stack(m, &L->down_exps, NAME("ffn_down_exps.weight"), ff, dim, E, err)))
        return st;
    L->shexp_gate = L->shexp_up = L->shexp_down = L->shexp_gate_inp = NULL;
    const int64_t sff = m->hp.shexp_ffn_dim;
    if (sff > 0 &&
        ((st = elm_model_bind_tensor(m, &L->shexp_gate, NAME("ffn_gate_shexp.weight"), dim, sff,
                                     err)) ||
         (st = elm_model_bind_tensor(m, &L->shexp_up, NAME("ffn_up_shexp.weight"), dim, sff,
                                     err)) ||
         (st = elm_model_bind_tensor(m, &L->shexp_down, NAME("ffn_down_shexp.weight"), sff, dim,
                                     err)) ||
         (a->shexp_gated &&
          (st = bind_f32(m, &L->shexp_gate_inp, NAME("ffn_gate_inp_shexp.weight"), dim, 0, err)))))
        return st;
    L->router_b = L->gate_exps_b = L->up_exps_b = L->down_exps_b = NULL;
    if (a->moe_biases &&
        ((st = bind_f32(m, &L->router_b, NAME("ffn_gate_inp.bias"), E, 0, err)) ||
         (st = bind_f32(m, &L->gate_exps_b, NAME("ffn_gate_exps.bias"), ff, E, err)) ||
         (st = bind_f32(m, &L->up_exps_b, NAME("ffn_up_exps.bias"), ff, E, err)) ||
         (st = bind_f32(m, &L->down_exps_b, NAME("ffn_down_exps.bias"), dim, E, err))))
        return st;
#undef NAME
    return ELM_OK;
}

/* Binds block l: its norms and FFN, and its mixing by kind (layer_kind.h; attention here): q/k/v
 * from attn_qkv (Phi-3) or separately (a gated family's q with each head's gate after it),
 * gate/up from ffn_gate + ffn_up or a fused ffn_up [gate; up] (Phi-3), whichever the file has, as
 * llama.cpp accepts either. A layer reading another's KV (Gemma 4, elm_layer_kv_src) has no k or
 * v of its own (any in the file are left unbound, as llama.cpp leaves them unused); Gemma 4's
 * attn_v is optional, v then being the k projection (before its norm). */
static elm_status bind_layer(elm_model *m, const elm_arch *a, int l, elm_tensor *views,
                             elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const int64_t hd = elm_layer_head_dim(hp, l), dim = hp->dim, q = (int64_t)hp->n_heads * hd,
                  kv = (int64_t)elm_layer_kv_heads(hp, l) * hd, ff = elm_layer_ffn_dim(hp, l);
    const bool own_kv = elm_layer_kv_src(hp, l) == l;
    elm_layer *L = &m->layers[l];
    char name[ELM_NAME_MAX], view[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
#define VIEW(suffix) (snprintf(view, sizeof view, "blk.%d.%s", l, suffix), view)
    elm_status st;
    elm_tensor *fused;
    if (!a->moe && elm_model_find(m, NAME("ffn_gate_inp.weight")))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: mixture-of-experts layers (tensor '%s') "
                          "in a '%s' model (edgelm runs them for %s)", m->path, name, a->name,
                          elm_arch_moe_names());
    if ((st = elm_model_bind_tensor(m, &L->attn_norm, NAME("attn_norm.weight"), dim, 0, err)) ||
        (st = elm_model_bind_tensor(m, &L->ffn_norm, NAME(elm_arch_ffn_norm(a)), dim, 0, err)))
        return st;
    if (a->moe && elm_layer_moe(hp, l)) st = bind_moe(m, a, l, err);
    else if (!(st = elm_model_bind_tensor(m, &L->w_down, NAME("ffn_down.weight"), ff, dim, err)))
        st = bind_ffn(m, l, views, err);
    if (st) return st;
    L->q_norm = L->k_norm = L->attn_post_norm = L->ffn_post_norm = NULL;
    if (a->post_norms &&
        ((st = elm_model_bind_tensor(m, &L->attn_post_norm, NAME("post_attention_norm.weight"),
                                     dim, 0, err)) ||
         (st = elm_model_bind_tensor(m, &L->ffn_post_norm, NAME("post_ffw_norm.weight"), dim, 0,
                                     err))))
        return st;
    if ((st = bind_ple(m, a, l, err))) return st;
    L->kind = elm_layer_recurrent(hp, l) ? a->recurrent : ELM_LAYER_ATTENTION;
    if (L->kind != ELM_LAYER_ATTENTION) return elm_layer_ops_of(L->kind)->bind(m, l, err);
    if ((st = elm_model_bind_tensor(m, &L->wo, NAME("attn_output.weight"), q, dim, err)))
        return st;
    L->sinks = L->bo = NULL;
    if (a->sinks && ((st = bind_f32(m, &L->bo, NAME("attn_output.bias"), dim, 0, err)) ||
                     (st = bind_f32(m, &L->sinks, NAME("attn_sinks.weight"), hp->n_heads, 0,
                                    err))))
        return st;
    L->wk = L->wv = NULL;
    if (elm_model_find(m, NAME("attn_qkv.weight"))) {
        if ((st = elm_model_bind_tensor(m, &fused, name, dim, q + 2 * kv, err))) return st;
        L->wq = row_view(&views[0], fused, 0, q, VIEW("attn_q.weight"));
        L->wk = row_view(&views[1], fused, q, kv, VIEW("attn_k.weight"));
        L->wv = row_view(&views[2], fused, q + kv, kv, VIEW("attn_v.weight"));
    } else if ((st = elm_model_bind_tensor(m, &L->wq, NAME("attn_q.weight"), dim,
                                           a->attn_gate ? 2 * q : q, err)) ||
               (own_kv &&
                (st = elm_model_bind_tensor(m, &L->wk, NAME("attn_k.weight"), dim, kv, err))) ||
               (own_kv && (!a->v_norm || elm_model_find(m, NAME("attn_v.weight"))) &&
                (st = elm_model_bind_tensor(m, &L->wv, NAME("attn_v.weight"), dim, kv, err)))) {
        return st;
    }
    if ((st = bind_bias(m, &L->bq, NAME("attn_q.bias"), q, a->qkv_bias, err)) ||
        (st = bind_bias(m, &L->bk, NAME("attn_k.bias"), kv, a->qkv_bias, err)) ||
        (st = bind_bias(m, &L->bv, NAME("attn_v.bias"), kv, a->qkv_bias, err)))
        return st;
    if (a->qk_norm &&
        ((st = elm_model_bind_tensor(m, &L->q_norm, NAME("attn_q_norm.weight"), hd, 0, err)) ||
         (own_kv &&
          (st = elm_model_bind_tensor(m, &L->k_norm, NAME("attn_k_norm.weight"), hd, 0, err)))))
        return st;
#undef NAME
#undef VIEW
    return ELM_OK;
}

/* Hyper-parameters the pass needs, with the defaults llama.cpp uses when a file omits them. */
static elm_status check_hparams(elm_model *m, const elm_arch *a, elm_error *err) {
    elm_hparams *hp = &m->hp;
    if (hp->dim <= 0 || hp->n_layers <= 0 || hp->n_heads <= 0 || hp->n_kv_heads <= 0 ||
        hp->ffn_dim <= 0 || hp->n_vocab <= 0 || hp->dim > (1 << 20) || hp->n_layers > ELM_MAX_LAYERS ||
        hp->ffn_dim > (1 << 22) || hp->n_vocab > (1 << 24) || hp->head_dim < 0 ||
        hp->head_dim > 4096 || hp->n_heads > 4096 || hp->n_swa < 0 || hp->swa_period < 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: invalid hyper-parameters (dim %d, layers %d, heads %d/%d, head size "
                          "%d, ffn %d, vocab %d)", m->path, hp->dim, hp->n_layers, hp->n_heads,
                          hp->n_kv_heads, hp->head_dim, hp->ffn_dim, hp->n_vocab);
    if ((hp->head_dim == 0 && hp->dim % hp->n_heads != 0) || hp->n_heads % hp->n_kv_heads != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: %d heads do not divide dim %d or are not a multiple of %d KV heads",
                          m->path, hp->n_heads, hp->dim, hp->n_kv_heads);
    if (hp->head_dim == 0) hp->head_dim = hp->dim / hp->n_heads;
    if (hp->rope_dim <= 0) hp->rope_dim = hp->head_dim;
    if (hp->rope_dim > hp->head_dim || hp->rope_dim % 2)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: RoPE dimension %d invalid for head size %d",
                          m->path, hp->rope_dim, hp->head_dim);
    if (hp->rms_eps == 0) hp->rms_eps = 1e-5f;
    if (hp->rope_theta == 0) hp->rope_theta = 10000.0f;
    if (hp->rope_freq_scale == 0) hp->rope_freq_scale = 1.0f;
    if (hp->n_ctx_train <= 0) hp->n_ctx_train = 2048;
    if (hp->n_ctx_orig <= 0) hp->n_ctx_orig = hp->n_ctx_train; /* llama.cpp's n_ctx_orig_yarn */
    if (hp->rope_attn_factor == 0) hp->rope_attn_factor = 1.0f;
    if (hp->yarn_beta_fast == 0) hp->yarn_beta_fast = 32.0f; /* llama.cpp's defaults */
    if (hp->yarn_beta_slow == 0) hp->yarn_beta_slow = 1.0f;
    elm_arch_swa_defaults(a, hp);
    /* Gemma 3 27B scales by dim / heads, not its head size (llama.cpp, after gemma_pytorch) */
    if (hp->attn_scale == 0)
        hp->attn_scale = a->unit_attn_scale
                             ? 1.0f
                             : 1.0f / sqrtf((float)(a->swa_period && hp->n_layers == 62
                                                        ? hp->dim / hp->n_heads
                                                        : hp->head_dim));
    /* Granite's multipliers are the file's (absent: 1); the other families' embeddings by row */
    if (!a->multipliers) hp->embd_scale = a->embd_scale ? sqrtf((float)hp->dim) : 1.0f;
    if (hp->embd_scale == 0) hp->embd_scale = 1.0f;
    if (hp->residual_scale == 0) hp->residual_scale = 1.0f;
    if (hp->logit_scale == 0) hp->logit_scale = 1.0f;
    /* a NaN epsilon or frequency base loads fine and then poisons every activation */
    const struct { const char *name; double v, lo, hi; } f[] = {
        {"rms_eps", hp->rms_eps, 1e-12, 0.1}, {"rope_theta", hp->rope_theta, 1, 1e12},
        {"rope_freq_scale", hp->rope_freq_scale, 1e-6, 1e3},
        {"rope_theta_swa", hp->rope_theta_swa ? hp->rope_theta_swa : 1, 1, 1e12},
        {"attn_scale", hp->attn_scale, 1e-6, 1e3}, {"logit_softcap", hp->logit_softcap, 0, 1e6},
        {"embd_scale", hp->embd_scale, 1e-6, 1e6}, {"residual_scale", hp->residual_scale, 1e-6, 1e3},
        {"logit_scale", hp->logit_scale, 1e-6, 1e6},
        {"context_length", hp->n_ctx_train, 1, 1 << 24},
        {"original_context_length", hp->n_ctx_orig, 1, 1 << 24},
        {"rope_attn_factor", hp->rope_attn_factor, 1e-3, 1e3},
        {"yarn_beta_fast", hp->yarn_beta_fast, 1e-3, 1e6},
        {"yarn_beta_slow", hp->yarn_beta_slow, 1e-3, 1e6}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!(f[i].v >= f[i].lo && f[i].v <= f[i].hi))
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: hyper-parameter %s = %g is out of range [%g, %g]", m->path,
                              f[i].name, f[i].v, f[i].lo, f[i].hi);
    hp->rope_style = a->rope;
    hp->ffn_act = a->act;
    hp->nope_every = a->nope_every;
    hp->v_norm = a->v_norm;
    hp->full_last_layer = a->full_last_layer;
    hp->non_causal = a->non_causal;
    if (hp->pooling < 0 || hp->pooling > 4)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: pooling type %d out of range 0..4 (none, "
                          "mean, cls, last, rank)", m->path, hp->pooling);
    return ELM_OK;
}

/* The layers' own sizes (Gemma 4): the windowed layers' head size and RoPE (llama.cpp's
 * defaults: the global layers'), each layer's KV heads dividing the heads and FFN size, and the
 * layers the last n_kv_shared read, of their own kind (llama.cpp aborts otherwise). */
static elm_status check_layers(elm_model *m, const elm_arch *a, elm_error *err) {
    elm_hparams *hp = &m->hp;
    if ((hp->swa_listed && !a->swa_listed) || (hp->n_kv_shared && !a->kv_shared) ||
        (hp->n_embd_per_layer && !a->ple))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: per-layer window list, shared KV layers or "
                          "per-layer embeddings in a '%s' model", m->path, a->name);
    if (hp->swa_listed && hp->head_dim_swa == 0) hp->head_dim_swa = hp->head_dim;
    if (hp->swa_listed && hp->rope_dim_swa == 0) hp->rope_dim_swa = hp->rope_dim;
    if (hp->head_dim_swa < 0 || hp->head_dim_swa > 4096 || hp->rope_dim_swa < 0 ||
        hp->rope_dim_swa > (hp->head_dim_swa ? hp->head_dim_swa : hp->head_dim) ||
        hp->rope_dim_swa % 2 || hp->n_embd_per_layer < 0 || hp->n_embd_per_layer > (1 << 16))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: windowed layers' head size %d with RoPE "
                          "dimension %d, or per-layer embedding size %d, invalid", m->path,
                          hp->head_dim_swa, hp->rope_dim_swa, hp->n_embd_per_layer);
    for (int l = 0; l < hp->n_layers; l++) {
        const int32_t kv = elm_layer_kv_heads(hp, l), ff = elm_layer_ffn_dim(hp, l);
        if (kv <= 0 || hp->n_heads % kv || ff <= 0 || ff > hp->ffn_dim)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: layer %d: %d KV heads for %d heads, FFN "
                              "size %d (largest %d)", m->path, l, kv, hp->n_heads, ff,
                              hp->ffn_dim);
    }
    const int n_kv = hp->n_layers - hp->n_kv_shared;
    if (hp->n_kv_shared < 0 || (hp->n_kv_shared > 0 && n_kv < 2))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d shared KV layers of %d (at least 2 layers "
                          "keep their own)", m->path, hp->n_kv_shared, hp->n_layers);
    for (int l = n_kv; l < hp->n_layers; l++) {
        const int src = elm_layer_kv_src(hp, l);
        if (elm_layer_swa(hp, src) != elm_layer_swa(hp, l))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: layer %d reads the KV of layer %d, which "
                              "is not a %s layer as it is (llama.cpp's rule: layer %d windowed, "
                              "%d global)", m->path, l, src,
                              elm_layer_swa(hp, l) ? "windowed" : "global", n_kv - 2, n_kv - 1);
    }
    return ELM_OK;
}

/* A mixture of experts' sizes (elm_arch.moe): experts, those a token is routed to, an expert's
 * FFN size (llama.cpp's default: ffn_dim / n_expert_used), the leading dense layers and the
 * router's function (the family's when the file names none); none in another family. */
static elm_status check_experts(elm_model *m, const elm_arch *a, elm_error *err) {
    elm_hparams *hp = &m->hp;
    if (!a->moe || (a->moe_optional && hp->n_expert == 0)) {
        if (hp->n_expert > 0)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d experts in a '%s' model (edgelm runs "
                              "them for %s)", m->path, hp->n_expert, a->name,
                              elm_arch_moe_names());
        return ELM_OK;
    }
    if (hp->moe_gating == 0) hp->moe_gating = a->moe_gating ? a->moe_gating : ELM_MOE_SOFTMAX;
    if (hp->moe_gating < ELM_MOE_SOFTMAX || hp->moe_gating > ELM_MOE_SOFTMAX_WEIGHT)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: expert gating function %d (%s."
                          "expert_gating_func): edgelm runs %d (softmax), %d (sigmoid) and %d "
                          "(softmax of the chosen)", m->path, hp->moe_gating, a->name,
                          ELM_MOE_SOFTMAX, ELM_MOE_SIGMOID, ELM_MOE_SOFTMAX_WEIGHT);
    if (hp->n_dense_lead < 0 || hp->n_dense_lead > hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d leading dense layers (%s."
                          "leading_dense_block_count) of %d layers", m->path, hp->n_dense_lead,
                          a->name, hp->n_layers);
    if (hp->expert_ffn_dim == 0 && hp->n_expert_used > 0)
        hp->expert_ffn_dim = hp->ffn_dim / hp->n_expert_used;
    /* Granite's converter writes the experts' size as feed_forward_length, which llama.cpp
     * takes for them whatever else the file says */
    if (a->moe_optional) hp->expert_ffn_dim = hp->ffn_dim;
    if (a->shexp_gated && hp->shexp_ffn_dim == 0) hp->shexp_ffn_dim = hp->ffn_dim;
    if (hp->shexp_ffn_dim < 0 || hp->shexp_ffn_dim > (1 << 20))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: shared expert FFN size %d (%s."
                          "expert_shared_feed_forward_length): invalid", m->path,
                          hp->shexp_ffn_dim, a->name);
    if (hp->n_expert < 1 || hp->n_expert > ELM_MAX_EXPERTS || hp->n_expert_used < 1 ||
        hp->n_expert_used > hp->n_expert || hp->expert_ffn_dim < 1 ||
        hp->expert_ffn_dim > (1 << 20))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d experts (1..%d), top %d of them, expert "
                          "FFN size %d: invalid", m->path, hp->n_expert, ELM_MAX_EXPERTS,
                          hp->n_expert_used, hp->expert_ffn_dim);
    return ELM_OK;
}

/* Recurrent layers only in a family that has them, and at least one attention layer (the KV
 * heads of the others sized the cache). */
static elm_status check_layer_kinds(elm_model *m, const elm_arch *a, elm_error *err) {
    int n_rec = 0;
    for (int l = 0; l < m->hp.n_layers; l++) n_rec += m->hp.recurrent[l] != 0;
    if (n_rec && a->recurrent == ELM_LAYER_ATTENTION)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: %d layers without KV heads, but '%s' has only attention layers",
                          m->path, n_rec, a->name);
    return ELM_OK;
}

int elm_layer_slots(elm_layer *L, elm_tensor ***out) {
    elm_tensor **all[] = {&L->attn_norm, &L->wq,          &L->wk,         &L->wv,
                          &L->wo,        &L->ffn_norm,    &L->w_gate,     &L->w_up,
                          &L->w_down,    &L->bq,          &L->bk,         &L->bv,
                          &L->q_norm,    &L->k_norm,      &L->attn_post_norm,
                          &L->ffn_post_norm, &L->conv_in, &L->conv_kernel, &L->conv_out,
                          &L->ssm_conv_b, &L->ssm_dt_b, &L->ssm_a, &L->ssm_d, &L->ssm_norm,
                          &L->dn_z,      &L->dn_beta,     &L->dn_alpha,
                          &L->ple_gate,  &L->ple_proj,    &L->ple_post_norm, &L->out_scale,
                          &L->router,    &L->gate_exps,   &L->up_exps,    &L->down_exps,
                          &L->router_bias, &L->sinks,     &L->bo,         &L->router_b,
                          &L->gate_exps_b, &L->up_exps_b, &L->down_exps_b, &L->shexp_gate,
                          &L->shexp_up,  &L->shexp_down,  &L->shexp_gate_inp};
    _Static_assert(sizeof all / sizeof all[0] <= ELM_LAYER_SLOTS, "ELM_LAYER_SLOTS");
    memcpy(out, all, sizeof all);
    return (int)(sizeof all / sizeof all[0]);
}

int elm_layer_matrices(const elm_layer *L, const elm_tensor **out) {
    const elm_tensor *all[] = {L->wq,       L->wk,       L->wv,         L->wo,
                               L->w_gate,   L->w_up,     L->w_down,     L->conv_in,
                               L->conv_out, L->dn_z,     L->dn_beta,    L->dn_alpha,
                               L->ple_gate, L->ple_proj, L->shexp_gate, L->shexp_up,
                               L->shexp_down, L->gate_exps, L->up_exps, L->down_exps};
    _Static_assert(sizeof all / sizeof all[0] <= ELM_LAYER_MATRICES, "ELM_LAYER_MATRICES");
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) out[n++] = all[i];
    return n;
}

/* The per-layer embeddings' inputs (Gemma 4, hp.n_embd_per_layer P > 0): the table of every
 * layer's P values per token and the projection of the embedding into them, and its norm. */
static elm_status bind_ple_inputs(elm_model *m, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    const int64_t P = hp->n_embd_per_layer, all = P * hp->n_layers;
    elm_status st;
    m->ple_embd = m->ple_model_proj = m->ple_proj_norm = NULL;
    if (P == 0) return ELM_OK;
    if ((st = elm_model_bind_tensor(m, &m->ple_embd, "per_layer_token_embd.weight", all,
                                    hp->n_vocab, err)) ||
        (st = elm_model_bind_tensor(m, &m->ple_model_proj, "per_layer_model_proj.weight", hp->dim,
                                    all, err)))
        return st;
    return bind_float_vector(m, &m->ple_proj_norm, "per_layer_proj_norm.weight", P, true, err);
}

/* RoPE frequency divisors ([rope_dim/2] each): Llama 3.1's rope_freqs.weight (Gemma 4's, which
 * leaves the pairs that do not turn, required where it has global layers), or LongRoPE's pair
 * rope_factors_long/short.weight (Phi-3.5-mini, Phi-4-mini), both or neither, never with
 * rope_freqs (llama.cpp's phi3 would not load the third tensor), in Phi-3 only (the one family
 * llama.cpp reads them for of those edgelm runs). */
static elm_status bind_rope(elm_model *m, const elm_arch *a, elm_error *err) {
    const int64_t n = m->hp.rope_dim / 2;
    bool global = false;
    for (int l = 0; l < m->hp.n_layers; l++) global |= !elm_layer_swa(&m->hp, l);
    elm_status st;
    if ((st = bind_float_vector(m, &m->rope_freqs, "rope_freqs.weight", n,
                                a->swa_listed && global, err)) ||
        (st = bind_float_vector(m, &m->rope_long, "rope_factors_long.weight", n, false, err)) ||
        (st = bind_float_vector(m, &m->rope_short, "rope_factors_short.weight", n, false, err)))
        return st;
    if (!m->rope_long != !m->rope_short)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: LongRoPE tensor '%s' without '%s'", m->path,
                          m->rope_long ? "rope_factors_long.weight" : "rope_factors_short.weight",
                          m->rope_long ? "rope_factors_short.weight" : "rope_factors_long.weight");
    if (m->rope_freqs && m->rope_long)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: both rope_freqs.weight and LongRoPE's "
                          "rope_factors_long/short.weight", m->path);
    if (m->rope_long && strcmp(a->name, "phi3") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: LongRoPE (rope_factors_long/short) in "
                          "architecture '%s' (edgelm, as llama.cpp, runs it for phi3)", m->path,
                          a->name);
    return ELM_OK;
}

/* An embedding model's Dense projections of the pooled vector (sentence-transformers' 2_Dense
 * and 3_Dense, llama.cpp's dense_2 and dense_3): both or neither, their inner size
 * hp.dense_dim (GGUF dense_2_feat_out, else dense_2's rows). */
static elm_status bind_dense(elm_model *m, elm_error *err) {
    elm_hparams *hp = &m->hp;
    const elm_tensor *d2 = elm_model_find(m, "dense_2.weight");
    m->dense_2 = m->dense_3 = NULL;
    if (hp->dense_dim == 0 && d2) hp->dense_dim = (int32_t)d2->ne[1];
    if (hp->dense_dim == 0 && !elm_model_find(m, "dense_3.weight")) return ELM_OK;
    if (hp->dense_dim < 0 || hp->dense_dim > (1 << 20))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: dense projection size %d out of range",
                          m->path, hp->dense_dim);
    elm_status st = elm_model_bind_tensor(m, &m->dense_2, "dense_2.weight", hp->dim,
                                          hp->dense_dim, err);
    return st ? st : elm_model_bind_tensor(m, &m->dense_3, "dense_3.weight", hp->dense_dim,
                                           hp->dim, err);
}

const elm_tensor *elm_model_rope_factors(const elm_model *m, int32_t n_ctx_seq) {
    if (m->rope_freqs || !m->rope_long) return m->rope_freqs;
    return n_ctx_seq > m->hp.n_ctx_orig ? m->rope_long : m->rope_short;
}

elm_status elm_model_bind(elm_model *m, elm_error *err) {
    elm_hparams *hp = &m->hp;
    const elm_arch *a = elm_arch_find(hp->arch);
    if (!a)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: unsupported architecture '%s' (edgelm runs %s)", m->path, hp->arch,
                          elm_arch_names());
    elm_status st;
    if ((st = check_hparams(m, a, err)) || (st = check_layers(m, a, err)) ||
        (st = check_layer_kinds(m, a, err)) || (st = check_experts(m, a, err)))
        return st;
    if (m->vocab.n_tokens != hp->n_vocab)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: vocabulary has %d tokens, model expects %d",
                          m->path, m->vocab.n_tokens, hp->n_vocab);
    if ((st = bind_rope(m, a, err)) || (st = bind_ple_inputs(m, err)) ||
        (st = bind_dense(m, err)))
        return st;
    if ((st = elm_model_bind_tensor(m, &m->tok_embd, "token_embd.weight", hp->dim, hp->n_vocab, err))) return st;
    if ((st = elm_model_bind_tensor(m, &m->output_norm, elm_arch_out_norm(a), hp->dim, 0, err)))
        return st;
    if (elm_model_find(m, "output.weight")) {
        if ((st = elm_model_bind_tensor(m, &m->output, "output.weight", hp->dim, hp->n_vocab, err))) return st;
        hp->tied_output = false;
    } else {
        m->output = m->tok_embd;
        hp->tied_output = true;
    }
    free(m->layers);
    free(m->storage->views);
    m->storage->views = calloc((size_t)hp->n_layers * 5, sizeof *m->storage->views);
    m->layers = calloc((size_t)hp->n_layers, sizeof *m->layers);
    if (!m->layers || !m->storage->views)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int l = 0; l < hp->n_layers; l++)
        if ((st = bind_layer(m, a, l, m->storage->views + (size_t)l * 5, err))) return st;
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
        free(m->storage->views);
        free(m->storage->index);
        free(m->storage);
    }
    elm_vocab_free(&m->vocab);
    free(m->tensors);
    free(m->layers);
    free(m);
}
