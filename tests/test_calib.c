/* The inputs a quantization run is planned from: calibration text (quant_calib.h: plain text by
 * line and paragraph, JSONL "text", Alpaca and template rendering, errors naming PATH:LINE), the
 * seeded weighted mix `edgelm calib` writes (determinism, quotas, truncation, JSONL round trip),
 * the token sequences quantize loads (empty and missing files), and the mixed-precision policy
 * (quant.h, elm_quant_plan: defaults, --pure, --keep-sensitive, overrides, the F16 fallback). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/quant.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tmpfiles.h"
#pragma GCC diagnostic pop

static char *dir;

static const char *write_tmp(const char *name, const char *text) {
    const char *p = tmp_path(dir, name);
    CHECK(file_write(p, text, strlen(text)), "write %s", p);
    return p;
}

static void test_text_sets(void) {
    elm_text_set txt, js, s;
    elm_error err;
    CHECK(elm_text_set_read(fixture("stories260K/text/calib.txt"), ELM_CALIB_SPLIT_LINE, NULL, &txt,
                            &err) == ELM_OK && txt.n == 256, "calib.txt: %d samples %s", txt.n, err.msg);
    CHECK(elm_text_set_read(fixture("stories260K/text/calib.jsonl"), ELM_CALIB_SPLIT_LINE, NULL, &js,
                            &err) == ELM_OK && js.n == 256, "calib.jsonl: %d samples %s", js.n, err.msg);
    int same = 0;
    for (int32_t i = 0; i < txt.n && i < js.n; i++) {
        for (char *c = js.texts[i]; *c; c++) *c = *c == '\n' ? ' ' : *c;
        same += !strcmp(js.texts[i], txt.texts[i]);
    }
    CHECK(same == 256, "%d of 256 JSONL texts equal the text file's lines", same);
    elm_text_set_free(&txt);
    elm_text_set_free(&js);

    const char *plain = write_tmp("plain.txt", "a\nb\n\n  \nc  \n\n\n d\n");
    CHECK(elm_text_set_read(plain, ELM_CALIB_SPLIT_PARAGRAPH, NULL, &s, &err) == ELM_OK &&
              s.n == 3 && !strcmp(s.texts[0], "a\nb") && !strcmp(s.texts[1], "c") &&
              !strcmp(s.texts[2], "d"), "paragraphs: %d", s.n);
    elm_text_set_free(&s);
    CHECK(elm_text_set_read(plain, ELM_CALIB_SPLIT_LINE, NULL, &s, &err) == ELM_OK && s.n == 4 &&
              !strcmp(s.texts[3], "d"), "lines: %d", s.n);
    elm_text_set_free(&s);

    const char *alpaca = write_tmp("alpaca.jsonl",
        "{\"instruction\": \"Say hi.\", \"input\": \"\", \"output\": \"Hi!\"}\n\n"
        "{\"instruction\": \"Add.\", \"input\": \"2 and 3\", \"output\": \"5\"}\n");
    CHECK(elm_text_set_read(alpaca, ELM_CALIB_SPLIT_LINE, NULL, &s, &err) == ELM_OK && s.n == 2,
          "alpaca: %s", err.msg);
    if (s.n == 2) {
        CHECK(!strcmp(s.texts[0], "Below is an instruction that describes a task. Write a response "
                      "that appropriately completes the request.\n\n### Instruction:\nSay hi.\n\n"
                      "### Response:\nHi!"), "alpaca without input: '%s'", s.texts[0]);
        CHECK(!strcmp(s.texts[1], "Below is an instruction that describes a task, paired with an "
                      "input that provides further context. Write a response that appropriately "
                      "completes the request.\n\n### Instruction:\nAdd.\n\n### Input:\n2 and 3\n\n"
                      "### Response:\n5"), "alpaca with input: '%s'", s.texts[1]);
    }
    elm_text_set_free(&s);

    const char *qa = write_tmp("qa.jsonl", "{\"q\": \"2+2\", \"a\": 4}\n{\"q\": \"x\"}\n");
    CHECK(elm_text_set_read(qa, ELM_CALIB_SPLIT_LINE, "Q: {q}\nA: {a} {not a field}", &s, &err) ==
              ELM_ERR_FORMAT && strstr(err.msg, "qa.jsonl:2") && strstr(err.msg, "'a'"),
          "missing template field: %s", err.msg);
    CHECK(s.n == 1 && !strcmp(s.texts[0], "Q: 2+2\nA: 4 {not a field}"), "template: %d '%s'", s.n,
          s.n ? s.texts[0] : "");
    elm_text_set_free(&s);

    const struct { const char *name, *text, *want; } bad[] = {
        {"badjson.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": oops}\n", "badjson.jsonl:3: invalid JSON"},
        {"array.jsonl", "{\"text\": \"a\"}\n[1, 2]\n", "array.jsonl:2: not a JSON object"},
        {"nofield.jsonl", "{\"title\": \"a\"}\n", "nofield.jsonl:1: no string field 'text'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        elm_status st = elm_text_set_read(write_tmp(bad[i].name, bad[i].text), ELM_CALIB_SPLIT_LINE,
                                          NULL, &s, &err);
        CHECK(st == ELM_ERR_FORMAT && strstr(err.msg, bad[i].want), "%s: %d '%s'", bad[i].name, st,
              err.msg);
        elm_text_set_free(&s);
    }
    const char *model = fixture("stories260K/stories260K-f32.gguf");
    CHECK(elm_text_set_read(model, ELM_CALIB_SPLIT_LINE, NULL, &s, &err) == ELM_ERR_FORMAT &&
              strstr(err.msg, model) && strstr(err.msg, "not text (a NUL byte at offset 5)"),
          "binary file: %s", err.msg);
    elm_text_set_free(&s);
    const char *missing = tmp_path(dir, "missing.txt");
    CHECK(elm_text_set_read(missing, ELM_CALIB_SPLIT_LINE, NULL, &s, &err) == ELM_ERR_IO &&
              strstr(err.msg, missing), "missing file: %s", err.msg);
    elm_text_set_free(&s);
}

static bool same_samples(const elm_calib_built *a, const elm_calib_built *b) {
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++)
        if (strcmp(a->samples[i].text, b->samples[i].text) || a->samples[i].source != b->samples[i].source)
            return false;
    return true;
}

static void test_build(const elm_model *m) {
    const elm_vocab *v = &m->vocab;
    elm_calib_source one = {fixture("stories260K/text/calib.txt"), 1};
    elm_calib_build_params p = {.n_samples = 32, .seq_len = 64, .min_tokens = 16, .seed = 1};
    elm_calib_built a, b;
    elm_error err;
    CHECK(elm_calib_build(v, &one, 1, &p, &a, &err) == ELM_OK && a.n == 32 && a.read[0] == 256 &&
              a.eligible[0] == 256 && a.selected[0] == 32, "build: %d samples %s", a.n, err.msg);
    int over = 0, recount_bad = 0;
    for (int32_t i = 0; i < a.n; i++) {
        over += a.samples[i].n_tokens > 64 || a.samples[i].n_tokens < 16;
        int32_t ids[600];
        int64_t n = elm_tokenize(v, a.samples[i].text, strlen(a.samples[i].text), true, ids, 600, &err);
        recount_bad += (n < 64 ? n : 64) != a.samples[i].n_tokens || n > 66;
    }
    CHECK(over == 0 && recount_bad == 0, "%d samples outside [16, 64] tokens, %d miscounted", over,
          recount_bad);
    CHECK(elm_calib_build(v, &one, 1, &p, &b, &err) == ELM_OK && same_samples(&a, &b),
          "same seed, different samples");
    elm_calib_built_free(&b);
    p.seed = 2;
    CHECK(elm_calib_build(v, &one, 1, &p, &b, &err) == ELM_OK && !same_samples(&a, &b),
          "another seed, same samples");
    elm_calib_built_free(&b);

    /* JSONL round trip, and what quantize reads from it */
    const char *out = tmp_path(dir, "calib.jsonl");
    CHECK(elm_calib_write_jsonl(&a, &one, out, &err) == ELM_OK, "write: %s", err.msg);
    elm_text_set s;
    CHECK(elm_text_set_read(out, ELM_CALIB_SPLIT_LINE, NULL, &s, &err) == ELM_OK && s.n == a.n,
          "read back: %d %s", s.n, err.msg);
    int differ = 0;
    for (int32_t i = 0; i < s.n && i < a.n; i++) differ += strcmp(s.texts[i], a.samples[i].text) != 0;
    CHECK(differ == 0, "%d texts differ after the round trip", differ);
    elm_text_set_free(&s);
    elm_calib_set cs;
    CHECK(elm_calib_load(v, out, 64, 0, &cs, &err) == ELM_OK && cs.n == 32, "load: %s", err.msg);
    elm_calib_free(&cs);
    elm_calib_built_free(&a);

    /* weights: 3:1 of 40; a small source gives what it has and the other makes up the rest */
    elm_calib_source mix[] = {{fixture("stories260K/text/calib.txt"), 3},
                              {fixture("stories260K/text/calib.jsonl"), 1}};
    p.n_samples = 40;
    CHECK(elm_calib_build(v, mix, 2, &p, &a, &err) == ELM_OK && a.n == 40 && a.selected[0] == 30 &&
              a.selected[1] == 10, "3:1 mix: %d + %d", a.selected[0], a.selected[1]);
    int from1 = 0;
    for (int32_t i = 0; i < a.n; i++) from1 += a.samples[i].source == 1;
    CHECK(from1 == 10, "%d samples tagged with source 1", from1);
    elm_calib_built_free(&a);
    elm_calib_source small[] = {
        {write_tmp("two.txt", "Once upon a time there was a cat who liked to sit in the sun all day.\n"
                              "Tom had a red ball and he played with it in the big green park.\nhi\n"), 10},
        {fixture("stories260K/text/calib.txt"), 1}};
    p.n_samples = 20;
    p.min_tokens = 8;
    CHECK(elm_calib_build(v, small, 2, &p, &a, &err) == ELM_OK && a.n == 20 && a.read[0] == 3 &&
              a.eligible[0] == 2 && a.selected[0] == 2 && a.selected[1] == 18,
          "shortfall: %d read, %d eligible, %d + %d", a.n ? a.read[0] : -1, a.n ? a.eligible[0] : -1,
          a.n ? a.selected[0] : -1, a.n ? a.selected[1] : -1);
    elm_calib_built_free(&a);

    p.min_tokens = 100000;
    CHECK(elm_calib_build(v, &one, 1, &p, &a, &err) == ELM_ERR_FORMAT &&
              strstr(err.msg, "no sample has at least 100000 tokens"), "nothing eligible: %s", err.msg);
    elm_calib_built_free(&a);
    one.weight = 0;
    p.min_tokens = 0;
    CHECK(elm_calib_build(v, &one, 1, &p, &a, &err) == ELM_ERR_ARG, "weight 0 accepted");
    elm_calib_built_free(&a);
}

static void test_load(const elm_model *m) {
    const elm_vocab *v = &m->vocab;
    elm_calib_set cs;
    elm_error err;
    const char *missing = tmp_path(dir, "nope.jsonl");
    CHECK(elm_calib_load(v, missing, 512, 0, &cs, &err) == ELM_ERR_IO && strstr(err.msg, missing),
          "missing: %s", err.msg);
    elm_calib_free(&cs);
    const char *empty[] = {write_tmp("empty.txt", ""), write_tmp("blank.txt", "\n  \n\t\n")};
    for (int i = 0; i < 2; i++) {
        CHECK(elm_calib_load(v, empty[i], 512, 0, &cs, &err) == ELM_ERR_FORMAT &&
                  strstr(err.msg, empty[i]) && strstr(err.msg, "no calibration samples"),
              "empty: %s", err.msg);
        elm_calib_free(&cs);
    }
    CHECK(elm_calib_load(v, fixture("stories260K/text/calib.txt"), 10, 5, &cs, &err) == ELM_OK &&
              cs.n == 5 && cs.n_tokens == 50 && cs.ids[0][0] == v->bos_id,
          "5 samples of 10 tokens: %d, %lld", cs.n, (long long)cs.n_tokens);
    elm_calib_free(&cs);
}

static elm_type type_of(const elm_model *m, const elm_tensor_plan *plan, const char *name) {
    for (int32_t i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->tensors[i].name, name)) return plan[i].type;
    return ELM_TYPE_COUNT;
}

static void test_policy(const elm_model *m) {
    elm_tensor_plan *plan = calloc((size_t)m->n_tensors, sizeof *plan);
    elm_error err;
    elm_quant_policy p = {.type = ELM_TYPE_Q4_0, .sensitive_type = ELM_TYPE_Q8_0};
    CHECK(elm_quant_plan(m, &p, plan, &err) == ELM_OK, "plan: %s", err.msg);
    CHECK(type_of(m, plan, "token_embd.weight") == ELM_TYPE_Q8_0 &&
              type_of(m, plan, "output.weight") == ELM_TYPE_Q8_0 &&
              type_of(m, plan, "blk.0.attn_norm.weight") == ELM_TYPE_F32 &&
              type_of(m, plan, "blk.3.attn_q.weight") == ELM_TYPE_Q4_0 &&
              type_of(m, plan, "blk.3.ffn_down.weight") == ELM_TYPE_F16,
          "default policy");
    int fallbacks = 0;
    for (int32_t i = 0; i < m->n_tensors; i++)
        fallbacks += plan[i].type != plan[i].wanted && strstr(plan[i].reason, "172");
    CHECK(fallbacks == 5, "%d ffn_down fallbacks explained", fallbacks);
    p.pure = true;
    elm_quant_plan(m, &p, plan, &err);
    CHECK(type_of(m, plan, "token_embd.weight") == ELM_TYPE_Q4_0 &&
              type_of(m, plan, "output.weight") == ELM_TYPE_Q4_0, "--pure");
    p.pure = false;
    p.sensitive_type = ELM_TYPE_F16;
    elm_quant_plan(m, &p, plan, &err);
    CHECK(type_of(m, plan, "token_embd.weight") == ELM_TYPE_F16, "--keep-sensitive f16");
    p.type = ELM_TYPE_F16;
    p.sensitive_type = ELM_TYPE_Q8_0;
    elm_quant_plan(m, &p, plan, &err);
    CHECK(type_of(m, plan, "output.weight") == ELM_TYPE_F16, "sensitive tensors below --type");
    const elm_type_override ov[] = {{"blk.*.ffn_down", ELM_TYPE_Q8_0}, {"blk.1.attn_q", ELM_TYPE_Q8_0},
                                    {"*attn_k*", ELM_TYPE_Q5_0}, {"blk.2.attn_k.weight", ELM_TYPE_Q5_1}};
    p = (elm_quant_policy){.type = ELM_TYPE_Q4_0, .sensitive_type = ELM_TYPE_Q8_0, .overrides = ov,
                           .n_overrides = 4};
    CHECK(elm_quant_plan(m, &p, plan, &err) == ELM_OK, "overrides: %s", err.msg);
    CHECK(type_of(m, plan, "blk.1.attn_q.weight") == ELM_TYPE_Q8_0 &&
              type_of(m, plan, "blk.0.attn_q.weight") == ELM_TYPE_Q4_0 &&
              type_of(m, plan, "blk.0.attn_k.weight") == ELM_TYPE_Q5_0 &&
              type_of(m, plan, "blk.2.attn_k.weight") == ELM_TYPE_Q5_1 &&
              type_of(m, plan, "blk.4.ffn_down.weight") == ELM_TYPE_F16,
          "overrides: last match wins, ffn_down still falls back");
    const elm_type_override bad = {"x", (elm_type)4};
    p.overrides = &bad;
    p.n_overrides = 1;
    CHECK(elm_quant_plan(m, &p, plan, &err) == ELM_ERR_ARG, "override to type 4 accepted");
    free(plan);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    dir = tmp_dir_new();
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) != ELM_OK) {
        CHECK(0, "load: %s", err.msg);
        return check_done();
    }
    test_text_sets();
    test_build(m);
    test_load(m);
    test_policy(m);
    elm_model_free(m);
    tmp_dir_remove(dir);
    return check_done();
}
