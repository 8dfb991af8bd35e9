/* GGUF v2/v3 parsing (gguf_parse.h; layout from docs/formats.md, "GGUF v3"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_parse.h"
#include "formats/ranges.h"

static const char *const gguf_type_names[ELM_GGUF_NTYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

/* bytes of a fixed-size value; 0 for string and array */
static const size_t gguf_type_size[ELM_GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_NESTING 8
/* smallest encodings, used to reject counts that cannot fit in the bytes left */
/* empty key (8) + type (4) + 1-byte value */
#define GGUF_MIN_KV_BYTES 13
/* empty name (8) + n_dims (4) + one dim (8) + type (4) + offset (8) */
#define GGUF_MIN_TENSOR_BYTES 32

/* ---- bounds-checked cursor ---- */

static elm_status need(elm_gguf *g, uint64_t n, const char *what, elm_error *err) {
    if (n > g->size - g->pos)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: %s at offset %zu (%llu bytes) runs past "
                          "end of file", g->path, what, g->pos, (unsigned long long)n);
    return ELM_OK;
}

/* The next n bytes of the file into v. */
static elm_status rd_bytes(elm_gguf *g, void *v, size_t n, const char *what, elm_error *err) {
    elm_status st = need(g, n, what, err);
    if (st) return st;
    memcpy(v, g->base + g->pos, n);
    g->pos += n;
    return ELM_OK;
}

static elm_status rd_u32(elm_gguf *g, uint32_t *v, const char *what, elm_error *err) {
    return rd_bytes(g, v, sizeof *v, what, err);
}

static elm_status rd_u64(elm_gguf *g, uint64_t *v, const char *what, elm_error *err) {
    return rd_bytes(g, v, sizeof *v, what, err);
}

/* *s is cleared first, so that it is defined on the error paths too (gcc -O3, inlining the
 * readers, cannot tell that elm_errorf returns non-zero). */
static elm_status rd_str(elm_gguf *g, elm_gguf_str *s, const char *what, elm_error *err) {
    *s = (elm_gguf_str){NULL, 0};
    uint64_t len;
    elm_status st = rd_u64(g, &len, what, err);
    if (st) return st;
    if (len > g->size - g->pos)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: %s at offset %zu: string of length %llu "
                          "runs past end of file",
                          g->path, what, g->pos - 8, (unsigned long long)len);
    s->s = (const char *)g->base + g->pos;
    s->len = (size_t)len;
    g->pos += (size_t)len;
    return ELM_OK;
}

bool elm_gguf_str_is(elm_gguf_str s, const char *lit) {
    return s.len == strlen(lit) && memcmp(s.s, lit, s.len) == 0;
}

static const char *type_name(uint32_t t) { return t < ELM_GGUF_NTYPES ? gguf_type_names[t] : "?"; }

/* Skips one value of type t, checking every length against the file. */
static elm_status skip_value(elm_gguf *g, uint32_t t, int depth, const elm_gguf_str *key,
                             elm_error *err) {
    if (t >= ELM_GGUF_NTYPES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has unknown value type %u",
                          g->path, (int)key->len, key->s, t);
    if (t == ELM_GGUF_STRING) {
        elm_gguf_str s;
        return rd_str(g, &s, "string value", err);
    }
    if (t != ELM_GGUF_ARRAY) {
        elm_status st = need(g, gguf_type_size[t], "value", err);
        if (!st) g->pos += gguf_type_size[t];
        return st;
    }
    if (depth >= GGUF_MAX_NESTING)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s': arrays nested too deeply",
                          g->path, (int)key->len, key->s);
    uint32_t et;
    uint64_t count;
    elm_status st;
    if ((st = rd_u32(g, &et, "array element type", err))) return st;
    if ((st = rd_u64(g, &count, "array length", err))) return st;
    if (et >= ELM_GGUF_NTYPES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has arrays of unknown type %u",
                          g->path, (int)key->len, key->s, et);
    /* strings take >= 8 bytes, arrays >= 12: the count is bounded by the bytes left either way */
    size_t min_elem = gguf_type_size[et] ? gguf_type_size[et] : et == ELM_GGUF_STRING ? 8 : 12;
    if (count > (g->size - g->pos) / min_elem)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: truncated or corrupt file: key '%.*s': array of %llu elements runs "
                          "past end of file",
                          g->path, (int)key->len, key->s, (unsigned long long)count);
    if (gguf_type_size[et]) {
        g->pos += (size_t)count * gguf_type_size[et];
        return ELM_OK;
    }
    for (uint64_t i = 0; i < count; i++)
        if ((st = skip_value(g, et, depth + 1, key, err))) return st;
    return ELM_OK;
}

/* ---- header and key/value index ---- */

static int cmp_gstr(const void *a, const void *b) {
    const elm_gguf_str *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* A key given twice would be read as whichever copy a lookup meets first: refused instead. */
static elm_status check_unique_keys(const elm_gguf *g, elm_error *err) {
    if (g->n_kv < 2) return ELM_OK;
    elm_gguf_str *keys = malloc((size_t)g->n_kv * sizeof *keys);
    if (!keys) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_kv; i++) keys[i] = g->kv[i].key;
    qsort(keys, (size_t)g->n_kv, sizeof *keys, cmp_gstr);
    elm_status st = ELM_OK;
    for (uint64_t i = 1; i < g->n_kv && !st; i++)
        if (cmp_gstr(&keys[i - 1], &keys[i]) == 0)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: metadata key '%.*s' appears more than once",
                            g->path, (int)(keys[i].len > 96 ? 96 : keys[i].len), keys[i].s);
    free(keys);
    return st;
}

static elm_status parse_header(elm_gguf *g, elm_error *err) {
    uint32_t magic, version;
    elm_status st;
    if (g->size < 4 || memcmp(g->base, "GGUF", 4) != 0)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not a GGUF file (bad magic)", g->path);
    g->pos = 0;
    if ((st = rd_u32(g, &magic, "header", err))) return st;
    if ((st = rd_u32(g, &version, "header", err))) return st;
    if (version == 1)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: GGUF version 1 is not supported (32-bit counts); re-convert the model",
                          g->path);
    if (version != 2 && version != 3)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: GGUF version %u is not supported",
                          g->path, version);
    if ((st = rd_u64(g, &g->n_tensors, "header", err))) return st;
    if ((st = rd_u64(g, &g->n_kv, "header", err))) return st;
    size_t left = g->size - g->pos;
    if (g->n_kv > left / GGUF_MIN_KV_BYTES)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: header claims %llu key/value pairs, which would run past end of file",
                          g->path, (unsigned long long)g->n_kv);
    if (g->n_tensors > left / GGUF_MIN_TENSOR_BYTES || g->n_tensors > INT32_MAX)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: header claims %llu tensors, which would run past end of file", g->path,
                          (unsigned long long)g->n_tensors);
    g->kv = calloc(g->n_kv ? (size_t)g->n_kv : 1, sizeof *g->kv);
    if (!g->kv) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        elm_gguf_kv *kv = &g->kv[i];
        if ((st = rd_str(g, &kv->key, "key", err))) return st;
        if ((st = rd_u32(g, &kv->type, "value type", err))) return st;
        if (kv->type == ELM_GGUF_ARRAY && g->size - g->pos >= 12) {
            memcpy(&kv->elem_type, g->base + g->pos, 4);
            memcpy(&kv->count, g->base + g->pos + 4, 8);
            kv->val = g->pos + 12;
        } else {
            kv->val = g->pos;
        }
        if ((st = skip_value(g, kv->type, 0, &kv->key, err))) return st;
    }
    return check_unique_keys(g, err);
}

elm_status elm_gguf_open(elm_gguf *g, const char *path, const void *addr, size_t size,
                         elm_error *err) {
    memset(g, 0, sizeof *g);
    g->base = addr;
    g->size = size;
    g->path = path;
    return parse_header(g, err);
}

void elm_gguf_close(elm_gguf *g) {
    free(g->kv);
    free(g->tensors);
    g->kv = NULL;
    g->tensors = NULL;
}

/* ---- typed lookups ---- */

const elm_gguf_kv *elm_gguf_find(const elm_gguf *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (elm_gguf_str_is(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

static elm_status wrong_type(const elm_gguf *g, const elm_gguf_kv *kv, const char *want,
                             elm_error *err) {
    if (kv->type == ELM_GGUF_ARRAY)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' is an array of %s, expected %s",
                          g->path, (int)kv->key.len, kv->key.s, type_name(kv->elem_type), want);
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' has type %s, expected %s", g->path,
                      (int)kv->key.len, kv->key.s, type_name(kv->type), want);
}

/* The integer of GGUF type `type` at p as int64, false for a u64 above INT64_MAX or a type that
 * is not an integer (bool counts as one: 0 or 1). */
static bool int_at(uint32_t type, const uint8_t *p, int64_t *out) {
    switch (type) {
    case ELM_GGUF_BOOL:
    case ELM_GGUF_U8: *out = p[0]; return true;
    case ELM_GGUF_I8: *out = (int8_t)p[0]; return true;
    case ELM_GGUF_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return true; }
    case ELM_GGUF_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return true; }
    case ELM_GGUF_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return true; }
    case ELM_GGUF_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return true; }
    case ELM_GGUF_I64: { int64_t v; memcpy(&v, p, 8); *out = v; return true; }
    case ELM_GGUF_U64: {
        uint64_t v;
        memcpy(&v, p, 8);
        *out = (int64_t)v;
        return v <= INT64_MAX;
    }
    default: return false;
    }
}

static bool is_int_type(uint32_t t) {
    return t == ELM_GGUF_U8 || t == ELM_GGUF_I8 || t == ELM_GGUF_U16 || t == ELM_GGUF_I16 ||
           t == ELM_GGUF_U32 || t == ELM_GGUF_I32 || t == ELM_GGUF_U64 || t == ELM_GGUF_I64;
}

/* Integer value of any integer type as int64 (u64 above INT64_MAX is refused). */
static elm_status kv_int(const elm_gguf *g, const elm_gguf_kv *kv, int64_t *out, elm_error *err) {
    if (kv->type == ELM_GGUF_BOOL || !is_int_type(kv->type))
        return wrong_type(g, kv, "an integer", err);
    if (int_at(kv->type, g->base + kv->val, out)) return ELM_OK;
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%.*s' is out of range", g->path,
                      (int)kv->key.len, kv->key.s);
}

/* Bytes of one array element of integer (or bool) type t. */
static size_t int_size(uint32_t t) {
    switch (t) {
    case ELM_GGUF_U16: case ELM_GGUF_I16: return 2;
    case ELM_GGUF_U32: case ELM_GGUF_I32: return 4;
    case ELM_GGUF_U64: case ELM_GGUF_I64: return 8;
    default: return 1;
    }
}

elm_status elm_gguf_get_layer_ints(const elm_gguf *g, const char *key, int32_t n, int64_t lo,
                                   int64_t hi, int32_t *out, bool *is_array, elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    *is_array = false;
    if (!kv) return ELM_OK;
    if (kv->type != ELM_GGUF_ARRAY) {
        int64_t v = 0;
        elm_status st = kv_int(g, kv, &v, err);
        if (st) return st;
        if (v < lo || v > hi)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' = %lld is out of range "
                              "[%lld, %lld]", g->path, key, (long long)v, (long long)lo,
                              (long long)hi);
        for (int32_t i = 0; i < n; i++) out[i] = (int32_t)v;
        return ELM_OK;
    }
    if (kv->elem_type != ELM_GGUF_BOOL && !is_int_type(kv->elem_type))
        return wrong_type(g, kv, "integers, one per layer", err);
    if (kv->count != (uint64_t)n)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' has %llu values for %d layers",
                          g->path, key, (unsigned long long)kv->count, n);
    const size_t es = int_size(kv->elem_type);
    for (int32_t i = 0; i < n; i++) {
        int64_t v = 0;
        if (!int_at(kv->elem_type, g->base + kv->val + (size_t)i * es, &v) || v < lo || v > hi)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s': layer %d's value is out of "
                              "range [%lld, %lld]", g->path, key, i, (long long)lo, (long long)hi);
        out[i] = (int32_t)v;
    }
    *is_array = true;
    return ELM_OK;
}

elm_status elm_gguf_get_int(const elm_gguf *g, const char *key, int64_t lo, int64_t hi,
                            int64_t *out, elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv) return ELM_OK;
    int64_t v = 0;
    elm_status st = kv_int(g, kv, &v, err);
    if (st) return st;
    if (v < lo || v > hi)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' = %lld is out of range [%lld, %lld]",
                          g->path, key, (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return ELM_OK;
}

elm_status elm_gguf_get_f32(const elm_gguf *g, const char *key, float *out, elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv) return ELM_OK;
    if (kv->type == ELM_GGUF_F32) {
        memcpy(out, g->base + kv->val, 4);
    } else if (kv->type == ELM_GGUF_F64) {
        double d;
        memcpy(&d, g->base + kv->val, 8);
        *out = (float)d;
    } else {
        return wrong_type(g, kv, "a float", err);
    }
    return ELM_OK;
}

elm_status elm_gguf_get_bool(const elm_gguf *g, const char *key, bool *out, elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    if (!kv) return ELM_OK;
    if (kv->type != ELM_GGUF_BOOL) return wrong_type(g, kv, "bool", err);
    *out = g->base[kv->val] != 0;
    return ELM_OK;
}

elm_status elm_gguf_get_str(const elm_gguf *g, const char *key, elm_gguf_str *out, bool *found,
                            elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    *found = kv != NULL;
    if (!kv) return ELM_OK;
    if (kv->type != ELM_GGUF_STRING) return wrong_type(g, kv, "string", err);
    uint64_t len;
    memcpy(&len, g->base + kv->val, 8);
    out->s = (const char *)g->base + kv->val + 8;
    out->len = (size_t)len;
    return ELM_OK;
}

elm_status elm_gguf_get_array(const elm_gguf *g, const char *key, uint32_t et, int64_t want_count,
                              const elm_gguf_kv **out, elm_error *err) {
    const elm_gguf_kv *kv = elm_gguf_find(g, key);
    *out = NULL;
    if (!kv) return ELM_OK;
    if (kv->type != ELM_GGUF_ARRAY || kv->elem_type != et) {
        char want[32];
        snprintf(want, sizeof want, "an array of %s", type_name(et));
        return wrong_type(g, kv, want, err);
    }
    if (want_count >= 0 && kv->count != (uint64_t)want_count)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: key '%s' has %llu elements, expected %lld",
                          g->path, key, (unsigned long long)kv->count, (long long)want_count);
    *out = kv;
    return ELM_OK;
}

elm_gguf_str elm_gguf_next_str(const elm_gguf *g, size_t *pos) {
    uint64_t len;
    memcpy(&len, g->base + *pos, 8);
    elm_gguf_str s = {(const char *)g->base + *pos + 8, (size_t)len};
    *pos += 8 + (size_t)len;
    return s;
}

/* ---- tensors ---- */

static elm_status read_tensor_info(elm_gguf *g, uint64_t idx, size_t max_name, elm_gguf_tensor *t,
                                   elm_error *err) {
    elm_gguf_str name;
    uint32_t n_dims, type;
    elm_status st;
    if ((st = rd_str(g, &name, "tensor name", err))) return st;
    if (name.len == 0 || name.len >= max_name || memchr(name.s, '\0', name.len))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor %llu has an empty, over-long (>= %zu bytes) or "
                          "NUL-containing name",
                          g->path, (unsigned long long)idx, max_name);
    memcpy(t->name, name.s, name.len);
    t->name[name.len] = '\0';
    if ((st = rd_u32(g, &n_dims, "tensor dimension count", err))) return st;
    if (n_dims < 1 || n_dims > ELM_MAX_DIMS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %u dimensions (1..4 allowed)",
                          g->path, t->name, n_dims);
    t->n_dims = (int)n_dims;
    uint64_t count = 1;
    for (uint32_t i = 0; i < n_dims; i++) {
        uint64_t ne;
        if ((st = rd_u64(g, &ne, "tensor dimension", err))) return st;
        if (ne == 0)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has a dimension of size 0",
                              g->path, t->name);
        if (ne > INT64_MAX / count)
            return elm_errorf(err, ELM_ERR_FORMAT,
                              "%s: tensor '%s' element count overflows 64 bits", g->path, t->name);
        count *= ne;
        t->ne[i] = (int64_t)ne;
    }
    for (uint32_t i = n_dims; i < ELM_MAX_DIMS; i++) t->ne[i] = 1;
    if ((st = rd_u32(g, &type, "tensor type", err))) return st;
    if ((st = rd_u64(g, &t->offset, "tensor offset", err))) return st;
    const elm_type_traits *tt = elm_type_get(type);
    if (!tt)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: tensor '%s' has unsupported tensor type %u (edgelm reads %s)",
                          g->path, t->name, type, elm_type_names(false));
    t->type = (elm_type)type;
    if (t->ne[0] % tt->block_size != 0)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' row of %lld is not a multiple of the %s block size %d",
                          g->path, t->name, (long long)t->ne[0], tt->name, tt->block_size);
    uint64_t blocks = count / (uint64_t)tt->block_size;
    if (blocks > UINT64_MAX / tt->block_bytes)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' byte size overflows 64 bits",
                          g->path, t->name);
    t->nbytes = blocks * tt->block_bytes;
    return ELM_OK;
}

elm_status elm_gguf_read_tensors(elm_gguf *g, size_t max_name, elm_error *err) {
    elm_status st;
    uint32_t align = GGUF_DEFAULT_ALIGNMENT;
    const elm_gguf_kv *akv = elm_gguf_find(g, "general.alignment");
    if (akv) {
        int64_t a = 0;
        if ((st = kv_int(g, akv, &a, err))) return st;
        if (a <= 0 || a > (1 << 30) || (a & (a - 1)))
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: general.alignment %lld is not a power of two",
                              g->path, (long long)a);
        align = (uint32_t)a;
    }
    elm_gguf_tensor *ti = g->tensors =
        calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof *ti);
    if (!ti) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    st = ELM_OK;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++)
        st = read_tensor_info(g, i, max_name, &ti[i], err);
    size_t data_start = (g->pos + align - 1) / align * align;
    for (uint64_t i = 0; i < g->n_tensors && !st; i++) {
        elm_gguf_tensor *t = &ti[i];
        if (t->offset % align != 0)
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "%s: tensor '%s' offset %llu is not a multiple of the alignment %u",
                            g->path, t->name, (unsigned long long)t->offset, align);
        else if (data_start > g->size || t->offset > g->size - data_start ||
                 t->nbytes > g->size - data_start - t->offset)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' offset+size past end of file: "
                            "truncated or corrupt, its data runs past the end", g->path, t->name);
        else
            t->data = g->base + data_start + t->offset;
    }
    /* two tensors sharing bytes would alias each other's weights */
    elm_byte_range *r = st ? NULL : malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *r);
    if (!st && !r) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_tensors && !st; i++)
        r[i] = (elm_byte_range){ti[i].name, ti[i].offset, ti[i].offset + ti[i].nbytes};
    if (!st) st = elm_ranges_check_disjoint(g->path, r, (size_t)g->n_tensors, err);
    free(r);
    return st;
}
