/* `edgelm export onnx`: the folder around the decoder graph (export.h). */
#define _XOPEN_SOURCE 700
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "edgelm/export.h"
#include "export/onnx_decoder.h"
#include "formats/hf_write.h"
#include "model/context_state.h"

/* IR 8 / opset 17: what Debian's onnx 1.12 checker knows; DequantizeLinear's blocked form needs
 * opset 21 (IR 10). */
enum { ONNX_IR = 8, ONNX_OPSET = 17, QDQ_IR = 10, QDQ_OPSET = 21, MAX_POSITIONS = 1 << 17 };

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* Removes a folder and everything under it (our own temporary folders only). */
static void rm_tree(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* 1 when dir exists and holds anything, 0 when it is missing or empty, -1 when not a folder. */
static int dir_state(const char *dir) {
    struct stat st;
    if (stat(dir, &st)) return 0;
    if (!S_ISDIR(st.st_mode)) return -1;
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n > 0;
}

/* The RoPE frequencies of m's forward pass, read from a one-position context so that they are
 * computed by the same code (rope_freqs, linear scaling). */
static elm_status rope_freqs(const elm_model *m, float **out, elm_error *err) {
    elm_context *c = NULL;
    const elm_context_params p = {.n_ctx = 1, .n_batch = 1, .n_threads = 1};
    elm_status st = elm_context_new(m, &p, &c, err);
    if (st) return st;
    const size_t n = (size_t)m->hp.rope_dim / 2;
    *out = malloc(sizeof(float) * n);
    if (*out) memcpy(*out, c->inv_freq, sizeof(float) * n);
    elm_context_free(c);
    return *out ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
}

/* genai_config.json: onnxruntime-genai's description of the decoder's names and sizes. */
static elm_status write_genai_config(const elm_model *m, const char *path, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(model, "bos_token_id", m->vocab.bos_id);
    cJSON_AddNumberToObject(model, "context_length", hp->n_ctx_train);
    cJSON *dec = cJSON_AddObjectToObject(model, "decoder");
    cJSON *so = cJSON_AddObjectToObject(dec, "session_options");
    cJSON_AddStringToObject(so, "log_id", "onnxruntime-genai");
    cJSON_AddArrayToObject(so, "provider_options");
    cJSON_AddStringToObject(dec, "filename", "model.onnx");
    cJSON_AddNumberToObject(dec, "head_size", hp->head_dim);
    cJSON_AddNumberToObject(dec, "hidden_size", hp->dim);
    cJSON *in = cJSON_AddObjectToObject(dec, "inputs");
    cJSON_AddStringToObject(in, "input_ids", "input_ids");
    cJSON_AddStringToObject(in, "attention_mask", "attention_mask");
    cJSON_AddStringToObject(in, "position_ids", "position_ids");
    cJSON_AddStringToObject(in, "past_key_names", "past_key_values.%d.key");
    cJSON_AddStringToObject(in, "past_value_names", "past_key_values.%d.value");
    cJSON *out = cJSON_AddObjectToObject(dec, "outputs");
    cJSON_AddStringToObject(out, "logits", "logits");
    cJSON_AddStringToObject(out, "present_key_names", "present.%d.key");
    cJSON_AddStringToObject(out, "present_value_names", "present.%d.value");
    cJSON_AddNumberToObject(dec, "num_attention_heads", hp->n_heads);
    cJSON_AddNumberToObject(dec, "num_hidden_layers", hp->n_layers);
    cJSON_AddNumberToObject(dec, "num_key_value_heads", hp->n_kv_heads);
    cJSON_AddNumberToObject(model, "eos_token_id", m->vocab.eos_id);
    cJSON_AddNumberToObject(model, "pad_token_id", m->vocab.pad_id >= 0 ? m->vocab.pad_id : m->vocab.eos_id);
    cJSON_AddStringToObject(model, "type", hp->arch);
    cJSON_AddNumberToObject(model, "vocab_size", hp->n_vocab);
    cJSON *search = cJSON_AddObjectToObject(root, "search");
    cJSON_AddBoolToObject(search, "do_sample", 0);
    cJSON_AddNumberToObject(search, "max_length", hp->n_ctx_train);
    cJSON_AddNumberToObject(search, "min_length", 0);
    cJSON_AddNumberToObject(search, "num_beams", 1);
    cJSON_AddNumberToObject(search, "num_return_sequences", 1);
    cJSON_AddNumberToObject(search, "temperature", 1.0);
    cJSON_AddNumberToObject(search, "top_k", 1);
    cJSON_AddNumberToObject(search, "top_p", 1.0);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    const elm_status st = elm_hf_write_text(path, text, err);
    free(text);
    return st;
}

/* Builds one decoder graph (seq < 0: dynamic shapes) into g, its weights appended to data or
 * referenced from `shared`, and writes it to dir/name. */
static elm_status write_graph(const elm_model *m, const elm_onnx_opts *o, const float *inv_freq,
                              const ox_act_quant *aq, FILE *data, const char *data_path,
                              const ox_graph *shared, int64_t seq, int64_t past, const char *dir,
                              const char *name, ox_graph *g, elm_error *err) {
    char path[PATH_MAX + 64];
    ox_init(g, "edgelm_decoder", data, "model.onnx.data", data_path);
    g->accuracy_level = o->accuracy_level;
    g->qdq = o->qdq;
    g->opset = o->qdq ? QDQ_OPSET : ONNX_OPSET;
    g->shared = shared;
    const int32_t n_pos = m->hp.n_ctx_train < MAX_POSITIONS ? m->hp.n_ctx_train : MAX_POSITIONS;
    ox_decoder(g, m, inv_freq, n_pos, seq, past, aq, o->warn, o->user);
    g->data = NULL; /* the caller closes it */
    elm_status st = ox_error(g, err);
    if (st) return st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    const char *dom_onnx[] = {"", "com.microsoft"}, *dom_qdq[] = {""};
    const int64_t v_onnx[] = {ONNX_OPSET, 1}, v_qdq[] = {QDQ_OPSET};
    return o->qdq ? ox_write_model(g, QDQ_IR, dom_qdq, v_qdq, 1, path, err)
                  : ox_write_model(g, ONNX_IR, dom_onnx, v_onnx, 2, path, err);
}

/* Writes the whole folder into tmp. */
static elm_status write_folder(const elm_model *m, const char *tmp, const elm_onnx_opts *o,
                               elm_error *err) {
    char path[PATH_MAX + 32]; /* tmp is shorter than PATH_MAX */
    float *inv_freq = NULL;
    ox_act_quant aq = {0};
    elm_status st = o->act_bits ? ox_act_measure(m, o->calib, o->n_threads, o->act_bits, &aq, err) : ELM_OK;
    if (!st) st = rope_freqs(m, &inv_freq, err);
    if (st) {
        ox_act_free(&aq);
        return st;
    }
    snprintf(path, sizeof path, "%s/model.onnx.data", tmp);
    FILE *data = fopen(path, "wb");
    if (!data) {
        free(inv_freq);
        ox_act_free(&aq);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    }
    ox_graph g1, g2;
    memset(&g2, 0, sizeof g2);
    if (!o->qdq) {
        st = write_graph(m, o, inv_freq, NULL, data, path, NULL, -1, -1, tmp, "model.onnx", &g1, err);
    } else {
        const int64_t P = o->static_prompt, C = o->static_ctx;
        const ox_act_quant *a = o->act_bits ? &aq : NULL;
        st = write_graph(m, o, inv_freq, a, data, path, NULL, P, C - P, tmp, "prompt_processor.onnx", &g1, err);
        if (!st) st = write_graph(m, o, inv_freq, a, data, path, &g1, 1, C - 1, tmp, "token_generator.onnx", &g2, err);
    }
    ox_free(&g1);
    ox_free(&g2);
    free(inv_freq);
    ox_act_free(&aq);
    if ((ferror(data) | fclose(data)) && !st)
        st = elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    if (!st && !o->qdq) {
        snprintf(path, sizeof path, "%s/genai_config.json", tmp);
        st = write_genai_config(m, path, err);
    }
    if (!st) st = elm_hf_write_tokenizer(&m->vocab, tmp, err);
    return st;
}

elm_status elm_export_onnx(const elm_model *m, const char *dir, const elm_onnx_opts *o,
                           elm_error *err) {
    static const elm_onnx_opts none = {0};
    if (!o) o = &none;
    elm_status st = ox_decoder_check(m, err);
    if (st) return st;
    if (o->qdq && (o->static_prompt <= 0 || o->static_ctx <= o->static_prompt))
        return elm_errorf(err, ELM_ERR_ARG, "static shapes need 0 < prompt length (%d) < context (%d)",
                          o->static_prompt, o->static_ctx);
    if (o->accuracy_level != 0 && o->accuracy_level != 4)
        return elm_errorf(err, ELM_ERR_ARG, "MatMulNBits accuracy_level %d: only 0 (float) and 4 (int8 activations)",
                          o->accuracy_level);
    if (o->act_bits && (o->act_bits != 8 && o->act_bits != 16))
        return elm_errorf(err, ELM_ERR_ARG, "activations of %d bits: only 8 and 16", o->act_bits);
    if (o->act_bits && !o->qdq)
        return elm_errorf(err, ELM_ERR_ARG, "activation quantization goes with the qdq form");
    if (o->act_bits && (!o->calib || o->calib->n == 0))
        return elm_errorf(err, ELM_ERR_ARG, "activation quantization needs calibration samples");
    if (o->qdq && o->static_ctx > m->hp.n_ctx_train)
        return elm_errorf(err, ELM_ERR_ARG, "%s: static context %d is larger than the model's context of %d tokens",
                          m->path, o->static_ctx, m->hp.n_ctx_train);
    const int state = dir_state(dir);
    if (state < 0) return elm_errorf(err, ELM_ERR_ARG, "%s: exists and is not a folder", dir);
    if (state > 0 && !o->force)
        return elm_errorf(err, ELM_ERR_ARG, "%s: output folder is not empty (--force replaces it)", dir);
    char tmp[PATH_MAX], old[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", dir) >= (int)sizeof tmp)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", dir);
    if (!mkdtemp(tmp)) return elm_errorf(err, ELM_ERR_IO, "%s: cannot create a folder beside it: %s", dir, strerror(errno));
    chmod(tmp, 0755);
    st = write_folder(m, tmp, o, err);
    if (st) {
        rm_tree(tmp);
        return st;
    }
    /* the old folder moves aside until the new one is in place */
    old[0] = '\0';
    if (state > 0 || elm_is_dir(dir)) {
        snprintf(old, sizeof old, "%s.old.XXXXXX", dir);
        if (!mkdtemp(old) || rename(dir, old)) {
            const int e = errno;
            if (old[0] && elm_is_dir(old)) rmdir(old);
            rm_tree(tmp);
            return elm_errorf(err, ELM_ERR_IO, "%s: cannot move the old folder aside: %s", dir, strerror(e));
        }
    }
    if (rename(tmp, dir)) {
        const int e = errno;
        if (old[0]) rename(old, dir);
        rm_tree(tmp);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", dir, strerror(e));
    }
    if (old[0]) rm_tree(old);
    return ELM_OK;
}
