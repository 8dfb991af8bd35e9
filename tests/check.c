/* Test harness implementation (see check.h). */
#include "check.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

int check_passed, check_failed;
static const char *fixtures_dir = "../shared/fixtures";

void check_init(int argc, char **argv) {
    if (argc > 1) fixtures_dir = argv[1];
}

const char *fixture(const char *rel) {
    static char buf[8][1024];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", fixtures_dir, rel);
    return buf[k];
}

int check_done(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    if (check_passed + check_failed == 0) {
        fprintf(stderr, "FAIL: no check ran\n");
        return EXIT_FAILURE;
    }
    return check_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int check_skip(const char *why) {
    printf("SKIPPED: %s\n", why);
    return CHECK_SKIP_CODE;
}

char *check_tmp_dir(void) {
    const char *tmp = getenv("TMPDIR");
    char *d = malloc(1024);
    snprintf(d, 1024, "%s/edgelm-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(d)) {
        free(d);
        d = NULL;
    }
    return d;
}

double check_golden_number(const char *rel, const char *key) {
    cJSON *root = check_load_json(fixture(rel));
    const cJSON *it = root;
    char part[128];
    for (const char *k = key; it && *k;) {
        const char *dot = strchr(k, '.');
        size_t n = dot ? (size_t)(dot - k) : strlen(k);
        snprintf(part, sizeof part, "%.*s", (int)n, k);
        it = cJSON_GetObjectItemCaseSensitive(it, part);
        k += n + (dot != NULL);
    }
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    CHECK(cJSON_IsNumber(it), "%s: no number at '%s'", rel, key);
    cJSON_Delete(root);
    return v;
}

cJSON *check_load_json(const char *path) {
    char *buf;
    size_t len;
    elm_error err;
    if (elm_read_file(path, (size_t)1 << 28, &buf, &len, &err)) {
        CHECK(0, "%s", err.msg);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(buf, len);
    free(buf);
    CHECK(j != NULL, "%s: not JSON", path);
    return j;
}

int check_json_ids(const cJSON *arr, int *out, int cap) {
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (n < cap) out[n] = it->valueint;
        n++;
    }
    return n < cap ? n : cap;
}
