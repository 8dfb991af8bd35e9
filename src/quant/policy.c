/* Mixed-precision policy (quant.h, elm_quant_plan): which type each tensor is written in, and why.
 * The defaults follow deployment practice (docs/deployment.md): the token embedding and output projection
 * are the most sensitive tensors and stay at 8 bits, norms stay F32. */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "edgelm/quant.h"
#include "quant/recipe.h"

static bool matches(const char *pattern, const char *name) {
    if (fnmatch(pattern, name, 0) == 0) return true;
    char with[ELM_NAME_MAX + 16];
    snprintf(with, sizeof with, "%s.weight", pattern);
    return fnmatch(with, name, 0) == 0;
}

elm_status elm_quant_plan(const elm_model *m, const elm_quant_policy *p, elm_tensor_plan *plan,
                          elm_error *err) {
    if (!elm_type_writable(p->type) || (!p->pure && !elm_type_writable(p->sensitive_type)))
        return elm_errorf(err, ELM_ERR_ARG, "%s: unsupported target type %d", m->path,
                          (int)(elm_type_writable(p->type) ? p->sensitive_type : p->type));
    for (int32_t k = 0; k < p->n_overrides; k++)
        if (!elm_type_writable(p->overrides[k].type))
            return elm_errorf(err, ELM_ERR_ARG, "override '%s': unsupported type %d",
                              p->overrides[k].pattern, (int)p->overrides[k].type);
    const elm_type_traits *target = elm_type_get((uint32_t)p->type);
    const bool recipe = p->recipe && !p->pure;
    if (recipe) {
        elm_status st = elm_recipe_plan(m, p->recipe, p->imatrix, plan, err);
        if (st) return st;
    }
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        elm_tensor_plan *out = &plan[i];
        if (t->n_dims < 2) {
            out->type = out->wanted = ELM_TYPE_F32;
            snprintf(out->reason, sizeof out->reason, "1-D (norm, bias): kept f32");
            continue;
        }
        if (elm_recipe_keeps(t->name)) {
            out->type = out->wanted = t->type;
            snprintf(out->reason, sizeof out->reason, "kept %s (llama-quantize copies it)",
                     elm_type_get(t->type)->name);
            continue;
        }
        bool sensitive = !strcmp(t->name, "token_embd.weight") || !strcmp(t->name, "output.weight");
        if (recipe) {
            /* elm_recipe_plan chose it */
        } else if (!p->pure && sensitive &&
            elm_type_get((uint32_t)p->sensitive_type)->bits_per_weight > target->bits_per_weight) {
            out->type = p->sensitive_type;
            snprintf(out->reason, sizeof out->reason, "sensitive (%s)",
                     t->name[0] == 't' ? "token embedding" : "output projection");
        } else {
            out->type = p->type;
            snprintf(out->reason, sizeof out->reason, p->pure ? "--pure" : "--type");
        }
        for (int32_t k = 0; k < p->n_overrides; k++)
            if (matches(p->overrides[k].pattern, t->name)) {
                out->type = p->overrides[k].type;
                snprintf(out->reason, sizeof out->reason, "override '%.60s'",
                         p->overrides[k].pattern);
            }
        out->wanted = out->type;
        out->type = elm_type_fallback(out->wanted, t->ne[0]);
        if (out->type != out->wanted)
            snprintf(out->reason, sizeof out->reason, "rows of %lld not a multiple of %d: %s",
                     (long long)t->ne[0], elm_type_get((uint32_t)out->wanted)->block_size,
                     elm_type_get((uint32_t)out->type)->name);
    }
    return ELM_OK;
}

static const char *const method_names[] = {"rtn", "gptq", "awq"};

bool elm_quant_method_from_name(const char *name, elm_quant_method *out) {
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, method_names[i])) {
            *out = (elm_quant_method)i;
            return true;
        }
    return false;
}

const char *elm_quant_method_name(elm_quant_method m) {
    return (unsigned)m < 3 ? method_names[m] : NULL;
}
