/* safetensors reader: header parsing and validation over an mmapped file (see safetensors.h). */
#include "formats/safetensors.h"

#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/json_num.h"
#include "formats/ranges.h"

static const struct { const char *name; elm_type type; size_t size; } st_dtypes[] = {
    {"F32", ELM_TYPE_F32, 4}, {"F16", ELM_TYPE_F16, 2}, {"BF16", ELM_TYPE_BF16, 2},
    {"U8", ELM_ST_U8, 1}};

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const elm_st_tensor *)a)->name, ((const elm_st_tensor *)b)->name);
}

/* Fills t from one header entry {"dtype", "shape", "data_offsets"}; buf_size bounds the range. */
static elm_status parse_entry(const elm_st_file *f, const cJSON *e, uint64_t buf_size,
                              elm_st_tensor *t, elm_error *err) {
    const char *p = f->path, *n = t->name;
    if (!cJSON_IsObject(e))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' entry is not an object", p, n);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' needs string 'dtype', arrays 'shape' and 'data_offsets'",
                          p, n);
    size_t esize = 0;
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(dt->valuestring, st_dtypes[i].name) == 0) {
            t->type = st_dtypes[i].type;
            esize = st_dtypes[i].size;
        }
    if (!esize)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: tensor '%s' has dtype %.16s (F32, F16, BF16 and U8 are supported)", p, n,
                          dt->valuestring);
    int nd = cJSON_GetArraySize(shape);
    if (nd < 1 || nd > ELM_MAX_DIMS)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has %d dimensions (1..4 allowed)",
                          p, n, nd);
    t->n_dims = nd;
    /* Every dim >= 1 and the product below 2^53 / 4, so bytes never overflow. */
    uint64_t count = 1;
    for (int i = 0; i < nd; i++) {
        uint64_t d;
        if (!elm_json_uint(cJSON_GetArrayItem(shape, i), ELM_JSON_INT_MAX, &d) || d == 0 ||
            d > (ELM_JSON_INT_MAX / 4) / count)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' has an invalid shape", p, n);
        t->shape[i] = (int64_t)d;
        count *= d;
    }
    uint64_t b, en;
    if (cJSON_GetArraySize(offs) != 2 ||
        !elm_json_uint(cJSON_GetArrayItem(offs, 0), ELM_JSON_INT_MAX, &b) ||
        !elm_json_uint(cJSON_GetArrayItem(offs, 1), ELM_JSON_INT_MAX, &en) || b > en)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' data_offsets must be [begin, end] with begin <= end", p,
                          n);
    if (en > buf_size)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' data_offsets [%llu, %llu] past the end of the %llu-byte "
                          "buffer", p, n, (unsigned long long)b, (unsigned long long)en,
                          (unsigned long long)buf_size);
    if (en - b != count * esize)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: tensor '%s' offsets disagree with dtype x shape (%llu bytes, %s x "
                          "%llu elements needs %llu)", p, n, (unsigned long long)(en - b),
                          dt->valuestring, (unsigned long long)count,
                          (unsigned long long)(count * esize));
    t->begin = b;
    t->end = en;
    t->nbytes = (size_t)(en - b);
    return ELM_OK;
}

/* Parses the JSON header into f->tensors; data pointers are set relative to `buf`. */
static elm_status parse_header(elm_st_file *f, const char *json, size_t len, const char *buf,
                               uint64_t buf_size, elm_error *err) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: header is not a JSON object", f->path);
    }
    int n = 0;
    for (const cJSON *e = root->child; e; e = e->next) n++;
    elm_status st = ELM_OK;
    f->tensors = calloc((size_t)n + 1, sizeof *f->tensors);
    if (!f->tensors) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", f->path);
    for (const cJSON *e = root->child; e && !st; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) continue;
        elm_st_tensor *t = &f->tensors[f->n_tensors];
        if (!(t->name = strdup(e->string))) {
            st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", f->path);
            break;
        }
        f->n_tensors++;
        if ((st = parse_entry(f, e, buf_size, t, err))) break;
        t->data = buf + t->begin;
    }
    cJSON_Delete(root);
    if (st) return st;
    if (f->n_tensors == 0) return elm_errorf(err, ELM_ERR_FORMAT, "%s: no tensors", f->path);

    qsort(f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
    for (int32_t i = 1; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0)
            return elm_errorf(err, ELM_ERR_FORMAT, "%s: duplicate tensor '%s'", f->path,
                              f->tensors[i].name);
    elm_byte_range *by_off = malloc((size_t)f->n_tensors * sizeof *by_off);
    if (!by_off) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", f->path);
    for (int32_t i = 0; i < f->n_tensors; i++)
        by_off[i] = (elm_byte_range){f->tensors[i].name, f->tensors[i].begin, f->tensors[i].end};
    st = elm_ranges_check_disjoint(f->path, by_off, (size_t)f->n_tensors, err);
    free(by_off);
    return st;
}

elm_status elm_st_open(elm_st_file *f, const char *path, elm_error *err) {
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", path);
    strcpy(f->path, path);
    elm_status st = elm_map_file(path, &f->map, &f->map_size, err);
    if (st) return st;
    const unsigned char *base = f->map;
    uint64_t n = 0;
    if (f->map_size < 8) {
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: %zu bytes is too small for a safetensors header",
                        path, f->map_size);
    } else {
        for (int i = 7; i >= 0; i--) n = n << 8 | base[i];
        if (n > f->map_size - 8)
            st = elm_errorf(err, ELM_ERR_FORMAT,
                            "%s: header longer than the file (%llu bytes declared, %zu available)",
                            path, (unsigned long long)n, f->map_size - 8);
        else if (n > ELM_ST_MAX_HEADER)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: header of %llu bytes exceeds the %u limit",
                            path, (unsigned long long)n, ELM_ST_MAX_HEADER);
        else
            st = parse_header(f, (const char *)base + 8, (size_t)n, (const char *)base + 8 + n,
                              f->map_size - 8 - n, err);
    }
    if (st) elm_st_close(f);
    return st;
}

const elm_st_tensor *elm_st_find(const elm_st_file *f, const char *name) {
    if (f->n_tensors == 0) return NULL;
    elm_st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->tensors, (size_t)f->n_tensors, sizeof *f->tensors, cmp_name);
}

void elm_st_close(elm_st_file *f) {
    for (int32_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    elm_unmap(f->map, f->map_size);
    memset(f, 0, sizeof *f);
}
