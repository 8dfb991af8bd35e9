/* Speculative decoding: greedy output with a draft model (the fixture's llama.cpp q4_0 drafting
 * for the F32 model) and with prompt lookup equals plain greedy output on golden/greedy.json, and
 * with sampling the first generated token keeps the target's distribution: a chi-square test over
 * 2000 seeds against plain sampling and against the exact distribution, with a control that the
 * same test does reject the draft's own distribution. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/speculative.h"

#define F32 "stories260K/stories260K-f32.gguf"
#define Q4 "stories260K/reference-quants/llamacpp-q4_0-pure.gguf"

static elm_model *load(const char *rel) {
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture(rel), NULL, &m, &err) == ELM_OK, "%s: %s", rel, err.msg);
    return m;
}

static elm_context *context(const elm_model *m, int32_t n_ctx) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params cp = {.n_ctx = n_ctx, .n_threads = 1};
    CHECK(elm_context_new(m, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

static void lookup_unit(void) {
    const int32_t t[] = {5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6, 7};
    int32_t d[4];
    /* last 3-gram 5 6 7: latest earlier occurrence at 5, followed by 1 2 5 6 */
    CHECK(elm_lookup_propose(t, 13, 3, 4, d) == 4 && d[0] == 1 && d[1] == 2 && d[2] == 5 &&
              d[3] == 6,
          "lookup 3-gram: %d %d %d %d", d[0], d[1], d[2], d[3]);
    const int32_t u[] = {1, 2, 3, 4};
    CHECK(elm_lookup_propose(u, 4, 3, 4, d) == 0, "no repeat, no proposal");
    const int32_t w[] = {9, 4, 9};
    CHECK(elm_lookup_propose(w, 3, 3, 4, d) == 2 && d[0] == 4 && d[1] == 9, "1-gram fallback");
}

/* Greedy ids from elm_generate_speculative (sp NULL: plain) after a golden prompt. */
static int greedy(elm_context *c, const int32_t *prompt, int n_prompt, const elm_spec_params *sp,
                  int32_t *out, elm_spec_stats *ss) {
    elm_context_reset(c);
    if (sp && sp->draft) elm_context_reset(sp->draft);
    elm_gen_params gp = {.n_predict = 32, .ignore_eos = true, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 0;
    int32_t n_out = 0;
    elm_gen_stats st;
    elm_error err;
    elm_status s = elm_generate_speculative(c, prompt, n_prompt, &gp, sp, NULL, NULL, out, 32,
                                            &n_out, &st, ss, &err);
    CHECK(s == ELM_OK && n_out == 32, "generate: %s (%d tokens)", err.msg, n_out);
    return n_out;
}

static void golden_greedy(void) {
    elm_model *m = load(F32), *dm = load(Q4);
    cJSON *g = check_load_json(fixture("stories260K/golden/greedy.json"));
    if (!m || !dm || !g) goto out;
    elm_context *c = context(m, 128), *dc = context(dm, 128);
    const elm_spec_params draft = {.draft = dc, .draft_max = 6, .draft_min_p = 0.3f};
    const elm_spec_params lookup = {.lookup = 5};
    int total_drafted = 0, total_accepted = 0, passes = 0;
    const cJSON *cs;
    cJSON_ArrayForEach(cs, cJSON_GetObjectItem(g, "cases")) {
        int p[64], golden[32];
        const int np = check_json_ids(cJSON_GetObjectItem(cs, "prompt_ids"), p, 64);
        check_json_ids(cJSON_GetObjectItem(cs, "generated_ids"), golden, 32);
        int32_t prompt[64], out[32];
        for (int i = 0; i < np; i++) prompt[i] = p[i];
        const elm_spec_params *sps[] = {NULL, &draft, &lookup};
        const char *names[] = {"plain", "draft", "lookup"};
        for (int k = 0; k < 3; k++) {
            elm_spec_stats ss = {0};
            const int n = greedy(c, prompt, np, sps[k], out, &ss);
            int same = 0;
            while (same < n && out[same] == golden[same]) same++;
            CHECK(same == 32, "%s: first %d of 32 greedy ids match (prompt %d tokens)", names[k],
                  same, np);
            if (k == 1) {
                total_drafted += ss.drafted;
                total_accepted += ss.accepted;
                passes += ss.target_passes;
                CHECK(ss.tokens_per_pass >= 1.0 && ss.plain_ms_per_token > 0,
                      "draft stats: %.2f tokens/pass, plain %.3f ms", ss.tokens_per_pass,
                      ss.plain_ms_per_token);
            }
        }
    }
    /* the draft earns its keep: most drafts accepted, fewer target passes than tokens */
    CHECK(total_drafted > 0 && total_accepted > total_drafted / 2,
          "draft accepted %d of %d", total_accepted, total_drafted);
    CHECK(passes < 8 * 32, "draft: %d target passes for %d tokens", passes, 8 * 32);
    printf("draft q4_0 for f32: accepted %d of %d drafted, %d target passes for 256 tokens\n",
           total_accepted, total_drafted, passes);
    elm_context_free(c);
    elm_context_free(dc);
out:
    cJSON_Delete(g);
    elm_model_free(m);
    elm_model_free(dm);
}

/* Upper tail of the chi-square distribution with k degrees of freedom at x: the regularized
 * upper incomplete gamma Q(k/2, x/2) (Numerical Recipes, 3rd ed., 6.2: series below a+1,
 * Lentz's continued fraction above). */
static double chi2_sf(double x, int k) {
    const double a = k / 2.0, z = x / 2.0;
    if (z <= 0) return 1;
    const double lg = lgamma(a);
    if (z < a + 1) {
        double sum = 1 / a, term = sum;
        for (int n = 1; n < 1000; n++) {
            term *= z / (a + n);
            sum += term;
            if (term < sum * 1e-15) break;
        }
        return 1 - sum * exp(-z + a * log(z) - lg);
    }
    double b = z + 1 - a, cc = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        const double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        d = fabs(d) < 1e-300 ? 1e-300 : d;
        cc = b + an / cc;
        cc = fabs(cc) < 1e-300 ? 1e-300 : cc;
        d = 1 / d;
        const double del = d * cc;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return exp(-z + a * log(z) - lg) * h;
}

/* Goodness of fit of counts [V] (n draws) to probabilities p [V]: categories expected >= 5, the
 * rest pooled. Returns the p-value. */
static double chi2_fit(const int *counts, const float *p, int V, int n, int *df) {
    double x = 0, rest_o = 0, rest_e = 0;
    int k = 0;
    for (int i = 0; i < V; i++) {
        const double e = (double)n * p[i];
        if (e >= 5) {
            x += (counts[i] - e) * (counts[i] - e) / e;
            k++;
        } else {
            rest_o += counts[i];
            rest_e += e;
        }
    }
    if (rest_e >= 1e-9) {
        x += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
        k++;
    }
    *df = k - 1;
    return chi2_sf(x, k - 1);
}

/* Two samples of equal size: sum of (a-b)^2/(a+b) over categories with a+b >= 10, the rest
 * pooled; df = categories - 1. */
static double chi2_two_sample(const int *a, const int *b, int V, int *df) {
    double x = 0;
    int k = 0, ra = 0, rb = 0;
    for (int i = 0; i < V; i++) {
        if (a[i] + b[i] >= 10) {
            x += (double)(a[i] - b[i]) * (a[i] - b[i]) / (a[i] + b[i]);
            k++;
        } else {
            ra += a[i];
            rb += b[i];
        }
    }
    if (ra + rb > 0) {
        x += (double)(ra - rb) * (ra - rb) / (ra + rb);
        k++;
    }
    *df = k - 1;
    return chi2_sf(x, k - 1);
}

#define SEEDS 2000

static int stop_at_first(const char *text, size_t len, int32_t id, void *user) {
    (void)text;
    (void)len;
    (void)user;
    return id >= 0;
}

static void first_token_distribution(void) {
    elm_model *m = load(F32), *dm = load(Q4);
    if (!m || !dm) goto out;
    const int V = m->hp.n_vocab;
    elm_context *c = context(m, 64), *dc = context(dm, 64);
    const char *text = "Once upon a time, there was a little";
    int32_t prompt[32];
    elm_error err;
    const int np = (int)elm_tokenize(&m->vocab, text, strlen(text), true, prompt, 32, &err);
    elm_gen_params gp = {.n_predict = 1, .ignore_eos = true, .sampling = elm_sampler_defaults()};
    gp.sampling.temp = 1.0f;
    gp.sampling.top_k = 0;
    gp.sampling.top_p = 1.0f;
    gp.sampling.min_p = 0;
    const elm_spec_params sp = {.draft = dc, .draft_max = 4};

    /* the exact distributions after the prompt: target p, draft q */
    float *logits = malloc(sizeof(float) * V), *p = malloc(sizeof(float) * V);
    float *q = malloc(sizeof(float) * V);
    int *spec = calloc(V, sizeof(int)), *plain = calloc(V, sizeof(int));
    elm_sampler *s = elm_sampler_new(&gp.sampling, V);
    CHECK(elm_forward(c, prompt, np, logits, false, &err) == ELM_OK, "%s", err.msg);
    elm_sampler_probs(s, logits, prompt, np, p);
    CHECK(elm_forward(dc, prompt, np, logits, false, &err) == ELM_OK, "%s", err.msg);
    elm_sampler_probs(s, logits, prompt, np, q);

    /* the caches hold the prompt but its last token; each draw starts from there */
    elm_context_truncate(c, np - 1, NULL);
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        gp.sampling.seed = seed;
        int32_t id = -1, n_out = 0;
        elm_gen_stats st;
        /* room for a whole draft after the first token, so that the first comes out of a
         * verified draft; the callback stops there */
        gp.n_predict = sp.draft_max + 1;
        elm_context_truncate(c, np - 1, NULL);
        CHECK(elm_generate_speculative(c, prompt + np - 1, 1, &gp, &sp, stop_at_first, NULL, &id,
                                       1, &n_out, &st, NULL, &err) == ELM_OK && n_out == 1,
              "spec draw: %s", err.msg);
        if (id >= 0 && id < V) spec[id]++;
        gp.n_predict = 1;
        elm_context_truncate(c, np - 1, NULL);
        CHECK(elm_generate(c, prompt + np - 1, 1, &gp, NULL, NULL, &id, 1, &n_out, &st, &err) ==
                  ELM_OK,
              "plain draw: %s", err.msg);
        if (id >= 0 && id < V) plain[id]++;
    }
    int df;
    const double p_two = chi2_two_sample(spec, plain, V, &df);
    CHECK(p_two > 0.001, "spec vs plain first token: chi-square p = %.3g (df %d)", p_two, df);
    printf("first token, %d seeds: spec vs plain p = %.3f (df %d)", SEEDS, p_two, df);
    const double p_fit = chi2_fit(spec, p, V, SEEDS, &df);
    CHECK(p_fit > 0.001, "spec vs exact target distribution: p = %.3g (df %d)", p_fit, df);
    printf(", spec vs exact p = %.3f (df %d)", p_fit, df);
    /* control: the same test tells the draft's distribution apart from what was drawn */
    const double p_draft = chi2_fit(spec, q, V, SEEDS, &df);
    CHECK(p_draft < 0.001, "the test cannot tell the draft's distribution apart: p = %.3g", p_draft);
    printf(", spec vs draft's own q p = %.3g\n", p_draft);

    elm_sampler_free(s);
    free(logits);
    free(p);
    free(q);
    free(spec);
    free(plain);
    elm_context_free(c);
    elm_context_free(dc);
out:
    elm_model_free(m);
    elm_model_free(dm);
}

static void bad_args(void) {
    elm_model *m = load(F32);
    if (!m) return;
    elm_context *c = context(m, 32);
    elm_gen_params gp = {.n_predict = 4, .sampling = elm_sampler_defaults()};
    const elm_spec_params sp = {.draft = c, .draft_max = 0};
    int32_t prompt[] = {1, 403}, n_out;
    elm_gen_stats st;
    elm_error err;
    CHECK(elm_generate_speculative(c, prompt, 2, &gp, &sp, NULL, NULL, NULL, 0, &n_out, &st, NULL,
                                   &err) == ELM_ERR_ARG,
          "draft_max 0 accepted");
    CHECK(elm_context_truncate(c, 5, &err) == ELM_ERR_ARG, "truncate past the end accepted");
    elm_context_free(c);
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    lookup_unit();
    golden_greedy();
    first_token_distribution();
    bad_args();
    return check_done();
}
