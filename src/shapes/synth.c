/* Random-weight models of real shapes (see synth.h). The shapes come from each model's Hugging
 * Face config.json; the tensor list and the metadata are what llama.cpp's converter writes for
 * that architecture, so llama.cpp runs the same files (the side-by-side benchmarks need that). */
#include "edgelm/shapes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/quant.h"
#include "formats/gguf_write.h"
#include "model/arch.h"
#include "model/builder.h"

/* name, Hugging Face source, arch, n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim,
 * n_ctx_train, rms_eps, rope_theta, tied, llama3_rope, head_dim (elm_synth_preset) */
static const elm_synth_preset presets[] = {
    {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "llama",    32000, 2048, 22, 32,  4,  5632,   2048, 1e-5f,   10000.0f, false, false,   0},
    {"llama-3.2-1b",   "meta-llama/Llama-3.2-1B",            "llama",   128256, 2048, 16, 32,  8,  8192, 131072, 1e-5f,  500000.0f,  true,  true,   0},
    {"llama-2-7b",     "meta-llama/Llama-2-7b-hf",           "llama",    32000, 4096, 32, 32, 32, 11008,   4096, 1e-5f,   10000.0f, false, false,   0},
    {"llama-2-13b",    "meta-llama/Llama-2-13b-hf",          "llama",    32000, 5120, 40, 40, 40, 13824,   4096, 1e-5f,   10000.0f, false, false,   0},
    {"llama-3-8b",     "meta-llama/Meta-Llama-3-8B",         "llama",   128256, 4096, 32, 32,  8, 14336,   8192, 1e-5f,  500000.0f, false, false,   0},
    {"qwen2-0.5b",     "Qwen/Qwen2-0.5B",                    "qwen2",   151936,  896, 24, 14,  2,  4864, 131072, 1e-6f, 1000000.0f,  true, false,   0},
    {"llama-3.2-3b",   "meta-llama/Llama-3.2-3B",            "llama",   128256, 3072, 28, 24,  8,  8192, 131072, 1e-5f,  500000.0f,  true,  true,   0},
    /* Llama's tensors; its NoPE layers are the architecture's, not the file's */
    {"smollm3-3b",     "HuggingFaceTB/SmolLM3-3B",           "smollm3", 128256, 2048, 36, 16,  4, 11008,  65536, 1e-6f, 5000000.0f,  true, false,   0},
    {"qwen3-0.6b",     "Qwen/Qwen3-0.6B",                    "qwen3",   151936, 1024, 28, 16,  8,  3072,  40960, 1e-6f, 1000000.0f,  true, false, 128},
    {"qwen3-1.7b",     "Qwen/Qwen3-1.7B",                    "qwen3",   151936, 2048, 28, 16,  8,  6144,  40960, 1e-6f, 1000000.0f,  true, false, 128},
    {"qwen3-4b",       "Qwen/Qwen3-4B",                      "qwen3",   151936, 2560, 36, 32,  8,  9728,  40960, 1e-6f, 1000000.0f,  true, false, 128},
};

const elm_synth_preset *elm_synth_presets(int *n) {
    *n = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

const elm_synth_preset *elm_synth_find(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

/* What a tensor is filled with. */
typedef enum { FILL_RANDOM, FILL_ONES, FILL_ROPE_FREQS } fill_kind;

typedef struct {
    const elm_synth_preset *p;
    uint64_t seed;
    fill_kind *kind; /* [n_tensors] */
    float *row;      /* [widest row] floats */
    elm_synth_progress progress;
    void *user;
    int32_t n_tensors;
} synth_state;

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Llama 3's frequency divisors (rope_scaling "llama3"): wavelengths shorter than original/high
 * keep their frequency, longer than original/low are divided by the factor, and the band between
 * is interpolated; as Meta's reference code and llama.cpp's converter compute them. */
static void llama3_rope_freqs(const elm_synth_preset *p, float *out, int n) {
    const double factor = 32, low = 1, high = 4, original = 8192;
    const int rope_dim = p->dim / p->n_heads;
    for (int i = 0; i < n; i++) {
        const double freq = pow(p->rope_theta, -2.0 * i / rope_dim), wavelen = 2 * M_PI / freq;
        if (wavelen < original / high) out[i] = 1.0f;
        else if (wavelen > original / low) out[i] = (float)factor;
        else {
            const double smooth = (original / wavelen - low) / (high - low);
            out[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
}

static elm_status fill(void *user, int32_t i, const elm_tensor *t, void *dst, elm_error *err) {
    (void)err;
    synth_state *s = user;
    const int64_t cols = t->ne[0], rows = t->nbytes / elm_row_bytes(t->type, cols);
    const elm_type_traits *tt = elm_type_get(t->type);
    const size_t row_bytes = elm_row_bytes(t->type, cols);
    uint64_t rng = s->seed ^ ((uint64_t)i << 32);
    for (int64_t r = 0; r < rows; r++) {
        switch (s->kind[i]) {
        case FILL_ONES:
            for (int64_t c = 0; c < cols; c++) s->row[c] = 1.0f;
            break;
        case FILL_ROPE_FREQS: llama3_rope_freqs(s->p, s->row, (int)cols); break;
        case FILL_RANDOM:
            for (int64_t c = 0; c < cols; c += 2) {
                const uint64_t v = splitmix64(&rng);
                s->row[c] = ((float)(uint32_t)v * 0x1p-32f - 0.5f) * 0.07f;
                if (c + 1 < cols)
                    s->row[c + 1] = ((float)(uint32_t)(v >> 32) * 0x1p-32f - 0.5f) * 0.07f;
            }
            break;
        }
        tt->from_float(s->row, (char *)dst + (size_t)r * row_bytes, cols);
    }
    if (s->progress) s->progress(s->user, i + 1, s->n_tensors);
    return ELM_OK;
}

/* The vocabulary: llama.cpp's SentencePiece layout (<unk>, <s>, </s>, 256 byte pieces) followed
 * by placeholder pieces, so the file loads anywhere a Llama vocabulary does. */
static elm_status placeholder_vocab(elm_vocab *v, int32_t n, elm_error *err) {
    elm_status st = elm_vocab_alloc(v, n, true, err);
    for (int32_t i = 0; i < n && !st; i++) {
        char piece[32];
        int32_t type = ELM_TOKEN_NORMAL;
        if (i == 0) snprintf(piece, sizeof piece, "<unk>"), type = ELM_TOKEN_UNKNOWN;
        else if (i == 1) snprintf(piece, sizeof piece, "<s>"), type = ELM_TOKEN_CONTROL;
        else if (i == 2) snprintf(piece, sizeof piece, "</s>"), type = ELM_TOKEN_CONTROL;
        else if (i < 259) snprintf(piece, sizeof piece, "<0x%02X>", i - 3), type = ELM_TOKEN_BYTE;
        else snprintf(piece, sizeof piece, "[tok%d]", i);
        st = elm_vocab_set_piece(v, i, piece, strlen(piece), err);
        v->types[i] = type;
        v->scores[i] = -(float)i;
    }
    snprintf(v->model, sizeof v->model, "llama");
    v->unk_id = 0, v->bos_id = 1, v->eos_id = 2;
    return st;
}

typedef struct {
    elm_tensor *t;
    fill_kind *kind;
    int32_t n;
} tensor_list;

static void add(tensor_list *l, const char *name, elm_type type, int64_t cols, int64_t rows,
                fill_kind kind) {
    elm_tensor *t = &l->t[l->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = rows > 1 ? 2 : 1;
    t->ne[0] = cols, t->ne[1] = rows, t->ne[2] = t->ne[3] = 1;
    t->nbytes = elm_row_bytes(type, cols) * (size_t)rows;
    l->kind[l->n++] = kind;
}

/* The tensors in the converter's order: embedding, output norm (and output), then per block. */
static void list_tensors(const elm_synth_preset *p, elm_type type, const elm_arch *a,
                         tensor_list *l) {
    const bool qkv_bias = a && a->qkv_bias;
    const int64_t head = p->head_dim ? p->head_dim : p->dim / p->n_heads,
                  q = (int64_t)p->n_heads * head, kv = (int64_t)p->n_kv_heads * head;
    add(l, "token_embd.weight", type, p->dim, p->n_vocab, FILL_RANDOM);
    if (p->llama3_rope) add(l, "rope_freqs.weight", ELM_TYPE_F32, head / 2, 1, FILL_ROPE_FREQS);
    add(l, "output_norm.weight", ELM_TYPE_F32, p->dim, 1, FILL_ONES);
    if (!p->tied) add(l, "output.weight", type, p->dim, p->n_vocab, FILL_RANDOM);
    for (int b = 0; b < p->n_layers; b++) {
        char name[ELM_NAME_MAX];
#define NAME(s) (snprintf(name, sizeof name, "blk.%d.%s", b, s), name)
        add(l, NAME("attn_norm.weight"), ELM_TYPE_F32, p->dim, 1, FILL_ONES);
        add(l, NAME("attn_q.weight"), type, p->dim, q, FILL_RANDOM);
        add(l, NAME("attn_k.weight"), type, p->dim, kv, FILL_RANDOM);
        add(l, NAME("attn_v.weight"), type, p->dim, kv, FILL_RANDOM);
        if (qkv_bias) {
            add(l, NAME("attn_q.bias"), ELM_TYPE_F32, q, 1, FILL_RANDOM);
            add(l, NAME("attn_k.bias"), ELM_TYPE_F32, kv, 1, FILL_RANDOM);
            add(l, NAME("attn_v.bias"), ELM_TYPE_F32, kv, 1, FILL_RANDOM);
        }
        if (a && a->qk_norm) {
            add(l, NAME("attn_q_norm.weight"), ELM_TYPE_F32, head, 1, FILL_ONES);
            add(l, NAME("attn_k_norm.weight"), ELM_TYPE_F32, head, 1, FILL_ONES);
        }
        add(l, NAME("attn_output.weight"), type, q, p->dim, FILL_RANDOM);
        add(l, NAME("ffn_norm.weight"), ELM_TYPE_F32, p->dim, 1, FILL_ONES);
        add(l, NAME("ffn_gate.weight"), type, p->dim, p->ffn_dim, FILL_RANDOM);
        add(l, NAME("ffn_up.weight"), type, p->dim, p->ffn_dim, FILL_RANDOM);
        add(l, NAME("ffn_down.weight"), type, p->ffn_dim, p->dim, FILL_RANDOM);
#undef NAME
    }
}

elm_status elm_synth_write(const elm_synth_preset *p, elm_type type, const char *path,
                           uint64_t seed, elm_synth_progress progress, void *user,
                           uint64_t *file_bytes, elm_error *err) {
    const elm_arch *arch = elm_arch_find(p->arch);
    const elm_type_traits *tt = elm_type_get(type);
    if (!tt || !tt->from_float)
        return elm_errorf(err, ELM_ERR_ARG, "%s: type %u cannot be written", path, (unsigned)type);
    if (!elm_row_bytes(type, p->dim) || !elm_row_bytes(type, p->ffn_dim))
        return elm_errorf(err, ELM_ERR_ARG, "%s: %s rows of %d and %d columns cannot be %s", path,
                          p->name, p->dim, p->ffn_dim, elm_type_get(type)->name);
    elm_model *m = elm_model_new(path, "gguf", err);
    if (!m) return ELM_ERR_NOMEM;
    const int32_t per_layer = 9 + (arch && arch->qkv_bias ? 3 : 0) + (arch && arch->qk_norm ? 2 : 0),
                  n_max = 4 + p->n_layers * per_layer;
    tensor_list l = {calloc((size_t)n_max, sizeof(elm_tensor)),
                     calloc((size_t)n_max, sizeof(fill_kind)), 0};
    /* the widest row: dim, ffn_dim or, for attn_output, heads · head_dim (Qwen3's is wider) */
    const int64_t q = (int64_t)p->n_heads * (p->head_dim ? p->head_dim : p->dim / p->n_heads);
    int64_t widest = p->ffn_dim > p->dim ? p->ffn_dim : p->dim;
    if (q > widest) widest = q;
    synth_state s = {p, seed, l.kind, malloc(sizeof(float) * (size_t)widest), progress, user, 0};
    elm_status st = ELM_OK;
    if (!l.t || !l.kind || !s.row) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = placeholder_vocab(&m->vocab, p->n_vocab, err);
    if (!st) {
        snprintf(m->name, sizeof m->name,
                 "%s random weights (for speed and memory measurement only)", p->name);
        elm_hparams *hp = &m->hp;
        snprintf(hp->arch, sizeof hp->arch, "%s", p->arch);
        hp->n_vocab = p->n_vocab, hp->dim = p->dim, hp->n_layers = p->n_layers;
        hp->n_heads = p->n_heads, hp->n_kv_heads = p->n_kv_heads, hp->ffn_dim = p->ffn_dim;
        hp->head_dim = p->head_dim ? p->head_dim : p->dim / p->n_heads;
        hp->rope_dim = hp->head_dim;
        hp->n_ctx_train = p->n_ctx_train, hp->rms_eps = p->rms_eps, hp->rope_theta = p->rope_theta;
        hp->tied_output = p->tied;
        list_tensors(p, type, arch, &l);
        s.n_tensors = l.n;
        elm_gguf_out out = {.m = m,
                            .tensors = l.t,
                            .n_tensors = l.n,
                            .file_type = elm_file_type_of(type),
                            .fill = fill,
                            .user = &s};
        st = elm_gguf_write(path, &out, file_bytes, err);
    }
    free(l.t), free(l.kind), free(s.row);
    elm_model_free(m);
    return st;
}
