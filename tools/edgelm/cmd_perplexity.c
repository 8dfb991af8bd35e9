/* PLACEHOLDER until written: replaced by the real subcommand. */
#include "cli.h"
int cmd_perplexity(int argc, char **argv) { (void)argc; (void)argv; return cli_fail("perplexity: not built yet"); }
