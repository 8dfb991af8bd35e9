/* A small builder over the C message types protoc-c generates from onnx.proto (Debian
 * libonnx-dev): nodes with generated output names, initializers whose bytes go to an external
 * data file as they are added (so memory holds about one tensor), graph inputs/outputs with
 * symbolic dimensions, and the packed ModelProto. Every string and message is owned by the
 * builder and freed by ox_free. */
#ifndef EDGELM_EXPORT_ONNX_BUILD_H
#define EDGELM_EXPORT_ONNX_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "edgelm/error.h"
#include "onnx.pb-c.h"

/* ONNX TensorProto.DataType values used here. */
enum { OX_FLOAT = 1, OX_UINT8 = 2, OX_INT8 = 3, OX_UINT16 = 4, OX_INT64 = 7, OX_BOOL = 9, OX_FLOAT16 = 10,
       OX_UINT4 = 21, OX_INT4 = 22 };

typedef struct ox_graph {
    Onnx__GraphProto g;
    size_t cap_node, cap_init, cap_in, cap_out;
    void **owned; /* every allocation, freed by ox_free */
    size_t n_owned, cap_owned;
    bool oom;     /* an allocation failed: later calls do nothing, ox_error reports it */
    int next_id;  /* generated value names "v<id>" */
    Onnx__NodeProto *last; /* the node ox_op added last, for its attributes */
    int accuracy_level;    /* MatMulNBits' accuracy_level (onnx_linear.h) */
    bool qdq;              /* weights as DequantizeLinear (opset 21, blocked) + MatMul */
    int opset;             /* of the default domain: Reduce* take axes as an input from 18 */
    /* external initializers already written by another graph of the same data file, by name:
     * a graph built after `shared` references them instead of writing them again */
    const struct ox_graph *shared;
    /* external data: initializers of at least inline_max bytes are appended to data (64-byte
     * aligned offsets) under the file name data_name */
    FILE *data;
    const char *data_name, *data_path;
    uint64_t data_off;
    size_t inline_max;
    bool io_failed;
} ox_graph;

/* Starts an empty graph whose large initializers go to the open file `data`, named data_name in
 * the model (data_path in error messages). */
void ox_init(ox_graph *g, const char *graph_name, FILE *data, const char *data_name,
             const char *data_path);
void ox_free(ox_graph *g);

/* A node op(in...) in domain ("" for ONNX) with one output, named by the builder unless out is
 * given; NULL-terminated inputs ("" is an omitted optional input). Returns the output name. */
const char *ox_op(ox_graph *g, const char *domain, const char *op, const char *out, ...);
/* Attributes of the last node. */
void ox_attr_i(ox_graph *g, const char *name, int64_t v);
void ox_attr_f(ox_graph *g, const char *name, float v);
void ox_attr_ints(ox_graph *g, const char *name, const int64_t *v, size_t n);

/* An initializer of `type` and shape dims[nd] from nbytes of little-endian data; returns its name
 * (given or generated). Large ones are written to the external data file now. */
const char *ox_init_raw(ox_graph *g, const char *name, int type, const int64_t *dims, int nd,
                        const void *data, size_t nbytes);
/* 1-D int64 and float constants. */
const char *ox_i64(ox_graph *g, const int64_t *v, size_t n);
const char *ox_f32(ox_graph *g, const float *v, size_t n);
const char *ox_scalar_f32(ox_graph *g, float v);
const char *ox_scalar_i64(ox_graph *g, int64_t v);

/* A graph input or output of `type` with dims: dims[i] >= 0 fixed, < 0 the symbolic sym[i]. */
void ox_input(ox_graph *g, const char *name, int type, int nd, const int64_t *dims,
              const char *const *sym);
void ox_output(ox_graph *g, const char *name, int type, int nd, const int64_t *dims,
               const char *const *sym);

/* Reports an allocation or external-data write failure (ELM_ERR_NOMEM / ELM_ERR_IO), else ELM_OK. */
elm_status ox_error(const ox_graph *g, elm_error *err);

/* Packs a ModelProto (IR version ir, the given opsets: domain/version pairs, n of them) holding
 * the graph and writes it to path. */
elm_status ox_write_model(ox_graph *g, int64_t ir, const char *const *domains,
                          const int64_t *versions, size_t n, const char *path, elm_error *err);

/* A name "prefix<id>" owned by the graph. */
const char *ox_name(ox_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
