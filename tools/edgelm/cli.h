/* Shared helpers of the edgelm subcommands: error printing, number parsing, model loading. */
#ifndef EDGELM_TOOLS_CLI_H
#define EDGELM_TOOLS_CLI_H

#include <stdbool.h>
#include "edgelm/model.h"

/* Every subcommand: argc/argv start at the subcommand name; returns the exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_inspect(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);

/* Prints "edgelm: <message>" on one line to stderr; returns 1 (the failure exit status). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a whole decimal integer / float in [lo, hi]; false (nothing printed) otherwise. */
bool cli_parse_long(const char *s, long lo, long hi, long *out);
bool cli_parse_float(const char *s, double lo, double hi, double *out);

/* Option value helper: returns argv[++*i] or prints "option X needs a value" and returns NULL. */
const char *cli_value(int argc, char **argv, int *i);

/* Loads a model, printing the library's error on failure (NULL). */
elm_model *cli_load_model(const char *path, const char *tokenizer_path);

/* Peak resident set size of this process in MiB (getrusage). */
double cli_peak_rss_mib(void);

/* Monotonic clock in milliseconds. */
double cli_now_ms(void);

#endif
