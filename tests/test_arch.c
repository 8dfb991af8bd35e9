/* Model families (model/arch.h): the NEOX RoPE and GeGLU scalar kernels against their formulas;
 * for each family a `synth --tiny` model written as GGUF and as a Hugging Face folder loads back
 * from both with the same tensors and the same logits (Llama's q/k permutation, Gemma's norm
 * + 1, Phi-3's fused tensors, Qwen2's biases, Llama 3.1's rope_freqs from config.json; Phi-3's
 * LongRoPE with the context picking its factors); the
 * tokenizer.json written for a SentencePiece vocab (merges made from scores) and a byte-level one
 * tokenizes like the GGUF vocab; sliding-window attention and Mistral's window through HF and
 * GGUF; Gemma 4's layers of two kinds, shared KV layers and per-layer embeddings through both
 * formats, its cache and its refusals (test_gemma4); Granite's multipliers and RoPE switch; the
 * family table and the names made from it; and refusals with clear messages. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/model.h"
#include "edgelm/session.h"
#include "formats/gguf_write.h"
#include "formats/hf.h"
#include "formats/hf_write.h"
#include "formats/loaders.h"
#include "kernels/kernels.h"
#include "model/arch.h"
#include "model/builder.h"
#include "shapes/synth_tiny.h"
#include "tmpfiles.h"

static char *tmpdir;

static void test_kernels(void) {
    const elm_kernels *k = elm_kernels_scalar();
    /* two heads of 6, rope_dim 4: pairs (0, 2) and (1, 3) of each head; 4, 5 untouched */
    float v[12], cs[4] = {cosf(0.3f), sinf(0.3f), cosf(1.1f), sinf(1.1f)};
    for (int i = 0; i < 12; i++) v[i] = (float)(i + 1);
    k->rope_neox(v, 2, 6, 4, cs);
    bool ok = true;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 2; i++) {
            const float a = (float)(h * 6 + i + 1), b = (float)(h * 6 + i + 3);
            ok = ok && fabsf(v[h * 6 + i] - (a * cs[2 * i] - b * cs[2 * i + 1])) < 1e-5f &&
                 fabsf(v[h * 6 + i + 2] - (a * cs[2 * i + 1] + b * cs[2 * i])) < 1e-5f;
        }
    CHECK(ok && v[4] == 5 && v[5] == 6 && v[10] == 11 && v[11] == 12, "rope_neox pairs");
    float g[3] = {-3.0f, 0.0f, 1.5f}, u[3] = {2.0f, 5.0f, -1.0f}, o[3];
    k->geglu(o, g, u, 3);
    /* gelu_tanh(-3) = -0.0036373, gelu_tanh(1.5) = 1.3995715 (tanh approximation) */
    CHECK(fabsf(o[0] - 2 * -0.0036373f) < 1e-6f && o[1] == 0.0f &&
              fabsf(o[2] + 1.3995715f) < 1e-6f,
          "geglu: %g %g %g", o[0], o[1], o[2]);
}

static elm_model *load(const char *path) {
    elm_model *m = NULL;
    elm_error err;
    elm_status st = elm_model_load(path, NULL, &m, &err);
    CHECK(st == ELM_OK, "load %s: %s", path, err.msg);
    return m;
}

/* Logits of every position of a fixed token sequence, in a context of n_ctx tokens (n_seq
 * sequences), with a window of n_swa (-1: the model's own; Gemma 4's decides its layers' kinds,
 * head sizes included). */
static float *logits_in(const elm_model *m, const int32_t *ids, int n, int n_swa, int n_ctx,
                        int n_seq) {
    elm_context *c = NULL;
    elm_error err;
    elm_context_params p = {.n_ctx = n_ctx, .n_batch = 64, .n_threads = 2, .n_seq = n_seq};
    if (n_swa >= 0) ((elm_model *)m)->hp.n_swa = n_swa;
    float *out = malloc(sizeof(float) * (size_t)n * (size_t)m->hp.n_vocab);
    if (!out || elm_context_new(m, &p, &c, &err) || elm_forward(c, ids, n, out, true, &err)) {
        CHECK(false, "forward: %s", err.msg);
        free(out);
        out = NULL;
    }
    elm_context_free(c);
    return out;
}

static float *logits(const elm_model *m, const int32_t *ids, int n, int n_swa) {
    return logits_in(m, ids, n, n_swa, 64, 0);
}

static bool same_tensors(const elm_model *a, const elm_model *b) {
    if (a->n_tensors != b->n_tensors) return false;
    for (int32_t i = 0; i < a->n_tensors; i++) {
        const elm_tensor *t = &a->tensors[i], *u = elm_model_find(b, t->name);
        if (!u || u->type != t->type || u->nbytes != t->nbytes || memcmp(u->ne, t->ne, sizeof t->ne) ||
            memcmp(u->data, t->data, t->nbytes)) {
            fprintf(stderr, "tensor %s differs\n", t->name);
            return false;
        }
    }
    return true;
}

/* Bytes of every layer's keys and values of m in a context of p (elm_context_kv_bytes). */
static size_t context_kv_bytes(const elm_model *m, const elm_context_params *p) {
    elm_context *c = NULL;
    elm_error err;
    const elm_status st = elm_context_new(m, p, &c, &err);
    CHECK(st == ELM_OK, "context: %s", err.msg);
    const size_t bytes = st ? 0 : elm_context_kv_bytes(c);
    elm_context_free(c);
    return bytes;
}

/* Logits of n ids in a context of p, fed n_batch at a time. */
static float *logits_with(const elm_model *m, const elm_context_params *p, const int32_t *ids,
                          int n) {
    elm_context *c = NULL;
    elm_error err;
    float *out = malloc(sizeof(float) * (size_t)n * (size_t)m->hp.n_vocab);
    elm_status st = out ? elm_context_new(m, p, &c, &err) : ELM_ERR_NOMEM;
    for (int off = 0; !st && off < n; off += p->n_batch)
        st = elm_forward(c, ids + off, n - off < p->n_batch ? n - off : p->n_batch,
                         out + (size_t)off * (size_t)m->hp.n_vocab, true, &err);
    if (st) {
        CHECK(false, "forward: %s", err.msg);
        free(out);
        out = NULL;
    }
    elm_context_free(c);
    return out;
}

/* Gemma 4's tiny model (synth_tiny.c), as built (m) and read back from GGUF (g) and HF (h): its
 * layers' kinds, sizes and shared caches survive both; the shared layers have no k or v and no
 * cache rows (the windowed layer they read keeps every position, the others a ring); a batch
 * longer than a ring gives the logits of a cache of every position and of a token at a time;
 * the per-layer embeddings and output scales are used; context shift and sessions are refused
 * with rings and work without. */
static void test_gemma4(elm_model *m, const elm_model *g, const elm_model *h) {
    const elm_model *ms[2] = {g, h};
    for (int i = 0; i < 2; i++) {
        const elm_hparams *a = &m->hp, *b = &ms[i]->hp;
        bool same = b->swa_listed && b->n_swa == a->n_swa && b->head_dim == 64 &&
                    b->head_dim_swa == 32 && b->rope_dim == 64 && b->rope_dim_swa == 32 &&
                    b->n_kv_shared == 3 && b->n_embd_per_layer == 8 && b->ffn_dim == 256 &&
                    b->logit_softcap == 30.0f && b->attn_scale == 1.0f && b->v_norm &&
                    b->rope_theta_swa == 10000.0f && ms[i]->rope_freqs &&
                    ((const float *)ms[i]->rope_freqs->data)[7] == 1.0f &&
                    ((const float *)ms[i]->rope_freqs->data)[8] == 1e30f;
        for (int l = 0; l < 8; l++)
            same = same && elm_layer_swa(b, l) == elm_layer_swa(a, l) &&
                   elm_layer_ffn_dim(b, l) == (l < 5 ? 128 : 256);
        CHECK(same, "gemma4: hyper-parameters differ in the %s copy", i ? "HF" : "GGUF");
    }
    const elm_layer *L = m->layers;
    CHECK(L[4].wk && L[4].k_norm && !L[5].wk && !L[5].wv && !L[5].k_norm && L[7].q_norm &&
              L[7].ple_gate && L[0].out_scale && elm_layer_kv_src(&m->hp, 5) == 3 &&
              elm_layer_kv_src(&m->hp, 7) == 4,
          "gemma4: shared layers' tensors");
    /* n_ctx 64: rings of 48 rows for layers 0 and 2 (32 floats of keys and of values per
     * position), every position for layer 3 (the shared windowed layers read it) and the global
     * layers 1 and 4 (64 floats), none for 5..7 */
    elm_context_params p = {.n_ctx = 64, .n_batch = 64, .n_threads = 2};
    const size_t want = 4 * 2 * (2 * 48 * 64 + 64 * 64 + 2 * 64 * 128);
    CHECK(context_kv_bytes(m, &p) == want &&
              elm_kv_cache_bytes(&m->hp, 64, ELM_TYPE_F32, ELM_TYPE_F32) == want,
          "gemma4: KV cache of %zu bytes, want %zu", context_kv_bytes(m, &p), want);
    enum { N = 60 }; /* more than a ring holds */
    int32_t ids[N];
    for (int i = 0; i < N; i++) ids[i] = i ? 300 + (i * 7919) % 30000 : 2;
    const size_t V = (size_t)m->hp.n_vocab;
    float *ring = logits_with(m, &p, ids, N);
    p.swa_full = true;
    float *full = logits_with(m, &p, ids, N);
    p.swa_full = false;
    p.n_batch = 1;
    float *one = logits_with(m, &p, ids, N);
    float d_one = 0;
    for (size_t i = 0; one && ring && i < N * V; i++) d_one = fmaxf(d_one, fabsf(one[i] - ring[i]));
    CHECK(ring && full && !memcmp(ring, full, N * V * sizeof *ring) && one && d_one < 1e-3f,
          "gemma4: %d tokens through the rings: %g from a token at a time", N, d_one);
    /* the per-layer embeddings and the output scales take part (from the changed token on) */
    p.n_batch = 64;
    float *base = logits_with(m, &p, ids, 6), *row = (float *)m->ple_embd->data + ids[3] * 64,
          *scale = L[2].out_scale->data, saved[64];
    const float scale0 = *scale;
    memcpy(saved, row, sizeof saved);
    for (int i = 0; i < 64; i++) row[i] += 1.0f;
    float *with_ple = logits_with(m, &p, ids, 6);
    memcpy(row, saved, sizeof saved);
    *scale *= 2.0f;
    float *with_scale = logits_with(m, &p, ids, 6);
    *scale = scale0;
    CHECK(with_ple && with_scale && base && memcmp(with_ple, base, 3 * V * sizeof *base) == 0 &&
              memcmp(with_ple, base, 6 * V * sizeof *base) != 0 &&
              memcmp(with_scale, base, 6 * V * sizeof *base) != 0,
          "gemma4: per-layer embeddings or output scales not applied");
    /* context shift and sessions: refused with rings, with every position kept they work */
    elm_context *c = NULL;
    elm_error err;
    for (int full_cache = 0; full_cache < 2; full_cache++) {
        p.swa_full = full_cache;
        if (elm_context_new(m, &p, &c, &err) || elm_forward(c, ids, 40, NULL, false, &err)) {
            CHECK(false, "gemma4: %s", err.msg);
            break;
        }
        const char *session = tmp_path(tmpdir, "gemma4.session");
        const elm_status shift = elm_context_shift(c, 1, 20, &err);
        CHECK(full_cache ? shift == ELM_OK : shift == ELM_ERR_UNSUPPORTED &&
                                                 strstr(err.msg, "sliding-window"),
              "gemma4: context shift with%s rings: %s", full_cache ? "out" : "", err.msg);
        const elm_status save = elm_session_save(c, session, &err);
        CHECK(full_cache ? save == ELM_OK : save == ELM_ERR_UNSUPPORTED,
              "gemma4: session save: %s", err.msg);
        CHECK(!full_cache || (elm_session_load(c, session, &err) == ELM_OK &&
                              elm_context_n_past(c) == 20),
              "gemma4: session load: %s", err.msg);
        unlink(session);
        elm_context_free(c);
        c = NULL;
    }
    free(ring), free(full), free(one), free(base), free(with_ple), free(with_scale);
}

/* synth --tiny of arch with vocab: GGUF and HF copies load to the same model as the one built. */
static void test_family(const char *arch, const char *vocab) {
    char rel[128];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", vocab);
    elm_synth_tiny o = {.arch = arch, .vocab_path = fixture(rel), .seed = 3};
    elm_model *m = NULL;
    float llama3[4];
    elm_error err;
    elm_status st = elm_synth_tiny_model(&o, &m, llama3, &err);
    CHECK(st == ELM_OK, "%s: synth: %s", arch, err.msg);
    if (st) return;
    const char *gguf = tmp_path(tmpdir, "tiny.gguf");
    char hf[600];
    snprintf(hf, sizeof hf, "%s/hf-%s", tmpdir, arch);
    CHECK(elm_gguf_write_model(m, gguf, &err) == ELM_OK, "%s: gguf: %s", arch, err.msg);
    CHECK(elm_hf_write(m, llama3, hf, &err) == ELM_OK, "%s: hf: %s", arch, err.msg);
    elm_model *g = load(gguf), *h = load(hf);
    if (g && h) {
        CHECK(!strcmp(g->hp.arch, arch) && !strcmp(h->hp.arch, arch) &&
                  g->hp.head_dim == m->hp.head_dim && h->hp.head_dim == m->hp.head_dim &&
                  g->hp.tied_output == m->hp.tied_output && h->hp.tied_output == m->hp.tied_output,
              "%s: hparams differ after loading", arch);
        CHECK(same_tensors(m, g), "%s: GGUF tensors differ", arch);
        CHECK(same_tensors(m, h), "%s: HF tensors differ", arch);
        CHECK((m->rope_freqs != NULL) == (!strcmp(arch, "llama") || !strcmp(arch, "gemma4")) &&
                  (h->rope_freqs != NULL) == (m->rope_freqs != NULL),
              "%s: rope_freqs", arch);
        static const int32_t ids[6] = {1, 450, 7483, 310, 3444, 338};
        const elm_arch *fam = elm_arch_find(arch);
        /* no window; Gemma 4's, EmbeddingGemma's (their windowed layers' RoPE is their own) */
        const int own = fam->swa_listed || fam->non_causal ? -1 : 0;
        float *lg = logits(g, ids, 6, own), *lh = logits(h, ids, 6, own);
        size_t n = 6 * (size_t)m->hp.n_vocab;
        CHECK(lg && lh && !memcmp(lg, lh, n * sizeof *lg), "%s: HF and GGUF logits differ", arch);
        bool finite = lg != NULL;
        for (size_t i = 0; lg && i < n; i++) finite = finite && isfinite(lg[i]);
        CHECK(finite, "%s: logits not finite", arch);
        /* a window of 1: each token sees only itself, so its logits do not depend on the tokens
         * before it or on its position; a window as long as the text changes nothing (not in a
         * hybrid: its recurrent layers see the tokens before, test_hybrid.c; nor where global
         * layers do, Gemma 4) */
        const bool hybrid = fam->recurrent != ELM_LAYER_ATTENTION || fam->swa_listed ||
                            fam->swa_period;
        /* a non-causal model's window is symmetric: n_swa / 2 on either side (EmbeddingGemma) */
        float *w1 = logits(g, ids, 6, 1), *last = logits(g, ids + 5, 1, own),
              *w6 = logits(g, ids, 6, fam->non_causal ? 12 : 6);
        size_t V = (size_t)m->hp.n_vocab;
        float d_self = 0, d_full = 0; /* batched and single-token products round differently */
        for (size_t i = 0; w1 && last && lg && i < V; i++) {
            d_self = fmaxf(d_self, fabsf(w1[5 * V + i] - last[i]));
            d_full = fmaxf(d_full, fabsf(w1[5 * V + i] - lg[5 * V + i]));
        }
        CHECK(hybrid || (w1 && last && d_self < 1e-4f && d_full > 0.1f),
              "%s: sliding window of 1: %g %g", arch, d_self, d_full);
        CHECK(w6 && lg && !memcmp(w6, lg, n * sizeof *w6), "%s: window as long as the text", arch);
        g->hp.n_swa = m->hp.n_swa;
        free(w1);
        free(last);
        free(w6);
        free(lg);
        free(lh);
    }
    if (!strcmp(arch, "qwen3")) {
        /* the q/k norms are bound per layer and used: scaling layer 0's q norm changes logits
         * (the synth model's tensors are its own F32 buffers) */
        static const int32_t ids[3] = {1, 450, 7483};
        const elm_layer *L = &m->layers[0];
        float *before = logits(m, ids, 3, 0);
        for (int64_t i = 0; L->q_norm && i < L->q_norm->ne[0]; i++)
            ((float *)L->q_norm->data)[i] *= 3.0f;
        float *after = logits(m, ids, 3, 0);
        CHECK(L->q_norm && L->k_norm && L->q_norm->ne[0] == m->hp.head_dim && before && after &&
                  memcmp(before, after, 3 * (size_t)m->hp.n_vocab * sizeof *before) != 0,
              "qwen3: q norm not applied");
        CHECK(!elm_model_find(m, "blk.0.attn_q.bias"), "qwen3 has q/k/v biases");
        free(before);
        free(after);
    }
    if (!strcmp(arch, "smollm3")) {
        /* the last of its 4 layers runs without RoPE: rotating it too changes the logits */
        static const int32_t ids[3] = {1, 450, 7483};
        float *nope = logits(m, ids, 3, 0);
        m->hp.nope_every = 0;
        float *rope = logits(m, ids, 3, 0);
        m->hp.nope_every = 4;
        CHECK(m->hp.n_layers == 4 && nope && rope &&
                  memcmp(nope, rope, 3 * (size_t)m->hp.n_vocab * sizeof *nope) != 0,
              "smollm3: NoPE layer not honoured");
        free(nope);
        free(rope);
    }
    if (g && h && !strcmp(arch, "gemma4")) test_gemma4(m, g, h);
    if (g && h && !strcmp(arch, "gemma-embedding")) {
        /* bidirectional attention, mean pooling and the Dense layers through GGUF keys and
         * sentence-transformers' modules.json; the HF class Gemma3TextModel, no "model." */
        for (const elm_model *x = g; x; x = x == g ? h : NULL)
            CHECK(x->hp.non_causal && x->hp.pooling == 1 && x->hp.dense_dim == 2 * x->hp.dim &&
                      x->dense_2 && x->dense_3 && x->hp.swa_period == 6,
                  "gemma-embedding: %s: non-causal %d, pooling %d, dense %d", x->format,
                  x->hp.non_causal, x->hp.pooling, x->hp.dense_dim);
    }
    if (g && h && !strcmp(arch, "granitehybrid")) {
        /* Granite's multipliers and RoPE switch go through GGUF and config.json, and act: twice
         * the logit scale halves the logits exactly; RoPE on in its attention layer, or no
         * residual scale, changes them */
        const elm_hparams *a = &m->hp;
        for (const elm_model *x = g; x; x = x == g ? h : NULL)
            CHECK(x->hp.embd_scale == a->embd_scale && x->hp.residual_scale == a->residual_scale &&
                      x->hp.attn_scale == a->attn_scale && x->hp.logit_scale == a->logit_scale &&
                      x->hp.no_rope && x->hp.ssm_state == a->ssm_state &&
                      x->hp.ssm_heads == a->ssm_heads && x->hp.ssm_groups == a->ssm_groups &&
                      x->hp.ssm_inner == a->ssm_inner && x->hp.conv_l == a->conv_l,
                  "granitehybrid: %s hyper-parameters differ", x->format);
        static const int32_t ids[3] = {1, 450, 7483};
        const size_t n = 3 * (size_t)m->hp.n_vocab;
        float *base = logits(m, ids, 3, 0);
        m->hp.logit_scale *= 2;
        float *half = logits(m, ids, 3, 0);
        m->hp.logit_scale /= 2;
        m->hp.no_rope = false;
        float *rope = logits(m, ids, 3, 0);
        m->hp.no_rope = true;
        m->hp.residual_scale = 1.0f;
        float *res = logits(m, ids, 3, 0);
        bool halved = base && half;
        for (size_t i = 0; halved && i < n; i++) halved = half[i] == base[i] * 0.5f;
        CHECK(halved, "granitehybrid: logit scale");
        CHECK(base && rope && memcmp(base, rope, n * sizeof *base), "granitehybrid: RoPE switch");
        CHECK(base && res && memcmp(base, res, n * sizeof *base), "granitehybrid: residual scale");
        free(base);
        free(half);
        free(rope);
        free(res);
    }
    if (g && h && !strcmp(arch, "qwen35")) {
        /* the sizes of its Gated DeltaNet layers, which layers they are, a quarter of each head
         * rotated, the M-RoPE sections, through GGUF and HF */
        for (const elm_model *x = g; x; x = x == g ? h : NULL) {
            const elm_hparams *a = &x->hp, *b = &m->hp;
            CHECK(a->conv_l == 4 && a->ssm_state == b->ssm_state && a->ssm_groups == 2 &&
                      a->ssm_heads == 4 && a->ssm_inner == b->ssm_inner &&
                      a->rope_dim * 4 == a->head_dim &&
                      !memcmp(a->rope_sections, b->rope_sections, sizeof a->rope_sections) &&
                      !memcmp(a->recurrent, b->recurrent, sizeof a->recurrent) &&
                      x->layers[0].kind == ELM_LAYER_DELTANET &&
                      x->layers[3].kind == ELM_LAYER_ATTENTION,
                  "qwen35: %s hparams", x->format);
        }
        /* the attention's output gate is used: the gate rows of layer 1's q projection matter */
        static const int32_t ids[3] = {1, 450, 7483};
        const elm_tensor *wq = m->layers[1].wq;
        const int64_t hd = m->hp.head_dim;
        float *before = logits(m, ids, 3, 0);
        for (int64_t r = hd; r < 2 * hd; r++) /* head 0's gate */
            for (int64_t i = 0; i < wq->ne[0]; i++) ((float *)wq->data)[r * wq->ne[0] + i] *= 3.0f;
        float *after = logits(m, ids, 3, 0);
        CHECK(wq->ne[1] == 2 * m->hp.n_heads * hd && before && after &&
                  memcmp(before, after, 3 * (size_t)m->hp.n_vocab * sizeof *before) != 0,
              "qwen35: attention gate not applied");
        free(before);
        free(after);
    }
    if (g && !strcmp(arch, "phi3")) {
        /* fused tensors are bound as row views into the file's tensor */
        const elm_tensor *qkv = elm_model_find(g, "blk.1.attn_qkv.weight");
        const elm_layer *L = &g->layers[1];
        const size_t row = (size_t)g->hp.dim * 4;
        CHECK(qkv && L->wq->data == qkv->data && L->wk->ne[1] == 2 * 16 &&
                  (char *)L->wv->data == (char *)qkv->data + (size_t)(64 + 32) * row &&
                  !elm_model_find(g, "blk.1.attn_q.weight") && L->w_up->ne[1] == g->hp.ffn_dim,
              "phi3: fused views");
    }
    elm_model_free(g);
    elm_model_free(h);
    elm_model_free(m);
}

/* Phi-3 with LongRoPE (synth --longrope): the factors and their hyper-parameters through GGUF and
 * HF; a context longer than the original one (per sequence) runs the long factors, as llama.cpp
 * picks them; the attention factor scales the logits' path. */
static void test_longrope(void) {
    elm_synth_tiny o = {.arch = "phi3", .vocab_path = fixture("vocab/ggml-vocab-phi-3.gguf"),
                        .seed = 5, .longrope = true};
    elm_model *m = NULL;
    elm_error err;
    elm_status st = elm_synth_tiny_model(&o, &m, NULL, &err);
    CHECK(st == ELM_OK, "longrope: synth: %s", err.msg);
    if (st) return;
    const elm_hparams *hp = &m->hp;
    CHECK(m->rope_long && m->rope_short && !m->rope_freqs && hp->rope_dim == 12 &&
              hp->head_dim == 16 && m->rope_long->ne[0] == 6 && hp->n_ctx_orig == 512 &&
              hp->n_ctx_train == 4096 &&
              fabsf(hp->rope_attn_factor - sqrtf(1 + logf(8) / logf(512))) < 1e-6f,
          "longrope: shape (rope_dim %d, original context %d, attention factor %g)", hp->rope_dim,
          hp->n_ctx_orig, hp->rope_attn_factor);
    for (int i = 0; m->rope_long && i < 6; i++)
        CHECK(((float *)m->rope_long->data)[i] != ((float *)m->rope_short->data)[i],
              "longrope: factor %d long == short", i);
    CHECK(elm_model_rope_factors(m, 512) == m->rope_short &&
              elm_model_rope_factors(m, 513) == m->rope_long,
          "longrope: factors picked at the original context");
    const char *gguf = tmp_path(tmpdir, "longrope.gguf");
    char hf[600];
    snprintf(hf, sizeof hf, "%s/hf-longrope", tmpdir);
    CHECK(elm_gguf_write_model(m, gguf, &err) == ELM_OK, "longrope: gguf: %s", err.msg);
    CHECK(elm_hf_write(m, NULL, hf, &err) == ELM_OK, "longrope: hf: %s", err.msg);
    elm_model *g = load(gguf), *h = load(hf);
    static const int32_t ids[6] = {1, 450, 7483, 310, 3444, 338};
    const size_t n = 6 * (size_t)hp->n_vocab;
    for (int k = 0; g && h && k < 2; k++) {
        const elm_model *x = k ? h : g;
        CHECK(same_tensors(m, x) && x->hp.n_ctx_orig == 512 &&
                  x->hp.rope_attn_factor == hp->rope_attn_factor && x->hp.rope_dim == 12,
              "longrope: %s copy differs", k ? "HF" : "GGUF");
    }
    float *gs = g ? logits_in(g, ids, 6, 0, 512, 0) : NULL, *hs = h ? logits_in(h, ids, 6, 0, 512, 0) : NULL;
    float *gl = g ? logits_in(g, ids, 6, 0, 1024, 0) : NULL, *hl = h ? logits_in(h, ids, 6, 0, 1024, 0) : NULL;
    /* two sequences of 512 in a context of 1024: each sequence's context picks */
    float *g2 = g ? logits_in(g, ids, 6, 0, 1024, 2) : NULL;
    CHECK(gs && hs && gl && hl && g2 && !memcmp(gs, hs, n * sizeof *gs) &&
              !memcmp(gl, hl, n * sizeof *gl),
          "longrope: HF and GGUF logits differ");
    CHECK(gs && gl && memcmp(gs, gl, n * sizeof *gs) != 0, "longrope: long factors not run");
    CHECK(gs && g2 && !memcmp(gs, g2, n * sizeof *gs), "longrope: n_seq's context not the one");
    /* the attention factor: 1 changes the logits (from the second position on: the first
     * attends to itself only) */
    float *g1 = NULL;
    if (g) {
        const float f = g->hp.rope_attn_factor;
        g->hp.rope_attn_factor = 1.0f;
        g1 = logits_in(g, ids, 6, 0, 512, 0);
        g->hp.rope_attn_factor = f;
    }
    const size_t V = (size_t)hp->n_vocab;
    CHECK(g1 && gs && !memcmp(g1, gs, V * sizeof *gs) && memcmp(g1, gs, n * sizeof *gs) != 0,
          "longrope: attention factor");
    free(gs), free(hs), free(gl), free(hl), free(g2), free(g1);
    /* config.json's attention_factor, when given, is the one run */
    elm_model_free(h);
    h = NULL;
    const char *cfg = tmp_path(hf, "config.json");
    size_t len;
    char *text = (char *)file_read(cfg, &len);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    CHECK(rs && !cJSON_HasObjectItem(rs, "attention_factor") &&
              cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rs, "type")),
          "longrope: config.json rope_scaling");
    cJSON_AddNumberToObject(rs, "attention_factor", 1.25);
    char *out = cJSON_Print(root);
    if (out && file_write(cfg, out, strlen(out))) h = load(hf);
    CHECK(h && h->hp.rope_attn_factor == 1.25f, "longrope: attention_factor %g",
          h ? h->hp.rope_attn_factor : 0);
    free(out);
    free(text);
    cJSON_Delete(root);
    elm_model_free(g);
    elm_model_free(h);
    elm_model_free(m);
    unlink(gguf);
    tmp_dir_remove(strdup(hf));
    /* LongRoPE is Phi-3's: the factors in a Qwen2 model are refused, not run */
    o = (elm_synth_tiny){.arch = "qwen2", .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf")};
    static float f[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t ne[1] = {8};
    if (elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK) {
        st = elm_model_add_tensor(m, "rope_factors_long.weight", ELM_TYPE_F32, 1, ne, f, sizeof f,
                                  &err);
        if (!st) st = elm_model_add_tensor(m, "rope_factors_short.weight", ELM_TYPE_F32, 1, ne, f,
                                           sizeof f, &err);
        if (!st) st = elm_model_bind(m, &err);
        CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "LongRoPE") &&
                  strstr(err.msg, "'qwen2'"),
              "longrope in qwen2: %d %s", st, err.msg);
        elm_model_free(m);
    }
}

/* YaRN on a family whose files do not usually say it (Qwen3): rope.scaling.type yarn with its
 * factor, original context and betas survives GGUF, and runs other logits than no scaling and
 * than linear scaling by the same factor (the ramp leaves the fast pairs unscaled). */
static void test_yarn(void) {
    elm_synth_tiny o = {.arch = "qwen3", .vocab_path = fixture("vocab/ggml-vocab-qwen2.gguf"),
                        .seed = 5};
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK, "yarn: synth: %s", err.msg);
    if (!m) return;
    static const int32_t ids[6] = {1, 450, 7483, 310, 3444, 338};
    const size_t n = 6 * (size_t)m->hp.n_vocab;
    float *none = logits(m, ids, 6, 0);
    m->hp.rope_freq_scale = 1.0f / 16;
    float *linear = logits(m, ids, 6, 0);
    m->hp.rope_yarn = true;
    m->hp.n_ctx_orig = 512;
    m->hp.yarn_beta_fast = 24.0f;
    const char *gguf = tmp_path(tmpdir, "yarn.gguf");
    CHECK(elm_gguf_write_model(m, gguf, &err) == ELM_OK, "yarn: gguf: %s", err.msg);
    elm_model *g = load(gguf);
    float *yarn = g ? logits(g, ids, 6, 0) : NULL;
    CHECK(g && g->hp.rope_yarn && g->hp.rope_freq_scale == 1.0f / 16 &&
              g->hp.n_ctx_orig == 512 && g->hp.yarn_beta_fast == 24.0f &&
              g->hp.yarn_beta_slow == 1.0f,
          "yarn: the GGUF copy's RoPE scaling");
    CHECK(none && linear && yarn && memcmp(yarn, none, n * sizeof *yarn) != 0 &&
              memcmp(yarn, linear, n * sizeof *yarn) != 0,
          "yarn: logits as without scaling or with linear scaling");
    free(none), free(linear), free(yarn);
    elm_model_free(g);
    elm_model_free(m);
    unlink(gguf);
}

/* tokenizer.json written from a GGUF vocab tokenizes the vocab test strings the same way. */
static void test_tokenizer_json(const char *vocab) {
    char rel[128];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", vocab);
    elm_vocab v, w;
    elm_error err;
    if (elm_vocab_load(fixture(rel), &v, &err)) {
        CHECK(false, "%s: %s", vocab, err.msg);
        return;
    }
    CHECK(elm_hf_write_tokenizer(&v, tmpdir, &err) == ELM_OK, "%s: write: %s", vocab, err.msg);
    elm_hf_config c = {.bos_id = -1, .eos_id = -1};
    elm_status st = elm_hf_read_tokenizer(tmpdir, &c, &w, &err);
    CHECK(st == ELM_OK, "%s: read back: %s", vocab, err.msg);
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf.inp", vocab);
    size_t len;
    char *inp = (char *)file_read(fixture(rel), &len);
    int cases = 0, same = 0;
    for (char *s = inp, *end; !st && s && (end = strstr(s, "\n__ggml_vocab_test__\n")); cases++) {
        *end = '\0';
        int32_t a[512], b[512];
        int64_t na = elm_tokenize(&v, s, strlen(s), true, a, 512, &err);
        int64_t nb = elm_tokenize(&w, s, strlen(s), true, b, 512, &err);
        same += na == nb && na <= 512 && !memcmp(a, b, (size_t)na * sizeof *a);
        s = end + strlen("\n__ggml_vocab_test__\n");
    }
    CHECK(cases == 46 && same == cases, "%s: %d of %d cases tokenize alike", vocab, same, cases);
    CHECK(st || (w.n_tokens == v.n_tokens && w.bos_id == v.bos_id && w.eos_id == v.eos_id &&
                 w.add_bos == v.add_bos && !strcmp(w.model, v.model) && !strcmp(w.pre, v.pre)),
          "%s: vocab fields differ after the round trip", vocab);
    free(inp);
    if (!st) elm_vocab_free(&w);
    elm_vocab_free(&v);
}

/* Writes an HF copy of the tiny model of arch into dir, its config.json keys set as in the JSON
 * object json_edit. */
static bool hf_copy_with(const char *arch, const char *json_edit, const char *dir) {
    elm_synth_tiny o = {.arch = arch, .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf")};
    elm_model *m = NULL;
    float llama3[4];
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, llama3, &err) || elm_hf_write(m, llama3, dir, &err)) {
        CHECK(false, "%s: %s", arch, err.msg);
        elm_model_free(m);
        return false;
    }
    elm_model_free(m);
    size_t len;
    const char *cfg = tmp_path(dir, "config.json");
    char *text = (char *)file_read(cfg, &len);
    cJSON *root = text ? cJSON_Parse(text) : NULL, *edit = cJSON_Parse(json_edit), *e;
    cJSON_ArrayForEach(e, edit) {
        if (cJSON_IsNull(e)) /* null removes the key */
            cJSON_DeleteItemFromObjectCaseSensitive(root, e->string);
        else if (cJSON_HasObjectItem(root, e->string))
            cJSON_ReplaceItemInObject(root, e->string, cJSON_Duplicate(e, true));
        else
            cJSON_AddItemToObject(root, e->string, cJSON_Duplicate(e, true));
    }
    char *out = cJSON_Print(root);
    bool ok = out && file_write(cfg, out, strlen(out));
    CHECK(ok, "rewrite %s", cfg);
    free(out);
    free(text);
    cJSON_Delete(root);
    cJSON_Delete(edit);
    return ok;
}

/* Loads an HF copy of the tiny model of arch after json_edit and expects an error. */
static void expect_config_error(const char *arch, const char *json_edit, elm_status code,
                                const char *want) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bad-%s", tmpdir, arch);
    elm_model *m = NULL;
    elm_error err;
    if (hf_copy_with(arch, json_edit, dir)) {
        elm_status st = elm_model_load(dir, NULL, &m, &err);
        CHECK(st == code && strstr(err.msg, "config.json") && strstr(err.msg, want),
              "%s %s: %d %s", arch, json_edit, st, err.msg);
        if (!st) elm_model_free(m);
    }
    tmp_dir_remove(strdup(dir));
}

/* Mistral is Llama with a sliding window: config.json's window survives a GGUF round trip. */
static void test_mistral(void) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/mistral", tmpdir);
    if (hf_copy_with("llama", "{\"model_type\": \"mistral\", \"sliding_window\": 4, "
                              "\"architectures\": [\"MistralForCausalLM\"]}", dir)) {
        elm_model *m = load(dir), *g = NULL;
        elm_error err;
        const char *gguf = tmp_path(tmpdir, "mistral.gguf");
        CHECK(m && !strcmp(m->hp.arch, "llama") && m->hp.n_swa == 4, "mistral: arch %s window %d",
              m ? m->hp.arch : "-", m ? m->hp.n_swa : -1);
        if (m && elm_gguf_write_model(m, gguf, &err) == ELM_OK) g = load(gguf);
        CHECK(g && g->hp.n_swa == 4, "mistral: window lost in GGUF");
        elm_model_free(m);
        elm_model_free(g);
        unlink(gguf);
    }
    tmp_dir_remove(strdup(dir));
}

/* The family table and what is made from it: every name elm_arch_names lists is a row, each of
 * its HF names leads back to it (by class, and by model_type unless an earlier row has it:
 * gemma3_text, Gemma 3's and EmbeddingGemma's) and is in the HF refusal's list, and
 * its tiny model's default vocabulary is a fixture (the defaults as they were: llama-bpe, qwen2,
 * phi-3, else llama-spm). */
static void test_table(void) {
    char names[256];
    int n = 0;
    snprintf(names, sizeof names, "%s", elm_arch_names());
    for (char *save, *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        const elm_arch *a = elm_arch_find(name);
        CHECK(a && elm_arch_supported(name), "%s: listed, not found", name);
        if (!a) continue;
        n++;
        for (int k = 0; k < ELM_ARCH_HF_MAX && a->hf[k].type; k++) {
            const char *type = elm_arch_hf_type(a->hf[k].cls);
            const elm_arch *by_type = elm_arch_from_hf(a->hf[k].type);
            CHECK((by_type == a || by_type < a) && elm_arch_from_hf_class(a->hf[k].cls) == a &&
                      type && !strcmp(type, a->hf[k].type) &&
                      strstr(elm_arch_hf_names(), a->hf[k].type),
                  "%s: HF name %s / %s", name, a->hf[k].type, a->hf[k].cls);
        }
        char rel[128];
        snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", elm_synth_tiny_vocab(name));
        CHECK(access(fixture(rel), R_OK) == 0, "%s: no vocabulary %s", name, rel);
    }
    CHECK(n == 16, "%d families: %s", n, elm_arch_names());
    CHECK(elm_arch_from_hf("mistral") == elm_arch_find("llama") && !elm_arch_find("mistral") &&
              elm_arch_from_hf("gemma3") == elm_arch_find("gemma3") &&
              !elm_arch_from_hf("mamba") && !elm_arch_hf_type("MambaForCausalLM"),
          "HF aliases");
    const struct { const char *arch, *vocab; } v[] = {
        {"llama", "llama-bpe"}, {"qwen2", "qwen2"}, {"qwen3", "llama-spm"}, {"phi3", "phi-3"},
        {"gemma", "llama-spm"}, {"mamba", "llama-spm"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        CHECK(!strcmp(elm_synth_tiny_vocab(v[i].arch), v[i].vocab), "%s: tiny vocab %s",
              v[i].arch, elm_synth_tiny_vocab(v[i].arch));
}

/* Writes Gemma 4's tiny model as GGUF with its bytes edited: the first `from` (of len bytes)
 * becomes `to`, or with tensor `drop` renamed; loads it and expects `want` in the error. */
static void expect_gemma4_error(const char *from, const char *to, size_t len, const char *drop,
                                const char *want) {
    elm_synth_tiny o = {.arch = "gemma4", .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf")};
    elm_model *m = NULL, *bad = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err)) {
        CHECK(false, "gemma4: %s", err.msg);
        return;
    }
    elm_tensor *t = drop ? elm_model_find(m, drop) : NULL;
    if (t) t->name[0] = '_';
    const char *path = tmp_path(tmpdir, "gemma4-bad.gguf");
    size_t n = 0;
    unsigned char *data = elm_gguf_write_model(m, path, &err) ? NULL : file_read(path, &n);
    unsigned char *at = data && from ? memmem(data, n, from, len) : NULL;
    if (at) memcpy(at, to, len);
    CHECK(data && (at || !from) && file_write(path, data, n), "gemma4: edit %s", path);
    const elm_status st = elm_model_load(path, NULL, &bad, &err);
    CHECK(st && strstr(err.msg, path) && strstr(err.msg, want), "gemma4 (%s): %d %s", want, st,
          err.msg);
    elm_model_free(bad);
    elm_model_free(m);
    free(data);
    unlink(path);
}

/* Gemma 4's refusals: a per-layer array of another length than the layers, a key or a tensor of
 * the family missing, in GGUF; in config.json its required keys, the layers that the shared
 * ones read of the wrong kind (llama.cpp's rule), what it does not run. */
static void test_gemma4_refusals(void) {
    /* block_count 8 -> 9 (its u32 value after the key and the type) */
    const char count_from[] = "gemma4.block_count\x04\0\0\0\x08";
    const char count_to[] = "gemma4.block_count\x04\0\0\0\x09";
    expect_gemma4_error(count_from, count_to, sizeof count_from - 1, NULL,
                        "key 'gemma4.feed_forward_length' has 8 values for 9 layers");
    expect_gemma4_error("key_length_swa", "key_length_swx", 14, NULL,
                        "key 'gemma4.attention.key_length_swa' missing");
    expect_gemma4_error("embedding_length_per_layer_input", "embedding_length_per_layer_inpux",
                        32, NULL, "key 'gemma4.embedding_length_per_layer_input' missing");
    expect_gemma4_error(NULL, NULL, 0, "blk.2.inp_gate.weight",
                        "missing tensor 'blk.2.inp_gate.weight'");
    expect_gemma4_error(NULL, NULL, 0, "rope_freqs.weight", "missing tensor 'rope_freqs.weight'");
    expect_gemma4_error(NULL, NULL, 0, "per_layer_proj_norm.weight",
                        "missing tensor 'per_layer_proj_norm.weight'");
    expect_config_error("gemma4", "{\"layer_types\": null}", ELM_ERR_FORMAT,
                        "missing required key 'layer_types'");
    expect_config_error("gemma4", "{\"sliding_window\": null}", ELM_ERR_FORMAT,
                        "missing required key 'sliding_window'");
    expect_config_error("gemma4", "{\"layer_types\": [\"sliding_attention\"]}",
                        ELM_ERR_FORMAT, "'layer_types' has 1 entries for 8 layers");
    /* layer 3, which the shared windowed layers read, made global (the model's check) */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/gemma4-kinds", tmpdir);
    if (hf_copy_with("gemma4",
                     "{\"layer_types\": [\"sliding_attention\", \"full_attention\", "
                     "\"sliding_attention\", \"full_attention\", \"full_attention\", "
                     "\"sliding_attention\", \"sliding_attention\", \"full_attention\"]}",
                     dir)) {
        elm_model *m = NULL;
        elm_error err;
        const elm_status st = elm_model_load(dir, NULL, &m, &err);
        CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, dir) &&
                  strstr(err.msg, "layer 5 reads the KV of layer 3, which is not a windowed"),
              "gemma4 kinds: %d %s", st, err.msg);
        elm_model_free(m);
    }
    tmp_dir_remove(strdup(dir));
    expect_config_error("gemma4", "{\"attention_k_eq_v\": true}", ELM_ERR_UNSUPPORTED,
                        "attention_k_eq_v is not supported");
    expect_config_error("gemma4", "{\"enable_moe_block\": true}", ELM_ERR_UNSUPPORTED,
                        "enable_moe_block is not supported");
    expect_config_error("gemma4", "{\"vocab_size_per_layer_input\": 1000}", ELM_ERR_UNSUPPORTED,
                        "vocab_size_per_layer_input 1000 differs");
}

static void test_refusals(void) {
    /* LFM2's own keys: which layers convolve, the kernel's taps; and an older config's
     * full_attn_idxs stands for layer_types */
    expect_config_error("lfm2", "{\"layer_types\": null}", ELM_ERR_FORMAT,
                        "'layer_types' (or 'full_attn_idxs') missing");
    expect_config_error("lfm2", "{\"layer_types\": [\"conv\", \"full_attention\"]}",
                        ELM_ERR_FORMAT, "'layer_types' has 2 entries for 3 layers");
    expect_config_error("lfm2", "{\"conv_L_cache\": null}", ELM_ERR_FORMAT,
                        "missing required key 'conv_L_cache'");
    expect_config_error("lfm2", "{\"layer_types\": null, \"full_attn_idxs\": [1, 7]}",
                        ELM_ERR_FORMAT, "'full_attn_idxs' holds a value");
    char dir[600];
    snprintf(dir, sizeof dir, "%s/lfm2-idxs", tmpdir);
    if (hf_copy_with("lfm2", "{\"layer_types\": null, \"full_attn_idxs\": [1]}", dir)) {
        elm_model *m = load(dir);
        CHECK(m && m->hp.recurrent[0] && !m->hp.recurrent[1] && m->hp.recurrent[2] &&
                  m->layers[1].kind == ELM_LAYER_ATTENTION,
              "lfm2: full_attn_idxs");
        elm_model_free(m);
    }
    tmp_dir_remove(strdup(dir));
    /* Granite 4.0-H's: which layers are Mamba-2, its sizes; a top-k above its experts, a
     * convolution without bias (llama.cpp's graph adds it) */
    expect_config_error("granitehybrid", "{\"layer_types\": null}", ELM_ERR_FORMAT,
                        "key 'layer_types' missing");
    expect_config_error("granitehybrid", "{\"layer_types\": [\"mamba\", \"conv\", \"mamba\"]}",
                        ELM_ERR_FORMAT, "'layer_types'[1] is not 'mamba' or 'attention'");
    expect_config_error("granitehybrid", "{\"mamba_d_state\": null}", ELM_ERR_FORMAT,
                        "missing required key 'mamba_d_state'");
    expect_config_error("granitehybrid", "{\"mamba_d_head\": 32}", ELM_ERR_FORMAT,
                        "mamba_expand 2 × hidden_size 64 is not mamba_n_heads 8 × mamba_d_head 32");
    expect_config_error("granitehybrid", "{\"num_local_experts\": 8, \"num_experts_per_tok\": 9}",
                        ELM_ERR_FORMAT, "num_experts_per_tok 9 is more than num_local_experts 8");
    /* Qwen3.5-MoE's shared expert, whose size its configs give (not intermediate_size) */
    expect_config_error("qwen35moe", "{\"shared_expert_intermediate_size\": null}", ELM_ERR_FORMAT,
                        "missing required key 'shared_expert_intermediate_size'");
    expect_config_error("granitehybrid", "{\"mamba_conv_bias\": false}", ELM_ERR_UNSUPPORTED,
                        "mamba_conv_bias");
    expect_config_error("granitehybrid", "{\"position_embedding_type\": \"alibi\"}",
                        ELM_ERR_UNSUPPORTED, "position_embedding_type");
    /* Qwen3.5's: which layers attend (layer_types, or an interval), the Gated DeltaNet's sizes,
     * its RoPE and gate */
    expect_config_error("qwen35", "{\"layer_types\": [\"full_attention\"]}", ELM_ERR_FORMAT,
                        "'layer_types' has 1 entries for 4 layers");
    expect_config_error("qwen35", "{\"layer_types\": [\"conv\", \"full_attention\", "
                        "\"linear_attention\", \"full_attention\"]}", ELM_ERR_FORMAT,
                        "'layer_types'[0] is not 'linear_attention' or 'full_attention'");
    expect_config_error("qwen35", "{\"linear_key_head_dim\": null}", ELM_ERR_FORMAT,
                        "missing required key 'linear_key_head_dim'");
    expect_config_error("qwen35", "{\"linear_value_head_dim\": 32}", ELM_ERR_UNSUPPORTED,
                        "linear_key_head_dim 16 differs from linear_value_head_dim 32");
    expect_config_error("qwen35", "{\"attn_output_gate\": false}", ELM_ERR_UNSUPPORTED,
                        "attn_output_gate false");
    expect_config_error("qwen35", "{\"rope_parameters\": {\"rope_type\": \"yarn\"}}",
                        ELM_ERR_UNSUPPORTED, "rope_type 'yarn' is not supported");
    snprintf(dir, sizeof dir, "%s/qwen35-interval", tmpdir);
    if (hf_copy_with("qwen35", "{\"layer_types\": null, \"full_attention_interval\": 2}", dir)) {
        elm_model *m = load(dir);
        CHECK(m && m->hp.recurrent[0] && !m->hp.recurrent[1] && m->hp.recurrent[2] &&
                  !m->hp.recurrent[3] && m->layers[1].kind == ELM_LAYER_ATTENTION,
              "qwen35: full_attention_interval");
        elm_model_free(m);
    }
    tmp_dir_remove(strdup(dir));
    /* Qwen3-MoE's: its expert sizes required, top-k at most the experts, every layer sparse,
     * the chosen experts' weights renormalised */
    expect_config_error("qwen3moe", "{\"num_experts\": null}", ELM_ERR_FORMAT,
                        "missing required key 'num_experts'");
    expect_config_error("qwen3moe", "{\"moe_intermediate_size\": null}", ELM_ERR_FORMAT,
                        "missing required key 'moe_intermediate_size'");
    expect_config_error("qwen3moe", "{\"num_experts_per_tok\": 9}", ELM_ERR_FORMAT,
                        "num_experts_per_tok 9 is more than num_experts 8");
    expect_config_error("qwen3moe", "{\"decoder_sparse_step\": 2}", ELM_ERR_UNSUPPORTED,
                        "dense layers (decoder_sparse_step 2, mlp_only_layers)");
    expect_config_error("qwen3moe", "{\"mlp_only_layers\": [1]}", ELM_ERR_UNSUPPORTED,
                        "every layer must be sparse");
    expect_config_error("qwen3moe", "{\"norm_topk_prob\": false}", ELM_ERR_UNSUPPORTED,
                        "norm_topk_prob false");
    /* LFM2-MoE's: its dense layers counted, its expert bias, weights unscaled */
    expect_config_error("lfm2moe", "{\"num_dense_layers\": null}", ELM_ERR_FORMAT,
                        "missing required key 'num_dense_layers'");
    expect_config_error("lfm2moe", "{\"num_dense_layers\": 4}", ELM_ERR_FORMAT,
                        "num_dense_layers 4 is more than num_hidden_layers 3");
    expect_config_error("lfm2moe", "{\"use_expert_bias\": false}", ELM_ERR_UNSUPPORTED,
                        "use_expert_bias false");
    expect_config_error("lfm2moe", "{\"routed_scaling_factor\": 2.5}", ELM_ERR_UNSUPPORTED,
                        "routed_scaling_factor 2.5");
    /* gpt-oss: llama.cpp's clamp and its fixed order of windowed and global layers */
    expect_config_error("gpt-oss", "{\"swiglu_limit\": 10}", ELM_ERR_UNSUPPORTED,
                        "swiglu_limit 10 is not supported");
    expect_config_error("gpt-oss",
                        "{\"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
                        ELM_ERR_UNSUPPORTED, "layer_types must make every 2th layer");
    expect_config_error("lfm2moe", "{\"norm_topk_prob\": false}", ELM_ERR_UNSUPPORTED,
                        "norm_topk_prob false");
    expect_config_error("llama", "{\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 4}}",
                        ELM_ERR_UNSUPPORTED, "rope_scaling type 'dynamic' is not supported");
    /* YaRN needs the context it extends; llama.cpp reads no attention factor for it */
    expect_config_error("llama", "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}",
                        ELM_ERR_FORMAT, "missing required key 'original_max_position_embeddings'");
    expect_config_error("llama",
                        "{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, "
                        "\"original_max_position_embeddings\": 512, \"attention_factor\": 2}}",
                        ELM_ERR_UNSUPPORTED, "'attention_factor' is not supported");
    /* LongRoPE: its factor lists, one per rotated pair (8 of phi3's heads of 16), and the
     * original context are required */
    expect_config_error("phi3", "{\"rope_scaling\": {\"type\": \"longrope\", \"factor\": 4}}",
                        ELM_ERR_FORMAT, "rope_scaling longrope needs 'long_factor'");
    expect_config_error("phi3", "{\"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": "
                        "[1, 2, 3, 4, 5, 6, 7, 8], \"short_factor\": [1, 1, 1, 1, 1, 1, 1]}}",
                        ELM_ERR_FORMAT, "long_factor has 8 values, short_factor 7");
    expect_config_error("phi3", "{\"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": "
                        "[1, 2, 3, 4, 5, 6], \"short_factor\": [1, 1, 1, 1, 1, 1]}}",
                        ELM_ERR_FORMAT, "have 6 values, want 8 (one per rotated pair)");
    expect_config_error("phi3", "{\"original_max_position_embeddings\": null, \"rope_scaling\": "
                        "{\"rope_type\": \"longrope\", \"long_factor\": [1, 2, 3, 4, 5, 6, 7, 8], "
                        "\"short_factor\": [1, 1, 1, 1, 1, 1, 1, 1]}}",
                        ELM_ERR_FORMAT, "longrope needs 'original_max_position_embeddings'");
    expect_config_error("phi3", "{\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4}}",
                        ELM_ERR_UNSUPPORTED, "rope_scaling type 'dynamic' is not supported");
    expect_config_error("gemma", "{\"hidden_activation\": \"relu\"}", ELM_ERR_UNSUPPORTED,
                        "activation 'relu'");
    expect_config_error("qwen2", "{\"use_sliding_window\": true}", ELM_ERR_UNSUPPORTED,
                        "use_sliding_window");
    char runs[320];
    snprintf(runs, sizeof runs, "unsupported architecture 'mamba' (edgelm runs %s)",
             elm_arch_hf_names());
    expect_config_error("llama", "{\"model_type\": \"mamba\"}", ELM_ERR_UNSUPPORTED, runs);
    expect_config_error("smollm3", "{\"no_rope_layers\": null}", ELM_ERR_FORMAT,
                        "key 'no_rope_layers' missing");
    expect_config_error("smollm3", "{\"no_rope_layers\": [1, 1, 0, 1]}", ELM_ERR_UNSUPPORTED,
                        "no_rope_layers must leave out RoPE on every 4th layer");

    /* a Qwen2 GGUF without its biases */
    elm_synth_tiny o = {.arch = "qwen2", .vocab_path = fixture("vocab/ggml-vocab-llama-spm.gguf")};
    elm_model *m = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK) {
        elm_tensor *b = elm_model_find(m, "blk.0.attn_k.bias");
        snprintf(b->name, sizeof b->name, "blk.0.attn_k.bias_");
        const char *path = tmp_path(tmpdir, "nobias.gguf");
        CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK, "write: %s", err.msg);
        elm_model *bad = NULL;
        elm_status st = elm_model_load(path, NULL, &bad, &err);
        CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, "missing tensor 'blk.0.attn_k.bias'"),
              "qwen2 without bias: %d %s", st, err.msg);
        elm_model_free(bad);
        /* the same file relabelled as an architecture edgelm does not run */
        const char *other = tmp_path(tmpdir, "mamba.gguf");
        size_t len;
        unsigned char *data = file_copy(path, other, SIZE_MAX, 0) ? file_read(other, &len) : NULL;
        unsigned char *arch = data ? memmem(data, len, "general.architecture", 20) : NULL;
        if (arch && !memcmp(arch + 20 + 12, "qwen2", 5)) memcpy(arch + 20 + 12, "mamba", 5);
        CHECK(arch && file_write(other, data, len), "relabel %s", other);
        st = elm_model_load(other, NULL, &bad, &err);
        CHECK(st == ELM_ERR_UNSUPPORTED && strstr(err.msg, "unsupported architecture 'mamba'"),
              "mamba: %d %s", st, err.msg);
        elm_model_free(bad);
        free(data);
        unlink(path);
        unlink(other);
    }
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    tmpdir = tmp_dir_new();
    CHECK(tmpdir != NULL, "mkdtemp");
    test_kernels();
    test_table();
    if (tmpdir) {
        test_family("llama", "llama-spm");
        test_family("qwen2", "llama-spm");
        test_family("qwen3", "qwen2");
        test_family("phi3", "phi-3");
        test_family("gemma", "llama-spm");
        test_family("gemma4", "llama-spm");
        test_family("gemma-embedding", "llama-spm");
        test_family("smollm3", "llama-spm");
        test_family("lfm2", "llama-bpe");
        test_family("granitehybrid", "llama-bpe");
        test_family("qwen35", "qwen35");
        test_family("lfm2moe", "llama-bpe");
        test_family("gpt-oss", "llama-bpe");
        test_yarn();
        test_tokenizer_json("llama-spm");
        test_tokenizer_json("phi-3");
        test_tokenizer_json("qwen2");
        test_refusals();
        test_longrope();
        test_gemma4_refusals();
        test_mistral();
    }
    /* the HF folders hold files: remove them before the folder itself */
    const char *archs[] = {"llama", "qwen2", "qwen3", "phi3",   "gemma",         "gemma4",
                           "gemma-embedding", "smollm3", "lfm2", "granitehybrid", "qwen35",
                           "gpt-oss"};
    for (int i = 0; tmpdir && i < (int)(sizeof archs / sizeof archs[0]); i++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/hf-%s", tmpdir, archs[i]);
        tmp_dir_remove(strdup(dir));
    }
    tmp_dir_remove(tmpdir);
    return check_done();
}
