/* elm_online_cores (edgelm/system.h). */
#include <unistd.h>

#include "edgelm/system.h"

int elm_online_cores(void) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}
