/* elm_forward_seqs (context.h), the pass that mixes sequences, on the stories260K fixture:
 *  - three sequences of different lengths in one context, each in its own region of the cache,
 *    fed as interleaved chunks (a prefill chunk of one with decode tokens of the others, as the
 *    server's scheduler does) give for every token the logits elm_forward gives for that sequence
 *    alone in its own context (within 1e-4: float products over a different number of tokens may
 *    sum in another order), with the f32 cache and with a q8_0 cache;
 *  - bad arguments (a row past the cache, an out index past n, a bad token id) give ELM_ERR_ARG. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/context.h"

enum { N_SEQ = 3, LEN = 20, REGION = 32 };

static elm_context *context(const elm_model *m, int32_t n_ctx, elm_type kv) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 2, .type_k = kv, .type_v = kv};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static void interleaved(const elm_model *m, int32_t ids[N_SEQ][LEN], elm_type kv) {
    const size_t nv = (size_t)m->hp.n_vocab;
    /* the reference: each sequence alone, all its logits */
    float *ref = malloc(sizeof(float) * N_SEQ * LEN * nv), *got = malloc(sizeof(float) * 8 * nv);
    elm_context *c = context(m, N_SEQ * REGION, kv);
    elm_error err;
    if (!ref || !got || !c) goto done;
    for (int s = 0; s < N_SEQ; s++) {
        elm_context *one = context(m, REGION, kv);
        if (!one) goto done;
        CHECK(elm_forward(one, ids[s], LEN, ref + (size_t)s * LEN * nv, true, &err) == ELM_OK,
              "forward: %s", err.msg);
        elm_context_free(one);
    }
    /* each step: sequence `step % N_SEQ` gets a chunk of up to 5 tokens, the others one each */
    int32_t done_n[N_SEQ] = {0};
    double worst = 0;
    for (int step = 0; step < 40; step++) {
        int32_t tok[8], pos[8], row0[8], out[8], seq_of[8], n = 0;
        for (int s = 0; s < N_SEQ; s++) {
            const int want = s == step % N_SEQ ? 5 : 1;
            for (int k = 0; k < want && done_n[s] < LEN; k++, n++) {
                tok[n] = ids[s][done_n[s]];
                pos[n] = done_n[s]++;
                row0[n] = s * REGION;
                out[n] = n;
                seq_of[n] = s;
            }
        }
        if (n == 0) break;
        CHECK(elm_forward_seqs(c, tok, pos, row0, n, out, n, got, &err) == ELM_OK, "seqs: %s",
              err.msg);
        for (int t = 0; t < n; t++) {
            const float *r = ref + ((size_t)seq_of[t] * LEN + (size_t)pos[t]) * nv;
            for (size_t i = 0; i < nv; i++) worst = fmax(worst, fabs((double)r[i] - got[t * nv + i]));
        }
    }
    for (int s = 0; s < N_SEQ; s++) CHECK(done_n[s] == LEN, "sequence %d fed %d tokens", s, done_n[s]);
    CHECK(worst < 1e-4, "%s cache: logits differ from one sequence alone by %g",
          elm_type_get(kv)->name, worst);
    printf("%s cache: largest logit difference %g\n", elm_type_get(kv)->name, worst);
done:
    elm_context_free(c);
    free(ref);
    free(got);
}

static void bad_arguments(const elm_model *m) {
    elm_context *c = context(m, 16, ELM_TYPE_F32);
    if (!c) return;
    elm_error err;
    float *logits = malloc(sizeof(float) * (size_t)m->hp.n_vocab);
    const int32_t tok[] = {1, 2}, pos[] = {0, 1}, row_bad[] = {0, 15}, row[] = {0, 0};
    const int32_t out_bad[] = {2}, bad_tok[] = {1, m->hp.n_vocab};
    CHECK(elm_forward_seqs(c, tok, pos, row_bad, 2, NULL, 0, NULL, &err) == ELM_ERR_ARG,
          "row past the cache accepted");
    CHECK(elm_forward_seqs(c, tok, pos, row, 2, out_bad, 1, logits, &err) == ELM_ERR_ARG,
          "out index past n accepted");
    CHECK(elm_forward_seqs(c, bad_tok, pos, row, 2, NULL, 0, NULL, &err) == ELM_ERR_ARG,
          "bad token id accepted");
    CHECK(elm_forward_seqs(c, tok, pos, row, 0, NULL, 0, NULL, &err) == ELM_ERR_ARG,
          "empty batch accepted");
    free(logits);
    elm_context_free(c);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load: %s", err.msg);
        return check_done();
    }
    int32_t ids[N_SEQ][LEN];
    for (int s = 0; s < N_SEQ; s++) {
        ids[s][0] = m->vocab.bos_id;
        for (int t = 1; t < LEN; t++) ids[s][t] = (t * 37 + 11 * s + 5) % m->hp.n_vocab;
    }
    interleaved(m, ids, ELM_TYPE_F32);
    interleaved(m, ids, ELM_TYPE_Q8_0);
    bad_arguments(m);
    elm_model_free(m);
    return check_done();
}
