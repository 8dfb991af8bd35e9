/* Hugging Face config.json -> hyper-parameters of a model of the families of model/arch.h
 * (see hf.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "formats/hf.h"
#include "formats/json_file.h"
#include "formats/json_num.h"
#include "model/arch.h"

/* Positive int32 under `key`; *out untouched when the key is absent and !required. */
static elm_status get_int(const char *path, const cJSON *root, const char *key, bool required,
                          int32_t *out, elm_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    uint64_t v;
    if (!it || cJSON_IsNull(it)) {
        if (required)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing required key '%s'", path, key);
        return ELM_OK;
    }
    if (!elm_json_uint(it, INT32_MAX, &v) || v == 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: '%s' must be a positive integer", path, key);
    *out = (int32_t)v;
    return ELM_OK;
}

/* Non-negative int32 under `key`; *out untouched when the key is absent or null. */
static elm_status get_count(const char *path, const cJSON *root, const char *key, int32_t *out,
                            elm_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    uint64_t v;
    if (!it || cJSON_IsNull(it)) return ELM_OK;
    if (!elm_json_uint(it, INT32_MAX, &v))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: '%s' must be a non-negative integer", path,
                          key);
    *out = (int32_t)v;
    return ELM_OK;
}

static elm_status get_float(const char *path, const cJSON *root, const char *key, float *out,
                            elm_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it || cJSON_IsNull(it)) return ELM_OK;
    if (!cJSON_IsNumber(it) || !(it->valuedouble > 0 && it->valuedouble < 1e30))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: '%s' must be a positive number", path, key);
    *out = (float)it->valuedouble;
    return ELM_OK;
}

/* A token id: integer, or a list whose first element is used (eos_token_id of Llama 3). */
static elm_status get_id(const char *path, const cJSON *root, const char *key, int32_t *out,
                         elm_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (cJSON_IsArray(it)) it = cJSON_GetArrayItem(it, 0);
    if (!it || cJSON_IsNull(it)) return ELM_OK;
    uint64_t v;
    if (!elm_json_uint(it, INT32_MAX, &v))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: '%s' must be a token id", path, key);
    *out = (int32_t)v;
    return ELM_OK;
}

static bool get_true(const cJSON *root, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, key));
}

/* model_type, else the family of architectures[0] ("Qwen2ForCausalLM" -> "qwen2"). */
static const char *model_type(const cJSON *root) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(type)) return type->valuestring;
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!cJSON_IsString(first)) return "llama";
    const char *family = elm_arch_hf_type(first->valuestring);
    return family ? family : first->valuestring;
}

/* The activation the family's MLP uses, from hidden_act (Gemma: hidden_activation first, where
 * transformers takes the tanh approximation whatever hidden_act says). */
static elm_status check_act(const char *path, const cJSON *root, const elm_arch *a,
                            elm_error *err) {
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    const char *want = "silu";
    if (a->act == ELM_ACT_GELU_TANH) {
        const cJSON *hidden = cJSON_GetObjectItemCaseSensitive(root, "hidden_activation");
        act = cJSON_IsString(hidden) ? hidden : NULL;
        want = "gelu_pytorch_tanh";
    }
    if (cJSON_IsString(act) && strcmp(act->valuestring, want) != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: activation '%.32s' is not supported (%s)",
                          path, act->valuestring, want);
    return ELM_OK;
}

/* The family of model_type `type`, or of the class (architectures[0]) where a row names it
 * with that model_type: two families of one model_type differ by class (Gemma3TextModel is
 * EmbeddingGemma, Gemma3ForCausalLM Gemma 3). NULL for a model_type of no family. */
static const elm_arch *arch_of(const cJSON *root, const char *type) {
    const elm_arch *a = elm_arch_from_hf(type);
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    const elm_arch *c = cJSON_IsString(first) ? elm_arch_from_hf_class(first->valuestring) : NULL;
    for (int k = 0; a && c && c != a && k < ELM_ARCH_HF_MAX && c->hf[k].type; k++)
        if (!strcmp(c->hf[k].type, type)) return c;
    return a;
}

/* Sets hp->arch to the GGUF name of the family (from root: arch_of) and refuses what the pass
 * would ignore (in cfg, the language model's keys). */
static elm_status check_arch(const char *path, const cJSON *root, const cJSON *cfg,
                             elm_hparams *hp, const elm_arch **arch, elm_error *err) {
    const char *type = model_type(root);
    const elm_arch *a = arch_of(root, type);
    root = cfg;
    snprintf(hp->arch, sizeof hp->arch, "%s", a ? a->name : type);
    if (!a)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: unsupported architecture '%s' (edgelm runs %s)", path, hp->arch,
                          elm_arch_hf_names());
    *arch = a;
    if (!a->qkv_bias && (get_true(root, "attention_bias") || get_true(root, "mlp_bias")))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: %s with bias terms is not supported",
                          path, type);
    if (get_true(root, "use_sliding_window"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: Qwen2 sliding-window attention (use_sliding_window) is not supported",
                          path);
    return check_act(path, root, a, err);
}

/* A list of 1..ELM_HF_MAX_FACTORS positive numbers under rs[key] into out; its length goes to *n. */
static elm_status get_factors(const char *path, const cJSON *rs, const char *key, float *out,
                              int32_t *n, elm_error *err) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(rs, key), *e;
    const int size = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
    if (size < 1 || size > ELM_HF_MAX_FACTORS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling longrope needs '%s', a list of "
                          "1 to %d numbers", path, key, ELM_HF_MAX_FACTORS);
    int32_t i = 0;
    cJSON_ArrayForEach(e, list) {
        if (!cJSON_IsNumber(e) || !(e->valuedouble > 0 && e->valuedouble < 1e9))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling '%s'[%d] must be a positive "
                              "number", path, key, i);
        out[i++] = (float)e->valuedouble;
    }
    *n = i;
    return ELM_OK;
}

/* LongRoPE (Phi-3.5-mini, Phi-4-mini): long_factor and short_factor of equal length (checked
 * against rope_dim once it is known, parse_config), attention_factor and
 * original_max_position_embeddings when rope_scaling has them. */
static elm_status read_longrope(const char *path, const cJSON *rs, elm_hf_config *c,
                                elm_error *err) {
    int32_t n_long = 0, n_short = 0;
    elm_status st;
    if ((st = get_factors(path, rs, "long_factor", c->long_factor, &n_long, err)) ||
        (st = get_factors(path, rs, "short_factor", c->short_factor, &n_short, err)) ||
        (st = get_int(path, rs, "original_max_position_embeddings", false, &c->hp.n_ctx_orig,
                      err)) ||
        (st = get_float(path, rs, "attention_factor", &c->hp.rope_attn_factor, err)))
        return st;
    if (n_long != n_short)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling long_factor has %d values, "
                          "short_factor %d", path, n_long, n_short);
    c->n_longrope = n_long;
    return ELM_OK;
}

/* YaRN's rope_scaling (gpt-oss): factor and original_max_position_embeddings required,
 * beta_fast and beta_slow (llama.cpp's 32 and 1 when absent); an attention factor is refused
 * (llama.cpp reads none for these files). */
static elm_status read_yarn(const char *path, const cJSON *rs, elm_hparams *hp, elm_error *err) {
    float factor = 0;
    elm_status st;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    if ((st = get_float(path, rs, "factor", &factor, err)) ||
        (st = get_int(path, rs, "original_max_position_embeddings", true, &hp->n_ctx_orig, err)) ||
        (st = get_float(path, rs, "beta_fast", &hp->yarn_beta_fast, err)) ||
        (st = get_float(path, rs, "beta_slow", &hp->yarn_beta_slow, err)))
        return st;
    if (!(factor >= 1 && factor <= 1024))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling yarn 'factor' %g out of range "
                          "[1, 1024]", path, factor);
    if (cJSON_GetObjectItemCaseSensitive(rs, "attention_factor"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rope_scaling yarn 'attention_factor' is "
                          "not supported", path);
    hp->rope_yarn = true;
    hp->rope_freq_scale = 1.0f / factor;
    return ELM_OK;
}

/* rope_scaling: null, "default", "linear" (factor), "llama3" (Llama 3.1), "yarn" (read_yarn) or
 * "longrope" ("su", read_longrope); anything else is refused by name rather than run with the
 * wrong positions. */
static elm_status read_rope_scaling(const char *path, const cJSON *root, elm_hf_config *c,
                                    elm_error *err) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return ELM_OK;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(type)) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    const char *name = cJSON_IsString(type) ? type->valuestring : "?";
    if (!cJSON_IsObject(rs) || !cJSON_IsString(type))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling needs a 'rope_type'", path);
    if (strcmp(name, "default") == 0) return ELM_OK;
    if (strcmp(name, "longrope") == 0 || strcmp(name, "su") == 0)
        return read_longrope(path, rs, c, err);
    if (strcmp(name, "yarn") == 0) return read_yarn(path, rs, &c->hp, err);
    static const char *const keys[4] = {"factor", "low_freq_factor", "high_freq_factor",
                                        "original_max_position_embeddings"};
    float v[4] = {0, 0, 0, 0};
    bool llama3 = strcmp(name, "llama3") == 0;
    if (!llama3 && strcmp(name, "linear") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rope_scaling type '%.32s' is not "
                          "supported (linear, llama3, yarn, longrope)", path, name);
    for (int i = 0; i < (llama3 ? 4 : 1); i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(rs, keys[i]);
        if (!cJSON_IsNumber(it) || !(it->valuedouble > 0 && it->valuedouble < 1e9))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling '%s' must be a positive "
                              "number", path, keys[i]);
        v[i] = (float)it->valuedouble;
    }
    if (llama3 && !(v[0] >= 1 && v[2] > v[1]))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling llama3 factors out of range",
                          path);
    if (llama3) memcpy(c->llama3, v, sizeof v);
    else c->hp.rope_freq_scale = 1.0f / v[0];
    return ELM_OK;
}

/* SmolLM3's layers without RoPE: no_rope_layers (1 = RoPE, 0 = none, one per layer) must be
 * the family's pattern, every nope_every-th layer without, which is all a GGUF file can say
 * (llama.cpp fixes it by architecture); no_rope_layer_interval, when given, must agree. Missing
 * no_rope_layers is an error rather than a guess. */
static elm_status check_nope(const char *path, const cJSON *root, const elm_arch *a,
                             const elm_hparams *hp, elm_error *err) {
    int32_t interval = a->nope_every;
    elm_status st = get_int(path, root, "no_rope_layer_interval", false, &interval, err);
    if (st) return st;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "no_rope_layers");
    if (!layers) return elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'no_rope_layers' missing", path);
    bool same = interval == a->nope_every && cJSON_IsArray(layers) &&
                cJSON_GetArraySize(layers) == hp->n_layers;
    for (int l = 0; same && l < hp->n_layers; l++) {
        const cJSON *e = cJSON_GetArrayItem(layers, l);
        same = cJSON_IsNumber(e) && e->valueint == ((l + 1) % a->nope_every != 0);
    }
    if (!same)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: no_rope_layers must leave out RoPE on "
                          "every %dth layer exactly (as GGUF %s does)", path, a->nope_every,
                          a->name);
    return ELM_OK;
}

/* Gemma 3's local layers: sliding_window (required: there is no safe guess), every
 * sliding_window_pattern-th layer global (default 6; layer_types, when given, must say the same),
 * rope_local_base_freq for the local layers (default 10000), query_pre_attn_scalar for the
 * attention scale (default 256) and final_logit_softcapping when set; attention logit softcapping
 * (Gemma 2) is refused. */
static elm_status read_gemma3(const char *path, const cJSON *root, const elm_arch *a,
                              elm_hparams *hp, elm_error *err) {
    int32_t period = a->swa_period, qpas = 256;
    float cap = 0;
    hp->rope_theta_swa = 10000.0f;
    elm_status st;
    /* transformers' Gemma3TextConfig default base, and its newer per-kind rope_parameters */
    if (!cJSON_GetObjectItemCaseSensitive(root, "rope_theta")) hp->rope_theta = 1000000.0f;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *local = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    if ((full && (st = get_float(path, full, "rope_theta", &hp->rope_theta, err))) ||
        (local && (st = get_float(path, local, "rope_theta", &hp->rope_theta_swa, err))))
        return st;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(full, "rope_type");
    const cJSON *factor = cJSON_GetObjectItemCaseSensitive(full, "factor");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "default") != 0) {
        if (strcmp(kind->valuestring, "linear") != 0 || !cJSON_IsNumber(factor) ||
            !(factor->valuedouble >= 1 && factor->valuedouble <= 1024))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rope_parameters full_attention "
                              "'%.32s' is not supported (linear with a factor)", path,
                              kind->valuestring);
        hp->rope_freq_scale = (float)(1.0 / factor->valuedouble);
    }
    if ((st = get_int(path, root, "sliding_window", true, &hp->n_swa, err)) ||
        (st = get_int(path, root, "sliding_window_pattern", false, &period, err)) ||
        (st = get_int(path, root, "query_pre_attn_scalar", false, &qpas, err)) ||
        (st = get_float(path, root, "rope_local_base_freq", &hp->rope_theta_swa, err)) ||
        (st = get_float(path, root, "final_logit_softcapping", &cap, err)))
        return st;
    const cJSON *soft = cJSON_GetObjectItemCaseSensitive(root, "attn_logit_softcapping");
    if (soft && !cJSON_IsNull(soft))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: attn_logit_softcapping is not supported",
                          path);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    for (int l = 0; cJSON_IsArray(types) && l < cJSON_GetArraySize(types); l++) {
        const cJSON *e = cJSON_GetArrayItem(types, l);
        const bool global = (l + 1) % period == 0;
        if (!cJSON_IsString(e) ||
            strcmp(e->valuestring, global ? "full_attention" : "sliding_attention") != 0)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: layer_types must make every %dth "
                              "layer full_attention and the others sliding_attention", path,
                              period);
    }
    hp->swa_period = period;
    hp->attn_scale = 1.0f / sqrtf((float)qpas);
    hp->logit_softcap = cap;
    return ELM_OK;
}

/* A per-layer layer_types, each entry `one` or `other`, into out (1 where `one`: a hybrid's
 * recurrent layer, Gemma 4's windowed layer). ELM_OK with nothing set when the key is absent or
 * not an array (*found false). */
static elm_status read_layer_types(const char *path, const cJSON *root, const char *one,
                                   const char *other, int32_t n_layers,
                                   uint8_t out[ELM_MAX_LAYERS], bool *found, elm_error *err) {
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    *found = cJSON_IsArray(types);
    if (n_layers > ELM_MAX_LAYERS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: %d layers, at most %d", path, n_layers,
                          ELM_MAX_LAYERS);
    if (!*found) return ELM_OK;
    if (cJSON_GetArraySize(types) != n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: 'layer_types' has %d entries for %d layers",
                          path, cJSON_GetArraySize(types), n_layers);
    for (int l = 0; l < n_layers; l++) {
        const cJSON *e = cJSON_GetArrayItem(types, l);
        const bool r = cJSON_IsString(e) && strcmp(e->valuestring, one) == 0;
        if (!r && !(cJSON_IsString(e) && strcmp(e->valuestring, other) == 0))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: 'layer_types'[%d] is not '%s' or '%s'",
                              path, l, one, other);
        out[l] = r;
    }
    return ELM_OK;
}

/* Gemma 4's keys (Gemma4TextConfig, with its defaults, as llama.cpp's converter reads them):
 * layer_types (required; the last layer global, as transformers forces it), sliding_window
 * (required), head_dim for the windowed layers and global_head_dim (or per_layer_config's
 * head_dim of a global layer) for the others, rope_parameters (the global layers' "proportional"
 * RoPE: partial_rotary_factor into c->partial_rope, for the rope_freqs tensor the converter
 * makes), num_kv_shared_layers, hidden_size_per_layer_input (vocab_size_per_layer_input equal
 * to vocab_size), use_double_wide_mlp (the shared layers' FFN doubled) and
 * final_logit_softcapping (llama.cpp's 30 when null). Mixture-of-experts, keys equal to values
 * and bidirectional attention are refused. */
static elm_status read_gemma4(const char *path, const cJSON *root, const elm_arch *a,
                              elm_hf_config *c, elm_error *err) {
    elm_hparams *hp = &c->hp;
    static const char *const refused[] = {"enable_moe_block", "attention_k_eq_v"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (get_true(root, refused[i]))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: %s is not supported", path,
                              refused[i]);
    const cJSON *bidi = cJSON_GetObjectItemCaseSensitive(root, "use_bidirectional_attention");
    if (cJSON_IsString(bidi) && strcmp(bidi->valuestring, "all") == 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: use_bidirectional_attention 'all' is "
                          "not supported", path);
    bool types;
    elm_status st = read_layer_types(path, root, "sliding_attention", "full_attention",
                                     hp->n_layers, hp->swa_layer, &types, err);
    if (st) return st;
    if (!types)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing required key 'layer_types'", path);
    if (hp->n_layers > 0) hp->swa_layer[hp->n_layers - 1] = 0; /* the last layer global */
    hp->swa_listed = true;
    /* head_dim is the windowed layers'; the global layers' from global_head_dim or from
     * per_layer_config, which newer transformers write instead */
    int32_t global = 512, global_kv = 0;
    const cJSON *plc = cJSON_GetObjectItemCaseSensitive(root, "per_layer_config"), *e;
    if (!cJSON_IsObject(plc)) plc = NULL;
    cJSON_ArrayForEach(e, plc) {
        char *end;
        const long l = strtol(e->string, &end, 10);
        if (*end || l < 0 || l >= hp->n_layers || hp->swa_layer[l]) continue;
        if ((st = get_int(path, e, "head_dim", false, &global, err)) ||
            (st = get_int(path, e, "num_key_value_heads", false, &global_kv, err)))
            return st;
        break;
    }
    hp->head_dim_swa = hp->head_dim ? hp->head_dim : 256;
    int32_t shared = 0, P = 256, P_vocab = hp->n_vocab;
    float cap = a->softcap;
    if ((st = get_int(path, root, "global_head_dim", false, &global, err)) ||
        (st = get_int(path, root, "num_global_key_value_heads", false, &global_kv, err)) ||
        (st = get_int(path, root, "sliding_window", true, &hp->n_swa, err)) ||
        (st = get_count(path, root, "num_kv_shared_layers", &shared, err)) ||
        (st = get_int(path, root, "vocab_size_per_layer_input", false, &P_vocab, err)) ||
        (st = get_float(path, root, "final_logit_softcapping", &cap, err)))
        return st;
    const cJSON *ple = cJSON_GetObjectItemCaseSensitive(root, "hidden_size_per_layer_input");
    if (cJSON_IsNull(ple)) P = 0;
    else if ((st = get_count(path, root, "hidden_size_per_layer_input", &P, err))) return st;
    if (P > 0 && P_vocab != hp->n_vocab)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: vocab_size_per_layer_input %d differs "
                          "from vocab_size %d", path, P_vocab, hp->n_vocab);
    hp->head_dim = global;
    hp->rope_dim = global;
    hp->rope_dim_swa = hp->head_dim_swa;
    hp->n_kv_shared = shared;
    hp->n_embd_per_layer = P;
    hp->logit_softcap = cap;
    /* the converter's array of KV heads, the global layers' own */
    for (int l = 0; global_kv > 0 && l < hp->n_layers; l++)
        hp->layer_kv_heads[l] = hp->swa_layer[l] ? hp->n_kv_heads : global_kv;
    if (global_kv > hp->n_kv_heads) hp->n_kv_heads = global_kv;
    if (get_true(root, "use_double_wide_mlp")) elm_arch_double_wide_mlp(hp);
    /* rope_parameters: transformers' defaults, a global "proportional" RoPE of 1/4 of the head */
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *full = cJSON_GetObjectItemCaseSensitive(rp, "full_attention");
    const cJSON *local = cJSON_GetObjectItemCaseSensitive(rp, "sliding_attention");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(full, "rope_type");
    hp->rope_theta = 1000000.0f;
    hp->rope_theta_swa = 10000.0f;
    c->partial_rope = 0.25f;
    if (full && !(cJSON_IsString(kind) && strcmp(kind->valuestring, "proportional") == 0))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rope_parameters full_attention must be "
                          "'proportional' (as llama.cpp's converter requires)", path);
    if ((full && (st = get_float(path, full, "rope_theta", &hp->rope_theta, err))) ||
        (full && (st = get_float(path, full, "partial_rotary_factor", &c->partial_rope, err))) ||
        (local && (st = get_float(path, local, "rope_theta", &hp->rope_theta_swa, err))))
        return st;
    if (c->partial_rope > 1.0f)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: partial_rotary_factor %g is above 1", path,
                          c->partial_rope);
    return ELM_OK;
}

/* LFM2's keys (Lfm2Config): layer_types ("conv" or "full_attention" per layer), conv_L_cache,
 * norm_eps, and its FFN size as llama.cpp's converter derives it: block_ff_dim, when
 * block_auto_adjust_ff_dim, times 2/3 and block_ffn_dim_multiplier, rounded up to a multiple of
 * block_multiple_of. */
static elm_status read_lfm2(const char *path, const cJSON *root, elm_hparams *hp,
                            elm_error *err) {
    const cJSON *attn = cJSON_GetObjectItemCaseSensitive(root, "full_attn_idxs");
    bool types;
    elm_status st = read_layer_types(path, root, "conv", "full_attention", hp->n_layers,
                                     hp->recurrent, &types, err);
    if (st) return st;
    if (!types && cJSON_IsArray(attn)) { /* the first LFM2 configs: the attention layers' indices */
        for (int l = 0; l < hp->n_layers; l++) hp->recurrent[l] = 1;
        const cJSON *e;
        cJSON_ArrayForEach(e, attn) {
            uint64_t l;
            if (!elm_json_uint(e, (uint64_t)hp->n_layers - 1, &l))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: 'full_attn_idxs' holds a value that "
                                  "is not a layer index below %d", path, hp->n_layers);
            hp->recurrent[l] = 0;
        }
    } else if (!types) {
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'layer_types' (or 'full_attn_idxs') "
                          "missing (LFM2)", path);
    }
    if (get_true(root, "conv_bias"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: conv_bias is not supported", path);
    int32_t ff = hp->ffn_dim, multiple = 256;
    if ((st = get_int(path, root, "conv_L_cache", true, &hp->conv_l, err)) ||
        (st = get_float(path, root, "norm_eps", &hp->rms_eps, err)) ||
        (st = get_int(path, root, "block_ff_dim", ff == 0, &ff, err)) ||
        (st = get_int(path, root, "block_multiple_of", false, &multiple, err)))
        return st;
    if (get_true(root, "block_auto_adjust_ff_dim")) {
        float mult = 1.0f;
        if ((st = get_float(path, root, "block_ffn_dim_multiplier", &mult, err))) return st;
        ff = (int32_t)(mult * (float)(int32_t)(2 * (int64_t)ff / 3));
        ff = (int32_t)(((int64_t)ff + multiple - 1) / multiple * multiple);
    }
    hp->ffn_dim = ff;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_embedding");
    if (cJSON_IsBool(tie)) hp->tied_output = cJSON_IsTrue(tie);
    return ELM_OK;
}

/* Phi-3's original_max_position_embeddings (top level; rope_scaling's first), which LongRoPE
 * needs, with its factors as many as the rotated pairs and its attention factor (the converter's
 * when the config gives none). After hp's sizes, partial rotary included. */
static elm_status read_original_context(const char *path, const cJSON *root, elm_hf_config *c,
                                        elm_error *err) {
    elm_hparams *hp = &c->hp;
    elm_status st;
    if ((c->n_longrope || !strcmp(hp->arch, "phi3")) && !hp->n_ctx_orig &&
        (st = get_int(path, root, "original_max_position_embeddings", false, &hp->n_ctx_orig,
                      err)))
        return st;
    if (!c->n_longrope) return ELM_OK;
    const int32_t hd = hp->head_dim ? hp->head_dim : hp->dim / hp->n_heads;
    const int32_t pairs = (hp->rope_dim ? hp->rope_dim : hd) / 2;
    if (c->n_longrope != pairs)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling long_factor and short_factor "
                          "have %d values, want %d (one per rotated pair)", path, c->n_longrope,
                          pairs);
    if (!hp->n_ctx_orig)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_scaling longrope needs "
                          "'original_max_position_embeddings'", path);
    if (hp->rope_attn_factor == 0)
        hp->rope_attn_factor = elm_arch_longrope_attn_factor(hp->n_ctx_train, hp->n_ctx_orig);
    return ELM_OK;
}

/* Granite 4.0-H's keys (GraniteMoeHybridConfig), as llama.cpp's converter reads them:
 * layer_types ("mamba" or "attention" per layer); the Mamba-2 sizes mamba_d_conv, mamba_expand ·
 * hidden_size (the inner size), mamba_d_state, mamba_n_heads (mamba_d_head, when given, times the
 * heads must be the inner size) and mamba_n_groups; the
 * multipliers embedding_multiplier, residual_multiplier, attention_multiplier, logits_scaling; and
 * position_embedding_type "rope" or "nope" (absent: nope). head_dim is ignored, as the converter
 * does: the heads are hidden_size / num_attention_heads. Its FFN: read_granite_moe. Projection
 * biases (mamba_proj_bias) and a convolution without bias (mamba_conv_bias false, which
 * llama.cpp's graph cannot run) are refused. */
static elm_status read_granite(const char *path, const cJSON *root, elm_hparams *hp,
                               elm_error *err) {
    bool types;
    elm_status st = read_layer_types(path, root, "mamba", "attention", hp->n_layers,
                                     hp->recurrent, &types, err);
    if (st) return st;
    if (!types)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key 'layer_types' missing (Granite 4.0-H)",
                          path);
    const cJSON *conv_bias = cJSON_GetObjectItemCaseSensitive(root, "mamba_conv_bias");
    if (get_true(root, "mamba_proj_bias") || cJSON_IsFalse(conv_bias))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: mamba_proj_bias true or mamba_conv_bias "
                          "false is not supported", path);
    int32_t expand = 0, d_head = 0;
    if ((st = get_int(path, root, "mamba_d_conv", true, &hp->conv_l, err)) ||
        (st = get_int(path, root, "mamba_expand", true, &expand, err)) ||
        (st = get_int(path, root, "mamba_d_state", true, &hp->ssm_state, err)) ||
        (st = get_int(path, root, "mamba_n_heads", true, &hp->ssm_heads, err)) ||
        (st = get_int(path, root, "mamba_n_groups", true, &hp->ssm_groups, err)) ||
        (st = get_int(path, root, "mamba_d_head", false, &d_head, err)) ||
        (st = get_float(path, root, "embedding_multiplier", &hp->embd_scale, err)) ||
        (st = get_float(path, root, "residual_multiplier", &hp->residual_scale, err)) ||
        (st = get_float(path, root, "attention_multiplier", &hp->attn_scale, err)) ||
        (st = get_float(path, root, "logits_scaling", &hp->logit_scale, err)))
        return st;
    if ((int64_t)expand * hp->dim > (1 << 20) ||
        (d_head && (int64_t)d_head * hp->ssm_heads != (int64_t)expand * hp->dim))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: mamba_expand %d × hidden_size %d is not "
                          "mamba_n_heads %d × mamba_d_head %d", path, expand, hp->dim,
                          hp->ssm_heads, d_head);
    hp->ssm_inner = expand * hp->dim;
    hp->head_dim = 0;
    const cJSON *pos = cJSON_GetObjectItemCaseSensitive(root, "position_embedding_type");
    const bool rope = cJSON_IsString(pos) && strcmp(pos->valuestring, "rope") == 0;
    if (pos && !cJSON_IsNull(pos) && !rope &&
        !(cJSON_IsString(pos) && strcmp(pos->valuestring, "nope") == 0))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: position_embedding_type is not 'rope' "
                          "or 'nope'", path);
    hp->no_rope = !rope;
    return ELM_OK;
}

/* RoPE on the first `partial` of each head only (Phi-3 family variants, Qwen3.5). */
static elm_status set_partial_rope(const char *path, float partial, elm_hparams *hp,
                                   elm_error *err) {
    if (partial >= 1.0f) return ELM_OK;
    const int32_t hd = hp->head_dim ? hp->head_dim : hp->dim / hp->n_heads;
    hp->rope_dim = (int32_t)lroundf((float)hd * partial);
    if (hp->rope_dim <= 0 || hp->rope_dim % 2 || fabsf((float)hp->rope_dim - hd * partial) > 1e-3f)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: partial_rotary_factor %g of head size %d "
                          "is not an even number of dimensions", path, partial, hd);
    return ELM_OK;
}

/* Qwen3.5's keys (Qwen3_5TextConfig): layer_types ("linear_attention" or "full_attention" per
 * layer), else every full_attention_interval-th layer attends (default 4); the Gated DeltaNet's
 * linear_conv_kernel_dim, linear_key_head_dim, linear_value_head_dim (the same: llama.cpp runs no
 * other), linear_num_key_heads and linear_num_value_heads (required, as llama.cpp's converter
 * reads them); rope_parameters: rope_type "default", rope_theta, partial_rotary_factor (default
 * 0.25, as transformers) and mrope_section (default 11, 11, 10, as llama.cpp's converter writes
 * it); tie_word_embeddings from the text model's config, else the outer one's; attn_output_gate
 * false is refused. */
static elm_status read_qwen35(const char *path, const cJSON *root, const cJSON *outer,
                              elm_hparams *hp, elm_error *err) {
    int32_t every = 4, key_dim = 0, value_dim = 0;
    bool types;
    elm_status st = read_layer_types(path, root, "linear_attention", "full_attention",
                                     hp->n_layers, hp->recurrent, &types, err);
    if (st) return st;
    if (!types) {
        if ((st = get_int(path, root, "full_attention_interval", false, &every, err))) return st;
        for (int l = 0; l < hp->n_layers; l++) hp->recurrent[l] = (l + 1) % every != 0;
    }
    if ((st = get_int(path, root, "linear_conv_kernel_dim", true, &hp->conv_l, err)) ||
        (st = get_int(path, root, "linear_key_head_dim", true, &key_dim, err)) ||
        (st = get_int(path, root, "linear_value_head_dim", true, &value_dim, err)) ||
        (st = get_int(path, root, "linear_num_key_heads", true, &hp->ssm_groups, err)) ||
        (st = get_int(path, root, "linear_num_value_heads", true, &hp->ssm_heads, err)))
        return st;
    if (key_dim != value_dim)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: linear_key_head_dim %d differs from "
                          "linear_value_head_dim %d", path, key_dim, value_dim);
    hp->ssm_state = key_dim;
    hp->ssm_inner = (int32_t)((int64_t)value_dim * hp->ssm_heads > INT32_MAX
                                    ? INT32_MAX
                                    : (int64_t)value_dim * hp->ssm_heads);
    const cJSON *gate = cJSON_GetObjectItemCaseSensitive(root, "attn_output_gate");
    if (cJSON_IsFalse(gate))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: attn_output_gate false is not supported",
                          path);
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(rp, "rope_type");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "default") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: rope_parameters rope_type '%.32s' is "
                          "not supported (default)", path, kind->valuestring);
    float partial = 0.25f;
    if ((st = get_float(path, root, "partial_rotary_factor", &partial, err)) ||
        (rp && (st = get_float(path, rp, "rope_theta", &hp->rope_theta, err))) ||
        (rp && (st = get_float(path, rp, "partial_rotary_factor", &partial, err))) ||
        (st = set_partial_rope(path, partial, hp, err)))
        return st;
    const int32_t sections[4] = {11, 11, 10, 0};
    memcpy(hp->rope_sections, sections, sizeof sections);
    const cJSON *mrope = cJSON_GetObjectItemCaseSensitive(rp, "mrope_section");
    if (mrope) {
        int n = cJSON_IsArray(mrope) ? cJSON_GetArraySize(mrope) : 0;
        memset(hp->rope_sections, 0, sizeof hp->rope_sections);
        for (int i = 0; i < n && i < 4; i++) {
            uint64_t v;
            if (!elm_json_uint(cJSON_GetArrayItem(mrope, i), 1 << 16, &v)) n = 0;
            else hp->rope_sections[i] = (int32_t)v;
        }
        if (n < 1 || n > 4)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: rope_parameters 'mrope_section' is not "
                              "a list of up to 4 counts", path);
    }
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (!cJSON_IsBool(tie)) tie = cJSON_GetObjectItemCaseSensitive(outer, "tie_word_embeddings");
    if (cJSON_IsBool(tie)) hp->tied_output = cJSON_IsTrue(tie);
    return ELM_OK;
}

/* LFM2-MoE's keys beyond Qwen3-MoE's (Lfm2MoeConfig), as llama.cpp's converter reads them:
 * num_dense_layers (required), the expert bias (use_expert_bias true, which llama.cpp's graph
 * needs) and no scaling of the weights (routed_scaling_factor 1, which llama.cpp does not apply):
 * anything else is refused by key. */
static elm_status read_lfm2moe(const char *path, const cJSON *root, elm_hparams *hp,
                               elm_error *err) {
    elm_status st;
    float scale = 1.0f;
    if ((st = get_int(path, root, "num_dense_layers", true, &hp->n_dense_lead, err)) ||
        (st = get_float(path, root, "routed_scaling_factor", &scale, err)))
        return st;
    if (hp->n_dense_lead > hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: num_dense_layers %d is more than "
                          "num_hidden_layers %d", path, hp->n_dense_lead, hp->n_layers);
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "use_expert_bias")))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: use_expert_bias false is not supported "
                          "(llama.cpp's lfm2moe has the bias)", path);
    if (scale != 1.0f)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: routed_scaling_factor %g is not "
                          "supported (llama.cpp's lfm2moe does not scale the weights)", path,
                          scale);
    return ELM_OK;
}

/* gpt-oss's keys (GptOssConfig): sliding_window (required) on the layers layer_types says,
 * which must alternate from a windowed first layer (llama.cpp's fixed pattern); the experts
 * num_local_experts of intermediate_size, num_experts_per_tok (or experts_per_token) of them a
 * token; swiglu_limit 7 (llama.cpp's); quantization_config's quant_method, when present, mxfp4
 * (the original checkpoint's experts, which the tensors' U8 *_blocks and *_scales tell). */
static elm_status read_gpt_oss(const char *path, const cJSON *root, const elm_arch *a,
                               elm_hparams *hp, elm_error *err) {
    elm_status st;
    float limit = 7.0f;
    hp->n_expert_used = 0;
    if ((st = get_int(path, root, "sliding_window", true, &hp->n_swa, err)) ||
        (st = get_int(path, root, "num_local_experts", true, &hp->n_expert, err)) ||
        (st = get_int(path, root, "experts_per_token", false, &hp->n_expert_used, err)) ||
        (st = get_int(path, root, "num_experts_per_tok", !hp->n_expert_used, &hp->n_expert_used,
                      err)) ||
        (st = get_float(path, root, "swiglu_limit", &limit, err)))
        return st;
    hp->expert_ffn_dim = hp->ffn_dim;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
    if (q && !cJSON_IsNull(q) &&
        !(cJSON_IsString(method) && strcmp(method->valuestring, "mxfp4") == 0))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: quantization_config's quant_method "
                          "'%.32s' is not supported (gpt-oss's mxfp4 is)", path,
                          cJSON_IsString(method) ? method->valuestring : "?");
    if (limit != 7.0f)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: swiglu_limit %g is not supported "
                          "(llama.cpp's gpt-oss clamps at 7)", path, limit);
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    for (int l = 0; cJSON_IsArray(types) && l < cJSON_GetArraySize(types); l++) {
        const cJSON *e = cJSON_GetArrayItem(types, l);
        const bool global = (l + 1) % a->swa_period == 0;
        if (!cJSON_IsString(e) ||
            strcmp(e->valuestring, global ? "full_attention" : "sliding_attention") != 0)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: layer_types must make every %dth "
                              "layer full_attention and the others sliding_attention", path,
                              a->swa_period);
    }
    hp->swa_period = a->swa_period;
    return ELM_OK;
}

/* Granite 4.0-H's FFN keys (GraniteMoeHybridConfig), as llama.cpp's converter reads them:
 * without experts (num_local_experts absent or 0) a dense FFN of shared_intermediate_size; with
 * them, num_experts_per_tok, each expert of intermediate_size and the shared expert (shared_mlp,
 * which every layer has) of shared_intermediate_size, required. */
static elm_status read_granite_moe(const char *path, const cJSON *root, elm_hparams *hp,
                                   elm_error *err) {
    int32_t shared = 0;
    elm_status st;
    if ((st = get_count(path, root, "num_local_experts", &hp->n_expert, err)) ||
        (st = get_int(path, root, "shared_intermediate_size", hp->n_expert > 0, &shared, err)))
        return st;
    if (hp->n_expert == 0) {
        if (shared) hp->ffn_dim = shared;
        return ELM_OK;
    }
    hp->expert_ffn_dim = hp->ffn_dim;
    hp->shexp_ffn_dim = shared;
    return get_int(path, root, "num_experts_per_tok", true, &hp->n_expert_used, err);
}

/* A mixture of experts' keys (Qwen3MoeConfig, Qwen3_5MoeTextConfig, Lfm2MoeConfig), as
 * llama.cpp's converter reads them: num_experts, num_experts_per_tok (at most num_experts) and
 * moe_intermediate_size, all required, and Qwen3.5-MoE's shared_expert_intermediate_size
 * (required; intermediate_size, which its configs lack, the shared expert's when absent); the
 * chosen experts' weights renormalised (norm_topk_prob true); every layer sparse
 * (decoder_sparse_step 1, mlp_only_layers empty), but LFM2-MoE's read_lfm2moe; gpt-oss's
 * read_gpt_oss, Granite's read_granite_moe: which is all the forward pass runs, anything else
 * refused by key. */
static elm_status read_moe(const char *path, const cJSON *root, const elm_arch *a,
                           elm_hparams *hp, elm_error *err) {
    elm_status st;
    int32_t step = 1;
    if (a->recurrent == ELM_LAYER_SHORTCONV && (st = read_lfm2moe(path, root, hp, err)))
        return st;
    if (a->moe_biases)
        st = read_gpt_oss(path, root, a, hp, err);
    else if (a->moe_optional)
        st = read_granite_moe(path, root, hp, err);
    else if (!(st = get_int(path, root, "num_experts", true, &hp->n_expert, err)) &&
             !(st = get_int(path, root, "num_experts_per_tok", true, &hp->n_expert_used, err)) &&
             !(st = get_int(path, root, "moe_intermediate_size", true, &hp->expert_ffn_dim,
                            err)) &&
             a->shexp_gated &&
             !(st = get_int(path, root, "shared_expert_intermediate_size", true,
                            &hp->shexp_ffn_dim, err)) &&
             hp->ffn_dim == 0)
        hp->ffn_dim = hp->shexp_ffn_dim;
    if (st || hp->n_expert == 0 ||
        (st = get_int(path, root, "decoder_sparse_step", false, &step, err)))
        return st;
    if (hp->n_expert > ELM_MAX_EXPERTS)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: num_experts %d is more than %d", path,
                          hp->n_expert, ELM_MAX_EXPERTS);
    if (hp->n_expert_used > hp->n_expert)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: num_experts_per_tok %d is more than %s %d",
                          path, hp->n_expert_used,
                          a->moe_biases || a->moe_optional ? "num_local_experts" : "num_experts",
                          hp->n_expert);
    const cJSON *dense = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers");
    if (step != 1 || (dense && !cJSON_IsNull(dense) &&
                      (!cJSON_IsArray(dense) || cJSON_GetArraySize(dense) > 0)))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: dense layers (decoder_sparse_step %d, "
                          "mlp_only_layers) are not supported: every layer must be sparse", path,
                          step);
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "norm_topk_prob")))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: norm_topk_prob false is not supported "
                          "(the chosen experts' weights are renormalised)", path);
    return ELM_OK;
}

static elm_status parse_config(const char *path, const cJSON *root, elm_hf_config *c,
                               elm_error *err) {
    const cJSON *outer = root;
    elm_hparams *hp = &c->hp;
    const elm_arch *a = NULL;
    elm_status st;
    /* a multimodal checkpoint (Gemma 3 4B and up): the language model's keys */
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    if ((st = check_arch(path, root, cJSON_IsObject(text) ? text : root, hp, &a, err))) return st;
    if (cJSON_IsObject(text)) root = text;
    if ((st = get_int(path, root, "hidden_size", true, &hp->dim, err)) ||
        /* LFM2's block_ff_dim stands for it; Qwen3.5-MoE's configs have none (read_moe) */
        (st = get_int(path, root, "intermediate_size",
                      a->recurrent != ELM_LAYER_SHORTCONV && !a->shexp_gated, &hp->ffn_dim,
                      err)) ||
        (st = get_int(path, root, "num_hidden_layers", true, &hp->n_layers, err)) ||
        (st = get_int(path, root, "num_attention_heads", true, &hp->n_heads, err)) ||
        (st = get_int(path, root, "vocab_size", true, &hp->n_vocab, err)))
        return st;
    hp->n_kv_heads = hp->n_heads;
    hp->rms_eps = 1e-6f;
    hp->rope_theta = 10000.0f;
    hp->n_ctx_train = 2048;
    if ((st = get_int(path, root, "num_key_value_heads", false, &hp->n_kv_heads, err)) ||
        (st = get_int(path, root, "max_position_embeddings", false, &hp->n_ctx_train, err)) ||
        (st = get_int(path, root, "head_dim", false, &hp->head_dim, err)) ||
        (st = get_float(path, root, "rms_norm_eps", &hp->rms_eps, err)) ||
        (st = get_float(path, root, "rope_theta", &hp->rope_theta, err)) ||
        (st = get_id(path, root, "bos_token_id", &c->bos_id, err)) ||
        (st = get_id(path, root, "eos_token_id", &c->eos_id, err)) ||
        (st = read_rope_scaling(path, root, c, err)))
        return st;
    float partial = 1.0f;
    if ((st = get_float(path, root, "partial_rotary_factor", &partial, err)) ||
        (st = set_partial_rope(path, partial, hp, err)) ||
        (st = read_original_context(path, root, c, err)))
        return st;
    /* Mistral's window; Phi-3 configs carry one too, which llama.cpp does not apply */
    if (strcmp(model_type(root), "mistral") == 0 &&
        (st = get_int(path, root, "sliding_window", false, &hp->n_swa, err)))
        return st;
    if (a->nope_every && (st = check_nope(path, root, a, hp, err))) return st;
    if (a->swa_period && a->swa_theta && (st = read_gemma3(path, root, a, hp, err))) return st;
    if (a->swa_listed && (st = read_gemma4(path, root, a, c, err))) return st;
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    hp->tied_output = cJSON_IsBool(tie) ? cJSON_IsTrue(tie) : a->hf_tied_default;
    if (a->recurrent == ELM_LAYER_SHORTCONV && (st = read_lfm2(path, root, hp, err))) return st;
    if (a->recurrent == ELM_LAYER_MAMBA2 && (st = read_granite(path, root, hp, err))) return st;
    if (a->recurrent == ELM_LAYER_DELTANET && (st = read_qwen35(path, root, outer, hp, err)))
        return st;
    if (a->moe && (st = read_moe(path, root, a, hp, err))) return st;
    return ELM_OK;
}

elm_status elm_hf_read_config(const char *path, elm_hf_config *c, elm_error *err) {
    memset(c, 0, sizeof *c);
    c->bos_id = c->eos_id = -1;
    cJSON *root;
    elm_status st = elm_json_read_object(path, ELM_HF_MAX_JSON, &root, err);
    if (st) return st;
    st = parse_config(path, root, c, err);
    cJSON_Delete(root);
    return st;
}
