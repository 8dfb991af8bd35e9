/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_bench(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("bench: not built yet"); }
