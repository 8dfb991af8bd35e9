/* Options shared by `run` and `chat` (see gen_opts.h). */
#include "gen_opts.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/fileio.h"

void gen_opts_init(gen_opts *o) {
    *o = (gen_opts){.n_threads = elm_online_cores(), .seed = -1, .draft_max = 8,
                    .draft_min_p = 0.5f, .type_k = ELM_TYPE_F32, .type_v = ELM_TYPE_F32};
    o->gp.n_predict = 128;
    o->gp.sampling = elm_sampler_defaults();
}

const cli_opt *gen_opts_table(gen_opts *o) {
    static cli_opt t[34];
    const cli_opt opts[] = {
        {"-n, --n-predict", "N", CLI_I32, &o->gp.n_predict, 1, 1 << 20, "tokens to generate (default 128)", 0},
        {"-c, --ctx-size", "N", CLI_INT, &o->n_ctx, 1, 1 << 20, "KV cache size in tokens (default: the trained context, at most 4096)", 0},
        {"-b, --batch-size", "N", CLI_INT, &o->n_batch, 1, 1 << 20, "prompt tokens per forward pass (default: whole prompt)", 0},
        CLI_OPT_THREADS(&o->n_threads),
        {"-s, --seed", "N", CLI_INT, &o->seed, -1, 0x7fffffffL, "RNG seed (default: random)", 0},
        {"--temp", "T", CLI_FLOAT, &o->gp.sampling.temp, 0, 100, "temperature, 0 = greedy (default 0.8)", 0},
        {"--top-k", "N", CLI_I32, &o->gp.sampling.top_k, 0, 1 << 24, "(default 40, 0 = off)", 0},
        {"--top-p", "P", CLI_FLOAT, &o->gp.sampling.top_p, 0, 1, "(default 0.95, 1 = off)", 0},
        {"--min-p", "P", CLI_FLOAT, &o->gp.sampling.min_p, 0, 1, "(default 0.05, 0 = off)", 0},
        {"--repeat-penalty", "X", CLI_FLOAT, &o->gp.sampling.repeat_penalty, 0.01, 100, "(default 1.0 = off)", 0},
        {"--repeat-last-n", "N", CLI_I32, &o->gp.sampling.repeat_last_n, 0, 1 << 20, "penalty window in tokens (default 64)", 0},
        {"--ignore-eos", NULL, CLI_FLAG, &o->gp.ignore_eos, 0, 0, "keep generating after the end-of-sequence token", 0},
        CLI_OPT_CACHE_TYPES(&o->type_k, &o->type_v),
        {"--keep", "N", CLI_INT, &o->keep, -1, 1 << 20, "tokens of the prompt kept when the full context shifts\n(default 0: BOS only; -1: the whole prompt)", 0},
        {"--no-context-shift", NULL, CLI_FLAG, &o->gp.no_context_shift, 0, 0, "stop when the context is full instead of shifting it", 0},
        {"--draft", "MODEL", CLI_TEXT, &o->draft, 0, 0, "speculative decoding with this smaller model (same vocab)", 0},
        {"--draft-max", "N", CLI_INT, &o->draft_max, 1, 256, "most tokens drafted per target pass (default 8)", 0},
        {"--draft-min-p", "P", CLI_FLOAT, &o->draft_min_p, 0, 1, "stop drafting below this draft confidence (default 0.5)", 0},
        {"--grammar", "FILE", CLI_TEXT, &o->grammar, 0, 0, "constrain the output to this GBNF grammar (llama.cpp's syntax)", 0},
        {"--json-schema", "FILE", CLI_TEXT, &o->json_schema, 0, 0, "constrain the output to JSON valid under this JSON schema", 0},
        {"--lookup", "N", CLI_INT, &o->lookup, 0, 256, "prompt-lookup decoding: copy up to N tokens that followed\nan earlier occurrence of the last n-gram (0 = off)", 0},
        CLI_OPT_MMAP(&o->mmap),
        {"--ggml-rounding", NULL, CLI_FLAG, &o->ggml_rounding, 0, 0, "round activations as ggml does (f16 block scales, f16 input\nof F16 products): logits equal llama.cpp's up to the order\nof additions, for cross-checking (default: f32, more precise); maps the\nfile as --mmap does", 0},
        {"--swa-full", NULL, CLI_FLAG, &o->swa_full, 0, 0, "keep every position of sliding-window layers (Gemma 3), for\ncontext shift and sessions (default: a ring of the window)", 0},
        {0}};
    memcpy(t, opts, sizeof opts);
    return t;
}

long gen_opts_n_ctx(const gen_opts *o, const elm_model *m) {
    if (o->n_ctx) return o->n_ctx;
    return m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
}

/* The grammar of --grammar or --json-schema into *g (NULL when neither is given); prints the error
 * and returns false on failure. */
static bool load_grammar(const gen_opts *o, elm_grammar **g) {
    *g = NULL;
    const char *path = o->grammar ? o->grammar : o->json_schema;
    if (!path) return true;
    if (o->grammar && o->json_schema) {
        cli_fail("--grammar and --json-schema cannot be combined");
        return false;
    }
    if (o->draft || o->lookup > 0) {
        cli_fail("%s cannot be combined with --draft or --lookup", o->grammar ? "--grammar" : "--json-schema");
        return false;
    }
    char *text = NULL, *gbnf = NULL;
    size_t len = 0;
    elm_error err;
    elm_status st = elm_read_file(path, 16u << 20, &text, &len, &err);
    if (!st && o->json_schema) st = elm_json_schema_to_gbnf(text, len, path, &gbnf, &err);
    if (!st) st = elm_grammar_parse(gbnf ? gbnf : text, gbnf ? strlen(gbnf) : len, path, g, &err);
    free(text);
    free(gbnf);
    if (st) cli_fail("%s", err.msg);
    return st == ELM_OK;
}

bool gen_stack_new(gen_stack *s, const gen_opts *o, const elm_model *m, const char *path) {
    *s = (gen_stack){0};
    elm_error err;
    elm_error_clear(&err);
    if (!load_grammar(o, &s->grammar)) return false;
    const long n_ctx = gen_opts_n_ctx(o, m);
    const elm_context_params cp = {.n_ctx = (int32_t)n_ctx,
                                   .n_batch = (int32_t)(o->n_batch ? o->n_batch : n_ctx),
                                   .n_threads = (int32_t)o->n_threads,
                                   .type_k = o->type_k,
                                   .type_v = o->type_v,
                                   .ggml_rounding = o->ggml_rounding,
                                   .swa_full = o->swa_full};
    if (elm_context_new(m, &cp, &s->ctx, &err)) {
        cli_fail("%s: %s", path, err.msg);
        return false;
    }
    if (m->hp.n_ctx_train > 0 && n_ctx > m->hp.n_ctx_train)
        fprintf(stderr, "edgelm: warning: -c %ld is past %s's trained context of %d tokens\n", n_ctx,
                path, m->hp.n_ctx_train);
    if (!o->draft && o->lookup <= 0) return true;
    s->speculative = true;
    s->spec = (elm_spec_params){.draft_max = (int32_t)o->draft_max,
                                .draft_min_p = o->draft_min_p, .lookup = (int32_t)o->lookup};
    if (!o->draft) return true;
    if (!(s->draft_model = cli_load_model_to_run(o->draft, NULL, gen_opts_mmap(o)))) return false;
    if (s->draft_model->hp.n_vocab != m->hp.n_vocab) {
        cli_fail("%s: draft vocabulary has %d tokens, %s has %d", o->draft,
                 s->draft_model->hp.n_vocab, path, m->hp.n_vocab);
        return false;
    }
    if (elm_context_new(s->draft_model, &cp, &s->draft_ctx, &err)) {
        cli_fail("%s: %s", o->draft, err.msg);
        return false;
    }
    s->spec.draft = s->draft_ctx;
    return true;
}

void gen_stack_free(gen_stack *s) {
    elm_grammar_free(s->grammar);
    elm_context_free(s->draft_ctx);
    elm_model_free(s->draft_model);
    elm_context_free(s->ctx);
    *s = (gen_stack){0};
}

void gen_kv_summary(const elm_context *c, char *buf, size_t cap) {
    snprintf(buf, cap, "KV cache %s/%s %.2f MiB", elm_type_get(elm_context_type_k(c))->name,
             elm_type_get(elm_context_type_v(c))->name, elm_context_kv_bytes(c) / 1048576.0);
}

void gen_spec_summary(const elm_spec_stats *s, char *buf, size_t cap) {
    snprintf(buf, cap,
             "drafted %d, accepted %d (%.1f%%), %.2f tokens/pass, %.3f ms/token vs %.3f plain, "
             "speedup %.2fx",
             s->drafted, s->accepted, 100 * s->acceptance_rate, s->tokens_per_pass,
             s->ms_per_token, s->plain_ms_per_token, s->speedup);
}

bool gen_opts_mmap(const gen_opts *o) { return o->mmap || o->ggml_rounding; }

uint64_t gen_opts_seed(const gen_opts *o) {
    if (o->seed >= 0) return (uint64_t)o->seed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}
