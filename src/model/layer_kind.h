/* Layer kinds (docs/ARCHITECTURE.md, "Layer kinds"): what mixes the tokens of a block. Every
 * block is norm → mixing → residual → norm → FFN → residual; the mixing is attention over the
 * KV cache (model/layer_attention.c), or a recurrent layer that carries a fixed-size state per
 * sequence from one forward call to the next. A recurrent kind is one file implementing this
 * table, plus the families' rows that name it (model/arch.h: elm_arch.recurrent).
 *
 * A recurrent layer sees the batch in runs of consecutive tokens of one sequence (context.h,
 * elm_forward_seqs); the pass has reset a run's state when the run starts at position 0, and
 * checked that it continues where the state stopped otherwise. */
#ifndef EDGELM_MODEL_LAYER_KIND_H
#define EDGELM_MODEL_LAYER_KIND_H

#include "edgelm/context.h"
#include "edgelm/model.h"

struct elm_seq_run; /* context_state.h */

typedef struct elm_layer_ops {
    const char *name; /* in messages: "short conv" */
    /* Binds layer l's mixing tensors (its norms and FFN are bound by elm_model_bind) and checks
     * hp's sizes of the kind against them; errors name m->path and the tensor or key. */
    elm_status (*bind)(elm_model *m, int l, elm_error *err);
    /* Floats of state one sequence carries through layer l (hp: the whole model's). */
    int64_t (*state_floats)(const elm_hparams *hp, int l);
    /* Floats of scratch the mixing of a batch of up to n_batch tokens needs (c->mix). */
    int64_t (*scratch_floats)(const elm_hparams *hp, int32_t n_batch);
    /* Mixes the batch's n normed tokens c->xb [n, dim] into c->xb, run by run (context_state.h:
     * elm_seq_run), advancing each run's sequence state of layer l (elm_seq_state); c->mix is
     * its scratch. */
    void (*mix)(elm_context *c, int l, int32_t n, const struct elm_seq_run *runs, int n_runs);
} elm_layer_ops;

/* The ops of recurrent kind k, NULL for attention (and unknown kinds). */
const elm_layer_ops *elm_layer_ops_of(elm_layer_kind k);

extern const elm_layer_ops elm_layer_shortconv;
extern const elm_layer_ops elm_layer_mamba2;
extern const elm_layer_ops elm_layer_deltanet;

/* The causal depthwise convolution of one run of n tokens, in place (layer_shortconv.c; Mamba-2's
 * and the DeltaNet's too): channel ch of token t, x[t·stride + ch], becomes
 * Σ_k win[k]·w[ch·taps + k] over its window of its last taps inputs, oldest first, the first
 * taps - 1 of them from state [channels, taps - 1], which then holds the run's last ones. The taps are summed in order in
 * float, as ggml's ssm_conv does, each multiply-add fused where fused (elm_kernels.fused_conv);
 * 2 <= taps <= 64. */
void elm_causal_conv(float *x, size_t stride, int32_t n, int channels, int taps, const float *w,
                     float *state, bool fused);

#endif
