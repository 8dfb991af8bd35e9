/* edgelm synth: write a random-weight GGUF with the exact shapes of a real model (edgelm/shapes.h),
 * for speed and memory measurement at real sizes without downloads; or, with --arch A --tiny, a
 * tiny random model of family A with a real vocabulary (shapes/synth_tiny.h), as GGUF and with --hf
 * also in the family's Hugging Face layout, for comparing runtimes and loaders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/embed.h"
#include "edgelm/shapes.h"
#include "opts.h"

/* The types, then the presets one line each, for --help. */
static const char *epilog(void) {
    static char buf[4096];
    int n;
    size_t len = 0;
    const elm_synth_preset *p = elm_synth_presets(&n);
    len += (size_t)snprintf(buf, sizeof buf, "types: %s\npresets:\n", elm_type_names(true));
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "  %-19s %s: dim %d, %d layers, %d/%d heads, ffn %d, vocab %d%s\n",
                                p[i].name, p[i].source, p[i].dim, p[i].n_layers, p[i].n_heads,
                                p[i].n_kv_heads, p[i].ffn_dim, p[i].n_vocab,
                                p[i].tied ? ", tied output" : "");
    if (len > 0 && len < sizeof buf) buf[len - 1] = '\0';
    return buf;
}

static void on_progress(void *user, int32_t done, int32_t total) {
    if (*(const bool *)user) {
        fprintf(stderr, "\rwriting tensor %d/%d", done, total);
        if (done == total) fputc('\n', stderr);
    }
}

static int synth_tiny(const char *arch, const char *vocab, const char *out, const char *hf,
                      long seed, float std, long width, bool longrope, const char *pooling,
                      bool experts) {
    char vocab_path[512];
    if (!vocab) {
        snprintf(vocab_path, sizeof vocab_path, "../shared/fixtures/vocab/ggml-vocab-%s.gguf",
                 elm_synth_tiny_vocab(arch));
        vocab = vocab_path;
    }
    elm_pooling pool = ELM_POOLING_NONE;
    if (pooling && !elm_pooling_from_name(pooling, &pool))
        return cli_fail("synth: --pooling: '%s' is not mean, cls or last", pooling);
    elm_synth_tiny o = {.arch = arch, .vocab_path = vocab, .seed = (uint64_t)seed, .std = std,
                        .width = (int32_t)width, .longrope = longrope, .pooling = (int32_t)pool,
                        .experts = experts};
    int64_t n_params;
    int32_t n_vocab;
    elm_error err;
    elm_error_clear(&err);
    if (elm_synth_tiny_write(&o, out, hf, &n_params, &n_vocab, &err)) return cli_fail("%s", err.msg);
    printf("%s: tiny %s%s%s, %lld parameters, %d-token vocabulary%s%s\n", out, arch,
           longrope ? " with LongRoPE" : "", experts ? " with experts" : "", (long long)n_params,
           n_vocab, hf ? ", and " : "", hf ? hf : "");
    return 0;
}

int cmd_synth(int argc, char **argv) {
    const char *preset = NULL, *type_name = NULL, *out = NULL;
    const char *arch = NULL, *hf = NULL, *vocab = NULL, *pooling = NULL;
    bool tiny = false, longrope = false, experts = false;
    float std = 0.3f;
    long width = 0;
    long seed = 1, layers = 0;
    char arch_help[160];
    snprintf(arch_help, sizeof arch_help, "--tiny: %s", elm_arch_names());
    const cli_opt opts[] = {
        {"--preset", "NAME", CLI_TEXT, &preset, 0, 0, "one of the presets below", 0},
        {"--type", "TYPE", CLI_TEXT, &type_name, 0, 0, "one of the types below", 0},
        {"-o, --output", "OUT", CLI_TEXT, &out, 0, 0, "output GGUF file (written atomically)", 0},
        {"-s, --seed", "N", CLI_INT, &seed, 0, 0x7fffffffL, "random seed (default 1)", 0},
        {"--layers", "N", CLI_INT, &layers, 1, 1024, "the preset's first N blocks only (per-block time and memory\nof a large model in a small file)", 0},
        {"--arch", "A", CLI_TEXT, &arch, 0, 0, arch_help, 0},
        {"--tiny", NULL, CLI_FLAG, &tiny, 0, 0, "a 2-layer, 64-wide F32 model of the family (Llama in Llama 3.1's\nshape with \"llama3\" RoPE scaling, Qwen2 with biases, Phi-3 with\nfused tensors, Gemma with GeGLU), weights N(0, X²) so that greedy\ndecoding is stable, and the tokenizer of VOCAB.gguf (default: the\nfamily's, ../shared/fixtures/vocab/ggml-vocab-<llama-bpe|qwen2|phi-3|llama-spm>.gguf)", 0},
        {"--hf", "DIR", CLI_TEXT, &hf, 0, 0, "--tiny: also write the same model as a Hugging Face folder", 0},
        {"--vocab", "PATH", CLI_TEXT, &vocab, 0, 0, "--tiny: GGUF file whose tokenizer the model uses", 0},
        {"--std", "X", CLI_FLOAT, &std, 0.001, 10, "--tiny: weight standard deviation (default 0.3)", 0},
        {"--width", "N", CLI_INT, &width, 64, 1024, "--tiny: embedding width, a multiple of 64 (default 64; heads\nand FFN grow with it: 256 gives rows of whole k-quant super-blocks)", 0},
        {"--longrope", NULL, CLI_FLAG, &longrope, 0, 0, "--tiny --arch phi3: Phi-4-mini's RoPE in small: LongRoPE factors\n(long != short) for a context of 4096 extended from 512, on 12 of\neach head's 16 dimensions (edgelm runs the long ones above -c 512)", 0},
        {"--experts", NULL, CLI_FLAG, &experts, 0, 0, "--tiny --arch granitehybrid: its mixture-of-experts form (Granite-4.0-H-Tiny's):\n8 experts, 2 per token, and a shared expert", 0},
        {"--pooling", "P", CLI_TEXT, &pooling, 0, 0, "--tiny: an embedding model's pooling_type, mean, cls or last\n(gemma-embedding: mean by default; edgelm embed)", 0},
        {0}};
    const cli_spec spec = {
        "synth", "--preset NAME --type TYPE -o OUT.gguf [-s SEED] [--layers N]\n"
        "       edgelm synth --arch A --tiny -o OUT.gguf [--hf DIR] [--vocab VOCAB.gguf] [--longrope]\n"
        "                    [--pooling mean|cls|last] [--experts]",
        "Writes a model of random weights (noise, for speed and memory measurement only) with the exact\n"
        "tensor shapes, vocabulary size and tied/untied output of a real model. Every matrix, embedding\n"
        "and output too, is TYPE (as llama-quantize --pure); norms and biases are f32.",
        CLI_TABLES(opts), epilog(), NULL, NULL};
    CLI_PARSE_OR_RETURN(&spec, argc, argv);
    if (arch || tiny || longrope || pooling || experts) {
        if (!arch || !tiny || !out || preset)
            return cli_fail("synth: a tiny model needs --arch A --tiny -o OUT.gguf (no --preset)");
        return synth_tiny(arch, vocab, out, hf, seed, std, width, longrope, pooling, experts);
    }
    if (!preset || !type_name || !out)
        return cli_fail("synth: --preset, --type and -o are required (try 'edgelm synth --help')");
    const elm_synth_preset *found = elm_synth_find(preset);
    if (!found) return cli_fail("synth: unknown preset '%s' (see 'edgelm synth --help')", preset);
    elm_synth_preset shape = *found;
    if (layers > 0) shape.n_layers = (int32_t)layers;
    const elm_synth_preset *p = &shape;
    elm_type type;
    if (!elm_type_from_name(type_name, &type) || !elm_type_get(type)->from_float)
        return cli_fail("synth: unknown type '%s' (%s)", type_name, elm_type_names(true));
    bool tty = isatty(STDERR_FILENO);
    const double t0 = elm_now_ms();
    uint64_t bytes = 0;
    elm_error err;
    elm_error_clear(&err);
    if (elm_synth_write(p, type, out, (uint64_t)seed, on_progress, &tty, &bytes, &err) != ELM_OK)
        return cli_fail("%s", err.msg);
    printf("%s: %s %s, %d of %d blocks, %.2f MiB, random weights (speed and memory measurement "
           "only), %.1f s\n", out, p->name, elm_type_get(type)->name, p->n_layers, found->n_layers,
           bytes / 1048576.0, (elm_now_ms() - t0) / 1000);
    return 0;
}
