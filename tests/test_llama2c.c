/* llama2.c checkpoint loader: the stories260K model.bin with its tok512.bin found beside it or
 * named explicitly, the untied-classifier variant, and bad inputs (truncated or padded files,
 * out-of-range header fields, a text file, missing or broken tokenizers) that must fail with a
 * message naming the file. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "edgelm/model.h"
#include "tmpfiles.h"

#define MODEL "stories260K/model.bin"
#define TOKENIZER "stories260K/tok512.bin"

/* Loads path (tokenizer tok, may be NULL) expecting failure with code and both substrings in the
 * message. */
static void expect_fail(const char *what, const char *path, const char *tok, elm_status code,
                        const char *s1, const char *s2) {
    elm_model *m = NULL;
    elm_error err = {0};
    elm_load_opts opts = {.tokenizer_path = tok};
    elm_status st = elm_model_load(path, &opts, &m, &err);
    CHECK(st == code, "%s: status %d, expected %d (%s)", what, st, code, err.msg);
    CHECK(m == NULL, "%s: model returned on failure", what);
    CHECK(strstr(err.msg, s1) && strstr(err.msg, s2), "%s: message '%s' lacks '%s' / '%s'", what,
          err.msg, s1, s2);
    elm_model_free(m);
}

static void test_good(void) {
    elm_model *m = NULL;
    elm_error err = {0};
    elm_status st = elm_model_load(fixture(MODEL), NULL, &m, &err);
    CHECK(st == ELM_OK, "load with tokenizer found beside: %s", err.msg);
    if (st) return;
    const elm_hparams *hp = &m->hp;
    CHECK(strcmp(m->format, "llama2c") == 0 && strcmp(hp->arch, "llama") == 0, "format %s arch %s",
          m->format, hp->arch);
    CHECK(hp->dim == 64 && hp->n_layers == 5 && hp->n_heads == 8 && hp->n_kv_heads == 4 &&
              hp->ffn_dim == 172 && hp->n_vocab == 512 && hp->n_ctx_train == 512 &&
              hp->head_dim == 8,
          "hparams dim %d layers %d heads %d/%d ffn %d vocab %d ctx %d", hp->dim, hp->n_layers,
          hp->n_heads, hp->n_kv_heads, hp->ffn_dim, hp->n_vocab, hp->n_ctx_train);
    CHECK(hp->rms_eps == 1e-5f && hp->rope_theta == 10000.0f, "eps %g theta %g", hp->rms_eps,
          hp->rope_theta);
    CHECK(hp->tied_output && m->output == m->tok_embd, "output not tied to the embedding");
    CHECK(m->n_tensors == 2 + 9 * 5, "%d tensors", m->n_tensors);

    /* Tensors point into the file in its array order: embedding right after the header, the first
     * layer's wk after the embedding, rms_att and all wq. */
    size_t len;
    unsigned char *file = file_read(fixture(MODEL), &len);
    CHECK(file && len == 1056540, "fixture size %zu", len);
    const elm_tensor *wk0 = elm_model_find(m, "blk.0.attn_k.weight");
    const elm_tensor *down = elm_model_find(m, "blk.4.ffn_down.weight");
    size_t wk0_off = 28 + 4 * (512 * 64 + 5 * 64 + 5 * 64 * 64);
    if (file && wk0 && down) {
        CHECK(memcmp(m->tok_embd->data, file + 28, 512 * 64 * 4) == 0, "token_embd bytes");
        CHECK(wk0->ne[0] == 64 && wk0->ne[1] == 32 &&
                  memcmp(wk0->data, file + wk0_off, 32 * 64 * 4) == 0,
              "attn_k ne {%lld, %lld} or bytes differ", (long long)wk0->ne[0],
              (long long)wk0->ne[1]);
        CHECK(down->ne[0] == 172 && down->ne[1] == 64, "ffn_down ne {%lld, %lld}",
              (long long)down->ne[0], (long long)down->ne[1]);
    }
    free(file);

    const elm_vocab *v = &m->vocab;
    CHECK(v->n_tokens == 512 && v->scores && !v->merges, "vocab %d tokens", v->n_tokens);
    if (v->n_tokens == 512) {
        CHECK(strcmp(v->pieces[0], "<unk>") == 0 && v->types[0] == ELM_TOKEN_UNKNOWN,
              "id 0 '%s' %d", v->pieces[0], v->types[0]);
        CHECK(strcmp(v->pieces[1], "<s>") == 0 && strcmp(v->pieces[2], "</s>") == 0 &&
                  v->types[1] == ELM_TOKEN_CONTROL && v->types[2] == ELM_TOKEN_CONTROL,
              "ids 1/2 '%s' '%s'", v->pieces[1], v->pieces[2]);
        CHECK(strcmp(v->pieces[3], "<0x00>") == 0 && v->types[3] == ELM_TOKEN_BYTE &&
                  strcmp(v->pieces[258], "<0xFF>") == 0 && v->types[258] == ELM_TOKEN_BYTE,
              "byte pieces '%s' '%s'", v->pieces[3], v->pieces[258]);
        CHECK(strcmp(v->pieces[259], "\xe2\x96\x81t") == 0 && v->types[259] == ELM_TOKEN_NORMAL,
              "space not converted to U+2581: '%s'", v->pieces[259]);
        CHECK(v->scores[259] > v->scores[400], "scores %g %g", v->scores[259], v->scores[400]);
    }
    CHECK(v->bos_id == 1 && v->eos_id == 2 && v->unk_id == 0 && v->add_bos &&
              v->add_space_prefix && v->byte_fallback && strcmp(v->model, "llama") == 0,
          "vocab flags bos %d eos %d unk %d", v->bos_id, v->eos_id, v->unk_id);
    elm_model_free(m);
}

/* A copy of model.bin alone in dir: the tokenizer must be given explicitly. */
static void test_tokenizer_lookup(char *dir) {
    const char *model = tmp_path(dir, "model.bin");
    CHECK(file_copy(fixture(MODEL), model, SIZE_MAX, 0), "copy");
    expect_fail("no tokenizer beside", model, NULL, ELM_ERR_IO, model, "tok*.bin");

    elm_model *m = NULL;
    elm_error err = {0};
    elm_load_opts opts = {.tokenizer_path = fixture(TOKENIZER)};
    CHECK(elm_model_load(model, &opts, &m, &err) == ELM_OK, "explicit tokenizer: %s", err.msg);
    CHECK(m && m->vocab.n_tokens == 512, "explicit tokenizer vocab");
    elm_model_free(m);

    expect_fail("explicit tokenizer missing", model, tmp_path(dir, "nope.bin"), ELM_ERR_IO,
                "nope.bin", "No such file");

    CHECK(file_copy(fixture(TOKENIZER), tmp_path(dir, "tok512.bin"), SIZE_MAX, 0), "copy");
    CHECK(file_copy(fixture(TOKENIZER), tmp_path(dir, "tok999.bin"), SIZE_MAX, 0), "copy");
    expect_fail("two tok*.bin", model, NULL, ELM_ERR_IO, model, "several");
    unlink(tmp_path(dir, "tok999.bin"));

    /* tokenizer.bin wins over tok*.bin; this one is cut inside its last token. */
    CHECK(file_copy(fixture(TOKENIZER), tmp_path(dir, "tokenizer.bin"), 6227 - 2, 0), "copy");
    expect_fail("token past EOF", model, NULL, ELM_ERR_FORMAT, "tokenizer.bin", "past the end");

    /* Token 0's length field made larger than max_token_length, then negative. */
    size_t len;
    unsigned char *tok = file_read(fixture(TOKENIZER), &len);
    const char *bad = tmp_path(dir, "tokenizer.bin");
    int32_t lens[] = {8, -1};
    for (int i = 0; tok && i < 2; i++) {
        memcpy(tok + 8, &lens[i], 4);
        CHECK(file_write(bad, tok, len), "write");
        expect_fail("bad token length", model, NULL, ELM_ERR_FORMAT, "tokenizer.bin",
                    "max_token_length");
    }
    free(tok);
    CHECK(file_copy(fixture(TOKENIZER), bad, SIZE_MAX, 3), "copy");
    expect_fail("tokenizer trailing bytes", model, NULL, ELM_ERR_FORMAT, "tokenizer.bin",
              "left after");
    unlink(bad);
    unlink(tmp_path(dir, "tok512.bin"));
    unlink(model);
}

/* Checkpoints that do not match their header, or whose header is impossible. */
static void test_bad_checkpoints(char *dir) {
    const char *model = tmp_path(dir, "model.bin");
    CHECK(file_copy(fixture(TOKENIZER), tmp_path(dir, "tokenizer.bin"), SIZE_MAX, 0), "copy");

    CHECK(file_copy(fixture(MODEL), model, 1056540 - 4, 0), "copy");
    expect_fail("truncated", model, NULL, ELM_ERR_FORMAT, model, "needs 1056540 bytes");
    CHECK(file_copy(fixture(MODEL), model, SIZE_MAX, 4), "copy");
    expect_fail("too long", model, NULL, ELM_ERR_FORMAT, model, "the file has 1056544");
    CHECK(file_copy(fixture(MODEL), model, 20, 0), "copy");
    expect_fail("shorter than a header", model, NULL, ELM_ERR_FORMAT, model, "not a llama2.c");

    size_t len;
    unsigned char *orig = file_read(fixture(MODEL), &len);
    struct { int field; int32_t value; const char *name; } cases[] = {
        {0, 0, "dim = 0"}, {2, -5, "n_layers = -5"}, {3, 0, "n_heads = 0"},
        {4, 3, "KV heads"}, {6, -1, "seq_len = -1"}, {5, INT32_MIN, "vocab_size"}};
    for (size_t i = 0; orig && i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char *b = malloc(len);
        memcpy(b, orig, len);
        memcpy(b + 4 * cases[i].field, &cases[i].value, 4);
        CHECK(file_write(model, b, len), "write");
        expect_fail(cases[i].name, model, NULL, ELM_ERR_FORMAT,
                    "not a GGUF file and not a llama2.c", cases[i].name);
        free(b);
    }

    /* A negative vocab_size says a classifier follows: the same file without one is short, and
     * with the embedding appended as wcls it loads untied. */
    if (orig) {
        unsigned char *b = malloc(len + 512 * 64 * 4);
        memcpy(b, orig, len);
        int32_t neg = -512;
        memcpy(b + 20, &neg, 4);
        CHECK(file_write(model, b, len), "write");
        expect_fail("untied without wcls", model, NULL, ELM_ERR_FORMAT, model, "needs 1187612");
        memcpy(b + len, orig + 28, 512 * 64 * 4);
        CHECK(file_write(model, b, len + 512 * 64 * 4), "write");
        elm_model *m = NULL;
        elm_error err = {0};
        CHECK(elm_model_load(model, NULL, &m, &err) == ELM_OK, "untied: %s", err.msg);
        if (m) {
            CHECK(!m->hp.tied_output && m->output != m->tok_embd && m->output &&
                      memcmp(m->output->data, m->tok_embd->data, 512 * 64 * 4) == 0,
                  "untied classifier not bound");
            elm_model_free(m);
        }
        free(b);
    }
    free(orig);

    const char *text = "Once upon a time, there was a little girl named Lily.\n";
    CHECK(file_write(model, text, strlen(text)), "write");
    expect_fail("text file", model, NULL, ELM_ERR_FORMAT, model,
                "not a GGUF file and not a llama2.c checkpoint (");
    CHECK(file_write(model, "", 0), "write");
    expect_fail("empty file", model, NULL, ELM_ERR_FORMAT, model, "not a GGUF file");
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    test_good();
    char *dir = tmp_dir_new();
    CHECK(dir != NULL, "mkdtemp");
    if (dir) {
        test_tokenizer_lookup(dir);
        test_bad_checkpoints(dir);
    }
    tmp_dir_remove(dir);
    return check_done();
}
