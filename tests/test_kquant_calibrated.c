/* GPTQ and AWQ into the k-quants and i-quants (grid.c, gptq.c, awq.c, layerwise.c), calibrated
 * on stories260K's text/calib.txt and scored against the F32 model on text/valid.txt (n_ctx 256,
 * llama.cpp's chunking, quant_eval.h):
 *  - the grid of every block type: the parameters chosen for a block (the reference encoder's,
 *    or the importance-weighted search's when that errs less) and the codes chosen under them
 *    pack into bytes that the types table decodes to exactly elm_grid_value;
 *  - stories260K, recipe q4_k_m: its rows are narrower than 256, so llama.cpp's rules put every
 *    matrix at a legacy fallback type (q5_0; q8_0 for the output and the bumped attn_v; f16 for
 *    ffn_down's 172-wide rows); GPTQ runs on each of those linears and gives mean KLD <= 0.8 x
 *    llama.cpp's imatrix Q4_K_M in no more bytes (golden/quant_reference.json);
 *  - wide256 (256-wide rows: Q4_K, Q6_K), recipe q4_k_m: GPTQ and AWQ no worse than llama.cpp's
 *    imatrix Q4_K_M; the figures of tests/data/quant_kld.json plus its margin bound all three;
 *  - the group grids of the lattice i-quants (test_group_grid);
 *  - no hidden state on wide256 for every super-block type, IQ4_NL, IQ2_S, IQ3_XXS and TQ2_0
 *    (GPTQ; AWQ on Q3_K): the bytes
 *    decode to the values the later layers were calibrated on, and GPTQ lowers every layer's
 *    output error below round-to-nearest's.
 * Sanitizer builds shrink calibration and evaluation and check the KLDs against round-to-nearest
 * instead of the absolute figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "codecs/encode.h"
#include "quant/grid.h"
#include "quant/layerwise.h"
#include "quant_eval.h"
#include "quant_pure.h"

static char *dir;

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture(rel), NULL, &m, &err) != ELM_OK) CHECK(0, "load %s: %s", rel, err.msg);
    return m;
}

static elm_quant_params recipe(elm_quant_method method, const char *name, const elm_calib_set *cs) {
    elm_quant_params p = {.method = method, .calib = cs, .n_threads = 2};
    CHECK(elm_quant_recipe_from_name(name, &p.policy.recipe, &p.policy.type), "recipe %s", name);
    return p;
}

static bool quantize(const elm_model *m, const elm_quant_params *p, const char *path,
                     elm_quant_report *rep) {
    elm_error err;
    elm_status st = elm_quantize(m, p, path, NULL, rep, &err);
    CHECK(st == ELM_OK, "quantize %s: %s", path, err.msg);
    return st == ELM_OK;
}

/* ------------------------------------------------------------------------------- grid */

static const elm_type block_types[] = {
    ELM_TYPE_Q4_0, ELM_TYPE_Q4_1, ELM_TYPE_Q5_0, ELM_TYPE_Q5_1, ELM_TYPE_Q8_0, ELM_TYPE_Q2_K,
    ELM_TYPE_Q3_K, ELM_TYPE_Q4_K, ELM_TYPE_Q5_K, ELM_TYPE_Q6_K, ELM_TYPE_IQ4_NL, ELM_TYPE_IQ4_XS,
    ELM_TYPE_TQ1_0, ELM_TYPE_TQ2_0};

static void test_grid(void) {
    uint32_t seed = 17;
    float x[ELM_QK_K], back[ELM_QK_K];
    float h[ELM_QK_K];
    int8_t codes[ELM_QK_K];
    uint8_t block[256];
    for (size_t t = 0; t < sizeof block_types / sizeof block_types[0]; t++) {
        elm_grid g;
        const elm_type_traits *tt = elm_type_get((uint32_t)block_types[t]);
        if (!elm_grid_of(block_types[t], &g)) {
            CHECK(0, "no grid for %s", tt->name);
            continue;
        }
        CHECK(g.block == tt->block_size, "%s: grid block %d, type block %d", tt->name, g.block,
              tt->block_size);
        int bad = 0, worse = 0, weighted = 0;
        for (int rep = 0; rep < 64; rep++) {
            /* heavy-tailed weights (a ratio of uniforms), a block of zeros now and then, and
             * importances over four decades */
            for (int j = 0; j < g.block; j++) {
                seed = seed * 1664525u + 1013904223u;
                const float u = (float)(seed >> 8) / 16777216.0f - 0.5f;
                seed = seed * 1664525u + 1013904223u;
                const float v = (float)(seed >> 8) / 16777216.0f + 0.05f;
                x[j] = rep % 16 == 15 ? 0.0f : 0.02f * u / v;
                h[j] = powf(10.0f, 4.0f * (float)(seed >> 8) / 16777216.0f);
            }
            elm_block_params cand[ELM_GRID_MAX_CANDIDATES];
            const int n = elm_grid_candidates(&g, x, h, 10, cand);
            const elm_block_params p = elm_grid_best_params(&g, x, h, 10);
            const double e = elm_grid_block_error(&g, &p, x, h);
            worse += e > elm_grid_block_error(&g, &cand[0], x, h);
            weighted += !memcmp(&p, &cand[n - 1], sizeof p) && memcmp(&p, &cand[0], sizeof p);
            for (int j = 0; j < g.block; j++) codes[j] = (int8_t)elm_grid_code(&g, &p, j, x[j]);
            elm_grid_pack(&g, &p, codes, block);
            tt->to_float(block, back, g.block);
            for (int j = 0; j < g.block; j++) {
                const float v = elm_grid_value(&g, &p, j, codes[j]);
                bad += memcmp(&v, &back[j], sizeof v) != 0;
            }
        }
        CHECK(bad == 0, "%s: %d weights decode to other values than the grid's", tt->name, bad);
        CHECK(worse == 0, "%s: the chosen parameters err more than RTN's in %d blocks", tt->name,
              worse);
        /* the importance-weighted search is a real candidate: it wins some blocks (Q8_0 and
         * the ternary types have none) */
        CHECK(weighted > 0 || block_types[t] == ELM_TYPE_Q8_0 || block_types[t] == ELM_TYPE_TQ1_0 ||
                  block_types[t] == ELM_TYPE_TQ2_0,
              "%s: the weighted search never chosen", tt->name);
    }
}

/* The lattice i-quants' group grids: the scales of the importance-weighted encoder, each group's
 * codes chosen at them (elm_grid_code_group) pack into bytes the types table decodes to exactly
 * elm_grid_value, and at the same scales the chosen points err less in sum (diag-weighted) than
 * the encoder's own. */
static void test_group_grid(void) {
    static const elm_type types[] = {ELM_TYPE_IQ1_S,   ELM_TYPE_IQ1_M,   ELM_TYPE_IQ2_XXS,
                                     ELM_TYPE_IQ2_XS,  ELM_TYPE_IQ2_S,   ELM_TYPE_IQ3_XXS,
                                     ELM_TYPE_IQ3_S};
    uint32_t seed = 23;
    float x[ELM_QK_K], h[ELM_QK_K], back[ELM_QK_K], enc[ELM_QK_K];
    int8_t codes[ELM_QK_K];
    uint8_t block[256];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const elm_type_traits *tt = elm_type_get((uint32_t)types[t]);
        elm_grid g;
        if (!elm_grid_of(types[t], &g) || g.group < 4 || g.block != ELM_QK_K) {
            CHECK(0, "%s: no group grid", tt->name);
            continue;
        }
        int bad = 0;
        double err_group = 0, err_enc = 0;
        for (int rep = 0; rep < 32; rep++) {
            for (int j = 0; j < ELM_QK_K; j++) {
                seed = seed * 1664525u + 1013904223u;
                const float u = (float)(seed >> 8) / 16777216.0f - 0.5f;
                seed = seed * 1664525u + 1013904223u;
                const float v = (float)(seed >> 8) / 16777216.0f + 0.05f;
                x[j] = 0.02f * u / v;
                h[j] = powf(10.0f, 2.0f * (float)(seed >> 8) / 16777216.0f);
            }
            elm_block_params p;
            CHECK(elm_grid_candidates(&g, x, h, 10, &p) == 1, "%s: one candidate", tt->name);
            for (int j = 0; j < ELM_QK_K; j += g.group)
                elm_grid_code_group(&g, &p, j, x + j, h + j, codes + j);
            elm_grid_pack(&g, &p, codes, block);
            tt->to_float(block, back, ELM_QK_K);
            elm_encode_row(types[t], x, block, ELM_QK_K, h);
            tt->to_float(block, enc, ELM_QK_K);
            for (int j = 0; j < ELM_QK_K; j++) {
                const float v = elm_grid_value(&g, &p, j, codes[j]);
                bad += memcmp(&v, &back[j], sizeof v) != 0;
                err_group += h[j] * (double)(x[j] - v) * (x[j] - v);
                err_enc += h[j] * (double)(x[j] - enc[j]) * (x[j] - enc[j]);
            }
        }
        CHECK(bad == 0, "%s: %d weights decode to other values than the grid's", tt->name, bad);
        CHECK(err_group < err_enc, "%s: the groups' points err %.4g, the encoder's %.4g",
              tt->name, err_group, err_enc);
        printf("%s group grid: weighted error %.4g (the encoder's %.4g)\n", tt->name, err_group,
               err_enc);
    }
}

/* ------------------------------------------------------------------- stories260K q4_k_m */

static void test_stories_q4_k_m(const elm_model *m, const qe_base *b, const elm_calib_set *cs) {
    const char *golden = "stories260K/golden/quant_reference.json";
    const elm_quant_params p = recipe(ELM_QUANT_GPTQ, "q4_k_m", cs);
    const char *path = tmp_path(dir, "stories-gptq-q4_k_m.gguf"), *rtn = tmp_path(dir, "rtn.gguf");
    elm_quant_report rep;
    if (!quantize(m, &p, path, &rep)) return;
    int at[ELM_TYPE_COUNT] = {0}, improved = 0, measured = 0;
    for (int32_t i = 0; i < rep.n_tensors; i++) {
        const elm_quant_tensor_info *t = &rep.tensors[i];
        at[t->type]++;
        if (t->err_before < 0) continue;
        measured++;
        improved += t->err_after < t->err_before;
    }
    /* llama.cpp's fallbacks: Q4_K -> Q5_0, Q6_K (output, attn_v of blocks 2 and 4) -> Q8_0,
     * ffn_down (rows of 172) -> F16 */
    CHECK(at[ELM_TYPE_Q5_0] == 29 && at[ELM_TYPE_Q8_0] == 3 && at[ELM_TYPE_F16] == 5 &&
              at[ELM_TYPE_F32] == 11,
          "types: %d q5_0, %d q8_0, %d f16, %d f32", at[ELM_TYPE_Q5_0], at[ELM_TYPE_Q8_0],
          at[ELM_TYPE_F16], at[ELM_TYPE_F32]);
    CHECK(measured == 31 && improved == measured,
          "GPTQ on %d linears (31 expected: 6 x 5 blocks + output), %d below RTN's error",
          measured, improved);
    const double bytes = check_golden_number(golden, "files.q4_k_m-imat.file_bytes");
    const long long file_bytes = (long long)rep.summary.file_bytes;
    CHECK((double)file_bytes <= bytes, "%lld bytes > llama.cpp's %.0f", file_bytes, bytes);
    elm_quant_report_free(&rep);
    elm_kld_stats k, r;
    elm_ppl_result ppl;
    if (!qe_compare(b, path, &k, &ppl)) return;
    printf("stories260K gptq q4_k_m (%d calibration samples): %lld bytes, KLD %.6f, top-1 %.2f%%, "
           "PPL %.4f\n", cs->n, file_bytes, k.kld_mean, k.top1_pct, ppl.ppl);
    if (QE_SMALL) {
        const elm_quant_params pr = recipe(ELM_QUANT_RTN, "q4_k_m", NULL);
        if (quantize(m, &pr, rtn, NULL) && qe_compare(b, rtn, &r, &ppl))
            CHECK(k.kld_mean < r.kld_mean, "KLD %.6f not below RTN's %.6f", k.kld_mean, r.kld_mean);
        return;
    }
    const double limit = 0.8 * check_golden_number(golden, "files.q4_k_m-imat.kld_mean");
    CHECK(k.kld_mean <= limit, "KLD %.6f > 0.8 x llama.cpp's imatrix Q4_K_M = %.6f", k.kld_mean,
          limit);
    const double bound = qe_kld_bound("gptq q4_k_m stories260K");
    CHECK(k.kld_mean <= bound, "KLD %.6f > %.6f", k.kld_mean, bound);
}

/* --------------------------------------------------------------------- wide256 q4_k_m */

static void test_wide_q4_k_m(const elm_model *m, const qe_base *b, const elm_calib_set *cs) {
    const double limit = check_golden_number("wide256/golden/quant_reference.json",
                                             "files.llamacpp-q4_k_m-imat.kld_mean");
    double rtn_kld = INFINITY;
    elm_kld_stats k;
    elm_ppl_result ppl;
    if (QE_SMALL) {
        const elm_quant_params pr = recipe(ELM_QUANT_RTN, "q4_k_m", NULL);
        const char *rtn = tmp_path(dir, "wide-rtn.gguf");
        if (quantize(m, &pr, rtn, NULL) && qe_compare(b, rtn, &k, &ppl)) rtn_kld = k.kld_mean;
    }
    const struct { elm_quant_method method; const char *key; } cases[] = {
        {ELM_QUANT_GPTQ, "gptq q4_k_m wide256"}, {ELM_QUANT_AWQ, "awq q4_k_m wide256"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const elm_quant_params p = recipe(cases[c].method, "q4_k_m", cs);
        const char *path = tmp_path(dir, "wide.gguf");
        if (!quantize(m, &p, path, NULL) || !qe_compare(b, path, &k, &ppl)) continue;
        printf("wide256 %s (%d calibration samples): KLD %.6f, top-1 %.2f%%, PPL %.4f\n",
               cases[c].key, cs->n, k.kld_mean, k.top1_pct, ppl.ppl);
        if (QE_SMALL) {
            CHECK(k.kld_mean < rtn_kld, "%s: KLD %.6f not below RTN's %.6f", cases[c].key,
                  k.kld_mean, rtn_kld);
            continue;
        }
        CHECK(k.kld_mean <= limit, "%s: KLD %.6f > llama.cpp's imatrix Q4_K_M %.6f", cases[c].key,
              k.kld_mean, limit);
        const double bound = qe_kld_bound(cases[c].key);
        CHECK(k.kld_mean <= bound, "%s: KLD %.6f > %.6f", cases[c].key, k.kld_mean, bound);
    }
}

/* ------------------------------------------------------------------- no hidden state */

static void test_no_hidden_state(const elm_model *m, const elm_calib_set *cs) {
    const elm_type kq[] = {ELM_TYPE_Q2_K,   ELM_TYPE_Q3_K,   ELM_TYPE_Q4_K,
                           ELM_TYPE_Q5_K,   ELM_TYPE_Q6_K,   ELM_TYPE_IQ4_NL,
                           ELM_TYPE_IQ4_XS, ELM_TYPE_IQ2_S,  ELM_TYPE_IQ3_XXS,
                           ELM_TYPE_TQ2_0};
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    float *dec = malloc(sizeof(float) * 768 * 512);
    for (size_t t = 0; plan && dec && t < sizeof kq / sizeof kq[0]; t++)
        for (int method = ELM_QUANT_GPTQ; method <= ELM_QUANT_AWQ; method++) {
            /* AWQ's scale search encodes every weight 20 times (seconds per type): its path is
             * type-generic, and Q3_K's encoder is the cheapest of the super-block types */
            if (method == ELM_QUANT_AWQ && kq[t] != ELM_TYPE_Q3_K) continue;
            const char *name = elm_type_get((uint32_t)kq[t])->name;
            const elm_quant_params p = {.policy = {.type = kq[t], .pure = true},
                                        .method = (elm_quant_method)method, .calib = cs,
                                        .n_threads = 2};
            elm_error err;
            elm_qrun r = {0};
            elm_status st = elm_quant_plan(m, &p.policy, plan, &err);
            if (!st) st = elm_quant_calibrated(m, &p, plan, NULL, true, &r, &err);
            CHECK(st == ELM_OK, "%s %s: %s", elm_quant_method_name(p.method), name, err.msg);
            int checked = 0, bad = 0, worse = 0;
            for (int32_t i = 0; !st && i < m->n_tensors; i++) {
                const elm_tensor *w = &r.tensors[i];
                if (!r.bytes[i] || plan[i].type != kq[t]) continue;
                const int64_t n = w->ne[0] * w->ne[1];
                elm_type_get((uint32_t)kq[t])->to_float(r.bytes[i], dec, n);
                bad += memcmp(dec, w->data, sizeof(float) * (size_t)n) != 0;
                worse += r.info[i].err_before >= 0 && !(r.info[i].err_after < r.info[i].err_before);
                checked++;
            }
            /* token_embd, output and 7 linears in each of 2 blocks */
            CHECK(st || checked == 16, "%s %s: %d tensors checked", elm_quant_method_name(p.method),
                  name, checked);
            CHECK(bad == 0, "%s %s: %d tensors decode to other values than the later layers used",
                  elm_quant_method_name(p.method), name, bad);
            if (method == ELM_QUANT_GPTQ)
                CHECK(worse == 0, "gptq %s: %d layers not below RTN's output error", name, worse);
            elm_qrun_free(&r);
        }
    free(dec);
    free(plan);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    FILE *f = fopen(fixture("wide256/wide-f32.gguf"), "rb");
    if (!f) return check_skip("no wide256 fixture");
    fclose(f);
    dir = tmp_dir_new();
    test_grid();
    test_group_grid();
    elm_model *s = load("stories260K/stories260K-f32.gguf"), *w = load("wide256/wide-f32.gguf");
    elm_calib_set small, cs;
    elm_error err;
    qe_base b;
    if (w && elm_calib_load(&w->vocab, fixture("stories260K/text/calib.txt"), 48, 8, &small, &err) ==
                 ELM_OK) {
        test_no_hidden_state(w, &small);
        elm_calib_free(&small);
    }
    if (s && qe_calib(s, &cs)) {
        if (qe_base_init(&b, s)) {
            test_stories_q4_k_m(s, &b, &cs);
            qe_base_free(&b);
        }
        elm_calib_free(&cs);
    }
    if (w && qe_calib(w, &cs)) {
        if (qe_base_init(&b, w)) {
            test_wide_q4_k_m(w, &b, &cs);
            qe_base_free(&b);
        }
        elm_calib_free(&cs);
    }
    elm_model_free(s);
    elm_model_free(w);
    tmp_dir_remove(dir);
    return check_done();
}
