/* elm_first_least (codecs/quant_search.h), the lane-wise argmin of the i-quant encoders'
 * neighbour searches, against the sequential scan it replaces (`if (d[j] < best)` from best =
 * FLT_MAX, the reference encoders' loop): the same place, or -1 where the scan keeps its
 * default, for lists of every padded length whose entries mix ties, +0 and -0, NaN, FLT_MAX and
 * infinity. The byte tests of the encoders (cli_iquant_write) check it only on the values real
 * weights give. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "codecs/quant_search.h"

/* The reference: the first strictly below FLT_MAX and every earlier entry, or -1. */
static int scan(const float *d, int n) {
    float best = FLT_MAX;
    int at = -1;
    for (int j = 0; j < n; j++)
        if (d[j] < best) {
            best = d[j];
            at = j;
        }
    return at;
}

static uint32_t rng = 12345;
static uint32_t next(void) {
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    /* few distinct values, so that ties are common; the specials among them */
    const float pool[] = {0.0f, -0.0f, 1.0f, 1.0f, 0.5f, 2.0f, 1e-30f, FLT_MAX, INFINITY, NAN, 3.0f};
    const int npool = (int)(sizeof pool / sizeof pool[0]);
    float d[64];
    int mismatches = 0, cases = 0;
    for (int round = 0; round < 20000; round++) {
        const int n = ELM_NB_LANES * (1 + (int)(next() % 8));
        /* some lists only of the specials that the scan never takes */
        const bool untaken = round % 10 == 0;
        for (int j = 0; j < n; j++)
            d[j] = untaken ? pool[7 + next() % 3] : pool[next() % (uint32_t)npool];
        cases++;
        if (elm_first_least(d, n) != scan(d, n) && mismatches++ < 5)
            CHECK(false, "n %d: lanes %d, scan %d", n, elm_first_least(d, n), scan(d, n));
    }
    CHECK(mismatches == 0, "%d of %d lists differ", mismatches, cases);
    return check_done();
}
