/* Options shared by the subcommands that generate (`run`, `chat`): context size, threads,
 * sampling, KV cache types, context shift and speculative decoding, parsed in one place, and the
 * contexts they describe. */
#ifndef EDGELM_TOOLS_GEN_OPTS_H
#define EDGELM_TOOLS_GEN_OPTS_H

#include <stdbool.h>
#include <stdio.h>
#include "edgelm/speculative.h"
#include "opts.h"

typedef struct gen_opts {
    long n_ctx, n_batch, n_threads, seed, keep, draft_max, lookup;
    elm_gen_params gp;          /* sampling, ignore_eos, no_context_shift (n_keep set by caller) */
    elm_type type_k, type_v;
    const char *draft;          /* --draft MODEL */
    const char *grammar;        /* --grammar FILE (GBNF) */
    const char *json_schema;    /* --json-schema FILE */
    float draft_min_p;
    bool mmap;                  /* --mmap: map GGUF files instead of reading them */
    bool ggml_rounding;         /* --ggml-rounding (elm_context_params) */
    bool swa_full;              /* --swa-full (elm_context_params) */
} gen_opts;

/* Defaults: n_predict 128, llama.cpp's sampling, f32 cache, keep 0, draft-max 8, min-p 0.5. */
void gen_opts_init(gen_opts *o);

/* The option table of these options, bound to o's fields (one table at a time: the next call
 * rebinds it). */
const cli_opt *gen_opts_table(gen_opts *o);

/* Whether to map GGUF files rather than read them in: --mmap, or --ggml-rounding, whose llama.cpp
 * product order reads the weights in the file's layout (read in, some are packed for this CPU's
 * kernels: elm_load_opts.in_memory). */
bool gen_opts_mmap(const gen_opts *o);

/* The KV cache size: -c, else the model's trained context (4096 when that is unknown or longer). */
long gen_opts_n_ctx(const gen_opts *o, const elm_model *m);

/* The sampling seed: -s, or when not given (-1) one drawn from the clock and the process id. */
uint64_t gen_opts_seed(const gen_opts *o);

/* The generation stack of a model: its context (n_ctx 0 means the trained context, at most
 * 4096), the draft model and context when --draft or --lookup ask for speculation, and the
 * grammar --grammar or --json-schema give (the caller puts it in its elm_gen_params). */
typedef struct gen_stack {
    elm_context *ctx;
    elm_model *draft_model;
    elm_context *draft_ctx;
    elm_spec_params spec;
    bool speculative;
    elm_grammar *grammar;       /* from --grammar or --json-schema, or NULL */
} gen_stack;

/* Creates the stack for model m (the path for messages); prints the error and returns false on
 * failure (free what was made with gen_stack_free). */
bool gen_stack_new(gen_stack *s, const gen_opts *o, const elm_model *m, const char *path);
void gen_stack_free(gen_stack *s);

/* "KV cache f32/f32 0.62 MiB" into buf. */
void gen_kv_summary(const elm_context *c, char *buf, size_t cap);

/* "drafted 40, accepted 31 (77.5%), 3.1 tokens/pass, speedup 2.40x" into buf. */
void gen_spec_summary(const elm_spec_stats *s, char *buf, size_t cap);

#endif
