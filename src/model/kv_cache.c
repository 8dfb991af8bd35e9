/* Operations on a context's KV cache beyond appending (see context.h): the ids it holds, rolling
 * it back (speculative decoding), shifting it when full (long generations and chats), and its
 * size in bytes. */
#include <stdlib.h>
#include <string.h>

#include "model/context_state.h"
#include "model/kv_quant.h"

const int32_t *elm_context_tokens(const elm_context *c) { return c->tokens; }

elm_status elm_context_truncate(elm_context *c, int32_t n_past, elm_error *err) {
    if (n_past < 0 || n_past > c->n_past)
        return elm_errorf(err, ELM_ERR_ARG, "truncate to %d tokens: the cache holds %d", n_past,
                          c->n_past);
    /* a ring has overwritten what lies further back than its spare rows */
    if (c->swa_rows && c->n_past - n_past > c->swa_rows - c->m->hp.n_swa + 1)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "truncate by %d tokens: the sliding-window KV cache keeps %d beyond its "
                          "window (swa_full keeps every position)", c->n_past - n_past,
                          c->swa_rows - c->m->hp.n_swa + 1);
    if (!c->state_floats || n_past == c->n_past) {
        c->n_past = n_past;
        return ELM_OK;
    }
    /* recurrent layers: back to a checkpoint at or before n_past, then the tokens since */
    const int32_t from = elm_seq_restore(c, 0, n_past);
    c->n_past = from;
    for (int32_t t = from; t < n_past; t++)
        if (c->tokens[t] < 0)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                              "truncate to %d tokens: the recurrent state must be rebuilt from "
                              "position %d, which was entered as hidden states", n_past, t);
    for (int32_t t = from; t < n_past; t += c->n_batch) {
        const int32_t nb = n_past - t < c->n_batch ? n_past - t : c->n_batch;
        elm_status st = elm_forward(c, c->tokens + t, nb, NULL, false, err);
        if (st) return st;
    }
    return ELM_OK;
}

/* Rotates the keys of layer l's positions [from, to) by the angles in cs (cos, sin per pair):
 * RoPE at position p is a rotation by an angle proportional to p per pair, and rotations add (as
 * llama.cpp shifts its cache: RoPE at position -n_discard). Keys of other types than f32 go
 * through floats. */
static void rerotate(elm_context *c, int l, int32_t from, int32_t to, const float *cs,
                     float *row) {
    const elm_hparams *hp = &c->m->hp;
    const elm_kv_layer *kl = &c->kv[l];
    void (*rope)(float *, int, int, int, const float *) =
        hp->rope_style == ELM_ROPE_NEOX ? c->k->rope_neox : c->k->rope;
    for (int32_t p = from; p < to; p++) {
        unsigned char *dst = elm_kv_layer_k(c, l) + (size_t)p * kl->k_row;
        elm_kv_decode(c->type_k, kl->k_block, dst, row, kl->dim);
        rope(row, elm_layer_kv_heads(hp, l), elm_layer_head_dim(hp, l), elm_layer_rope_dim(hp, l),
             cs);
        elm_kv_encode(c->type_k, kl->k_block, row, dst, kl->dim);
    }
}

elm_status elm_context_shift(elm_context *c, int32_t n_keep, int32_t n_discard, elm_error *err) {
    if (n_keep < 0 || n_discard <= 0 || n_keep + n_discard > c->n_past)
        return elm_errorf(err, ELM_ERR_ARG,
                          "context shift: keep %d, discard %d of %d cached tokens", n_keep,
                          n_discard, c->n_past);
    if (c->swa_rows)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "context shift: the sliding-window layers' KV cache keeps only the "
                          "window (swa_full keeps every position)");
    if (c->state_floats)
        return elm_errorf(err, ELM_ERR_UNSUPPORTED,
                          "context shift: %s's recurrent layers cannot drop tokens from their "
                          "state (raise -c)", c->m->hp.arch);
    const elm_hparams *hp = &c->m->hp;
    /* the global and the windowed layers' angles (the windowed: a RoPE of their own, if any) */
    const elm_rope_freqs *swa = c->inv_freq_swa ? &c->rope_swa : &c->rope;
    float *cs = malloc(sizeof(float) * (size_t)(hp->rope_dim + swa->rope_dim));
    float *row = malloc(sizeof(float) * (size_t)c->kv_dim);
    if (!cs || !row) {
        free(cs);
        free(row);
        return elm_errorf(err, ELM_ERR_NOMEM, "context shift: out of memory");
    }
    const int32_t back = -n_discard;
    /* a pure rotation: the keys hold the attention factor already (llama.cpp's shift applies it
     * once more, scaling shifted keys by its square) */
    elm_rope_freqs turn = c->rope, turn_swa = *swa;
    turn.mscale = turn_swa.mscale = 1.0f;
    c->k->rope_cs(&turn, &back, 1, cs);
    c->k->rope_cs(&turn_swa, &back, 1, cs + hp->rope_dim);
    const int32_t from = n_keep + n_discard, n_move = c->n_past - from;
    for (int l = 0; l < hp->n_layers; l++) {
        const elm_kv_layer *kl = &c->kv[l];
        if (!kl->own) continue; /* moved with the layer it reads */
        unsigned char *k = elm_kv_layer_k(c, l), *v = elm_kv_layer_v(c, l);
        memmove(k + (size_t)n_keep * kl->k_row, k + (size_t)from * kl->k_row,
                (size_t)n_move * kl->k_row);
        memmove(v + (size_t)n_keep * kl->v_row, v + (size_t)from * kl->v_row,
                (size_t)n_move * kl->v_row);
        /* NoPE layers (SmolLM3) stored their keys unrotated */
        if (!elm_layer_nope(hp, l))
            rerotate(c, l, n_keep, n_keep + n_move,
                     cs + (elm_layer_swa(hp, l) ? hp->rope_dim : 0), row);
    }
    memmove(c->tokens + n_keep, c->tokens + from, sizeof(int32_t) * (size_t)n_move);
    c->n_past -= n_discard;
    free(cs);
    free(row);
    return ELM_OK;
}

elm_status elm_context_make_room(elm_context *c, int32_t n_new, int32_t n_keep, elm_error *err) {
    const int32_t free_slots = c->n_ctx - c->n_past;
    if (n_new <= free_slots) return ELM_OK;
    int32_t keep = n_keep > 0 ? n_keep : 0;
    if (keep == 0 && c->n_past > 0 && c->tokens[0] == c->m->vocab.bos_id) keep = 1;
    if (keep > c->n_past) keep = c->n_past;
    const int32_t rest = c->n_past - keep, need = n_new - free_slots;
    if (need > rest)
        return elm_errorf(err, ELM_ERR_ARG,
                          "context full: %d kept + %d new tokens do not fit in %d (lower --keep or "
                          "raise -c)",
                          keep, n_new, c->n_ctx);
    return elm_context_shift(c, keep, rest / 2 > need ? rest / 2 : need, err);
}

bool elm_kv_type_from_name(const char *name, elm_type *out) {
    return elm_type_from_name(name, out) && (*out == ELM_TYPE_F32 || *out == ELM_TYPE_F16 ||
                                             *out == ELM_TYPE_Q8_0 || *out == ELM_TYPE_Q4_0);
}

/* Mistral's window (swa_period 0, every layer) keeps the full cache, masked: rings would take
 * its context shift and sessions, which a ring refuses. A windowed layer that later layers read
 * (Gemma 4) keeps every position too: they attend after it has taken in the whole batch, which
 * a ring holds only in part; so does a non-causal model's (EmbeddingGemma), whose tokens see the
 * positions after them. */
int32_t elm_kv_layer_rows(const elm_hparams *hp, int l, int32_t n_ctx) {
    if (elm_layer_recurrent(hp, l)) return 0; /* its state is elsewhere (seq_state.c) */
    if (elm_layer_kv_src(hp, l) != l) return 0; /* it reads another layer's (Gemma 4) */
    if ((hp->swa_period == 0 && !hp->swa_listed) || !elm_layer_swa(hp, l) || hp->non_causal)
        return n_ctx;
    for (int s = hp->n_layers - hp->n_kv_shared; s < hp->n_layers; s++)
        if (elm_layer_kv_src(hp, s) == l) return n_ctx;
    const int64_t ring = (int64_t)hp->n_swa + (hp->n_swa / 2 > ELM_SWA_SPARE ? hp->n_swa / 2
                                                                               : ELM_SWA_SPARE);
    return ring < n_ctx ? (int32_t)ring : n_ctx;
}

size_t elm_kv_cache_bytes(const elm_hparams *hp, int32_t n_ctx, elm_type type_k, elm_type type_v) {
    if (n_ctx <= 0) return 0;
    size_t bytes = 0;
    for (int l = 0; l < hp->n_layers; l++) {
        const int32_t hd = elm_layer_head_dim(hp, l);
        const int32_t bk = elm_kv_block(type_k, hd), bv = elm_kv_block(type_v, hd);
        if (!bk || !bv) return 0;
        const int64_t kv_dim = (int64_t)elm_layer_kv_heads(hp, l) * hd;
        bytes += (size_t)elm_kv_layer_rows(hp, l, n_ctx) *
                 (elm_kv_bytes(type_k, bk, kv_dim) + elm_kv_bytes(type_v, bv, kv_dim));
    }
    return bytes;
}

size_t elm_context_kv_bytes(const elm_context *c) { return c->k_bytes + c->v_bytes; }

elm_type elm_context_type_k(const elm_context *c) { return c->type_k; }
elm_type elm_context_type_v(const elm_context *c) { return c->type_v; }
