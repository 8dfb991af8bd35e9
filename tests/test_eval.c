/* edgelm eval against llama-perplexity --kl-divergence (golden/quant_reference.json, valid.txt,
 * n_ctx 256): the baseline against itself (KLD exactly 0, full agreement, similarity 1), llama.cpp's
 * q4_0 and q8_0 files, the per-position statistics on hand-made distributions, the reference file
 * (round trip and every rejection: truncated, corrupt, other version, vocabulary, n_ctx, tokens),
 * generation quality, and the report renderers. Under the sanitizer build the model passes run on
 * the first chunks only, to keep the suite fast; the golden comparisons need the whole text. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/fileio.h"
#include "edgelm/eval.h"
#include "tmpfiles.h"

#if defined(__SANITIZE_ADDRESS__)
static const size_t text_limit = 12000; /* bytes of valid.txt: a few chunks */
#else
static const size_t text_limit = (size_t)-1;
#endif

static const elm_ppl_params P256 = {.n_ctx = 256, .n_threads = 2};
static char *text;
static size_t text_len;
static bool full;

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture(rel), NULL, &m, &err)) CHECK(0, "%s", err.msg);
    return m;
}

static int32_t *tokens_of(const elm_model *m, const char *s, size_t len, int64_t *n) {
    int32_t *ids = NULL;
    elm_error err;
    CHECK(elm_ppl_tokenize(m, s, len, &ids, n, &err) == ELM_OK, "%s", err.msg);
    return ids;
}

static double golden(const cJSON *files, const char *file, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(files, file), key);
    CHECK(cJSON_IsNumber(v), "golden %s.%s", file, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Opening `path` fails with ELM_ERR_FORMAT and a message containing `want`. */
static void expect_open_error(const char *path, const char *want, const char *what) {
    elm_ref *r = NULL;
    elm_error err;
    elm_error_clear(&err);
    CHECK(elm_ref_open(path, &r, &err) == ELM_ERR_FORMAT, "%s accepted", what);
    CHECK(strstr(err.msg, want) && strstr(err.msg, path), "%s: message '%s'", what, err.msg);
    elm_ref_close(r);
}

/* ------------------------------------------------------------ per-position statistics */

static void kld_statistics(void) {
    /* P = (.5, .5, 0+, ...), Q = (.9, .1): KLD = .5 ln(.5/.9) + .5 ln(.5/.1) */
    float p[2] = {logf(0.5f), logf(0.5f)}, q[2] = {logf(0.9f), logf(0.1f)};
    elm_kld_acc *a = elm_kld_acc_new(4);
    CHECK(a != NULL, "acc");
    if (!a) return;
    double want[4];
    const float qs[4][2] = {{0.9f, 0.1f}, {0.5f, 0.5f}, {0.2f, 0.8f}, {0.6f, 0.4f}};
    for (int k = 0; k < 4; k++) {
        q[0] = logf(qs[k][0]);
        q[1] = logf(qs[k][1]);
        want[k] = 0;
        for (int i = 0; i < 2; i++) want[k] += exp(p[i]) * ((double)p[i] - q[i]);
        CHECK(elm_kld_acc_add(a, p, q, 2, 1), "add %d", k);
    }
    CHECK(!elm_kld_acc_add(a, p, q, 2, 0), "a full accumulator took a fifth position");
    CHECK(fabs(want[0] - (0.5 * log(0.5 / 0.9) + 0.5 * log(0.5 / 0.1))) < 1e-6, "hand KLD %.9f", want[0]);
    elm_kld_stats s;
    elm_kld_acc_finish(a, &s);
    elm_kld_acc_free(a);
    /* ascending: Q = P (0), (.6, .4), (.2, .8), (.9, .1); median = mean of the middle two, p99 at
     * rank 0.99 * 3 = 2.97 */
    const double sorted[4] = {want[1], want[3], want[2], want[0]};
    CHECK(sorted[0] <= sorted[1] && sorted[1] <= sorted[2] && sorted[2] <= sorted[3], "test order");
    CHECK(s.n == 4, "n %lld", (long long)s.n);
    CHECK(fabs(s.kld_mean - (want[0] + want[1] + want[2] + want[3]) / 4) < 1e-12, "mean %.12f", s.kld_mean);
    CHECK(fabs(s.kld_median - (sorted[1] + sorted[2]) / 2) < 1e-12, "median %.12f", s.kld_median);
    CHECK(fabs(s.kld_p99 - (sorted[2] + 0.97 * (sorted[3] - sorted[2]))) < 1e-12, "p99 %.12f", s.kld_p99);
    CHECK(s.kld_max == sorted[3], "max %.12f", s.kld_max);
    /* argmax of P is index 0 (first on the tie); of Q: 0, 0 (tie), 1, 0 -> 3 of 4 agree */
    CHECK(fabs(s.top1_pct - 75) < 1e-12, "top1 %.6f", s.top1_pct);
    CHECK(fabs(s.top5_overlap_pct - 100) < 1e-12, "top5 of a 2-token vocabulary %.6f", s.top5_overlap_pct);
    /* Δp of token 1: .1-.5, .5-.5, .8-.5, .4-.5 */
    const double rms = 100 * sqrt((0.16 + 0 + 0.09 + 0.01) / 4);
    CHECK(fabs(s.rms_dp_pct - rms) < 1e-4, "rms Δp %.6f vs %.6f", s.rms_dp_pct, rms);

    /* top-5 overlap: Q's top 5 shares 3 of P's */
    float lp[8], lq[8];
    const float pv[8] = {8, 7, 6, 5, 4, 3, 2, 1}, qv[8] = {8, 7, 6, 1, 2, 3, 4, 5};
    elm_log_softmax_f32(pv, 8, lp);
    elm_log_softmax_f32(qv, 8, lq);
    double sum = 0;
    for (int i = 0; i < 8; i++) sum += exp(lp[i]);
    CHECK(fabs(sum - 1) < 1e-6, "log-softmax sums to %.9f", sum);
    a = elm_kld_acc_new(1);
    if (a) {
        elm_kld_acc_add(a, lp, lq, 8, 0);
        elm_kld_acc_finish(a, &s);
        CHECK(fabs(s.top5_overlap_pct - 60) < 1e-9, "top5 overlap %.6f", s.top5_overlap_pct);
        CHECK(s.top1_pct == 100 && s.kld_mean > 0, "top1 %.2f kld %.6f", s.top1_pct, s.kld_mean);
        elm_kld_acc_free(a);
    }
}

/* ------------------------------------------------------------------------ model passes */

static bool compare(const char *rel, const elm_ref *ref, elm_ppl_result *ppl, elm_kld_stats *kld) {
    elm_model *m = load(rel);
    if (!m) return false;
    int64_t n;
    int32_t *ids = tokens_of(m, text, text_len, &n);
    elm_error err;
    elm_status st = ids ? elm_eval_compare(m, ref, ids, n, &P256, NULL, NULL, ppl, kld, &err) : ELM_ERR_NOMEM;
    CHECK(st == ELM_OK, "%s: %s", rel, err.msg);
    free(ids);
    elm_model_free(m);
    return st == ELM_OK;
}

static void against_llamacpp(const elm_ref *ref, const cJSON *files) {
    elm_ppl_result ppl;
    elm_kld_stats k;
    /* the baseline against itself: exactly 0 and full agreement */
    if (compare("stories260K/stories260K-f32.gguf", ref, &ppl, &k)) {
        CHECK(k.kld_mean == 0 && k.kld_max == 0 && k.kld_median == 0, "self KLD %.3g max %.3g", k.kld_mean, k.kld_max);
        CHECK(k.top1_pct == 100 && k.top5_overlap_pct == 100 && k.rms_dp_pct == 0, "self top1 %.4f top5 %.4f rms %.4g",
              k.top1_pct, k.top5_overlap_pct, k.rms_dp_pct);
        CHECK(ppl.ppl == ref->info.ppl, "self PPL %.9f vs reference %.9f", ppl.ppl, ref->info.ppl);
        CHECK(k.n == ref->info.n_scored, "positions %lld", (long long)k.n);
    }
    if (compare("stories260K/reference-quants/llamacpp-q4_0-pure.gguf", ref, &ppl, &k)) {
        fprintf(stderr, "q4_0: PPL %.6f KLD %.6f median %.6f p99 %.6f max %.6f top1 %.3f top5 %.3f rms %.3f\n",
                ppl.ppl, k.kld_mean, k.kld_median, k.kld_p99, k.kld_max, k.top1_pct, k.top5_overlap_pct, k.rms_dp_pct);
        if (full) {
            const double want_ppl = golden(files, "q4_0-pure", "ppl"), want_kld = golden(files, "q4_0-pure", "kld_mean");
            const double want_top1 = golden(files, "q4_0-pure", "top1_pct");
            CHECK(fabs(ppl.ppl / want_ppl - 1) < 0.01, "q4_0 PPL %.6f vs %.6f", ppl.ppl, want_ppl);
            CHECK(fabs(k.kld_mean / want_kld - 1) < 0.05, "q4_0 KLD %.6f vs %.6f", k.kld_mean, want_kld);
            CHECK(fabs(k.top1_pct - want_top1) < 1, "q4_0 top-1 %.3f vs %.3f", k.top1_pct, want_top1);
            const double med = golden(files, "q4_0-pure", "kld_median"), p99 = golden(files, "q4_0-pure", "kld_p99");
            const double rms = golden(files, "q4_0-pure", "rms_dp_pct");
            CHECK(fabs(k.kld_median / med - 1) < 0.05, "q4_0 median %.6f vs %.6f", k.kld_median, med);
            CHECK(fabs(k.kld_p99 / p99 - 1) < 0.05, "q4_0 p99 %.6f vs %.6f", k.kld_p99, p99);
            CHECK(fabs(k.rms_dp_pct / rms - 1) < 0.05, "q4_0 RMS dp %.3f vs %.3f", k.rms_dp_pct, rms);
        } else {
            CHECK(k.kld_mean > 0.05 && k.kld_mean < 0.3 && k.top1_pct > 70 && k.top1_pct < 92,
                  "q4_0 on a prefix: KLD %.4f top-1 %.2f", k.kld_mean, k.top1_pct);
        }
        CHECK(k.kld_median <= k.kld_p99 && k.kld_p99 <= k.kld_max && k.kld_stderr > 0, "order statistics");
    }
    if (compare("stories260K/reference-quants/llamacpp-q8_0-pure.gguf", ref, &ppl, &k)) {
        fprintf(stderr, "q8_0: PPL %.6f KLD %.6f top1 %.3f\n", ppl.ppl, k.kld_mean, k.top1_pct);
        const double want_kld = golden(files, "q8_0-pure", "kld_mean");
        if (full) {
            CHECK(k.kld_mean > 0 && k.kld_mean <= want_kld, "q8_0 KLD %.6f vs llama.cpp %.6f", k.kld_mean, want_kld);
            CHECK(k.top1_pct >= 98.3, "q8_0 top-1 %.3f", k.top1_pct);
        } else {
            CHECK(k.kld_mean > 0 && k.kld_mean < 2 * want_kld && k.top1_pct > 97, "q8_0 on a prefix: KLD %.6f top-1 %.3f",
                  k.kld_mean, k.top1_pct);
        }
    }
}

/* ----------------------------------------------------------------------- reference file */

static void reference_rejections(const elm_model *f32, const char *dir, const char *good) {
    size_t len;
    unsigned char *img = file_read(good, &len);
    CHECK(img && len > 4096, "reference image");
    if (!img) return;
    const char *p = tmp_path(dir, "bad.elmref");

    CHECK(file_copy(good, p, len - 100, 0), "copy");
    expect_open_error(p, "truncated reference file", "truncated payload");
    CHECK(file_write(p, img, 60), "write");
    expect_open_error(p, "truncated reference file", "truncated header");
    CHECK(file_write(p, img, 0), "write");
    expect_open_error(p, "truncated reference file", "empty file");
    CHECK(file_copy(good, p, SIZE_MAX, 4), "copy");
    expect_open_error(p, "trailing data", "trailing bytes");
    img[len / 2] ^= 0x40;
    CHECK(file_write(p, img, len), "write");
    expect_open_error(p, "checksum mismatch", "flipped payload bit");
    img[len / 2] ^= 0x40;
    img[0] = 'X';
    CHECK(file_write(p, img, len), "write");
    expect_open_error(p, "bad magic", "magic");
    img[0] = 'E';
    img[8] = 2;
    CHECK(file_write(p, img, len), "write");
    expect_open_error(p, "version 2 not supported", "version");
    img[8] = 1;
    img[12] = 0; /* n_vocab 512 -> 0 */
    img[13] = 0;
    CHECK(file_write(p, img, len), "write");
    expect_open_error(p, "header out of range", "zero vocabulary");
    free(img);

    /* a well-formed file from another vocabulary (256 tokens): refused by the check */
    int64_t n;
    int32_t *ids = tokens_of(f32, text, text_len, &n);
    elm_ref_info info = {.n_vocab = 256, .n_ctx = 256, .n_chunks = (int32_t)(n / 256), .n_text_tokens = n};
    elm_ref_writer *w = NULL;
    elm_error err;
    elm_error_clear(&err);
    const char *other = tmp_path(dir, "vocab256.elmref");
    if (ids && elm_ref_writer_open(other, &info, ids, &w, &err) == ELM_OK) {
        float row[256];
        for (int i = 0; i < 256; i++) row[i] = -logf(256);
        for (int64_t r = 0; r < (int64_t)info.n_chunks * 127; r++) elm_ref_writer_add(w, row);
        const elm_ppl_result ppl = {.ppl = 256};
        CHECK(elm_ref_writer_finish(w, &ppl, &err) == ELM_OK, "%s", err.msg);
        elm_ref *r = NULL;
        CHECK(elm_ref_open(other, &r, &err) == ELM_OK, "%s", err.msg);
        if (r) {
            CHECK(r->info.n_vocab == 256 && r->info.ppl == 256, "round trip of the header");
            elm_ppl_result pr;
            elm_kld_stats ks;
            CHECK(elm_eval_compare(f32, r, ids, n, &P256, NULL, NULL, &pr, &ks, &err) == ELM_ERR_ARG, "other vocabulary accepted");
            CHECK(strstr(err.msg, "vocabulary of 256 tokens, the model has 512") != NULL, "message: %s", err.msg);
            elm_ref_close(r);
        }
    } else {
        CHECK(0, "writer: %s", err.msg);
    }
    /* a writer given too few rows leaves nothing behind */
    const char *partial = tmp_path(dir, "partial.elmref");
    if (ids && elm_ref_writer_open(partial, &info, ids, &w, &err) == ELM_OK) {
        float row[256] = {0};
        elm_ref_writer_add(w, row);
        const elm_ppl_result ppl = {.ppl = 1};
        CHECK(elm_ref_writer_finish(w, &ppl, &err) == ELM_ERR_ARG, "short reference accepted");
        CHECK(strstr(err.msg, "1 of") != NULL, "message: %s", err.msg);
        CHECK(!elm_file_exists(partial), "partial file left behind");
    }
    free(ids);
}

/* References made with another n_ctx and from other tokens, on short texts (cheap passes). */
static void reference_mismatches(const elm_model *f32, const char *dir) {
    const size_t short_len = 3000; /* ~1300 tokens: a few chunks */
    int64_t na, nb;
    int32_t *a = tokens_of(f32, text, short_len, &na), *b = tokens_of(f32, text + short_len, short_len, &nb);
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    if (nb > na) nb = na; /* same chunk count, other tokens */
    const elm_ppl_params p128 = {.n_ctx = 128, .n_threads = 2};
    const char *r128 = tmp_path(dir, "ctx128.elmref"), *ra = tmp_path(dir, "textA.elmref");
    elm_ppl_result ppl;
    elm_error err;
    CHECK(elm_eval_reference(f32, a, na, &p128, 1, r128, NULL, NULL, &ppl, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_eval_reference(f32, a, na, &P256, 1, ra, NULL, NULL, &ppl, &err) == ELM_OK, "%s", err.msg);
    elm_ref *r = NULL;
    elm_kld_stats k;
    if (elm_ref_open(r128, &r, &err) == ELM_OK) {
        CHECK(elm_eval_compare(f32, r, a, na, &P256, NULL, NULL, &ppl, &k, &err) == ELM_ERR_ARG, "other n_ctx accepted");
        CHECK(strstr(err.msg, "made with -c 128, this run uses -c 256") != NULL, "message: %s", err.msg);
        elm_ref_close(r);
    } else {
        CHECK(0, "%s", err.msg);
    }
    if (elm_ref_open(ra, &r, &err) == ELM_OK) {
        CHECK(elm_eval_compare(f32, r, b, nb, &P256, NULL, NULL, &ppl, &k, &err) == ELM_ERR_ARG, "other tokens accepted");
        CHECK(strstr(err.msg, "other tokens") != NULL, "message: %s", err.msg);
        /* the same short text is accepted and is its own baseline */
        CHECK(elm_eval_compare(f32, r, a, na, &P256, NULL, NULL, &ppl, &k, &err) == ELM_OK, "%s", err.msg);
        CHECK(k.kld_max == 0 && ppl.ppl == r->info.ppl, "short self-comparison");
        /* a text with fewer chunks */
        CHECK(elm_eval_compare(f32, r, a, 2 * 256, &P256, NULL, NULL, &ppl, &k, &err) == ELM_ERR_ARG, "fewer chunks accepted");
        CHECK(strstr(err.msg, "other tokens") != NULL, "message: %s", err.msg);
        elm_ref_close(r);
    } else {
        CHECK(0, "%s", err.msg);
    }
    /* the baseline pass refuses a short text before creating any file */
    const char *none = tmp_path(dir, "short.elmref");
    CHECK(elm_eval_reference(f32, a, 100, &P256, 1, none, NULL, NULL, &ppl, &err) == ELM_ERR_ARG, "short text accepted");
    CHECK(!elm_file_exists(none), "file left after refusing a short text");
    free(a);
    free(b);
}

/* --------------------------------------------------------------------------- generation */

static void generation(const elm_model *f32) {
    const char *prompts[] = {"Once upon a time", "Lily and Ben are twins", "Tom had a huge toy car"};
    elm_continuations c1, c2;
    elm_error err;
    const elm_ppl_params t2 = {.n_threads = 2}, t1 = {.n_threads = 1};
    CHECK(elm_eval_continuations(f32, prompts, 3, 16, &t2, &c1, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_eval_continuations(f32, prompts, 3, 16, &t1, &c2, &err) == ELM_OK, "%s", err.msg);
    if (c1.n == 3 && c2.n == 3) {
        CHECK(strncmp(c1.texts[0], ", there was a little girl named Lily", 36) == 0, "greedy text '%s'", c1.texts[0]);
        CHECK(c1.n_tokens[0] == 16, "tokens %d", c1.n_tokens[0]);
        elm_gen_quality g;
        CHECK(elm_gen_quality_of(&c1, &c2, &g, &err) == ELM_OK, "%s", err.msg);
        CHECK(g.similarity == 1 && g.exact_match_rate == 1 && g.completion_rate == 1, "self: sim %.6f exact %.3f complete %.3f",
              g.similarity, g.exact_match_rate, g.completion_rate);
        CHECK(g.avg_tokens == 16 && g.avg_chars > 40, "lengths %.1f tokens %.1f chars", g.avg_tokens, g.avg_chars);
    }
    elm_continuations_free(&c1);
    elm_continuations_free(&c2);
    const char *empty[] = {""};
    CHECK(elm_eval_continuations(f32, empty, 1, 4, &t1, &c1, &err) == ELM_ERR_ARG, "empty prompt accepted");
    elm_continuations_free(&c1);

    /* hand-made continuations: one identical, one "hello" -> "help" (ratio 2*3/9, 4 characters) */
    char *ra[] = {"abc def ghi jk", "hello"}, *qa[] = {"abc def ghi jk", "help"};
    int32_t nt[] = {5, 3};
    const elm_continuations ref = {2, ra, nt}, q = {2, qa, nt}, one = {1, ra, nt};
    elm_gen_quality g;
    CHECK(elm_gen_quality_of(&ref, &q, &g, &err) == ELM_OK, "%s", err.msg);
    CHECK(fabs(g.similarity - (1 + 6.0 / 9) / 2) < 1e-12, "similarity %.12f", g.similarity);
    CHECK(g.exact_match_rate == 0.5 && g.completion_rate == 0.5, "exact %.3f complete %.3f", g.exact_match_rate, g.completion_rate);
    CHECK(g.avg_chars == 9 && g.avg_tokens == 4, "avg %.2f chars %.2f tokens", g.avg_chars, g.avg_tokens);
    CHECK(elm_gen_quality_of(&ref, &one, &g, &err) == ELM_ERR_ARG, "count mismatch accepted");
}

/* ------------------------------------------------------------------------------ reports */

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void reports(void) {
    elm_eval_entry models[2] = {
        {.name = "q8 <&>.gguf", .path = "q8.gguf", .size_mib = 0.36, .ppl = {.ppl = 4.38, .ppl_stderr = 0.045},
         .kld = {.n = 10, .kld_mean = 0.0004, .top1_pct = 98.9}, .has_gen = true, .gen = {.n_prompts = 2, .similarity = 0.96}},
        {.name = "q4.gguf", .path = "q4.gguf", .size_mib = 0.25, .ppl = {.ppl = 4.94, .ppl_stderr = 0.05},
         .kld = {.n = 10, .kld_mean = 0.117, .top1_pct = 81.2}, .has_gen = true, .gen = {.n_prompts = 2, .similarity = 0.45}},
    };
    const elm_eval_report r = {
        .text_path = "valid.txt", .n_ctx = 256, .chunks = 221, .scored_tokens = 28067, .n_prompts = 2, .n_predict = 64,
        .baseline = {.name = "f32.gguf", .path = "f32.gguf", .size_mib = 1.13, .ppl = {.ppl = 4.3759, .ppl_stderr = 0.0451},
                     .kld = {.n = 10, .top1_pct = 100, .top5_overlap_pct = 100}, .has_gen = true,
                     .gen = {.n_prompts = 2, .similarity = 1, .exact_match_rate = 1}},
        .n_models = 2, .models = models,
    };
    CHECK(fabs(elm_eval_ppl_change_pct(&r, &models[1]) - 100 * (4.94 / 4.3759 - 1)) < 1e-12, "change");
    CHECK(!strcmp(elm_eval_ppl_verdict(4.99), "excellent") && !strcmp(elm_eval_ppl_verdict(5.0), "flagged") &&
              !strcmp(elm_eval_ppl_verdict(-20), "excellent"), "PPL verdicts");
    CHECK(!strcmp(elm_eval_sim_verdict(0.9001), "acceptable") && !strcmp(elm_eval_sim_verdict(0.9), "flagged"), "similarity verdicts");

    char *t = elm_report_text(&r);
    CHECK(t && strstr(t, "f32.gguf (baseline)") && strstr(t, "4.3759 ± 0.0451") && count(t, "excellent") >= 2 &&
              strstr(t, "flagged") && strstr(t, "+12.89%"), "text report:\n%s", t ? t : "(null)");
    free(t);
    char *md = elm_report_markdown(&r);
    CHECK(md && strstr(md, "| metric | f32.gguf (baseline) | q8 <&>.gguf | change | q4.gguf | change |") &&
              strstr(md, "|:---|---:|---:|---:|---:|---:|") && strstr(md, "| similarity verdict (> 90%) |  | acceptable |  | flagged |  |"),
          "markdown report:\n%s", md ? md : "(null)");
    free(md);
    char *js = elm_report_json(&r);
    cJSON *o = js ? cJSON_Parse(js) : NULL;
    const cJSON *ms = cJSON_GetObjectItem(o, "models");
    CHECK(cJSON_GetArraySize(ms) == 2, "json models");
    const cJSON *m1 = cJSON_GetArrayItem(ms, 1);
    CHECK(cJSON_GetObjectItem(m1, "ref_ppl")->valuedouble == 4.3759 &&
              !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(m1, "verdicts"), "ppl")->valuestring, "flagged") &&
              !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(m1, "verdicts"), "similarity")->valuestring, "flagged"),
          "json fields:\n%s", js ? js : "(null)");
    cJSON_Delete(o);
    free(js);
    for (int y = 0; y < 2; y++) {
        char *svg = elm_report_svg(&r, y ? ELM_PLOT_PPL : ELM_PLOT_KLD);
        CHECK(svg && count(svg, "<circle class=\"point") == 3 && count(svg, "<circle class=\"point baseline\"") == 1 &&
                  strstr(svg, "q8 &lt;&amp;&gt;.gguf") && !strstr(svg, "q8 <&>") && strstr(svg, "</svg>"),
              "svg:\n%s", svg ? svg : "(null)");
        free(svg);
    }
    /* without prompts: no generation rows, nulls in JSON */
    elm_eval_report bare = r;
    bare.n_prompts = 0;
    elm_eval_entry plain[2] = {models[0], models[1]};
    plain[0].has_gen = plain[1].has_gen = bare.baseline.has_gen = false;
    bare.models = plain;
    t = elm_report_text(&bare);
    CHECK(t && !strstr(t, "similarity") && strstr(t, "PPL verdict"), "text without prompts:\n%s", t ? t : "(null)");
    free(t);
    js = elm_report_json(&bare);
    o = js ? cJSON_Parse(js) : NULL;
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "models"), 0), "similarity")), "null similarity");
    cJSON_Delete(o);
    free(js);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    kld_statistics();
    elm_error err;
    if (elm_read_file(fixture("stories260K/text/valid.txt"), 1 << 24, &text, &text_len, &err)) {
        CHECK(0, "%s", err.msg);
        return check_done();
    }
    full = text_len <= text_limit;
    if (!full) text_len = text_limit;
    reports();

    cJSON *g = check_load_json(fixture("stories260K/golden/quant_reference.json"));
    const cJSON *files = cJSON_GetObjectItem(g, "files");
    char *dir = tmp_dir_new();
    elm_model *f32 = load("stories260K/stories260K-f32.gguf");
    if (dir && f32) {
        generation(f32);
        const char *refpath = tmp_path(dir, "f32.elmref");
        int64_t n;
        int32_t *ids = tokens_of(f32, text, text_len, &n);
        elm_ppl_result ppl;
        elm_status st = ids ? elm_eval_reference(f32, ids, n, &P256, 12345, refpath, NULL, NULL, &ppl, &err) : ELM_ERR_NOMEM;
        CHECK(st == ELM_OK, "reference: %s", err.msg);
        free(ids);
        elm_ref *ref = NULL;
        if (!st && elm_ref_open(refpath, &ref, &err) == ELM_OK) {
            const elm_ref_info *in = &ref->info;
            CHECK(in->n_vocab == 512 && in->n_ctx == 256 && in->n_scored == (int64_t)in->n_chunks * 127 &&
                      in->model_bytes == 12345 && !strcmp(in->model_name, "stories260K-f32.gguf") && in->ppl == ppl.ppl,
                  "header: vocab %d ctx %d chunks %d name '%s'", in->n_vocab, in->n_ctx, in->n_chunks, in->model_name);
            const cJSON *base = cJSON_GetObjectItem(g, "base_ppl_f32");
            if (full)
                CHECK(in->n_chunks == 221 && cJSON_IsNumber(base) && fabs(in->ppl / base->valuedouble - 1) < 5e-4,
                      "baseline PPL %.6f over %d chunks", in->ppl, in->n_chunks);
            against_llamacpp(ref, files);
            elm_ref_close(ref);
            reference_rejections(f32, dir, refpath);
        } else {
            CHECK(0, "open: %s", err.msg);
        }
        reference_mismatches(f32, dir);
    }
    elm_model_free(f32);
    tmp_dir_remove(dir);
    cJSON_Delete(g);
    free(text);
    return check_done();
}
