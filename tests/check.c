/* Test harness implementation (see check.h). */
#include "check.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

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
    return check_failed ? EXIT_FAILURE : EXIT_SUCCESS;
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
