/* The recurrent layer kinds (model/layer_kind.h) of every hybrid family, on its synth --tiny
 * model: a prompt fed at once, token by token and in chunks gives the same logits (the state is
 * carried right across calls); rolling back (elm_context_truncate) to before, inside and after a
 * multi-token batch, then feeding the same tokens again, gives them again (checkpoints and
 * replay); two sequences in one pass (elm_forward_seqs, n_seq 2) each give what they give alone;
 * a context shift is refused in one line. Then bad LFM2 files: a head_count_kv array too short,
 * a missing short-conv tensor, a kernel size that does not match the tensors; bad Granite 4.0-H
 * files: a kernel size, state size, head or group count that does not match the tensors, a
 * missing A; and Qwen3.5's (test_qwen35_files). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/model.h"
#include "edgelm/session.h"
#include "formats/gguf_write.h"
#include "model/arch.h"
#include "shapes/synth_tiny.h"
#include "tmpfiles.h"

enum { N_TOK = 24, CTX = 64 };

static const int32_t ids[N_TOK] = {1,   450, 7483, 310, 3444, 338,  263,  2217, 29892, 322,
                                   263, 1058, 471,  263, 2217, 1020, 1067, 310,  278,   3186,
                                   7483, 338, 450,  263};

static elm_context *context(const elm_model *m, int32_t n_batch, int32_t n_seq) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params p = {.n_ctx = CTX, .n_batch = n_batch, .n_threads = 2,
                                  .n_seq = n_seq};
    CHECK(elm_context_new(m, &p, &c, &err) == ELM_OK, "context: %s", err.msg);
    return c;
}

/* Largest |a - b| over n values. */
static float max_diff(const float *a, const float *b, size_t n) {
    float d = 0;
    for (size_t i = 0; i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
    return d;
}

/* Feeds ids[from, to) in calls of `step` tokens, the logits of each into out rows [from, to). */
static bool feed(elm_context *c, int from, int to, int step, float *out, int32_t V) {
    elm_error err;
    for (int t = from; t < to; t += step) {
        const int n = to - t < step ? to - t : step;
        if (elm_forward(c, ids + t, n, out + (size_t)t * V, true, &err)) {
            CHECK(false, "forward at %d: %s", t, err.msg);
            return false;
        }
    }
    return true;
}

static void test_family(const char *arch, const char *dir) {
    char rel[128];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", elm_synth_tiny_vocab(arch));
    elm_synth_tiny o = {.arch = arch, .vocab_path = fixture(rel), .seed = 5};
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK, "%s: synth: %s", arch, err.msg);
    if (!m) return;
    const int32_t V = m->hp.n_vocab;
    const size_t n_all = (size_t)N_TOK * V;
    float *ref = calloc(n_all, sizeof *ref), *got = calloc(n_all, sizeof *got);
    elm_context *c = context(m, 32, 0);
    if (!ref || !got || !c || !feed(c, 0, N_TOK, N_TOK, ref, V)) goto done;

    /* token by token, and in chunks of 5 (a conv kernel, not a multiple of anything) */
    const int steps[] = {1, 5};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        elm_context_reset(c);
        memset(got, 0, n_all * sizeof *got);
        if (feed(c, 0, N_TOK, steps[i], got, V))
            CHECK(max_diff(ref, got, n_all) < 1e-3f, "%s: %d at a time: max |delta| %g", arch,
                  steps[i], max_diff(ref, got, n_all));
    }

    /* rollbacks: inside a multi-token batch (as a rejected draft), to its start, to 0 */
    const struct { int batch_to, back_to; } rb[] = {{18, 14}, {18, 12}, {20, 3}, {N_TOK, 0}};
    for (size_t i = 0; i < sizeof rb / sizeof rb[0]; i++) {
        elm_context_reset(c);
        if (!feed(c, 0, 12, 4, got, V) || !feed(c, 12, rb[i].batch_to, 8, got, V)) break;
        const elm_status st = elm_context_truncate(c, rb[i].back_to, &err);
        CHECK(st == ELM_OK && elm_context_n_past(c) == rb[i].back_to, "%s: truncate to %d: %s",
              arch, rb[i].back_to, st ? err.msg : "n_past");
        memset(got, 0, n_all * sizeof *got);
        if (!st && feed(c, rb[i].back_to, N_TOK, 3, got, V)) {
            const size_t off = (size_t)rb[i].back_to * V;
            CHECK(max_diff(ref + off, got + off, n_all - off) < 1e-3f,
                  "%s: after a rollback to %d: max |delta| %g", arch, rb[i].back_to,
                  max_diff(ref + off, got + off, n_all - off));
        }
    }

    /* a session saved at 13 tokens, loaded into a new context, goes on from there */
    const char *sess = tmp_path(dir, "state.session");
    elm_context_reset(c);
    elm_context *loaded = context(m, 32, 0);
    if (loaded && feed(c, 0, 13, 13, got, V)) {
        elm_status st = elm_session_save(c, sess, &err);
        if (!st) st = elm_session_load(loaded, sess, &err);
        CHECK(st == ELM_OK && elm_context_n_past(loaded) == 13, "%s: session: %s", arch,
              st ? err.msg : "n_past");
        memset(got, 0, n_all * sizeof *got);
        if (!st && feed(loaded, 13, N_TOK, 4, got, V))
            CHECK(max_diff(ref + 13 * (size_t)V, got + 13 * (size_t)V, n_all - 13 * (size_t)V) <
                      1e-3f,
                  "%s: after a session load", arch);
    }
    elm_context_free(loaded);

    CHECK(elm_context_shift(c, 1, 4, &err) == ELM_ERR_UNSUPPORTED &&
              strstr(err.msg, "recurrent"),
          "%s: context shift: %s", arch, err.msg);

    /* two sequences, rows [0, 32) and [32, 64): A is ids, B is ids from 7 on */
    elm_context *s = context(m, 16, 2);
    int fed_a = 0, fed_b = 0;
    bool ok = s != NULL;
    float *lg = malloc(2 * (size_t)V * sizeof *lg);
    const float *b_last = NULL; /* B's logits of the last pass that had B tokens */
    while (ok && lg && (fed_a < N_TOK || fed_b < N_TOK - 7)) {
        int32_t tok[16], pos[16], row0[16], out[2], n = 0, n_out = 0;
        for (int k = 0; k < 5 && fed_a + k < N_TOK; k++, n++)
            tok[n] = ids[fed_a + k], pos[n] = fed_a + k, row0[n] = 0;
        if (n) out[n_out++] = n - 1;
        const int n_a = n;
        for (int k = 0; k < 3 && fed_b + k < N_TOK - 7; k++, n++)
            tok[n] = ids[7 + fed_b + k], pos[n] = fed_b + k, row0[n] = 32;
        if (n > n_a) out[n_out++] = n - 1;
        if (n > n_a) b_last = lg + (size_t)(n_out - 1) * V;
        ok = elm_forward_seqs(s, tok, pos, row0, n, out, n_out, lg, &err) == ELM_OK;
        CHECK(ok, "%s: two sequences: %s", arch, err.msg);
        fed_a += n_a;
        fed_b += n - n_a;
        if (ok && n_a)
            CHECK(max_diff(lg, ref + (size_t)(fed_a - 1) * V, (size_t)V) < 1e-3f,
                  "%s: sequence A at %d", arch, fed_a - 1);
    }
    /* B alone, from a fresh context, ends as it did beside A */
    float *b_alone = calloc((size_t)(N_TOK - 7) * V, sizeof *b_alone);
    elm_context *one = context(m, 32, 0);
    if (ok && one && b_alone && elm_forward(one, ids + 7, N_TOK - 7, b_alone, true, &err) == ELM_OK)
        CHECK(b_last && max_diff(b_last, b_alone + (size_t)(N_TOK - 8) * V, (size_t)V) < 1e-3f,
              "%s: sequence B beside A", arch);
    /* a sequence cannot skip ahead of its state */
    int32_t tok = ids[0], pos = 30, row0 = 0;
    CHECK(s && elm_forward_seqs(s, &tok, &pos, &row0, 1, NULL, 0, NULL, &err) == ELM_ERR_ARG &&
              strstr(err.msg, "recurrent state"),
          "%s: a gap in a sequence: %s", arch, err.msg);
    elm_context_free(one);
    elm_context_free(s);
    free(b_alone);
    free(lg);
done:
    elm_context_free(c);
    free(ref);
    free(got);
    elm_model_free(m);
}

/* Loading path must fail with ELM_ERR_FORMAT and a message holding `want`. */
static void expect_load_error(const char *path, const char *want, const char *what) {
    elm_model *m = NULL;
    elm_error err;
    const elm_status st = elm_model_load(path, NULL, &m, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, want) && strstr(err.msg, path),
          "%s: status %d: %s", what, st, st ? err.msg : "loaded");
    elm_model_free(m);
}

/* The tiny model of a hybrid family, or NULL (a failed check). */
static elm_model *tiny(const char *arch) {
    char rel[128];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", elm_synth_tiny_vocab(arch));
    elm_synth_tiny o = {.arch = arch, .vocab_path = fixture(rel), .seed = 5};
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK, "%s: synth: %s", arch, err.msg);
    return m;
}

/* m written as dir/name must fail to load with `want` (what: the case). */
static void expect_written_error(const elm_model *m, const char *dir, const char *name,
                                 const char *want, const char *what) {
    elm_error err;
    const char *path = tmp_path(dir, name);
    CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK, "write: %s", err.msg);
    expect_load_error(path, want, what);
}

/* A copy named `name` of m written to dir, with key's u32 value (after its type) set to v, must
 * fail to load with `want`. */
static void expect_patched_error(const elm_model *m, const char *dir, const char *name,
                                 const char *key, uint32_t v, const char *want, const char *what) {
    elm_error err;
    const char *good = tmp_path(dir, "good.gguf"), *path = tmp_path(dir, name);
    CHECK(elm_gguf_write_model(m, good, &err) == ELM_OK, "write: %s", err.msg);
    size_t len = 0;
    unsigned char *bytes = file_copy(good, path, SIZE_MAX, 0) ? file_read(path, &len) : NULL;
    unsigned char *at = bytes ? memmem(bytes, len, key, strlen(key)) : NULL;
    CHECK(at != NULL, "%s not found in the file", key);
    if (at) {
        memcpy(at + strlen(key) + 4, &v, 4);
        CHECK(file_write(path, bytes, len), "write %s", path);
        expect_load_error(path, want, what);
    }
    free(bytes);
}

/* Drops tensor `name` from m. */
static void drop_tensor(elm_model *m, const char *name) {
    for (int32_t i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) {
            memmove(&m->tensors[i], &m->tensors[i + 1],
                    (size_t)(m->n_tensors - i - 1) * sizeof *m->tensors);
            m->n_tensors--;
            return;
        }
    CHECK(false, "no tensor %s", name);
}

static void test_bad_lfm2(const char *dir) {
    elm_model *m = tiny("lfm2");
    if (!m) return;
    /* head_count_kv has one value per layer: 3; the file then says 4 layers */
    expect_patched_error(m, dir, "short-array.gguf", "lfm2.block_count", 4,
                         "has 3 values for 4 layers", "a head_count_kv array too short");
    /* a kernel of 4 taps said, 3 stored */
    m->hp.conv_l = 4;
    expect_written_error(m, dir, "taps.gguf", "blk.0.shortconv.conv.weight",
                         "a kernel size not the tensors'");
    m->hp.conv_l = 3;
    /* no conv kernel in layer 2 */
    drop_tensor(m, "blk.2.shortconv.conv.weight");
    expect_written_error(m, dir, "missing.gguf", "missing tensor 'blk.2.shortconv.conv.weight'",
                         "a missing state tensor");
    elm_model_free(m);
}

/* A hyper-parameter set to a value the tensors do not fit (and a second one with it, when `also`
 * is set), for expect_hparam_errors. */
typedef struct {
    int32_t *field, value;
    int32_t *also, also_value;
    const char *want, *what; /* the error expected, and what the case is */
} bad_hparam;

/* For each case: m written with its bad values (then given back what it had) fails to load with
 * the error expected. */
static void expect_hparam_errors(elm_model *m, const char *dir, const bad_hparam *bad, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const int32_t keep = *bad[i].field, keep_also = bad[i].also ? *bad[i].also : 0;
        *bad[i].field = bad[i].value;
        if (bad[i].also) *bad[i].also = bad[i].also_value;
        expect_written_error(m, dir, "hparams.gguf", bad[i].want, bad[i].what);
        *bad[i].field = keep;
        if (bad[i].also) *bad[i].also = keep_also;
    }
}

/* Qwen3.5: its layer kinds as full_attention_interval, or per layer (attention.recurrent_layers)
 * beside an MTP block (nextn_predict_layers: loaded, not run); then bad files: the per-layer
 * flags too short, sizes of the Gated DeltaNet (heads, head size) not the tensors', sizes that do
 * not fit together, a missing state tensor. */
static void test_qwen35_files(const char *dir) {
    elm_model *m = tiny("qwen35");
    if (!m) return;
    elm_error err;
    const char *path = tmp_path(dir, "mtp.gguf");
    m->hp.n_nextn = 1; /* written as 5 blocks, its layer kinds as 5 flags */
    CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK, "write: %s", err.msg);
    elm_model *g = NULL;
    CHECK(elm_model_load(path, NULL, &g, &err) == ELM_OK, "load %s: %s", path, err.msg);
    CHECK(g && g->hp.n_layers == 4 && g->hp.n_nextn == 1 &&
              !memcmp(g->hp.recurrent, m->hp.recurrent, sizeof m->hp.recurrent) &&
              g->layers[0].kind == ELM_LAYER_DELTANET && g->layers[1].kind == ELM_LAYER_ATTENTION,
          "qwen35: an MTP block's file");
    elm_model_free(g);
    expect_patched_error(m, dir, "short-flags.gguf", "qwen35.block_count", 6,
                         "has 5 values for 6 layers", "attention.recurrent_layers too short");
    m->hp.n_nextn = 0;
    elm_hparams *hp = &m->hp;
    const bad_hparam bad[] = {
        {&hp->ssm_groups, 1, NULL, 0, "blk.0.attn_qkv.weight", "key heads not the tensors'"},
        {&hp->ssm_state, 8, &hp->ssm_inner, 4 * 8, "blk.0.attn_qkv.weight",
         "a head size not the tensors'"},
        {&hp->ssm_heads, 3, NULL, 0, "not a multiple of 2 key heads", "value heads by key heads"},
        {&hp->ssm_inner, 48, NULL, 0, "value width 48 (ssm.inner_size) is not 4 heads",
         "a value width not heads × head size"},
    };
    expect_hparam_errors(m, dir, bad, sizeof bad / sizeof bad[0]);
    drop_tensor(m, "blk.2.ssm_a");
    expect_written_error(m, dir, "missing.gguf", "missing tensor 'blk.2.ssm_a'",
                         "a missing state tensor");
    elm_model_free(m);
}

static void test_bad_granite(const char *dir) {
    elm_model *m = tiny("granitehybrid");
    if (!m) return;
    elm_hparams *hp = &m->hp;
    /* a kernel of 3 taps said, 4 stored; a state of 32, 64 stored (in_proj's rows); 16 heads,
     * 8 stored (in_proj's rows); 3 groups, which do not divide the heads */
    const bad_hparam bad[] = {
        {&hp->conv_l, 3, NULL, 0,
         "tensor 'blk.0.ssm_conv1d.weight' has shape [384, 4], expected [384, 3]", "taps"},
        {&hp->ssm_state, 32, NULL, 0,
         "tensor 'blk.0.ssm_in.weight' has shape [520, 64], expected [392, 64]", "state size"},
        {&hp->ssm_heads, 16, NULL, 0,
         "tensor 'blk.0.ssm_in.weight' has shape [520, 64], expected [528, 64]", "heads"},
        {&hp->ssm_groups, 3, NULL, 0, "the groups the heads", "groups"},
    };
    expect_hparam_errors(m, dir, bad, sizeof bad / sizeof bad[0]);
    /* no A in layer 2 */
    drop_tensor(m, "blk.2.ssm_a");
    expect_written_error(m, dir, "no-a.gguf", "missing tensor 'blk.2.ssm_a'",
                         "a missing state tensor");
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    char *dir = tmp_dir_new();
    CHECK(dir != NULL, "mkdtemp");
    char names[512];
    snprintf(names, sizeof names, "%s", elm_arch_names());
    int n_hybrid = 0;
    for (char *save, *name = strtok_r(names, ", ", &save); name; name = strtok_r(NULL, ", ", &save))
        if (elm_arch_find(name)->recurrent != ELM_LAYER_ATTENTION) {
            if (dir) test_family(name, dir);
            n_hybrid++;
        }
    CHECK(n_hybrid >= 1, "no hybrid family in the table");
    if (dir) test_bad_lfm2(dir);
    if (dir) test_bad_granite(dir);
    if (dir) test_qwen35_files(dir);
    if (dir) tmp_dir_remove(dir);
    return check_done();
}
