/* Options shared by `run` and `chat` (see gen_opts.h). */
#include "gen_opts.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void gen_opts_init(gen_opts *o) {
    *o = (gen_opts){.n_threads = elm_online_cores(), .seed = -1, .draft_max = 8,
                    .draft_min_p = 0.5f, .type_k = ELM_TYPE_F32, .type_v = ELM_TYPE_F32};
    o->gp.n_predict = 128;
    o->gp.sampling = elm_sampler_defaults();
}

void gen_opts_usage(FILE *f) {
    fputs("  -n, --n-predict N      tokens to generate (default 128)\n"
          "  -c, --ctx-size N       KV cache size in tokens (default: trained context, max 4096)\n"
          "  -b, --batch-size N     prompt tokens per forward pass (default: whole prompt)\n"
          "  -t, --threads N        threads (default: all cores)\n"
          "  -s, --seed N           RNG seed (default: random)\n"
          "      --temp T           temperature, 0 = greedy (default 0.8)\n"
          "      --top-k N          (default 40, 0 = off)\n"
          "      --top-p P          (default 0.95, 1 = off)\n"
          "      --min-p P          (default 0.05, 0 = off)\n"
          "      --repeat-penalty X (default 1.0 = off)\n"
          "      --repeat-last-n N  penalty window in tokens (default 64)\n"
          "      --ignore-eos       keep generating after the end-of-sequence token\n"
          "      --cache-type-k T   KV cache keys: f32 (default), f16, q8_0, q4_0\n"
          "      --cache-type-v T   KV cache values: f32 (default), f16, q8_0, q4_0\n"
          "      --keep N           tokens of the prompt kept when the full context shifts\n"
          "                         (default 0: BOS only; -1: the whole prompt)\n"
          "      --no-context-shift stop when the context is full instead of shifting it\n"
          "      --draft MODEL      speculative decoding with this smaller model (same vocab)\n"
          "      --draft-max N      most tokens drafted per target pass (default 8)\n"
          "      --draft-min-p P    stop drafting below this draft confidence (default 0.5)\n"
          "      --lookup N         prompt-lookup decoding: copy up to N tokens that followed\n"
          "                         an earlier occurrence of the last n-gram (0 = off)\n"
          CLI_MMAP_HELP
          "      --ggml-rounding    round activations as ggml does (f16 block scales, f16 input\n"
          "                         of F16 products): logits equal llama.cpp's up to the order\n"
          "                         of additions, for cross-checking (default: f32, more precise)\n",
          f);
}

static bool cache_type(const char *opt, const char *v, elm_type *out) {
    if (elm_kv_type_from_name(v, out)) return true;
    cli_fail("%s: invalid value '%s' (expected " ELM_KV_TYPE_NAMES ")", opt, v);
    return false;
}

bool gen_opts_parse(gen_opts *o, int argc, char **argv, int *ip) {
    const char *a = argv[*ip];
    long l = 0;
    double d = 0;
    /* each option: its names, a range, and where the value goes */
#define IS(x) (!strcmp(a, x))
#define LONG_OPT(lo, hi, dst)                                                                     \
    do {                                                                                          \
        const char *v = cli_value(argc, argv, ip);                                                \
        if (!v || !cli_parse_long(v, lo, hi, &l)) {                                               \
            if (v)                                                                                \
                cli_fail("%s: invalid value '%s' (expected an integer in %ld..%ld)", a, v,        \
                         (long)(lo), (long)(hi));                                                 \
            o->failed = true;                                                                     \
        } else                                                                                    \
            dst = l;                                                                              \
        return true;                                                                              \
    } while (0)
#define FLOAT_OPT(lo, hi, dst)                                                                    \
    do {                                                                                          \
        const char *v = cli_value(argc, argv, ip);                                                \
        if (!v || !cli_parse_float(v, lo, hi, &d)) {                                              \
            if (v)                                                                                \
                cli_fail("%s: invalid value '%s' (expected a number in %g..%g)", a, v,            \
                         (double)(lo), (double)(hi));                                             \
            o->failed = true;                                                                     \
        } else                                                                                    \
            dst = (float)d;                                                                       \
        return true;                                                                              \
    } while (0)
    if (IS("-n") || IS("--n-predict")) LONG_OPT(1, 1 << 20, o->gp.n_predict);
    if (IS("-c") || IS("--ctx-size")) LONG_OPT(1, 1 << 20, o->n_ctx);
    if (IS("-b") || IS("--batch-size")) LONG_OPT(1, 1 << 20, o->n_batch);
    if (IS("-t") || IS("--threads")) LONG_OPT(1, 512, o->n_threads);
    if (IS("-s") || IS("--seed")) LONG_OPT(-1, 0x7fffffffL, o->seed);
    if (IS("--temp")) FLOAT_OPT(0, 100, o->gp.sampling.temp);
    if (IS("--top-k")) LONG_OPT(0, 1 << 24, o->gp.sampling.top_k);
    if (IS("--top-p")) FLOAT_OPT(0, 1, o->gp.sampling.top_p);
    if (IS("--min-p")) FLOAT_OPT(0, 1, o->gp.sampling.min_p);
    if (IS("--repeat-penalty")) FLOAT_OPT(0.01, 100, o->gp.sampling.repeat_penalty);
    if (IS("--repeat-last-n")) LONG_OPT(0, 1 << 20, o->gp.sampling.repeat_last_n);
    if (IS("--keep")) LONG_OPT(-1, 1 << 20, o->keep);
    if (IS("--draft-max")) LONG_OPT(1, 256, o->draft_max);
    if (IS("--draft-min-p")) FLOAT_OPT(0, 1, o->draft_min_p);
    if (IS("--lookup")) LONG_OPT(0, 256, o->lookup);
#undef LONG_OPT
#undef FLOAT_OPT
    if (IS("--ignore-eos")) {
        o->gp.ignore_eos = true;
        return true;
    }
    if (IS("--mmap")) {
        o->mmap = true;
        return true;
    }
    if (IS("--ggml-rounding")) {
        o->ggml_rounding = true;
        return true;
    }
    if (IS("--no-context-shift")) {
        o->gp.no_context_shift = true;
        return true;
    }
    if (IS("--draft")) {
        if (!(o->draft = cli_value(argc, argv, ip))) o->failed = true;
        return true;
    }
    if (IS("--cache-type-k") || IS("--cache-type-v")) {
        const char *v = cli_value(argc, argv, ip);
        if (!v || !cache_type(a, v, IS("--cache-type-k") ? &o->type_k : &o->type_v))
            o->failed = true;
        return true;
    }
#undef IS
    return false;
}

bool gen_stack_new(gen_stack *s, const gen_opts *o, const elm_model *m, const char *path) {
    *s = (gen_stack){0};
    elm_error err;
    elm_error_clear(&err);
    long n_ctx = o->n_ctx;
    if (n_ctx == 0) n_ctx = m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    const elm_context_params cp = {.n_ctx = (int32_t)n_ctx,
                                   .n_batch = (int32_t)(o->n_batch ? o->n_batch : n_ctx),
                                   .n_threads = (int32_t)o->n_threads,
                                   .type_k = o->type_k,
                                   .type_v = o->type_v,
                                   .ggml_rounding = o->ggml_rounding};
    if (elm_context_new(m, &cp, &s->ctx, &err)) {
        cli_fail("%s: %s", path, err.msg);
        return false;
    }
    if (!o->draft && o->lookup <= 0) return true;
    s->speculative = true;
    s->spec = (elm_spec_params){.draft_max = (int32_t)o->draft_max,
                                .draft_min_p = o->draft_min_p, .lookup = (int32_t)o->lookup};
    if (!o->draft) return true;
    if (!(s->draft_model = cli_load_model_to_run(o->draft, NULL, o->mmap))) return false;
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

uint64_t gen_opts_seed(const gen_opts *o) {
    if (o->seed >= 0) return (uint64_t)o->seed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}
