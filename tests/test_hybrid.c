/* The recurrent layer kinds (model/layer_kind.h) of every hybrid family, on its synth --tiny
 * model: a prompt fed at once, token by token and in chunks gives the same logits (the state is
 * carried right across calls); rolling back (elm_context_truncate) to before, inside and after a
 * multi-token batch, then feeding the same tokens again, gives them again (checkpoints and
 * replay); two sequences in one pass (elm_forward_seqs, n_seq 2) each give what they give alone;
 * a context shift is refused in one line. Then bad LFM2 files: a head_count_kv array too short,
 * a missing short-conv tensor, a kernel size that does not match the tensors; and bad Granite
 * 4.0-H files: a kernel size, state size, head or group count that does not match the tensors,
 * a missing A. */
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

/* Removes tensor `name` from m's list (a file written from m then lacks it). */
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
    elm_synth_tiny o = {.arch = "lfm2", .vocab_path = fixture("vocab/ggml-vocab-llama-bpe.gguf"),
                        .seed = 5};
    elm_model *m = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err)) {
        CHECK(false, "lfm2: synth: %s", err.msg);
        return;
    }
    const char *good = tmp_path(dir, "lfm2.gguf");
    CHECK(elm_gguf_write_model(m, good, &err) == ELM_OK, "write: %s", err.msg);
    size_t len = 0;
    const char *bad = tmp_path(dir, "short-array.gguf");
    unsigned char *bytes = file_copy(good, bad, SIZE_MAX, 0) ? file_read(bad, &len) : NULL;
    /* head_count_kv has one value per layer: 3; the file then says 4 layers */
    const char *key = "lfm2.block_count";
    unsigned char *at = bytes ? memmem(bytes, len, key, strlen(key)) : NULL;
    if (at) {
        const uint32_t four = 4;
        memcpy(at + strlen(key) + 4, &four, 4); /* after the value type (u32) */
        CHECK(file_write(bad, bytes, len), "write %s", bad);
        expect_load_error(bad, "has 3 values for 4 layers", "a head_count_kv array too short");
    }
    CHECK(at != NULL, "block_count not found in the file");
    free(bytes);

    /* a kernel of 4 taps said, 3 stored */
    m->hp.conv_l = 4;
    const char *taps = tmp_path(dir, "taps.gguf");
    CHECK(elm_gguf_write_model(m, taps, &err) == ELM_OK, "write: %s", err.msg);
    expect_load_error(taps, "blk.0.shortconv.conv.weight", "a kernel size not the tensors'");
    m->hp.conv_l = 3;

    /* no conv kernel in layer 2 */
    drop_tensor(m, "blk.2.shortconv.conv.weight");
    const char *missing = tmp_path(dir, "missing.gguf");
    CHECK(elm_gguf_write_model(m, missing, &err) == ELM_OK, "write: %s", err.msg);
    expect_load_error(missing, "missing tensor 'blk.2.shortconv.conv.weight'",
                      "a missing state tensor");
    elm_model_free(m);
}

/* Writes m with its hyper-parameter *field set to v (then back to what it was) to dir/name and
 * expects the load to fail naming `want`. */
static void expect_hparam_error(elm_model *m, int32_t *field, int32_t v, const char *dir,
                                const char *name, const char *want) {
    const int32_t was = *field;
    elm_error err;
    *field = v;
    const char *path = tmp_path(dir, name);
    CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK, "write: %s", err.msg);
    expect_load_error(path, want, name);
    *field = was;
}

/* Granite 4.0-H files whose Mamba-2 sizes do not match their tensors, or without a state
 * tensor. */
static void test_bad_granite(const char *dir) {
    elm_synth_tiny o = {.arch = "granitehybrid",
                        .vocab_path = fixture("vocab/ggml-vocab-llama-bpe.gguf"), .seed = 5};
    elm_model *m = NULL;
    elm_error err;
    if (elm_synth_tiny_model(&o, &m, NULL, &err)) {
        CHECK(false, "granitehybrid: synth: %s", err.msg);
        return;
    }
    elm_hparams *hp = &m->hp;
    /* a kernel of 3 taps said, 4 stored; a state of 32, 64 stored (in_proj's rows); 16 heads,
     * 8 stored (in_proj's rows); 3 groups, which do not divide the heads */
    expect_hparam_error(m, &hp->conv_l, 3, dir, "taps.gguf",
                        "tensor 'blk.0.ssm_conv1d.weight' has shape [384, 4], expected [384, 3]");
    expect_hparam_error(m, &hp->ssm_state, 32, dir, "state.gguf",
                        "tensor 'blk.0.ssm_in.weight' has shape [520, 64], expected [392, 64]");
    expect_hparam_error(m, &hp->ssm_heads, 16, dir, "heads.gguf",
                        "tensor 'blk.0.ssm_in.weight' has shape [520, 64], expected [528, 64]");
    expect_hparam_error(m, &hp->ssm_groups, 3, dir, "groups.gguf",
                        "the groups the heads");
    /* no A in layer 2 */
    drop_tensor(m, "blk.2.ssm_a");
    const char *missing = tmp_path(dir, "no-a.gguf");
    CHECK(elm_gguf_write_model(m, missing, &err) == ELM_OK, "write: %s", err.msg);
    expect_load_error(missing, "missing tensor 'blk.2.ssm_a'", "a missing state tensor");
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
    if (dir) tmp_dir_remove(dir);
    return check_done();
}
