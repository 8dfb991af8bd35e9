/* Shared helpers of the edgelm subcommands: error printing, number parsing, model loading. */
#ifndef EDGELM_TOOLS_CLI_H
#define EDGELM_TOOLS_CLI_H

#include <stdbool.h>
#include "core/clock.h"
#include "edgelm/model.h"
#include "edgelm/system.h"

/* Every subcommand: argc/argv start at the subcommand name; returns the exit status. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cmd_inspect(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_imatrix(int argc, char **argv);
int cmd_calib(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* Prints "edgelm: <message>" on one line to stderr; returns 1 (the failure exit status). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parses a whole decimal integer / float in [lo, hi]; false (nothing printed) otherwise. */
bool cli_parse_long(const char *s, long lo, long hi, long *out);
bool cli_parse_float(const char *s, double lo, double hi, double *out);

/* Option value helper: returns argv[++*i] or prints "option X needs a value" and returns NULL. */
const char *cli_value(int argc, char **argv, int *i);

struct cJSON;

/* The output of a --json option: prints o formatted, and a newline, on stdout, and deletes o.
 * Returns 0, or 1 after printing "edgelm: <cmd>: out of memory building JSON" when o is NULL (a
 * failed cJSON_Create*) or cannot be printed. */
int cli_print_json(struct cJSON *o, const char *cmd);

/* The same on one line (JSON Lines: one object per input, as search --questions prints). */
int cli_print_json_line(struct cJSON *o, const char *cmd);

/* One number member of a JSON object. */
typedef struct cli_json_num {
    const char *key;
    double value;
} cli_json_num;

/* Adds the n members of nums to o, in order (nothing when o is NULL, as cJSON's adders do). */
void cli_json_numbers(struct cJSON *o, const cli_json_num *nums, size_t n);

/* Reads a whole file (prompt, evaluation text) into a NUL-terminated malloc'd buffer; prints the
 * error and returns NULL on failure, also for a file holding a NUL byte (binary, not text). */
char *cli_read_text(const char *path, size_t *len);

/* Splits buf in place at its line ends ('\n', a '\r' before it dropped) into lines [<= cap],
 * leaving out empty lines; returns how many (eval --prompts, search --questions). */
int cli_split_lines(char *buf, char **lines, int cap);

/* Progress on stderr: "\r<text>" redrawn in place on a terminal; in a log (not a terminal) one
 * line at each tenth of the work and at the end. done counts from 1 to total. */
void cli_progress(long done, long total, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* For a file written at the end of a long run: prints "<path>: folder '<dir>' does not exist or
 * is not writable" and returns 1 when that is so, so the run can stop before it starts; else 0. */
int cli_check_output(const char *path);

/* Loads a model, printing the library's error on failure (NULL). */
elm_model *cli_load_model(const char *path, const char *tokenizer_path);

/* The same for commands that run the model: a GGUF file is read into memory (elm_load_opts
 * in_memory: faster decode) unless `mmap` (the --mmap option) asks to map it. */
elm_model *cli_load_model_to_run(const char *path, const char *tokenizer_path, bool mmap);

/* Peak resident set size of this process in MiB (getrusage). */
double cli_peak_rss_mib(void);

#endif
