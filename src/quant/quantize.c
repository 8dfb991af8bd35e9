/* Round-to-nearest model quantization (edgelm/quantize.h): plans the output type of every tensor
 * (the `llama-quantize --pure` rules), then streams the tensors through the GGUF writer, decoding
 * each row to float with its type's to_float and encoding it with the target's from_float. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgelm/quantize.h"
#include "formats/gguf_write.h"

uint32_t elm_file_type_of(elm_type type) {
    switch (type) {
    case ELM_TYPE_F32: return 0;
    case ELM_TYPE_F16: return 1;
    case ELM_TYPE_Q4_0: return 2;
    case ELM_TYPE_Q4_1: return 3;
    case ELM_TYPE_Q8_0: return 7;
    case ELM_TYPE_Q5_0: return 8;
    case ELM_TYPE_Q5_1: return 9;
    case ELM_TYPE_BF16: return 32;
    case ELM_TYPE_COUNT: break;
    }
    return 0;
}

typedef struct qjob {
    const elm_model *m;
    elm_type target;
    const elm_quantize_callbacks *cb;
    float *row; /* [widest row] */
} qjob;

/* A matrix planned as F16 instead of the target: its rows are not whole blocks. */
static bool is_fallback(const qjob *q, const elm_tensor *t) {
    return t->n_dims >= 2 && t->type != q->target;
}

/* Writer callback: tensor i of the output, converted row by row from the same-index input. */
static elm_status fill(void *user, int32_t i, const elm_tensor *t, void *dst, elm_error *err) {
    qjob *q = user;
    const elm_tensor *in = &q->m->tensors[i];
    const elm_type_traits *src_tt = elm_type_get(in->type), *dst_tt = elm_type_get(t->type);
    size_t src_row = elm_row_bytes(in->type, in->ne[0]), dst_row = elm_row_bytes(t->type, t->ne[0]);
    int64_t rows = in->ne[1] * in->ne[2] * in->ne[3];
    (void)err;
    /* warned here rather than while planning, so that an output that cannot be created fails
     * before any warning is shown */
    if (is_fallback(q, t) && q->cb && q->cb->warn) {
        char msg[256];
        snprintf(msg, sizeof msg, "tensor '%s' has rows of %lld weights, not a multiple of the %s "
                 "block size %d: written as f16", t->name, (long long)t->ne[0],
                 elm_type_get(q->target)->name, elm_type_get(q->target)->block_size);
        q->cb->warn(msg, q->cb->user);
    }
    for (int64_t r = 0; r < rows; r++) {
        src_tt->to_float((const uint8_t *)in->data + (size_t)r * src_row, q->row, in->ne[0]);
        dst_tt->from_float(q->row, (uint8_t *)dst + (size_t)r * dst_row, t->ne[0]);
    }
    if (q->cb && q->cb->progress) q->cb->progress(i + 1, q->m->n_tensors, t->name, q->cb->user);
    return ELM_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

elm_status elm_quantize_model(const elm_model *m, elm_type type, const char *out_path,
                              const elm_quantize_callbacks *cb, elm_quantize_summary *summary,
                              elm_error *err) {
    double t0 = now_s();
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    if (!tt)
        return elm_errorf(err, ELM_ERR_ARG, "%s: unsupported target type %d", out_path, (int)type);
    elm_quantize_summary sum = {0};
    elm_tensor *out = calloc(m->n_tensors ? (size_t)m->n_tensors : 1, sizeof *out);
    if (!out) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
    qjob job = {.m = m, .target = type, .cb = cb};
    int64_t widest = 1;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *in = &m->tensors[i];
        elm_tensor *t = &out[i];
        *t = *in;
        t->data = NULL;
        t->type = in->n_dims >= 2 ? type : ELM_TYPE_F32;
        if (!elm_row_bytes(t->type, t->ne[0])) t->type = ELM_TYPE_F16;
        sum.n_fallback += is_fallback(&job, t);
        t->nbytes = elm_row_bytes(t->type, t->ne[0]) * (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        if (in->ne[0] > widest) widest = in->ne[0];
        sum.n_params += in->ne[0] * in->ne[1] * in->ne[2] * in->ne[3];
        sum.bytes_in += in->nbytes;
        sum.bytes_out += t->nbytes;
    }
    job.row = malloc((size_t)widest * sizeof(float));
    elm_status st;
    if (!job.row) {
        st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", out_path);
    } else {
        elm_gguf_out src = {.m = m, .tensors = out, .n_tensors = m->n_tensors,
                            .file_type = elm_file_type_of(type), .fill = fill, .user = &job};
        st = elm_gguf_write(out_path, &src, &sum.file_bytes, err);
    }
    free(job.row);
    free(out);
    if (st) return st;
    sum.n_tensors = m->n_tensors;
    sum.bits_per_weight = sum.n_params ? 8.0 * (double)sum.bytes_out / (double)sum.n_params : 0;
    sum.ratio = sum.bytes_out ? (double)sum.bytes_in / (double)sum.bytes_out : 0;
    sum.seconds = now_s() - t0;
    if (summary) *summary = sum;
    return ELM_OK;
}
