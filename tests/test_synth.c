/* edgelm synth (edgelm/shapes.h): the presets carry the published shapes (parameter counts of the
 * real models), and a small custom preset written to disk loads back with the tensor list,
 * types, tied/untied output, biases and metadata a real file of that architecture has, and runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/shapes.h"

/* Parameters of a preset's model as the tensor list counts them. */
static int64_t params_of(const elm_synth_preset *p, bool bias) {
    const int64_t d = p->dim, head = p->head_dim ? p->head_dim : p->dim / p->n_heads,
                  q = (int64_t)p->n_heads * head, kv = (int64_t)p->n_kv_heads * head,
                  f = p->ffn_dim;
    const bool gemma3 = !strcmp(p->arch, "gemma3"),
               qk_norm = gemma3 || !strcmp(p->arch, "qwen3") || !strcmp(p->arch, "lfm2");
    const int64_t layer = (gemma3 ? 4 : 2) * d + 2 * d * q + 2 * d * kv + 3 * d * f +
                          (bias ? q + 2 * kv : 0) + (qk_norm ? 2 * head : 0);
    /* LFM2's short-conv layers: in_proj [3d, d], out_proj [d, d], the kernel [d, taps] */
    const int64_t conv = 2 * d + 4 * d * d + d * p->conv_l + 3 * d * f;
    int64_t n = (int64_t)p->n_vocab * d * (p->tied ? 1 : 2) + d;
    for (int l = 0; l < p->n_layers; l++) n += p->layers && p->layers[l] == 'r' ? conv : layer;
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
     * Phi-4-mini = 3,836,021,760 ("3.8B"); LFM2 350M and 1.2B = 354,483,968 and 1,170,340,608 */
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
                {"lfm2-1.2b", 1170340608LL}};
    int n;
    elm_synth_presets(&n);
    CHECK(n == (int)(sizeof want / sizeof want[0]), "%d presets, %d checked", n,
          (int)(sizeof want / sizeof want[0]));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const elm_synth_preset *p = elm_synth_find(want[i].name);
        CHECK(p != NULL, "preset %s", want[i].name);
        if (!p) continue;
        const int64_t got = params_of(p, !strcmp(p->arch, "qwen2"));
        CHECK(got == want[i].params, "%s: %lld parameters, want %lld", p->name, (long long)got,
              (long long)want[i].params);
    }
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
                                2,      96,     256,     1e-5f, 10000.0f, false, true, 0, 0, 0, 0, NULL, 0, 0};
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
                                96,           256,    1e-6f,   1e6f, true, false, 0, 0, 0, 0, NULL, 0, 0};
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
                                96,           256,    1e-6f,   1e6f, true, false, 32, 0, 0, 0, NULL, 0, 0};
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
                                1e-6f,         1e6f,   true,     false, 32, 8, 0, 8.0f, NULL, 0, 0};
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
                                1e-5f,       1e4f,   true,   false, 0, 0, 12, 0, NULL, 0, 64};
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

int main(int argc, char **argv) {
    check_init(argc, argv);
    presets();
    if (!(dir = check_tmp_dir())) return check_skip("cannot create a temporary folder");
    small_llama();
    small_qwen2();
    small_qwen3();
    small_gemma3();
    small_phi4();
    /* shapes that do not fit the type are refused and leave no file */
    const elm_synth_preset odd = {"odd", "test", "llama", 300,   48,   1,    4,
                                  4,     80,     64,      1e-5f, 1e4f, true, false, 0, 0, 0, 0, NULL, 0, 0};
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
