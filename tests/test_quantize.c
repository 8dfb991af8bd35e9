/* quantize_pure and the GGUF writer: quantizing the stories260K F32 model to q4_0, q8_0 and
 * q4_1 must write, tensor for tensor, the bytes llama-quantize --pure wrote (ffn_down falls back to
 * F16 there); the output reloads with the same hyper-parameters and vocab; the other types reload
 * within their RTN error; a failing write leaves no file. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "quant_pure.h"
#include "edgelm/model.h"
#include "edgelm/quant.h"
#include "formats/gguf_write.h"

static char *tmpdir;

typedef struct seen {
    int progress_calls, last_done, last_total;
    int warnings, ffn_down_warnings;
} seen;

static int on_progress(int32_t done, int32_t total, const char *tensor, void *user) {
    seen *s = user;
    s->progress_calls++;
    s->last_done = done;
    s->last_total = total;
    (void)tensor;
    return 0;
}

static void on_warn(const char *msg, void *user) {
    seen *s = user;
    s->warnings++;
    s->ffn_down_warnings += strstr(msg, "ffn_down") != NULL;
}

static int files_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void check_same_vocab(const elm_vocab *a, const elm_vocab *b, const char *what) {
    CHECK(a->n_tokens == b->n_tokens, "%s: %d tokens vs %d", what, a->n_tokens, b->n_tokens);
    if (a->n_tokens != b->n_tokens) return;
    int diff = 0;
    for (int32_t i = 0; i < a->n_tokens; i++) {
        diff += a->piece_len[i] != b->piece_len[i] || a->types[i] != b->types[i] ||
                memcmp(a->pieces[i], b->pieces[i], a->piece_len[i]) != 0;
        diff += (a->scores != NULL) != (b->scores != NULL) ||
                (a->scores && a->scores[i] != b->scores[i]);
    }
    CHECK(diff == 0, "%s: %d tokens differ", what, diff);
    CHECK(!strcmp(a->model, b->model) && a->bos_id == b->bos_id && a->eos_id == b->eos_id &&
              a->unk_id == b->unk_id && a->pad_id == b->pad_id && a->add_bos == b->add_bos &&
              a->add_eos == b->add_eos && a->add_space_prefix == b->add_space_prefix,
          "%s: special ids or flags differ", what);
}

static void check_same_hparams(const elm_hparams *a, const elm_hparams *b, const char *what) {
    CHECK(!strcmp(a->arch, b->arch) && a->dim == b->dim && a->n_layers == b->n_layers &&
              a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads &&
              a->ffn_dim == b->ffn_dim &&
              a->n_vocab == b->n_vocab && a->n_ctx_train == b->n_ctx_train &&
              a->rope_dim == b->rope_dim && a->rms_eps == b->rms_eps &&
              a->rope_theta == b->rope_theta,
          "%s: hyper-parameters differ", what);
}

/* Every tensor of the reference file is in ours with the same type, shape and bytes. */
static void compare_with_reference(const elm_model *ours, const char *ref_rel, const char *what) {
    elm_model *ref = NULL;
    elm_error err;
    if (elm_model_load(fixture(ref_rel), NULL, &ref, &err) != ELM_OK) {
        CHECK(0, "load %s: %s", ref_rel, err.msg);
        return;
    }
    CHECK(ours->n_tensors == ref->n_tensors, "%s: %d tensors, reference has %d", what,
          ours->n_tensors, ref->n_tensors);
    int bad = 0;
    for (int32_t i = 0; i < ref->n_tensors; i++) {
        const elm_tensor *r = &ref->tensors[i], *t = elm_model_find(ours, r->name);
        bool same = t && t->type == r->type && t->n_dims == r->n_dims &&
                    !memcmp(t->ne, r->ne, sizeof t->ne) && t->nbytes == r->nbytes &&
                    !memcmp(t->data, r->data, r->nbytes);
        if (!same && bad++ < 3)
            CHECK(0, "%s: tensor '%s' differs from llama-quantize's (type %d vs %d)", what, r->name,
                  t ? (int)t->type : -1, (int)r->type);
    }
    CHECK(bad == 0, "%s: %d tensors differ from the reference", what, bad);
    CHECK(ours->file_type == ref->file_type, "%s: file_type %u, reference %u", what,
          ours->file_type, ref->file_type);
    elm_model_free(ref);
}

static void test_against_llamacpp(const elm_model *in) {
    const struct { elm_type type; const char *name; } cases[] = {
        {ELM_TYPE_Q4_0, "q4_0"}, {ELM_TYPE_Q8_0, "q8_0"}, {ELM_TYPE_Q4_1, "q4_1"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char out[512], ref[128];
        snprintf(out, sizeof out, "%s/%s.gguf", tmpdir, cases[c].name);
        snprintf(ref, sizeof ref, "stories260K/reference-quants/llamacpp-%s-pure.gguf",
                 cases[c].name);
        seen s = {0};
        elm_quantize_callbacks cb = {.progress = on_progress, .warn = on_warn, .user = &s};
        elm_quantize_summary sum;
        elm_error err;
        elm_status st = quantize_pure(in, cases[c].type, out, &cb, &sum, &err);
        CHECK(st == ELM_OK, "quantize %s: %s", cases[c].name, err.msg);
        if (st) continue;
        CHECK(s.progress_calls == 48 && s.last_done == 48 && s.last_total == 48,
              "%s: progress %d calls, last %d/%d", cases[c].name, s.progress_calls, s.last_done,
              s.last_total);
        CHECK(s.warnings == 5 && s.ffn_down_warnings == 5, "%s: %d warnings (%d ffn_down)",
              cases[c].name, s.warnings, s.ffn_down_warnings);
        CHECK(sum.n_tensors == 48 && sum.n_fallback == 5, "%s: summary %d tensors, %d fallbacks",
              cases[c].name, sum.n_tensors, sum.n_fallback);
        CHECK(sum.bytes_in == elm_model_bytes(in) && sum.bytes_out < sum.bytes_in &&
                  fabs(sum.ratio - (double)sum.bytes_in / (double)sum.bytes_out) < 1e-9,
              "%s: summary bytes %llu -> %llu, ratio %g", cases[c].name,
              (unsigned long long)sum.bytes_in, (unsigned long long)sum.bytes_out, sum.ratio);
        elm_model *q = NULL;
        st = elm_model_load(out, NULL, &q, &err);
        CHECK(st == ELM_OK, "reload %s: %s", out, err.msg);
        if (st) continue;
        compare_with_reference(q, ref, cases[c].name);
        CHECK(sum.bytes_out == elm_model_bytes(q), "%s: summary says %llu bytes out, file holds %zu",
              cases[c].name, (unsigned long long)sum.bytes_out, elm_model_bytes(q));
        double bpw = 8.0 * (double)elm_model_bytes(q) / (double)elm_model_params(q);
        CHECK(fabs(sum.bits_per_weight - bpw) < 1e-9,
              "%s: bits per weight %g", cases[c].name, sum.bits_per_weight);
        check_same_hparams(&in->hp, &q->hp, cases[c].name);
        check_same_vocab(&in->vocab, &q->vocab, cases[c].name);
        elm_model_free(q);
        unlink(out);
    }
}

/* Types without a llama.cpp reference here: reload and decode within a loose RTN tolerance. */
static void test_other_types(const elm_model *in) {
    const struct { elm_type type; uint32_t ftype; double tol; } cases[] = {
        {ELM_TYPE_Q5_0, 8, 0.08}, {ELM_TYPE_Q5_1, 9, 0.05}, {ELM_TYPE_F16, 1, 1e-3},
        {ELM_TYPE_BF16, 32, 8e-3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *name = elm_type_get(cases[c].type)->name;
        char out[512];
        snprintf(out, sizeof out, "%s/%s.gguf", tmpdir, name);
        elm_quantize_summary sum;
        elm_error err;
        elm_model *q = NULL;
        elm_status st = quantize_pure(in, cases[c].type, out, NULL, &sum, &err);
        if (!st) st = elm_model_load(out, NULL, &q, &err);
        CHECK(st == ELM_OK, "%s: %s", name, err.msg);
        if (st) continue;
        bool float_type = elm_type_get(cases[c].type)->block_size == 1;
        CHECK(q->file_type == cases[c].ftype && sum.n_fallback == (float_type ? 0 : 5),
              "%s: file_type %u, %d fallbacks", name, q->file_type, sum.n_fallback);
        int bad = 0;
        for (int32_t i = 0; i < q->n_tensors; i++) {
            const elm_tensor *t = &q->tensors[i], *src = elm_model_find(in, t->name);
            elm_type want = t->n_dims == 1 ? ELM_TYPE_F32
                            : (float_type || t->ne[0] % 32 == 0) ? cases[c].type : ELM_TYPE_F16;
            if (t->type != want) bad++;
            int64_t n = t->ne[0] * t->ne[1];
            float *a = malloc((size_t)n * 4);
            elm_type_get(t->type)->to_float(t->data, a, n);
            const float *x = src->data;
            double err2 = 0, ref2 = 0;
            for (int64_t j = 0; j < n; j++) {
                err2 += (a[j] - x[j]) * (double)(a[j] - x[j]);
                ref2 += x[j] * (double)x[j];
            }
            if (!(sqrt(err2 / ref2) <= cases[c].tol)) bad++;
            free(a);
        }
        CHECK(bad == 0, "%s: %d tensors with the wrong type or too much error", name, bad);
        check_same_vocab(&in->vocab, &q->vocab, name);
        elm_model_free(q);
        unlink(out);
    }
}

/* A GGUF written from a model as it is reads back byte for byte. */
static void test_roundtrip(const elm_model *in) {
    char out[512];
    snprintf(out, sizeof out, "%s/same.gguf", tmpdir);
    elm_error err;
    elm_model *r = NULL;
    elm_status st = elm_gguf_write_model(in, out, &err);
    if (!st) st = elm_model_load(out, NULL, &r, &err);
    CHECK(st == ELM_OK, "round trip: %s", err.msg);
    if (st) return;
    int bad = 0;
    for (int32_t i = 0; i < in->n_tensors; i++) {
        const elm_tensor *a = &in->tensors[i], *b = &r->tensors[i];
        bad += strcmp(a->name, b->name) || a->type != b->type || a->nbytes != b->nbytes ||
               memcmp(a->data, b->data, a->nbytes) || ((uintptr_t)b->data % 32) != 0;
    }
    CHECK(r->n_tensors == in->n_tensors && bad == 0, "round trip: %d tensors differ", bad);
    CHECK(!strcmp(r->name, in->name), "round trip: name '%s'", r->name);
    check_same_hparams(&in->hp, &r->hp, "round trip");
    check_same_vocab(&in->vocab, &r->vocab, "round trip");
    elm_model_free(r);
    unlink(out);
}

static void test_failures(const elm_model *in) {
    char out[512];
    elm_error err;
    int before = files_in(tmpdir);

    snprintf(out, sizeof out, "%s/no-such-dir/out.gguf", tmpdir);
    elm_status st = quantize_pure(in, ELM_TYPE_Q4_0, out, NULL, NULL, &err);
    CHECK(st == ELM_ERR_IO && strstr(err.msg, out), "write into a missing folder: %d %s", st,
          err.msg);
    CHECK(access(out, F_OK) != 0, "a file was left at %s", out);

    snprintf(out, sizeof out, "%s/bad-type.gguf", tmpdir);
    st = quantize_pure(in, ELM_TYPE_COUNT, out, NULL, NULL, &err);
    CHECK(st == ELM_ERR_ARG, "unsupported type accepted: %d %s", st, err.msg);
    CHECK(access(out, F_OK) != 0, "a file was left at %s", out);

    /* failure half way through the tensor data (a producer that fails at tensor 3 frees the
     * writer): the partial temporary file is removed */
    snprintf(out, sizeof out, "%s/half.gguf", tmpdir);
    elm_gguf_writer *w = NULL;
    st = elm_gguf_begin_model(out, in, in->tensors, in->n_tensors, in->file_type, &w, &err);
    for (int32_t i = 0; i < 3 && !st; i++)
        st = elm_gguf_write_tensor(w, i, in->tensors[i].data, in->tensors[i].nbytes, &err);
    CHECK(st == ELM_OK, "begin and 3 tensors: %s", err.msg);
    /* the writer's own checks: tensors in table order, each its size, all before the end */
    if (!st) {
        const elm_tensor *t = &in->tensors[3];
        st = elm_gguf_write_tensor(w, 4, in->tensors[4].data, in->tensors[4].nbytes, &err);
        CHECK(st == ELM_ERR_ARG && strstr(err.msg, out) && strstr(err.msg, "out of order"),
              "tensor 4 before 3: %d %s", st, err.msg);
        st = elm_gguf_write_tensor(w, 3, t->data, t->nbytes - 1, &err);
        CHECK(st == ELM_ERR_ARG && strstr(err.msg, out) && strstr(err.msg, t->name),
              "tensor 3 a byte short: %d %s", st, err.msg);
        st = elm_gguf_end(w, NULL, &err);
        CHECK(st == ELM_ERR_ARG && strstr(err.msg, "3 of the"), "end after 3 tensors: %d %s", st,
              err.msg);
    }
    elm_gguf_writer_free(w);
    CHECK(access(out, F_OK) != 0, "a file was left at %s", out);

    /* a tensor whose rows are not whole blocks of its type: refused before anything is created */
    snprintf(out, sizeof out, "%s/rows.gguf", tmpdir);
    elm_tensor odd = in->tensors[0];
    odd.type = ELM_TYPE_Q4_0;
    odd.ne[0] = 33;
    st = elm_gguf_begin_model(out, in, &odd, 1, in->file_type, &w, &err);
    CHECK(st == ELM_ERR_ARG && !w && strstr(err.msg, out) && strstr(err.msg, odd.name),
          "rows of 33 as q4_0: %d %s", st, err.msg);
    CHECK(access(out, F_OK) != 0, "a file was left at %s", out);

    /* a directory in the way of the output: rename fails, nothing left behind */
    snprintf(out, sizeof out, "%s/a-dir", tmpdir);
    mkdir(out, 0755);
    st = quantize_pure(in, ELM_TYPE_Q8_0, out, NULL, NULL, &err);
    CHECK(st == ELM_ERR_IO && strstr(err.msg, out), "output is a directory: %d %s", st, err.msg);
    rmdir(out);
    CHECK(files_in(tmpdir) == before, "temporary files left: %d entries, %d before",
          files_in(tmpdir), before);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(tmpdir = check_tmp_dir())) return check_skip("cannot create a temporary folder");
    elm_model *in = NULL;
    elm_error err;
    elm_status st = elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &in, &err);
    CHECK(st == ELM_OK, "load: %s", err.msg);
    if (!st) {
        test_against_llamacpp(in);
        test_other_types(in);
        test_roundtrip(in);
        test_failures(in);
        elm_model_free(in);
    }
    CHECK(files_in(tmpdir) == 0, "files left in %s", tmpdir);
    rmdir(tmpdir);
    return check_done();
}
