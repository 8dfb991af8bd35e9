/* The recurrent layer kinds by elm_layer_kind (layer_kind.h). */
#include <stddef.h>

#include "model/layer_kind.h"

const elm_layer_ops *elm_layer_ops_of(elm_layer_kind k) {
    static const elm_layer_ops *const ops[ELM_LAYER_KINDS] = {
        [ELM_LAYER_SHORTCONV] = &elm_layer_shortconv,
        [ELM_LAYER_MAMBA2] = &elm_layer_mamba2,
    };
    return k > ELM_LAYER_ATTENTION && k < ELM_LAYER_KINDS ? ops[k] : NULL;
}
