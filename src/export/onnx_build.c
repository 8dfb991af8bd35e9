/* ONNX graph builder over protobuf-c's generated messages (onnx_build.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "export/onnx_build.h"

static void *own(ox_graph *g, void *p) {
    if (!p) {
        g->oom = true;
        return NULL;
    }
    if (g->n_owned == g->cap_owned) {
        size_t cap = g->cap_owned ? g->cap_owned * 2 : 256;
        void **q = realloc(g->owned, cap * sizeof *q);
        if (!q) {
            free(p);
            g->oom = true;
            return NULL;
        }
        g->owned = q;
        g->cap_owned = cap;
    }
    return g->owned[g->n_owned++] = p;
}

static void *zalloc(ox_graph *g, size_t n) { return g->oom ? NULL : own(g, calloc(1, n ? n : 1)); }

static char *dup(ox_graph *g, const char *s) { return g->oom ? NULL : own(g, strdup(s)); }

const char *ox_name(ox_graph *g, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return dup(g, buf);
}

/* Appends p to the array *arr of *n elements with capacity *cap (arrays are not in `owned`: they
 * move as they grow, and ox_free frees them). */
static void push(ox_graph *g, void ***arr, size_t *n, size_t *cap, void *p) {
    if (g->oom || !p) {
        g->oom = true;
        return;
    }
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        void **q = realloc(*arr, c * sizeof *q);
        if (!q) {
            g->oom = true;
            return;
        }
        *arr = q;
        *cap = c;
    }
    (*arr)[(*n)++] = p;
}

void ox_init(ox_graph *g, const char *graph_name, FILE *data, const char *data_name,
             const char *data_path) {
    memset(g, 0, sizeof *g);
    Onnx__GraphProto init = ONNX__GRAPH_PROTO__INIT;
    g->g = init;
    g->g.name = dup(g, graph_name);
    g->data = data;
    g->data_name = data_name;
    g->data_path = data_path;
    g->inline_max = 1024;
}

void ox_free(ox_graph *g) {
    for (size_t i = 0; i < g->n_owned; i++) free(g->owned[i]);
    free(g->owned);
    free(g->g.node);
    free(g->g.initializer);
    free(g->g.input);
    free(g->g.output);
    memset(g, 0, sizeof *g);
}

const char *ox_op(ox_graph *g, const char *domain, const char *op, const char *out, ...) {
    Onnx__NodeProto *n = zalloc(g, sizeof *n);
    if (!n) return "";
    Onnx__NodeProto init = ONNX__NODE_PROTO__INIT;
    *n = init;
    const char *in[16];
    size_t n_in = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *s; (s = va_arg(ap, const char *)) && n_in < 16;) in[n_in++] = s;
    va_end(ap);
    n->input = zalloc(g, n_in * sizeof(char *));
    n->output = zalloc(g, sizeof(char *));
    if (!n->input || !n->output) return "";
    for (size_t i = 0; i < n_in; i++) n->input[i] = dup(g, in[i]);
    n->n_input = n_in;
    n->output[0] = out ? dup(g, out) : (char *)ox_name(g, "v%d", g->next_id++);
    n->n_output = 1;
    n->op_type = dup(g, op);
    n->name = (char *)ox_name(g, "%s_%zu", op, g->g.n_node);
    if (domain && *domain) n->domain = dup(g, domain);
    push(g, (void ***)&g->g.node, &g->g.n_node, &g->cap_node, n);
    g->last = n;
    return n->output[0] ? n->output[0] : "";
}

static Onnx__AttributeProto *attr(ox_graph *g, const char *name, Onnx__AttributeProto__AttributeType t) {
    Onnx__NodeProto *n = g->last;
    Onnx__AttributeProto *a = zalloc(g, sizeof *a);
    if (!a || !n) return NULL;
    Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = init;
    a->name = dup(g, name);
    a->has_type = 1;
    a->type = t;
    /* attribute arrays are small: re-allocated into `owned` each time */
    Onnx__AttributeProto **arr = zalloc(g, (n->n_attribute + 1) * sizeof *arr);
    if (!arr) return NULL;
    if (n->n_attribute) memcpy(arr, n->attribute, n->n_attribute * sizeof *arr);
    arr[n->n_attribute++] = a;
    n->attribute = arr;
    return a;
}

void ox_attr_i(ox_graph *g, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (a) a->has_i = 1, a->i = v;
}

void ox_attr_f(ox_graph *g, const char *name, float v) {
    Onnx__AttributeProto *a = attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (a) a->has_f = 1, a->f = v;
}

void ox_attr_ints(ox_graph *g, const char *name, const int64_t *v, size_t n) {
    Onnx__AttributeProto *a = attr(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = zalloc(g, n * sizeof *c);
    if (!a || !c) return;
    memcpy(c, v, n * sizeof *c);
    a->ints = c;
    a->n_ints = n;
}

static Onnx__StringStringEntryProto *entry(ox_graph *g, const char *k, const char *v) {
    Onnx__StringStringEntryProto *e = zalloc(g, sizeof *e);
    if (!e) return NULL;
    Onnx__StringStringEntryProto init = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    *e = init;
    e->key = dup(g, k);
    e->value = dup(g, v);
    return e;
}

/* Appends nbytes at a 64-byte aligned offset of the external data file; returns the offset. */
static uint64_t write_external(ox_graph *g, const void *data, size_t nbytes) {
    static const char zeros[64];
    const size_t pad = (size_t)((64 - g->data_off % 64) % 64);
    if (fwrite(zeros, 1, pad, g->data) != pad || fwrite(data, 1, nbytes, g->data) != nbytes)
        g->io_failed = true;
    g->data_off += pad;
    const uint64_t off = g->data_off;
    g->data_off += nbytes;
    return off;
}

const char *ox_init_raw(ox_graph *g, const char *name, int type, const int64_t *dims, int nd,
                        const void *data, size_t nbytes) {
    Onnx__TensorProto *t = zalloc(g, sizeof *t);
    int64_t *d = zalloc(g, (size_t)nd * sizeof *d);
    if (!t || !d) return "";
    Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
    *t = init;
    if (nd) memcpy(d, dims, (size_t)nd * sizeof *d);
    t->dims = d;
    t->n_dims = (size_t)nd;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = name ? dup(g, name) : (char *)ox_name(g, "c%d", g->next_id++);
    const Onnx__TensorProto *prev = NULL;
    for (size_t i = 0; g->shared && t->name && i < g->shared->g.n_initializer; i++)
        if (g->shared->g.initializer[i]->n_external_data &&
            !strcmp(g->shared->g.initializer[i]->name, t->name))
            prev = g->shared->g.initializer[i];
    if (prev) { /* the same bytes are in the data file already */
        t->external_data = zalloc(g, 3 * sizeof *t->external_data);
        if (!t->external_data) return "";
        for (int i = 0; i < 3; i++)
            t->external_data[i] = entry(g, prev->external_data[i]->key, prev->external_data[i]->value);
        t->n_external_data = 3;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    } else if (nbytes < g->inline_max || !g->data) {
        void *copy = zalloc(g, nbytes);
        if (!copy) return "";
        memcpy(copy, data, nbytes);
        t->has_raw_data = 1;
        t->raw_data.data = copy;
        t->raw_data.len = nbytes;
    } else {
        char off[32], len[32];
        snprintf(off, sizeof off, "%llu", (unsigned long long)write_external(g, data, nbytes));
        snprintf(len, sizeof len, "%zu", nbytes);
        t->external_data = zalloc(g, 3 * sizeof *t->external_data);
        if (!t->external_data) return "";
        t->external_data[0] = entry(g, "location", g->data_name);
        t->external_data[1] = entry(g, "offset", off);
        t->external_data[2] = entry(g, "length", len);
        t->n_external_data = 3;
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    }
    push(g, (void ***)&g->g.initializer, &g->g.n_initializer, &g->cap_init, t);
    return t->name ? t->name : "";
}

const char *ox_i64(ox_graph *g, const int64_t *v, size_t n) {
    const int64_t dims[1] = {(int64_t)n};
    return ox_init_raw(g, NULL, OX_INT64, dims, 1, v, n * sizeof *v);
}

const char *ox_f32(ox_graph *g, const float *v, size_t n) {
    const int64_t dims[1] = {(int64_t)n};
    return ox_init_raw(g, NULL, OX_FLOAT, dims, 1, v, n * sizeof *v);
}

const char *ox_scalar_f32(ox_graph *g, float v) {
    return ox_init_raw(g, NULL, OX_FLOAT, NULL, 0, &v, sizeof v);
}

const char *ox_scalar_i64(ox_graph *g, int64_t v) {
    return ox_init_raw(g, NULL, OX_INT64, NULL, 0, &v, sizeof v);
}

static Onnx__ValueInfoProto *value_info(ox_graph *g, const char *name, int type, int nd,
                                        const int64_t *dims, const char *const *sym) {
    Onnx__ValueInfoProto *vi = zalloc(g, sizeof *vi);
    Onnx__TypeProto *tp = zalloc(g, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = zalloc(g, sizeof *tt);
    Onnx__TensorShapeProto *sh = zalloc(g, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dd = zalloc(g, (size_t)nd * sizeof *dd);
    if (!vi || !tp || !tt || !sh || !dd) return NULL;
    Onnx__ValueInfoProto vi0 = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__TypeProto tp0 = ONNX__TYPE_PROTO__INIT;
    Onnx__TypeProto__Tensor tt0 = ONNX__TYPE_PROTO__TENSOR__INIT;
    Onnx__TensorShapeProto sh0 = ONNX__TENSOR_SHAPE_PROTO__INIT;
    *vi = vi0, *tp = tp0, *tt = tt0, *sh = sh0;
    for (int i = 0; i < nd; i++) {
        Onnx__TensorShapeProto__Dimension d0 = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (!(dd[i] = zalloc(g, sizeof *dd[i]))) return NULL;
        *dd[i] = d0;
        if (dims[i] >= 0) {
            dd[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dd[i]->dim_value = dims[i];
        } else {
            dd[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dd[i]->dim_param = dup(g, sym[i]);
        }
    }
    sh->dim = dd;
    sh->n_dim = (size_t)nd;
    tt->has_elem_type = 1;
    tt->elem_type = type;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = dup(g, name);
    vi->type = tp;
    return vi;
}

void ox_input(ox_graph *g, const char *name, int type, int nd, const int64_t *dims,
              const char *const *sym) {
    push(g, (void ***)&g->g.input, &g->g.n_input, &g->cap_in, value_info(g, name, type, nd, dims, sym));
}

void ox_output(ox_graph *g, const char *name, int type, int nd, const int64_t *dims,
               const char *const *sym) {
    push(g, (void ***)&g->g.output, &g->g.n_output, &g->cap_out,
         value_info(g, name, type, nd, dims, sym));
}

elm_status ox_error(const ox_graph *g, elm_error *err) {
    if (g->oom) return elm_errorf(err, ELM_ERR_NOMEM, "ONNX graph: out of memory");
    if (g->io_failed || (g->data && ferror(g->data)))
        return elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", g->data_path, strerror(errno));
    return ELM_OK;
}

elm_status ox_write_model(ox_graph *g, int64_t ir, const char *const *domains,
                          const int64_t *versions, size_t n, const char *path, elm_error *err) {
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    Onnx__OperatorSetIdProto **ops = zalloc(g, n * sizeof *ops);
    for (size_t i = 0; ops && i < n; i++) {
        Onnx__OperatorSetIdProto o0 = ONNX__OPERATOR_SET_ID_PROTO__INIT;
        if (!(ops[i] = zalloc(g, sizeof *ops[i]))) break;
        *ops[i] = o0;
        ops[i]->domain = dup(g, domains[i]);
        ops[i]->has_version = 1;
        ops[i]->version = versions[i];
    }
    const elm_status st = ox_error(g, err);
    if (st) return st;
    mp.has_ir_version = 1;
    mp.ir_version = ir;
    mp.opset_import = ops;
    mp.n_opset_import = n;
    mp.producer_name = "edgelm";
    mp.graph = &g->g;
    const size_t len = onnx__model_proto__get_packed_size(&mp);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory packing the model", path);
    onnx__model_proto__pack(&mp, buf);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f)) ok = false;
    free(buf);
    if (!ok) return elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return ELM_OK;
}
