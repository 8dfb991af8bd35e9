/* Answering from retrieved chunks (edgelm/rag.h), with the fixture's vocabulary counting tokens:
 *  - elm_docs_context numbers the hits in order, file names without folders, the heading only
 *    where there is one; no hit says so;
 *  - elm_docs_prompt_build: the system message is the "rag" preset over that context followed by
 *    the conversation's own system message, the text is the template's rendering of the whole
 *    conversation with it (what a chat's first turn renders, elm_chat_render_turn), its token
 *    count is the text's with BOS;
 *  - the budget: a context that holds the prompt of the best two hits beside the reply keeps
 *    exactly those two, one token less keeps one, none at all is ELM_ERR_ARG naming the counts
 *    (and leaves *out zeroed); elm_chat_set_system then a turn prefills those counted tokens;
 *  - elm_hits_json: one object per hit, its number under the key given, null scores where the
 *    hit is not in a list. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "edgelm/rag.h"

static elm_hit hits[3] = {
    {.chunk_id = 7, .file = "/notes/garden/roses.md", .heading = "Garden > Roses",
     .text = "Roses want six hours of sun.", .line_start = 3, .line_end = 5, .bm25_rank = 1,
     .bm25 = 2.5, .fused = 1.0 / 61},
    {.chunk_id = 2, .file = "todo.txt", .heading = "", .text = "Buy compost on Friday.",
     .line_start = 1, .line_end = 1, .cosine_rank = 1, .cosine = 0.5, .fused = 1.0 / 61},
    {.chunk_id = 9, .file = "/notes/garden/tulips.md", .heading = "Garden > Tulips",
     .text = "Plant tulip bulbs in the autumn, a hand deep.", .line_start = 10, .line_end = 12},
};

static void context_text(void) {
    char *c = elm_docs_context(hits, 2);
    const char *want = "Numbered sources follow. Cite the ones your answer uses by their numbers, "
                       "as [1], [2].\n\n[1] roses.md:3-5, Garden > Roses\nRoses want six hours "
                       "of sun.\n\n[2] todo.txt:1-1\nBuy compost on Friday.";
    CHECK(c && !strcmp(c, want), "context:\n%s", c ? c : "(null)");
    free(c);
    c = elm_docs_context(hits, 0);
    CHECK(c && strstr(c, "\n\n(no document matched the question)"), "no hits: %s", c ? c : "(null)");
    free(c);
}

static elm_docs_prompt build(const elm_vocab *v, const elm_chat_msg *m, int32_t n, int32_t n_hits,
                             int32_t n_ctx, elm_status want) {
    elm_docs_prompt p;
    elm_error err;
    const elm_status st = elm_docs_prompt_build(v, ELM_TEMPLATE_CHATML, m, n, NULL, hits, n_hits,
                                                n_ctx, 16, &p, &err);
    CHECK(st == want, "build (%d hits, n_ctx %d): status %d, want %d: %s", n_hits, n_ctx, st,
          want, st ? err.msg : "");
    if (st == ELM_ERR_ARG)
        CHECK(strstr(err.msg, "without any document, but the context holds") && !p.text && !p.system,
              "refusal: %s", err.msg);
    return p;
}

static void prompt(const elm_model *model) {
    const elm_vocab *v = &model->vocab;
    const elm_chat_msg conv[] = {{.role = "system", .content = "Be brief."},
                                 {.role = "user", .content = "When do roses bloom?"},
                                 {.role = "assistant", .content = "In June [1]."},
                                 {.role = "user", .content = "What should I buy?"}};
    /* everything fits: the preset over the context, the conversation's system message after it */
    elm_docs_prompt p = build(v, conv, 4, 3, 4096, ELM_OK);
    char *context = elm_docs_context(hits, 3), *preset = NULL, *text = NULL;
    float temp;
    elm_error err;
    elm_chat_preset("rag", NULL, NULL, context, &preset, &temp, &err);
    const size_t pl = strlen(preset);
    CHECK(p.n_docs == 3 && p.system && !strncmp(p.system, preset, pl) &&
          !strcmp(p.system + pl, "\n\nBe brief."), "system: %s", p.system ? p.system : "(null)");
    elm_chat_msg with[4];
    memcpy(with, conv, sizeof with);
    with[0].content = p.system;
    elm_chat_render(ELM_TEMPLATE_CHATML, with, 4, true, &text, &err);
    CHECK(text && p.text && !strcmp(p.text, text), "text differs from the rendered conversation");
    free(text);
    int32_t *ids = NULL;
    int64_t n = 0;
    elm_tokenize_alloc(v, p.text, strlen(p.text), false, true, &ids, &n, &err);
    CHECK(p.n_tokens == n + (v->add_bos && ids[0] != v->bos_id), "n_tokens %d, text %lld",
          p.n_tokens, (long long)n);
    free(ids);
    elm_docs_prompt_free(&p);
    free(context);
    free(preset);

    /* the budget, one question: the best two fit exactly, one token less keeps the best */
    const elm_chat_msg *q = conv + 1;
    elm_docs_prompt two = build(v, q, 1, 2, 4096, ELM_OK), zero = build(v, q, 1, 0, 4096, ELM_OK);
    CHECK(two.n_docs == 2 && zero.n_docs == 0 && zero.n_tokens < two.n_tokens, "two %d, zero %d",
          two.n_tokens, zero.n_tokens);
    p = build(v, q, 1, 3, two.n_tokens + 16, ELM_OK);
    CHECK(p.n_docs == 2 && p.n_tokens == two.n_tokens && !strcmp(p.text, two.text),
          "n_ctx %d kept %d hits (%d tokens)", two.n_tokens + 16, p.n_docs, p.n_tokens);
    elm_docs_prompt_free(&p);
    p = build(v, q, 1, 3, two.n_tokens + 15, ELM_OK);
    CHECK(p.n_docs == 1 && p.n_tokens <= two.n_tokens - 1, "n_ctx %d kept %d hits",
          two.n_tokens + 15, p.n_docs);
    CHECK(strstr(p.text, hits[0].text) && !strstr(p.text, hits[1].text), "kept the wrong hit");
    elm_docs_prompt_free(&p);
    p = build(v, q, 1, 3, zero.n_tokens + 15, ELM_ERR_ARG);
    p = build(v, q, 1, 3, zero.n_tokens + 16, ELM_OK);
    CHECK(p.n_docs == 0 && strstr(p.text, "(no document matched the question)"), "none kept: %d",
          p.n_docs);
    elm_docs_prompt_free(&p);

    /* a chat set to the two-hit system prompt prefills what was counted */
    elm_context *c = NULL;
    const elm_context_params cp = {.n_ctx = 4096, .n_threads = 1};
    CHECK(elm_context_new(model, &cp, &c, &err) == ELM_OK, "context: %s", err.msg);
    elm_chat_params chp = {.tmpl = ELM_TEMPLATE_CHATML, .system = "old",
                           .gen = {.n_predict = 4, .sampling = elm_sampler_defaults()}};
    elm_chat *ch = NULL;
    elm_gen_stats s;
    if (c && !elm_chat_new(c, &chp, &ch, &err)) {
        CHECK(elm_chat_turn(ch, "Hello", NULL, NULL, &s, &err) == ELM_OK, "turn: %s", err.msg);
        CHECK(elm_chat_set_system(ch, two.system, &err) == ELM_OK && elm_context_n_past(c) == 0,
              "set_system: %s", err.msg);
        CHECK(elm_chat_turn(ch, q->content, NULL, NULL, &s, &err) == ELM_OK, "turn: %s", err.msg);
        CHECK(s.prompt_tokens == two.n_tokens, "prefilled %d, counted %d", s.prompt_tokens,
              two.n_tokens);
    }
    elm_chat_free(ch);
    elm_context_free(c);
    elm_docs_prompt_free(&two);
    elm_docs_prompt_free(&zero);
}

static void hits_json(void) {
    char *text = elm_hits_json(hits, 2, "index");
    cJSON *a = text ? cJSON_Parse(text) : NULL;
    CHECK(cJSON_GetArraySize(a) == 2, "hits json: %s", text ? text : "(null)");
    const cJSON *h = cJSON_GetArrayItem(a, 1), *s = cJSON_GetObjectItem(h, "scores");
    CHECK(cJSON_GetObjectItem(h, "index")->valueint == 2 && !cJSON_GetObjectItem(h, "rank") &&
          cJSON_GetObjectItem(h, "chunk_id")->valueint == 2 &&
          !strcmp(cJSON_GetObjectItem(h, "file")->valuestring, "todo.txt") &&
          cJSON_IsNull(cJSON_GetObjectItem(s, "bm25")) && cJSON_IsNull(cJSON_GetObjectItem(s, "bm25_rank")) &&
          cJSON_GetObjectItem(s, "cosine")->valuedouble == 0.5 &&
          cJSON_GetObjectItem(s, "cosine_rank")->valueint == 1, "hit 2: %s", text);
    cJSON_Delete(a);
    free(text);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    context_text();
    hits_json();
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_model_load(fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err) == ELM_OK,
          "model: %s", err.msg);
    if (m) prompt(m);
    elm_model_free(m);
    return check_done();
}
