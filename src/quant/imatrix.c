/* Importance matrix files (edgelm/imatrix.h): a small GGUF reader and writer of their own, since
 * an imatrix file is no model (no architecture, no tokenizer, tensor names with suffixes). Every
 * length, count and offset read is checked against the bytes left before it is used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edgelm/imatrix.h"

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64,
       T_F64, T_COUNT };
static const uint8_t fixed_size[T_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

typedef struct cursor {
    const uint8_t *p;
    size_t size, pos;
    const char *path;
    elm_error *err;
} cursor;

static elm_status truncated(cursor *c, const char *what) {
    return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: truncated or corrupt imatrix file: %s at offset "
                      "%zu runs past the end", c->path, what, c->pos);
}

static elm_status take(cursor *c, void *out, size_t n, const char *what) {
    if (n > c->size - c->pos) return truncated(c, what);
    if (out) memcpy(out, c->p + c->pos, n);
    c->pos += n;
    return ELM_OK;
}

static elm_status take_str(cursor *c, const char **s, uint64_t *len, const char *what) {
    elm_status st = take(c, len, 8, what);
    if (st) return st;
    if (*len > c->size - c->pos) return truncated(c, what);
    *s = (const char *)c->p + c->pos;
    c->pos += (size_t)*len;
    return ELM_OK;
}

static bool key_is(const char *k, uint64_t len, const char *lit) {
    return len == strlen(lit) && !memcmp(k, lit, len);
}

/* Reads one key/value pair, keeping the few keys an imatrix file has. */
static elm_status read_kv(cursor *c, elm_imatrix *im, uint32_t *alignment) {
    const char *key = NULL;
    uint64_t klen = 0;
    uint32_t type = 0;
    elm_status st = take_str(c, &key, &klen, "key");
    if (!st) st = take(c, &type, 4, "value type");
    if (st) return st;
    if (type >= T_COUNT)
        return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: key '%.*s' has unknown type %u", c->path,
                          (int)(klen < 64 ? klen : 64), key, type);
    if (type == T_STRING) {
        const char *s = NULL;
        uint64_t n = 0;
        return take_str(c, &s, &n, "string value");
    }
    if (type == T_ARRAY) {
        uint32_t et = 0;
        uint64_t count = 0;
        if ((st = take(c, &et, 4, "array type")) || (st = take(c, &count, 8, "array length")))
            return st;
        if (et == T_STRING) {
            for (uint64_t i = 0; i < count; i++) {
                const char *s = NULL;
                uint64_t n = 0;
                if ((st = take_str(c, &s, &n, "array string"))) return st;
                if (i == 0 && key_is(key, klen, "imatrix.datasets"))
                    snprintf(im->dataset, sizeof im->dataset, "%.*s", (int)(n < 255 ? n : 255), s);
            }
            return ELM_OK;
        }
        if (et >= T_COUNT || !fixed_size[et])
            return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: key '%.*s': unsupported array type %u",
                              c->path, (int)(klen < 64 ? klen : 64), key, et);
        if (count > (c->size - c->pos) / fixed_size[et]) return truncated(c, "array");
        c->pos += (size_t)count * fixed_size[et];
        return ELM_OK;
    }
    uint32_t v = 0;
    const size_t n = fixed_size[type];
    if (type == T_U32 || type == T_I32) {
        if ((st = take(c, &v, 4, "value"))) return st;
        if (key_is(key, klen, "imatrix.chunk_count")) im->chunk_count = v;
        if (key_is(key, klen, "imatrix.chunk_size")) im->chunk_size = v;
        if (key_is(key, klen, "general.alignment")) *alignment = v;
        return ELM_OK;
    }
    return take(c, NULL, n, "value");
}

typedef struct tinfo {
    char name[ELM_NAME_MAX + 16];
    int64_t n;
    uint64_t offset;
} tinfo;

static elm_status read_tinfo(cursor *c, tinfo *t) {
    const char *s = NULL;
    uint64_t len = 0, off = 0;
    uint32_t n_dims = 0, type = 0;
    elm_status st = take_str(c, &s, &len, "tensor name");
    if (st) return st;
    if (len >= sizeof t->name)
        return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor name of %llu bytes is too long",
                          c->path, (unsigned long long)len);
    memcpy(t->name, s, (size_t)len);
    t->name[len] = '\0';
    if ((st = take(c, &n_dims, 4, "tensor rank"))) return st;
    if (n_dims < 1 || n_dims > 4)
        return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' has %u dimensions", c->path,
                          t->name, n_dims);
    t->n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne = 0;
        if ((st = take(c, &ne, 8, "tensor shape"))) return st;
        if (ne == 0 || ne > (1ull << 32) || ne > (1ull << 40) / (uint64_t)t->n) /* no wrap */
            return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' has an invalid shape",
                              c->path, t->name);
        t->n *= (int64_t)ne;
    }
    if ((st = take(c, &type, 4, "tensor type")) || (st = take(c, &off, 8, "tensor offset")))
        return st;
    if (type != 0)
        return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' is of type %u, not F32",
                          c->path, t->name, type);
    t->offset = off;
    return ELM_OK;
}

static int by_tinfo_name(const void *a, const void *b) {
    return strcmp((*(const tinfo *const *)a)->name, (*(const tinfo *const *)b)->name);
}

/* ti's names in order (*out, n of them; free it), or an error for a name given twice, which would
 * pair one ".counts" with several ".in_sum2", or the reverse. */
static elm_status sort_names(const tinfo *ti, uint64_t n, const tinfo ***out, const char *path,
                             elm_error *err) {
    const tinfo **sorted = *out = malloc(sizeof *sorted * (n ? n : 1));
    if (!sorted) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    for (uint64_t i = 0; i < n; i++) sorted[i] = &ti[i];
    qsort(sorted, n, sizeof *sorted, by_tinfo_name);
    for (uint64_t i = 1; i < n; i++)
        if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' given twice", path,
                              sorted[i]->name);
    return ELM_OK;
}

/* The tensor named base + suffix, or NULL: a binary search, so that a file of many tensors cannot
 * make the pairing quadratic. */
static const tinfo *find_tensor(const tinfo *const *sorted, uint64_t n, const char *base,
                                const char *suffix) {
    tinfo key;
    const size_t lb = strlen(base), ls = strlen(suffix);
    if (lb + ls >= sizeof key.name) return NULL;
    memcpy(key.name, base, lb);
    memcpy(key.name + lb, suffix, ls + 1);
    const tinfo *kp = &key;
    const tinfo *const *hit = bsearch(&kp, sorted, n, sizeof *sorted, by_tinfo_name);
    return hit ? *hit : NULL;
}

static bool strip_suffix(char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k || strcmp(s + n - k, suffix)) return false;
    s[n - k] = '\0';
    return true;
}

static elm_status fill_entries(cursor *c, elm_imatrix *im, const tinfo *ti,
                               const tinfo *const *sorted, uint64_t n_t, size_t data) {
    im->entries = calloc(n_t / 2 + 1, sizeof *im->entries);
    if (!im->entries) return elm_errorf(c->err, ELM_ERR_NOMEM, "%s: out of memory", c->path);
    for (uint64_t i = 0; i < n_t; i++) {
        char base[sizeof ti->name];
        snprintf(base, sizeof base, "%s", ti[i].name);
        if (!strip_suffix(base, ".in_sum2")) continue;
        const tinfo *cnt = find_tensor(sorted, n_t, base, ".counts");
        if (!cnt)
            return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' has no '%s.counts'",
                              c->path, ti[i].name, base);
        if (strlen(base) >= ELM_NAME_MAX || ti[i].n % cnt->n)
            return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s': %lld values for %lld "
                              "counts", c->path, ti[i].name, (long long)ti[i].n, (long long)cnt->n);
        const tinfo *parts[2] = {&ti[i], cnt};
        for (int k = 0; k < 2; k++)
            if (parts[k]->offset > c->size - data ||
                (uint64_t)parts[k]->n * 4 > c->size - data - parts[k]->offset)
                return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' runs past the end of "
                                  "the file", c->path, parts[k]->name);
        elm_imatrix_entry *e = &im->entries[im->n++];
        memcpy(e->name, base, strlen(base) + 1); /* shorter than ELM_NAME_MAX: checked above */
        e->n = ti[i].n;
        e->n_mat = cnt->n;
        e->sum2 = malloc((size_t)e->n * 4);
        e->count = malloc((size_t)e->n_mat * 4);
        if (!e->sum2 || !e->count)
            return elm_errorf(c->err, ELM_ERR_NOMEM, "%s: out of memory", c->path);
        memcpy(e->sum2, c->p + data + ti[i].offset, (size_t)e->n * 4);
        memcpy(e->count, c->p + data + cnt->offset, (size_t)e->n_mat * 4);
    }
    for (uint64_t i = 0; i < n_t; i++) {
        char base[sizeof ti->name];
        snprintf(base, sizeof base, "%s", ti[i].name);
        if (strip_suffix(base, ".counts") && !find_tensor(sorted, n_t, base, ".in_sum2"))
            return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: tensor '%s' has no '%s.in_sum2'",
                              c->path, ti[i].name, base);
    }
    if (!im->n) return elm_errorf(c->err, ELM_ERR_FORMAT, "%s: no importance data", c->path);
    return ELM_OK;
}

elm_status elm_imatrix_load(const char *path, elm_imatrix *im, elm_error *err) {
    memset(im, 0, sizeof *im);
    void *addr = NULL;
    size_t size = 0;
    elm_status st = elm_map_file(path, &addr, &size, err);
    if (st) return st;
    cursor c = {addr, size, 0, path, err};
    char magic[4] = {0};
    uint32_t version = 0, alignment = 32;
    uint64_t n_t = 0, n_kv = 0;
    tinfo *ti = NULL;
    const tinfo **sorted = NULL; /* ti by name */
    if (size < 24 || (take(&c, magic, 4, "magic"), memcmp(magic, "GGUF", 4))) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: not a GGUF imatrix file", path);
        goto out;
    }
    take(&c, &version, 4, "version");
    take(&c, &n_t, 8, "tensor count");
    take(&c, &n_kv, 8, "key count");
    if (version < 2 || version > 3 || n_kv > size / 13 || n_t > size / 32) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: unsupported GGUF version %u or bad counts", path,
                        version);
        goto out;
    }
    for (uint64_t i = 0; i < n_kv && !st; i++) st = read_kv(&c, im, &alignment);
    if (!st && (alignment == 0 || (alignment & (alignment - 1))))
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: general.alignment %u", path, alignment);
    if (!st && !(ti = calloc(n_t ? n_t : 1, sizeof *ti)))
        st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    for (uint64_t i = 0; i < n_t && !st; i++) st = read_tinfo(&c, &ti[i]);
    if (!st) st = sort_names(ti, n_t, &sorted, path, err);
    if (!st) {
        const size_t data = (c.pos + alignment - 1) / alignment * alignment;
        if (data > size) st = truncated(&c, "tensor data");
        else st = fill_entries(&c, im, ti, sorted, n_t, data);
    }
out:
    free(sorted);
    free(ti);
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
        if (t->n_dims < 2 || e->n != t->ne[0] * t->ne[2] * t->ne[3])
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %lld importance values, "
                              "the model's rows have %lld weights", path, e->name,
                              (long long)e->n, (long long)t->ne[0]);
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

typedef struct wbuf {
    elm_out o;
    elm_status st;
    elm_error *err;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (!w->st) w->st = elm_out_write(&w->o, p, n, w->err);
}
static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_u64(wbuf *w, uint64_t v) { put(w, &v, 8); }
static void put_str(wbuf *w, const char *s) {
    put_u64(w, strlen(s));
    put(w, s, strlen(s));
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const elm_imatrix_entry *const *)a)->name,
                  (*(const elm_imatrix_entry *const *)b)->name);
}

elm_status elm_imatrix_save(const elm_imatrix *im, const char *path, elm_error *err) {
    const elm_imatrix_entry **order = malloc((im->n ? (size_t)im->n : 1) * sizeof *order);
    if (!order) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    for (int32_t i = 0; i < im->n; i++) order[i] = &im->entries[i];
    qsort(order, (size_t)im->n, sizeof *order, by_name);
    wbuf w = {.err = err};
    w.st = elm_out_open(&w.o, path, err);
    if (w.st) {
        free(order);
        return w.st;
    }
    put(&w, "GGUF", 4);
    put_u32(&w, 3);
    put_u64(&w, 2 * (uint64_t)im->n);
    put_u64(&w, 4);
    put_str(&w, "general.type");
    put_u32(&w, T_STRING);
    put_str(&w, "imatrix");
    put_str(&w, "imatrix.datasets");
    put_u32(&w, T_ARRAY);
    put_u32(&w, T_STRING);
    put_u64(&w, 1);
    put_str(&w, im->dataset);
    put_str(&w, "imatrix.chunk_count");
    put_u32(&w, T_U32);
    put_u32(&w, im->chunk_count);
    put_str(&w, "imatrix.chunk_size");
    put_u32(&w, T_U32);
    put_u32(&w, im->chunk_size);
    /* tensor infos, then the data at 32-byte aligned offsets */
    uint64_t off = 0;
    for (int32_t i = 0; i < im->n; i++) {
        const elm_imatrix_entry *e = order[i];
        char name[ELM_NAME_MAX + 16];
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "%s%s", e->name, k ? ".counts" : ".in_sum2");
            put_str(&w, name);
            put_u32(&w, 2);
            put_u64(&w, k ? 1 : (uint64_t)(e->n / e->n_mat));
            put_u64(&w, (uint64_t)e->n_mat);
            put_u32(&w, 0);
            put_u64(&w, off);
            off += ((uint64_t)(k ? e->n_mat : e->n) * 4 + 31) / 32 * 32;
        }
    }
    static const uint8_t zeros[32];
    long pos = w.st ? 0 : ftell(w.o.f);
    if (pos % 32) put(&w, zeros, 32 - (size_t)(pos % 32));
    for (int32_t i = 0; i < im->n; i++) {
        const elm_imatrix_entry *e = order[i];
        for (int k = 0; k < 2; k++) {
            const size_t bytes = (size_t)(k ? e->n_mat : e->n) * 4;
            put(&w, k ? e->count : e->sum2, bytes);
            if (bytes % 32) put(&w, zeros, 32 - bytes % 32);
        }
    }
    free(order);
    if (w.st) {
        elm_out_abort(&w.o);
        return w.st;
    }
    return elm_out_commit(&w.o, err);
}
