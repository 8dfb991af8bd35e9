/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_tokenize(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("tokenize: not built yet"); }
