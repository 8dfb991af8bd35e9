/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_quantize(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("quantize: not built yet"); }
