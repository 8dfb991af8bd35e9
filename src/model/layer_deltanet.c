/* The Gated DeltaNet layer kind of Qwen3.5 (layer_kind.h): linear attention whose state, per
 * value head, is a matrix S [K × K] (K = ssm_state) updated by the gated delta rule (Yang,
 * Kautz and Hatamizadeh, "Gated Delta Networks", 2024). From the block's normed input x:
 *   [q; k; v] = silu(conv(W_qkv·x)), conv the causal depthwise convolution of conv_l taps;
 *   q and k L2-normalized per head (eps: the RMSNorm's), q also × 1/sqrt(K);
 *   β = sigmoid(W_β·x) and g = A · softplus(W_α·x + dt_bias) per value head (A < 0, so e^g is a
 *   decay in (0, 1]);
 *   per value head h, with the query and key of head h mod n_group (GGUF's tiled order; llama.cpp's
 *   converter reorders Hugging Face's grouped value heads into it), token by token:
 *     S ← e^g S,   S ← S + k (β (v − Sᵀk))ᵀ,   o = Sᵀq;
 *   y = W_out·(RMSNorm(o) · w_norm ⊙ silu(W_z·x)), the norm per head.
 * Sources: Hugging Face's modeling code (Qwen3NextGatedDeltaNet, which Qwen3.5 reuses) and
 * llama.cpp's graph of it (models/qwen35.cpp, delta-net-base.cpp; its CPU op runs the rule token
 * by token, ops.cpp ggml_compute_forward_gated_delta_net).
 *
 * The state of a sequence: the convolution's last conv_l - 1 inputs per channel (as the short
 * convolution's), then each value head's S stored by value index, M[j][i] = S[i][j], so that row j
 * of M is what Sᵀ dots with a key or a query.
 *
 * A run's tokens go through the rule CHUNK at a time in its chunked form (the WY form of
 * llama.cpp's chunked graph and of the paper): with γ_t = g_1 + ... + g_t within the chunk and S0
 * the state before it,
 *   u_t = β_t (v_t − e^{γ_t} S0ᵀk_t) − Σ_{s<t} β_t e^{γ_t−γ_s} (k_t·k_s) u_s
 *   o_t = e^{γ_t} S0ᵀq_t + Σ_{s≤t} e^{γ_t−γ_s} (q_t·k_s) u_s
 *   S_C = e^{γ_C} S0 + Σ_s e^{γ_C−γ_s} k_s u_sᵀ,
 * which is the rule above unrolled (a decode step: a chunk of one token). Every exponent is <= 0.
 * Row j of M enters only component j of u and o, so a chunk goes through M row by row: each row
 * is read and written once per chunk, and once per token in decode. The convolution's heads of
 * channels, then the (sequence, value head) pairs of a batch, share out the pool's threads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/builder.h"
#include "model/context_state.h"
#include "model/forward_ops.h"
#include "model/layer_kind.h"

/* CHUNK: tokens per step of the chunked rule (llama.cpp's graph takes 64; any size gives the same
 * values, and 16 keeps a chunk's scratch on the stack). MAX_STATE: the largest head size taken
 * (Qwen3.5 and Qwen3-Next: 128). */
enum { CHUNK = 16, MAX_STATE = 256 };

/* A layer's sizes, from hparams. */
typedef struct dims {
    int S;        /* head size, keys and values alike */
    int Hk, Hv;   /* key (and query) heads, value heads */
    int taps;     /* of the convolution */
    int channels; /* of the convolution: q, k, v = 2·Hk·S + Hv·S */
    int inner;    /* Hv·S */
} dims;

static dims dims_of(const elm_hparams *hp) {
    const dims d = {hp->ssm_state, hp->ssm_groups, hp->ssm_heads, hp->conv_l,
                    2 * hp->ssm_groups * hp->ssm_state + hp->ssm_inner, hp->ssm_inner};
    return d;
}

/* Floats a vector tensor holds, or an error naming it when it is quantized. */
static elm_status float_vector(const elm_model *m, const elm_tensor *t, elm_error *err) {
    if (elm_type_get(t->type)->block_size != 1)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: tensor '%s' is quantized (floats expected)",
                          m->path, t->name);
    return ELM_OK;
}

static elm_status bind(elm_model *m, int l, elm_error *err) {
    const elm_hparams *hp = &m->hp;
    elm_layer *L = &m->layers[l];
    if (hp->conv_l < 2 || hp->conv_l > 64 || hp->ssm_state < 1 ||
        hp->ssm_state > MAX_STATE || hp->ssm_groups < 1 || hp->ssm_heads < 1 ||
        hp->ssm_heads > 4096 || hp->ssm_heads % hp->ssm_groups)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: Gated DeltaNet of %d taps (ssm.conv_kernel: 2..64), heads of %d "
                          "(ssm.state_size: 1..%d), %d value heads (ssm.time_step_rank) not a "
                          "multiple of %d key heads (ssm.group_count)",
                          m->path, hp->conv_l, hp->ssm_state, MAX_STATE, hp->ssm_heads,
                          hp->ssm_groups);
    if ((int64_t)hp->ssm_heads * hp->ssm_state != hp->ssm_inner)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: Gated DeltaNet value width %d (ssm.inner_size) is not %d heads "
                          "(ssm.time_step_rank) of %d (ssm.state_size)",
                          m->path, hp->ssm_inner, hp->ssm_heads, hp->ssm_state);
    const dims d = dims_of(hp);
    char name[ELM_NAME_MAX];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d.%s", l, suffix), name)
    elm_status st;
    if ((st = elm_model_bind_tensor(m, &L->conv_in, NAME("attn_qkv.weight"), hp->dim, d.channels,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->dn_z, NAME("attn_gate.weight"), hp->dim, d.inner,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->dn_beta, NAME("ssm_beta.weight"), hp->dim, d.Hv,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->dn_alpha, NAME("ssm_alpha.weight"), hp->dim, d.Hv,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->conv_out, NAME("ssm_out.weight"), d.inner, hp->dim,
                                    err)) ||
        (st = elm_model_bind_tensor(m, &L->conv_kernel, NAME("ssm_conv1d.weight"), d.taps,
                                    d.channels, err)) ||
        (st = elm_model_bind_tensor(m, &L->ssm_dt_b, NAME("ssm_dt.bias"), d.Hv, 0, err)) ||
        (st = elm_model_bind_tensor(m, &L->ssm_a, NAME("ssm_a"), d.Hv, 0, err)) ||
        (st = elm_model_bind_tensor(m, &L->ssm_norm, NAME("ssm_norm.weight"), d.S, 0, err)))
        return st;
#undef NAME
    const elm_tensor *vectors[] = {L->conv_kernel, L->ssm_dt_b, L->ssm_a, L->ssm_norm};
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
        if ((st = float_vector(m, vectors[i], err))) return st;
    return ELM_OK;
}

static int64_t state_floats(const elm_hparams *hp, int l) {
    (void)l;
    const dims d = dims_of(hp);
    return (int64_t)(d.taps - 1) * d.channels + (int64_t)d.Hv * d.S * d.S;
}

/* Per token: the convolution's channels (q, k, v), z, β, g, the rule's output; then the kernel,
 * dt_bias, A and the norm's weights as floats. */
static int64_t scratch_floats(const elm_hparams *hp, int32_t n_batch) {
    const dims d = dims_of(hp);
    return (int64_t)n_batch * (d.channels + 2 * d.inner + 2 * d.Hv) +
           (int64_t)d.channels * d.taps + 2 * d.Hv + d.S;
}

/* The mixing's buffers in c->mix, [n_batch, ·] each, as scratch_floats counts them. */
typedef struct bufs {
    float *qkv, *z, *beta, *g, *o;
    float *kernel, *dt, *a, *norm;
} bufs;

static bufs bufs_of(const elm_context *c, const dims *d) {
    const size_t nb = (size_t)c->n_batch;
    bufs b;
    b.qkv = c->mix;
    b.z = b.qkv + nb * d->channels;
    b.beta = b.z + nb * d->inner;
    b.g = b.beta + nb * d->Hv;
    b.o = b.g + nb * d->Hv;
    b.kernel = b.o + nb * d->inner;
    b.dt = b.kernel + (size_t)d->channels * d->taps;
    b.a = b.dt + d->Hv;
    b.norm = b.a + d->Hv;
    return b;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ggml's softplus: x itself above 20 */
static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* x / max(|x|, eps) over n, the sum of squares in double (ggml's l2_norm), times scale. */
static void l2_normalize(float *x, int n, float eps, float scale) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float s = 1.0f / fmaxf(sqrtf((float)sum), eps) * scale;
    for (int i = 0; i < n; i++) x[i] *= s;
}

/* A job over the batch's n tokens in runs: the convolution by heads of channels, then the rule
 * by (sequence, value head) pairs. */
typedef struct job {
    elm_context *c;
    int l;
    int32_t n;
    const elm_seq_run *runs;
    int n_runs;
    dims d;
    bufs b;
    elm_pool_work items;
} job;

/* Channels [u·S, (u + 1)·S) (head u of q, k, v) of every run: convolution, silu, and for a
 * query or key head the L2 norm of each token's. */
static void conv_worker(void *arg, int ith, int nth) {
    (void)nth;
    job *j = arg;
    const elm_context *c = j->c;
    const dims *d = &j->d;
    const float eps = c->m->hp.rms_eps, q_scale = 1.0f / sqrtf((float)d->S);
    long u0, u1;
    while (elm_pool_work_claim(&j->items, ith, 1, &u0, &u1))
        for (long u = u0; u < u1; u++) {
            const size_t ch0 = (size_t)u * d->S;
            for (int i = 0; i < j->n_runs; i++) {
                const elm_seq_run *r = &j->runs[i];
                float *state = elm_seq_state(c, r->seq, j->l) + ch0 * (size_t)(d->taps - 1);
                elm_causal_conv(j->b.qkv + (size_t)r->t0 * d->channels + ch0,
                                (size_t)d->channels, r->n, d->S, d->taps,
                                j->b.kernel + ch0 * (size_t)d->taps, state, c->k->fused_conv);
            }
            for (int32_t t = 0; t < j->n; t++) {
                float *x = j->b.qkv + (size_t)t * d->channels + ch0;
                for (int k = 0; k < d->S; k++) x[k] = x[k] / (1.0f + expf(-x[k]));
                if (u < 2 * d->Hk) l2_normalize(x, d->S, eps, u < d->Hk ? q_scale : 1.0f);
            }
        }
}

/* The rule over tokens [t0, t0 + nt) (nt <= CHUNK) of value head h, whose M the chunk advances;
 * their outputs o_t go to o. See the formulas at the top. */
static void rule_chunk(const elm_kernels *k, const dims *d, const bufs *b, int h, int32_t t0,
                       int nt, float *M) {
    const int S = d->S, kh = h % d->Hk;
    const float *q[CHUNK], *key[CHUNK], *v[CHUNK];
    float gam[CHUNK], eg[CHUNK], beta[CHUNK], u[CHUNK];
    float A[CHUNK][CHUNK], B[CHUNK][CHUNK]; /* the strictly lower and the lower triangle */
    float kt[CHUNK * MAX_STATE];            /* k_s · e^{γ_C−γ_s} */
    for (int t = 0; t < nt; t++) {
        const float *row = b->qkv + (size_t)(t0 + t) * d->channels;
        q[t] = row + (size_t)kh * S;
        key[t] = row + (size_t)(d->Hk + kh) * S;
        v[t] = row + (size_t)(2 * d->Hk + h) * S;
        gam[t] = (t ? gam[t - 1] : 0.0f) + b->g[(size_t)(t0 + t) * d->Hv + h];
        eg[t] = expf(gam[t]);
        beta[t] = b->beta[(size_t)(t0 + t) * d->Hv + h];
    }
    for (int t = 0; t < nt; t++)
        for (int s = 0; s <= t; s++) {
            const float decay = expf(gam[t] - gam[s]);
            if (s < t) A[t][s] = beta[t] * decay * k->dot_f32(key[t], key[s], S);
            B[t][s] = decay * k->dot_f32(q[t], key[s], S);
        }
    for (int s = 0; s < nt; s++) {
        const float decay = expf(gam[nt - 1] - gam[s]);
        for (int i = 0; i < S; i++) kt[s * S + i] = decay * key[s][i];
    }
    for (int jv = 0; jv < S; jv++) {
        float *row = M + (size_t)jv * S;
        for (int t = 0; t < nt; t++) {
            const float sk = k->dot_f32(row, key[t], S), sq = k->dot_f32(row, q[t], S);
            float ut = beta[t] * (v[t][jv] - eg[t] * sk), ot = eg[t] * sq;
            for (int s = 0; s < t; s++) ut -= A[t][s] * u[s];
            u[t] = ut;
            for (int s = 0; s <= t; s++) ot += B[t][s] * u[s];
            b->o[(size_t)(t0 + t) * d->inner + (size_t)h * S + jv] = ot;
        }
        for (int i = 0; i < S; i++) row[i] *= eg[nt - 1];
        for (int s = 0; s < nt; s++)
            for (int i = 0; i < S; i++) row[i] += u[s] * kt[s * S + i];
    }
}

/* Value head h of run r: the rule chunk by chunk, then each token's output normed and gated. */
static void rule_run(const job *j, const elm_seq_run *r, int h) {
    const elm_context *c = j->c;
    const dims *d = &j->d;
    float *M = elm_seq_state(c, r->seq, j->l) + (size_t)(d->taps - 1) * d->channels +
               (size_t)h * d->S * d->S;
    for (int32_t t = 0; t < r->n; t += CHUNK)
        rule_chunk(c->k, d, &j->b, h, r->t0 + t, r->n - t < CHUNK ? r->n - t : CHUNK, M);
    for (int32_t t = r->t0; t < r->t0 + r->n; t++) {
        float *o = j->b.o + (size_t)t * d->inner + (size_t)h * d->S;
        c->k->rmsnorm(o, o, j->b.norm, d->S, c->m->hp.rms_eps);
        c->k->swiglu(o, j->b.z + (size_t)t * d->inner + (size_t)h * d->S, o, d->S);
    }
}

/* Item (i, h): value head h of the sequence whose first run in the batch is run i, its runs in
 * order (a batch may hold several of one sequence); nothing for a run that is not its sequence's
 * first. */
static void rule_worker(void *arg, int ith, int nth) {
    (void)nth;
    job *j = arg;
    long i0, i1;
    while (elm_pool_work_claim(&j->items, ith, 1, &i0, &i1))
        for (long item = i0; item < i1; item++) {
            const int i = (int)(item / j->d.Hv), h = (int)(item % j->d.Hv);
            bool first = true;
            for (int e = 0; e < i && first; e++) first = j->runs[e].seq != j->runs[i].seq;
            for (int e = i; first && e < j->n_runs; e++)
                if (j->runs[e].seq == j->runs[i].seq) rule_run(j, &j->runs[e], h);
        }
}

static void to_floats(const elm_tensor *t, float *out) {
    elm_type_get(t->type)->to_float(t->data, out, t->ne[0] * t->ne[1]);
}

static void mix(elm_context *c, int l, int32_t n, const elm_seq_run *runs, int n_runs) {
    const elm_hparams *hp = &c->m->hp;
    const elm_layer *L = &c->m->layers[l];
    job j = {.c = c, .l = l, .n = n, .runs = runs, .n_runs = n_runs, .d = dims_of(hp)};
    const dims *d = &j.d;
    j.b = bufs_of(c, d);
    const elm_tensor *in[] = {L->conv_in, L->dn_z, L->dn_beta, L->dn_alpha};
    float *out[] = {j.b.qkv, j.b.z, j.b.beta, j.b.g};
    elm_fw_matmul_group(c, l, 4, in, out, c->xb, n, 0);
    to_floats(L->conv_kernel, j.b.kernel);
    to_floats(L->ssm_dt_b, j.b.dt);
    to_floats(L->ssm_a, j.b.a);
    to_floats(L->ssm_norm, j.b.norm);
    for (int32_t t = 0; t < n; t++)
        for (int h = 0; h < d->Hv; h++) {
            const size_t i = (size_t)t * d->Hv + h;
            j.b.beta[i] = sigmoid(j.b.beta[i]);
            j.b.g[i] = softplus(j.b.g[i] + j.b.dt[h]) * j.b.a[h];
        }
    elm_pool_work_init(&j.items, 2 * d->Hk + d->Hv, elm_pool_size(c->pool));
    elm_pool_run_shared(c->pool, conv_worker, &j);
    elm_pool_work_init(&j.items, (long)n_runs * d->Hv, elm_pool_size(c->pool));
    elm_pool_run_shared(c->pool, rule_worker, &j);
    elm_fw_matmul(c, l, L->conv_out, j.b.o, n, 0, c->xb);
}

const elm_layer_ops elm_layer_deltanet = {
    .name = "Gated DeltaNet",
    .bind = bind,
    .state_floats = state_floats,
    .scratch_floats = scratch_floats,
    .mix = mix,
};
