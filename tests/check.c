/* Test harness implementation (see check.h). */
#include "check.h"

#include <stdlib.h>

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
