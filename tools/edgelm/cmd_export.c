/* edgelm export onnx: a model as an ONNX Runtime / onnxruntime-genai folder. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "edgelm/export.h"
#include "opts.h"

static const char export_about[] =
    "Writes DIR for ONNX Runtime and onnxruntime-genai: model.onnx, a decoder with a KV\n"
    "cache (inputs input_ids, attention_mask, position_ids, past_key_values.N.key/.value;\n"
    "outputs logits, present.N.key/.value), its weights in model.onnx.data,\n"
    "genai_config.json, tokenizer.json and tokenizer_config.json. Weights keep their\n"
    "quantization: q4_0/q4_1/q8_0 become com.microsoft.MatMulNBits (4 or 8 bits, blocks\n"
    "of 32) with the values edgelm dequantizes, f32/f16 MatMul; other types are\n"
    "re-quantized to 8 bits with a warning. The folder appears only when complete.";

enum { CALIB_SEQ_LEN = 512 };

/* --activations a16|a8: the activation codes' width in bits */
static bool parse_activations(const char *opt, const char *value, void *dst) {
    if (!strcmp(value, "a16") || !strcmp(value, "a8")) {
        *(int32_t *)dst = value[1] == '1' ? 16 : 8;
        return true;
    }
    cli_fail("export onnx: %s: expected a16 or a8, got '%s'", opt, value);
    return false;
}

static void on_warn(const char *msg, void *user) {
    (void)user;
    fprintf(stderr, "edgelm: warning: %s\n", msg);
}

int cmd_export(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *tokenizer = NULL, *format = "onnx", *shapes = NULL;
    const char *calib_path = NULL;
    long accuracy = -1;
    elm_onnx_opts o = {.warn = on_warn};
    const cli_opt table[] = {
        CLI_OPT_MODEL(&model),
        {"-o, --output", "DIR", CLI_TEXT, &out, 0, 0, "output folder (created; must be empty unless --force)", 0},
        {"--force", NULL, CLI_FLAG, &o.force, 0, 0, "replace a non-empty DIR", 0},
        {"--format", "F", CLI_TEXT, &format, 0, 0, "onnx (the default: MatMulNBits, dynamic shapes) or qdq: the\nQNN execution provider's form, int4/int8 DequantizeLinear\n(opset 21) + MatMul in two static graphs, prompt_processor.onnx\nand token_generator.onnx, sharing model.onnx.data", 0},
        {"--static", "P,C", CLI_TEXT, &shapes, 0, 0, "qdq: prompt graph of P tokens, KV cache of C positions", 0},
        {"--accuracy-level", "N", CLI_INT, &accuracy, 0, 4, "MatMulNBits' accuracy_level: 0 (default) multiplies the\ndequantized weights in float; 4 rounds activations to int8\nblocks of 32 (faster on CPU, as edgelm's block products)", 0},
        {"--activations", "A", CLI_CALL, &o.act_bits, 0, 0, "qdq: a16 or a8, QuantizeLinear/DequantizeLinear (uint16 or\nuint8, per tensor) on every linear layer's input, ranges\nmeasured on --calib", parse_activations},
        {"--calib", "FILE", CLI_TEXT, &calib_path, 0, 0, "calibration text for --activations: JSONL from 'edgelm calib'\nor plain text, one sample per line (each cut to 512 tokens,\nor C when smaller)", 0},
        {"-t, --threads", "N", CLI_I32, &o.n_threads, 1, 512, "threads for the calibration pass (default: all cores)", 0},
        CLI_OPT_TOKENIZER(&tokenizer),
        {0}};
    const cli_spec spec = {"export onnx", "-m MODEL -o DIR [options]", export_about,
                           CLI_TABLES(table), NULL, NULL, NULL};
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        cli_help(&spec, argc < 2 ? stderr : stdout);
        return argc < 2;
    }
    if (strcmp(argv[1], "onnx"))
        return cli_fail("export: unknown format '%s' (only 'onnx'; see edgelm export --help)", argv[1]);
    CLI_PARSE_OR_RETURN(&spec, argc - 1, argv + 1);
    if (!model || !out) return cli_fail("export onnx: -m MODEL and -o DIR are required");
    if (strcmp(format, "onnx") && strcmp(format, "qdq"))
        return cli_fail("export onnx: --format: unknown format '%s' (onnx or qdq)", format);
    o.qdq = !strcmp(format, "qdq");
    if (o.qdq != !!shapes)
        return cli_fail("export onnx: %s", o.qdq ? "--format qdq needs --static PROMPT_LEN,CTX"
                                                 : "--static goes with --format qdq");
    if (shapes) {
        long p, c;
        char a[32], b[32];
        const char *comma = strchr(shapes, ',');
        if (!comma || comma - shapes >= (long)sizeof a || strlen(comma + 1) >= sizeof b)
            return cli_fail("export onnx: --static: expected PROMPT_LEN,CTX, got '%s'", shapes);
        memcpy(a, shapes, (size_t)(comma - shapes));
        a[comma - shapes] = '\0';
        strcpy(b, comma + 1);
        if (!cli_parse_long(a, 1, 1 << 20, &p) || !cli_parse_long(b, 2, 1 << 20, &c) || p >= c)
            return cli_fail("export onnx: --static: expected PROMPT_LEN,CTX with 0 < PROMPT_LEN < CTX, got '%s'", shapes);
        o.static_prompt = (int32_t)p;
        o.static_ctx = (int32_t)c;
    }
    if (accuracy >= 0 && o.qdq)
        return cli_fail("export onnx: --accuracy-level goes with --format onnx (qdq has no MatMulNBits)");
    if (accuracy > 0 && accuracy != 4)
        return cli_fail("export onnx: --accuracy-level: expected 0 or 4, got %ld", accuracy);
    o.accuracy_level = accuracy > 0 ? (int32_t)accuracy : 0;
    if (o.act_bits && !o.qdq) return cli_fail("export onnx: --activations goes with --format qdq");
    if (o.act_bits && !calib_path)
        return cli_fail("export onnx: --activations needs --calib FILE (calibration text, as quantize takes)");
    if (calib_path && !o.act_bits) return cli_fail("export onnx: --calib goes with --activations");
    elm_model *m = cli_load_model(model, tokenizer);
    if (!m) return 1;
    elm_error err;
    elm_error_clear(&err);
    elm_calib_set calib = {0};
    if (calib_path) {
        /* quantize's sample length, or the graphs' context when that is shorter */
        const int32_t seq_len = o.static_ctx < CALIB_SEQ_LEN ? o.static_ctx : CALIB_SEQ_LEN;
        if (elm_calib_load(&m->vocab, calib_path, seq_len, 0, &calib, &err)) {
            elm_calib_free(&calib);
            elm_model_free(m);
            return cli_fail("%s", err.msg);
        }
        o.calib = &calib;
        fprintf(stderr, "edgelm: activation ranges from %d samples, %lld tokens of %s\n", calib.n,
                (long long)calib.n_tokens, calib_path);
    }
    const double t0 = elm_now_ms();
    const elm_status st = elm_export_onnx(m, out, &o, &err);
    elm_calib_free(&calib);
    elm_model_free(m);
    if (st) return cli_fail("%s", err.msg);
    fprintf(stderr, "exported %s to %s in %.0f ms\n", model, out, elm_now_ms() - t0);
    return 0;
}
