/* edgelm synth (edgelm/shapes.h): the presets carry the published shapes (parameter counts of the
 * real models), and a small custom preset written to disk loads back with the tensor list,
 * types, tied/untied output, biases and metadata a real file of that architecture has, and runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/shapes.h"
#include "formats/gguf_parse.h"

/* Parameters of a preset's model: the tensors synth writes and plan counts (its family's layout,
 * model/arch.h) but the RoPE vectors a converter computes from config.json (rope_freqs,
 * LongRoPE's factors), which a checkpoint's count leaves out; -1 when it has none. */
static int64_t params_of(const elm_synth_preset *p) {
    static const char *const rope[] = {"rope_freqs.weight", "rope_factors_long.weight",
                                       "rope_factors_short.weight"};
    elm_model *m = NULL;
    elm_error err;
    if (elm_plan_shape_preset(p, &m, &err) != ELM_OK) return -1;
    int64_t n = elm_model_params(m);
    for (size_t i = 0; i < sizeof rope / sizeof rope[0]; i++) {
        const elm_tensor *t = elm_model_find(m, rope[i]);
        if (t) n -= t->ne[0] * t->ne[1];
    }
    elm_model_free(m);
    return n;
}

static void presets(void) {
    /* published sizes: TinyLlama 1.1B = 1,100,048,384; Llama 3.2 1B = 1,235,814,400;
     * Llama 2 7B = 6,738,415,616; Llama 2 13B = 13,015,864,320; Llama 3 8B = 8,030,261,248;
     * Qwen2 0.5B = 494,032,768; Llama 3.2 3B = 3,212,749,824;
     * SmolLM3 3B = 3,075,098,624 ("3.08B" on its model card); Qwen3 0.6B, 1.7B and 4B =
     * 596,049,920, 1,720,574,976 and 4,022,468,096 (their model cards: 0.44B, 1.4B and 3.6B
     * without the embedding, 155,582,464, 311,164,928 and 388,956,160); Gemma 3 1B =
     * 999,885,952; Gemma 3 4B's language model = 3,880,263,168 (4.3B with its vision tower);
     * Phi-4-mini = 3,836,021,760 ("3.8B"); LFM2 350M, 1.2B and 2.6B = 354,483,968, 1,170,340,608
     * and 2,569,272,320 (their model cards).
     * Summed from the shapes of their config.json, each total matching the published one:
     * Qwen3.5 0.8B, 2B, 4B and 9B's text models without their MTP block = 752,393,024,
     * 1,881,825,088, 4,205,751,296 and 8,953,803,264 (with the block, 20,452,864, 60,828,160,
     * 120,599,552 and 243,290,624, and the vision tower, 100,592,896, 331,416,576, 333,514,240 and
     * 456,010,480 more: their Hugging Face totals, 873,438,784, 2,274,069,824, 4,659,865,088 and
     * 9,653,104,368); Granite-4.0-H-micro = 3,191,396,096 (its GGUF's general.parameter_count);
     * Gemma 4 E2B and E4B's text models = 4,647,449,891 and 7,518,069,034, the KV-sharing
     * layers' unused k_proj, v_proj and k_norm included (their Hugging Face totals with vision and
     * audio: 5,123,178,051 and 7,996,156,490) */
    const struct {
        const char *name;
        int64_t params;
    } want[] = {{"tinyllama-1.1b", 1100048384LL},
                {"llama-3.2-1b", 1235814400LL},
                {"llama-2-7b", 6738415616LL},
                {"llama-2-13b", 13015864320LL},
                {"llama-3-8b", 8030261248LL},
                {"qwen2-0.5b", 494032768LL},
                {"llama-3.2-3b", 3212749824LL},
                {"smollm3-3b", 3075098624LL},
                {"qwen3-0.6b", 596049920LL},
                {"qwen3-1.7b", 1720574976LL},
                {"qwen3-4b", 4022468096LL},
                {"gemma-3-1b", 999885952LL},
                {"gemma-3-4b", 3880263168LL},
                {"phi-4-mini", 3836021760LL},
                {"lfm2-350m", 354483968LL},
                {"lfm2-1.2b", 1170340608LL},
                {"lfm2-2.6b", 2569272320LL},
                {"qwen3.5-0.8b", 752393024LL},
                {"qwen3.5-2b", 1881825088LL},
                {"qwen3.5-4b", 4205751296LL},
                {"qwen3.5-9b", 8953803264LL},
                {"granite-4.0-h-micro", 3191396096LL},
                {"gemma-4-e2b", 4647449891LL},
                {"gemma-4-e4b", 7518069034LL},
                {"qwen3-30b-a3b", 30532122624LL},
                {"gpt-oss-20b", 20914757184LL},         /* cli_plan.sh derives these three */
                {"granite-4.0-h-tiny", 6939037248LL},  /* from their config.json */
                {"lfm2-8b-a1b", 8339930560LL}};
    int n;
    const elm_synth_preset *all = elm_synth_presets(&n);
    CHECK(n == (int)(sizeof want / sizeof want[0]), "%d presets, %d checked", n,
          (int)(sizeof want / sizeof want[0]));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const elm_synth_preset *p = elm_synth_find(want[i].name);
        CHECK(p != NULL, "preset %s", want[i].name);
        if (!p) continue;
        const int64_t got = params_of(p);
        CHECK(got == want[i].params, "%s: %lld parameters, want %lld", p->name, (long long)got,
              (long long)want[i].params);
    }
    for (int i = 0; i < n; i++)
        CHECK(!all[i].layers || strlen(all[i].layers) == (size_t)all[i].n_layers,
              "%s: %zu layer letters for %d layers", all[i].name,
              all[i].layers ? strlen(all[i].layers) : 0, all[i].n_layers);
    CHECK(elm_synth_find("gpt-5") == NULL, "unknown preset found");
}

static char *dir;

static const char *tmp_path(const char *name) {
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static elm_model *write_and_load(const elm_synth_preset *p, elm_type type, const char *path) {
    elm_error err;
    uint64_t bytes = 0;
    CHECK(elm_synth_write(p, type, path, 7, NULL, NULL, &bytes, &err) == ELM_OK, "synth: %s",
          err.msg);
    elm_model *m = NULL;
    CHECK(elm_model_load(path, NULL, &m, &err) == ELM_OK, "load %s: %s", path, err.msg);
    return m;
}

static void small_llama(void) {
    const elm_synth_preset p = {"tiny", "test", "llama", 300,   64,       2,     4,
                                2,      96,     256,     1e-5f, 10000.0f, false, true, 0, 0, 0, 0, NULL, 0, 0, {0}};
    elm_model *m = write_and_load(&p, ELM_TYPE_Q4_0, tmp_path("tiny-q4_0.gguf"));
    if (!m) return;
    CHECK(m->hp.n_vocab == 300 && m->hp.dim == 64 && m->hp.n_layers == 2 && m->hp.n_kv_heads == 2 &&
              m->hp.ffn_dim == 96 && !m->hp.tied_output,
          "hyper-parameters");
    CHECK(m->output != m->tok_embd && m->output->type == ELM_TYPE_Q4_0 &&
              m->tok_embd->type == ELM_TYPE_Q4_0 && m->layers[1].w_down->type == ELM_TYPE_Q4_0 &&
              m->layers[0].attn_norm->type == ELM_TYPE_F32,
          "tensor types");
    CHECK(m->rope_freqs != NULL && m->vocab.n_tokens == 300 && m->vocab.bos_id == 1 &&
              strstr(m->name, "speed and memory measurement only") != NULL,
          "rope_freqs, vocab, name '%s'", m->name);
    /* Llama 3's frequency divisors: 1 for the fastest pairs, the factor (32) for the slowest */
    const float *rf = m->rope_freqs->data;
    CHECK(rf[0] == 1.0f && rf[m->rope_freqs->ne[0] - 1] == 32.0f, "rope_freqs %g .. %g", rf[0],
          rf[m->rope_freqs->ne[0] - 1]);
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = 32, .n_threads = 2};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "%s", err.msg);
    const int32_t toks[] = {1, 17, 299, 4};
    float logits[300];
    CHECK(c && elm_forward(c, toks, 4, logits, false, &err) == ELM_OK, "forward: %s", err.msg);
    bool finite = true;
    for (int i = 0; i < 300; i++)
        finite &= logits[i] == logits[i] && logits[i] < 1e30f && logits[i] > -1e30f;
    CHECK(finite, "logits not finite");
    elm_context_free(c);
    elm_model_free(m);
}

static void small_qwen2(void) {
    const elm_synth_preset p = {"tiny-qwen2", "test", "qwen2", 300,  64,   2,    4, 2,
                                96,           256,    1e-6f,   1e6f, true, false, 0, 0, 0, 0, NULL, 0, 0, {0}};
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, tmp_path("tiny-f16.gguf"));
    if (!m) return;
    CHECK(!strcmp(m->hp.arch, "qwen2") && m->output == m->tok_embd && m->hp.tied_output,
          "qwen2, tied output");
    CHECK(m->layers[0].bq && m->layers[0].bk && m->layers[1].bv && m->layers[0].bq->ne[0] == 64 &&
              m->layers[0].bk->ne[0] == 32 && m->layers[0].bq->type == ELM_TYPE_F32,
          "q/k/v biases");
    CHECK(m->layers[0].wq->type == ELM_TYPE_F16 && m->rope_freqs == NULL, "types");
    elm_model_free(m);
}

/* Qwen3: a head size that is not dim / heads (q is 4 · 32 = 128 wide for dim 64) and per-head
 * q/k norms; the file loads and runs. */
static void small_qwen3(void) {
    const elm_synth_preset p = {"tiny-qwen3", "test", "qwen3", 300,  64,   2,    4, 2,
                                96,           256,    1e-6f,   1e6f, true, false, 32, 0, 0, 0, NULL, 0, 0, {0}};
    const char *path = tmp_path("tiny-qwen3.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    CHECK(m->hp.head_dim == 32 && m->layers[0].wq->ne[1] == 128 && m->layers[1].wo->ne[0] == 128 &&
              m->layers[0].q_norm && m->layers[1].k_norm && m->layers[1].k_norm->ne[0] == 32 &&
              !m->layers[0].bq,
          "qwen3 shapes");
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = 16, .n_threads = 2};
    float logits[300];
    const int32_t toks[] = {1, 17, 299};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK &&
              elm_forward(c, toks, 3, logits, false, &err) == ELM_OK,
          "qwen3 forward: %s", err.msg);
    elm_context_free(c);
    elm_model_free(m);
    unlink(path);
}

/* Gemma 3: post-norms and q/k norms, 5 of 6 layers windowed with RoPE base 10000 and the 6th
 * global with the file's base and scaling; the local layers' KV cache is the window plus its
 * spare rows, as elm_kv_cache_bytes (plan) counts it. */
static void small_gemma3(void) {
    const elm_synth_preset p = {"tiny-gemma3", "test", "gemma3", 300, 64,   6,    4, 2, 96, 256,
                                1e-6f,         1e6f,   true,     false, 32, 8, 0, 8.0f, NULL, 0, 0, {0}};
    const char *path = tmp_path("tiny-gemma3.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    const elm_hparams *hp = &m->hp;
    CHECK(hp->n_swa == 8 && hp->swa_period == 6 && hp->rope_theta_swa == 10000.0f &&
              hp->rope_freq_scale == 0.125f && m->layers[5].attn_post_norm &&
              m->layers[0].ffn_post_norm && m->layers[3].q_norm,
          "gemma3 hyper-parameters and norms");
    CHECK(elm_layer_swa(hp, 4) && !elm_layer_swa(hp, 5), "layer 5 global");
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = 64, .n_threads = 2};
    const size_t row = 2 * 2 * 32 * sizeof(float); /* keys and values of 2 heads of 32 */
    float logits[300];
    int32_t toks[60];
    for (int i = 0; i < 60; i++) toks[i] = 1 + i * 7 % 299;
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK &&
              elm_forward(c, toks, 60, logits, false, &err) == ELM_OK,
          "gemma3 forward: %s", err.msg);
    CHECK(c && elm_context_kv_bytes(c) == (5 * (8 + 32) + 64) * row &&
              elm_kv_cache_bytes(hp, 64, ELM_TYPE_F32, ELM_TYPE_F32) == elm_context_kv_bytes(c),
          "windowed KV cache of %zu bytes", c ? elm_context_kv_bytes(c) : 0);
    CHECK(elm_context_truncate(c, 20, &err) == ELM_ERR_UNSUPPORTED &&
              elm_context_truncate(c, 50, &err) == ELM_OK,
          "rolling back past the ring's spare rows is refused, within them allowed");
    /* the same tokens one at a time (decode) and after the rollback: the ring's rows are read
     * in position order whichever way they were written */
    float step[300], again[300];
    elm_context_reset(c);
    for (int i = 0; i < 60 && c; i++) CHECK(elm_forward(c, &toks[i], 1, step, false, &err) == ELM_OK, "%s", err.msg);
    CHECK(c && elm_context_truncate(c, 40, &err) == ELM_OK &&
              elm_forward(c, toks + 40, 20, again, false, &err) == ELM_OK,
          "refill after rollback: %s", err.msg);
    float worst = 0;
    for (int i = 0; i < 300; i++) {
        const float d1 = logits[i] - step[i], d2 = logits[i] - again[i];
        worst = fmaxf(worst, fmaxf(fabsf(d1), fabsf(d2)));
    }
    CHECK(worst < 1e-4f, "prefill, decode and refill differ by %g", worst);
    elm_context_free(c);
    /* swa_full: every position kept and masked instead, the same logits; context shift allowed */
    cp.swa_full = true;
    float full[300];
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK &&
              elm_forward(c, toks, 60, full, false, &err) == ELM_OK &&
              elm_context_kv_bytes(c) == 6 * 64 * row && elm_context_shift(c, 1, 8, &err) == ELM_OK,
          "swa_full: %s", err.msg);
    worst = 0;
    for (int i = 0; i < 300; i++) worst = fmaxf(worst, fabsf(logits[i] - full[i]));
    CHECK(worst < 1e-4f, "ring and full cache differ by %g", worst);
    elm_context_free(c);
    elm_model_free(m);
    unlink(path);
}

/* Phi-4-mini's shape: RoPE on part of each head, fused attn_qkv and gate/up, LongRoPE's factors
 * (one per rotated pair, long above short) with the original context and the attention factor. */
static void small_phi4(void) {
    const elm_synth_preset p = {"tiny-phi4", "test", "phi3", 300, 64,   2,     4, 2, 96, 256,
                                1e-5f,       1e4f,   true,   false, 0, 0, 12, 0, NULL, 0, 64, {0}};
    const char *path = tmp_path("tiny-phi4.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    CHECK(m->hp.rope_dim == 12 && m->hp.head_dim == 16 && elm_model_find(m, "blk.1.attn_qkv.weight") &&
              !elm_model_find(m, "blk.0.ffn_gate.weight"),
          "phi-4-mini layout (rope_dim %d)", m->hp.rope_dim);
    const elm_tensor *lf = m->rope_long, *sf = m->rope_short;
    CHECK(lf && sf && lf->ne[0] == 6 && sf->ne[0] == 6 && lf->type == ELM_TYPE_F32 &&
              ((const float *)lf->data)[5] == 4.0f && ((const float *)sf->data)[5] == 1.5f &&
              ((const float *)lf->data)[0] == 1.0f && m->hp.n_ctx_orig == 64 &&
              fabsf(m->hp.rope_attn_factor - sqrtf(1 + logf(4) / logf(64))) < 1e-6f,
          "LongRoPE factors, original context %d, attention factor %g", m->hp.n_ctx_orig,
          m->hp.rope_attn_factor);
    elm_model_free(m);
    unlink(path);
}

/* Finite logits from n tokens through a fresh context of m. */
static void runs(elm_model *m, int32_t n_ctx, int32_t n) {
    elm_context *c = NULL;
    elm_error err;
    elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 2};
    int32_t toks[64];
    float logits[300];
    for (int32_t i = 0; i < n && i < 64; i++) toks[i] = 1 + i * 7 % 299;
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK &&
              elm_forward(c, toks, n < 64 ? n : 64, logits, false, &err) == ELM_OK,
          "%s forward: %s", m->hp.arch, err.msg);
    bool finite = c != NULL;
    for (int i = 0; c && i < m->hp.n_vocab && i < 300; i++)
        finite &= logits[i] == logits[i] && logits[i] < 1e30f && logits[i] > -1e30f;
    CHECK(finite, "%s: logits not finite", m->hp.arch);
    elm_context_free(c);
}

/* The recurrent state plan counts for p (one sequence with its checkpoints): that of the model
 * its file loads as, and a multiple (state and checkpoints) of one state of `floats`. */
static void state_planned(const elm_synth_preset *p, const elm_model *m, size_t floats) {
    elm_model *shape = NULL;
    elm_plan plan;
    elm_error err;
    CHECK(elm_plan_shape_preset(p, &shape, &err) == ELM_OK &&
              elm_plan_make(shape, 64, 16, 1, false, 0, 0, &plan, &err) == ELM_OK,
          "plan %s: %s", p->name, err.msg);
    const size_t bytes = floats * sizeof(float);
    CHECK(shape && plan.state_bytes == elm_state_bytes(&m->hp) && plan.state_bytes >= 2 * bytes &&
              plan.state_bytes % bytes == 0,
          "%s: planned state %zu bytes, one state %zu", p->name, shape ? (size_t)plan.state_bytes : 0,
          bytes);
    elm_model_free(shape);
}

/* Qwen3.5's columns in small: DeltaNet layers ('r', 2 key heads and 4 value heads of 16), a gated
 * attention layer with heads of 32 rotated on 8 dimensions, M-RoPE sections. */
static void small_qwen35(void) {
    const elm_synth_preset p = {
        .name = "tiny-qwen35", .source = "test", .arch = "qwen35", .n_vocab = 300, .dim = 64,
        .n_layers = 4, .n_heads = 4, .n_kv_heads = 2, .ffn_dim = 96, .n_ctx_train = 256,
        .rms_eps = 1e-6f, .rope_theta = 1e7f, .tied = true, .head_dim = 32, .rope_dim = 8,
        .layers = "rrra", .conv_l = 4,
        .extra = {.ssm_inner = 64, .ssm_state = 16, .ssm_heads = 4, .ssm_groups = 2,
                  .rope_sections = {2, 1, 1, 0}}};
    const char *path = tmp_path("tiny-qwen35.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    const elm_hparams *hp = &m->hp;
    CHECK(elm_layer_recurrent(hp, 0) && elm_layer_recurrent(hp, 2) && !elm_layer_recurrent(hp, 3) &&
              hp->ssm_inner == 64 && hp->ssm_state == 16 && hp->ssm_heads == 4 &&
              hp->ssm_groups == 2 && hp->conv_l == 4 && hp->rope_dim == 8 && hp->head_dim == 32 &&
              hp->rope_sections[0] == 2 && hp->rope_sections[2] == 1 &&
              m->layers[3].wq->ne[1] == 2 * 4 * 32 && m->layers[0].conv_in->ne[1] == 2 * 2 * 16 + 64,
          "qwen35 sizes");
    /* per DeltaNet layer: the convolution's last 3 inputs of q, k and v, 4 value heads' 16 x 16 */
    state_planned(&p, m, 3 * (3 * (2 * 2 * 16 + 64) + 4 * 16 * 16));
    runs(m, 32, 20);
    elm_model_free(m);
    unlink(path);
}

/* Granite 4.0-H's columns in small: Mamba-2 layers of 8 heads in 2 groups, its multipliers and
 * attention without RoPE. */
static void small_granite(void) {
    const elm_synth_preset p = {
        .name = "tiny-granite", .source = "test", .arch = "granitehybrid", .n_vocab = 300,
        .dim = 64, .n_layers = 3, .n_heads = 4, .n_kv_heads = 2, .ffn_dim = 96,
        .n_ctx_train = 256, .rms_eps = 1e-5f, .rope_theta = 1e4f, .tied = true, .layers = "rar",
        .conv_l = 4,
        .extra = {.ssm_inner = 128, .ssm_state = 16, .ssm_heads = 8, .ssm_groups = 2,
                  .embd_scale = 2.0f, .residual_scale = 0.75f, .attn_scale = 0.125f,
                  .logit_scale = 2.0f, .no_rope = true}};
    const char *path = tmp_path("tiny-granite.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    const elm_hparams *hp = &m->hp;
    CHECK(elm_layer_recurrent(hp, 0) && !elm_layer_recurrent(hp, 1) && hp->ssm_inner == 128 &&
              hp->ssm_heads == 8 && hp->ssm_groups == 2 && hp->no_rope && hp->embd_scale == 2.0f &&
              hp->residual_scale == 0.75f && hp->attn_scale == 0.125f && hp->logit_scale == 2.0f,
          "granitehybrid sizes and multipliers");
    /* per Mamba-2 layer: the last 3 inputs of x, B and C, d_inner x d_state */
    state_planned(&p, m, 2 * (3 * (128 + 2 * 2 * 16) + 128 * 16));
    runs(m, 32, 20);
    elm_model_free(m);
    unlink(path);
}

/* The integer under key in the GGUF file at path, -1 when absent or unreadable. */
static int64_t gguf_int(const char *path, const char *key) {
    FILE *f = fopen(path, "rb");
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = size > 0 ? malloc((size_t)size) : NULL;
    const bool read = buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)size, f) == (size_t)size;
    if (f) fclose(f);
    int64_t v = -1;
    elm_gguf g;
    elm_error err;
    if (read && elm_gguf_open(&g, path, buf, (size_t)size, &err) == ELM_OK)
        elm_gguf_get_int(&g, key, 0, INT32_MAX, &v, &err);
    if (read) elm_gguf_close(&g);
    free(buf);
    return v;
}

/* LFM2-MoE's columns in small (lfm2-8b-a1b's): short-conv layers and one attention layer, the
 * first 2 FFNs dense, the others 8 experts of 32, 2 a token, under a sigmoid router with its
 * selection bias; the file names the router's function and the dense layers, as llama.cpp's
 * converter writes them (its loader refuses a file without lfm2moe.expert_gating_func). */
static void small_lfm2moe(void) {
    const elm_synth_preset p = {
        .name = "tiny-lfm2moe", .source = "test", .arch = "lfm2moe", .n_vocab = 300, .dim = 64,
        .n_layers = 4, .n_heads = 4, .n_kv_heads = 2, .ffn_dim = 96, .n_ctx_train = 256,
        .rms_eps = 1e-5f, .rope_theta = 1e6f, .tied = true, .layers = "rrar", .conv_l = 3,
        .extra = {.n_expert = 8, .n_expert_used = 2, .expert_ffn_dim = 32, .n_dense_lead = 2}};
    const char *path = tmp_path("tiny-lfm2moe.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    CHECK(gguf_int(path, "lfm2moe.expert_gating_func") == ELM_MOE_SIGMOID &&
              gguf_int(path, "lfm2moe.leading_dense_block_count") == 2 &&
              gguf_int(path, "lfm2moe.expert_count") == 8 &&
              gguf_int(path, "lfm2moe.expert_feed_forward_length") == 32,
          "lfm2moe keys: gating %lld, dense %lld",
          (long long)gguf_int(path, "lfm2moe.expert_gating_func"),
          (long long)gguf_int(path, "lfm2moe.leading_dense_block_count"));
    const elm_layer *dense = &m->layers[1], *moe = &m->layers[3];
    CHECK(dense->w_gate && dense->w_gate->ne[1] == 96 && !dense->router && moe->router &&
              moe->router_bias && !moe->w_gate && moe->gate_exps->ne[1] == 32 &&
              moe->gate_exps->ne[2] == 8 && m->hp.n_expert_used == 2,
          "lfm2moe: dense FFNs, then experts");
    /* per short-conv layer: the convolution's last 2 inputs of dim */
    state_planned(&p, m, 3 * 2 * 64);
    runs(m, 32, 20);
    elm_model_free(m);
    unlink(path);
}

/* Gemma 4's columns in small: windowed layers listed ('s', heads of 16) and global ones (heads of
 * 32, a quarter rotated by rope_freqs), the last 3 layers reading the KV of layers 3 and 4 yet
 * carrying their own k and v (unused), their FFN doubled, per-layer embeddings; cut to its first
 * 6 layers (synth --layers), one layer shares. */
static void small_gemma4(void) {
    elm_synth_preset p = {
        .name = "tiny-gemma4", .source = "test", .arch = "gemma4", .n_vocab = 300, .dim = 64,
        .n_layers = 8, .n_heads = 4, .n_kv_heads = 2, .ffn_dim = 96, .n_ctx_train = 256,
        .rms_eps = 1e-6f, .rope_theta = 1e6f, .tied = true, .head_dim = 32, .n_swa = 8,
        .rope_dim = 8, .layers = "sassassa", /* the last layer global, as transformers forces */
        .extra = {.head_dim_swa = 16, .n_embd_per_layer = 8, .kv_shared_from = 5,
                  .double_wide_mlp = true}};
    const char *path = tmp_path("tiny-gemma4.gguf");
    elm_model *m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    const elm_hparams *hp = &m->hp;
    CHECK(hp->swa_listed && elm_layer_swa(hp, 0) && !elm_layer_swa(hp, 1) && !elm_layer_swa(hp, 7) &&
              hp->n_swa == 8 && hp->head_dim == 32 && hp->head_dim_swa == 16 &&
              hp->rope_dim == 32 && hp->rope_dim_swa == 16 && hp->n_kv_shared == 3 &&
              hp->n_embd_per_layer == 8 && hp->logit_softcap == 30.0f &&
              elm_layer_ffn_dim(hp, 4) == 96 && elm_layer_ffn_dim(hp, 5) == 192 &&
              hp->ffn_dim == 192,
          "gemma4 sizes");
    const float *rf = m->rope_freqs ? m->rope_freqs->data : NULL;
    CHECK(rf && m->rope_freqs->ne[0] == 16 && rf[3] == 1.0f && rf[4] > 1e29f && rf[15] > 1e29f,
          "rope_freqs turning 4 of 16 pairs");
    CHECK(elm_model_find(m, "blk.6.attn_k.weight") && elm_model_find(m, "blk.7.attn_v.weight") &&
              elm_model_find(m, "blk.5.attn_k_norm.weight") && !m->layers[6].wk &&
              !m->layers[7].k_norm && m->layers[4].wk,
          "the sharing layers' k and v carried, unbound");
    runs(m, 32, 20);
    elm_model_free(m);
    unlink(path);
    p.n_layers = 6;
    m = write_and_load(&p, ELM_TYPE_F16, path);
    if (!m) return;
    CHECK(m->hp.n_layers == 6 && m->hp.n_kv_shared == 1 && elm_layer_ffn_dim(&m->hp, 5) == 192 &&
              elm_layer_ffn_dim(&m->hp, 4) == 96,
          "cut to 6 layers: %d sharing", m->hp.n_kv_shared);
    runs(m, 32, 12);
    elm_model_free(m);
    unlink(path);
    /* dim and FFN in whole Q8_0 blocks of 32, the per-layer embeddings' 6 x 8 columns not:
     * refused, no file */
    elm_error err;
    CHECK(elm_synth_write(&p, ELM_TYPE_Q8_0, path, 1, NULL, NULL, NULL, &err) == ELM_ERR_ARG &&
              strstr(err.msg, "per_layer_token_embd.weight has rows of 48") && access(path, F_OK) != 0,
          "rows of 8 columns as q8_0: %s", err.msg);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    presets();
    if (!(dir = check_tmp_dir())) return check_skip("cannot create a temporary folder");
    small_llama();
    small_qwen2();
    small_qwen3();
    small_gemma3();
    small_phi4();
    small_qwen35();
    small_granite();
    small_lfm2moe();
    small_gemma4();
    /* shapes that do not fit the type are refused and leave no file */
    const elm_synth_preset odd = {"odd", "test", "llama", 300,   48,   1,    4,
                                  4,     80,     64,      1e-5f, 1e4f, true, false, 0, 0, 0, 0, NULL, 0, 0, {0}};
    const char *path = tmp_path("odd.gguf");
    elm_error err;
    CHECK(elm_synth_write(&odd, ELM_TYPE_Q8_0, path, 1, NULL, NULL, NULL, &err) == ELM_ERR_ARG &&
              access(path, F_OK) != 0,
          "odd shapes accepted: %s", err.msg);
    unlink(tmp_path("tiny-q4_0.gguf")), unlink(tmp_path("tiny-f16.gguf"));
    rmdir(dir);
    free(dir);
    return check_done();
}
