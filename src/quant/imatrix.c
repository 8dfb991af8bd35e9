/* Importance matrix files (edgelm/imatrix.h) in llama.cpp's GGUF layout, read through the GGUF
 * parser (formats/gguf_parse.h: every length, count and offset checked before use) and written
 * through the GGUF writer (formats/gguf_write.h). An imatrix file is no model (no architecture, no
 * tokenizer, tensor names with suffixes): what is checked here is its own layout, F32 tensors that
 * pair up as "W.in_sum2" and "W.counts". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edgelm/imatrix.h"
#include "formats/gguf_parse.h"
#include "formats/gguf_write.h"

/* ---- reader ---- */

/* The first of imatrix.datasets, and the chunk count and size. */
static elm_status read_keys(const elm_gguf *g, elm_imatrix *im, elm_error *err) {
    const elm_gguf_kv *ds;
    int64_t count = 0, size = 0;
    elm_status st = elm_gguf_get_array(g, "imatrix.datasets", ELM_GGUF_STRING, -1, &ds, err);
    if (!st && ds && ds->count) {
        size_t pos = ds->val;
        const elm_gguf_str s = elm_gguf_next_str(g, &pos);
        snprintf(im->dataset, sizeof im->dataset, "%.*s", (int)(s.len < 255 ? s.len : 255), s.s);
    }
    if (!st) st = elm_gguf_get_int(g, "imatrix.chunk_count", 0, UINT32_MAX, &count, err);
    if (!st) st = elm_gguf_get_int(g, "imatrix.chunk_size", 0, UINT32_MAX, &size, err);
    im->chunk_count = (uint32_t)count;
    im->chunk_size = (uint32_t)size;
    return st;
}

static int by_tensor_name(const void *a, const void *b) {
    return strcmp((*(const elm_gguf_tensor *const *)a)->name,
                  (*(const elm_gguf_tensor *const *)b)->name);
}

/* g's tensors by name (*out; free it), or an error for a name given twice, which would pair one
 * ".counts" with several ".in_sum2", or the reverse. */
static elm_status sort_names(const elm_gguf *g, const elm_gguf_tensor ***out, elm_error *err) {
    const uint64_t n = g->n_tensors;
    const elm_gguf_tensor **sorted = *out = malloc(sizeof *sorted * (n ? n : 1));
    if (!sorted) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < n; i++) sorted[i] = &g->tensors[i];
    qsort(sorted, n, sizeof *sorted, by_tensor_name);
    for (uint64_t i = 1; i < n; i++)
        if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' given twice", g->path,
                              sorted[i]->name);
    return ELM_OK;
}

/* The tensor named base + suffix, or NULL: a binary search, so that a file of many tensors cannot
 * make the pairing quadratic. */
static const elm_gguf_tensor *find_tensor(const elm_gguf_tensor *const *sorted, uint64_t n,
                                          const char *base, const char *suffix) {
    elm_gguf_tensor key;
    const size_t lb = strlen(base), ls = strlen(suffix);
    if (lb + ls >= sizeof key.name) return NULL;
    memcpy(key.name, base, lb);
    memcpy(key.name + lb, suffix, ls + 1);
    const elm_gguf_tensor *kp = &key;
    const elm_gguf_tensor *const *hit = bsearch(&kp, sorted, n, sizeof *sorted, by_tensor_name);
    return hit ? *hit : NULL;
}

static bool strip_suffix(char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix)) return false;
    s[n - k] = '\0';
    return true;
}

/* Values of an F32 tensor (its bytes are inside the file: checked by the parser). */
static int64_t n_values(const elm_gguf_tensor *t) { return (int64_t)(t->nbytes / sizeof(float)); }

static elm_status fill_entries(const elm_gguf *g, elm_imatrix *im,
                               const elm_gguf_tensor *const *sorted, elm_error *err) {
    const uint64_t n_t = g->n_tensors;
    im->entries = calloc(n_t / 2 + 1, sizeof *im->entries);
    if (!im->entries) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < n_t; i++) {
        const elm_gguf_tensor *sums = &g->tensors[i];
        char base[ELM_GGUF_NAME_MAX];
        snprintf(base, sizeof base, "%s", sums->name);
        if (!strip_suffix(base, ".in_sum2")) continue;
        const elm_gguf_tensor *cnt = find_tensor(sorted, n_t, base, ".counts");
        if (!cnt)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has no '%s.counts'", g->path,
                              sums->name, base);
        if (strlen(base) >= ELM_NAME_MAX || n_values(sums) % n_values(cnt))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s': %lld values for %lld counts",
                              g->path, sums->name, (long long)n_values(sums),
                              (long long)n_values(cnt));
        elm_imatrix_entry *e = &im->entries[im->n++];
        memcpy(e->name, base, strlen(base) + 1); /* shorter than ELM_NAME_MAX: checked above */
        e->n = n_values(sums);
        e->n_mat = n_values(cnt);
        e->sum2 = malloc((size_t)e->n * 4);
        e->count = malloc((size_t)e->n_mat * 4);
        if (!e->sum2 || !e->count)
            return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(e->sum2, sums->data, (size_t)e->n * 4);
        memcpy(e->count, cnt->data, (size_t)e->n_mat * 4);
    }
    for (uint64_t i = 0; i < n_t; i++) {
        char base[ELM_GGUF_NAME_MAX];
        snprintf(base, sizeof base, "%s", g->tensors[i].name);
        if (strip_suffix(base, ".counts") && !find_tensor(sorted, n_t, base, ".in_sum2"))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has no '%s.in_sum2'", g->path,
                              g->tensors[i].name, base);
    }
    if (!im->n) return elm_errorf(err, ELM_ERR_FORMAT, "%s: no importance data", g->path);
    return ELM_OK;
}

elm_status elm_imatrix_load(const char *path, elm_imatrix *im, elm_error *err) {
    memset(im, 0, sizeof *im);
    void *addr = NULL;
    size_t size = 0;
    elm_status st = elm_map_file(path, &addr, &size, err);
    if (st) return st;
    elm_gguf g;
    const elm_gguf_tensor **sorted = NULL; /* g's tensors by name */
    st = elm_gguf_open(&g, path, addr, size, err);
    if (!st) st = read_keys(&g, im, err);
    if (!st) st = elm_gguf_read_tensors(&g, ELM_GGUF_NAME_MAX, err);
    for (uint64_t i = 0; i < g.n_tensors && !st; i++)
        if (g.tensors[i].type != ELM_TYPE_F32)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is of type %s, not F32", path,
                            g.tensors[i].name, elm_type_get(g.tensors[i].type)->name);
    if (!st) st = sort_names(&g, &sorted, err);
    if (!st) st = fill_entries(&g, im, sorted, err);
    free(sorted);
    elm_gguf_close(&g);
    elm_unmap(addr, size);
    if (st) elm_imatrix_free(im);
    return st;
}

void elm_imatrix_free(elm_imatrix *im) {
    for (int32_t i = 0; im->entries && i < im->n; i++) {
        free(im->entries[i].sum2);
        free(im->entries[i].count);
    }
    free(im->entries);
    memset(im, 0, sizeof *im);
}

const elm_imatrix_entry *elm_imatrix_find(const elm_imatrix *im, const char *name) {
    for (int32_t i = 0; i < im->n; i++)
        if (!strcmp(im->entries[i].name, name)) return &im->entries[i];
    return NULL;
}

void elm_imatrix_weights(const elm_imatrix_entry *e, float *out) {
    const int64_t n_in = e->n / e->n_mat;
    for (int64_t k = 0; k < e->n_mat; k++) {
        /* llama.cpp rounds the count to an integer first */
        const float count = (float)lroundf(e->count[k]);
        for (int64_t j = 0; j < n_in; j++)
            out[k * n_in + j] = count > 0.0f ? e->sum2[k * n_in + j] / count : 1.0f;
    }
}

elm_status elm_imatrix_check(const elm_imatrix *im, const elm_model *m, const char *path,
                             elm_error *err) {
    for (int32_t i = 0; i < im->n; i++) {
        const elm_imatrix_entry *e = &im->entries[i];
        const elm_tensor *t = elm_model_find(m, e->name);
        if (!t)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is not in the model %s", path,
                              e->name, m->path);
        /* a weight of one row may be stored 1-D (Qwen3.5-MoE's ffn_gate_inp_shexp) */
        if (e->n != t->ne[0] * t->ne[2] * t->ne[3])
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %lld importance values, "
                              "the model's rows have %lld weights%s", path, e->name,
                              (long long)e->n, (long long)t->ne[0],
                              t->n_dims > 2 ? " in each matrix of the stack" : "");
        for (int64_t j = 0; j < e->n; j++)
            if (!isfinite(e->sum2[j]) || e->sum2[j] < 0)
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s': value %lld is %g", path,
                                  e->name, (long long)j, e->sum2[j]);
        for (int64_t k = 0; k < e->n_mat; k++)
            if (!(e->count[k] >= 0 && e->count[k] < 1e15f))
                return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s': count %g", path, e->name,
                                  e->count[k]);
    }
    return ELM_OK;
}

/* ---- writer ---- */

static int by_name(const void *a, const void *b) {
    return strcmp((*(const elm_imatrix_entry *const *)a)->name,
                  (*(const elm_imatrix_entry *const *)b)->name);
}

/* llama-imatrix's layout: the entries by name, each as "W.in_sum2" [n_in, n_mat] then "W.counts"
 * [1, n_mat], and the data padded at the end too. */
elm_status elm_imatrix_save(const elm_imatrix *im, const char *path, elm_error *err) {
    const elm_imatrix_entry **order = malloc((im->n ? (size_t)im->n : 1) * sizeof *order);
    elm_gguf_writer *w = order ? elm_gguf_writer_new(path, true) : NULL;
    if (!w) {
        free(order);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    }
    for (int32_t i = 0; i < im->n; i++) order[i] = &im->entries[i];
    qsort(order, (size_t)im->n, sizeof *order, by_name);
    const char *dataset = im->dataset;
    elm_gguf_kv_str(w, "general.type", "imatrix");
    elm_gguf_kv_strs(w, "imatrix.datasets", &dataset, 1);
    elm_gguf_kv_u32(w, "imatrix.chunk_count", im->chunk_count);
    elm_gguf_kv_u32(w, "imatrix.chunk_size", im->chunk_size);
    for (int32_t i = 0; i < im->n; i++) {
        const elm_imatrix_entry *e = order[i];
        char name[ELM_NAME_MAX + 16];
        const int64_t sums[2] = {e->n / e->n_mat, e->n_mat}, counts[2] = {1, e->n_mat};
        snprintf(name, sizeof name, "%s.in_sum2", e->name);
        elm_gguf_add_tensor(w, name, ELM_TYPE_F32, 2, sums);
        snprintf(name, sizeof name, "%s.counts", e->name);
        elm_gguf_add_tensor(w, name, ELM_TYPE_F32, 2, counts);
    }
    elm_status st = elm_gguf_begin(w, err);
    for (int32_t i = 0; i < im->n && !st; i++) {
        const elm_imatrix_entry *e = order[i];
        st = elm_gguf_write_tensor(w, 2 * i, e->sum2, (size_t)e->n * 4, err);
        if (!st) st = elm_gguf_write_tensor(w, 2 * i + 1, e->count, (size_t)e->n_mat * 4, err);
    }
    if (!st) st = elm_gguf_end(w, NULL, err);
    elm_gguf_writer_free(w);
    free(order);
    return st;
}
