/* A preset's shapes as hyper-parameters, for both of its uses: writing its file (synth.c) and
 * planning it (plan.c). */
#ifndef EDGELM_SHAPES_PRESET_H
#define EDGELM_SHAPES_PRESET_H

#include "edgelm/shapes.h"
#include "model/arch.h"

/* Fills hp (zeroed by the caller) from p: the architecture, sizes, RoPE, which layers are
 * recurrent or windowed (p.layers) and the recurrent kind's sizes, Granite's multipliers, Gemma
 * 4's head sizes, per-layer embeddings, KV sharing and FFN sizes. A preset cut to its first
 * n_layers (synth --layers) keeps the sharing of those layers. */
void elm_preset_hparams(const elm_synth_preset *p, elm_hparams *hp);

/* What p's file has beyond its family's tensors (model/arch.h): the RoPE vectors (Llama 3.1's
 * rope_freqs for llama3_rope, Gemma 4's partial one for a windowed list, LongRoPE's factor pair
 * for n_ctx_orig > 0, or none), and the KV weights its sharing layers carry unused. */
elm_layout_extras elm_preset_layout_extras(const elm_synth_preset *p);

#endif
