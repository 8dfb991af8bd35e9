/* Hugging Face Llama directory loader: config.json, model.safetensors (or shards listed in
 * model.safetensors.index.json) and tokenizer.json (FORMATS.md, "Hugging Face Llama checkpoints").
 *
 * Tensors are renamed to GGUF names and mapped in place, except q_proj and k_proj: HF stores them
 * for rotate-half RoPE, so their rows are un-permuted into an owned copy in the interleaved order
 * the model uses. Dtypes are kept (F32, F16, BF16). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/hf.h"
#include "formats/loaders.h"
#include "formats/safetensors.h"

/* HF name stems (before ".weight") and their GGUF counterparts. */
static const struct { const char *hf, *gguf; } global_names[] = {
    {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}};
static const struct { const char *hf, *gguf; } layer_names[] = {
    {"input_layernorm", "attn_norm"},  {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},     {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"}};
#define N_LAYER_NAMES (sizeof layer_names / sizeof layer_names[0])

static elm_status join(char *out, size_t cap, const char *dir, const char *name, elm_error *err) {
    if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    return ELM_OK;
}

/* GGUF name of an HF tensor into out; *layer is its block (-1 for global tensors). Returns false
 * for names that are not part of the Llama layout (e.g. rotary_emb.inv_freq), which are ignored. */
static bool gguf_name(const char *hf, char *out, size_t cap, long *layer) {
    size_t len = strlen(hf), sfx = strlen(".weight");
    if (len <= sfx || strcmp(hf + len - sfx, ".weight") != 0) return false;
    int stem = (int)(len - sfx);
    *layer = -1;
    for (size_t i = 0; i < sizeof global_names / sizeof global_names[0]; i++)
        if ((int)strlen(global_names[i].hf) == stem && strncmp(hf, global_names[i].hf, stem) == 0) {
            snprintf(out, cap, "%s.weight", global_names[i].gguf);
            return true;
        }
    const char *pre = "model.layers.";
    if (strncmp(hf, pre, strlen(pre)) != 0) return false;
    const char *p = hf + strlen(pre);
    char *end;
    if (*p < '0' || *p > '9') return false;
    long l = strtol(p, &end, 10);
    if (*end != '.' || l > INT32_MAX) return false;
    p = end + 1;
    for (size_t i = 0; i < N_LAYER_NAMES; i++)
        if ((int)strlen(layer_names[i].hf) == stem - (int)(p - hf) &&
            strncmp(p, layer_names[i].hf, strlen(layer_names[i].hf)) == 0) {
            snprintf(out, cap, "blk.%ld.%s.weight", l, layer_names[i].gguf);
            *layer = l;
            return true;
        }
    return false;
}

/* Copy of a q/k projection [heads*hd, cols] with rows moved from rotate-half to interleaved
 * order: for head h, HF row h*hd + p*(hd/2) + i becomes row h*hd + 2*i + p (FORMATS.md). */
static elm_status unpermute(elm_model *m, const char *src, const elm_st_tensor *t, int heads,
                            void **out, elm_error *err) {
    int64_t rows = t->shape[0];
    if (t->n_dims != 2 || heads <= 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' cannot be split into %d heads of even size", src,
                          t->name, heads);
    int64_t hd = rows / heads;
    size_t row_bytes = t->nbytes / (size_t)rows;
    char *dst = malloc(t->nbytes);
    if (!dst) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    const char *s = t->data;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t p = 0; p < 2; p++)
            for (int64_t i = 0; i < hd / 2; i++)
                memcpy(dst + (size_t)(h * hd + 2 * i + p) * row_bytes,
                       s + (size_t)(h * hd + p * (hd / 2) + i) * row_bytes, row_bytes);
    *out = dst;
    return elm_model_own_buffer(m, dst, err);
}

/* Data a model tensor can point at: the mapping itself when aligned for the element type (a
 * header of odd length can leave it unaligned), else an owned copy. */
static elm_status aligned_data(elm_model *m, const char *src, const elm_st_tensor *t,
                               void **out, elm_error *err) {
    size_t esize = t->type == ELM_TYPE_F32 ? 4 : 2;
    if ((uintptr_t)t->data % esize == 0) {
        *out = (void *)t->data;
        return ELM_OK;
    }
    void *copy = malloc(t->nbytes);
    if (!copy) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", src);
    memcpy(copy, t->data, t->nbytes);
    *out = copy;
    return elm_model_own_buffer(m, copy, err);
}

/* Adds one safetensors tensor under its GGUF name (src names the file for errors). */
static elm_status add_tensor(elm_model *m, const char *src, const elm_st_tensor *t,
                             elm_error *err) {
    const elm_hparams *hp = &m->hp;
    char name[ELM_NAME_MAX];
    long layer;
    if (!gguf_name(t->name, name, sizeof name, &layer)) return ELM_OK;
    if (layer >= hp->n_layers)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is for layer %ld but config.json "
                          "has %d layers", src, t->name, layer, hp->n_layers);
    if (hp->tied_output && strcmp(name, "output.weight") == 0) return ELM_OK;
    void *data;
    elm_status st;
    if (layer >= 0 && strstr(name, ".attn_q."))
        st = unpermute(m, src, t, hp->n_heads, &data, err);
    else if (layer >= 0 && strstr(name, ".attn_k."))
        st = unpermute(m, src, t, hp->n_kv_heads, &data, err);
    else
        st = aligned_data(m, src, t, &data, err);
    if (st) return st;
    int64_t ne[ELM_MAX_DIMS];
    for (int i = 0; i < t->n_dims; i++) ne[i] = t->shape[t->n_dims - 1 - i];
    return elm_model_add_tensor(m, name, t->type, t->n_dims, ne, data, t->nbytes, err);
}

/* Opens a safetensors file and hands its mapping to the model (freed with it). */
static elm_status open_shard(elm_model *m, const char *path, elm_st_file *f, elm_error *err) {
    elm_status st = elm_st_open(f, path, err);
    if (st) return st;
    st = elm_model_own_mapping(m, f->map, f->map_size, err);
    f->map = NULL; /* the model owns (or, on failure, has already unmapped) it */
    return st;
}

static elm_status load_single(elm_model *m, const char *path, elm_error *err) {
    elm_st_file f;
    elm_status st = open_shard(m, path, &f, err);
    for (int32_t i = 0; !st && i < f.n_tensors; i++) st = add_tensor(m, path, &f.tensors[i], err);
    elm_st_close(&f);
    return st;
}

/* Shard file names are plain names inside the directory. */
static bool plain_name(const char *s) {
    return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Walks weight_map {tensor: file}, opening each shard once. */
static elm_status load_shards(elm_model *m, const char *dir, const char *index,
                              const cJSON *map, elm_error *err) {
    int n = cJSON_GetArraySize(map), n_open = 0;
    elm_st_file *files = calloc((size_t)n + 1, sizeof *files);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    elm_status st = files && names ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory",
                                                         index);
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (st) break;
        if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: weight_map entry '%.96s' is not a file name",
                            index, e->string);
            break;
        }
        int k = 0;
        while (k < n_open && strcmp(names[k], e->valuestring) != 0) k++;
        char path[1100];
        if ((st = join(path, sizeof path, dir, e->valuestring, err))) break;
        if (k == n_open) {
            names[n_open++] = e->valuestring;
            if ((st = open_shard(m, path, &files[k], err))) break;
        }
        const elm_st_tensor *t = elm_st_find(&files[k], e->string);
        if (!t)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%.96s' listed in %s is missing",
                            path, e->string, index);
        else
            st = add_tensor(m, path, t, err);
    }
    for (int k = 0; files && k < n_open; k++) elm_st_close(&files[k]);
    free(files);
    free(names);
    return st;
}

static elm_status load_index(elm_model *m, const char *dir, const char *index, elm_error *err) {
    char *text;
    size_t len;
    elm_status st = elm_read_file(index, ELM_HF_MAX_JSON, &text, &len, err);
    if (st) return st;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map) || !map->child)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: no weight_map object", index);
    else
        st = load_shards(m, dir, index, map, err);
    cJSON_Delete(root);
    return st;
}

/* Every tensor the Llama layout needs is present; errors give the HF name. */
static elm_status check_complete(const elm_model *m, const char *src, elm_error *err) {
    char gguf[ELM_NAME_MAX];
    for (size_t i = 0; i < sizeof global_names / sizeof global_names[0]; i++) {
        snprintf(gguf, sizeof gguf, "%s.weight", global_names[i].gguf);
        if (strcmp(global_names[i].gguf, "output") == 0 && m->hp.tied_output) continue;
        if (!elm_model_find(m, gguf))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: missing tensor '%s.weight'", src,
                              global_names[i].hf);
    }
    for (int l = 0; l < m->hp.n_layers; l++)
        for (size_t i = 0; i < N_LAYER_NAMES; i++) {
            snprintf(gguf, sizeof gguf, "blk.%d.%s.weight", l, layer_names[i].gguf);
            if (!elm_model_find(m, gguf))
                return elm_errorf(err, ELM_ERR_FORMAT,
                                  "%s: missing tensor 'model.layers.%d.%s.weight'", src, l,
                                  layer_names[i].hf);
        }
    return ELM_OK;
}

/* llama.cpp's file type for a checkpoint stored in one float type; 0 (all F32) otherwise. */
static uint32_t file_type_of(const elm_model *m) {
    for (int32_t i = 1; i < m->n_tensors; i++)
        if (m->tensors[i].type != m->tensors[0].type) return 0;
    switch (m->n_tensors ? m->tensors[0].type : ELM_TYPE_F32) {
    case ELM_TYPE_F16: return 1;
    case ELM_TYPE_BF16: return 32;
    default: return 0;
    }
}

/* Folder name without trailing slashes, as the model's display name. */
static void set_name(elm_model *m, const char *dir) {
    size_t end = strlen(dir);
    while (end > 1 && dir[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(m->name, sizeof m->name, "%.*s", (int)(end - start), dir + start);
}

elm_status elm_load_hf(elm_model *m, const char *dir, elm_error *err) {
    char path[1100], weights[1100];
    elm_hf_config c = {0};
    elm_status st = join(path, sizeof path, dir, "config.json", err);
    if (!st && !elm_file_exists(path))
        return elm_errorf(err, ELM_ERR_IO, "%s: no config.json (not a Hugging Face model folder)",
                          dir);
    if (!st) st = elm_hf_read_config(path, &c, err);
    if (st) {
        if (c.hp.arch[0]) m->hp = c.hp;
        return st;
    }
    m->hp = c.hp;
    set_name(m, dir);
    if ((st = join(weights, sizeof weights, dir, "model.safetensors", err))) return st;
    if (elm_file_exists(weights)) {
        st = load_single(m, weights, err);
    } else {
        if ((st = join(weights, sizeof weights, dir, "model.safetensors.index.json", err)))
            return st;
        if (!elm_file_exists(weights))
            return elm_errorf(err, ELM_ERR_IO, "%s: no model.safetensors or "
                              "model.safetensors.index.json", dir);
        st = load_index(m, dir, weights, err);
    }
    if (!st) st = check_complete(m, weights, err);
    if (!st) st = elm_hf_read_tokenizer(dir, &c, &m->vocab, err);
    m->file_type = file_type_of(m);
    return st;
}
