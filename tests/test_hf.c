/* Hugging Face directory loader: hf-f32/ must give, after the q/k un-permutation, exactly the
 * tensors of the llama2.c model.bin, hf-bf16-sharded/ their round-to-nearest-even BF16 values, and
 * both the same vocabulary pieces as tok512.bin. Broken copies (safetensors header, offsets, dtype,
 * missing tensors, config.json, tokenizer.json, shard index) must fail with a message naming the
 * file and the problem. */
#include <stdint.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "check.h"
#include "edgelm/model.h"
#include "tmpfiles.h"

#define HF32 "stories260K/hf-f32"
#define HF16 "stories260K/hf-bf16-sharded"
#define ST "model.safetensors"
#define SHARD1 "model-00001-of-00002.safetensors"

static elm_model *load(const char *path) {
    elm_model *m = NULL;
    elm_error err = {0};
    elm_status st = elm_model_load(path, NULL, &m, &err);
    CHECK(st == ELM_OK, "load %s: %s", path, err.msg);
    return m;
}

static bool same_shape(const elm_tensor *a, const elm_tensor *b) {
    return a->n_dims == b->n_dims && memcmp(a->ne, b->ne, sizeof a->ne) == 0;
}

static void check_vocab(const elm_vocab *v, const elm_vocab *ref, const char *what) {
    CHECK(v->n_tokens == ref->n_tokens, "%s: %d tokens", what, v->n_tokens);
    if (v->n_tokens != ref->n_tokens) return;
    int diff = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        diff += strcmp(v->pieces[i], ref->pieces[i]) != 0 || v->types[i] != ref->types[i];
    CHECK(diff == 0, "%s: %d pieces or types differ from tok512.bin", what, diff);
    CHECK(v->merges && v->n_merges == 165 && !v->scores &&
              strcmp(v->merges[0], "\xe2\x96\x81 t") == 0,
          "%s: %d merges", what, v->n_merges);
    CHECK(v->bos_id == 1 && v->eos_id == 2 && v->unk_id == 0 && v->add_bos && !v->add_eos &&
              v->add_space_prefix && v->byte_fallback && strcmp(v->model, "llama") == 0,
          "%s: bos %d eos %d unk %d", what, v->bos_id, v->eos_id, v->unk_id);
}

static void test_f32(const elm_model *ref) {
    elm_model *m = load(fixture(HF32));
    if (!m) return;
    const elm_hparams *hp = &m->hp;
    CHECK(strcmp(m->format, "hf") == 0 && strcmp(m->name, "hf-f32") == 0, "format %s name %s",
          m->format, m->name);
    CHECK(hp->dim == 64 && hp->n_layers == 5 && hp->n_heads == 8 && hp->n_kv_heads == 4 &&
              hp->ffn_dim == 172 && hp->n_vocab == 512 && hp->n_ctx_train == 512 &&
              hp->rms_eps == 1e-5f && hp->rope_theta == 10000.0f,
          "hparams dim %d layers %d heads %d/%d ffn %d vocab %d", hp->dim, hp->n_layers,
          hp->n_heads, hp->n_kv_heads, hp->ffn_dim, hp->n_vocab);
    CHECK(hp->tied_output && m->output == m->tok_embd, "output not tied");
    CHECK(m->n_tensors == ref->n_tensors, "%d tensors, model.bin has %d", m->n_tensors,
          ref->n_tensors);
    for (int32_t i = 0; i < ref->n_tensors; i++) {
        const elm_tensor *r = &ref->tensors[i], *t = elm_model_find(m, r->name);
        CHECK(t && t->type == ELM_TYPE_F32 && same_shape(t, r) && t->nbytes == r->nbytes,
              "%s missing or of another type/shape", r->name);
        if (t && t->nbytes == r->nbytes)
            CHECK(memcmp(t->data, r->data, r->nbytes) == 0, "%s differs from model.bin", r->name);
    }
    check_vocab(&m->vocab, &ref->vocab, "hf-f32");
    elm_model_free(m);
}

/* Bit pattern of the BF16 value nearest to f (ties to even), the rounding the fixture used. */
static uint16_t bf16_rne(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static void test_bf16(const elm_model *ref) {
    elm_model *m = load(fixture(HF16));
    if (!m) return;
    CHECK(m->n_tensors == ref->n_tensors && m->file_type == 32, "%d tensors, file type %u",
          m->n_tensors, m->file_type);
    for (int32_t i = 0; i < ref->n_tensors; i++) {
        const elm_tensor *r = &ref->tensors[i], *t = elm_model_find(m, r->name);
        CHECK(t && t->type == ELM_TYPE_BF16 && same_shape(t, r) && t->nbytes * 2 == r->nbytes,
              "%s missing or of another type/shape", r->name);
        if (!t || t->nbytes * 2 != r->nbytes) continue;
        const float *f = r->data;
        int64_t n = (int64_t)t->nbytes / 2, bad = 0;
        for (int64_t j = 0; j < n; j++) {
            uint16_t h;
            memcpy(&h, (const char *)t->data + 2 * j, 2);
            bad += h != bf16_rne(f[j]);
        }
        CHECK(bad == 0, "%s: %lld values are not the BF16 of model.bin's", r->name, (long long)bad);
    }
    const elm_type_traits *tt = elm_type_get(ELM_TYPE_BF16);
    const elm_tensor *q = elm_model_find(m, "blk.3.attn_q.weight");
    const elm_tensor *rq = elm_model_find(ref, "blk.3.attn_q.weight");
    if (tt && q && rq) {
        static float dec[64 * 64];
        tt->to_float(q->data, dec, 64 * 64);
        int bad = 0;
        for (int j = 0; j < 64 * 64; j++) {
            uint32_t u = (uint32_t)bf16_rne(((const float *)rq->data)[j]) << 16;
            float want;
            memcpy(&want, &u, 4);
            bad += dec[j] != want;
        }
        CHECK(bad == 0, "%d decoded BF16 values of attn_q differ from the rounded F32 ones", bad);
    }
    check_vocab(&m->vocab, &ref->vocab, "hf-bf16-sharded");
    elm_model_free(m);
}

/* ---- bad inputs: each a fresh copy of a fixture folder with one thing broken ---- */

static char *copy_dir(const char *rel) {
    char *dir = tmp_dir_new();
    DIR *d = opendir(fixture(rel));
    for (struct dirent *e; dir && d && (e = readdir(d));)
        if (e->d_name[0] != '.') {
            char src[1024];
            snprintf(src, sizeof src, "%s/%s", fixture(rel), e->d_name);
            CHECK(file_copy(src, tmp_path(dir, e->d_name), SIZE_MAX, 0), "copy %s", src);
        }
    if (d) closedir(d);
    CHECK(dir && d, "copy of %s", rel);
    return dir;
}

static void expect_fail(const char *what, const char *dir, elm_status code, const char *s1,
                        const char *s2) {
    elm_model *m = NULL;
    elm_error err = {0};
    elm_status st = elm_model_load(dir, NULL, &m, &err);
    CHECK(st == code, "%s: status %d, expected %d (%s)", what, st, code, err.msg);
    CHECK(m == NULL, "%s: model returned on failure", what);
    CHECK(strstr(err.msg, s1) && strstr(err.msg, s2), "%s: message '%s' lacks '%s' / '%s'", what,
          err.msg, s1, s2);
}

typedef void (*json_edit)(cJSON *root);

/* Rewrites a JSON file through edit. */
static void edit_json(const char *path, json_edit edit) {
    size_t len;
    unsigned char *text = file_read(path, &len);
    cJSON *root = text ? cJSON_Parse((const char *)text) : NULL;
    CHECK(root, "parse %s", path);
    if (root) {
        edit(root);
        char *out = cJSON_Print(root);
        CHECK(out && file_write(path, out, strlen(out)), "write %s", path);
        cJSON_free(out);
    }
    cJSON_Delete(root);
    free(text);
}

/* Rewrites a safetensors header through edit (data buffer kept), padding the JSON with `pad`
 * spaces; the header length changes, which moves the buffer. */
static void edit_header(const char *path, json_edit edit, size_t pad) {
    size_t len;
    unsigned char *file = file_read(path, &len);
    uint64_t n = 0;
    if (file) memcpy(&n, file, 8);
    cJSON *hdr = file ? cJSON_ParseWithLength((const char *)file + 8, (size_t)n) : NULL;
    CHECK(hdr, "parse header of %s", path);
    if (!hdr) {
        free(file);
        return;
    }
    edit(hdr);
    char *json = cJSON_PrintUnformatted(hdr);
    uint64_t m = strlen(json) + pad;
    unsigned char *out = malloc(8 + m + (len - 8 - n));
    memcpy(out, &m, 8);
    memcpy(out + 8, json, strlen(json));
    memset(out + 8 + strlen(json), ' ', pad);
    memcpy(out + 8 + m, file + 8 + n, len - 8 - n);
    CHECK(file_write(path, out, 8 + m + (len - 8 - n)), "write %s", path);
    free(out);
    cJSON_free(json);
    cJSON_Delete(hdr);
    free(file);
}

static cJSON *entry(cJSON *hdr, const char *name) {
    return cJSON_GetObjectItemCaseSensitive(hdr, name);
}
static void no_change(cJSON *h) { (void)h; }
static void short_offsets(cJSON *h) {
    cJSON *offs = cJSON_GetObjectItem(entry(h, "model.layers.0.self_attn.q_proj.weight"),
                                      "data_offsets");
    cJSON *end = cJSON_GetArrayItem(offs, 1);
    cJSON_SetNumberValue(end, end->valuedouble - 4);
}
static void overlap(cJSON *h) {
    cJSON *k = entry(h, "model.layers.0.self_attn.k_proj.weight");
    cJSON_ReplaceItemInObject(entry(h, "model.layers.0.self_attn.v_proj.weight"), "data_offsets",
                              cJSON_Duplicate(cJSON_GetObjectItem(k, "data_offsets"), true));
}
static void drop_q2(cJSON *h) {
    cJSON_DeleteItemFromObjectCaseSensitive(h, "model.layers.2.self_attn.q_proj.weight");
}
static void dtype_i32(cJSON *h) {
    cJSON_SetValuestring(cJSON_GetObjectItem(entry(h, "model.layers.1.self_attn.o_proj.weight"),
                                             "dtype"), "I32");
}
static void no_layers_key(cJSON *c) { cJSON_DeleteItemFromObject(c, "num_hidden_layers"); }
static void four_layers(cJSON *c) {
    cJSON_SetNumberValue(cJSON_GetObjectItem(c, "num_hidden_layers"), 4);
}
static void untied(cJSON *c) {
    cJSON_ReplaceItemInObject(c, "tie_word_embeddings", cJSON_CreateFalse());
}
static void eps_half(cJSON *c) { cJSON_SetNumberValue(cJSON_GetObjectItem(c, "rms_norm_eps"), 0.5); }
static void theta_huge(cJSON *c) {
    cJSON_DeleteItemFromObject(c, "rope_theta");
    cJSON_AddNumberToObject(c, "rope_theta", 1e20);
}
static void mamba(cJSON *c) { cJSON_SetValuestring(cJSON_GetObjectItem(c, "model_type"), "mamba"); }
static void unigram(cJSON *t) {
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "model"), "type"), "Unigram");
}
static void drop_byte_41(cJSON *t) {
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "model"), "vocab"),
                               "<0x41>");
}
static void missing_shard(cJSON *ix) {
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(ix, "weight_map"),
                                             "model.norm.weight"),
                         "model-00003-of-00003.safetensors");
}
static void norm_in_shard1(cJSON *ix) {
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(ix, "weight_map"),
                                             "model.norm.weight"), SHARD1);
}

static void test_bad_safetensors(void) {
    char *d = copy_dir(HF32);
    const char *st = tmp_path(d, ST);
    size_t len;
    unsigned char *file = file_read(st, &len);
    if (file) {
        uint64_t n = len - 8 + 1;
        memcpy(file, &n, 8);
        CHECK(file_write(st, file, len), "write");
        expect_fail("header past EOF", d, ELM_ERR_FORMAT, ST, "header longer than the file");
        CHECK(file_write(st, file, 5), "write");
        expect_fail("5-byte file", d, ELM_ERR_FORMAT, ST, "too small");
        free(file);
    }
    tmp_dir_remove(d);

    struct { const char *what; json_edit edit; elm_status code; const char *s1, *s2; } cases[] = {
        {"offsets", short_offsets, ELM_ERR_FORMAT, "offsets disagree with dtype x shape",
         "model.layers.0.self_attn.q_proj.weight"},
        {"overlap", overlap, ELM_ERR_FORMAT, "overlapping offsets", "v_proj"},
        {"missing tensor", drop_q2, ELM_ERR_FORMAT, "missing tensor",
         "'model.layers.2.self_attn.q_proj.weight'"},
        {"dtype", dtype_i32, ELM_ERR_UNSUPPORTED, "dtype I32", "model.layers.1.self_attn.o_proj"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d = copy_dir(HF32);
        edit_header(tmp_path(d, ST), cases[i].edit, 0);
        expect_fail(cases[i].what, d, cases[i].code, ST, cases[i].s1);
        expect_fail(cases[i].what, d, cases[i].code, ST, cases[i].s2);
        tmp_dir_remove(d);
    }
}

/* A re-serialized header of another length leaves the data unaligned for F32: the loader copies
 * those tensors and the model is unchanged. */
static void test_unaligned(const elm_model *ref) {
    char *d = copy_dir(HF32);
    edit_header(tmp_path(d, ST), no_change, 2);
    elm_model *m = load(d);
    for (int32_t i = 0; m && i < ref->n_tensors; i++) {
        const elm_tensor *r = &ref->tensors[i], *t = elm_model_find(m, r->name);
        CHECK(t && (uintptr_t)t->data % 4 == 0 && memcmp(t->data, r->data, r->nbytes) == 0,
              "%s misaligned or different", r->name);
    }
    elm_model_free(m);
    tmp_dir_remove(d);
}

static void test_bad_json(void) {
    struct {
        const char *what, *file;
        json_edit edit;
        elm_status code;
        const char *s1, *s2;
    } cases[] = {
        {"config key", "config.json", no_layers_key, ELM_ERR_FORMAT, "config.json",
         "missing required key 'num_hidden_layers'"},
        {"config layers", "config.json", four_layers, ELM_ERR_FORMAT, "layer 4",
         "config.json has 4 layers"},
        {"config untied", "config.json", untied, ELM_ERR_FORMAT, ST, "'lm_head.weight'"},
        {"config rms_norm_eps", "config.json", eps_half, ELM_ERR_FORMAT, "edgelm-test-",
         "hyper-parameter rms_eps = 0.5 is out of range"},
        {"config rope_theta", "config.json", theta_huge, ELM_ERR_FORMAT, "edgelm-test-",
         "hyper-parameter rope_theta = 1e+20 is out of range"},
        {"config arch", "config.json", mamba, ELM_ERR_UNSUPPORTED, "config.json", "'mamba'"},
        {"not BPE", "tokenizer.json", unigram, ELM_ERR_UNSUPPORTED, "tokenizer.json", "Unigram"},
        {"vocab ids", "tokenizer.json", drop_byte_41, ELM_ERR_FORMAT, "tokenizer.json",
         "not dense"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *d = copy_dir(HF32);
        edit_json(tmp_path(d, cases[i].file), cases[i].edit);
        expect_fail(cases[i].what, d, cases[i].code, cases[i].s1, cases[i].s2);
        tmp_dir_remove(d);
    }

    char *d = copy_dir(HF32);
    const char *cfg = tmp_path(d, "config.json");
    CHECK(file_write(cfg, "{\"hidden_size\": 64,", 19), "write");
    expect_fail("config not JSON", d, ELM_ERR_FORMAT, cfg, "not a JSON object");
    unlink(cfg);
    expect_fail("config missing", d, ELM_ERR_IO, d, "no config.json");
    tmp_dir_remove(d);

    d = copy_dir(HF32);
    unlink(tmp_path(d, "tokenizer.json"));
    expect_fail("tokenizer missing", d, ELM_ERR_IO, "tokenizer.json", "No such file");
    unlink(tmp_path(d, ST));
    expect_fail("no weights", d, ELM_ERR_IO, d, "no model.safetensors");
    tmp_dir_remove(d);
}

static void test_bad_shards(void) {
    char *d = copy_dir(HF16);
    const char *index = tmp_path(d, "model.safetensors.index.json");
    edit_json(index, missing_shard);
    expect_fail("missing shard", d, ELM_ERR_IO, "model-00003-of-00003.safetensors",
                "No such file");
    tmp_dir_remove(d);

    d = copy_dir(HF16);
    edit_json(tmp_path(d, "model.safetensors.index.json"), norm_in_shard1);
    expect_fail("tensor not in its shard", d, ELM_ERR_FORMAT, SHARD1,
                "'model.norm.weight' listed in");
    tmp_dir_remove(d);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *ref = load(fixture("stories260K/model.bin"));
    if (ref) {
        test_f32(ref);
        test_bf16(ref);
        test_unaligned(ref);
    }
    elm_model_free(ref);
    test_bad_safetensors();
    test_bad_json();
    test_bad_shards();
    return check_done();
}
