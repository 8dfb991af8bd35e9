/* The KV cache beyond f32: codecs (32-element blocks are ggml's Q8_0/Q4_0 bytes, any block round
 * trips within its step), sizes, and accuracy on the fixture: a q8_0 cache (blocks of 8 along the
 * head dimension, f16 scale amax/127, keys quantized after RoPE) against the f32 cache on
 * text/valid.txt at n_ctx 256, the way llama-perplexity scores (mean KLD <= 0.0025, top-1 >=
 * 97.5%); f16 and q4_0 reported. Context shift: shifted keys equal a fresh context's (also for
 * a tiny Phi-3 with LongRoPE, partial rotate-half RoPE and an attention factor: a shift turns the
 * keys without scaling them again), generation runs through shifts, truncation rolls back
 * exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/fileio.h"
#include "edgelm/eval.h"
#include "edgelm/generate.h"
#include "model/context_state.h"
#include "model/kv_quant.h"
#include "shapes/synth_tiny.h"

#define F32 "stories260K/stories260K-f32.gguf"

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture(rel), NULL, &m, &err) == ELM_OK, "%s: %s", rel, err.msg);
    return m;
}

static elm_context *context(const elm_model *m, int32_t n_ctx, elm_type k, elm_type v) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 1, .type_k = k, .type_v = v};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static void codecs(void) {
    enum { N = 256 };
    float x[N], y[N];
    unsigned char a[N * 4], b[N * 4];
    uint64_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 4 - 2) * (i % 7 + 1);
    }
    const elm_type types[] = {ELM_TYPE_Q8_0, ELM_TYPE_Q4_0};
    for (int k = 0; k < 2; k++) {
        const elm_type t = types[k];
        /* 32-element blocks are exactly the types table's (ggml's) encoding */
        elm_kv_encode(t, 32, x, a, N);
        elm_type_get(t)->from_float(x, b, N);
        CHECK(!memcmp(a, b, elm_kv_bytes(t, 32, N)), "%s: 32-blocks differ from ggml's",
              elm_type_get(t)->name);
        /* blocks of 8: every value within half a step (q8) / one step (q4) of its block */
        elm_kv_encode(t, 8, x, a, N);
        elm_kv_decode(t, 8, a, y, N);
        bool ok = true;
        for (int blk = 0; blk < N / 8; blk++) {
            float amax = 0;
            for (int j = 0; j < 8; j++) amax = fmaxf(amax, fabsf(x[blk * 8 + j]));
            const float step = t == ELM_TYPE_Q8_0 ? amax / 127 : amax / 8;
            for (int j = 0; j < 8; j++)
                ok &= fabsf(x[blk * 8 + j] - y[blk * 8 + j]) <= step * 0.51f + 1e-3f * amax;
        }
        CHECK(ok, "%s: block-8 round trip off by more than a step", elm_type_get(t)->name);
    }
    CHECK(elm_kv_block(ELM_TYPE_Q8_0, 8) == 8 && elm_kv_block(ELM_TYPE_Q8_0, 128) == 32 &&
              elm_kv_block(ELM_TYPE_Q4_0, 64) == 32 && elm_kv_block(ELM_TYPE_F16, 80) == 1,
          "block sizes");
    CHECK(elm_kv_block(ELM_TYPE_Q8_0, 80) == 0 && elm_kv_block(ELM_TYPE_Q4_1, 64) == 0 &&
              elm_kv_block(ELM_TYPE_Q4_0, 1) == 0,
          "unsupported head sizes / types accepted");
}

static void sizes(const elm_model *m) {
    /* 5 layers, 4 KV heads of 8: a position is 32 keys and 32 values */
    const elm_hparams *hp = &m->hp;
    CHECK(elm_kv_cache_bytes(hp, 256, ELM_TYPE_F32, ELM_TYPE_F32) == 5u * 256 * 2 * 128,
          "f32 bytes");
    CHECK(elm_kv_cache_bytes(hp, 256, ELM_TYPE_F16, ELM_TYPE_F16) == 5u * 256 * 2 * 64, "f16");
    CHECK(elm_kv_cache_bytes(hp, 256, ELM_TYPE_Q8_0, ELM_TYPE_Q8_0) == 5u * 256 * 2 * 40, "q8_0");
    CHECK(elm_kv_cache_bytes(hp, 256, ELM_TYPE_Q4_0, ELM_TYPE_F16) == 5u * 256 * (24 + 64), "mix");
    elm_context *c = context(m, 256, ELM_TYPE_Q8_0, ELM_TYPE_Q4_0);
    if (c) {
        CHECK(elm_context_kv_bytes(c) == elm_kv_cache_bytes(hp, 256, ELM_TYPE_Q8_0, ELM_TYPE_Q4_0),
              "context bytes");
        CHECK(elm_context_type_k(c) == ELM_TYPE_Q8_0 && elm_context_type_v(c) == ELM_TYPE_Q4_0,
              "types");
    }
    elm_context_free(c);
    elm_context *bad = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = 16, .n_threads = 1, .type_k = ELM_TYPE_Q5_1};
    CHECK(elm_context_new(m, &cp, &bad, &err) == ELM_ERR_UNSUPPORTED && !bad &&
              strstr(err.msg, "q5_1"),
          "q5_1 cache accepted: %s", err.msg);
}

/* Chunks of valid.txt as llama-perplexity evaluates them (BOS first, second half scored), the f32
 * cache as reference, the given cache types compared with it. */
static void accuracy(const elm_model *m) {
    enum { N_CTX = 256 };
    /* q8_0 over the whole text (the acceptance figure); f16 and q4_0, only reported, over the
     * first chunks. Instrumented builds take a slice (the thresholds hold on it too). */
#if defined(__SANITIZE_ADDRESS__)
    const int max_chunks = 24, report_chunks = 8;
#else
    const int max_chunks = 1 << 30, report_chunks = 32;
#endif
    size_t len;
    char *text;
    elm_error err;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    const char *path = fixture("stories260K/text/valid.txt");
    CHECK(elm_read_file(path, 1 << 24, &text, &len, &err) == ELM_OK &&
              elm_ppl_tokenize(m, text, len, &ids, &n_ids, &err) == ELM_OK,
          "valid.txt: %s", err.msg);
    free(text);
    if (!ids) return;
    int chunks = (int)(n_ids / N_CTX);
    if (chunks > max_chunks) chunks = max_chunks;
    const int V = m->hp.n_vocab, first = N_CTX / 2, n_scored = N_CTX - first - 1;
    const elm_type types[] = {ELM_TYPE_Q8_0, ELM_TYPE_F16, ELM_TYPE_Q4_0};
    elm_context *ref = context(m, N_CTX, ELM_TYPE_F32, ELM_TYPE_F32);
    elm_context *q[3];
    elm_kld_acc *acc[3];
    for (int k = 0; k < 3; k++) {
        q[k] = context(m, N_CTX, types[k], types[k]);
        acc[k] = elm_kld_acc_new((int64_t)chunks * n_scored);
    }
    float *lr = malloc(sizeof(float) * N_CTX * V), *lq = malloc(sizeof(float) * N_CTX * V);
    float *pr = malloc(sizeof(float) * V), *pq = malloc(sizeof(float) * V);
    int32_t chunk_ids[N_CTX];
    for (int ch = 0; ch < chunks && ref && lr && lq; ch++) {
        memcpy(chunk_ids, ids + (size_t)ch * N_CTX, sizeof chunk_ids);
        chunk_ids[0] = m->vocab.bos_id;
        elm_context_reset(ref);
        elm_forward(ref, chunk_ids, N_CTX, lr, true, &err);
        for (int k = 0; k < 3; k++) {
            if (!q[k] || (k > 0 && ch >= report_chunks)) continue;
            elm_context_reset(q[k]);
            elm_forward(q[k], chunk_ids, N_CTX, lq, true, &err);
            for (int j = first; j < N_CTX - 1; j++) {
                elm_log_softmax_f32(lr + (size_t)j * V, V, pr);
                elm_log_softmax_f32(lq + (size_t)j * V, V, pq);
                elm_kld_acc_add(acc[k], pr, pq, V, chunk_ids[j + 1]);
            }
        }
    }
    for (int k = 0; k < 3; k++) {
        elm_kld_stats s = {0};
        if (acc[k]) elm_kld_acc_finish(acc[k], &s);
        const int n_chunks = k > 0 && chunks > report_chunks ? report_chunks : chunks;
        printf("KV cache %-5s vs f32 over %d chunks: mean KLD %.6f, top-1 %.2f%%, %zu bytes\n",
               elm_type_get(types[k])->name, n_chunks, s.kld_mean, s.top1_pct,
               elm_kv_cache_bytes(&m->hp, N_CTX, types[k], types[k]));
        CHECK(s.n == (int64_t)n_chunks * n_scored, "%lld positions scored", (long long)s.n);
        if (types[k] == ELM_TYPE_Q8_0)
            CHECK(s.kld_mean <= 0.0025 && s.top1_pct >= 97.5,
                  "q8_0 cache: mean KLD %.6f (<= 0.0025), top-1 %.2f%% (>= 97.5)", s.kld_mean,
                  s.top1_pct);
        if (types[k] == ELM_TYPE_F16)
            CHECK(s.kld_mean < 1e-4 && s.top1_pct > 99.5, "f16 cache: KLD %.6f top-1 %.2f",
                  s.kld_mean, s.top1_pct);
        elm_kld_acc_free(acc[k]);
        elm_context_free(q[k]);
    }
    elm_context_free(ref);
    free(lr);
    free(lq);
    free(pr);
    free(pq);
    free(ids);
}

/* Position p of layer l's keys (or values) decoded to floats [kv_dim]. */
static void cache_row(const elm_context *c, bool keys, int l, int p, float *out) {
    const elm_kv_layer *kl = &c->kv[l];
    const unsigned char *base = keys ? elm_kv_layer_k(c, l) : elm_kv_layer_v(c, l);
    elm_kv_decode(keys ? c->type_k : c->type_v, keys ? kl->k_block : kl->v_block,
                  base + (size_t)p * (keys ? kl->k_row : kl->v_row), out, kl->dim);
}

/* Drops positions [1, 21) of 40. A shift only moves and re-rotates what is cached (the kept
 * tokens' deeper layers still saw the dropped ones, as in llama.cpp), so: layer 0, which depends
 * only on each token and its position, must equal a fresh context fed token 0 and tokens
 * 21..39; every layer's values must have moved unchanged, and its keys by a rotation (which keeps
 * the length of each rotated pair). */
static void shift_moves_and_rotates(const elm_model *m, elm_type kv, float tol) {
    const elm_hparams *hp = &m->hp;
    int32_t toks[40];
    for (int i = 0; i < 40; i++) toks[i] = i == 0 ? 1 : 260 + (i * 37) % 200;
    elm_context *a = context(m, 64, kv, kv), *b = context(m, 64, kv, kv);
    if (!a || !b) goto out;
    const int kd = a->kv_dim, L = hp->n_layers;
    float *before = malloc(sizeof(float) * (size_t)L * 40 * 2 * kd), x[256], y[256];
    elm_error err;
    elm_forward(a, toks, 40, NULL, false, &err);
    for (int l = 0; l < L; l++)
        for (int p = 0; p < 40; p++)
            for (int kk = 0; kk < 2; kk++)
                cache_row(a, kk == 0, l, p, before + (((size_t)l * 40 + p) * 2 + kk) * kd);
    CHECK(elm_context_shift(a, 1, 20, &err) == ELM_OK, "shift: %s", err.msg);
    CHECK(elm_context_n_past(a) == 20 && elm_context_tokens(a)[1] == toks[21], "shifted ids");
    int32_t kept[20];
    kept[0] = toks[0];
    memcpy(kept + 1, toks + 21, sizeof(int32_t) * 19);
    elm_forward(b, kept, 20, NULL, false, &err);
    float d0 = 0, dv = 0, dnorm = 0;
    for (int p = 0; p < 20; p++) {
        for (int kk = 0; kk < 2; kk++) {
            cache_row(a, kk == 0, 0, p, x);
            cache_row(b, kk == 0, 0, p, y);
            for (int i = 0; i < kd; i++) d0 = fmaxf(d0, fabsf(x[i] - y[i]));
        }
        const int src = p == 0 ? 0 : p + 20;
        for (int l = 0; l < L; l++) {
            const float *old = before + ((size_t)l * 40 + src) * 2 * kd;
            cache_row(a, false, l, p, x);
            for (int i = 0; i < kd; i++) dv = fmaxf(dv, fabsf(x[i] - old[kd + i]));
            cache_row(a, true, l, p, x);
            /* each head's pairs (interleaved, or rotate-half) keep their length; the dimensions
             * past rope_dim do not turn */
            const int hd = hp->head_dim, half = hp->rope_dim / 2;
            const bool neox = hp->rope_style == ELM_ROPE_NEOX;
            for (int h = 0; h < kd / hd; h++)
                for (int i = 0; i < hd; i++) {
                    const int j = h * hd + i;
                    if (i >= 2 * half)
                        dnorm = fmaxf(dnorm, fabsf(x[j] - old[j]));
                    else if (neox ? i < half : i % 2 == 0) {
                        const int k2 = j + (neox ? half : 1);
                        dnorm = fmaxf(dnorm, fabsf(hypotf(x[j], x[k2]) - hypotf(old[j], old[k2])));
                    }
                }
        }
    }
    CHECK(d0 < tol, "%s cache: layer 0 after the shift differs from a fresh context by %g",
          elm_type_get(kv)->name, d0);
    CHECK(dv < tol, "%s cache: values changed by %g in the move", elm_type_get(kv)->name, dv);
    CHECK(dnorm < tol * 4, "%s cache: key pair lengths changed by %g", elm_type_get(kv)->name,
          dnorm);
    CHECK(elm_context_shift(a, 5, 17, &err) == ELM_ERR_ARG, "shift past the end accepted");
    free(before);
out:
    elm_context_free(a);
    elm_context_free(b);
}

static void generation_through_shifts(const elm_model *m) {
    elm_context *c = context(m, 64, ELM_TYPE_F32, ELM_TYPE_F32);
    if (!c) return;
    const int32_t prompt[] = {1, 403, 407, 261, 378};
    elm_gen_params gp = {.n_predict = 300, .ignore_eos = true, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 0;
    int32_t out[300], n_out = 0;
    elm_gen_stats st;
    elm_error err;
    CHECK(elm_generate(c, prompt, 5, &gp, NULL, NULL, out, 300, &n_out, &st, &err) == ELM_OK &&
              n_out == 300,
          "300 tokens in a 64-token context: %d (%s)", n_out, err.msg);
    CHECK(elm_context_tokens(c)[0] == 1, "BOS kept through the shifts");
    gp.n_keep = 5; /* the whole prompt */
    elm_context_reset(c);
    CHECK(elm_generate(c, prompt, 5, &gp, NULL, NULL, out, 300, &n_out, &st, &err) == ELM_OK &&
              n_out == 300 && !memcmp(elm_context_tokens(c), prompt, sizeof prompt),
          "n_keep 5: %d tokens, prompt kept", n_out);
    gp.no_context_shift = true;
    elm_context_reset(c);
    CHECK(elm_generate(c, prompt, 5, &gp, NULL, NULL, out, 300, &n_out, &st, &err) == ELM_OK &&
              n_out == 64 - 5 + 1,
          "no shift: stops at the full context after %d tokens", n_out);
    gp.no_context_shift = false;
    gp.n_keep = 64; /* keeping everything leaves no room */
    elm_context_reset(c);
    CHECK(elm_generate(c, prompt, 5, &gp, NULL, NULL, out, 300, &n_out, &st, &err) == ELM_ERR_ARG &&
              strstr(err.msg, "context full"),
          "keep 64 of 64: %s", err.msg);
    elm_context_free(c);
}

static void truncate_rolls_back(const elm_model *m) {
    const int V = m->hp.n_vocab;
    elm_context *c = context(m, 32, ELM_TYPE_Q8_0, ELM_TYPE_Q8_0);
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V);
    const int32_t t[] = {1, 403, 407, 261, 378, 432};
    elm_error err;
    if (c && a && b) {
        elm_forward(c, t, 4, NULL, false, &err);
        elm_forward(c, t + 4, 1, a, false, &err);
        elm_forward(c, t + 5, 1, NULL, false, &err);
        CHECK(elm_context_truncate(c, 4, &err) == ELM_OK && elm_context_n_past(c) == 4, "truncate");
        elm_forward(c, t + 4, 1, b, false, &err);
        CHECK(!memcmp(a, b, sizeof(float) * V), "logits after a rollback differ");
    }
    free(a);
    free(b);
    elm_context_free(c);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    codecs();
    elm_model *m = load(F32);
    if (m) {
        sizes(m);
        accuracy(m);
        shift_moves_and_rotates(m, ELM_TYPE_F32, 1e-4f);
        shift_moves_and_rotates(m, ELM_TYPE_Q8_0, 0.3f); /* a key quantized twice: ~2 steps */
        generation_through_shifts(m);
        truncate_rolls_back(m);
    }
    elm_model_free(m);
    const elm_synth_tiny o = {.arch = "phi3", .vocab_path = fixture("vocab/ggml-vocab-phi-3.gguf"),
                              .seed = 3, .std = 0.1f, .longrope = true};
    elm_error err;
    m = NULL;
    CHECK(elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK, "phi3 longrope: %s", err.msg);
    if (m) shift_moves_and_rotates(m, ELM_TYPE_F32, 1e-4f);
    elm_model_free(m);
    return check_done();
}
