/* Generation similarity against Python's difflib (golden/similarity_cases.json): every pair's
 * SequenceMatcher(None, a, b).ratio() with autojunk (its default) and without, to 1e-9, plus
 * hand-checked cases for the rules the golden exercises only indirectly: the popular-element
 * threshold (more than n/100 + 1 occurrences, only when b has >= 200 elements), extension over
 * popular elements, difflib's choice among equally long blocks, and code points, not bytes. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/eval.h"

static double ratio(const char *a, const char *b, bool autojunk) {
    double r = -1;
    elm_error err;
    CHECK(elm_similarity_ratio(a, strlen(a), b, strlen(b), autojunk, &r, &err) == ELM_OK, "%s", err.msg);
    return r;
}

static char *repeat(const char *unit, int times, const char *tail) {
    const size_t u = strlen(unit), t = strlen(tail);
    char *s = malloc(u * (size_t)times + t + 1);
    if (!s) return NULL;
    for (int i = 0; i < times; i++) memcpy(s + u * (size_t)i, unit, u);
    memcpy(s + u * (size_t)times, tail, t + 1);
    return s;
}

static void golden_cases(void) {
    cJSON *g = check_load_json(fixture("stories260K/golden/similarity_cases.json"));
    const cJSON *cases = cJSON_GetObjectItem(g, "cases");
    CHECK(cJSON_GetArraySize(cases) >= 10, "golden has %d cases", cJSON_GetArraySize(cases));
    int i = 0, with_no_autojunk = 0;
    for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next, i++) {
        const char *a = cJSON_GetObjectItem(c, "a")->valuestring, *b = cJSON_GetObjectItem(c, "b")->valuestring;
        const double want = cJSON_GetObjectItem(c, "ratio")->valuedouble;
        const double got = ratio(a, b, true);
        CHECK(fabs(got - want) <= 1e-9, "case %d: ratio %.17g, difflib %.17g", i, got, want);
        const cJSON *nj = cJSON_GetObjectItem(c, "ratio_no_autojunk");
        if (cJSON_IsNumber(nj)) {
            with_no_autojunk++;
            const double got_nj = ratio(a, b, false);
            CHECK(fabs(got_nj - nj->valuedouble) <= 1e-9, "case %d: no-autojunk ratio %.17g, difflib %.17g",
                  i, got_nj, nj->valuedouble);
        }
    }
    CHECK(with_no_autojunk == i, "%d of %d cases carry ratio_no_autojunk", with_no_autojunk, i);
    cJSON_Delete(g);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    golden_cases();

    /* ratio = 2M/T; both empty is 1.0 */
    CHECK(ratio("", "", true) == 1.0, "empty pair");
    CHECK(ratio("abc", "", true) == 0.0, "one empty");
    CHECK(ratio("abcd", "bcde", true) == 0.75, "abcd/bcde %.17g", ratio("abcd", "bcde", true));
    /* code points: é is one element on each side, so 3 of 4 match */
    CHECK(fabs(ratio("café", "cafe", true) - 0.75) < 1e-15, "café/cafe %.17g", ratio("café", "cafe", true));
    /* difflib takes the block found first in a ("ab" at a[0]), leaving "c" unmatchable after it:
     * SequenceMatcher(None, "abxcab", "cab").ratio() == 2*3/9 */
    CHECK(fabs(ratio("abxcab", "cab", true) - 6.0 / 9) < 1e-15, "tie rule %.17g", ratio("abxcab", "cab", true));
    /* the junk rule applies to b only: with b = "y" + 200 'x', 'x' is popular, no block starts
     * on it and the empty match at (0, 0) cannot extend ('x' != 'y'): ratio 0. Without autojunk,
     * or with the sequences swapped, one element matches. With b = 200 'x' the empty match at
     * (0, 0) does extend over the popular 'x', as in difflib. */
    char *yx = repeat("x", 200, "");
    char *byx = yx ? malloc(202) : NULL;
    if (byx) {
        snprintf(byx, 202, "y%s", yx);
        CHECK(ratio("x", byx, true) == 0.0, "popular element started a match: %.17g", ratio("x", byx, true));
        CHECK(fabs(ratio("x", byx, false) - 2.0 / 202) < 1e-15, "no autojunk %.17g", ratio("x", byx, false));
        CHECK(fabs(ratio(byx, "x", true) - 2.0 / 202) < 1e-15, "swapped %.17g", ratio(byx, "x", true));
        CHECK(fabs(ratio("x", yx, true) - 2.0 / 201) < 1e-15, "empty match extended %.17g", ratio("x", yx, true));
    }
    free(byx);
    free(yx);
    /* b of 199 elements is below the autojunk size: nothing is popular */
    char *b199 = repeat("x", 199, "");
    if (b199) CHECK(fabs(ratio("x", b199, true) - 2.0 / 200) < 1e-15, "n=199 %.17g", ratio("x", b199, true));
    free(b199);
    /* threshold: n = 300 -> popular when more than 4 occurrences; "y" 4 times stays indexed */
    char *b300 = repeat("y", 4, "");
    char *tail = b300 ? repeat("z", 296, "") : NULL;
    char *b = tail ? malloc(301) : NULL;
    if (b) {
        snprintf(b, 301, "%s%s", b300, tail);
        CHECK(fabs(ratio("yyyy", b, true) - 8.0 / 304) < 1e-15, "4 of 300 not popular: %.17g", ratio("yyyy", b, true));
        CHECK(ratio("zz", b, true) == 0.0, "z popular: %.17g", ratio("zz", b, true));
    }
    free(b);
    free(tail);
    free(b300);
    /* a block that starts on a non-popular element extends over popular ones:
     * a = "qz", b = "q" + 299 'z': "q" matches, then 'z' extends it -> M = 2 */
    char *qz = repeat("z", 299, "");
    char *bq = qz ? malloc(301) : NULL;
    if (bq) {
        snprintf(bq, 301, "q%s", qz);
        CHECK(fabs(ratio("qz", bq, true) - 4.0 / 302) < 1e-15, "extension over popular: %.17g", ratio("qz", bq, true));
    }
    free(bq);
    free(qz);
    return check_done();
}
