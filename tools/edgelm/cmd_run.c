/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_run(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("run: not built yet"); }
