/* llama-quantize's type choice under the sub-4-bit recipes (q2_k_s, iq1_s .. iq3_m), tensor by
 * tensor: elm_quant_plan with each recipe and an importance matrix against the types
 * llama-quantize wrote with the model's imatrix (tests/data/iquant_recipes.json,
 * scripts/iquant_recipes_golden.sh), on wide256 (whole super-blocks: the recipes' own rules, such
 * as IQ2_XXS attn_output in iq1_s and IQ2_S attn_q in iq3_xxs) and stories260K (rows of 64 and
 * 172: the fallbacks to IQ4_NL, Q4_0, Q5_0, Q8_0 and F16). The bytes of every tensor are
 * tests/cli_iquant_recipes.sh's. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/model.h"
#include "edgelm/quant.h"

static void check_recipe(const elm_model *m, const char *model, const cJSON *want) {
    uint32_t ftype;
    elm_type base;
    if (!elm_quant_recipe_from_name(want->string, &ftype, &base)) {
        CHECK(false, "%s: no recipe '%s'", model, want->string);
        return;
    }
    const elm_quant_policy p = {.type = base, .sensitive_type = ELM_TYPE_Q8_0, .recipe = ftype,
                                .imatrix = true};
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    elm_error err;
    const elm_status st = elm_quant_plan(m, &p, plan, &err);
    CHECK(st == ELM_OK, "%s %s: %s", model, want->string, err.msg);
    CHECK(cJSON_GetArraySize(want) == m->n_tensors, "%s %s: %d tensors in the golden, %d here",
          model, want->string, cJSON_GetArraySize(want), m->n_tensors);
    for (int32_t i = 0; st == ELM_OK && i < m->n_tensors; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(want, m->tensors[i].name);
        const int type = t ? (int)cJSON_GetArrayItem(t, 0)->valuedouble : -1;
        CHECK((int)plan[i].type == type, "%s %s %s: edgelm %s (%s), llama-quantize type %d", model,
              want->string, m->tensors[i].name, elm_type_get(plan[i].type)->name, plan[i].reason,
              type);
    }
    free(plan);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    static const struct { const char *name, *path; } models[] = {
        {"wide256", "wide256/wide-f32.gguf"}, {"stories260K", "stories260K/stories260K-f32.gguf"}};
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
        if (access(fixture(models[k].path), R_OK))
            return check_skip("the wide256 or stories260K fixtures are missing");
    cJSON *golden = check_load_json("tests/data/iquant_recipes.json");
    for (size_t k = 0; golden && k < sizeof models / sizeof models[0]; k++) {
        const cJSON *recipes = cJSON_GetObjectItemCaseSensitive(golden, models[k].name);
        elm_model *m = NULL;
        elm_error err;
        if (elm_model_load(fixture(models[k].path), NULL, &m, &err)) {
            CHECK(false, "%s", err.msg);
            continue;
        }
        CHECK(recipes && cJSON_GetArraySize(recipes) == 11, "%s: 11 recipes in the golden",
              models[k].name);
        const cJSON *r;
        cJSON_ArrayForEach(r, recipes) check_recipe(m, models[k].name, r);
        elm_model_free(m);
    }
    cJSON_Delete(golden);
    return check_done();
}
