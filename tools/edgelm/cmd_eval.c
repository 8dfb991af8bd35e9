/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_eval(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("eval: not built yet"); }
