/* `edgelm inspect --system`: the CPU, its SIMD features and the kernel table edgelm chose. */
#ifndef EDGELM_TOOLS_SYSTEM_INFO_H
#define EDGELM_TOOLS_SYSTEM_INFO_H

#include <stdbool.h>

/* Prints the report (text, or one JSON object) on stdout; returns the exit status. */
int cli_print_system(bool json);

#endif
