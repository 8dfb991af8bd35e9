/* llama-quantize's recipes (recipe.h), and the file type and fallback of one type, read from its
 * traits (elm_file_type_of, elm_type_fallback). A recipe starts every matrix at its base type and
 * moves the sensitive ones up: the output projection (and a tied embedding) to Q6_K, attn_v and
 * ffn_down of some layers, attn_output for the 2- and 3-bit recipes. Layer-dependent bumps count
 * tensors in llama.cpp's iteration order (by layer, then by name), which is what
 * use_more_bits(i, n) sees. Only the rules that apply to the models edgelm runs are here (no
 * Falcon or 70B special cases): the dense families', and a mixture of experts': ffn_down's layer
 * read from its name, and in a model of exactly 8 experts (Mixtral's rule, llama.cpp applies it
 * by the count) attn_k and attn_v at Q8_0 and attn_output at Q5_K in most recipes. The router
 * stays as it is (elm_recipe_keeps). MXFP4_MOE is a rule of its own: experts in MXFP4, the rest
 * in Q8_0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "quant/recipe.h"

/* llama.cpp's LLAMA_FTYPE_MOSTLY_* values */
enum {
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14,
    FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ2_XXS = 19, FT_IQ2_XS = 20,
    FT_Q2_K_S = 21, FT_IQ3_XS = 22, FT_IQ3_XXS = 23, FT_IQ1_S = 24, FT_IQ4_NL = 25, FT_IQ3_S = 26,
    FT_IQ3_M = 27, FT_IQ2_S = 28, FT_IQ2_M = 29, FT_IQ4_XS = 30, FT_IQ1_M = 31, FT_MXFP4_MOE = 38
};

/* each recipe's base type: llama.cpp's llama_ftype_get_default_type (IQ2_S files are mostly
 * IQ2_XS, IQ2_M ones IQ2_S, IQ3_XS and IQ3_M ones IQ3_S) */
static const struct { const char *name; uint32_t ftype; elm_type base; } recipes[] = {
    {"q2_k", FT_Q2_K, ELM_TYPE_Q2_K},     {"q3_k_s", FT_Q3_K_S, ELM_TYPE_Q3_K},
    {"q3_k_m", FT_Q3_K_M, ELM_TYPE_Q3_K}, {"q3_k", FT_Q3_K_M, ELM_TYPE_Q3_K},
    {"q3_k_l", FT_Q3_K_L, ELM_TYPE_Q3_K}, {"q4_k_s", FT_Q4_K_S, ELM_TYPE_Q4_K},
    {"q4_k_m", FT_Q4_K_M, ELM_TYPE_Q4_K}, {"q4_k", FT_Q4_K_M, ELM_TYPE_Q4_K},
    {"q5_k_s", FT_Q5_K_S, ELM_TYPE_Q5_K}, {"q5_k_m", FT_Q5_K_M, ELM_TYPE_Q5_K},
    {"q5_k", FT_Q5_K_M, ELM_TYPE_Q5_K},   {"q6_k", FT_Q6_K, ELM_TYPE_Q6_K},
    {"iq4_nl", FT_IQ4_NL, ELM_TYPE_IQ4_NL}, {"iq4_xs", FT_IQ4_XS, ELM_TYPE_IQ4_XS},
    {"mxfp4_moe", FT_MXFP4_MOE, ELM_TYPE_MXFP4},
    {"q2_k_s", FT_Q2_K_S, ELM_TYPE_Q2_K}, {"iq1_s", FT_IQ1_S, ELM_TYPE_IQ1_S},
    {"iq1_m", FT_IQ1_M, ELM_TYPE_IQ1_M},  {"iq2_xxs", FT_IQ2_XXS, ELM_TYPE_IQ2_XXS},
    {"iq2_xs", FT_IQ2_XS, ELM_TYPE_IQ2_XS}, {"iq2_s", FT_IQ2_S, ELM_TYPE_IQ2_XS},
    {"iq2_m", FT_IQ2_M, ELM_TYPE_IQ2_S},  {"iq3_xxs", FT_IQ3_XXS, ELM_TYPE_IQ3_XXS},
    {"iq3_xs", FT_IQ3_XS, ELM_TYPE_IQ3_S}, {"iq3_s", FT_IQ3_S, ELM_TYPE_IQ3_S},
    {"iq3_m", FT_IQ3_M, ELM_TYPE_IQ3_S},
};
#define N_RECIPES (sizeof recipes / sizeof recipes[0])

bool elm_quant_recipe_from_name(const char *name, uint32_t *ftype, elm_type *base) {
    const long i = elm_named_find((elm_named_rows)ELM_NAMED_ROWS(recipes), name);
    if (i < 0) return false;
    *ftype = recipes[i].ftype;
    *base = recipes[i].base;
    return true;
}

const char *elm_quant_recipe_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_named_list(&names, (elm_named_rows)ELM_NAMED_ROWS(recipes));
}

static const char *recipe_name(uint32_t ftype) {
    for (size_t i = 0; i < N_RECIPES; i++)
        if (recipes[i].ftype == ftype) return recipes[i].name;
    return "?";
}

elm_type elm_type_fallback(elm_type type, int64_t ne0) {
    if (elm_row_bytes(type, ne0)) return type;
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    const elm_type t = tt ? tt->fallback : ELM_TYPE_F16;
    return elm_row_bytes(t, ne0) ? t : ELM_TYPE_F16;
}

uint32_t elm_file_type_of(elm_type type) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    return tt ? tt->file_type : 0;
}

typedef enum {
    C_OTHER, C_OUTPUT, C_TOKEN_EMBD, C_ATTN_V, C_ATTN_K, C_ATTN_Q, C_ATTN_OUTPUT, C_FFN_UP,
    C_FFN_GATE, C_FFN_DOWN
} category;

/* llama.cpp's tensor_get_category, for the categories the recipes here look at */
static category category_of(const char *name) {
    if (!strcmp(name, "output.weight")) return C_OUTPUT;
    /* Gemma 4's per-layer embeddings count as token embeddings, as in llama.cpp */
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight"))
        return C_TOKEN_EMBD;
    if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") ||
        strstr(name, "attn_v.weight"))
        return C_ATTN_V;
    if (strstr(name, "attn_k.weight")) return C_ATTN_K;
    if (strstr(name, "attn_q.weight")) return C_ATTN_Q;
    if (strstr(name, "attn_output.weight")) return C_ATTN_OUTPUT;
    if (strstr(name, "ffn_up")) return C_FFN_UP;
    if (strstr(name, "ffn_gate")) return C_FFN_GATE;
    if (strstr(name, "ffn_down")) return C_FFN_DOWN;
    return C_OTHER;
}

typedef struct sort_key {
    int layer; /* N of "blk.N.", -1 outside the blocks */
    const char *name;
    int32_t index;
} sort_key;

/* llama.cpp's weight_name_comparer: by block number, then by name */
static int by_layer_then_name(const void *a, const void *b) {
    const sort_key *x = a, *y = b;
    return x->layer != y->layer ? (x->layer < y->layer ? -1 : 1) : strcmp(x->name, y->name);
}

/* the layers that get more bits: the first and last eighth, and every third in between */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* MXFP4_MOE: the stacked experts (a third dimension over 1) in MXFP4, every other matrix, the
 * output and the embedding included, in Q8_0; llama.cpp tests this ftype before the others'
 * rules, so none of them apply. */
static elm_status plan_mxfp4_moe(const elm_model *m, elm_tensor_plan *plan, elm_error *err) {
    if (m->hp.n_expert <= 1)
        return elm_errorf(err, ELM_ERR_ARG,
                          "%s: mxfp4_moe puts a mixture of experts' expert tensors in MXFP4, and "
                          "this model has no experts (use --type mxfp4 --pure, or another type)",
                          m->path);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        if (t->n_dims < 2 || elm_recipe_keeps(t->name)) continue;
        const bool expert = t->ne[2] > 1;
        plan[i].type = expert ? ELM_TYPE_MXFP4 : ELM_TYPE_Q8_0;
        snprintf(plan[i].reason, sizeof plan[i].reason, "mxfp4_moe: %s",
                 expert ? "experts" : "not an expert tensor: q8_0");
    }
    return ELM_OK;
}

/* What the rules read of the model and the recipe, and llama.cpp's running counts of attn_v,
 * ffn_down, ffn_gate and ffn_up tensors (in the order by_layer_then_name gives) */
typedef struct rule_state {
    uint32_t ft;
    elm_type base;
    bool with_imatrix, tied, experts8;
    int n_gqa, n_layer, n_expert, n_attn_v;
    int i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;
} rule_state;

/* the recipes whose every matrix llama.cpp picks by its very-low-bit rules */
static bool iq_mix(uint32_t ft) {
    return ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ2_S ||
           ft == FT_IQ2_M || ft == FT_IQ1_M;
}

/* a tensor of a very-low-bit recipe (llama.cpp's branch for iq_mix file types) */
static elm_type iq_mix_type(rule_state *s, category c, elm_type ty) {
    const bool iq2_sm = s->ft == FT_IQ2_S || s->ft == FT_IQ2_M;
    if (c == C_ATTN_V) {
        s->i_attn_v++;
        if (s->n_gqa >= 4 || s->n_expert >= 4) return ELM_TYPE_Q4_K;
        return iq2_sm ? ELM_TYPE_IQ3_S : ELM_TYPE_Q2_K;
    }
    if (c == C_ATTN_K && s->experts8) return ELM_TYPE_Q4_K;
    if (c == C_FFN_DOWN) /* by count of ffn_down tensors, even with experts */
        return s->i_ffn_down++ < s->n_layer / 8 ? (iq2_sm ? ELM_TYPE_IQ3_S : ELM_TYPE_Q2_K) : ty;
    if (c == C_ATTN_OUTPUT) {
        if (s->experts8) return ELM_TYPE_Q5_K;
        if (s->ft == FT_IQ1_S || s->ft == FT_IQ1_M) return ELM_TYPE_IQ2_XXS;
        if (iq2_sm) return ELM_TYPE_IQ3_S;
    }
    return ty;
}

static elm_type attn_v_type(rule_state *s, elm_type ty) {
    const uint32_t ft = s->ft;
    const int i = s->i_attn_v++;
    if (ft == FT_Q2_K) ty = s->n_gqa >= 4 ? ELM_TYPE_Q4_K : ELM_TYPE_Q3_K;
    else if (ft == FT_Q2_K_S && s->n_gqa >= 4) ty = ELM_TYPE_Q4_K;
    else if (ft == FT_IQ3_XXS)
        ty = s->n_gqa >= 4 ? ELM_TYPE_Q4_K : !s->with_imatrix ? ELM_TYPE_IQ3_S : ELM_TYPE_IQ3_XXS;
    else if ((ft == FT_IQ3_XS || ft == FT_IQ3_S) && s->n_gqa >= 4) ty = ELM_TYPE_Q4_K;
    else if (ft == FT_IQ3_M) ty = ELM_TYPE_Q4_K;
    else if (ft == FT_Q3_K_M) ty = i < 2 ? ELM_TYPE_Q5_K : ELM_TYPE_Q4_K;
    else if (ft == FT_Q3_K_L) ty = ELM_TYPE_Q5_K;
    else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && s->n_gqa >= 4) ty = ELM_TYPE_Q5_K;
    else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && use_more_bits(i, s->n_attn_v))
        ty = ELM_TYPE_Q6_K;
    else if (ft == FT_Q4_K_S && i < 4) ty = ELM_TYPE_Q5_K;
    return s->experts8 ? ELM_TYPE_Q8_0 : ty;
}

/* il: the layer (with experts, llama.cpp's layer_info reads it from the name) */
static elm_type ffn_down_type(const rule_state *s, int il, elm_type ty) {
    const uint32_t ft = s->ft;
    const int n = s->n_layer;
    if (ft == FT_Q2_K) return ELM_TYPE_Q3_K;
    if (ft == FT_Q2_K_S) return il < n / 8 ? ELM_TYPE_Q4_K : ty;
    if (ft == FT_IQ3_XXS && !s->with_imatrix) return il < n / 8 ? ELM_TYPE_Q4_K : ELM_TYPE_Q3_K;
    if (ft == FT_Q3_K_M) return il < n / 16 ? ELM_TYPE_Q5_K : ELM_TYPE_Q4_K;
    if (ft == FT_IQ3_M && (il < n / 8 || (s->experts8 && use_more_bits(il, n))))
        return ELM_TYPE_Q4_K;
    if (ft == FT_Q3_K_L) return ELM_TYPE_Q5_K;
    if (ft == FT_Q4_K_M) return use_more_bits(il, n) ? ELM_TYPE_Q6_K : ty;
    if (il < n / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS) && !s->with_imatrix)
        return ELM_TYPE_Q5_K;
    if (ft == FT_Q5_K_M && use_more_bits(il, n)) return ELM_TYPE_Q6_K;
    if (ft == FT_Q4_K_S && il < n / 8) return ELM_TYPE_Q5_K;
    return ty;
}

static elm_type attn_output_type(const rule_state *s, elm_type ty) {
    const uint32_t ft = s->ft;
    if (s->experts8)
        return ft == FT_Q2_K || ft == FT_IQ3_XS || ft == FT_IQ3_XXS || ft == FT_Q3_K_S ||
                       ft == FT_Q3_K_M || ft == FT_IQ4_NL || ft == FT_Q4_K_S || ft == FT_Q4_K_M ||
                       ft == FT_IQ3_S || ft == FT_IQ3_M || ft == FT_IQ4_XS
                   ? ELM_TYPE_Q5_K
                   : ty;
    if (ft == FT_Q2_K) return ELM_TYPE_Q3_K;
    if (ft == FT_IQ3_XXS) return ELM_TYPE_IQ3_S;
    if (ft == FT_Q3_K_M || ft == FT_IQ3_M) return ELM_TYPE_Q4_K;
    if (ft == FT_Q3_K_L) return ELM_TYPE_Q5_K;
    return ty;
}

/* The type of tensor t (category c, layer from its name, -1 outside the blocks) under the
 * recipe: llama.cpp's llama_tensor_get_type_impl for the dense families and the mixtures of
 * experts edgelm runs. why: the rule's name when it is not the base type. */
static elm_type rule_type(rule_state *s, category c, const elm_tensor *t, int layer,
                          const char **why) {
    const uint32_t ft = s->ft;
    const elm_type base = s->base;
    elm_type ty = base;
    if (c == C_OUTPUT || (s->tied && c == C_TOKEN_EMBD)) {
        *why = c == C_OUTPUT ? "output" : "tied embedding";
        return !elm_row_bytes(base, t->ne[0]) ? ELM_TYPE_Q8_0
               : iq_mix(ft) || ft == FT_IQ3_XXS ? ELM_TYPE_Q5_K
                                                : ELM_TYPE_Q6_K;
    }
    if (c == C_TOKEN_EMBD) {
        *why = "token embedding";
        if (ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ1_M)
            return ELM_TYPE_Q2_K;
        if (ft == FT_IQ2_S || ft == FT_IQ2_M || ft == FT_IQ3_XXS) return ELM_TYPE_IQ3_S;
        return ty;
    }
    if (iq_mix(ft)) {
        static const char *const names[] = {
            [C_ATTN_V] = "attn_v", [C_ATTN_K] = "attn_k of 8 experts",
            [C_FFN_DOWN] = "ffn_down of the first layers", [C_ATTN_OUTPUT] = "attn_output"};
        *why = names[c] ? names[c] : "";
        return iq_mix_type(s, c, ty);
    }
    /* with experts, llama.cpp takes the FFN's layer from the name (layer_info) */
    const bool by_name = s->n_expert > 1;
    switch (c) {
    case C_ATTN_V: *why = s->experts8 ? "attn_v of 8 experts" : "attn_v"; return attn_v_type(s, ty);
    case C_ATTN_K:
    case C_ATTN_Q:
        *why = c == C_ATTN_K ? (s->experts8 ? "attn_k of 8 experts" : "attn_k") : "attn_q";
        if (c == C_ATTN_K && s->experts8) return ELM_TYPE_Q8_0;
        if (ft == FT_IQ3_XS) return ELM_TYPE_IQ3_XXS;
        if (ft == FT_IQ3_XXS) return ELM_TYPE_IQ2_S;
        return ty;
    case C_FFN_DOWN: {
        *why = "ffn_down";
        const int il = by_name ? layer : s->i_ffn_down;
        s->i_ffn_down++;
        return ffn_down_type(s, il, ty);
    }
    case C_ATTN_OUTPUT:
        *why = s->experts8 ? "attn_output of 8 experts" : "attn_output";
        return attn_output_type(s, ty);
    case C_FFN_GATE:
    case C_FFN_UP: {
        *why = c == C_FFN_GATE ? "ffn_gate of the middle layers" : "ffn_up of the middle layers";
        int *i = c == C_FFN_GATE ? &s->i_ffn_gate : &s->i_ffn_up;
        const int il = by_name ? layer : *i;
        (*i)++;
        return ft == FT_IQ3_XS && il >= s->n_layer / 8 && il < 7 * s->n_layer / 8
                   ? ELM_TYPE_IQ3_XXS
                   : ty;
    }
    default: return ty;
    }
}

elm_status elm_recipe_plan(const elm_model *m, uint32_t ft, bool with_imatrix,
                           elm_tensor_plan *plan, elm_error *err) {
    if (ft == FT_MXFP4_MOE) return plan_mxfp4_moe(m, plan, err);
    rule_state s = {.ft = ft, .base = ELM_TYPE_Q4_K, .with_imatrix = with_imatrix, .tied = true,
                    .n_layer = m->hp.n_layers, .n_expert = m->hp.n_expert,
                    .experts8 = m->hp.n_expert == 8};
    elm_quant_recipe_from_name(recipe_name(ft), &s.ft, &s.base);
    /* llama.cpp takes layer 0's: none for a hybrid whose first layer is recurrent (LFM2) */
    s.n_gqa = m->hp.recurrent[0] ? 0
              : m->hp.n_kv_heads > 0 ? m->hp.n_heads / m->hp.n_kv_heads
                                     : 1;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        category c = category_of(m->tensors[i].name);
        s.tied &= c != C_OUTPUT;
        s.n_attn_v += c == C_ATTN_V;
    }
    sort_key *order = malloc((size_t)(m->n_tensors > 0 ? m->n_tensors : 1) * sizeof *order);
    if (!order) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", m->path);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        order[i] = (sort_key){-1, m->tensors[i].name, i};
        sscanf(order[i].name, "blk.%d.", &order[i].layer);
    }
    qsort(order, (size_t)m->n_tensors, sizeof *order, by_layer_then_name);
    for (int32_t k = 0; k < m->n_tensors; k++) {
        const int32_t i = order[k].index;
        const elm_tensor *t = &m->tensors[i];
        if (t->n_dims < 2 || elm_recipe_keeps(t->name)) continue;
        const char *why = "";
        const elm_type ty = rule_type(&s, category_of(t->name), t, order[k].layer, &why);
        plan[i].type = ty;
        if (ty != s.base)
            snprintf(plan[i].reason, sizeof plan[i].reason, "%s: %s at %s", recipe_name(s.ft), why,
                     elm_type_get((uint32_t)ty)->name);
        else
            snprintf(plan[i].reason, sizeof plan[i].reason, "%s", recipe_name(s.ft));
    }
    free(order);
    return ELM_OK;
}

bool elm_recipe_keeps(const char *name) {
    static const char *const kept[] = {"_norm.weight", "shortconv.conv.weight", "ssm_conv1d",
                                       "altup", "laurel", "per_layer_model_proj",
                                       "ffn_gate_inp.weight"};
    const size_t len = strlen(name);
    if (len < 6 || strcmp(name + len - 6, "weight") != 0) return true;
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (strstr(name, kept[i])) return true;
    return false;
}

bool elm_recipe_needs_imatrix(const char *name, elm_type type, uint32_t ftype) {
    const elm_type_traits *tt = elm_type_get((uint32_t)type);
    const category c = category_of(name);
    if ((c == C_OUTPUT || c == C_TOKEN_EMBD) && tt->from_float) return false;
    return tt->needs_imatrix || (type == ELM_TYPE_Q2_K && ftype == FT_Q2_K_S);
}
