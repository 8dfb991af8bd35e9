/* The forward pass, written once for prefill (n tokens) and decode (1 token). Reads like the
 * Llama paper: per layer, x += Mix(n(x)) then x += Wdown·(silu(Wgate·n(x)) ⊙ Wup·n(x)),
 * n = RMSNorm; logits = Wout·n(x). A mixture of experts (ffn_moe.c) takes the FFN's place. Mix is the layer's kind (layer_kind.h): attention
 * (layer_attention.c) or a recurrent layer that carries a state per sequence (seq_state.c). The
 * families of model/arch.h differ only in what hparams and the layer say: GELU for silu and
 * sqrt(dim)-scaled embeddings (Gemma), norms of the block outputs (Gemma 3), per-layer
 * embeddings and scales after each block (Gemma 4), Granite's multipliers of the embeddings,
 * block outputs and logits, and in attention.
 *
 * Matrix products run on the context's thread pool, split by weight rows so each weight row is
 * read once per call whatever the number of tokens. Products sharing an input (q/k/v, gate/up) go
 * out as one job: one wake-up of the pool instead of three, and the threads share out the rows of
 * all of them. Their input is prepared once per group (prep_job).
 *
 * The pass may start from hidden states instead of tokens and hand back the states after the
 * last layer (elm_forward_hidden): calibration then runs a model view of one block at a time. */
#include <math.h>
#include <string.h>

#include "kernels/kquant.h"
#include "model/context_state.h"
#include "model/forward_ops.h"
#include "model/layer_kind.h"

/* CHUNK_TILES: 256 rows, four prefill panels (gemm.c); smaller chunks measured slower in decode */
enum { PREP_PARALLEL_TOKENS = 8, CHUNK_TILES = 16 };

typedef struct {
    elm_context *c;
    int n;                           /* products in the group */
    elm_matmul_args args[ELM_FW_MAX_GROUP];
    long first_unit[ELM_FW_MAX_GROUP + 1];  /* prefix sums of tiles of ELM_TILE_ROWS rows */
    elm_pool_work tiles;             /* the tiles of all products, claimed by the threads */
} matmul_job;

/* Threads claim CHUNK_TILES tiles at a time until none are left (elm_pool_run_shared), so a
 * thread that starts late or runs on a slower core takes less. */
static void matmul_worker(void *arg, int ith, int nth) {
    (void)nth;
    matmul_job *j = arg;
    void *scratch = j->c->scratch + (size_t)ith * j->c->scratch_bytes;
    long u0, u1;
    while (elm_pool_work_claim(&j->tiles, ith, CHUNK_TILES, &u0, &u1)) {
        for (int i = 0; i < j->n && u0 < u1; i++) {
            const long lo = u0 > j->first_unit[i] ? u0 : j->first_unit[i];
            const long hi = u1 < j->first_unit[i + 1] ? u1 : j->first_unit[i + 1];
            if (lo >= hi) continue;
            const int64_t rows = j->args[i].w.rows;
            const int64_t r0 = (int64_t)(lo - j->first_unit[i]) * ELM_TILE_ROWS;
            const int64_t r1 = (int64_t)(hi - j->first_unit[i]) * ELM_TILE_ROWS;
            j->c->k->matmul(&j->args[i], r0, r1 < rows ? r1 : rows, scratch);
        }
    }
}

/* The inputs of a group of products, prepared once for all of them: q8 rows for block weights,
 * 16-token transposed chunks for float weights in prefill (kernels.h, elm_matmul_args), and for
 * a table that wants it (round_float_act) the float input rounded to the weights' F16/BF16 type
 * (xr). */
typedef struct {
    elm_context *c;
    const float *x;
    int64_t n_tok, cols;
    bool q8, xt;
    bool xp;  /* xt's chunks also paired for BF16 products (elm_kernels.pair16) */
    bool q8k; /* xq gets q8_K rows instead, for a group of 256-weight super-block products only */
    elm_type round; /* F16 or BF16: the float products' input goes through xr; else F32 */
    elm_pool_work tokens, chunks; /* the rows to quantize, the 16-token chunks to transpose */
} prep_job;

/* out[i] = x[i] stored as type t (F16 or BF16) and read back through the type's codec, i < n;
 * out may be x. */
static void round_through(elm_type t, const float *x, int64_t n, float *out) {
    const elm_type_traits *tt = elm_type_get(t);
    uint16_t buf[256];
    for (int64_t i = 0; i < n; i += 256) {
        const int64_t m = n - i < 256 ? n - i : 256;
        tt->from_float(x + i, buf, m);
        tt->to_float(buf, out + i, m);
    }
}

/* A 16-token chunk is rounded and transposed by the same thread, so no thread reads rows another
 * is still writing. */
static void prep_worker(void *arg, int ith, int nth) {
    (void)nth;
    prep_job *j = arg;
    elm_context *c = j->c;
    const bool round = j->round != ELM_TYPE_F32;
    long t0, t1;
    const size_t row_bytes = j->q8k ? elm_q8k_row_bytes(j->cols) : elm_q8_row_bytes(j->cols);
    while ((j->q8 || j->q8k) && elm_pool_work_claim(&j->tokens, ith, 4, &t0, &t1))
        for (long t = t0; t < t1; t++) {
            void *row = (char *)c->xq + t * row_bytes;
            if (j->q8k) c->k->quantize_q8_k(j->x + t * j->cols, j->cols, row);
            else c->k->quantize_q8(j->x + t * j->cols, j->cols, row);
        }
    while ((j->xt || round) && elm_pool_work_claim(&j->chunks, ith, 1, &t0, &t1)) {
        const int64_t first = t0 * 16, nt = j->n_tok - first < 16 ? j->n_tok - first : 16;
        const float *x = j->x + first * j->cols;
        if (round) {
            round_through(j->round, x, nt * j->cols, c->xr + first * j->cols);
            x = c->xr + first * j->cols;
        }
        if (j->xt) c->k->transpose16(x, j->cols, (int)nt, j->cols, c->xt + first * j->cols);
        if (j->xp) c->k->pair16(c->xt + first * j->cols, j->cols, c->xp + first * j->cols / 2);
    }
}

/* The type a product's float input is rounded to: its F16/BF16 weights' type where the table
 * wants it (round_float_act); else F32 (none). */
static elm_type act_round(const elm_context *c, const elm_tensor *w) {
    return c->k->round_float_act && (w->type == ELM_TYPE_F16 || w->type == ELM_TYPE_BF16)
               ? w->type
               : ELM_TYPE_F32;
}

/* The group's products over x ([n_tok, cols]); row_each: product i reads row i of x alone (one
 * token, n_tok = n), its input prepared with the others' as one n-row batch. */
static void run_group(elm_context *c, int layer, int n, const elm_tensor *const *w,
                      float *const *y, const float *x, int64_t n_tok, int64_t out_first,
                      bool row_each) {
    /* float products share xt and xr, so they go out together only when rounded alike */
    for (int i = 1; i < n; i++)
        if (!elm_type_q8_act(w[i]->type) && !elm_type_q8_act(w[0]->type) &&
            act_round(c, w[i]) != act_round(c, w[0])) {
            for (int k = 0; k < n; k++)
                run_group(c, layer, 1, &w[k], &y[k], row_each ? x + k * w[k]->ne[0] : x,
                          row_each ? 1 : n_tok, out_first, false);
            return;
        }
    matmul_job j = {.c = c, .n = n};
    prep_job pj = {.c = c, .x = x, .n_tok = n_tok, .cols = w[0]->ne[0], .round = ELM_TYPE_F32};
    elm_pool_work_init(&pj.tokens, (long)n_tok, elm_pool_size(c->pool));
    elm_pool_work_init(&pj.chunks, (long)((n_tok + 15) / 16), elm_pool_size(c->pool));
    const int64_t tok = row_each ? 1 : n_tok; /* each product's tokens */
    for (int i = 0; i < n; i++) {
        const int64_t row = row_each ? i : 0;
        const float *xi = x + row * pj.cols;
        if (c->hook) c->hook(w[i], layer, xi, tok, c->hook_user);
        const bool q8 = elm_type_q8_act(w[i]->type);
        /* only float weights read the transposed chunks; the super-block types take q8_K rows
         * (pj.q8k below) */
        const bool flt = elm_type_get(w[i]->type)->block_size == 1;
        const bool xt = flt && c->xt && tok >= ELM_XT_MIN_TOKENS;
        /* the table rounds BF16 products' input to BF16 pairs: once here for the group */
        const bool xp = xt && c->xp && w[i]->type == ELM_TYPE_BF16 && w[i]->ne[0] % 2 == 0 &&
                        tok >= c->k->bf16_act_tokens;
        if (!q8) pj.round = act_round(c, w[i]);
        const float *xf = !q8 && pj.round != ELM_TYPE_F32 ? c->xr + row * pj.cols : xi;
        pj.q8 |= q8;
        pj.xt |= xt;
        pj.xp |= xp;
        const elm_weights wi = {w[i]->type, w[i]->data, w[i]->ne[1], w[i]->ne[0], w[i]->packed_by};
        j.args[i] = (elm_matmul_args){.w = wi, .x = xf, .xq = q8 ? c->xq : NULL,
                                      .xt = xt ? c->xt : NULL, .xp = xp ? c->xp : NULL,
                                      .n_tok = tok, .y = y[i],
                                      .out_first = row_each ? 0 : out_first};
        j.first_unit[i + 1] =
            j.first_unit[i] + (long)((w[i]->ne[1] + ELM_TILE_ROWS - 1) / ELM_TILE_ROWS);
    }
    /* the super-block types' q8_K rows, once for all threads, where no product needs q8 rows */
    pj.q8k = !pj.q8;
    for (int i = 0; i < n; i++)
        if (!elm_type_kquant(w[i]->type) || elm_type_q8_act(w[i]->type)) pj.q8k = false;
    const size_t q8_row = pj.q8k ? elm_q8k_row_bytes(pj.cols) : elm_q8_row_bytes(pj.cols);
    for (int i = 0; i < n; i++)
        if (j.args[i].xq || pj.q8k)
            j.args[i].xq = (char *)c->xq + (row_each ? (size_t)i * q8_row : 0);
    if (n_tok >= PREP_PARALLEL_TOKENS) elm_pool_run_shared(c->pool, prep_worker, &pj);
    else if (pj.q8 || pj.q8k || pj.xt || pj.round != ELM_TYPE_F32) prep_worker(&pj, 0, 1);
    elm_pool_work_init(&j.tiles, j.first_unit[n], elm_pool_size(c->pool));
    elm_pool_run_shared(c->pool, matmul_worker, &j);
}

void elm_fw_matmul_group(elm_context *c, int layer, int n, const elm_tensor *const *w,
                         float *const *y, const float *x, int64_t n_tok, int64_t out_first) {
    run_group(c, layer, n, w, y, x, n_tok, out_first, false);
}

void elm_fw_matmul_rows(elm_context *c, int layer, int n, const elm_tensor *const *w,
                        float *const *y, const float *x) {
    run_group(c, layer, n, w, y, x, n, 0, true);
}

void elm_fw_matmul(elm_context *c, int layer, const elm_tensor *w, const float *x, int64_t n_tok,
                   int64_t out_first, float *y) {
    elm_fw_matmul_group(c, layer, 1, &w, &y, x, n_tok, out_first);
}

static void embed(elm_context *c, const int32_t *tokens, int32_t n) {
    const elm_tensor *e = c->m->tok_embd;
    const size_t row = elm_row_bytes(e->type, e->ne[0]);
    for (int32_t t = 0; t < n; t++)
        elm_type_get(e->type)->to_float((const char *)e->data + (size_t)tokens[t] * row,
                                        c->x + (size_t)t * e->ne[0], e->ne[0]);
    const float scale = c->m->hp.embd_scale;
    if (scale != 1.0f)
        for (size_t i = 0; i < (size_t)n * (size_t)e->ne[0]; i++) c->x[i] *= scale;
}

/* Gemma 4's per-layer embeddings of the batch's n tokens (c->ple, token by token the inputs of
 * every layer), as llama.cpp's graph computes them: the scaled embedding c->x projected to
 * n_layers·P values, × 1/sqrt(dim), each layer's P RMSNormed with per_layer_proj_norm, plus the
 * token's row of per_layer_token_embd × sqrt(P), all × 1/sqrt(2). */
static void per_layer_inputs(elm_context *c, const int32_t *tokens, int32_t n) {
    const elm_model *m = c->m;
    const int64_t P = m->hp.n_embd_per_layer, all = P * m->hp.n_layers;
    const elm_tensor *e = m->ple_embd;
    const size_t row = elm_row_bytes(e->type, all);
    const float proj_scale = 1.0f / sqrtf((float)m->hp.dim), embd_scale = sqrtf((float)P),
                out_scale = 1.0f / sqrtf(2.0f);
    elm_fw_matmul(c, -1, m->ple_model_proj, c->x, n, 0, c->ple);
    for (int32_t t = 0; t < n; t++) {
        float *ple = c->ple + (size_t)t * (size_t)all;
        elm_type_get(e->type)->to_float((const char *)e->data + (size_t)tokens[t] * row,
                                        c->ple_row, all);
        for (int64_t i = 0; i < all; i++) ple[i] *= proj_scale;
        for (int64_t i = 0; i < all; i += P)
            c->k->rmsnorm(ple + i, ple + i, c->ple_norm, P, m->hp.rms_eps);
        for (int64_t i = 0; i < all; i++)
            ple[i] = (ple[i] + c->ple_row[i] * embd_scale) * out_scale;
    }
}

/* cos and sin of every rotated pair's angle for the batch's positions, once per forward call
 * (all layers use the same; windowed layers with their own base, theirs). */
static void rope_tables(elm_context *c, int32_t n) {
    c->k->rope_cs(&c->rope, c->pos, n, c->rope_cs);
    if (c->rope_cs_swa) c->k->rope_cs(&c->rope_swa, c->pos, n, c->rope_cs_swa);
}

/* x[t] = RMSNorm(x[t]) · w for n rows of dim (in place). */
static void rmsnorm_rows(elm_context *c, float *y, const float *x, const float *w, int32_t n) {
    const int dim = c->m->hp.dim;
    for (int32_t t = 0; t < n; t++)
        c->k->rmsnorm(y + (size_t)t * dim, x + (size_t)t * dim, w, dim, c->m->hp.rms_eps);
}

/* x += y over n rows, after y's RMSNorm with w when the family norms block outputs (Gemma 3),
 * y scaled by hp.residual_scale (Granite; 1 for the others, which leaves y as it is). */
static void residual_add(elm_context *c, float *y, const float *post_norm, int32_t n) {
    if (post_norm) rmsnorm_rows(c, y, y, post_norm, n);
    const float scale = c->m->hp.residual_scale;
    for (size_t i = 0; i < (size_t)n * c->m->hp.dim; i++) c->x[i] += y[i] * scale;
}

/* After block l (Gemma 4): its per-layer embedding, x += RMSNorm(proj · (gelu(inp_gate · x) ⊙
 * the tokens' inputs of the layer)) · post_norm; then x × the block's output scale. */
static void per_layer_output(elm_context *c, int l, int32_t n, const float *post_norm) {
    const elm_model *m = c->m;
    const elm_layer *L = &m->layers[l];
    const int64_t P = m->hp.n_embd_per_layer, all = P * m->hp.n_layers;
    if (L->ple_gate) {
        elm_fw_matmul(c, l, L->ple_gate, c->x, n, 0, c->ple_g);
        for (int32_t t = 0; t < n; t++)
            c->k->geglu(c->ple_g + (size_t)t * P, c->ple_g + (size_t)t * P,
                        c->ple + (size_t)t * (size_t)all + (size_t)l * P, P);
        elm_fw_matmul(c, l, L->ple_proj, c->ple_g, n, 0, c->xb);
        residual_add(c, c->xb, post_norm, n);
    }
    if (c->out_scale)
        for (size_t i = 0; i < (size_t)n * m->hp.dim; i++) c->x[i] *= c->out_scale[l];
}

/* gpt-oss's clamped SwiGLU as ggml_swiglu_oai computes it (alpha 1.702, limit 7, in float). */
static void swiglu_oai(float *out, const float *g, const float *u, int64_t n) {
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; i++) {
        const float x = fminf(g[i], limit), y = fminf(fmaxf(u[i], -limit), limit);
        out[i] = x / (1.0f + expf(alpha * (-x))) * (y + 1.0f);
    }
}

void elm_fw_glu(elm_context *c, float *g, const float *u, int64_t n) {
    switch (c->m->hp.ffn_act) {
    case ELM_ACT_SILU: c->k->swiglu(g, g, u, n); break;
    case ELM_ACT_GELU_TANH: c->k->geglu(g, g, u, n); break;
    case ELM_ACT_SWIGLU_OAI: swiglu_oai(g, g, u, n); break;
    }
}

void elm_fw_gated_ffn(elm_context *c, int l, const elm_tensor *gate, const elm_tensor *up,
                      const elm_tensor *down, int64_t n_ff, int32_t n, int32_t t0, float *out) {
    const elm_tensor *gate_up[] = {gate, up};
    float *gate_up_out[] = {c->hg, c->hu};
    elm_fw_matmul_group(c, l, 2, gate_up, gate_up_out, c->xb, n, t0);
    elm_fw_glu(c, c->hg, c->hu, (int64_t)n * n_ff);
    elm_fw_matmul(c, l, down, c->hg, n, t0, out);
}

/* Layer l for the batch's n tokens, of which the caller keeps the FFN outputs of the tokens
 * [ffn_first, n) (elm_matmul_args.out_first; the others are computed too). */
static void layer_forward(elm_context *c, int l, int32_t n, int32_t ffn_first) {
    const elm_model *m = c->m;
    const elm_hparams *hp = &m->hp;
    const elm_layer *L = &m->layers[l];
    const int dim = hp->dim;
    /* attn, ffn, post norms, the per-layer embedding's */
    const float *norm = c->norms + (size_t)(c->n_norms * l) * dim;
    const bool post = c->n_norms >= 4;

    rmsnorm_rows(c, c->xb, c->x, norm, n);
    if (L->kind == ELM_LAYER_ATTENTION) elm_layer_attention(c, l, n);
    else elm_layer_ops_of(L->kind)->mix(c, l, n, c->runs, c->n_runs);
    residual_add(c, c->xb, post ? norm + 2 * dim : NULL, n);

    rmsnorm_rows(c, c->xb, c->x, norm + dim, n);
    if (L->router) elm_ffn_moe(c, l, n, ffn_first);
    else
        elm_fw_gated_ffn(c, l, L->w_gate, L->w_up, L->w_down, elm_layer_ffn_dim(hp, l), n,
                         ffn_first, c->xb);
    residual_add(c, c->xb, post ? norm + 3 * dim : NULL, n);
    if (c->ple || c->out_scale) per_layer_output(c, l, n, c->n_norms == 5 ? norm + 4 * dim : NULL);
}

/* Norm and output projection of the n_out rows `rows` of the residual stream into logits
 * [n_out, n_vocab]. */
static void output_logits(elm_context *c, const int32_t *rows, int32_t first, int32_t n_out,
                          float *logits) {
    const elm_hparams *hp = &c->m->hp;
    const float *out_norm = c->norms + (size_t)(c->n_norms * hp->n_layers) * hp->dim;
    for (int32_t t = 0; t < n_out; t++)
        c->k->rmsnorm(c->xb + (size_t)t * hp->dim,
                      c->x + (size_t)(rows ? rows[t] : first + t) * hp->dim, out_norm, hp->dim,
                      hp->rms_eps);
    elm_fw_matmul(c, -1, c->m->output, c->xb, n_out, 0, logits);
    /* as llama.cpp's graph: × 1/cap, tanh, × cap */
    const float cap = hp->logit_softcap, inv_cap = 1.0f / cap, inv_scale = 1.0f / hp->logit_scale;
    if (cap > 0)
        for (size_t i = 0; i < (size_t)n_out * (size_t)hp->n_vocab; i++)
            logits[i] = cap * tanhf(logits[i] * inv_cap);
    if (hp->logit_scale != 1.0f)
        for (size_t i = 0; i < (size_t)n_out * (size_t)hp->n_vocab; i++) logits[i] *= inv_scale;
}

/* A non-causal model's c->pos_end: for each token, the last position in the batch of the tokens
 * of its sequence (those of its cache region, row0), up to which it attends. */
static void seq_ends(elm_context *c, int32_t n) {
    if (!c->pos_end) return;
    for (int32_t t0 = 0, t1; t0 < n; t0 = t1) { /* a run of one region, then its other runs */
        int32_t end = c->pos[t0];
        for (t1 = t0; t1 < n && c->row0[t1] == c->row0[t0]; t1++)
            if (c->pos[t1] > end) end = c->pos[t1];
        for (int32_t u = t1; u < n; u++)
            if (c->row0[u] == c->row0[t0] && c->pos[u] > end) end = c->pos[u];
        for (int32_t u = 0; u < t0; u++)
            if (c->row0[u] == c->row0[t0] && c->pos[u] > end) end = c->pos[u];
        for (int32_t t = t0; t < t1; t++) c->pos_end[t] = end;
    }
}

static elm_status check_tokens(const elm_context *c, const int32_t *tokens, int32_t n,
                               elm_error *err) {
    if (n <= 0 || n > c->n_batch)
        return elm_errorf(err, ELM_ERR_ARG, "batch of %d tokens out of range 1..%d", n, c->n_batch);
    for (int32_t t = 0; tokens && t < n; t++)
        if (tokens[t] < 0 || tokens[t] >= c->m->hp.n_vocab)
            return elm_errorf(err, ELM_ERR_ARG, "token id %d out of range 0..%d", tokens[t],
                              c->m->hp.n_vocab - 1);
    return ELM_OK;
}

elm_status elm_forward_hidden(elm_context *c, const int32_t *tokens, const float *x, int32_t n,
                              float *x_out, float *logits, bool all_logits, elm_error *err) {
    const elm_hparams *hp = &c->m->hp;
    if (!tokens == !x)
        return elm_errorf(err, ELM_ERR_ARG, "forward: give exactly one of tokens and states");
    if (n <= 0 || n > c->n_batch)
        return elm_errorf(err, ELM_ERR_ARG, "batch of %d tokens out of range 1..%d", n, c->n_batch);
    /* before the ids are read: tokens may hold fewer than n when the cache has no room */
    if (c->n_past + n > c->n_ctx)
        return elm_errorf(err, ELM_ERR_ARG, "context full: %d cached + %d new tokens > %d",
                          c->n_past, n, c->n_ctx);
    elm_status st = check_tokens(c, tokens, n, err);
    if (st) return st;
    if (!tokens && c->ple)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: per-layer embeddings need token ids, "
                          "not hidden states", c->m->path);
    const size_t n_x = (size_t)n * (size_t)hp->dim;
    if (tokens) embed(c, tokens, n);
    else if (x) memcpy(c->x, x, sizeof(float) * n_x); /* (x is set: checked above) */
    if (c->ple) per_layer_inputs(c, tokens, n);
    for (int32_t t = 0; t < n; t++) {
        c->pos[t] = c->n_past + t;
        c->row0[t] = 0;
    }
    if ((st = elm_seq_begin(c, n, err))) return st;
    seq_ends(c, n);
    rope_tables(c, n);
    /* past the last layer's attention only the rows of the logits are needed (llama.cpp goes on
     * with those alone but for Gemma 4; a table may add as it does) */
    const int32_t out_first = logits && !all_logits && !hp->full_last_layer ? n - 1 : 0;
    for (int l = 0; l < hp->n_layers; l++)
        layer_forward(c, l, n, l == hp->n_layers - 1 ? out_first : 0);
    elm_seq_end(c);
    /* positions entered as hidden states have no id: -1 matches no token (speculative.c) */
    for (int32_t t = 0; t < n; t++) c->tokens[c->n_past + t] = tokens ? tokens[t] : -1;
    c->n_past += n;
    if (x_out) memcpy(x_out, c->x, sizeof(float) * n_x);
    if (!logits) return ELM_OK;
    const int32_t first = all_logits ? 0 : n - 1;
    output_logits(c, NULL, first, n - first, logits);
    return ELM_OK;
}

elm_status elm_forward(elm_context *c, const int32_t *tokens, int32_t n, float *logits,
                       bool all_logits, elm_error *err) {
    return elm_forward_hidden(c, tokens, NULL, n, NULL, logits, all_logits, err);
}

elm_status elm_forward_embd(elm_context *c, const int32_t *tokens, int32_t n, float *embd,
                            elm_error *err) {
    elm_status st = elm_forward_hidden(c, tokens, NULL, n, NULL, NULL, false, err);
    if (st) return st;
    const elm_hparams *hp = &c->m->hp;
    rmsnorm_rows(c, embd, c->x, c->norms + (size_t)(c->n_norms * hp->n_layers) * hp->dim, n);
    return ELM_OK;
}

elm_status elm_forward_batched(elm_context *c, const int32_t *tokens, int32_t n, float *logits,
                               bool all_logits, elm_batch_cb cb, void *user, elm_error *err) {
    elm_status st = ELM_OK;
    for (int32_t off = 0; off < n && !st; off += c->n_batch) {
        const int32_t nb = n - off < c->n_batch ? n - off : c->n_batch;
        const bool last = off + nb == n;
        st = elm_forward(c, tokens + off, nb, all_logits || last ? logits : NULL, all_logits, err);
        if (!st && all_logits && cb) st = cb(logits, off, nb, user);
    }
    return st;
}

elm_status elm_forward_seqs(elm_context *c, const int32_t *tokens, const int32_t *pos,
                            const int32_t *row0, int32_t n, const int32_t *out, int32_t n_out,
                            float *logits, elm_error *err) {
    elm_status st = check_tokens(c, tokens, n, err);
    if (st) return st;
    if (c->swa_rows)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "several sequences in one pass: the sliding-window KV cache holds one "
                          "(swa_full keeps every position)");
    for (int32_t t = 0; t < n; t++)
        if (pos[t] < 0 || row0[t] < 0 || (int64_t)row0[t] + pos[t] >= c->n_ctx)
            return elm_errorf(err, ELM_ERR_ARG,
                              "token %d: position %d at cache row %d outside the %d-row cache", t,
                              pos[t], row0[t], c->n_ctx);
    for (int32_t i = 0; i < n_out; i++)
        if (out[i] < 0 || out[i] >= n)
            return elm_errorf(err, ELM_ERR_ARG, "logits row %d out of range 0..%d", out[i], n - 1);
    memcpy(c->pos, pos, sizeof(int32_t) * (size_t)n);
    memcpy(c->row0, row0, sizeof(int32_t) * (size_t)n);
    if ((st = elm_seq_begin(c, n, err))) return st;
    seq_ends(c, n);
    embed(c, tokens, n);
    if (c->ple) per_layer_inputs(c, tokens, n);
    rope_tables(c, n);
    for (int l = 0; l < c->m->hp.n_layers; l++) layer_forward(c, l, n, 0);
    elm_seq_end(c);
    for (int32_t t = 0; t < n; t++) c->tokens[row0[t] + pos[t]] = tokens[t];
    if (n_out > 0 && logits) output_logits(c, out, 0, n_out, logits);
    return ELM_OK;
}
