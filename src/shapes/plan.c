/* Deployability estimate (see plan.h). Weight bytes come from quantize's own planner
 * (elm_quant_plan: the same types and F16 fallbacks `edgelm quantize` would write), the KV cache
 * from the formula deployment guides use, the compute buffers from what elm_context_new
 * allocates, and the speed bound from decode being memory-bound (docs/deployment.md, "Why quantize"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/context.h"
#include "edgelm/quant.h"
#include "edgelm/shapes.h"
#include "formats/hf.h"
#include "kernels/kernels.h"
#include "model/arch.h"
#include "model/builder.h"
#include "shapes/preset.h"

/* A model of hp's architecture whose tensors have shapes but no data (F32); x adds the
 * rope_freqs tensor (Llama 3.1's, Gemma 4's) or LongRoPE's two, and the unused KV weights of
 * layers that share another's. Errors: ELM_ERR_UNSUPPORTED for an unknown arch, elm_model_bind's. */
static elm_status shape_model(const elm_hparams *hp, elm_layout_extras x, elm_model **out,
                              elm_error *err) {
    *out = NULL;
    const elm_arch *a = elm_arch_find(hp->arch);
    if (!a)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "plan: unsupported architecture '%s' (%s)",
                          hp->arch, elm_arch_names());
    if (hp->dim <= 0 || hp->n_layers <= 0 || hp->n_heads <= 0 || hp->n_kv_heads <= 0 ||
        hp->ffn_dim <= 0 || hp->n_vocab <= 0 || (!hp->head_dim && hp->dim % hp->n_heads))
        return elm_errorf(err, ELM_ERR_FORMAT, "plan: invalid shapes (dim %d, %d layers, %d/%d "
                          "heads, ffn %d, vocab %d)", hp->dim, hp->n_layers, hp->n_heads,
                          hp->n_kv_heads, hp->ffn_dim, hp->n_vocab);
    elm_model *m = elm_model_new(hp->arch, "shapes", err);
    if (!m) return ELM_ERR_NOMEM;
    m->hp = *hp;
    if (!m->hp.head_dim) m->hp.head_dim = hp->dim / hp->n_heads;
    if (!m->hp.rope_dim) m->hp.rope_dim = m->hp.head_dim;
    elm_arch_swa_defaults(a, &m->hp); /* the local layers' KV cache is their window */
    int32_t n;
    elm_tensor_spec *specs = elm_arch_layout(a, &m->hp, x, &n);
    elm_status st = specs ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "plan: out of memory");
    for (int32_t i = 0; i < n && !st; i++) {
        const int64_t ne[3] = {specs[i].cols, specs[i].rows, specs[i].experts};
        const size_t bytes = (size_t)(specs[i].cols * (specs[i].rows ? specs[i].rows : 1) *
                                      (specs[i].experts ? specs[i].experts : 1)) * 4;
        st = elm_model_add_tensor(m, specs[i].name, ELM_TYPE_F32, elm_spec_dims(&specs[i]), ne,
                                  NULL, bytes, err);
    }
    free(specs);
    if (st) {
        elm_model_free(m);
        return st;
    }
    *out = m;
    return ELM_OK;
}

/* What elm_context_new allocates besides the KV cache (context.c), plus one token's logits. */
static uint64_t compute_bytes(const elm_hparams *hp, int32_t n_ctx, int32_t n_batch,
                              int32_t n_threads) {
    const uint64_t nb = (uint64_t)n_batch, q = (uint64_t)hp->n_heads * hp->head_dim,
                   kv = (uint64_t)hp->n_kv_heads * hp->head_dim;
    uint64_t cols = (uint64_t)(hp->dim > hp->ffn_dim ? hp->dim : hp->ffn_dim);
    if (q > cols) cols = q;
    const uint64_t ple = (uint64_t)hp->n_embd_per_layer * (uint64_t)(hp->n_layers + 1);
    const uint64_t floats = nb * (2 * (uint64_t)hp->dim + 2 * q + 2 * kv + 2 * (uint64_t)hp->ffn_dim +
                                  (uint64_t)hp->rope_dim + ple) +
                            (uint64_t)n_threads * (uint64_t)n_ctx +
                            (2 * (uint64_t)hp->n_layers + 1) * (uint64_t)hp->dim +
                            (uint64_t)hp->n_vocab;
    return 4 * floats + nb * elm_q8_row_bytes((int64_t)cols) +
           (uint64_t)n_threads * elm_matmul_scratch_bytes((int64_t)cols);
}

/* Bytes of m's tensors under policy p, of its token embedding and its row, and those decode does
 * not read each token: of the other tables it reads one row of (Gemma 4's per-layer embeddings),
 * those rows left out, and of the experts a token is not routed to (all but hp.n_expert_used of
 * each stack). */
static elm_status weight_bytes(const elm_model *m, const elm_quant_policy *p,
                               elm_tensor_plan *plan, uint64_t *total, uint64_t *embd,
                               uint64_t *embd_row, uint64_t *unread, elm_error *err) {
    elm_status st = elm_quant_plan(m, p, plan, err);
    if (st) return st;
    *total = *embd = *embd_row = *unread = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        const uint64_t row = elm_row_bytes(plan[i].type, t->ne[0]);
        const uint64_t matrix = row * (uint64_t)t->ne[1];
        const uint64_t bytes = matrix * (uint64_t)(t->ne[2] * t->ne[3]);
        *total += bytes;
        if (strcmp(t->name, "token_embd.weight") == 0) {
            *embd = bytes;
            *embd_row = row;
        }
        if (t == m->ple_embd) *unread += bytes - row;
        if (t->ne[2] > 1 && m->hp.n_expert_used < t->ne[2]) /* a stack of experts */
            *unread += matrix * (uint64_t)(t->ne[2] - m->hp.n_expert_used);
    }
    return ELM_OK;
}

elm_status elm_plan_make(const elm_model *m, int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                         bool kv_cache_q8, double bandwidth_gbs, double ram_gib, elm_plan *out,
                         elm_error *err) {
    memset(out, 0, sizeof *out);
    if (n_threads == 0) n_threads = elm_online_cores();
    if (n_ctx < 1 || n_ctx > (1 << 24) || n_batch < 1 || n_threads < 1 || n_threads > 4096 ||
        !(bandwidth_gbs >= 0) || !(ram_gib >= 0))
        return elm_errorf(err, ELM_ERR_ARG, "plan: context %d, batch %d, %d threads, %g GB/s, %g "
                          "GiB out of range", n_ctx, n_batch, n_threads, bandwidth_gbs, ram_gib);
    const elm_hparams *hp = &m->hp;
    out->n_ctx = n_ctx;
    out->n_batch = n_batch < n_ctx ? n_batch : n_ctx;
    out->n_threads = n_threads;
    out->n_params = out->n_active_params = elm_model_params(m);
    for (int32_t i = 0; i < m->n_tensors; i++) { /* the experts a token is not routed to */
        const int64_t *ne = m->tensors[i].ne;
        if (ne[2] > 1 && hp->n_expert_used < ne[2])
            out->n_active_params -= ne[0] * ne[1] * (ne[2] - hp->n_expert_used);
        if (strstr(m->tensors[i].name, "_exps.bias") && hp->n_expert_used < ne[1])
            out->n_active_params -= ne[0] * (ne[1] - hp->n_expert_used); /* gpt-oss's [E, n] */
    }
    out->kv_f16 = elm_kv_cache_bytes(hp, n_ctx, ELM_TYPE_F16, ELM_TYPE_F16);
    out->kv_q8_0 = elm_kv_cache_bytes(hp, n_ctx, ELM_TYPE_Q8_0, ELM_TYPE_Q8_0);
    out->kv_int8 = out->kv_f16 / 2; /* one byte per element, as runtimes with int8 caches */
    out->kv_bytes = kv_cache_q8 ? out->kv_q8_0 : out->kv_f16;
    out->compute_bytes = compute_bytes(hp, n_ctx, out->n_batch, n_threads);
    out->state_bytes = elm_state_bytes(hp);
    const bool tied = elm_model_find(m, "output.weight") == NULL;
    static const struct { const char *label; elm_type type; bool pure; } rows[ELM_PLAN_ROWS] = {
        {"f16", ELM_TYPE_F16, true},   {"q8_0", ELM_TYPE_Q8_0, true},
        {"q4_0", ELM_TYPE_Q4_0, true}, {"q4_1", ELM_TYPE_Q4_1, true},
        {"mixed", ELM_TYPE_Q4_0, false}, /* the rest: llama-quantize's recipes of these names */
        {"q2_k", 0, false},   {"q3_k_m", 0, false}, {"q4_k_s", 0, false}, {"q4_k_m", 0, false},
        {"q5_k_m", 0, false}, {"q6_k", 0, false},   {"iq4_xs", 0, false}};
    elm_tensor_plan *plan = malloc(((size_t)m->n_tensors + 1) * sizeof *plan);
    if (!plan) return elm_errorf(err, ELM_ERR_NOMEM, "plan: out of memory");
    elm_status st = ELM_OK;
    for (int r = 0; r < ELM_PLAN_ROWS && !st; r++) {
        elm_plan_row *row = &out->rows[r];
        elm_quant_policy policy = {.type = rows[r].type, .pure = rows[r].pure,
                                   .sensitive_type = ELM_TYPE_Q8_0};
        if (r >= ELM_PLAN_FIRST_RECIPE)
            elm_quant_recipe_from_name(rows[r].label, &policy.recipe, &policy.type);
        uint64_t embd, embd_row, unread;
        if ((st = weight_bytes(m, &policy, plan, &row->weight_bytes, &embd, &embd_row, &unread,
                               err)))
            break;
        snprintf(row->label, sizeof row->label, "%s", rows[r].label);
        /* decode looks up one embedding row (a tied embedding is read whole as the output) and
         * reads the experts the token is routed to */
        row->read_bytes = row->weight_bytes - (tied ? 0 : embd - embd_row) - unread +
                          out->kv_bytes;
        row->peak_bytes = row->weight_bytes + out->kv_bytes + out->state_bytes + out->compute_bytes;
        row->tokens_per_s = bandwidth_gbs * 1e9 / (double)row->read_bytes;
        row->headroom_bytes = ram_gib > 0 ? (int64_t)llround(ram_gib * 1073741824.0) -
                                                (int64_t)row->peak_bytes
                                          : 0;
    }
    free(plan);
    return st;
}

elm_status elm_plan_shape_config(const char *config_path, elm_model **out, elm_error *err) {
    *out = NULL;
    elm_hf_config c;
    elm_status st = elm_hf_read_config(config_path, &c, err);
    const elm_rope_tensors rope = c.llama3[0] > 0 || c.partial_rope > 0 ? ELM_ROPE_TENSORS_FREQS
                                  : c.n_longrope                        ? ELM_ROPE_TENSORS_LONGROPE
                                                                        : ELM_ROPE_TENSORS_NONE;
    /* the layers sharing KV: Gemma 4's checkpoints carry their k and v all the same */
    const elm_layout_extras x = {.rope = rope, .shared_kv_weights = c.hp.n_kv_shared > 0};
    return st ? st : shape_model(&c.hp, x, out, err);
}

elm_status elm_plan_shape_preset(const elm_synth_preset *p, elm_model **out, elm_error *err) {
    elm_hparams hp = {0};
    elm_preset_hparams(p, &hp);
    elm_status st = shape_model(&hp, elm_preset_layout_extras(p), out, err);
    if (!st) snprintf((*out)->name, sizeof (*out)->name, "%s", p->name);
    return st;
}
