/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_inspect(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("inspect: not built yet"); }
