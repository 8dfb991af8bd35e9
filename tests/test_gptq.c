/* GPTQ (quant.h, gptq.c, layerwise.c) on the stories260K fixture, calibrated on text/calib.txt and
 * scored against the F32 model on text/valid.txt (n_ctx 256, llama.cpp's chunking):
 *  - acceptance: at --pure q4_0 mean KLD <= 0.8 x llama.cpp's imatrix q4_0, at q4_1 <= 0.85 x
 *    its imatrix q4_1, at q8_0 <= llama.cpp's q8_0 (golden/quant_reference.json) with perplexity
 *    within 0.1% of F32; q4_0 and q4_1 no worse than the float64 implementation's figures plus the
 *    margin of tests/data/quant_kld.json; with act-order every layer's output error stays below
 *    RTN's;
 *  - no hidden state: the file's blocks, decoded by an independent q4_0 decoder written here from
 *    docs/formats.md and by the types table, are bit for bit the values GPTQ chose and the later
 *    layers' calibration ran on; same inputs give a byte-identical file;
 *  - robustness: one 6-token calibration line (damping raised, nothing non-finite), an all-zero
 *    block, an input channel that is always 0, NaN and infinite weights (error naming the tensor,
 *    no file left), no calibration (error).
 * Sanitizer builds shrink calibration and evaluation (quant_eval.h) and check the same relations
 * against round-to-nearest instead of the absolute figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "quant_pure.h"
#include "quant/layerwise.h"
#include "quant_eval.h"

static char *dir;

/* Counts warnings that contain `needle`. */
typedef struct qe_warns {
    const char *needle;
    int n, hits;
    char last[512], last_hit[512];
} qe_warns;

static void qe_on_warn(const char *msg, void *user) {
    qe_warns *w = user;
    w->n++;
    const bool hit = w->needle && strstr(msg, w->needle) != NULL;
    w->hits += hit;
    snprintf(w->last, sizeof w->last, "%s", msg);
    if (hit) snprintf(w->last_hit, sizeof w->last_hit, "%s", msg);
}

static elm_model *load_f32(void) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load: %s", err.msg);
        exit(check_done());
    }
    return m;
}

static elm_quant_params gptq(elm_type type, const elm_calib_set *cs) {
    return (elm_quant_params){.policy = {.type = type, .pure = true}, .method = ELM_QUANT_GPTQ,
                              .calib = cs, .n_threads = 2};
}

static bool quantize(const elm_model *m, const elm_quant_params *p, const char *path,
                     elm_quant_report *rep, qe_warns *w) {
    elm_quantize_callbacks cb = {.warn = qe_on_warn, .user = w};
    elm_error err;
    elm_quant_report local;
    elm_status st = elm_quantize(m, p, path, w ? &cb : NULL, rep ? rep : &local, &err);
    CHECK(st == ELM_OK, "quantize %s: %s", path, err.msg);
    if (!st && !rep) elm_quant_report_free(&local);
    return st == ELM_OK;
}

/* ---------------------------------------------------------------------------- acceptance */

static void test_acceptance(const elm_model *m, const qe_base *b, const elm_calib_set *cs) {
    elm_kld_stats rtn, k;
    elm_ppl_result ppl;
    const char *rtn_path = tmp_path(dir, "rtn-q4_0.gguf");
    CHECK(quantize_pure(m, ELM_TYPE_Q4_0, rtn_path, NULL, NULL, NULL) == ELM_OK, "rtn");
    if (!qe_compare(b, rtn_path, &rtn, &ppl)) return;
    printf("rtn  q4_0 --pure: KLD %.6f, top-1 %.2f%%, PPL %.4f (F32 %.4f)\n", rtn.kld_mean,
           rtn.top1_pct, ppl.ppl, b->ppl.ppl);
    const char *golden = "stories260K/golden/quant_reference.json";
    const struct { elm_type type; double limit; } cases[] = {
        {ELM_TYPE_Q4_0, 0.8 * check_golden_number(golden, "files.q4_0-pure-imat.kld_mean")},
        {ELM_TYPE_Q4_1, 0.85 * check_golden_number(golden, "files.q4_1-pure-imat.kld_mean")},
        {ELM_TYPE_Q8_0, check_golden_number(golden, "files.q8_0-pure.kld_mean")}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *name = elm_type_get(cases[c].type)->name;
        elm_quant_params p = gptq(cases[c].type, cs);
        const char *path = tmp_path(dir, "gptq.gguf");
        if (!quantize(m, &p, path, NULL, NULL) || !qe_compare(b, path, &k, &ppl)) continue;
        printf("gptq %s --pure (%d calibration samples): KLD %.6f, top-1 %.2f%%, PPL %.4f\n", name,
               cs->n, k.kld_mean, k.top1_pct, ppl.ppl);
        if (cases[c].type == ELM_TYPE_Q8_0) {
            /* a few hundred positions (small builds) carry more noise than the 0.1% allow */
            const double limit = QE_SMALL ? rtn.kld_mean / 20 : cases[c].limit;
            CHECK(k.kld_mean <= limit, "gptq q8_0: KLD %.6f > %.6f", k.kld_mean, limit);
            CHECK(fabs(ppl.ppl / b->ppl.ppl - 1) <= (QE_SMALL ? 0.01 : 0.001),
                  "gptq q8_0: PPL %.4f vs F32 %.4f", ppl.ppl, b->ppl.ppl);
        } else if (QE_SMALL) {
            CHECK(k.kld_mean < rtn.kld_mean, "gptq %s: KLD %.6f not below RTN q4_0's %.6f", name,
                  k.kld_mean, rtn.kld_mean);
        } else {
            CHECK(k.kld_mean <= cases[c].limit, "gptq %s: KLD %.6f > %.6f", name, k.kld_mean,
                  cases[c].limit);
            /* and no regression from the float64 implementation (tests/data/quant_kld.json) */
            char key[32];
            snprintf(key, sizeof key, "gptq %s", name);
            const double bound = qe_kld_bound(key);
            CHECK(k.kld_mean <= bound, "gptq %s: KLD %.6f > %.6f", name, k.kld_mean, bound);
        }
    }
}

/* With act-order every layer still ends below round-to-nearest's output error on its inputs. */
static void test_act_order(const elm_model *m, const elm_calib_set *cs) {
    elm_quant_params p = gptq(ELM_TYPE_Q4_0, cs);
    p.act_order = true;
    elm_quant_report rep;
    const char *path = tmp_path(dir, "act.gguf");
    if (!quantize(m, &p, path, &rep, NULL)) return;
    int layers = 0, worse = 0;
    for (int32_t i = 0; i < rep.n_tensors; i++)
        if (rep.tensors[i].err_before >= 0) {
            layers++;
            worse += !(rep.tensors[i].err_after < rep.tensors[i].err_before);
        }
    CHECK(layers == 31 && worse == 0, "act-order: %d of %d layers not below RTN's output error",
          worse, layers);
    elm_quant_report_free(&rep);
}

/* --------------------------------------------------------------------- no hidden state */

static float f16_value(const uint8_t *p) {
    const unsigned h = (unsigned)p[0] | (unsigned)p[1] << 8;
    const int e = (int)(h >> 10 & 0x1f), man = (int)(h & 0x3ff);
    const float mag = e == 0 ? ldexpf((float)man, -24) : ldexpf((float)(man | 0x400), e - 25);
    return h & 0x8000 ? -mag : mag;
}

/* docs/formats.md: Q4_0 = f16 d; u8 qs[16]; weight j = d * (q - 8), q the low nibble of qs[j] for
 * j < 16, the high nibble of qs[j - 16] otherwise. */
static void decode_q4_0(const uint8_t *b, int64_t n, float *out) {
    for (int64_t k = 0; k < n / 32; k++, b += 18)
        for (int j = 0; j < 32; j++) {
            const int q = j < 16 ? b[2 + j] & 0x0f : b[2 + j - 16] >> 4;
            out[k * 32 + j] = f16_value(b) * (float)(q - 8);
        }
}

static void test_no_hidden_state(const elm_model *m, const elm_calib_set *cs) {
    elm_quant_params p = gptq(ELM_TYPE_Q4_0, cs);
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    elm_error err;
    elm_qrun r;
    elm_status st = elm_quant_plan(m, &p.policy, plan, &err);
    if (!st) st = elm_quant_calibrated(m, &p, plan, NULL, true, &r, &err);
    CHECK(st == ELM_OK, "calibrated run: %s", err.msg);
    const char *a = tmp_path(dir, "a.gguf"), *bpath = tmp_path(dir, "b.gguf");
    elm_model *q = NULL;
    if (!st && quantize(m, &p, a, NULL, NULL) && elm_model_load(a, NULL, &q, &err) == ELM_OK) {
        int checked = 0, bad_decode = 0, bad_table = 0, bad_bytes = 0;
        for (int32_t i = 0; i < m->n_tensors; i++) {
            /* the file lists the tensors as they became final: found by name */
            const elm_tensor *t = elm_model_find(q, m->tensors[i].name), *w = &r.tensors[i];
            const int64_t n = t->ne[0] * t->ne[1];
            if (t->type != ELM_TYPE_Q4_0) continue;
            float *mine = malloc(sizeof(float) * (size_t)n), *table = malloc(sizeof(float) * (size_t)n);
            decode_q4_0(t->data, n, mine);
            elm_type_get(t->type)->to_float(t->data, table, n);
            bad_decode += memcmp(mine, w->data, sizeof(float) * (size_t)n) != 0;
            bad_table += memcmp(table, w->data, sizeof(float) * (size_t)n) != 0;
            bad_bytes += memcmp(t->data, r.bytes[i], t->nbytes) != 0;
            checked++;
            free(mine);
            free(table);
        }
        CHECK(checked == 32, "%d q4_0 tensors checked (token_embd, output, 30 linears; ffn_down "
                             "is f16)", checked);
        CHECK(bad_decode == 0 && bad_table == 0 && bad_bytes == 0,
              "%d tensors decode (independently) to other values than GPTQ used, %d through the "
              "types table, %d differ in bytes", bad_decode, bad_table, bad_bytes);
        elm_model_free(q);
        /* determinism */
        size_t na = 0, nb = 0;
        unsigned char *fa = file_read(a, &na), *fb = NULL;
        if (quantize(m, &p, bpath, NULL, NULL)) fb = file_read(bpath, &nb);
        CHECK(fa && fb && na == nb && !memcmp(fa, fb, na), "two runs wrote different files");
        free(fa);
        free(fb);
    } else if (!st) {
        CHECK(0, "reload %s: %s", a, err.msg);
    }
    elm_qrun_free(&r);
    free(plan);
}

/* -------------------------------------------------------------------------- robustness */

/* Every tensor of the file at path decodes to finite values. */
static bool all_finite(const char *path) {
    elm_model *q = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &q, &err) != ELM_OK) return false;
    bool ok = true;
    for (int32_t i = 0; i < q->n_tensors && ok; i++) {
        const elm_tensor *t = &q->tensors[i];
        const int64_t n = t->ne[0] * t->ne[1];
        float *v = malloc(sizeof(float) * (size_t)n);
        elm_type_get(t->type)->to_float(t->data, v, n);
        for (int64_t k = 0; k < n; k++) ok &= isfinite(v[k]) != 0;
        free(v);
    }
    elm_model_free(q);
    return ok;
}

static void test_six_tokens(const elm_model *m) {
    const char *text = "Once upon a time, Lily";
    elm_calib_set cs;
    elm_error err;
    CHECK(elm_calib_from_texts(&m->vocab, &text, 1, 512, &cs, &err) == ELM_OK, "%s", err.msg);
    CHECK(cs.n == 1 && cs.n_ids[0] == 7, "calibration of BOS + 6 tokens: %d samples, %d tokens",
          cs.n, cs.n ? cs.n_ids[0] : 0);
    elm_quant_params p = gptq(ELM_TYPE_Q4_0, &cs);
    elm_quant_report rep;
    qe_warns w = {.needle = "not positive definite"};
    const char *path = tmp_path(dir, "six.gguf");
    if (quantize(m, &p, path, &rep, &w)) {
        CHECK(rep.n_damp_raised == 31 && w.hits == 31,
              "6 tokens for 64..172 columns: damping raised for %d of 31 GPTQ layers (%d warnings: "
              "%s)", rep.n_damp_raised, w.hits, w.last);
        int bad = 0;
        for (int32_t i = 0; i < rep.n_tensors; i++)
            if (rep.tensors[i].err_before >= 0)
                bad += !isfinite(rep.tensors[i].err_after) || !(rep.tensors[i].damp > 0.01);
        CHECK(bad == 0, "%d layers with a non-finite error or damping not raised", bad);
        CHECK(all_finite(path), "non-finite values in the 6-token GPTQ file");
        elm_quant_report_free(&rep);
    }
    elm_calib_free(&cs);
}

static void test_zero_block_and_dead_channel(const elm_calib_set *cs) {
    elm_model *m = load_f32();
    float *q = qe_writable(m, "blk.2.attn_q.weight");
    memset(q + 5 * 64, 0, 32 * sizeof(float)); /* row 5, first block */
    float *norm = qe_writable(m, "blk.0.attn_norm.weight");
    norm[7] = 0; /* input channel 7 of blk.0's q/k/v is always 0 */
    /* and its weights are outliers: zeroed, they must not set block 0's scales */
    float *q0 = qe_writable(m, "blk.0.attn_q.weight");
    for (int r = 0; r < 64; r++) q0[r * 64 + 7] = 100;
    norm = qe_writable(m, "blk.1.attn_norm.weight");
    for (int j = 0; j < 40; j++) norm[j] = 0; /* blk.1's q/k/v: 40 of 64 inputs dead */
    qe_warns w = {.needle = "input channels never active in calibration"};
    elm_quant_params p = gptq(ELM_TYPE_Q4_0, cs);
    elm_quant_report rep;
    const char *path = tmp_path(dir, "zero.gguf");
    if (quantize(m, &p, path, &rep, &w)) {
        CHECK(w.hits == 3 && strstr(w.last_hit, "blk.1.attn_") && strstr(w.last_hit, "40 of 64"),
              "mostly dead blk.1 q/k/v: %d warnings (%s)", w.hits, w.last_hit);
        CHECK(rep.n_damp_raised == 0, "a dead channel raised the damping (%d layers)",
              rep.n_damp_raised);
        for (int32_t i = 0; i < rep.n_tensors; i++)
            if (!strcmp(rep.tensors[i].name, "blk.0.attn_q.weight"))
                CHECK(rep.tensors[i].dead_inputs == 1 &&
                          rep.tensors[i].err_after < rep.tensors[i].err_before,
                      "blk.0.attn_q with a dead channel: %lld dead inputs, error %g, RTN %g",
                      (long long)rep.tensors[i].dead_inputs, rep.tensors[i].err_after,
                      rep.tensors[i].err_before);
        elm_quant_report_free(&rep);
        CHECK(all_finite(path), "non-finite values with a zero block and a dead channel");
        elm_model *out = NULL;
        elm_error err;
        if (elm_model_load(path, NULL, &out, &err) == ELM_OK) {
            float v[32];
            const elm_tensor *t = elm_model_find(out, "blk.2.attn_q.weight");
            elm_type_get(t->type)->to_float((const uint8_t *)t->data + 5 * 2 * 18, v, 32);
            int nonzero = 0;
            for (int j = 0; j < 32; j++) nonzero += v[j] != 0;
            CHECK(nonzero == 0, "the all-zero block decodes with %d non-zero weights", nonzero);
            t = elm_model_find(out, "blk.0.attn_q.weight");
            int dead_nonzero = 0, live_nonzero = 0;
            for (int r = 0; r < 64; r++) {
                elm_type_get(t->type)->to_float((const uint8_t *)t->data + r * 2 * 18, v, 32);
                dead_nonzero += v[7] != 0;
                for (int j = 0; j < 32; j++) live_nonzero += j != 7 && v[j] != 0;
            }
            CHECK(dead_nonzero == 0 && live_nonzero > 64 * 31 * 3 / 4,
                  "dead outlier column: %d rows keep it, %d of %d live weights non-zero",
                  dead_nonzero, live_nonzero, 64 * 31);
            elm_model_free(out);
        }
    }
    elm_model_free(m);
}

static void test_bad_weights(const elm_calib_set *cs) {
    const struct { const char *tensor; size_t at; float v; const char *what; } cases[] = {
        {"blk.1.ffn_up.weight", 3 * 64 + 5, NAN, "NaN"},
        {"token_embd.weight", 100, INFINITY, "infinity"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int method = ELM_QUANT_RTN; method <= ELM_QUANT_AWQ; method++) {
            elm_model *m = load_f32();
            qe_writable(m, cases[c].tensor)[cases[c].at] = cases[c].v;
            elm_quant_params p = gptq(ELM_TYPE_Q4_0, cs);
            p.method = (elm_quant_method)method;
            const char *path = tmp_path(dir, "bad.gguf");
            elm_error err;
            elm_status st = elm_quantize(m, &p, path, NULL, NULL, &err);
            CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, cases[c].tensor) &&
                      strstr(err.msg, cases[c].what),
                  "%s %s in '%s': status %d, '%s'", elm_quant_method_name(p.method), cases[c].what,
                  cases[c].tensor, st, err.msg);
            DIR *d = opendir(dir);
            int left = 0;
            for (struct dirent *e; d && (e = readdir(d));) left += strstr(e->d_name, "bad.gguf") != NULL;
            if (d) closedir(d);
            CHECK(left == 0, "a failed run left %d files", left);
            elm_model_free(m);
        }
}

static void test_no_calibration(const elm_model *m) {
    elm_quant_params p = gptq(ELM_TYPE_Q4_0, NULL);
    elm_error err;
    elm_status st = elm_quantize(m, &p, tmp_path(dir, "none.gguf"), NULL, NULL, &err);
    CHECK(st == ELM_ERR_ARG && strstr(err.msg, "calib"), "GPTQ without calibration: %d %s", st,
          err.msg);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    dir = tmp_dir_new();
    elm_model *m = load_f32();
    elm_calib_set cs, small;
    elm_error err;
    CHECK(elm_calib_load(&m->vocab, fixture("stories260K/text/calib.txt"), 48, 8, &small, &err) ==
              ELM_OK, "%s", err.msg);
    test_no_hidden_state(m, &small);
    test_six_tokens(m);
    test_zero_block_and_dead_channel(&small);
    test_bad_weights(&small);
    test_no_calibration(m);
    test_act_order(m, &small);
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
