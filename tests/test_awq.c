/* AWQ (quant.h, awq.c, layerwise.c) on the stories260K fixture, calibrated on text/calib.txt and
 * scored against the F32 model on text/valid.txt (n_ctx 256, llama.cpp's chunking):
 *  - acceptance: at --pure q4_0 mean KLD below round-to-nearest's and no worse than the float64
 *    implementation's figure plus the margin of tests/data/quant_kld.json; at q8_0 (AWQ and RTN)
 *    mean KLD <= llama.cpp's q8_0 figure (golden/quant_reference.json) and perplexity within 0.1%
 *    of F32;
 *  - the scales are folded into the RMSNorm weights (the file's norms differ from the input's)
 *    while the model's function is kept (the q8_0 figures);
 *  - robustness: one 6-token calibration line, an all-zero block, an input channel that is
 *    always 0 (finite results everywhere, the zero block stays zero); determinism.
 * Sanitizer builds shrink calibration and evaluation (quant_eval.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant_pure.h"
#include "quant_eval.h"

static char *dir;

static elm_model *load(const char *path) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load %s: %s", path, err.msg);
        return NULL;
    }
    return m;
}

static elm_quant_params awq(elm_type type, const elm_calib_set *cs) {
    return (elm_quant_params){.policy = {.type = type, .pure = true}, .method = ELM_QUANT_AWQ,
                              .calib = cs, .n_threads = 2};
}

static bool quantize(const elm_model *m, const elm_quant_params *p, const char *path) {
    elm_error err;
    elm_status st = elm_quantize(m, p, path, NULL, NULL, &err);
    CHECK(st == ELM_OK, "quantize %s: %s", path, err.msg);
    return st == ELM_OK;
}

static void test_acceptance(const elm_model *m, const qe_base *b, const elm_calib_set *cs) {
    elm_kld_stats rtn, k;
    elm_ppl_result ppl;
    const char *path = tmp_path(dir, "q.gguf");
    if (quantize_pure(m, ELM_TYPE_Q4_0, path, NULL, NULL, NULL) != ELM_OK ||
        !qe_compare(b, path, &rtn, &ppl)) {
        CHECK(0, "rtn q4_0");
        return;
    }
    printf("rtn q4_0 --pure: KLD %.6f, top-1 %.2f%%, PPL %.4f (F32 %.4f)\n", rtn.kld_mean,
           rtn.top1_pct, ppl.ppl, b->ppl.ppl);
    elm_quant_params p = awq(ELM_TYPE_Q4_0, cs);
    if (quantize(m, &p, path) && qe_compare(b, path, &k, &ppl)) {
        printf("awq q4_0 --pure (%d calibration samples): KLD %.6f, top-1 %.2f%%, PPL %.4f\n",
               cs->n, k.kld_mean, k.top1_pct, ppl.ppl);
        CHECK(k.kld_mean < rtn.kld_mean, "awq q4_0: KLD %.6f not below RTN's %.6f", k.kld_mean,
              rtn.kld_mean);
        /* no regression from the float64 implementation (tests/data/quant_kld.json) */
        const double bound = QE_SMALL ? rtn.kld_mean : qe_kld_bound("awq q4_0");
        CHECK(k.kld_mean <= bound, "awq q4_0: KLD %.6f > %.6f", k.kld_mean, bound);
        /* the scales went into the norms */
        elm_model *q = load(path);
        int moved = 0;
        for (int l = 0; q && l < m->hp.n_layers; l++)
            moved += memcmp(q->layers[l].attn_norm->data, m->layers[l].attn_norm->data,
                            m->layers[l].attn_norm->nbytes) != 0;
        CHECK(moved == m->hp.n_layers, "scales folded into %d of %d attention norms", moved,
              m->hp.n_layers);
        elm_model_free(q);
    }
    for (int method = ELM_QUANT_RTN; method <= ELM_QUANT_AWQ; method += ELM_QUANT_AWQ) {
        p = awq(ELM_TYPE_Q8_0, cs);
        p.method = (elm_quant_method)method;
        if (!quantize(m, &p, path) || !qe_compare(b, path, &k, &ppl)) continue;
        printf("%s q8_0 --pure: KLD %.6f, top-1 %.2f%%, PPL %.4f\n", elm_quant_method_name(p.method),
               k.kld_mean, k.top1_pct, ppl.ppl);
        /* a few hundred positions (small builds) carry more noise than the 0.1% allow */
        const double limit = QE_SMALL ? rtn.kld_mean / 20
                                      : check_golden_number("stories260K/golden/quant_reference.json",
                                                     "files.q8_0-pure.kld_mean");
        CHECK(k.kld_mean <= limit, "%s q8_0: KLD %.6f > %.6f", elm_quant_method_name(p.method),
              k.kld_mean, limit);
        CHECK(fabs(ppl.ppl / b->ppl.ppl - 1) <= (QE_SMALL ? 0.01 : 0.001),
              "%s q8_0: PPL %.4f vs F32 %.4f", elm_quant_method_name(p.method), ppl.ppl, b->ppl.ppl);
    }
}

/* Every tensor of the file decodes to finite values; returns the model (caller frees) or NULL. */
static elm_model *load_finite(const char *path) {
    elm_model *q = load(path);
    bool ok = q != NULL;
    for (int32_t i = 0; q && i < q->n_tensors && ok; i++) {
        const elm_tensor *t = &q->tensors[i];
        const int64_t n = t->ne[0] * t->ne[1];
        float *v = malloc(sizeof(float) * (size_t)n);
        elm_type_get(t->type)->to_float(t->data, v, n);
        for (int64_t k = 0; k < n; k++) ok &= isfinite(v[k]) != 0;
        free(v);
    }
    CHECK(ok, "%s: not loadable or not finite", path);
    return q;
}

static void test_six_tokens(const elm_model *m) {
    const char *text = "Once upon a time, Lily";
    elm_calib_set cs;
    elm_error err;
    CHECK(elm_calib_from_texts(&m->vocab, &text, 1, 512, &cs, &err) == ELM_OK, "%s", err.msg);
    elm_quant_params p = awq(ELM_TYPE_Q4_0, &cs);
    const char *path = tmp_path(dir, "six.gguf");
    if (quantize(m, &p, path)) elm_model_free(load_finite(path));
    elm_calib_free(&cs);
}

static void test_zero_block_dead_channel_determinism(const elm_calib_set *cs) {
    elm_model *m = load(fixture("stories260K/stories260K-f32.gguf"));
    if (!m) return;
    memset(qe_writable(m, "blk.2.ffn_gate.weight") + 9 * 64 + 32, 0, 32 * sizeof(float));
    qe_writable(m, "blk.1.ffn_norm.weight")[3] = 0; /* gate/up input channel 3 always 0 */
    elm_quant_params p = awq(ELM_TYPE_Q4_0, cs);
    const char *a = tmp_path(dir, "a.gguf"), *b = tmp_path(dir, "b.gguf");
    if (quantize(m, &p, a)) {
        elm_model *q = load_finite(a);
        if (q) {
            float v[32];
            const elm_tensor *t = elm_model_find(q, "blk.2.ffn_gate.weight");
            elm_type_get(t->type)->to_float((const uint8_t *)t->data + (9 * 2 + 1) * 18, v, 32);
            int nonzero = 0;
            for (int j = 0; j < 32; j++) nonzero += v[j] != 0;
            CHECK(nonzero == 0, "the all-zero block decodes with %d non-zero weights", nonzero);
            elm_model_free(q);
        }
        size_t na = 0, nb = 0;
        unsigned char *fa = file_read(a, &na), *fb = quantize(m, &p, b) ? file_read(b, &nb) : NULL;
        CHECK(fa && fb && na == nb && !memcmp(fa, fb, na), "two AWQ runs wrote different files");
        free(fa);
        free(fb);
    }
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    dir = tmp_dir_new();
    elm_model *m = load(fixture("stories260K/stories260K-f32.gguf"));
    if (!m) return check_done();
    elm_calib_set cs, small;
    elm_error err;
    CHECK(elm_calib_load(&m->vocab, fixture("stories260K/text/calib.txt"), 48, 8, &small, &err) ==
              ELM_OK, "%s", err.msg);
    test_six_tokens(m);
    test_zero_block_dead_channel_determinism(&small);
    qe_base b;
    if (qe_calib(m, &cs) && qe_base_init(&b, m)) {
        test_acceptance(m, &b, &cs);
        qe_base_free(&b);
    }
    elm_calib_free(&cs);
    elm_calib_free(&small);
    elm_model_free(m);
    tmp_dir_remove(dir);
    return check_done();
}
