/* Header-only KL-divergence harness for the quantizer tests (test_gptq.c, test_awq.c): the F32
 * model's log-probabilities at every position llama-perplexity scores (elm_eval_chunks), kept in
 * memory, then each quantized file's mean KLD, top-1 agreement and perplexity against them, with
 * eval.h's per-position statistics. Static functions: each test program is one translation unit.
 *
 * Sizes: the release build evaluates the whole of text/valid.txt at n_ctx 256 (the acceptance
 * setting); sanitizer builds shrink evaluation and calibration (QE_SMALL). */
#ifndef EDGELM_TESTS_QUANT_EVAL_H
#define EDGELM_TESTS_QUANT_EVAL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "core/fileio.h"
#include "model/builder.h"
/* the scratch-directory helpers; not every test here copies fixture files */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tmpfiles.h"
#pragma GCC diagnostic pop
#include "edgelm/eval.h"
#include "edgelm/perplexity.h"
#include "edgelm/quant.h"

#if defined(__SANITIZE_ADDRESS__)
#define QE_SMALL 1
#define QE_EVAL_CHUNKS 3      /* chunks of valid.txt evaluated */
#define QE_CALIB_SAMPLES 8    /* calibration samples */
#define QE_CALIB_SEQ 48       /* tokens per calibration sample */
#else
#define QE_SMALL 0
#define QE_EVAL_CHUNKS 0      /* all */
#define QE_CALIB_SAMPLES 0    /* the whole of calib.txt */
#define QE_CALIB_SEQ 128
#endif
#define QE_N_CTX 256

typedef struct qe_base {
    int32_t *ids;
    int64_t n_ids;
    int32_t n_vocab;
    float *lp;          /* [n_pos, n_vocab] log-probs of the F32 model */
    int64_t n_pos, cap;
    elm_ppl_result ppl;
} qe_base;

static const elm_ppl_params qe_params = {.n_ctx = QE_N_CTX, .n_threads = 2};

static void qe_on_base(const float *logits, int32_t n_vocab, int32_t next, void *user) {
    qe_base *b = user;
    (void)next;
    if (b->n_pos < b->cap) elm_log_softmax_f32(logits, n_vocab, b->lp + b->n_pos++ * n_vocab);
}

/* The F32 baseline on text/valid.txt (the first QE_EVAL_CHUNKS chunks in small builds). */
static bool qe_base_init(qe_base *b, const elm_model *f32) {
    memset(b, 0, sizeof *b);
    size_t len;
    char *text;
    elm_error err;
    const char *path = fixture("stories260K/text/valid.txt");
    if (elm_read_file(path, 1 << 24, &text, &len, &err) != ELM_OK ||
        elm_ppl_tokenize(f32, text, len, &b->ids, &b->n_ids, &err) != ELM_OK) {
        CHECK(0, "cannot read and tokenize valid.txt: %s", err.msg);
        free(text);
        return false;
    }
    free(text);
    if (QE_EVAL_CHUNKS > 0 && b->n_ids > (int64_t)QE_EVAL_CHUNKS * QE_N_CTX)
        b->n_ids = (int64_t)QE_EVAL_CHUNKS * QE_N_CTX;
    b->n_vocab = f32->hp.n_vocab;
    b->cap = b->n_ids / QE_N_CTX * (QE_N_CTX - QE_N_CTX / 2 - 1);
    b->lp = malloc(sizeof(float) * (size_t)b->cap * (size_t)b->n_vocab);
    elm_status st = b->lp ? elm_eval_chunks(f32, b->ids, b->n_ids, &qe_params, qe_on_base, NULL, b,
                                            &b->ppl, &err)
                          : ELM_ERR_NOMEM;
    CHECK(st == ELM_OK && b->n_pos == b->cap, "baseline evaluation: %s", err.msg);
    return st == ELM_OK;
}

static void qe_base_free(qe_base *b) {
    free(b->ids);
    free(b->lp);
}

typedef struct qe_cmp {
    const qe_base *b;
    elm_kld_acc *acc;
    float *q_lp;
    int64_t pos;
} qe_cmp;

static void qe_on_quant(const float *logits, int32_t n_vocab, int32_t next, void *user) {
    qe_cmp *c = user;
    elm_log_softmax_f32(logits, n_vocab, c->q_lp);
    elm_kld_acc_add(c->acc, c->b->lp + c->pos++ * n_vocab, c->q_lp, n_vocab, next);
}

/* KLD statistics and perplexity of the model file at path against the baseline. */
static bool qe_compare(const qe_base *b, const char *path, elm_kld_stats *kld, elm_ppl_result *ppl) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load %s: %s", path, err.msg);
        return false;
    }
    qe_cmp c = {b, elm_kld_acc_new(b->cap), malloc(sizeof(float) * (size_t)b->n_vocab), 0};
    elm_status st = c.acc && c.q_lp ? elm_eval_chunks(m, b->ids, b->n_ids, &qe_params, qe_on_quant,
                                                      NULL, &c, ppl, &err)
                                    : ELM_ERR_NOMEM;
    CHECK(st == ELM_OK && c.pos == b->cap, "evaluate %s: %s", path, err.msg);
    if (st == ELM_OK) elm_kld_acc_finish(c.acc, kld);
    elm_kld_acc_free(c.acc);
    free(c.q_lp);
    elm_model_free(m);
    return st == ELM_OK;
}

/* The KLD bound of `key` ("gptq q4_0", ...) from tests/data/quant_kld.json: its float64-era figure
 * plus the allowed margin; a negative value (and a failed check) when the file lacks it. */
static double qe_kld_bound(const char *key) {
    /* beside this header, wherever the test runs from */
    char path[4096];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*sdata/quant_kld.json", slash ? (int)(slash - __FILE__ + 1) : 0,
             __FILE__);
    cJSON *j = check_load_json(path);
    const cJSON *m = cJSON_GetObjectItem(j, "margin"),
                *v = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "measured"), key);
    const double bound = cJSON_IsNumber(m) && cJSON_IsNumber(v) ? v->valuedouble + m->valuedouble : -1;
    CHECK(bound >= 0, "tests/data/quant_kld.json: no figure for '%s'", key);
    cJSON_Delete(j);
    return bound;
}

/* The calibration sequences of the tests: calib.txt, whole in release builds. */
static bool qe_calib(const elm_model *m, elm_calib_set *cs) {
    elm_error err;
    elm_status st = elm_calib_load(&m->vocab, fixture("stories260K/text/calib.txt"), QE_CALIB_SEQ,
                                   QE_CALIB_SAMPLES, cs, &err);
    CHECK(st == ELM_OK, "calibration: %s", err.msg);
    return st == ELM_OK;
}

/* Gives tensor `name` of m (an F32 model) a writable copy of its data, owned by m, and returns it:
 * the robustness tests plant zeros, NaN and infinities in it. */
static inline float *qe_writable(elm_model *m, const char *name) {
    elm_tensor *t = elm_model_find(m, name);
    elm_error err;
    float *buf = t && t->type == ELM_TYPE_F32 ? malloc(t->nbytes) : NULL;
    if (!buf || elm_model_own_buffer(m, buf, &err) != ELM_OK) {
        CHECK(0, "no writable copy of '%s'", name);
        exit(check_done());
    }
    memcpy(buf, t->data, t->nbytes);
    t->data = buf;
    return buf;
}

#endif
