/* GGUF v2/v3 model loader (docs/formats.md, "GGUF v3"): maps the file, parses it (gguf_parse.h:
 * every count, length and offset checked before use), reads the Llama hyper-parameters and the
 * tokenizer, and points the model's tensors into the mapping. */
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/gguf_parse.h"
#include "formats/loaders.h"
#include "model/arch.h"
#include "tokenizer/pretok.h"

/* Optional int32 key >= 0; *out unchanged when absent. */
static elm_status get_i32(const elm_gguf *g, const char *key, int32_t *out, elm_error *err) {
    int64_t v = *out;
    elm_status st = elm_gguf_get_int(g, key, 0, INT32_MAX, &v, err);
    if (!st) *out = (int32_t)v;
    return st;
}

/* ---- tokenizer ---- */

/* Token ids are u32 in llama.cpp files, with 0xFFFFFFFF (or any negative value) meaning "none". */
static elm_status get_token_id(const elm_gguf *g, const char *key, int32_t *out, elm_error *err) {
    if (!elm_gguf_find(g, key)) return ELM_OK;
    int64_t v = 0;
    elm_status st = elm_gguf_get_int(g, key, INT64_MIN, INT64_MAX, &v, err);
    if (st) return st;
    if (v < 0 || v == UINT32_MAX) v = -1;
    if (v > INT32_MAX)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' = %lld is not a token id", g->path,
                          key, (long long)v);
    *out = (int32_t)v;
    return ELM_OK;
}

static elm_status read_merges(const elm_gguf *g, const elm_gguf_kv *kv, elm_vocab *v,
                              elm_error *err) {
    if (kv->count > (1u << 24))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %llu merges (at most 2^24 allowed)", g->path,
                          (unsigned long long)kv->count);
    v->merges = calloc(kv->count ? (size_t)kv->count : 1, sizeof *v->merges);
    if (!v->merges) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    v->n_merges = (int32_t)kv->count;
    size_t pos = kv->val;
    for (int32_t i = 0; i < v->n_merges; i++) {
        elm_gguf_str s = elm_gguf_next_str(g, &pos);
        if (!(v->merges[i] = malloc(s.len + 1)))
            return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(v->merges[i], s.s, s.len);
        v->merges[i][s.len] = '\0';
    }
    return ELM_OK;
}

/* Fills and finalizes v from the tokenizer.ggml.* keys. On error v may be partly filled; the
 * caller frees it. */
static elm_status read_vocab(const elm_gguf *g, elm_vocab *v, elm_error *err) {
    elm_status st;
    elm_gguf_str model;
    bool found;
    if ((st = elm_gguf_get_str(g, "tokenizer.ggml.model", &model, &found, err))) return st;
    if (!found)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: no tokenizer (key 'tokenizer.ggml.model' missing)", g->path);
    bool gpt2 = elm_gguf_str_is(model, "gpt2"), gemma4 = elm_gguf_str_is(model, "gemma4");
    if (!gpt2 && !gemma4 && !elm_gguf_str_is(model, "llama"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: tokenizer model '%.*s' is not supported "
                          "(only 'llama', 'gpt2' and 'gemma4')", g->path,
                          (int)(model.len > 64 ? 64 : model.len), model.s);
    elm_gguf_str pre = {"", 0};
    if (gpt2 && (st = elm_gguf_get_str(g, "tokenizer.ggml.pre", &pre, &found, err))) return st;
    char pre_name[32];
    snprintf(pre_name, sizeof pre_name, "%.*s", (int)(pre.len < 31 ? pre.len : 31), pre.s);
    if (gpt2 && (pre.len > 31 || !elm_pretok_canonical(pre_name)))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: tokenizer.ggml.pre '%.*s' is not supported (known: %s)", g->path,
                          (int)(pre.len > 64 ? 64 : pre.len), pre.s, elm_pretok_names());
    const elm_gguf_kv *tokens, *scores, *types, *merges;
    if ((st = elm_gguf_get_array(g, "tokenizer.ggml.tokens", ELM_GGUF_STRING, -1, &tokens, err)))
        return st;
    if (!tokens)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'tokenizer.ggml.tokens' missing", g->path);
    if (tokens->count == 0 || tokens->count > (1u << 24))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tokenizer has %llu tokens (1..2^24 allowed)",
                          g->path, (unsigned long long)tokens->count);
    int32_t n = (int32_t)tokens->count;
    if ((st = elm_gguf_get_array(g, "tokenizer.ggml.scores", ELM_GGUF_F32, n, &scores, err)) ||
        (st = elm_gguf_get_array(g, "tokenizer.ggml.token_type", ELM_GGUF_I32, n, &types, err)) ||
        (st = elm_gguf_get_array(g, "tokenizer.ggml.merges", ELM_GGUF_STRING, -1, &merges, err)))
        return st;

    if ((st = elm_vocab_alloc(v, n, scores != NULL, err))) return st;
    snprintf(v->model, sizeof v->model, "%s", gpt2 ? "gpt2" : "llama");
    if (gpt2) {
        /* llama.cpp's defaults for byte-level vocabs; Llama 3's pre-tokenizer also takes whole
         * words that are tokens, and adds BOS */
        snprintf(v->pre, sizeof v->pre, "%s", elm_pretok_canonical(pre_name));
        v->add_space_prefix = false;
        v->ignore_merges = v->add_bos = strcmp(v->pre, "llama-bpe") == 0;
    } else if (gemma4) {
        /* SentencePiece-style BPE ranked by merges on raw UTF-8 with "<0xXX>" byte fallback,
         * no space prefix, cut at runs of newlines (llama.cpp's "gemma4" tokenizer) */
        if (!merges)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: gemma4 tokenizer without "
                              "'tokenizer.ggml.merges'", g->path);
        snprintf(v->pre, sizeof v->pre, "gemma4");
        v->add_space_prefix = false;
    }
    size_t pos = tokens->val;
    for (int32_t i = 0; i < n; i++) {
        elm_gguf_str s = elm_gguf_next_str(g, &pos);
        if ((st = elm_vocab_set_piece(v, i, s.s, s.len, err))) return st;
    }
    for (int32_t i = 0; i < n; i++) {
        if (scores) memcpy(&v->scores[i], g->base + scores->val + 4 * (size_t)i, 4);
        if (types) memcpy(&v->types[i], g->base + types->val + 4 * (size_t)i, 4);
        else v->types[i] = ELM_TOKEN_NORMAL;
    }
    if (merges && (st = read_merges(g, merges, v, err))) return st;
    if ((st = get_token_id(g, "tokenizer.ggml.bos_token_id", &v->bos_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.eos_token_id", &v->eos_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.unknown_token_id", &v->unk_id, err)) ||
        (st = get_token_id(g, "tokenizer.ggml.padding_token_id", &v->pad_id, err)) ||
        (st = elm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
        (st = elm_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos, err)) ||
        (st = elm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err)))
        return st;
    if (gemma4) v->add_bos = true; /* as llama.cpp: Gemma 4 files may say false, wrongly */
    elm_gguf_str tmpl;
    if ((st = elm_gguf_get_str(g, "tokenizer.chat_template", &tmpl, &found, err))) return st;
    if (found) {
        if (!(v->chat_template = malloc(tmpl.len + 1)))
            return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(v->chat_template, tmpl.s, tmpl.len);
        v->chat_template[tmpl.len] = '\0';
    }
    return elm_vocab_finalize(v, g->path, err);
}

/* ---- hyper-parameters ---- */

/* <arch>.<suffix> into buf */
static const char *arch_key(char *buf, size_t cap, const char *arch, const char *suffix) {
    snprintf(buf, cap, "%s.%s", arch, suffix);
    return buf;
}

/* attention.head_count_kv: one count, or one per layer where a hybrid's recurrent layers have 0
 * (LFM2, Granite 4.0-H), those becoming hp->recurrent, and Gemma 4's layers may have their own
 * (hp->layer_kv_heads where they differ; n_kv_heads the largest). */
static elm_status read_kv_heads(const elm_gguf *g, elm_hparams *hp, elm_error *err) {
    char k[96];
    arch_key(k, sizeof k, hp->arch, "attention.head_count_kv");
    if (!elm_gguf_find(g, k)) {
        hp->n_kv_heads = hp->n_heads;
        return ELM_OK;
    }
    int32_t heads[ELM_MAX_LAYERS];
    bool per_layer;
    elm_status st =
        elm_gguf_get_layer_ints(g, k, hp->n_layers, 0, INT32_MAX, heads, &per_layer, err);
    if (st) return st;
    hp->n_kv_heads = 0;
    bool differ = false;
    for (int l = 0; l < hp->n_layers; l++) {
        if (per_layer && heads[l] == 0) hp->recurrent[l] = 1;
        else if (hp->n_kv_heads && heads[l] != hp->n_kv_heads) differ = true;
        if (heads[l] > hp->n_kv_heads) hp->n_kv_heads = heads[l];
    }
    for (int l = 0; differ && l < hp->n_layers; l++) hp->layer_kv_heads[l] = heads[l];
    return ELM_OK;
}

/* feed_forward_length: one size, or one per layer (Gemma 4 E2B: doubled in its last layers),
 * then hp->layer_ffn, and ffn_dim the largest. */
static elm_status read_ffn(const elm_gguf *g, elm_hparams *hp, elm_error *err) {
    char k[96];
    arch_key(k, sizeof k, hp->arch, "feed_forward_length");
    if (!elm_gguf_find(g, k))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' missing", g->path, k);
    bool per_layer;
    elm_status st = elm_gguf_get_layer_ints(g, k, hp->n_layers, 0, INT32_MAX, hp->layer_ffn,
                                            &per_layer, err);
    hp->ffn_dim = 0;
    for (int l = 0; !st && l < hp->n_layers; l++)
        if (hp->layer_ffn[l] > hp->ffn_dim) hp->ffn_dim = hp->layer_ffn[l];
    if (!per_layer) memset(hp->layer_ffn, 0, sizeof hp->layer_ffn);
    return st;
}

/* Gemma 4's layers of two kinds (elm_arch.swa_listed) and caches shared by its last layers
 * (kv_shared), with llama.cpp's requirements and defaults: the list of windowed layers, the
 * window and the windowed layers' head size are required, their RoPE dimensions default to the
 * global layers'; and its per-layer embeddings' size (ple), required. */
static elm_status read_gemma4(const elm_gguf *g, const elm_arch *a, elm_hparams *hp,
                              elm_error *err) {
    const char *arch = hp->arch;
    char k[96];
    elm_status st;
    if (a->swa_listed) {
        int32_t swa[ELM_MAX_LAYERS], v_swa = 0;
        bool per_layer;
        const char *required[] = {"attention.sliding_window_pattern", "attention.sliding_window",
                                  "attention.key_length_swa"};
        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
            if (!elm_gguf_find(g, arch_key(k, sizeof k, arch, required[i])))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' missing", g->path, k);
        if ((st = elm_gguf_get_layer_ints(g, arch_key(k, sizeof k, arch,
                                                      "attention.sliding_window_pattern"),
                                          hp->n_layers, 0, INT32_MAX, swa, &per_layer, err)) ||
            (st = get_i32(g, arch_key(k, sizeof k, arch, "attention.key_length_swa"),
                          &hp->head_dim_swa, err)) ||
            (st = get_i32(g, arch_key(k, sizeof k, arch, "attention.value_length_swa"), &v_swa,
                          err)) ||
            (st = get_i32(g, arch_key(k, sizeof k, arch, "rope.dimension_count_swa"),
                          &hp->rope_dim_swa, err)))
            return st;
        if (v_swa && v_swa != hp->head_dim_swa)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: windowed layers' key length %d "
                              "differs from their value length %d", g->path, hp->head_dim_swa,
                              v_swa);
        hp->swa_listed = true;
        for (int l = 0; l < hp->n_layers; l++) hp->swa_layer[l] = swa[l] != 0;
    }
    if (a->kv_shared &&
        (st = get_i32(g, arch_key(k, sizeof k, arch, "attention.shared_kv_layers"),
                      &hp->n_kv_shared, err)))
        return st;
    if (a->ple) {
        if (!elm_gguf_find(g, arch_key(k, sizeof k, arch, "embedding_length_per_layer_input")))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' missing", g->path, k);
        if ((st = get_i32(g, k, &hp->n_embd_per_layer, err))) return st;
    }
    return ELM_OK;
}

/* Granite's keys, for the families that read them (model/arch.h): its multipliers, and RoPE off
 * when rope.scaling.finetuned is false (absent: on, as llama.cpp takes it). */
static elm_status read_granite(const elm_gguf *g, const elm_arch *a, elm_hparams *hp,
                               elm_error *err) {
    char k[96];
    elm_status st;
    if (a->multipliers &&
        ((st = elm_gguf_get_f32(g, arch_key(k, sizeof k, hp->arch, "embedding_scale"),
                                &hp->embd_scale, err)) ||
         (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, hp->arch, "residual_scale"),
                                &hp->residual_scale, err)) ||
         (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, hp->arch, "attention.scale"),
                                &hp->attn_scale, err)) ||
         (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, hp->arch, "logit_scale"),
                                &hp->logit_scale, err))))
        return st;
    bool rope = true;
    if (a->rope_switch &&
        (st = elm_gguf_get_bool(g, arch_key(k, sizeof k, hp->arch, "rope.scaling.finetuned"),
                                &rope, err)))
        return st;
    hp->no_rope = !rope;
    return ELM_OK;
}

/* A family that names its attention layers by interval (elm_arch.attn_every: Qwen3.5):
 * attention.recurrent_layers, one flag per layer, or else every full_attention_interval-th layer
 * attends (the family's interval when absent, as llama.cpp), counted over the trunk. */
static elm_status read_attn_layers(const elm_gguf *g, elm_hparams *hp, elm_error *err) {
    const elm_arch *a = elm_arch_find(hp->arch);
    if (!a || !a->attn_every) return ELM_OK;
    char k[96];
    arch_key(k, sizeof k, hp->arch, "attention.recurrent_layers");
    if (elm_gguf_find(g, k)) {
        int32_t flags[ELM_MAX_LAYERS];
        bool per_layer;
        elm_status st = elm_gguf_get_layer_ints(g, k, hp->n_layers, 0, 1, flags, &per_layer, err);
        for (int l = 0; !st && l < hp->n_layers; l++) hp->recurrent[l] = (uint8_t)flags[l];
        return st;
    }
    int64_t every = a->attn_every;
    elm_status st = elm_gguf_get_int(g, arch_key(k, sizeof k, hp->arch, "full_attention_interval"),
                                     1, ELM_MAX_LAYERS, &every, err);
    for (int l = 0; !st && l < hp->n_layers - hp->n_nextn; l++)
        hp->recurrent[l] = (l + 1) % every != 0;
    return st;
}

/* rope.dimension_sections (M-RoPE): four counts, when the file has them. */
static elm_status read_rope_sections(const elm_gguf *g, elm_hparams *hp, elm_error *err) {
    char k[96];
    const elm_gguf_kv *kv;
    elm_status st = elm_gguf_get_array(g, arch_key(k, sizeof k, hp->arch,
                                                   "rope.dimension_sections"),
                                       ELM_GGUF_I32, 4, &kv, err);
    if (!st && kv) memcpy(hp->rope_sections, g->base + kv->val, sizeof hp->rope_sections);
    return st;
}

/* Hyper-parameters under the architecture's key prefix (llama.cpp's names). */
static elm_status read_hparams(const elm_gguf *g, const elm_arch *a, elm_hparams *hp,
                               elm_error *err) {
    const char *arch = hp->arch;
    int32_t key_length = 0, value_length = 0;
    struct { const char *suffix; int32_t *dst; bool required; } ints[] = {
        {"context_length", &hp->n_ctx_train, true},
        {"embedding_length", &hp->dim, true},
        {"block_count", &hp->n_layers, true},
        {"attention.head_count", &hp->n_heads, true},
        {"attention.key_length", &key_length, false},
        {"attention.value_length", &value_length, false},
        {"attention.sliding_window", &hp->n_swa, false},
        /* Gemma 3's period (Gemma 4's list: read_gemma4) */
        {a->swa_listed ? NULL : "attention.sliding_window_pattern", &hp->swa_period, false},
        {"rope.dimension_count", &hp->rope_dim, false},
        {"rope.scaling.original_context_length", &hp->n_ctx_orig, false},
        {"vocab_size", &hp->n_vocab, false},
        {"shortconv.l_cache", &hp->conv_l, false},
        {"ssm.conv_kernel", &hp->conv_l, false},
        {"ssm.inner_size", &hp->ssm_inner, false},
        {"ssm.state_size", &hp->ssm_state, false},
        {"ssm.time_step_rank", &hp->ssm_heads, false},
        {"ssm.group_count", &hp->ssm_groups, false},
        {"nextn_predict_layers", &hp->n_nextn, false},
        {"expert_count", &hp->n_expert, false},
        {"expert_used_count", &hp->n_expert_used, false},
        {"expert_feed_forward_length", &hp->expert_ffn_dim, false},
        {"expert_shared_feed_forward_length", &hp->shexp_ffn_dim, false},
        {"leading_dense_block_count", &hp->n_dense_lead, false},
        {"expert_gating_func", &hp->moe_gating, false},
        {"pooling_type", &hp->pooling, false},
        {"dense_2_feat_out", &hp->dense_dim, false},
    };
    elm_status st;
    char k[96];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (!ints[i].suffix) continue;
        arch_key(k, sizeof k, arch, ints[i].suffix);
        if (ints[i].required && !elm_gguf_find(g, k))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' missing", g->path, k);
        if ((st = get_i32(g, k, ints[i].dst, err))) return st;
    }
    if (hp->n_layers < 1 || hp->n_layers > ELM_MAX_LAYERS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d layers out of range 1..%d", g->path,
                          hp->n_layers, ELM_MAX_LAYERS);
    if ((st = read_ffn(g, hp, err)) || (st = read_kv_heads(g, hp, err)) ||
        (st = read_attn_layers(g, hp, err)) || (st = read_rope_sections(g, hp, err)) ||
        (st = read_gemma4(g, a, hp, err)))
        return st;
    if (hp->n_nextn >= hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d next-token layers (nextn_predict_layers) "
                          "of %d layers", g->path, hp->n_nextn, hp->n_layers);
    hp->n_layers -= hp->n_nextn; /* the MTP blocks come after the trunk and attend */
    memset(hp->recurrent + hp->n_layers, 0, (size_t)hp->n_nextn);
    if (key_length != value_length)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: attention key length %d differs from value length %d", g->path,
                          key_length, value_length);
    hp->head_dim = key_length;
    hp->rms_eps = 1e-5f;
    hp->rope_theta = 10000.0f;
    hp->logit_softcap = a->softcap;
    if ((st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "attention.layer_norm_rms_epsilon"),
                               &hp->rms_eps, err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.freq_base"), &hp->rope_theta,
                               err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.freq_base_swa"),
                               &hp->rope_theta_swa, err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "final_logit_softcapping"),
                               &hp->logit_softcap, err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.scaling.attn_factor"),
                               &hp->rope_attn_factor, err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.scaling.yarn_beta_fast"),
                               &hp->yarn_beta_fast, err)) ||
        (st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.scaling.yarn_beta_slow"),
                               &hp->yarn_beta_slow, err)))
        return st;
    if ((st = read_granite(g, a, hp, err))) return st;
    /* RoPE scaling: none, linear and yarn run here; llama3's factors come as the rope_freqs tensor,
     * LongRoPE's as rope_factors_long/short (the type is not written by llama.cpp's converter,
     * but "longrope" is one llama.cpp reads) */
    elm_gguf_str type;
    bool found;
    if ((st = elm_gguf_get_str(g, arch_key(k, sizeof k, arch, "rope.scaling.type"), &type, &found,
                               err)))
        return st;
    hp->rope_yarn = found && elm_gguf_str_is(type, "yarn");
    if (found && (elm_gguf_str_is(type, "linear") || hp->rope_yarn)) {
        float factor = 1.0f;
        if ((st = elm_gguf_get_f32(g, arch_key(k, sizeof k, arch, "rope.scaling.factor"), &factor,
                                   err)))
            return st;
        if (!(factor >= 1.0f && factor <= 1024.0f))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: RoPE scaling factor %g out of range",
                              g->path, factor);
        hp->rope_freq_scale = 1.0f / factor;
    } else if (found && !elm_gguf_str_is(type, "none") && !elm_gguf_str_is(type, "longrope")) {
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: RoPE scaling '%.*s' is not supported (none, linear, yarn, "
                          "llama3, longrope)",
                          g->path, (int)(type.len > 32 ? 32 : type.len), type.s);
    }
    return ELM_OK;
}

/* ---- tensors ---- */

/* Adds every tensor of the table to m, its data pointing into the file's bytes. */
static elm_status read_tensors(elm_gguf *g, elm_model *m, elm_error *err) {
    elm_status st = elm_gguf_read_tensors(g, ELM_NAME_MAX, err);
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        const elm_gguf_tensor *t = &g->tensors[i];
        st = elm_model_add_tensor(m, t->name, t->type, t->n_dims, t->ne, (void *)t->data,
                                  (size_t)t->nbytes, err);
    }
    return st;
}

/* ---- entry points ---- */

elm_status elm_load_gguf(elm_model *m, const char *path, bool in_memory, elm_error *err) {
    void *addr;
    size_t size;
    elm_status st = in_memory ? elm_read_file_huge(path, &addr, &size, err)
                              : elm_map_file(path, &addr, &size, err);
    if (st) return st;
    if (addr && (st = in_memory ? elm_model_own_mapping(m, addr, size, err)
                                : elm_model_own_file_mapping(m, addr, size, err)))
        return st;
    elm_gguf g;
    if ((st = elm_gguf_open(&g, path, addr, size, err))) goto done;

    elm_gguf_str s;
    bool found;
    if ((st = elm_gguf_get_str(&g, "general.architecture", &s, &found, err))) goto done;
    if (!found) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'general.architecture' missing", path);
        goto done;
    }
    snprintf(m->hp.arch, sizeof m->hp.arch, "%.*s", (int)(s.len < 31 ? s.len : 31), s.s);
    if ((st = elm_gguf_get_str(&g, "general.name", &s, &found, err))) goto done;
    if (found) snprintf(m->name, sizeof m->name, "%.*s", (int)(s.len < 127 ? s.len : 127), s.s);
    int32_t ftype = 0;
    if ((st = get_i32(&g, "general.file_type", &ftype, err))) goto done;
    m->file_type = (uint32_t)ftype;

    /* the tensors are read for every architecture so that a malformed file is always reported;
     * hyper-parameters only for those elm_model_bind accepts, and the vocab also from a
     * vocab-only file of any other (tokenizing needs nothing else; bind still refuses it) */
    if ((st = read_tensors(&g, m, err))) goto done;
    if (elm_arch_find(m->hp.arch)) {
        char k[96];
        if ((st = read_hparams(&g, elm_arch_find(m->hp.arch), &m->hp, err))) goto done;
        if ((st = read_vocab(&g, &m->vocab, err))) goto done;
        if (!elm_gguf_find(&g, arch_key(k, sizeof k, m->hp.arch, "vocab_size")))
            m->hp.n_vocab = m->vocab.n_tokens;
    } else if (g.n_tensors == 0 && elm_gguf_find(&g, "tokenizer.ggml.model")) {
        /* a vocab-only file of a family edgelm does not run: its vocab when it reads, else the
         * family is what to report (elm_vocab_load gives the vocab's own error) */
        if (read_vocab(&g, &m->vocab, NULL))
            st = elm_errorf(err, ELM_ERR_UNSUPPORTED,
                            "%s: unsupported architecture '%s' (edgelm runs %s)", path,
                            m->hp.arch, elm_arch_names());
    }
done:
    elm_gguf_close(&g);
    return st;
}

elm_status elm_vocab_load(const char *path, elm_vocab *v, elm_error *err) {
    memset(v, 0, sizeof *v);
    void *addr;
    size_t size;
    elm_status st = elm_map_file(path, &addr, &size, err);
    if (st) return st;
    elm_gguf g;
    st = elm_gguf_open(&g, path, addr, size, err);
    if (!st) st = read_vocab(&g, v, err);
    if (st) elm_vocab_free(v);
    elm_gguf_close(&g);
    elm_unmap(addr, size);
    return st;
}
