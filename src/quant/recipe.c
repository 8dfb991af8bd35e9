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
    FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30,
    FT_MXFP4_MOE = 38
};

static const struct { const char *name; uint32_t ftype; elm_type base; } recipes[] = {
    {"q2_k", FT_Q2_K, ELM_TYPE_Q2_K},     {"q3_k_s", FT_Q3_K_S, ELM_TYPE_Q3_K},
    {"q3_k_m", FT_Q3_K_M, ELM_TYPE_Q3_K}, {"q3_k", FT_Q3_K_M, ELM_TYPE_Q3_K},
    {"q3_k_l", FT_Q3_K_L, ELM_TYPE_Q3_K}, {"q4_k_s", FT_Q4_K_S, ELM_TYPE_Q4_K},
    {"q4_k_m", FT_Q4_K_M, ELM_TYPE_Q4_K}, {"q4_k", FT_Q4_K_M, ELM_TYPE_Q4_K},
    {"q5_k_s", FT_Q5_K_S, ELM_TYPE_Q5_K}, {"q5_k_m", FT_Q5_K_M, ELM_TYPE_Q5_K},
    {"q5_k", FT_Q5_K_M, ELM_TYPE_Q5_K},   {"q6_k", FT_Q6_K, ELM_TYPE_Q6_K},
    {"iq4_nl", FT_IQ4_NL, ELM_TYPE_IQ4_NL}, {"iq4_xs", FT_IQ4_XS, ELM_TYPE_IQ4_XS},
    {"mxfp4_moe", FT_MXFP4_MOE, ELM_TYPE_MXFP4},
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
    C_OTHER, C_OUTPUT, C_TOKEN_EMBD, C_ATTN_V, C_ATTN_K, C_ATTN_OUTPUT, C_FFN_DOWN
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
    if (strstr(name, "attn_q.weight")) return C_OTHER;
    if (strstr(name, "attn_output.weight")) return C_ATTN_OUTPUT;
    if (strstr(name, "ffn_up") || strstr(name, "ffn_gate")) return C_OTHER;
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

elm_status elm_recipe_plan(const elm_model *m, uint32_t ft, bool with_imatrix,
                           elm_tensor_plan *plan, elm_error *err) {
    if (ft == FT_MXFP4_MOE) return plan_mxfp4_moe(m, plan, err);
    elm_type base = ELM_TYPE_Q4_K;
    elm_quant_recipe_from_name(recipe_name(ft), &ft, &base);
    /* llama.cpp takes layer 0's: none for a hybrid whose first layer is recurrent (LFM2) */
    const int n_gqa = m->hp.recurrent[0] ? 0
                      : m->hp.n_kv_heads > 0 ? m->hp.n_heads / m->hp.n_kv_heads
                                             : 1;
    const int n_layer = m->hp.n_layers;
    const bool experts8 = m->hp.n_expert == 8;
    bool tied = true;
    int n_attn_v = 0, i_attn_v = 0, i_ffn_down = 0;
    for (int32_t i = 0; i < m->n_tensors; i++) {
        category c = category_of(m->tensors[i].name);
        tied &= c != C_OUTPUT;
        n_attn_v += c == C_ATTN_V;
    }
    sort_key *order = malloc((m->n_tensors ? (size_t)m->n_tensors : 1) * sizeof *order);
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
        const category c = category_of(t->name);
        elm_type ty = base;
        const char *why = NULL;
        if (c == C_OUTPUT || (tied && c == C_TOKEN_EMBD)) {
            ty = !elm_row_bytes(base, t->ne[0]) ? ELM_TYPE_Q8_0 : ELM_TYPE_Q6_K;
            why = c == C_OUTPUT ? "output" : "tied embedding";
        } else if (c == C_ATTN_V) {
            if (ft == FT_Q2_K) ty = n_gqa >= 4 ? ELM_TYPE_Q4_K : ELM_TYPE_Q3_K;
            else if (ft == FT_Q3_K_M) ty = i_attn_v < 2 ? ELM_TYPE_Q5_K : ELM_TYPE_Q4_K;
            else if (ft == FT_Q3_K_L) ty = ELM_TYPE_Q5_K;
            else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && n_gqa >= 4) ty = ELM_TYPE_Q5_K;
            else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && use_more_bits(i_attn_v, n_attn_v))
                ty = ELM_TYPE_Q6_K;
            else if (ft == FT_Q4_K_S && i_attn_v < 4) ty = ELM_TYPE_Q5_K;
            if (experts8) ty = ELM_TYPE_Q8_0;
            why = experts8 ? "attn_v of 8 experts" : "attn_v";
            i_attn_v++;
        } else if (c == C_ATTN_K && experts8) {
            ty = ELM_TYPE_Q8_0;
            why = "attn_k of 8 experts";
        } else if (c == C_FFN_DOWN) {
            /* with experts, llama.cpp takes the layer from the name (layer_info) */
            const int il = m->hp.n_expert > 1 ? order[k].layer : i_ffn_down;
            if (ft == FT_Q2_K) ty = ELM_TYPE_Q3_K;
            else if (ft == FT_Q3_K_M) ty = il < n_layer / 16 ? ELM_TYPE_Q5_K : ELM_TYPE_Q4_K;
            else if (ft == FT_Q3_K_L) ty = ELM_TYPE_Q5_K;
            else if (ft == FT_Q4_K_M) ty = use_more_bits(il, n_layer) ? ELM_TYPE_Q6_K : ty;
            else if (il < n_layer / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS) && !with_imatrix)
                ty = ELM_TYPE_Q5_K;
            else if (ft == FT_Q5_K_M && use_more_bits(il, n_layer)) ty = ELM_TYPE_Q6_K;
            else if (ft == FT_Q4_K_S && il < n_layer / 8) ty = ELM_TYPE_Q5_K;
            why = "ffn_down";
            i_ffn_down++;
        } else if (c == C_ATTN_OUTPUT && experts8) {
            if (ft == FT_Q2_K || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL ||
                ft == FT_Q4_K_S || ft == FT_Q4_K_M || ft == FT_IQ4_XS)
                ty = ELM_TYPE_Q5_K;
            why = "attn_output of 8 experts";
        } else if (c == C_ATTN_OUTPUT) {
            if (ft == FT_Q2_K) ty = ELM_TYPE_Q3_K;
            else if (ft == FT_Q3_K_M) ty = ELM_TYPE_Q4_K;
            else if (ft == FT_Q3_K_L) ty = ELM_TYPE_Q5_K;
            why = "attn_output";
        }
        plan[i].type = ty;
        if (ty != base)
            snprintf(plan[i].reason, sizeof plan[i].reason, "%s: %s at %s", recipe_name(ft), why,
                     elm_type_get((uint32_t)ty)->name);
        else
            snprintf(plan[i].reason, sizeof plan[i].reason, "%s", recipe_name(ft));
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
