/* edgelm inspect: what a model file holds — format, architecture, hyper-parameters, vocabulary,
 * the tensor table ([rows, cols], type, bytes) and totals — as text or, with --json, as one JSON
 * object built with cJSON. A vocab-only GGUF file, or one of an architecture edgelm does not run,
 * is shown as read (its hyper-parameters are not derived: "not bound" says why). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "edgelm/embed.h"
#include "opts.h"
#include "system_info.h"

/* "[rows, cols]" with the contiguous dimension last (ne reversed). */
static void shape_str(const elm_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = t->n_dims - 1; d >= 0 && n < cap; d--)
        n += (size_t)snprintf(buf + n, cap - n, "%lld%s", (long long)t->ne[d], d ? ", " : "]");
}

static double bits_per_weight(const elm_model *m) {
    int64_t p = elm_model_params(m);
    return p ? 8.0 * (double)elm_model_bytes(m) / (double)p : 0;
}

/* Why a model loaded for inspection was not bound (so has no derived hyper-parameters), or NULL
 * when it was. */
static const char *not_bound(const elm_model *m, char *buf, size_t cap) {
    if (m->layers) return NULL;
    if (!elm_arch_supported(m->hp.arch))
        snprintf(buf, cap, "architecture '%s' is not one edgelm runs (%s)", m->hp.arch,
                 elm_arch_names());
    else snprintf(buf, cap, "no tensors (vocab-only file)");
    return buf;
}

static void print_text(const elm_model *m) {
    const elm_hparams *hp = &m->hp;
    const elm_vocab *v = &m->vocab;
    char why[256];
    printf("file          %s\n", m->path);
    printf("format        %s\n", m->format);
    printf("name          %s\n", m->name[0] ? m->name : "-");
    printf("architecture  %s\n", hp->arch);
    printf("file type     %u\n", m->file_type);
    if (not_bound(m, why, sizeof why)) printf("not bound     %s\n", why);
    else printf("hyper-parameters\n"
           "  dim %d, layers %d, heads %d, kv heads %d, head dim %d, ffn %d, vocab %d\n"
           "  context %d, rope dim %d, rope base %g, rms eps %g, tied output %s\n",
           hp->dim, hp->n_layers, hp->n_heads, hp->n_kv_heads, hp->head_dim, hp->ffn_dim,
           hp->n_vocab, hp->n_ctx_train, hp->rope_dim, hp->rope_theta, hp->rms_eps,
           hp->tied_output ? "yes" : "no");
    if (m->layers && m->rope_long)
        printf("  LongRoPE: original context %d, attention factor %g (long factors above -c %d)\n",
               hp->n_ctx_orig, hp->rope_attn_factor, hp->n_ctx_orig);
    if (m->layers && (hp->pooling || hp->non_causal || m->dense_2))
        printf("  embedding: pooling %s, %s attention, dense projection %d\n",
               elm_pooling_name((elm_pooling)hp->pooling), hp->non_causal ? "bidirectional" : "causal",
               hp->dense_dim);
    if (!v->n_tokens) printf("vocab         none\n");
    else printf("vocab         %d tokens (%s), bos %d, eos %d, unk %d, add_bos %s, add_eos %s, "
           "%d merges, chat template %s\n",
           v->n_tokens, v->model, v->bos_id, v->eos_id, v->unk_id, v->add_bos ? "yes" : "no",
           v->add_eos ? "yes" : "no", v->n_merges, v->chat_template ? "yes" : "no");
    printf("tensors       %d\n", m->n_tensors);
    printf("  %-32s %-16s %-6s %12s\n", "name", "shape", "type", "bytes");
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        char shape[96];
        shape_str(t, shape, sizeof shape);
        printf("  %-32s %-16s %-6s %12zu\n", t->name, shape, elm_type_get(t->type)->name,
               t->nbytes);
    }
    printf("total         %zu bytes (%.2f MiB), %lld parameters, %.2f bits/weight\n",
           elm_model_bytes(m), elm_model_bytes(m) / 1048576.0, (long long)elm_model_params(m),
           bits_per_weight(m));
}

static cJSON *build_json(const elm_model *m) {
    const elm_hparams *hp = &m->hp;
    const elm_vocab *v = &m->vocab;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", m->path);
    cJSON_AddStringToObject(o, "format", m->format);
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddStringToObject(o, "architecture", hp->arch);
    cJSON_AddNumberToObject(o, "file_type", m->file_type);
    char why[256];
    bool bound = !not_bound(m, why, sizeof why);
    if (!bound) cJSON_AddStringToObject(o, "not_bound", why);
    /* cJSON's adders do nothing on a NULL object: an unbound model gets "hparams": null */
    cJSON *h = bound ? cJSON_AddObjectToObject(o, "hparams") : NULL;
    if (!bound) cJSON_AddNullToObject(o, "hparams");
    const cli_json_num hv[] = {
        {"dim", hp->dim},           {"n_layers", hp->n_layers},     {"n_heads", hp->n_heads},
        {"n_kv_heads", hp->n_kv_heads}, {"head_dim", hp->head_dim}, {"ffn_dim", hp->ffn_dim},
        {"n_vocab", hp->n_vocab},   {"n_ctx_train", hp->n_ctx_train}, {"rope_dim", hp->rope_dim},
        {"rope_theta", hp->rope_theta}, {"rms_eps", hp->rms_eps},
        {"n_ctx_orig", hp->n_ctx_orig}, {"rope_attn_factor", hp->rope_attn_factor},
    };
    cli_json_numbers(h, hv, sizeof hv / sizeof hv[0]);
    cJSON_AddBoolToObject(h, "tied_output", hp->tied_output);
    cJSON_AddBoolToObject(h, "longrope", m->rope_long != NULL);
    cJSON_AddStringToObject(h, "pooling", elm_pooling_name((elm_pooling)hp->pooling));
    cJSON_AddBoolToObject(h, "non_causal", hp->non_causal);
    cJSON_AddNumberToObject(h, "dense_dim", hp->dense_dim);
    cJSON *vj = cJSON_AddObjectToObject(o, "vocab");
    cJSON_AddNumberToObject(vj, "n_tokens", v->n_tokens);
    cJSON_AddStringToObject(vj, "model", v->model);
    cJSON_AddNumberToObject(vj, "bos_id", v->bos_id);
    cJSON_AddNumberToObject(vj, "eos_id", v->eos_id);
    cJSON_AddNumberToObject(vj, "unk_id", v->unk_id);
    cJSON_AddBoolToObject(vj, "add_bos", v->add_bos);
    cJSON_AddBoolToObject(vj, "add_eos", v->add_eos);
    cJSON_AddNumberToObject(vj, "n_merges", v->n_merges);
    cJSON_AddBoolToObject(vj, "chat_template", v->chat_template != NULL);
    cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        cJSON *tj = cJSON_CreateObject();
        cJSON_AddStringToObject(tj, "name", t->name);
        cJSON *shape = cJSON_AddArrayToObject(tj, "shape");
        for (int d = t->n_dims - 1; d >= 0; d--)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
        cJSON_AddStringToObject(tj, "type", elm_type_get(t->type)->name);
        cJSON_AddNumberToObject(tj, "bytes", (double)t->nbytes);
        cJSON_AddItemToArray(ts, tj);
    }
    cJSON_AddNumberToObject(o, "total_bytes", (double)elm_model_bytes(m));
    cJSON_AddNumberToObject(o, "n_params", (double)elm_model_params(m));
    cJSON_AddNumberToObject(o, "bits_per_weight", bits_per_weight(m));
    return o;
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL, *tok = NULL;
    bool json = false, system = false;
    const cli_opt opts[] = {
        {"-m, --model", "PATH", CLI_TEXT, &path, 0, 0, "the model (or give it as the argument)", 0},
        CLI_OPT_JSON(&json, "one JSON object on stdout instead of text"),
        CLI_OPT_TOKENIZER(&tok),
        {"--system", NULL, CLI_FLAG, &system, 0, 0, "the CPU, its SIMD features and the kernels chosen (no MODEL;\nEDGELM_ISA=scalar|avx2|avx512|neon forces a kernel set)", 0},
        {0}};
    const cli_spec spec = {
        "inspect", "MODEL [--json] [--tokenizer PATH]\n       edgelm inspect --system [--json]",
        "Prints the format, architecture, hyper-parameters, vocabulary summary and tensor table\n"
        "of MODEL (GGUF file, Hugging Face folder or llama2.c model.bin).",
        CLI_TABLES(opts), NULL, &path, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (system) return path ? cli_fail("inspect: --system takes no MODEL") : cli_print_system(json);
    if (!path) return cli_fail("inspect: no MODEL given (try 'edgelm inspect --help')");
    elm_model *m = NULL;
    elm_error err;
    elm_error_clear(&err);
    if (elm_model_load(path, &(elm_load_opts){.tokenizer_path = tok, .inspect = true}, &m, &err))
        return cli_fail("%s", err.msg);
    if (!json) {
        print_text(m);
        elm_model_free(m);
        return 0;
    }
    cJSON *o = build_json(m);
    elm_model_free(m);
    return cli_print_json(o, "inspect");
}
