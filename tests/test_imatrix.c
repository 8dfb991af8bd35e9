/* Importance matrices (edgelm/imatrix.h): llama-imatrix's file for wide256 on calib.txt reads;
 * elm_imatrix_compute on the same text and context reproduces its values to 1e-3 relative and its
 * chunk count; a saved file reads back the same (and is saved again byte for byte, its end padded
 * as llama-imatrix's); an imatrix that does not match the model, or a damaged file (truncated, a
 * tensor name given twice), is refused with one line naming the file and the tensor, and no output
 * is left. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/fileio.h"
#include "edgelm/quant.h"
#include "edgelm/vocab.h"

static char *dir; /* check_tmp_dir() */

static void compare(const elm_imatrix *a, const elm_imatrix *ref, double tol, const char *what) {
    CHECK(a->n == ref->n, "%s: %d entries, reference %d", what, a->n, ref->n);
    CHECK(a->chunk_count == ref->chunk_count && a->chunk_size == ref->chunk_size,
          "%s: %u chunks of %u, reference %u of %u", what, a->chunk_count, a->chunk_size,
          ref->chunk_count, ref->chunk_size);
    int bad = 0;
    double worst = 0;
    for (int32_t i = 0; i < ref->n; i++) {
        const elm_imatrix_entry *r = &ref->entries[i], *e = elm_imatrix_find(a, r->name);
        if (!e || e->n != r->n || e->n_mat != r->n_mat || e->count[0] != r->count[0]) {
            if (bad++ < 3) CHECK(0, "%s: entry '%s' missing or of another shape/count", what, r->name);
            continue;
        }
        float *wa = malloc((size_t)e->n * 4), *wr = malloc((size_t)r->n * 4);
        elm_imatrix_weights(e, wa);
        elm_imatrix_weights(r, wr);
        for (int64_t j = 0; j < r->n; j++) {
            const double rel = fabs((double)wa[j] - wr[j]) / fmax(fabs((double)wr[j]), 1e-30);
            if (rel > worst) worst = rel;
        }
        free(wa);
        free(wr);
    }
    CHECK(bad == 0 && worst <= tol, "%s: %d entries differ, worst relative difference %g", what,
          bad, worst);
}

static void test_compute(const elm_model *m, const elm_imatrix *ref) {
    size_t len = 0;
    char *text = NULL;
    elm_error err;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    elm_imatrix im;
    elm_status st = elm_read_file(fixture("stories260K/text/calib.txt"), 1 << 26, &text, &len, &err);
    if (!st) st = elm_tokenize_alloc(&m->vocab, text, len, true, false, &ids, &n_ids, &err);
#if defined(__SANITIZE_ADDRESS__)
    /* the sanitizer build runs the forward pass ~30x slower: 16 of the 400 chunks there, whose
     * per-weight mean of E[x²] must be near the whole text's; the release build checks all */
    const bool sample = true;
    if (!st) n_ids = 16 * 256;
#else
    const bool sample = false;
#endif
    if (!st) st = elm_imatrix_compute(m, ids, n_ids, 256, 2, "calib.txt", NULL, NULL, &im, &err);
    CHECK(st == ELM_OK, "compute: %s", err.msg);
    if (!st && sample) {
        int bad = 0;
        for (int32_t i = 0; i < ref->n; i++) {
            const elm_imatrix_entry *r = &ref->entries[i], *e = elm_imatrix_find(&im, r->name);
            if (!e || e->n != r->n || e->count[0] != 16 * 256) {
                bad++;
                continue;
            }
            double se = 0, sr = 0;
            for (int64_t j = 0; j < r->n; j++) {
                se += e->sum2[j] / e->count[0];
                sr += r->sum2[j] / r->count[0];
            }
            bad += !(fabs(se - sr) <= 0.25 * sr);
        }
        CHECK(bad == 0 && im.chunk_count == 16, "16 chunks: %d entries far from the reference", bad);
    } else if (!st) {
        compare(&im, ref, 1e-3, "computed");
    }
    if (!st) {
        char path[256];
        snprintf(path, sizeof path, "%s/im.gguf", dir);
        elm_imatrix back;
        st = elm_imatrix_save(&im, path, &err);
        if (!st) st = elm_imatrix_load(path, &back, &err);
        CHECK(st == ELM_OK, "save/load: %s", err.msg);
        if (!st) {
            compare(&back, &im, 0, "saved");
            CHECK(!strcmp(back.dataset, "calib.txt"), "dataset '%s'", back.dataset);
            /* written again from what was read: the same bytes, the data padded at the end to 32
             * bytes as llama-imatrix's files are */
            char again[256], *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            snprintf(again, sizeof again, "%s/im2.gguf", dir);
            st = elm_imatrix_save(&back, again, &err);
            if (!st) st = elm_read_file(path, 1 << 26, &a, &na, &err);
            if (!st) st = elm_read_file(again, 1 << 26, &b, &nb, &err);
            CHECK(st == ELM_OK && na == nb && na % 32 == 0 && !memcmp(a, b, na),
                  "saved twice: %s, %zu and %zu bytes", st ? err.msg : "", na, nb);
            free(a);
            free(b);
            unlink(again);
            elm_imatrix_free(&back);
        }
        unlink(path);
        elm_imatrix_free(&im);
    }
    free(ids);
    free(text);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    if (!(dir = check_tmp_dir())) return check_skip("cannot create a temporary folder");
    elm_model *wide = NULL, *small = NULL;
    elm_imatrix ref, small_im;
    elm_error err;
    const char *ref_path = fixture("wide256/reference-quants/llamacpp-imatrix-calib.gguf");
    const char *small_path = fixture("stories260K/reference-quants/llamacpp-imatrix-calib.gguf");
    elm_status st = elm_model_load(fixture("wide256/wide-f32.gguf"), NULL, &wide, &err);
    if (!st) st = elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &small, &err);
    if (!st) st = elm_imatrix_load(ref_path, &ref, &err);
    if (!st) st = elm_imatrix_load(small_path, &small_im, &err);
    CHECK(st == ELM_OK, "load: %s", err.msg);
    if (st) return check_done();
    CHECK(ref.n == 14 && ref.chunk_size == 256 && ref.chunk_count > 0, "reference: %d entries, "
          "%u chunks of %u", ref.n, ref.chunk_count, ref.chunk_size);
    CHECK(elm_imatrix_check(&ref, wide, ref_path, &err) == ELM_OK, "check: %s", err.msg);

    /* another model's imatrix: refused naming the imatrix file and a tensor, no output */
    st = elm_imatrix_check(&small_im, wide, small_path, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, small_path) && strstr(err.msg, "blk.") &&
              !strchr(err.msg, '\n'), "mismatched imatrix: %d %s", st, err.msg);
    char out[256];
    snprintf(out, sizeof out, "%s/q.gguf", dir);
    elm_quant_params p = {.policy = {.type = ELM_TYPE_Q4_K, .recipe = 15}, .imatrix = &small_im,
                          .imatrix_path = small_path};
    st = elm_quantize(wide, &p, out, NULL, NULL, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, small_path) && access(out, F_OK) != 0,
          "quantize with a mismatched imatrix: %d %s", st, err.msg);
    /* a name the model does not have */
    snprintf(ref.entries[0].name, sizeof ref.entries[0].name, "blk.7.attn_q.weight");
    st = elm_imatrix_check(&ref, wide, ref_path, &err);
    CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, "blk.7.attn_q.weight"), "unknown tensor: %s",
          err.msg);
    elm_imatrix_free(&ref);
    elm_imatrix_load(ref_path, &ref, &err);

    /* damaged files: truncated, not GGUF */
    void *data = NULL;
    size_t size = 0;
    char *raw = NULL;
    if (!elm_read_file(ref_path, 1 << 26, &raw, &size, &err)) {
        data = raw;
        const size_t cuts[] = {10, 200, size / 2, size - 40}; /* the last 32 are a count and padding */
        for (size_t k = 0; k < 4; k++) {
            char path[256];
            snprintf(path, sizeof path, "%s/cut%zu.gguf", dir, k);
            FILE *f = fopen(path, "wb");
            fwrite(data, 1, cuts[k], f);
            fclose(f);
            elm_imatrix im;
            st = elm_imatrix_load(path, &im, &err);
            CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, path) && !strchr(err.msg, '\n'),
                  "truncated at %zu: %d %s", cuts[k], st, err.msg);
            unlink(path);
        }
        /* a tensor name given twice: attn_k's sums renamed attn_q's (found by fuzz_imatrix: with
         * more copies than ".counts" tensors, the entries overran their array) */
        char *k = memmem(raw, size, "blk.0.attn_k.weight.in_sum2", 27);
        CHECK(k != NULL, "no blk.0.attn_k.weight.in_sum2 in %s", ref_path);
        if (k) {
            k[11] = 'q';
            char path[256];
            snprintf(path, sizeof path, "%s/twice.gguf", dir);
            FILE *f = fopen(path, "wb");
            fwrite(raw, 1, size, f);
            fclose(f);
            elm_imatrix im;
            st = elm_imatrix_load(path, &im, &err);
            CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, path) &&
                      strstr(err.msg, "tensor 'blk.0.attn_q.weight.in_sum2' given twice"),
                  "a name given twice: %d %s", st, err.msg);
            unlink(path);
        }
        free(raw);
    }
    test_compute(wide, &ref);
    elm_imatrix_free(&ref);
    elm_imatrix_free(&small_im);
    elm_model_free(wide);
    elm_model_free(small);
    rmdir(dir);
    free(dir);
    return check_done();
}
