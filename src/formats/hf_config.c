/* Hugging Face config.json -> hyper-parameters of a Llama model (see hf.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/hf.h"
#include "formats/json_num.h"

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

/* Sets hp->arch from model_type (else the first architectures entry) and refuses non-Llama. */
static elm_status check_arch(const char *path, const cJSON *root, elm_hparams *hp,
                             elm_error *err) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    const char *name = "llama";
    if (cJSON_IsString(type))
        name = type->valuestring;
    else if (cJSON_IsString(first) && strcmp(first->valuestring, "LlamaForCausalLM") != 0)
        name = first->valuestring;
    snprintf(hp->arch, sizeof hp->arch, "%s", name);
    if (strcmp(name, "llama") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: unsupported architecture '%s'", path,
                          hp->arch);
    /* Llama variants whose extra parameters this forward pass would silently ignore. */
    if (get_true(root, "attention_bias") || get_true(root, "mlp_bias"))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: Llama with bias terms is not supported",
                          path);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (cJSON_IsString(act) && strcmp(act->valuestring, "silu") != 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: hidden_act '%.32s' is not supported (silu)", path, act->valuestring);
    return ELM_OK;
}

static elm_status parse_config(const char *path, const cJSON *root, elm_hf_config *c,
                               elm_error *err) {
    elm_hparams *hp = &c->hp;
    elm_status st;
    if ((st = check_arch(path, root, hp, err))) return st;
    if ((st = get_int(path, root, "hidden_size", true, &hp->dim, err)) ||
        (st = get_int(path, root, "intermediate_size", true, &hp->ffn_dim, err)) ||
        (st = get_int(path, root, "num_hidden_layers", true, &hp->n_layers, err)) ||
        (st = get_int(path, root, "num_attention_heads", true, &hp->n_heads, err)) ||
        (st = get_int(path, root, "vocab_size", true, &hp->n_vocab, err)))
        return st;
    hp->n_kv_heads = hp->n_heads;
    hp->rms_eps = 1e-6f;
    hp->rope_theta = 10000.0f;
    hp->n_ctx_train = 2048;
    int32_t head_dim = 0;
    if ((st = get_int(path, root, "num_key_value_heads", false, &hp->n_kv_heads, err)) ||
        (st = get_int(path, root, "max_position_embeddings", false, &hp->n_ctx_train, err)) ||
        (st = get_int(path, root, "head_dim", false, &head_dim, err)) ||
        (st = get_float(path, root, "rms_norm_eps", &hp->rms_eps, err)) ||
        (st = get_float(path, root, "rope_theta", &hp->rope_theta, err)) ||
        (st = get_id(path, root, "bos_token_id", &c->bos_id, err)) ||
        (st = get_id(path, root, "eos_token_id", &c->eos_id, err)))
        return st;
    if (head_dim && head_dim * hp->n_heads != hp->dim)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: head_dim %d differs from hidden_size / num_attention_heads", path,
                          head_dim);
    hp->tied_output = get_true(root, "tie_word_embeddings");
    return ELM_OK;
}

elm_status elm_hf_read_config(const char *path, elm_hf_config *c, elm_error *err) {
    memset(c, 0, sizeof *c);
    c->bos_id = c->eos_id = -1;
    char *text;
    size_t len;
    elm_status st = elm_read_file(path, ELM_HF_MAX_JSON, &text, &len, err);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(root))
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: not a JSON object", path);
    else
        st = parse_config(path, root, c, err);
    cJSON_Delete(root);
    return st;
}
