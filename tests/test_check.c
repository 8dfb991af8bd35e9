/* The test harness itself (check.c): check_done fails when no check ran (a test that checks
 * nothing must not pass), check_skip returns ctest's skip code, and check_golden_number reads a
 * figure out of a golden file by its dotted key. */
#include <math.h>
#include <stdlib.h>

#include "check.h"

int main(int argc, char **argv) {
    check_init(argc, argv);
    const int none = check_done(); /* prints "0 passed, 0 failed" and the reason on stderr */
    CHECK(none == EXIT_FAILURE, "check_done with no check returned %d", none);
    CHECK(CHECK_SKIP_CODE == 77, "skip code %d (CMakeLists.txt's SKIP_RETURN_CODE is 77)",
          CHECK_SKIP_CODE);
    const double n_ctx = check_golden_number("stories260K/golden/quant_reference.json", "n_ctx");
    CHECK(n_ctx == 256, "golden n_ctx %g", n_ctx);
    const int failed = check_failed;
    const double missing = check_golden_number("stories260K/golden/quant_reference.json",
                                               "files.no-such.ppl");
    const int recorded = check_failed - failed;
    check_failed = failed; /* that failure was the point */
    CHECK(isnan(missing) && recorded == 1, "a missing golden key gave %g, %d failures", missing,
          recorded);
    return check_done();
}
