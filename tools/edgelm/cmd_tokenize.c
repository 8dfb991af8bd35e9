/* edgelm tokenize: text -> token ids with the model's tokenizer, printed the way llama-tokenize
 * does (one "id<TAB>'piece'" line per token), as a bare id list (--ids) or as JSON (--json).
 * A GGUF file is read for its tokenizer only, so vocab-only GGUF files work too. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/fileio.h"
#include "opts.h"

/* Prompt files larger than this are refused (the tokenizer's own limit is 512 MiB). */
#define TOKENIZE_MAX_FILE ((size_t)256 << 20)

typedef struct opts {
    const char *model, *prompt, *file, *tokenizer;
    bool ids_only, json, no_bos, special;
} opts;

/* Returns 0 when parsed, 1 on error (reported), -1 after --help. */
static int parse_args(int argc, char **argv, opts *o) {
    const cli_opt table[] = {
        {"-m, --model", "MODEL", CLI_TEXT, &o->model, 0, 0, "the model or tokenizer to use", 0},
        {"-p, --prompt", "TEXT", CLI_TEXT, &o->prompt, 0, 0, "the text to encode", 0},
        {"-f, --file", "FILE", CLI_TEXT, &o->file, 0, 0, "read the text from FILE instead", 0},
        {"--ids", NULL, CLI_FLAG, &o->ids_only, 0, 0, "print only the id list: [1, 403, ...]", 0},
        CLI_OPT_JSON(&o->json, "print {\"ids\": [...], \"pieces\": [...]}"),
        {"--no-bos", NULL, CLI_FLAG, &o->no_bos, 0, 0, "do not prepend the BOS token", 0},
        {"--special", NULL, CLI_FLAG, &o->special, 0, 0, "parse control tokens written in the text (\"<|im_start|>\")", 0},
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {0}};
    const cli_spec spec = {
        "tokenize", "-m MODEL (-p TEXT | -f FILE) [--ids | --json] [--no-bos] [--special] [--tokenizer PATH]",
        "Encodes TEXT with the tokenizer of MODEL (GGUF file, vocab-only GGUF, Hugging Face\n"
        "folder or llama2.c model.bin) and prints one line per token: id, TAB, 'piece'.",
        CLI_TABLES(table), NULL, NULL, NULL};
    const int r = cli_parse(&spec, argc, argv);
    if (r) return r;
    if (!o->model) return cli_fail("tokenize: no model given (-m MODEL)");
    if (!o->prompt == !o->file)
        return cli_fail("tokenize: give the text with either -p TEXT or -f FILE");
    if (o->ids_only && o->json) return cli_fail("tokenize: --ids and --json exclude each other");
    return 0;
}

static bool is_gguf(const char *path) {
    FILE *f = fopen(path, "rb");
    char magic[4];
    bool yes = f && fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (f) fclose(f);
    return yes;
}

/* How a token reads in a listing: text pieces as text ("▁" shown as a space), other tokens
 * ("<s>", "<0x0A>") by their piece, since their bytes alone may be unprintable or nothing. */
static const char *display_piece(const elm_vocab *v, int32_t id, char *buf, size_t cap) {
    int32_t t = v->types[id];
    if (t == ELM_TOKEN_NORMAL || t == ELM_TOKEN_USER_DEFINED) {
        buf[elm_token_to_bytes(v, id, buf, cap - 1)] = '\0';
        return buf;
    }
    return v->pieces[id];
}

static int print_ids(const elm_vocab *v, const int32_t *ids, int64_t n, const opts *o) {
    if (o->ids_only) {
        putchar('[');
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", ids[i]);
        puts("]");
        return 0;
    }
    size_t cap = 8;
    for (int64_t i = 0; i < n; i++)
        if (v->piece_len[ids[i]] + 1 > cap) cap = v->piece_len[ids[i]] + 1;
    char *buf = malloc(cap);
    cJSON *root = o->json ? cJSON_CreateObject() : NULL;
    cJSON *jids = root ? cJSON_AddArrayToObject(root, "ids") : NULL;
    cJSON *jpieces = root ? cJSON_AddArrayToObject(root, "pieces") : NULL;
    if (!buf || (o->json && (!jids || !jpieces))) {
        free(buf);
        cJSON_Delete(root);
        return cli_fail("tokenize: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        const char *piece = display_piece(v, ids[i], buf, cap);
        if (!o->json) printf("%d\t'%s'\n", ids[i], piece);
        else {
            cJSON_AddItemToArray(jids, cJSON_CreateNumber(ids[i]));
            cJSON_AddItemToArray(jpieces, cJSON_CreateString(piece));
        }
    }
    free(buf);
    return root ? cli_print_json_line(root, "tokenize") : 0;
}

static int tokenize_text(const elm_vocab *v, const char *text, size_t len, const opts *o) {
    elm_error err;
    bool bos = v->add_bos && !o->no_bos;
    int64_t n = elm_tokenize_special(v, text, len, bos, o->special, NULL, 0, &err);
    if (n < 0) return cli_fail("%s", err.msg);
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids) return cli_fail("tokenize: out of memory for %lld ids", (long long)n);
    elm_tokenize_special(v, text, len, bos, o->special, ids, n, &err);
    int rc = print_ids(v, ids, n, o);
    free(ids);
    return rc;
}

int cmd_tokenize(int argc, char **argv) {
    opts o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return cli_parse_exit(rc);

    elm_error err;
    char *file_text = NULL;
    size_t len = 0;
    if (o.file && elm_read_file(o.file, TOKENIZE_MAX_FILE, &file_text, &len, &err) != ELM_OK)
        return cli_fail("%s", err.msg);
    const char *text = o.file ? file_text : o.prompt;
    if (!o.file) len = strlen(o.prompt);

    if (is_gguf(o.model)) {
        elm_vocab v;
        if (elm_vocab_load(o.model, &v, &err) != ELM_OK) rc = cli_fail("%s", err.msg);
        else {
            rc = tokenize_text(&v, text, len, &o);
            elm_vocab_free(&v);
        }
    } else {
        elm_model *m = cli_load_model(o.model, o.tokenizer);
        rc = m ? tokenize_text(&m->vocab, text, len, &o) : 1;
        elm_model_free(m);
    }
    free(file_text);
    return rc;
}
