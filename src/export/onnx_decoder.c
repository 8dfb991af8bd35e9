/* The decoder graph (onnx_decoder.h). Shapes: B batch, S new tokens, P cached, T = P + S, D dim,
 * H query heads, G = H / KV heads, hd head_dim. Attention groups the query heads of one KV head
 * as rows ([B, KV, G·S, hd]) so grouped-query attention needs no repeated keys. */
#include <math.h>
#include <stdlib.h>

#include "export/onnx_decoder.h"

typedef struct {
    ox_graph *g;
    const elm_model *m;
    elm_export_warn_fn warn;
    void *user;
    const ox_act_quant *aq; /* the linear inputs' QDQ pairs, or NULL */
    const char *cos, *sin; /* [B, S, 1, hd/2] at the tokens' positions */
    const char *mask;      /* [B, 1, S, T] bool: may attend */
    const char *neg;       /* the masked score */
} dec;

elm_status ox_decoder_check(const elm_model *m, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    for (int l = 0; l < hp->n_layers; l++)
        if (elm_layer_recurrent(hp, l))
            return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                              "%s: architecture '%s': recurrent layers (layer %d) are not "
                              "supported by the ONNX export", m->path, hp->arch, l);
    if (hp->n_expert > 0)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: architecture '%s': mixtures of experts "
                          "are not supported by the ONNX export", m->path, hp->arch);
    if (hp->ffn_act != ELM_ACT_SILU || hp->embd_scale != 1.0f || hp->residual_scale != 1.0f ||
        hp->logit_scale != 1.0f || hp->no_rope ||
        hp->attn_scale != 1.0f / sqrtf((float)hp->head_dim))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: architecture '%s' is not supported by the ONNX export (GeGLU, "
                          "scaled embeddings or Granite's multipliers)", m->path, hp->arch);
    if (m->rope_long || (hp->rope_attn_factor > 0 && hp->rope_attn_factor != 1.0f))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: architecture '%s': LongRoPE (rope_factors_long/short) and RoPE "
                          "attention factors are not supported by the ONNX export", m->path,
                          hp->arch);
    if (hp->rope_dim != hp->head_dim || hp->head_dim % 2)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "%s: architecture '%s': partial RoPE (%d of %d dims) is not supported by "
                          "the ONNX export", m->path, hp->arch, hp->rope_dim, hp->head_dim);
    return ELM_OK;
}

static const char *shape_const(ox_graph *g, int64_t a, int64_t b, int64_t c, int64_t d, int n) {
    const int64_t v[5] = {a, b, c, d, 0};
    return ox_i64(g, v, (size_t)n);
}

/* RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · w. */
static const char *rmsnorm(dec *d, const char *x, const elm_tensor *w) {
    ox_graph *g = d->g;
    const int64_t axes[1] = {-1};
    const char *sq = ox_op(g, "", "Mul", NULL, x, x, NULL);
    const char *mean;
    if (g->opset >= 18) {
        mean = ox_op(g, "", "ReduceMean", NULL, sq, ox_i64(g, axes, 1), NULL);
    } else {
        mean = ox_op(g, "", "ReduceMean", NULL, sq, NULL);
        ox_attr_ints(g, "axes", axes, 1);
    }
    ox_attr_i(g, "keepdims", 1);
    const char *r = ox_op(g, "", "Sqrt", NULL,
                          ox_op(g, "", "Add", NULL, mean, ox_scalar_f32(g, d->m->hp.rms_eps), NULL), NULL);
    const char *y = ox_op(g, "", "Div", NULL, x, r, NULL);
    const int64_t dims[1] = {w->ne[0]};
    float *wf = malloc(sizeof(float) * (size_t)w->ne[0]);
    if (!wf) {
        g->oom = true;
        return "";
    }
    elm_type_get(w->type)->to_float(w->data, wf, w->ne[0]);
    const char *wn = ox_init_raw(g, w->name, OX_FLOAT, dims, 1, wf, sizeof(float) * (size_t)w->ne[0]);
    free(wf);
    return ox_op(g, "", "Mul", NULL, y, wn, NULL);
}

/* Linear layer plus optional bias. */
static const char *linear(dec *d, const elm_tensor *w, const elm_tensor *b, const char *x) {
    const char *y = ox_linear(d->g, w, x, d->warn, d->user);
    if (!b) return y;
    const int64_t dims[1] = {b->ne[0]};
    return ox_op(d->g, "", "Add", NULL, y, ox_init_raw(d->g, b->name, OX_FLOAT, dims, 1, b->data, b->nbytes), NULL);
}

/* RoPE on x [B, S, n, hd]: interleaved pairs (x[2i], x[2i+1]) or NEOX halves (x[i], x[i+hd/2]),
 * each rotated by (cos, sin) of its frequency: (a·c - b·s, a·s + b·c) as the kernels compute. */
static const char *rope(dec *d, const char *x, int n) {
    ox_graph *g = d->g;
    const int hd = d->m->hp.head_dim;
    const bool neox = d->m->hp.rope_style == ELM_ROPE_NEOX;
    const int axis = neox ? 3 : 4; /* the pair axis of the 5-D view */
    const char *v = ox_op(g, "", "Reshape", NULL, x,
                          neox ? ox_i64(g, (int64_t[]){0, 0, n, 2, hd / 2}, 5)
                               : ox_i64(g, (int64_t[]){0, 0, n, hd / 2, 2}, 5), NULL);
    const char *a = ox_op(g, "", "Gather", NULL, v, ox_scalar_i64(g, 0), NULL);
    ox_attr_i(g, "axis", axis);
    const char *b = ox_op(g, "", "Gather", NULL, v, ox_scalar_i64(g, 1), NULL);
    ox_attr_i(g, "axis", axis);
    /* a, b: [B, S, n, hd/2]; cos, sin broadcast over n */
    const char *o0 = ox_op(g, "", "Sub", NULL, ox_op(g, "", "Mul", NULL, a, d->cos, NULL),
                           ox_op(g, "", "Mul", NULL, b, d->sin, NULL), NULL);
    const char *o1 = ox_op(g, "", "Add", NULL, ox_op(g, "", "Mul", NULL, a, d->sin, NULL),
                           ox_op(g, "", "Mul", NULL, b, d->cos, NULL), NULL);
    const char *ax = ox_i64(g, (int64_t[]){axis}, 1);
    const char *cat = ox_op(g, "", "Concat", NULL, ox_op(g, "", "Unsqueeze", NULL, o0, ax, NULL),
                            ox_op(g, "", "Unsqueeze", NULL, o1, ax, NULL), NULL);
    ox_attr_i(g, "axis", axis);
    return ox_op(g, "", "Reshape", NULL, cat, shape_const(g, 0, 0, n, hd, 4), NULL);
}

static const char *transpose(ox_graph *g, const char *x, int64_t a, int64_t b, int64_t c, int64_t e) {
    const char *y = ox_op(g, "", "Transpose", NULL, x, NULL);
    ox_attr_ints(g, "perm", (int64_t[]){a, b, c, e}, 4);
    return y;
}

static const char *layer(dec *d, int l, const char *x) {
    ox_graph *g = d->g;
    const elm_hparams *hp = &d->m->hp;
    const elm_layer *L = &d->m->layers[l];
    const int H = hp->n_heads, KV = hp->n_kv_heads, hd = hp->head_dim;

    const char *h = ox_act_qdq(g, d->aq, L->wq, rmsnorm(d, x, L->attn_norm));
    const char *q = ox_op(g, "", "Reshape", NULL, linear(d, L->wq, L->bq, h), shape_const(g, 0, 0, H, hd, 4), NULL);
    const char *k = ox_op(g, "", "Reshape", NULL, linear(d, L->wk, L->bk, h), shape_const(g, 0, 0, KV, hd, 4), NULL);
    const char *v = ox_op(g, "", "Reshape", NULL, linear(d, L->wv, L->bv, h), shape_const(g, 0, 0, KV, hd, 4), NULL);
    q = transpose(g, rope(d, q, H), 0, 2, 1, 3); /* [B, H, S, hd] */
    k = transpose(g, rope(d, k, KV), 0, 2, 1, 3);
    v = transpose(g, v, 0, 2, 1, 3);
    const char *pk = ox_op(g, "", "Concat", ox_name(g, "present.%d.key", l),
                           ox_name(g, "past_key_values.%d.key", l), k, NULL);
    ox_attr_i(g, "axis", 2);
    const char *pv = ox_op(g, "", "Concat", ox_name(g, "present.%d.value", l),
                           ox_name(g, "past_key_values.%d.value", l), v, NULL);
    ox_attr_i(g, "axis", 2);

    const char *qg = ox_op(g, "", "Reshape", NULL, q, shape_const(g, 0, KV, -1, hd, 4), NULL);
    const char *s = ox_op(g, "", "MatMul", NULL, qg, transpose(g, pk, 0, 1, 3, 2), NULL);
    s = ox_op(g, "", "Mul", NULL, s, ox_scalar_f32(g, 1.0f / sqrtf((float)hd)), NULL);
    s = ox_op(g, "", "Reshape", NULL, s, shape_const(g, 0, H, -1, 0, 4), NULL); /* [B, H, S, T] */
    s = ox_op(g, "", "Where", NULL, d->mask, s, d->neg, NULL);
    const char *p = ox_op(g, "", "Softmax", NULL, s, NULL);
    ox_attr_i(g, "axis", -1);
    p = ox_op(g, "", "Reshape", NULL, p, shape_const(g, 0, KV, -1, 0, 4), NULL);
    const char *a = ox_op(g, "", "MatMul", NULL, p, pv, NULL); /* [B, KV, G·S, hd] */
    a = ox_op(g, "", "Reshape", NULL, a, shape_const(g, 0, H, -1, hd, 4), NULL);
    a = ox_op(g, "", "Reshape", NULL, transpose(g, a, 0, 2, 1, 3), shape_const(g, 0, 0, (int64_t)H * hd, 0, 3), NULL);
    x = ox_op(g, "", "Add", NULL, x, linear(d, L->wo, NULL, ox_act_qdq(g, d->aq, L->wo, a)), NULL);

    h = ox_act_qdq(g, d->aq, L->w_gate, rmsnorm(d, x, L->ffn_norm));
    const char *gate = linear(d, L->w_gate, NULL, h), *up = linear(d, L->w_up, NULL, h);
    const char *act = ox_op(g, "", "Mul", NULL,
                            ox_op(g, "", "Mul", NULL, gate, ox_op(g, "", "Sigmoid", NULL, gate, NULL), NULL),
                            up, NULL);
    return ox_op(g, "", "Add", NULL, x, linear(d, L->w_down, NULL, ox_act_qdq(g, d->aq, L->w_down, act)), NULL);
}

/* cos/sin of every position's angles, looked up at position_ids: [B, S, 1, hd/2]. */
static void rope_tables(dec *d, const float *inv_freq, int32_t n_pos) {
    ox_graph *g = d->g;
    const int half = d->m->hp.rope_dim / 2;
    float *c = malloc(sizeof(float) * (size_t)n_pos * half), *s = malloc(sizeof(float) * (size_t)n_pos * half);
    if (!c || !s) {
        g->oom = true;
    } else {
        /* the same float arithmetic as the forward pass's rope_tables */
        for (int32_t p = 0; p < n_pos; p++)
            for (int i = 0; i < half; i++) {
                const float angle = (float)p * inv_freq[i];
                c[(size_t)p * half + i] = cosf(angle);
                s[(size_t)p * half + i] = sinf(angle);
            }
        const int64_t dims[2] = {n_pos, half};
        const char *ax = ox_i64(g, (int64_t[]){2}, 1);
        const char *ct = ox_init_raw(g, "rope.cos", OX_FLOAT, dims, 2, c, sizeof(float) * (size_t)n_pos * half);
        const char *st = ox_init_raw(g, "rope.sin", OX_FLOAT, dims, 2, s, sizeof(float) * (size_t)n_pos * half);
        d->cos = ox_op(g, "", "Unsqueeze", NULL, ox_op(g, "", "Gather", NULL, ct, "position_ids", NULL), ax, NULL);
        d->sin = ox_op(g, "", "Unsqueeze", NULL, ox_op(g, "", "Gather", NULL, st, "position_ids", NULL), ax, NULL);
    }
    free(c);
    free(s);
}

/* Causal mask over cache positions 0..T-1 for queries at P..T-1, within the sliding window when
 * the model has one, and where attention_mask is 1. */
static void mask(dec *d) {
    ox_graph *g = d->g;
    const char *i1 = ox_scalar_i64(g, 1);
    const char *S = ox_op(g, "", "Gather", NULL, ox_op(g, "", "Shape", NULL, "input_ids", NULL), i1, NULL);
    const char *T = ox_op(g, "", "Gather", NULL, ox_op(g, "", "Shape", NULL, "attention_mask", NULL), i1, NULL);
    const char *qpos = ox_op(g, "", "Range", NULL, ox_op(g, "", "Sub", NULL, T, S, NULL), T, i1, NULL);
    const char *kpos = ox_op(g, "", "Range", NULL, ox_scalar_i64(g, 0), T, i1, NULL);
    const char *qcol = ox_op(g, "", "Unsqueeze", NULL, qpos, ox_i64(g, (int64_t[]){1}, 1), NULL);
    const char *krow = ox_op(g, "", "Unsqueeze", NULL, kpos, ox_i64(g, (int64_t[]){0}, 1), NULL);
    const char *m = ox_op(g, "", "LessOrEqual", NULL, krow, qcol, NULL); /* [S, T] */
    if (d->m->hp.n_swa > 0) {
        const char *lo = ox_op(g, "", "Sub", NULL, qcol, ox_scalar_i64(g, d->m->hp.n_swa), NULL);
        m = ox_op(g, "", "And", NULL, m, ox_op(g, "", "Greater", NULL, krow, lo, NULL), NULL);
    }
    const char *am = ox_op(g, "", "Cast", NULL, "attention_mask", NULL);
    ox_attr_i(g, "to", OX_BOOL);
    am = ox_op(g, "", "Unsqueeze", NULL, am, ox_i64(g, (int64_t[]){1, 2}, 2), NULL); /* [B,1,1,T] */
    d->mask = ox_op(g, "", "And", NULL, m, am, NULL);
    d->neg = ox_scalar_f32(g, -INFINITY);
}

void ox_decoder(ox_graph *g, const elm_model *m, const float *inv_freq, int32_t n_pos,
                int64_t seq, int64_t past, const ox_act_quant *aq, elm_export_warn_fn warn,
                void *user) {
    const elm_hparams *hp = &m->hp;
    dec d = {.g = g, .m = m, .warn = warn, .user = user, .aq = aq};
    const char *bs[] = {"batch_size", "sequence_length"};
    const char *bt[] = {"batch_size", "total_sequence_length"};
    const char *kvp[] = {"batch_size", "", "past_sequence_length", ""};
    const char *kvt[] = {"batch_size", "", "total_sequence_length", ""};
    const char *lg[] = {"batch_size", "sequence_length", ""};
    /* -1: the symbolic dimension named above */
    const int64_t B = seq < 0 ? -1 : 1, T = seq < 0 ? -1 : seq + past;
    const int64_t ids[2] = {B, seq}, mask_dims[2] = {B, T};
    const int64_t kv[4] = {B, hp->n_kv_heads, seq < 0 ? -1 : past, hp->head_dim};
    const int64_t kv_out[4] = {B, hp->n_kv_heads, T, hp->head_dim};
    const int64_t lgd[3] = {B, seq, hp->n_vocab};
    ox_input(g, "input_ids", OX_INT64, 2, ids, bs);
    ox_input(g, "attention_mask", OX_INT64, 2, mask_dims, bt);
    ox_input(g, "position_ids", OX_INT64, 2, ids, bs);
    for (int l = 0; l < hp->n_layers; l++) {
        ox_input(g, ox_name(g, "past_key_values.%d.key", l), OX_FLOAT, 4, kv, kvp);
        ox_input(g, ox_name(g, "past_key_values.%d.value", l), OX_FLOAT, 4, kv, kvp);
    }
    ox_output(g, "logits", OX_FLOAT, 3, lgd, lg);
    for (int l = 0; l < hp->n_layers; l++) {
        ox_output(g, ox_name(g, "present.%d.key", l), OX_FLOAT, 4, kv_out, kvt);
        ox_output(g, ox_name(g, "present.%d.value", l), OX_FLOAT, 4, kv_out, kvt);
    }
    rope_tables(&d, inv_freq, n_pos);
    mask(&d);
    const char *x = ox_op(g, "", "Gather", NULL, ox_table_f32(g, m->tok_embd), "input_ids", NULL);
    for (int l = 0; l < hp->n_layers && !g->oom; l++) x = layer(&d, l, x);
    x = ox_act_qdq(g, aq, m->output, rmsnorm(&d, x, m->output_norm));
    ox_op(g, "", "Identity", "logits", ox_linear(g, m->output, x, warn, user), NULL);
}
