/* GGUF v3 writer (see gguf_write.h; layout from docs/formats.md, "GGUF v3").
 *
 * The header counts the keys and the tensors before any of them, so the description is kept in
 * memory (the keys' bytes, the tensor infos' bytes) until elm_gguf_begin writes it. Errors of the
 * description are sticky in the writer, so the code that describes a file reads as a list of
 * keys. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/strbuf.h"
#include "formats/gguf_parse.h"
#include "formats/gguf_write.h"
#include "model/arch.h"
#include "tokenizer/pretok.h"

#define GGUF_ALIGNMENT 32
#define GGUF_VERSION 3
#define GGUF_QUANTIZATION_VERSION 2

typedef enum { DESCRIBING, OPEN, ENDED } wstate;

/* A tensor of the table: where its name is in `names`, and its size. */
typedef struct wtensor {
    size_t name_at;
    uint64_t nbytes;
} wtensor;

struct elm_gguf_writer {
    char *path;
    bool pad_end;
    wstate state;
    elm_error first;     /* the description's first error; code ELM_OK while there is none */
    elm_sbuf kv;         /* the keys and values as they go in the file */
    uint64_t n_kv;
    elm_sbuf table;      /* the tensor infos as they go in the file */
    elm_sbuf names;      /* the tensors' names, each NUL-terminated, for error messages */
    wtensor *t;          /* [n] */
    int32_t n, cap;
    uint64_t data_bytes; /* the data of the tensors added so far, padded: the next offset */
    elm_out out;
    uint64_t pos;        /* bytes written */
    int32_t next;        /* the tensor whose data come next */
};

/* ------------------------------------------------------------------------- description */

static void put(elm_sbuf *b, const void *p, size_t n) { elm_sb_put(b, p, n); }
static void put_u32(elm_sbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(elm_sbuf *b, uint64_t v) { put(b, &v, 8); }

static void put_str(elm_sbuf *b, const char *s, size_t len) {
    put_u64(b, len);
    put(b, s, len);
}

static void key(elm_gguf_writer *w, const char *k, uint32_t type) {
    w->n_kv++;
    put_str(&w->kv, k, strlen(k));
    put_u32(&w->kv, type);
}

elm_gguf_writer *elm_gguf_writer_new(const char *path, bool pad_end) {
    elm_gguf_writer *w = calloc(1, sizeof *w);
    if (w && !(w->path = strdup(path))) {
        free(w);
        return NULL;
    }
    if (w) w->pad_end = pad_end;
    return w;
}

void elm_gguf_kv_u32(elm_gguf_writer *w, const char *k, uint32_t v) {
    key(w, k, ELM_GGUF_U32);
    put_u32(&w->kv, v);
}

void elm_gguf_kv_str(elm_gguf_writer *w, const char *k, const char *s) {
    key(w, k, ELM_GGUF_STRING);
    put_str(&w->kv, s, strlen(s));
}

static void array_head(elm_gguf_writer *w, const char *k, uint32_t elem_type, uint64_t count) {
    key(w, k, ELM_GGUF_ARRAY);
    put_u32(&w->kv, elem_type);
    put_u64(&w->kv, count);
}

void elm_gguf_kv_strs(elm_gguf_writer *w, const char *k, const char *const *s, uint64_t n) {
    array_head(w, k, ELM_GGUF_STRING, n);
    for (uint64_t i = 0; i < n; i++) put_str(&w->kv, s[i], strlen(s[i]));
}

static void kv_f32(elm_gguf_writer *w, const char *k, float v) {
    key(w, k, ELM_GGUF_F32);
    put(&w->kv, &v, 4);
}

static void kv_bool(elm_gguf_writer *w, const char *k, bool v) {
    uint8_t b = v;
    key(w, k, ELM_GGUF_BOOL);
    put(&w->kv, &b, 1);
}

/* <arch>.<suffix> */
static void kv_arch_u32(elm_gguf_writer *w, const char *arch, const char *suffix, int32_t v) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, suffix);
    elm_gguf_kv_u32(w, k, (uint32_t)v);
}

static void kv_arch_f32(elm_gguf_writer *w, const char *arch, const char *suffix, float v) {
    char k[128];
    snprintf(k, sizeof k, "%s.%s", arch, suffix);
    kv_f32(w, k, v);
}

static void kv_vocab(elm_gguf_writer *w, const elm_vocab *v) {
    /* Gemma 4's tokenizer is a llama vocab cut at newlines here, its own model name in GGUF */
    const bool gemma4 = strcmp(v->pre, "gemma4") == 0;
    elm_gguf_kv_str(w, "tokenizer.ggml.model",
                    gemma4 ? "gemma4" : v->model[0] ? v->model : "llama");
    if (strcmp(v->model, "gpt2") == 0) elm_gguf_kv_str(w, "tokenizer.ggml.pre", v->pre);
    array_head(w, "tokenizer.ggml.tokens", ELM_GGUF_STRING, (uint64_t)v->n_tokens);
    for (int32_t i = 0; i < v->n_tokens; i++) put_str(&w->kv, v->pieces[i], v->piece_len[i]);
    if (v->scores) {
        array_head(w, "tokenizer.ggml.scores", ELM_GGUF_F32, (uint64_t)v->n_tokens);
        put(&w->kv, v->scores, (size_t)v->n_tokens * sizeof(float));
    }
    array_head(w, "tokenizer.ggml.token_type", ELM_GGUF_I32, (uint64_t)v->n_tokens);
    put(&w->kv, v->types, (size_t)v->n_tokens * sizeof(int32_t));
    if (v->merges) elm_gguf_kv_strs(w, "tokenizer.ggml.merges", (const char *const *)v->merges,
                                    (uint64_t)v->n_merges);
    const struct { const char *k; int32_t id; } ids[] = {
        {"tokenizer.ggml.bos_token_id", v->bos_id},
        {"tokenizer.ggml.eos_token_id", v->eos_id},
        {"tokenizer.ggml.unknown_token_id", v->unk_id},
        {"tokenizer.ggml.padding_token_id", v->pad_id},
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) elm_gguf_kv_u32(w, ids[i].k, (uint32_t)ids[i].id);
    kv_bool(w, "tokenizer.ggml.add_bos_token", v->add_bos);
    kv_bool(w, "tokenizer.ggml.add_eos_token", v->add_eos);
    kv_bool(w, "tokenizer.ggml.add_space_prefix", v->add_space_prefix);
    if (v->chat_template) elm_gguf_kv_str(w, "tokenizer.chat_template", v->chat_template);
}

/* The interval k >= 2 at which layers attend when exactly every k-th of n does ((l + 1) % k ==
 * 0), else 0. */
static int attn_interval(const elm_hparams *hp, int n) {
    for (int k = 2; k <= n; k++) {
        bool every = true;
        for (int l = 0; l < n && every; l++) every = (hp->recurrent[l] != 0) == ((l + 1) % k != 0);
        if (every) return k;
    }
    return 0;
}

/* Which layers are recurrent, as a family says it (elm_arch.attn_every: full_attention_interval
 * as llama.cpp's converter writes Qwen3.5, or attention.recurrent_layers, one flag per layer, as
 * llama.cpp's model saver, where no interval fits; the MTP layers after the trunk attend). */
static void kv_attn_layers(elm_gguf_writer *w, const char *arch, const elm_hparams *hp) {
    const int n_all = hp->n_layers + hp->n_nextn, every = attn_interval(hp, hp->n_layers);
    if (every && !hp->n_nextn) {
        kv_arch_u32(w, arch, "full_attention_interval", every);
        return;
    }
    char k[128];
    snprintf(k, sizeof k, "%s.attention.recurrent_layers", arch);
    array_head(w, k, ELM_GGUF_U32, (uint64_t)n_all);
    for (int l = 0; l < n_all; l++) put_u32(&w->kv, l < hp->n_layers && hp->recurrent[l]);
}

/* attention.head_count_kv: one count, or one per layer for a hybrid, 0 for its recurrent layers
 * (as llama.cpp's converter writes LFM2 and Granite 4.0-H; Qwen3.5's one count and its attention
 * layers apart), or where layers have their own (Gemma 4), and the recurrent kind's sizes. */
static void kv_kv_heads(elm_gguf_writer *w, const elm_arch *a, const char *arch,
                        const elm_hparams *hp) {
    char k[128];
    snprintf(k, sizeof k, "%s.attention.head_count_kv", arch);
    bool hybrid = false, own = false;
    for (int l = 0; l < hp->n_layers && l < ELM_MAX_LAYERS; l++) {
        hybrid |= hp->recurrent[l] != 0;
        own |= hp->layer_kv_heads[l] != 0;
    }
    if ((!hybrid && !own) || (hybrid && a && a->attn_every)) {
        elm_gguf_kv_u32(w, k, (uint32_t)hp->n_kv_heads);
        if (hybrid) kv_attn_layers(w, arch, hp);
    } else {
        array_head(w, k, ELM_GGUF_I32, (uint64_t)hp->n_layers);
        for (int l = 0; l < hp->n_layers; l++)
            put_u32(&w->kv, hp->recurrent[l] ? 0u : (uint32_t)elm_layer_kv_heads(hp, l));
    }
    /* the family's sizes, which llama.cpp requires of its files even without such a layer */
    if (a && (a->recurrent == ELM_LAYER_MAMBA2 || a->recurrent == ELM_LAYER_DELTANET)) {
        kv_arch_u32(w, arch, "ssm.conv_kernel", hp->conv_l);
        kv_arch_u32(w, arch, "ssm.inner_size", hp->ssm_inner);
        kv_arch_u32(w, arch, "ssm.state_size", hp->ssm_state);
        kv_arch_u32(w, arch, "ssm.time_step_rank", hp->ssm_heads);
        kv_arch_u32(w, arch, "ssm.group_count", hp->ssm_groups);
    } else if (hp->conv_l > 0) {
        kv_arch_u32(w, arch, "shortconv.l_cache", hp->conv_l);
    }
}

/* Granite's keys (model/arch.h: elm_arch.multipliers, rope_switch): its multipliers, and its
 * RoPE switch. */
static void kv_granite(elm_gguf_writer *w, const elm_arch *a, const elm_hparams *hp) {
    const char *arch = a->name;
    if (a->multipliers) {
        kv_arch_f32(w, arch, "embedding_scale", hp->embd_scale);
        kv_arch_f32(w, arch, "residual_scale", hp->residual_scale);
        kv_arch_f32(w, arch, "attention.scale", hp->attn_scale);
        kv_arch_f32(w, arch, "logit_scale", hp->logit_scale);
    }
    if (a->rope_switch) {
        char k[128];
        snprintf(k, sizeof k, "%s.rope.scaling.finetuned", arch);
        kv_bool(w, k, !hp->no_rope);
    }
}

/* feed_forward_length: one size, or one per layer where they differ (Gemma 4 E2B). */
static void kv_ffn(elm_gguf_writer *w, const char *arch, const elm_hparams *hp) {
    char k[128];
    snprintf(k, sizeof k, "%s.feed_forward_length", arch);
    bool per_layer = false;
    for (int l = 0; l < hp->n_layers && l < ELM_MAX_LAYERS; l++) per_layer |= hp->layer_ffn[l];
    if (!per_layer) {
        elm_gguf_kv_u32(w, k, (uint32_t)hp->ffn_dim);
        return;
    }
    array_head(w, k, ELM_GGUF_I32, (uint64_t)hp->n_layers);
    for (int l = 0; l < hp->n_layers; l++) put_u32(&w->kv, (uint32_t)elm_layer_ffn_dim(hp, l));
}

/* Gemma 4's keys as its converter writes them (elm_arch.swa_listed, kv_shared, ple): the list of
 * windowed layers as bools, their head size and RoPE dimensions, the shared KV layers, the
 * per-layer embeddings' size. */
static void kv_gemma4(elm_gguf_writer *w, const elm_arch *a, const elm_hparams *hp) {
    const char *arch = a->name;
    if (a->swa_listed) {
        char k[128];
        snprintf(k, sizeof k, "%s.attention.sliding_window_pattern", arch);
        array_head(w, k, ELM_GGUF_BOOL, (uint64_t)hp->n_layers);
        for (int l = 0; l < hp->n_layers; l++) {
            const uint8_t b = elm_layer_swa(hp, l);
            put(&w->kv, &b, 1);
        }
        const int32_t hd = hp->head_dim_swa > 0 ? hp->head_dim_swa : hp->head_dim;
        kv_arch_u32(w, arch, "attention.key_length_swa", hd);
        kv_arch_u32(w, arch, "attention.value_length_swa", hd);
        kv_arch_u32(w, arch, "rope.dimension_count_swa",
                    hp->rope_dim_swa > 0 ? hp->rope_dim_swa : hp->rope_dim);
    }
    if (a->kv_shared) kv_arch_u32(w, arch, "attention.shared_kv_layers", hp->n_kv_shared);
    if (a->ple) kv_arch_u32(w, arch, "embedding_length_per_layer_input", hp->n_embd_per_layer);
}

/* The keys elm_gguf_begin_model lists. */
static void kv_model(elm_gguf_writer *w, const elm_model *m, uint32_t file_type) {
    const elm_hparams *hp = &m->hp;
    const elm_vocab *v = &m->vocab;
    /* GGUF names a pre-tokenizer; regexes from a tokenizer.json that match none cannot be said */
    if (v->n_tokens > 0 && !strcmp(v->model, "gpt2") && !v->pre[0] && !w->first.code)
        elm_errorf(&w->first, ELM_ERR_UNSUPPORTED, "%s: the tokenizer's pre-tokenizer (regexes "
                   "from tokenizer.json) is none GGUF can name (%s)", w->path, elm_pretok_names());
    const char *arch = hp->arch[0] ? hp->arch : "llama";
    const elm_arch *a = elm_arch_find(arch);
    elm_gguf_kv_str(w, "general.architecture", arch);
    if (m->name[0]) elm_gguf_kv_str(w, "general.name", m->name);
    elm_gguf_kv_u32(w, "general.file_type", file_type);
    elm_gguf_kv_u32(w, "general.quantization_version", GGUF_QUANTIZATION_VERSION);
    kv_arch_u32(w, arch, "context_length", hp->n_ctx_train);
    kv_arch_u32(w, arch, "embedding_length", hp->dim);
    kv_arch_u32(w, arch, "block_count", hp->n_layers + hp->n_nextn);
    if (hp->n_nextn > 0) kv_arch_u32(w, arch, "nextn_predict_layers", hp->n_nextn);
    kv_ffn(w, arch, hp);
    if (hp->n_expert > 0) {
        kv_arch_u32(w, arch, "expert_count", hp->n_expert);
        kv_arch_u32(w, arch, "expert_used_count", hp->n_expert_used);
        kv_arch_u32(w, arch, "expert_feed_forward_length", hp->expert_ffn_dim);
        if (hp->shexp_ffn_dim > 0)
            kv_arch_u32(w, arch, "expert_shared_feed_forward_length", hp->shexp_ffn_dim);
        /* what LFM2-MoE's converter writes beyond Qwen3-MoE's */
        if (hp->n_dense_lead > 0)
            kv_arch_u32(w, arch, "leading_dense_block_count", hp->n_dense_lead);
        if (hp->moe_gating > ELM_MOE_SOFTMAX)
            kv_arch_u32(w, arch, "expert_gating_func", hp->moe_gating);
    }
    kv_arch_u32(w, arch, "attention.head_count", hp->n_heads);
    kv_kv_heads(w, a, arch, hp);
    if (hp->rope_dim > 0) kv_arch_u32(w, arch, "rope.dimension_count", hp->rope_dim);
    if (hp->rope_sections[0] || hp->rope_sections[1] || hp->rope_sections[2] ||
        hp->rope_sections[3]) {
        char k[128];
        snprintf(k, sizeof k, "%s.rope.dimension_sections", arch);
        array_head(w, k, ELM_GGUF_I32, 4);
        for (int i = 0; i < 4; i++) put_u32(&w->kv, (uint32_t)hp->rope_sections[i]);
    }
    kv_arch_f32(w, arch, "attention.layer_norm_rms_epsilon", hp->rms_eps);
    kv_arch_f32(w, arch, "rope.freq_base", hp->rope_theta);
    kv_arch_u32(w, arch, "vocab_size", hp->n_vocab);
    /* what llama.cpp reads beyond the Llama keys: a head size not dim / heads (Gemma), Mistral's
     * window, linear RoPE scaling (Llama 3.1's comes as the rope_freqs tensor, LongRoPE's as
     * rope_factors_long/short with the original context and the attention factor) */
    if (hp->head_dim > 0 && (hp->head_dim * hp->n_heads != hp->dim || hp->swa_listed)) {
        kv_arch_u32(w, arch, "attention.key_length", hp->head_dim);
        kv_arch_u32(w, arch, "attention.value_length", hp->head_dim);
    }
    if (a) kv_gemma4(w, a, hp);
    if (hp->n_swa > 0) kv_arch_u32(w, arch, "attention.sliding_window", hp->n_swa);
    /* interleaved local layers: written when not llama.cpp's defaults for the family (Gemma 3:
     * every 6th global, 10000; gpt-oss: every 2nd) */
    if (hp->swa_period > 0 && hp->swa_period != (a && a->swa_period ? a->swa_period : 6))
        kv_arch_u32(w, arch, "attention.sliding_window_pattern", hp->swa_period);
    if (hp->rope_theta_swa > 0 && hp->rope_theta_swa != 10000.0f)
        kv_arch_f32(w, arch, "rope.freq_base_swa", hp->rope_theta_swa);
    /* a family with a default softcap (Gemma 4: 30) says it has none too */
    if (hp->logit_softcap > 0 || (a && a->softcap > 0))
        kv_arch_f32(w, arch, "final_logit_softcapping", hp->logit_softcap);
    if (a) kv_granite(w, a, hp);
    /* YaRN as the converter writes config.json's rope_scaling: type, factor, original context
     * and the betas */
    if (hp->rope_yarn || (hp->rope_freq_scale > 0 && hp->rope_freq_scale != 1.0f)) {
        char k[128];
        snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
        elm_gguf_kv_str(w, k, hp->rope_yarn ? "yarn" : "linear");
        kv_arch_f32(w, arch, "rope.scaling.factor", 1.0f / hp->rope_freq_scale);
    }
    if (hp->n_ctx_orig > 0 && (hp->n_ctx_orig != hp->n_ctx_train || hp->rope_yarn))
        kv_arch_u32(w, arch, "rope.scaling.original_context_length", hp->n_ctx_orig);
    if (hp->rope_yarn) {
        kv_arch_f32(w, arch, "rope.scaling.yarn_beta_fast", hp->yarn_beta_fast);
        kv_arch_f32(w, arch, "rope.scaling.yarn_beta_slow", hp->yarn_beta_slow);
    }
    if (hp->rope_attn_factor > 0 && hp->rope_attn_factor != 1.0f)
        kv_arch_f32(w, arch, "rope.scaling.attn_factor", hp->rope_attn_factor);
    /* an embedding model's pooling and Dense projections, as llama.cpp's converter says them */
    if (hp->pooling > 0) kv_arch_u32(w, arch, "pooling_type", hp->pooling);
    if (hp->dense_dim > 0) {
        kv_arch_u32(w, arch, "dense_2_feat_in", hp->dim);
        kv_arch_u32(w, arch, "dense_2_feat_out", hp->dense_dim);
        kv_arch_u32(w, arch, "dense_3_feat_in", hp->dense_dim);
        kv_arch_u32(w, arch, "dense_3_feat_out", hp->dim);
    }
    if (v->n_tokens > 0) kv_vocab(w, v);
}

/* Bytes of a tensor of this type and shape, or 0 when it has no layout. */
static uint64_t tensor_bytes(elm_type type, int n_dims, const int64_t *ne) {
    if (n_dims < 1 || n_dims > ELM_MAX_DIMS) return 0;
    uint64_t rows = 1;
    for (int d = 1; d < n_dims; d++) {
        if (ne[d] < 1 || (uint64_t)ne[d] > UINT64_MAX / rows) return 0;
        rows *= (uint64_t)ne[d];
    }
    const uint64_t row = elm_row_bytes(type, ne[0]);
    return row && rows <= UINT64_MAX / row ? row * rows : 0;
}

void elm_gguf_add_tensor(elm_gguf_writer *w, const char *name, elm_type type, int n_dims,
                         const int64_t *ne) {
    const uint64_t nbytes = tensor_bytes(type, n_dims, ne);
    if (!nbytes) {
        const elm_type_traits *tt = elm_type_get(type);
        if (!w->first.code)
            elm_errorf(&w->first, ELM_ERR_ARG, "%s: tensor '%s': %d dimensions with rows of %lld "
                       "weights cannot be laid out as %s", w->path, name, n_dims,
                       (long long)(n_dims >= 1 ? ne[0] : 0), tt ? tt->name : "an unknown type");
        return;
    }
    if (w->n == w->cap) {
        const int32_t cap = w->cap ? 2 * w->cap : 64;
        wtensor *t = realloc(w->t, sizeof *t * (size_t)cap);
        if (!t) {
            if (!w->first.code) elm_errorf(&w->first, ELM_ERR_NOMEM, "%s: out of memory", w->path);
            return;
        }
        w->t = t, w->cap = cap;
    }
    w->t[w->n++] = (wtensor){w->names.len, nbytes};
    put(&w->names, name, strlen(name) + 1);
    put_str(&w->table, name, strlen(name));
    put_u32(&w->table, (uint32_t)n_dims);
    for (int d = 0; d < n_dims; d++) put_u64(&w->table, (uint64_t)ne[d]);
    put_u32(&w->table, (uint32_t)type);
    put_u64(&w->table, w->data_bytes);
    w->data_bytes += (nbytes + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT;
}

/* ------------------------------------------------------------------------------ output */

static elm_status emit(elm_gguf_writer *w, const void *p, size_t n, elm_error *err) {
    elm_status st = elm_out_write(&w->out, p, n, err);
    if (!st) w->pos += n;
    return st;
}

static elm_status pad(elm_gguf_writer *w, elm_error *err) {
    static const uint8_t zeros[GGUF_ALIGNMENT];
    return emit(w, zeros, (size_t)((GGUF_ALIGNMENT - w->pos % GGUF_ALIGNMENT) % GGUF_ALIGNMENT),
                err);
}

static void drop_description(elm_gguf_writer *w) {
    free(w->kv.s);
    free(w->table.s);
    w->kv = w->table = (elm_sbuf){0};
}

elm_status elm_gguf_begin(elm_gguf_writer *w, elm_error *err) {
    if (w->state != DESCRIBING)
        return elm_errorf(err, ELM_ERR_ARG, "%s: the GGUF writer has begun already", w->path);
    if (!w->first.code && (w->kv.oom || w->table.oom || w->names.oom))
        elm_errorf(&w->first, ELM_ERR_NOMEM, "%s: out of memory", w->path);
    if (w->first.code) {
        if (err) *err = w->first;
        return w->first.code;
    }
    elm_status st = elm_out_open(&w->out, w->path, err);
    if (st) return st;
    w->state = OPEN;
    const uint32_t version = GGUF_VERSION;
    const uint64_t counts[2] = {(uint64_t)w->n, w->n_kv};
    if (!(st = emit(w, "GGUF", 4, err)) && !(st = emit(w, &version, 4, err)) &&
        !(st = emit(w, counts, sizeof counts, err)) && !(st = emit(w, w->kv.s, w->kv.len, err)))
        st = emit(w, w->table.s, w->table.len, err);
    /* the keys can be megabytes (a vocab), not to be held while the tensors are produced */
    drop_description(w);
    return st;
}

elm_status elm_gguf_begin_model(const char *path, const elm_model *m, const elm_tensor *tensors,
                                int32_t n, uint32_t file_type, elm_gguf_writer **out,
                                elm_error *err) {
    *out = NULL;
    elm_gguf_writer *w = elm_gguf_writer_new(path, false);
    if (!w) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    kv_model(w, m, file_type);
    for (int32_t i = 0; i < n; i++)
        elm_gguf_add_tensor(w, tensors[i].name, tensors[i].type, tensors[i].n_dims, tensors[i].ne);
    elm_status st = elm_gguf_begin(w, err);
    if (st) {
        elm_gguf_writer_free(w);
        return st;
    }
    *out = w;
    return ELM_OK;
}

elm_status elm_gguf_write_tensor(elm_gguf_writer *w, int32_t i, const void *data, size_t nbytes,
                                 elm_error *err) {
    if (w->state != OPEN)
        return elm_errorf(err, ELM_ERR_ARG, "%s: tensor %d written %s", w->path, i,
                          w->state == DESCRIBING ? "before the file is begun" : "after its end");
    if (i < 0 || i >= w->n)
        return elm_errorf(err, ELM_ERR_ARG, "%s: tensor %d written, the table has %d", w->path, i,
                          w->n);
    const char *name = w->names.s + w->t[i].name_at;
    if (i != w->next)
        return elm_errorf(err, ELM_ERR_ARG, "%s: tensor '%s' (%d) written out of order: the next "
                          "is %d", w->path, name, i, w->next);
    if (nbytes != w->t[i].nbytes)
        return elm_errorf(err, ELM_ERR_ARG, "%s: tensor '%s': %zu bytes written, its type and "
                          "shape take %llu", w->path, name, nbytes,
                          (unsigned long long)w->t[i].nbytes);
    elm_status st = pad(w, err);
    if (!st) st = emit(w, data, nbytes, err);
    if (!st) w->next++;
    return st;
}

elm_status elm_gguf_end(elm_gguf_writer *w, uint64_t *file_bytes, elm_error *err) {
    if (w->state != OPEN)
        return elm_errorf(err, ELM_ERR_ARG, "%s: the GGUF writer ended %s", w->path,
                          w->state == DESCRIBING ? "before it began" : "twice");
    if (w->next != w->n)
        return elm_errorf(err, ELM_ERR_ARG, "%s: %d of the %d tensors written", w->path, w->next,
                          w->n);
    elm_status st = w->pad_end ? pad(w, err) : ELM_OK;
    if (st) return st;
    /* commit removes the temporary file itself when it fails */
    w->state = ENDED;
    if ((st = elm_out_commit(&w->out, err))) return st;
    if (file_bytes) *file_bytes = w->pos;
    return ELM_OK;
}

void elm_gguf_writer_free(elm_gguf_writer *w) {
    if (!w) return;
    if (w->state == OPEN) elm_out_abort(&w->out);
    drop_description(w);
    free(w->names.s);
    free(w->t);
    free(w->path);
    free(w);
}

elm_status elm_gguf_write_model(const elm_model *m, const char *path, elm_error *err) {
    elm_gguf_writer *w;
    elm_status st = elm_gguf_begin_model(path, m, m->tensors, m->n_tensors, m->file_type, &w, err);
    for (int32_t i = 0; i < m->n_tensors && !st; i++)
        st = elm_gguf_write_tensor(w, i, m->tensors[i].data, m->tensors[i].nbytes, err);
    if (!st) st = elm_gguf_end(w, NULL, err);
    elm_gguf_writer_free(w);
    return st;
}
