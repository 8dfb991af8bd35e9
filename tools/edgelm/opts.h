/* Each subcommand declares its options once, in a table: names, value kind, range and help line.
 * Parsing, one-line errors for missing or out-of-range values, unknown options and --help all come
 * from that table, so a command's body starts with its options already checked. */
#ifndef EDGELM_TOOLS_OPTS_H
#define EDGELM_TOOLS_OPTS_H

#include <stdbool.h>
#include <stdio.h>

typedef enum cli_opt_kind {
    CLI_FLAG,  /* no value; dst: bool, set to true */
    CLI_TEXT,  /* dst: const char *, the value as given */
    CLI_INT,   /* dst: long, a whole number in [lo, hi] */
    CLI_I32,   /* dst: int32_t, a whole number in [lo, hi] */
    CLI_FLOAT, /* dst: float, a number in [lo, hi] */
    CLI_DOUBLE, /* dst: double, a number in [lo, hi] */
    CLI_CALL,  /* call(value, dst): parses the value itself; prints its one-line error and returns
                * false to stop (a repeated option, a value from a list) */
} cli_opt_kind;

typedef struct cli_opt {
    const char *names; /* "-m, --model" or "--json": the accepted spellings, ", " separated */
    const char *arg;   /* the value's name in --help ("PATH", "N"); NULL for CLI_FLAG */
    cli_opt_kind kind;
    void *dst;
    double lo, hi;     /* CLI_INT, CLI_FLOAT, CLI_DOUBLE: the accepted range */
    const char *help;  /* --help text; '\n' starts a continuation line */
    bool (*call)(const char *opt, const char *value, void *dst); /* CLI_CALL */
} cli_opt;

/* Rows that several commands share, spelled and explained the same everywhere (dst as in
 * cli_opt; --json's help says what the command prints). */
#define CLI_OPT_MODEL(dst)                                                                        \
    {"-m, --model", "PATH", CLI_TEXT, dst, 0, 0, "GGUF file, Hugging Face folder or llama2.c model.bin", 0}
#define CLI_OPT_TOKENIZER(dst)                                                                    \
    {"--tokenizer", "PATH", CLI_TEXT, dst, 0, 0, "llama2.c tokenizer.bin when not beside the model", 0}
#define CLI_OPT_THREADS(dst) {"-t, --threads", "N", CLI_INT, dst, 1, 512, "threads (default: all cores)", 0}
#define CLI_OPT_JSON(dst, help) {"--json", NULL, CLI_FLAG, dst, 0, 0, help, 0}
#define CLI_OPT_MMAP(dst)                                                                         \
    {"--mmap", NULL, CLI_FLAG, dst, 0, 0,                                                         \
     "map the GGUF file instead of reading it into memory: instant\nload, shared page cache, "   \
     "slower decode (4 KiB pages)", 0}

/* --cache-type-k and --cache-type-v into two elm_type (context.h's KV cache types). */
#define CLI_OPT_CACHE_TYPES(k, v)                                                                 \
    {"--cache-type-k", "T", CLI_CALL, k, 0, 0, "KV cache keys: f32 (default), f16, q8_0, q4_0", cli_kv_type}, \
    {"--cache-type-v", "T", CLI_CALL, v, 0, 0, "KV cache values: f32 (default), f16, q8_0, q4_0", cli_kv_type}

/* CLI_CALL parser of a KV cache type name into the elm_type at dst; says what is wrong and
 * returns false for another name. */
bool cli_kv_type(const char *opt, const char *value, void *dst);

/* The arguments that are not options, in order: v has room for the command's argc entries. */
typedef struct cli_args {
    const char **v;
    int n;
} cli_args;

/* A command's interface. `tables` is a NULL-terminated list of option tables, each ended by an
 * entry whose names is NULL (tables shared by several commands, such as run and chat's, are
 * listed beside the command's own). `positional`, when not NULL, receives the one argument that
 * is not an option (inspect's MODEL); `args`, when not NULL, every one (index's PATH...). */
typedef struct cli_spec {
    const char *cmd;     /* "perplexity" */
    const char *usage;   /* after "usage: edgelm <cmd> " */
    const char *about;   /* what the command does, printed before the options; may be NULL */
    const cli_opt *const *tables;
    const char *epilog;  /* printed after the options; may be NULL */
    const char **positional;
    cli_args *args;
} cli_spec;

/* Parses argv[1 .. argc) (argv[0] is the command's name). Returns 0 when the command should run,
 * 1 after printing a one-line error ("option X needs a value", "X: invalid value 'V' (expected
 * ...)", "<cmd>: unknown option 'X' (see 'edgelm <cmd> --help')"), and -1 after printing --help on
 * stdout (the command then exits 0). */
int cli_parse(const cli_spec *s, int argc, char **argv);

/* Prints the --help of s on f. */
void cli_help(const cli_spec *s, FILE *f);

/* The exit status cli_parse's result stands for, for a command that returns right away. */
static inline int cli_parse_exit(int r) { return r < 0 ? 0 : r; }

/* cli_spec.tables from one or more option tables. */
#define CLI_TABLES(...) ((const cli_opt *const[]){__VA_ARGS__, NULL})

/* A command's first step: parses argv against the cli_spec *spec and returns from the command
 * unless it should run (0 after --help, 1 after a one-line error). */
#define CLI_PARSE_OR_RETURN(spec, argc, argv)                                                     \
    do {                                                                                          \
        const int pr_ = cli_parse(spec, argc, argv);                                              \
        if (pr_) return cli_parse_exit(pr_);                                                      \
    } while (0)

#endif
