/* gpt-oss's harmony replies (the prompts are checked against jinja2 in test_chat_tools): the
 * analysis channel read as reasoning, final as the answer, calls to=functions.NAME in both of the
 * header orders the model writes, a call cut short dropped, a bad one an error; the grammar of its
 * calls taking well-formed calls of the functions only; a tool result without a call, or a call
 * with both text and reasoning, refused; the day and the reasoning effort as given; a chat's turns
 * concatenating to the rendered conversation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "edgelm/chat.h"
#include "edgelm/grammar.h"

static const char tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"w\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, "
    "\"days\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}}, \"required\": [\"city\"]}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {}}}}]";

static void parse(void) {
    const struct {
        const char *reply, *reasoning, *content, *name, *args;
    } cases[] = {
        /* reasoning, then a call with the recipient after the channel */
        {"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>"
         "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
         "Need the weather.", "", "get_weather", "{\"city\":\"Paris\"}"},
        /* the recipient in the header before the channel (the template's own order) */
        {" to=functions.now<|channel|>commentary json<|message|>{}", NULL, "", "now", "{}"},
        /* reasoning and an answer */
        {"<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>"
         "Sunny, 20 \xC2\xB0" "C.", "Easy.", "Sunny, 20 \xC2\xB0" "C.", NULL, NULL},
        /* a model that writes no headers: all of it the answer */
        {"Just text <b>", NULL, "Just text <b>", NULL, NULL},
        /* a call cut short at the reply's end is no call */
        {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Pa",
         NULL, "", NULL, NULL},
        /* an answer cut short inside its header */
        {"<|channel|>analysis<|message|>Hm<|end|><|start|>assistant<|channel|>fin", "Hm", "", NULL,
         NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        elm_tool_calls c;
        elm_error err;
        const elm_status st = elm_chat_parse_tool_calls(ELM_TEMPLATE_GPT_OSS, tools, cases[i].reply,
                                                        &c, &err);
        CHECK(st == ELM_OK, "case %zu: %s", i, err.msg);
        if (st) continue;
        CHECK(cases[i].reasoning ? c.reasoning && !strcmp(c.reasoning, cases[i].reasoning)
                                 : !c.reasoning,
              "case %zu: reasoning [%s]", i, c.reasoning ? c.reasoning : "(none)");
        CHECK(c.content && !strcmp(c.content, cases[i].content), "case %zu: content [%s]", i,
              c.content ? c.content : "(null)");
        CHECK(c.n == (cases[i].name ? 1 : 0), "case %zu: %d calls", i, (int)c.n);
        if (c.n == 1 && cases[i].name)
            CHECK(!strcmp(c.calls[0].name, cases[i].name) && !strcmp(c.calls[0].arguments, cases[i].args),
                  "case %zu: call %s(%s)", i, c.calls[0].name, c.calls[0].arguments);
        elm_tool_calls_free(&c);
    }
    elm_tool_calls c;
    elm_error err;
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_GPT_OSS, tools, "<|channel|>commentary "
                                    "to=functions.now <|constrain|>json<|message|>[1]<|end|>", &c,
                                    &err) == ELM_ERR_FORMAT && strstr(err.msg, "now") &&
              strstr(err.msg, "not a JSON object"), "bad arguments: %s", err.msg);
}

static void grammar(void) {
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_error err;
    elm_grammar *g = NULL;
    /* lazy: what follows the trigger, in either header order */
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_GPT_OSS, tools, NULL, true, true, &gbnf, &trigger, &err) ==
              ELM_OK && elm_grammar_parse(gbnf, strlen(gbnf), "harmony", &g, &err) == ELM_OK,
          "lazy grammar: %s", err.msg);
    CHECK(trigger && !strcmp(trigger, " to=functions."), "trigger [%s]", trigger ? trigger : "");
    const char *good[] = {"get_weather <|constrain|>json<|message|>{\"city\": \"Paris\", \"days\": 3}",
                          "now<|channel|>commentary json<|message|>{}",
                          "now<|channel|>commentary <|constrain|>json<|message|>{}"};
    const char *bad[] = {"get_weather <|constrain|>json<|message|>{}",
                         "get_weather <|constrain|>json<|message|>{\"city\": \"P\", \"days\": 9}",
                         "nothing <|constrain|>json<|message|>{}", "now json<|message|>{}"};
    for (size_t i = 0; g && i < sizeof good / sizeof good[0]; i++)
        CHECK(elm_grammar_match_text(g, good[i], strlen(good[i])) == 2, "refused: %s", good[i]);
    for (size_t i = 0; g && i < sizeof bad / sizeof bad[0]; i++)
        CHECK(elm_grammar_match_text(g, bad[i], strlen(bad[i])) != 2, "matched: %s", bad[i]);
    elm_grammar_free(g);
    free(gbnf);
    /* a call required: the reply opens the commentary channel at once, and of `only` */
    g = NULL;
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_GPT_OSS, tools, "now", false, false, &gbnf, NULL, &err) ==
              ELM_OK && elm_grammar_parse(gbnf, strlen(gbnf), "harmony", &g, &err) == ELM_OK,
          "grammar: %s", err.msg);
    const char *whole = "<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}";
    const char *other = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
                        "{\"city\": \"P\"}";
    CHECK(g && elm_grammar_match_text(g, whole, strlen(whole)) == 2, "required call refused");
    CHECK(g && elm_grammar_match_text(g, other, strlen(other)) != 2, "a call of another function");
    elm_grammar_free(g);
    free(gbnf);
}

static void render(void) {
    char *out = NULL;
    elm_error err;
    const elm_chat_msg orphan[] = {{.role = "user", .content = "Hi"}, {.role = "tool", .content = "x"}};
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_GPT_OSS, orphan, 2, tools, true, &out, &err) ==
              ELM_ERR_ARG && strstr(err.msg, "chat message 1") && strstr(err.msg, "no assistant call"),
          "orphan result: %s", err.msg);
    /* a call's reasoning is its text or its reasoning, not both */
    const elm_tool_call now[] = {{"now", "{}", NULL}};
    const elm_chat_msg both[] = {{.role = "user", .content = "Hi"},
                                 {.role = "assistant", .content = "Text.", .tool_calls = now,
                                  .n_tool_calls = 1, .reasoning = "Thought."}};
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_GPT_OSS, both, 2, tools, true, &out, &err) ==
              ELM_ERR_ARG && strstr(err.msg, "chat message 1: both content and reasoning"),
          "content and reasoning: %s", err.msg);
    /* the day and the effort as given; an effort of another name refused */
    struct tm day = {.tm_year = 101, .tm_mon = 1, .tm_mday = 3, .tm_hour = 12, .tm_isdst = -1};
    const elm_chat_opts low = {.reasoning_effort = "low", .now = mktime(&day)};
    CHECK(elm_chat_render_with(ELM_TEMPLATE_GPT_OSS, orphan, 1, NULL, true, &low, &out, &err) == ELM_OK &&
              strstr(out, "Current date: 2001-02-03\n\nReasoning: low\n\n"), "day and effort: %s",
          out ? out : err.msg);
    free(out);
    const elm_chat_opts odd = {.reasoning_effort = "max", .now = 0};
    CHECK(elm_chat_render_with(ELM_TEMPLATE_GPT_OSS, orphan, 1, NULL, true, &odd, &out, &err) ==
              ELM_ERR_ARG && strstr(err.msg, "reasoning_effort: 'max'"), "effort max: %s", err.msg);
    /* the template's detection and its reply's end */
    CHECK(elm_chat_template_detect("{{- \"<|start|>system<|message|>\" }}<|channel|>") ==
              ELM_TEMPLATE_GPT_OSS, "detect");
    CHECK(!strcmp(elm_chat_template_eot(ELM_TEMPLATE_GPT_OSS), "<|call|>"), "eot");
    /* a chat's turns are the conversation rendered with the replies as generated (a final
     * message's text: the cache holds what the model wrote) */
    const elm_chat_msg conv[] = {{.role = "system", .content = "Be brief."},
                                 {.role = "user", .content = "Hi"},
                                 {.role = "assistant", .content = "Hello."},
                                 {.role = "user", .content = "Bye"}};
    char *t1 = NULL, *t2 = NULL, *all = NULL;
    CHECK(elm_chat_render_turn(ELM_TEMPLATE_GPT_OSS, "Be brief.", "Hi", true, &t1, &err) == ELM_OK &&
              elm_chat_render_turn(ELM_TEMPLATE_GPT_OSS, "Be brief.", "Bye", false, &t2, &err) == ELM_OK &&
              elm_chat_render(ELM_TEMPLATE_GPT_OSS, conv, 4, true, &all, &err) == ELM_OK,
          "turns: %s", err.msg);
    if (t1 && t2 && all) {
        const char *reply = "<|channel|>final<|message|>Hello.";
        char joined[4096];
        snprintf(joined, sizeof joined, "%s%s%s", t1, reply, t2);
        CHECK(!strcmp(joined, all), "turns:\n got [%s]\nwant [%s]", joined, all);
    }
    free(t1);
    free(t2);
    free(all);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    parse();
    grammar();
    render();
    return check_done();
}
