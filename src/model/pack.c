/* elm_model_pack (builder.h): the layers' matrices in the kernel table's layout, in place. */
#include <stdlib.h>
#include <string.h>

#include "model/builder.h"

/* Whether t is one of m's own tensors (not a row view of a fused one, which lives in storage). */
static bool own_tensor(const elm_model *m, const elm_tensor *t) {
    return t >= m->tensors && t < m->tensors + m->n_tensors;
}

/* Whether some row view of the model's layers points into t's bytes. */
static bool viewed(const elm_model *m, const elm_tensor *t) {
    const char *lo = t->data, *hi = lo + t->nbytes;
    for (int l = 0; l < m->hp.n_layers; l++) {
        const elm_tensor *w[ELM_LAYER_MATRICES];
        const int n = elm_layer_matrices(&m->layers[l], w);
        for (int i = 0; i < n; i++)
            if (!own_tensor(m, w[i]) && (const char *)w[i]->data >= lo &&
                (const char *)w[i]->data < hi)
                return true;
    }
    return false;
}

/* Packs t (a matrix, or a stack of experts' matrices {cols, rows, n}: each expert's rows alone,
 * so that a view of one expert's rows is a packed matrix too) in place, through a copy of one
 * matrix's bytes. */
static elm_status pack_one(const elm_model *m, const elm_kernels *k, elm_tensor *t,
                           elm_error *err) {
    if (!t || t->packed_by || !own_tensor(m, t) || !k->packs(t->type, t->ne[1], t->ne[0]) ||
        viewed(m, t))
        return ELM_OK;
    const size_t bytes = (size_t)t->ne[1] * elm_row_bytes(t->type, t->ne[0]);
    void *copy = malloc(bytes);
    if (!copy)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory packing tensor '%s'", m->path,
                          t->name);
    for (size_t off = 0; off + bytes <= t->nbytes; off += bytes) {
        memcpy(copy, (char *)t->data + off, bytes);
        k->pack(&(elm_weights){t->type, copy, t->ne[1], t->ne[0], NULL}, (char *)t->data + off);
    }
    free(copy);
    t->packed_by = k;
    return ELM_OK;
}

elm_status elm_model_pack(elm_model *m, const elm_kernels *k, elm_error *err) {
    if (!k->packs || !m->layers) return ELM_OK;
    elm_status st = m->output != m->tok_embd ? pack_one(m, k, m->output, err) : ELM_OK;
    for (int l = 0; l < m->hp.n_layers && !st; l++) {
        const elm_tensor *w[ELM_LAYER_MATRICES];
        const int n = elm_layer_matrices(&m->layers[l], w);
        /* the model's own tensors (own_tensor): writable here */
        for (int i = 0; i < n && !st; i++) st = pack_one(m, k, (elm_tensor *)w[i], err);
    }
    return st;
}
