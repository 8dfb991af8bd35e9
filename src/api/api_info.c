/* App API (edgelm.h): what a loaded model is, as one JSON object, for bindings that cannot read
 * elm_model's fields (the Python package's Model.info and edgelm.inspect). */
#include <cjson/cJSON.h>

#include "api/api.h"

char *edgelm_model_info(const edgelm_model *h) {
    const elm_model *m = h->m;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON_AddStringToObject(o, "architecture", m->hp.arch);
    const struct {
        const char *key;
        double value;
    } nums[] = {
        {"n_vocab", m->hp.n_vocab},         {"n_ctx_train", m->hp.n_ctx_train},
        {"dim", m->hp.dim},                 {"n_layers", m->hp.n_layers},
        {"n_heads", m->hp.n_heads},         {"n_kv_heads", m->hp.n_kv_heads},
        {"head_dim", m->hp.head_dim},       {"ffn_dim", m->hp.ffn_dim},
        {"params", (double)elm_model_params(m)}, {"bytes", (double)elm_model_bytes(m)},
        {"bos_id", m->vocab.bos_id},        {"eos_id", m->vocab.eos_id},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        cJSON_AddNumberToObject(o, nums[i].key, nums[i].value);
    cJSON_AddBoolToObject(o, "add_bos", m->vocab.add_bos);
    if (m->vocab.chat_template) cJSON_AddStringToObject(o, "chat_template", m->vocab.chat_template);
    else cJSON_AddNullToObject(o, "chat_template");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
