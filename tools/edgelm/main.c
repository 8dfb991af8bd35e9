/* edgelm: one binary, one subcommand per job. Each subcommand lives in cmd_<name>.c. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    cli_command_fn fn;
    const char *help;
} commands[] = {
    {"inspect", cmd_inspect, "print architecture, hyper-parameters and the tensor table"},
    {"tokenize", cmd_tokenize, "turn text into token ids"},
    {"embed", cmd_embed, "the embedding of a text: pooled hidden states, unit length"},
    {"index", cmd_index, "index text and Markdown files for search: chunks, BM25, embeddings"},
    {"search", cmd_search, "the chunks of an index that best answer a question (BM25, cosine)"},
    {"run", cmd_run, "generate text from a prompt (streaming), with stats"},
    {"chat", cmd_chat, "multi-turn chat with the conversation kept in the KV cache"},
    {"quantize", cmd_quantize, "write a GGUF quantized by round-to-nearest, GPTQ or AWQ"},
    {"imatrix", cmd_imatrix, "compute an importance matrix (llama.cpp's imatrix GGUF) on a text"},
    {"calib", cmd_calib, "build a calibration set (JSONL) for GPTQ/AWQ from text sources"},
    {"perplexity", cmd_perplexity, "score a text file the way llama-perplexity does"},
    {"eval", cmd_eval, "compare quantized models with their baseline: KLD, top-1, similarity"},
    {"synth", cmd_synth, "write a random-weight model of a real model's shapes (for speed tests)"},
    {"bench", cmd_bench, "measure prefill/decode speed and memory bandwidth"},
    {"export", cmd_export, "write the model for another runtime: ONNX (ONNX Runtime, genai)"},
    {"plan", cmd_plan, "will it fit and how fast can it go: memory and speed bound per type"},
    {"serve", cmd_serve, "OpenAI-compatible HTTP server and chat page, several conversations at once"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: edgelm <command> [options]   (edgelm help <command> for details; --version)\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nMODEL is a GGUF file, a Hugging Face folder (config.json + safetensors) or a "
               "llama2.c model.bin.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("edgelm %s\n", EDGELM_VERSION);
        return 0;
    }
    const bool help = !strcmp(argv[1], "help");
    char *as_help[] = {argv[0], argc > 2 ? argv[2] : NULL, "--help", NULL};
    if (help && argc > 2) { /* edgelm help COMMAND: as edgelm COMMAND --help */
        argc = 3;
        argv = as_help;
    } else if (help || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    cli_fail("unknown command '%s' (try 'edgelm --help')", argv[1]);
    return 1;
}
