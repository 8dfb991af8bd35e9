/* A preset's shapes as hyper-parameters, for both of its uses: writing its file (synth.c) and
 * planning it (plan.c). */
#ifndef EDGELM_SHAPES_PRESET_H
#define EDGELM_SHAPES_PRESET_H

#include "edgelm/shapes.h"
#include "model/arch.h"

/* Fills hp (zeroed by the caller) from p: the architecture, sizes, RoPE and, for a hybrid, which
 * layers are recurrent and its recurrent kind's sizes. */
void elm_preset_hparams(const elm_synth_preset *p, elm_hparams *hp);

/* The RoPE vectors p's file has: Llama 3.1's rope_freqs (llama3_rope), LongRoPE's factor pair
 * (n_ctx_orig > 0) or none. */
elm_rope_tensors elm_preset_rope_tensors(const elm_synth_preset *p);

#endif
