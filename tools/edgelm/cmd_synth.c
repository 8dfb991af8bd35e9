/* edgelm synth: write a random-weight GGUF with the exact shapes of a real model (model/synth.h),
 * for speed and memory measurement at real sizes without downloads; or, with --arch A --tiny, a
 * tiny random model of family A with a real vocabulary (model/synth_tiny.h), as GGUF and with --hf
 * also in the family's Hugging Face layout, for comparing runtimes and loaders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "formats/gguf_write.h"
#include "formats/hf_write.h"
#include "model/synth.h"
#include "model/synth_tiny.h"

static void usage(FILE *f) {
    int n;
    const elm_synth_preset *p = elm_synth_presets(&n);
    fprintf(f,
            "usage: edgelm synth --preset NAME --type TYPE -o OUT.gguf [-s SEED]\n"
            "       edgelm synth --arch llama|qwen2|qwen3|phi3|gemma|smollm3 --tiny -o OUT.gguf [--hf DIR]\n"
            "                    [--vocab VOCAB.gguf] [-s SEED] [--std X]\n\n"
            "Writes a model with random weights and placeholder token strings but the exact\n"
            "tensor shapes, vocabulary size and tied/untied output of a real model.\n"
            "For speed and memory measurement only: the weights are noise, its text meaningless.\n"
            "Every matrix (embedding and output too, like llama-quantize --pure) is TYPE; norms\n"
            "and biases are f32. llama.cpp runs the same file (bench/side_by_side.py).\n\n"
            "  --preset NAME   one of:\n");
    for (int i = 0; i < n; i++)
        fprintf(f,
                "                    %-15s %s: dim %d, %d layers, %d/%d heads, ffn %d, vocab %d%s\n",
                p[i].name, p[i].source, p[i].dim, p[i].n_layers, p[i].n_heads, p[i].n_kv_heads,
                p[i].ffn_dim, p[i].n_vocab, p[i].tied ? ", tied output" : "");
    fprintf(f,
            "  --type TYPE     q8_0, q4_0, q4_1, q5_0, q5_1, f16, bf16 or f32\n"
            "  -o, --output    output GGUF file (written atomically)\n"
            "  -s, --seed N    random seed (default 1)\n"
            "  -h, --help      this help\n\n"
            "--tiny: a 2-layer, 64-wide F32 model of the family (Llama in Llama 3.1's shape with\n"
            "\"llama3\" RoPE scaling, Qwen2 with biases, Phi-3 with fused tensors, Gemma with GeGLU),\n"
            "weights N(0, X²) so that greedy decoding is stable, and the tokenizer of VOCAB.gguf\n"
            "(default ../shared/fixtures/vocab/ggml-vocab-<llama-bpe|qwen2|phi-3|llama-spm>.gguf).\n"
            "  --arch A        llama, qwen2, qwen3, phi3, gemma or smollm3\n"
            "  --hf DIR        also write the same model as a Hugging Face folder\n"
            "  --vocab PATH    GGUF file whose tokenizer the model uses\n"
            "  --std X         weight standard deviation (default 0.3)\n");
}

static void on_progress(void *user, int32_t done, int32_t total) {
    if (*(const bool *)user) {
        fprintf(stderr, "\rwriting tensor %d/%d", done, total);
        if (done == total) fputc('\n', stderr);
    }
}

/* The fixture vocabulary each family is usually tested with. */
static const char *default_vocab(const char *arch) {
    static const struct { const char *arch, *vocab; } v[] = {
        {"llama", "llama-bpe"}, {"qwen2", "qwen2"}, {"phi3", "phi-3"}, {"gemma", "llama-spm"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!strcmp(arch, v[i].arch)) return v[i].vocab;
    return "llama-spm";
}

static int synth_tiny(const char *arch, const char *vocab, const char *out, const char *hf,
                      long seed, float std) {
    char vocab_path[512];
    if (!vocab) {
        snprintf(vocab_path, sizeof vocab_path, "../shared/fixtures/vocab/ggml-vocab-%s.gguf",
                 default_vocab(arch));
        vocab = vocab_path;
    }
    elm_synth_tiny o = {.arch = arch, .vocab_path = vocab, .seed = (uint64_t)seed, .std = std};
    elm_model *m = NULL;
    float llama3[4];
    elm_error err;
    elm_error_clear(&err);
    elm_status st = elm_synth_tiny_model(&o, &m, llama3, &err);
    if (!st) st = elm_gguf_write_model(m, out, &err);
    if (!st && hf) st = elm_hf_write(m, llama3, hf, &err);
    if (!st)
        printf("%s: tiny %s, %lld parameters, %d-token vocabulary%s%s\n", out, arch,
               (long long)elm_model_params(m), m->hp.n_vocab, hf ? ", and " : "", hf ? hf : "");
    elm_model_free(m);
    return st ? cli_fail("%s", err.msg) : 0;
}

int cmd_synth(int argc, char **argv) {
    const char *preset = NULL, *type_name = NULL, *out = NULL;
    const char *arch = NULL, *hf = NULL, *vocab = NULL;
    bool tiny = false;
    float std = 0.3f;
    long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--preset")) CLI_STR(preset);
        else if (!strcmp(a, "--type")) CLI_STR(type_name);
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) CLI_STR(out);
        else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) CLI_LONG(0, 0x7fffffffL, seed);
        else if (!strcmp(a, "--arch")) CLI_STR(arch);
        else if (!strcmp(a, "--tiny")) tiny = true;
        else if (!strcmp(a, "--hf")) CLI_STR(hf);
        else if (!strcmp(a, "--vocab")) CLI_STR(vocab);
        else if (!strcmp(a, "--std")) CLI_FLOAT(0.001, 10, std);
        else return cli_fail("synth: unknown option '%s' (try 'edgelm synth --help')", a);
    }
    if (arch || tiny) {
        if (!arch || !tiny || !out || preset)
            return cli_fail("synth: a tiny model needs --arch A --tiny -o OUT.gguf (no --preset)");
        return synth_tiny(arch, vocab, out, hf, seed, std);
    }
    if (!preset || !type_name || !out)
        return cli_fail("synth: --preset, --type and -o are required (try 'edgelm synth --help')");
    const elm_synth_preset *p = elm_synth_find(preset);
    if (!p) return cli_fail("synth: unknown preset '%s' (see 'edgelm synth --help')", preset);
    elm_type type;
    if (!elm_type_from_name(type_name, &type))
        return cli_fail("synth: unknown type '%s' (q8_0, q4_0, q4_1, q5_0, q5_1, f16, bf16, f32)",
                        type_name);
    bool tty = isatty(STDERR_FILENO);
    const double t0 = cli_now_ms();
    uint64_t bytes = 0;
    elm_error err;
    elm_error_clear(&err);
    if (elm_synth_write(p, type, out, (uint64_t)seed, on_progress, &tty, &bytes, &err) != ELM_OK)
        return cli_fail("%s", err.msg);
    printf("%s: %s %s, %.2f MiB, random weights (speed and memory measurement only), %.1f s\n", out,
           p->name, elm_type_get(type)->name, bytes / 1048576.0, (cli_now_ms() - t0) / 1000);
    return 0;
}
