/* Tool calls in the families' syntaxes: prompts with tools, calls and results equal what jinja2
 * renders from the published templates (tests/data/prompts, written by
 * tests/data/templates/render.py; the Qwen3 ones written out below); calls parsed back out of
 * replies; the grammar of calls matching well-formed calls only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/fileio.h"
#include "edgelm/chat.h"
#include "edgelm/grammar.h"

/* Tools in Qwen3's Hermes style: the prompts rendered by jinja2 3.1 from
 * tests/data/templates/Qwen-Qwen3-0.6B.jinja with transformers' tojson (json.dumps,
 * ensure_ascii=False), add_generation_prompt, enable_thinking false for qwen3-no-think; calls
 * parsed back out of replies; the grammar of calls matching well-formed calls only. */
static const char tools_json[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
    "\"Weather in a city, \\\"now\\\" \xE2\x80\x94 \xC3\xBCn\xC3\xAF" "code\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
    "\"integer\", \"minimum\": 1, \"maximum\": 7}, \"t\": {\"type\": \"number\", \"minimum\": 0.5}}, "
    "\"required\": [\"city\"]}}},\n {\"type\":\"function\",\"function\":{\"name\":\"now\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]";
#define TOOLS_BLOCK                                                                               \
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"            \
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"       \
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "        \
    "\"Weather in a city, \\\"now\\\" \xE2\x80\x94 \xC3\xBCn\xC3\xAF" "code\", \"parameters\": "      \
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "         \
    "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}, \"t\": {\"type\": \"number\", "      \
    "\"minimum\": 0.5}}, \"required\": [\"city\"]}}}\n"                                            \
    "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": "       \
    "\"object\", \"properties\": {}}}}\n</tools>\n\nFor each function call, return a json object " \
    "with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"    \
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
#define TOOL_TURNS                                                                                \
    "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"         \
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"            \
    "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n"                \
    "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nnoon\n"         \
    "</tool_response><|im_end|>\n<|im_start|>assistant\n"

static void tools_render(void) {
    static const elm_tool_call calls[] = {{"get_weather", "{\"city\": \"Paris\"}", NULL},
                                          {"now", "{}", NULL}};
    static const elm_chat_msg m[] = {
        {.role = "system", .content = "You are helpful."},
        {.role = "user", .content = "Weather in Paris?"},
        {.role = "assistant", .content = "", .tool_calls = calls, .n_tool_calls = 2},
        {.role = "tool", .content = "sunny"},
        {.role = "tool", .content = "noon"}};
    const struct {
        elm_chat_template t;
        const elm_chat_msg *msgs;
        int n;
        const char *want, *what;
    } cases[] = {
        {ELM_TEMPLATE_QWEN3, m, 2,
         "<|im_start|>system\nYou are helpful.\n\n" TOOLS_BLOCK
         "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n", "tools"},
        {ELM_TEMPLATE_QWEN3, m, 5, "<|im_start|>system\nYou are helpful.\n\n" TOOLS_BLOCK TOOL_TURNS,
         "calls and results"},
        {ELM_TEMPLATE_QWEN3, m + 1, 4, "<|im_start|>system\n" TOOLS_BLOCK TOOL_TURNS, "no system"},
        {ELM_TEMPLATE_QWEN3_NO_THINK, m, 5,
         "<|im_start|>system\nYou are helpful.\n\n" TOOLS_BLOCK TOOL_TURNS "<think>\n\n</think>\n\n",
         "thinking off"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        elm_error err;
        CHECK(elm_chat_render_tools(cases[i].t, cases[i].msgs, cases[i].n, tools_json, true, &out,
                                    &err) == ELM_OK, "%s: %s", cases[i].what, err.msg);
        CHECK(out && !strcmp(out, cases[i].want), "%s:\n got [%s]\nwant [%s]", cases[i].what,
              out ? out : "", cases[i].want);
        free(out);
    }
    char *out = NULL;
    elm_error err;
    /* an empty list is no tools, as the template's `if tools` */
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_QWEN3, m + 1, 1, "[]", true, &out, &err) == ELM_OK &&
              !strcmp(out, "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"),
          "empty tools: %s", out ? out : err.msg);
    free(out);
    out = NULL;
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_LLAMA3, m, 2, tools_json, true, &out, &err) ==
              ELM_ERR_UNSUPPORTED && strstr(err.msg, "llama3"), "llama3 tools: %s", err.msg);
    CHECK(elm_chat_render(ELM_TEMPLATE_LLAMA3, m, 3, true, &out, &err) == ELM_ERR_UNSUPPORTED,
          "llama3 calls accepted");
    const char *bad[] = {"{}", "[1]", "[{\"type\": \"function\"}]",
                         "[{\"type\": \"function\", \"function\": {\"name\": \"a b\"}}]",
                         "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": 3}}]",
                         "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                         "{\"properties\": [\"city\"]}}}]",
                         "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}, "
                         "{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int t = 0; t < ELM_TEMPLATE_COUNT; t++) { /* every syntax: tools are checked first */
            if (!elm_chat_template_has_tools((elm_chat_template)t)) continue;
            CHECK(elm_chat_render_tools((elm_chat_template)t, m + 1, 1, bad[i], true, &out, &err) ==
                      ELM_ERR_FORMAT && !out && !strncmp(err.msg, "tools", 5),
                  "%s tools %s: %s", elm_chat_template_name((elm_chat_template)t), bad[i], err.msg);
            char *gbnf = NULL;
            CHECK(elm_chat_tool_grammar((elm_chat_template)t, bad[i], NULL, true, false, &gbnf, NULL,
                                        &err) == ELM_ERR_FORMAT && !gbnf,
                  "%s grammar of tools %s: %s", elm_chat_template_name((elm_chat_template)t), bad[i],
                  err.msg);
        }
}

static void tools_parse(void) {
    elm_tool_calls c;
    elm_error err;
    const char *reply = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                        "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n"
                        "{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_QWEN3, NULL, reply, &c, &err) == ELM_OK, "%s", err.msg);
    CHECK(c.n == 2 && !strcmp(c.content, "Let me check.") && !strcmp(c.calls[0].name, "get_weather") &&
              !strcmp(c.calls[0].arguments, "{\"city\":\"Paris\",\"days\":2}") &&
              !strcmp(c.calls[1].name, "now") && !strcmp(c.calls[1].arguments, "{}"),
          "parsed: %d calls, content '%s'", c.n, c.content ? c.content : "");
    elm_tool_calls_free(&c);
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_QWEN3, NULL, "plain answer", &c, &err) == ELM_OK &&
              c.n == 0 && !strcmp(c.content, "plain answer"), "no calls");
    elm_tool_calls_free(&c);
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_QWEN3, NULL, "<tool_call>\n{\"name\": 1}", &c, &err) ==
              ELM_ERR_FORMAT && strstr(err.msg, "tool call 0"), "bad call: %s", err.msg);
}

static void tools_grammar(void) {
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "
        "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}}, \"required\": [\"city\"]}}}, "
        "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    char *gbnf = NULL;
    const char *trigger = NULL;
    elm_error err;
    elm_grammar *g = NULL;
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_QWEN3, tools, NULL, true, false, &gbnf, &trigger,
                                &err) == ELM_OK, "grammar: %s", err.msg);
    CHECK(gbnf && elm_grammar_parse(gbnf, strlen(gbnf), "tools", &g, &err) == ELM_OK, "parse: %s",
          err.msg);
    const char *good[] = {
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 7}}\n"
        "</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"};
    const char *wrong[] = {
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"R\", \"days\": 8}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"nothing\", \"arguments\": {}}\n</tool_call>", "Hello"};
    for (size_t i = 0; g && i < 2; i++)
        CHECK(elm_grammar_match_text(g, good[i], strlen(good[i])) == 2, "refused: %s", good[i]);
    for (size_t i = 0; g && i < 4; i++)
        CHECK(elm_grammar_match_text(g, wrong[i], strlen(wrong[i])) != 2, "matched: %s", wrong[i]);
    CHECK(trigger && !strcmp(trigger, "<tool_call>"), "trigger");
    elm_grammar_free(g);
    free(gbnf);
    /* lazy, one call of the named function: the grammar starts after the trigger */
    g = NULL;
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_QWEN3, tools, "now", false, true, &gbnf, NULL,
                                &err) == ELM_OK && elm_grammar_parse(gbnf, strlen(gbnf), "t", &g, &err) == ELM_OK,
          "lazy: %s", err.msg);
    const char *after = "\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    CHECK(g && elm_grammar_match_text(g, after, strlen(after)) == 2, "lazy call refused");
    const char *two = "\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                      "{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    CHECK(g && elm_grammar_match_text(g, two, strlen(two)) != 2, "two calls without parallel");
    elm_grammar_free(g);
    free(gbnf);
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_QWEN3, tools, "nope", true, false, &gbnf, NULL,
                                &err) == ELM_ERR_FORMAT && strstr(err.msg, "nope"), "unknown name");
    const char *pattern = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                          "{\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"string\", "
                          "\"pattern\": \"a+\"}}}}}]";
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_QWEN3, pattern, NULL, true, false, &gbnf, NULL, &err) ==
              ELM_ERR_UNSUPPORTED && strstr(err.msg, "tools[0].function.parameters") &&
              strstr(err.msg, "pattern"), "unsupported keyword: %s", err.msg);
}

/* The conversations of render.py, arguments as the JSON text clients send. */
static const elm_tool_call two_calls[] = {
    {"get_weather", "{\"city\":\"Paris\",\"days\":2,\"t\":1.5}", "a1b2c3d4e"}, {"now", "{}", "f5g6h7i8j"}};
static const elm_tool_call one_call[] = {{"get_weather", "{\"city\": \"Paris\\nFrance\", \"days\": 2}", "a1b2c3d4e"}};
static const elm_chat_msg sys_msg = {.role = "system", .content = "You are helpful."};
static const elm_chat_msg user_msg = {.role = "user", .content = "Weather in Paris?"};

/* The golden NAME.txt of tests/data/prompts (malloc'd), the day render.py renders Llama 3.2 and
 * Mistral Small 3.2 and gpt-oss with replaced by today's, as edgelm writes it; NULL when unreadable. */
static char *golden(const char *name) {
    const char *slash = strrchr(__FILE__, '/');
    char path[4096], *text = NULL;
    size_t len;
    elm_error err;
    snprintf(path, sizeof path, "%.*sdata/prompts/%s.txt", slash ? (int)(slash - __FILE__ + 1) : 0,
             __FILE__, name);
    if (elm_read_file(path, 1 << 20, &text, &len, &err)) {
        CHECK(0, "%s", err.msg);
        return NULL;
    }
    const bool llama = !strncmp(name, "llama32", 7);
    char *day = strstr(text, llama ? "05 Dec 2026" : "2026-12-05");
    if (day && (llama || !strncmp(name, "mistral-small32", 15) || !strncmp(name, "gpt-oss", 7))) {
        const time_t now = time(NULL);
        struct tm tm;
        char today[16];
        strftime(today, sizeof today, llama ? "%d %b %Y" : "%Y-%m-%d", localtime_r(&now, &tm));
        memcpy(day, today, strlen(today)); /* "DD Mon YYYY", "YYYY-MM-DD": as long as the golden's */
    }
    return text;
}

static void families_render(void) {
    const elm_chat_msg calls[] = {sys_msg, user_msg,
                                  {.role = "assistant", .content = "", .tool_calls = two_calls, .n_tool_calls = 2},
                                  {.role = "tool", .content = "sunny", .tool_call_id = "a1b2c3d4e"},
                                  {.role = "tool", .content = "noon", .tool_call_id = "f5g6h7i8j"}};
    const elm_chat_msg one[] = {sys_msg, user_msg,
                                {.role = "assistant", .content = "", .tool_calls = one_call, .n_tool_calls = 1},
                                {.role = "tool", .content = "sunny", .tool_call_id = "a1b2c3d4e"}};
    const elm_chat_msg plain[] = {sys_msg, user_msg, {.role = "assistant", .content = " Sunny. "},
                                  {.role = "user", .content = "Thanks"}};
    /* the answer after a result (Gemma 4 goes on in the turn of the call) */
    const elm_chat_msg answer[] = {user_msg,
                                   {.role = "assistant", .content = "", .tool_calls = one_call, .n_tool_calls = 1},
                                   {.role = "tool", .content = "sunny"},
                                   {.role = "assistant", .content = " Sunny. "},
                                   {.role = "user", .content = "Thanks"}};
    const struct {
        const char *name;
        const elm_chat_msg *msgs;
        int n;
        bool tools;
    } cases[] = {{"tools", calls, 2, true}, {"calls", calls, 5, true}, {"nosystem", calls + 1, 4, true},
                 {"onecall", one, 4, true}, {"plain", plain, 4, false}, {"answer", answer, 5, true}};
    const struct {
        elm_chat_template t;
        const char *cases; /* the names of those it is checked on */
    } fam[] = {{ELM_TEMPLATE_QWEN35, "tools calls nosystem onecall"},
               {ELM_TEMPLATE_GRANITE4, "tools calls nosystem onecall"},
               {ELM_TEMPLATE_LLAMA31, "tools onecall plain"},
               {ELM_TEMPLATE_LLAMA32, "tools onecall plain"},
               {ELM_TEMPLATE_GEMMA4, "tools calls nosystem onecall answer"},
               {ELM_TEMPLATE_PHI4_MINI, "tools calls nosystem onecall"},
               {ELM_TEMPLATE_LFM2, "tools calls nosystem onecall"},
               {ELM_TEMPLATE_LFM25, "tools calls nosystem onecall"},
               {ELM_TEMPLATE_MINISTRAL3, "tools calls nosystem onecall plain"},
               {ELM_TEMPLATE_MISTRAL_SMALL32, "tools calls nosystem onecall plain"},
               {ELM_TEMPLATE_MISTRAL_NEMO, "tools calls nosystem onecall plain"},
               {ELM_TEMPLATE_GPT_OSS, "tools onecall plain answer"}};
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            if (!strstr(fam[f].cases, cases[c].name)) continue;
            char name[64], *out = NULL, *want;
            elm_error err;
            snprintf(name, sizeof name, "%s-%s", elm_chat_template_name(fam[f].t), cases[c].name);
            if (!(want = golden(name))) continue;
            CHECK(elm_chat_render_tools(fam[f].t, cases[c].msgs, cases[c].n,
                                        cases[c].tools ? tools_json : NULL, true, &out, &err) == ELM_OK,
                  "%s: %s", name, err.msg);
            CHECK(out && !strcmp(out, want), "%s:\n got [%s]\nwant [%s]", name, out ? out : "", want);
            free(out);
            free(want);
        }
    /* gpt-oss's TypeScript-like types of every form of schema (render.py's SCHEMA_TOOLS) */
    static const char schema_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\", \"parameters\": {\""
    "type\": \"object\", \"required\": [\"a\", \"n\"], \"properties\": {\"a\": {\"type\": \"string\", \"des"
    "cription\": \"the a\", \"enum\": [\"x\", \"y\"], \"default\": \"x\"}, \"b\": {\"type\": \"array\", \"ite"
    "ms\": {\"type\": \"object\", \"required\": [\"p\"], \"properties\": {\"p\": {\"type\": \"integer\"}, "
    "\"q\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}}, \"b2\": {\"type\": \"array\", \"ite"
    "ms\": {\"type\": \"object\", \"properties\": {\"p\": {\"type\": \"integer\"}}}}, \"c\": {\"type\": [\""
    "string\", \"null\"]}, \"d\": {\"oneOf\": [{\"type\": \"string\", \"description\": \"s\"}, {\"type\": "
    "\"number\", \"default\": 1}]}, \"e\": {\"type\": \"object\"}, \"g\": {\"type\": \"boolean\", \"defaul"
    "t\": false}, \"h\": {\"type\": \"string\", \"nullable\": true, \"default\": \"zz\"}, \"i\": {\"type\""
    ": \"array\", \"nullable\": true}, \"j\": {\"type\": \"array\", \"items\": {\"type\": \"array\", \"ite"
    "ms\": {\"type\": \"number\"}}}, \"k\": {\"description\": \"any thing\"}, \"n\": {\"type\": \"object\""
    ", \"required\": [\"x\"], \"properties\": {\"x\": {\"type\": \"string\", \"enum\": [\"u\", \"v\"]}, \"y\""
    ": {\"type\": \"integer\"}}}, \"o\": {\"oneOf\": [{\"type\": \"string\"}], \"default\": \"q\"}}}}}]";
    char *out = NULL, *want = golden("gpt-oss-schema");
    elm_error err;
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_GPT_OSS, &user_msg, 1, schema_tools, true, &out, &err) ==
              ELM_OK && want && !strcmp(out, want),
          "gpt-oss-schema:\n got [%s]\nwant [%s]", out ? out : err.msg, want ? want : "");
    free(out);
    free(want);
    /* gpt-oss's reasoning before a call (its template's "thinking") */
    const elm_chat_msg thinking[] = {
        user_msg,
        {.role = "assistant", .content = "", .tool_calls = one_call, .n_tool_calls = 1,
         .reasoning = "Paris: call get_weather."},
        {.role = "tool", .content = "sunny", .tool_call_id = "a1b2c3d4e"}};
    want = golden("gpt-oss-thinking");
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_GPT_OSS, thinking, 3, tools_json, true, &out, &err) ==
              ELM_OK && want && !strcmp(out, want),
          "gpt-oss-thinking:\n got [%s]\nwant [%s]", out ? out : err.msg, want ? want : "");
    free(out);
    free(want);
    /* gpt-oss's reasoning effort (its template's reasoning_effort) */
    const elm_chat_opts high = {.reasoning_effort = "high", .now = 0};
    want = golden("gpt-oss-effort");
    CHECK(elm_chat_render_with(ELM_TEMPLATE_GPT_OSS, calls, 2, tools_json, true, &high, &out, &err) ==
              ELM_OK && want && !strcmp(out, want),
          "gpt-oss-effort:\n got [%s]\nwant [%s]", out ? out : err.msg, want ? want : "");
    free(out);
    free(want);
    /* Llama 3.1 takes one call a message, and the tools need a first user message */
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_LLAMA31, calls, 3, tools_json, true, &out, &err) ==
              ELM_ERR_UNSUPPORTED && strstr(err.msg, "one tool call"), "llama31 two calls: %s", err.msg);
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_LLAMA31, calls, 1, tools_json, true, &out, &err) ==
              ELM_ERR_ARG && strstr(err.msg, "first user message"), "llama31 no user: %s", err.msg);
    /* Mistral Small 3.2: the tools go before the last user message, and calls and results need
     * their ids of 9 letters and digits */
    const elm_chat_msg later[] = {user_msg, {.role = "assistant", .content = "Where?"},
                                  {.role = "user", .content = "Paris"}};
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_MISTRAL_SMALL32, later, 3, "[{\"type\": \"function\", "
                                "\"function\": {\"name\": \"now\"}}]", true, &out, &err) == ELM_OK &&
              strstr(out, "[INST]Weather in Paris?[/INST]Where?</s>[AVAILABLE_TOOLS][{\"type\": "
                          "\"function\", \"function\": {\"name\": \"now\"}}][/AVAILABLE_TOOLS]"
                          "[INST]Paris[/INST]") && !strstr(out, "[/AVAILABLE_TOOLS][INST]Weather"),
          "mistral-small32 tools before the last user message: %s", out ? out : err.msg);
    free(out);
    const elm_tool_call no_id[] = {{"now", "{}", NULL}}, short_id[] = {{"now", "{}", "call_1"}},
                        odd_id[] = {{"now", "{}", "abcdefgh\n"}};
    const elm_chat_msg bad_ids[][2] = {
        {user_msg, {.role = "assistant", .content = "", .tool_calls = no_id, .n_tool_calls = 1}},
        {user_msg, {.role = "assistant", .content = "", .tool_calls = short_id, .n_tool_calls = 1}},
        {user_msg, {.role = "assistant", .content = "", .tool_calls = odd_id, .n_tool_calls = 1}},
        {user_msg, {.role = "tool", .content = "noon"}},
        {user_msg, {.role = "tool", .content = "noon", .tool_call_id = "call_1"}},
        {user_msg, {.role = "tool", .content = "noon", .tool_call_id = "ab cd efg"}}};
    for (size_t i = 0; i < 12; i++)
        CHECK(elm_chat_render_tools(i < 6 ? ELM_TEMPLATE_MISTRAL_SMALL32 : ELM_TEMPLATE_MISTRAL_NEMO,
                                    bad_ids[i % 6], 2, tools_json, true, &out, &err) == ELM_ERR_FORMAT &&
                  strstr(err.msg, "chat message 1") && strstr(err.msg, "9 letters and digits"),
              "bad id %zu: %s", i, err.msg);
    /* the ids a reply's calls get back: 9 letters and digits for it, call_TAG_I for others */
    char id[ELM_TOOL_CALL_ID_MAX], id2[ELM_TOOL_CALL_ID_MAX];
    elm_chat_tool_call_id(ELM_TEMPLATE_MISTRAL_SMALL32, "chatcmpl-abc", 0, id);
    elm_chat_tool_call_id(ELM_TEMPLATE_MISTRAL_SMALL32, "chatcmpl-abc", 1, id2);
    CHECK(strlen(id) == 9 && strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == 9 &&
              strcmp(id, id2), "mistral-small32 ids %s %s", id, id2);
    elm_chat_tool_call_id(ELM_TEMPLATE_MISTRAL_NEMO, "chatcmpl-abc", 0, id2);
    CHECK(strlen(id2) == 9, "mistral-nemo id %s", id2);
    elm_chat_tool_call_id(ELM_TEMPLATE_QWEN3, "abc", 2, id);
    CHECK(!strcmp(id, "call_abc_2"), "qwen3 id %s", id);
    const elm_tool_call bad_args[] = {{"now", "[1]", NULL}};
    const elm_chat_msg bad[] = {user_msg, {.role = "assistant", .content = "", .tool_calls = bad_args,
                                           .n_tool_calls = 1}};
    CHECK(elm_chat_render_tools(ELM_TEMPLATE_QWEN35, bad, 2, tools_json, true, &out, &err) ==
              ELM_ERR_FORMAT && strstr(err.msg, "arguments"), "arguments not an object: %s", err.msg);
}

/* The reply's calls: n, then each name and arguments (compact JSON), and the content. */
static void check_parse(elm_chat_template t, const char *tools, const char *reply, int n,
                        const char *const *want, const char *content) {
    elm_tool_calls c;
    elm_error err;
    CHECK(elm_chat_parse_tool_calls(t, tools, reply, &c, &err) == ELM_OK, "%s: %s",
          elm_chat_template_name(t), err.msg);
    CHECK(c.n == n && c.content && !strcmp(c.content, content), "%s: %d calls, content '%s'",
          elm_chat_template_name(t), c.n, c.content ? c.content : "");
    for (int i = 0; i < c.n && i < n; i++)
        CHECK(!strcmp(c.calls[i].name, want[2 * i]) && !strcmp(c.calls[i].arguments, want[2 * i + 1]),
              "%s call %d: %s %s", elm_chat_template_name(t), i, c.calls[i].name, c.calls[i].arguments);
    elm_tool_calls_free(&c);
}

/* LFM2's Python calls: literals into JSON, text around the block as content, a call cut short
 * dropped, a malformed one an error. */
static void lfm2_parse(void) {
    const char *two[] = {"get_weather", "{\"city\":\"Paris\",\"days\":2}", "now", "{}"};
    check_parse(ELM_TEMPLATE_LFM2, NULL, "Checking.<|tool_call_start|>[get_weather(city=\"Paris\", "
                "days=2), now()]<|tool_call_end|> Done.", 2, two, "Checking. Done.");
    /* the escapes decode to UTF-8; JSON-isms (true, \/, surrogate pairs) are read too */
    const char *lit[] = {"f", "{\"s\":\"it's \xC3\xA9\\n\\\"\",\"n\":-12,\"x\":1500,\"b\":true,\"z\":null,"
             "\"l\":[1,\"a\",[2,3]],\"d\":{\"k\":false,\"j\":[null]},\"e\":\"\xC3\xA9/"
             "\xF0\x9F\x98\x80\",\"t\":true}"};
    check_parse(ELM_TEMPLATE_LFM25, NULL, "<|tool_call_start|>[ f( s='it\\'s \\u00e9\\n\"' , n=-12, "
                "x=1.5e3, b=True, z=None, l=[1, 'a', (2, 3)], d={'k': False, \"j\": [None]}, "
                "e=\"\\xe9\\/\\ud83d\\ude00\", t=true,) ]<|tool_call_end|>", 1, lit, "");
    /* cut short: inside the first call, or after a complete one */
    check_parse(ELM_TEMPLATE_LFM2, NULL, "Sure.<|tool_call_start|>[get_weather(city=\"Par", 0, NULL,
                "Sure.");
    const char *first[] = {"now", "{}"};
    check_parse(ELM_TEMPLATE_LFM2, NULL, "<|tool_call_start|>[now(), get_weather(city=Tr", 1, first,
                "");
    check_parse(ELM_TEMPLATE_LFM2, NULL, "<|tool_call_start|>[now(), get_weather(days=1", 1, first,
                "");
    check_parse(ELM_TEMPLATE_LFM2, NULL, "No calls here.", 0, NULL, "No calls here.");
    const char *bad[] = {"<|tool_call_start|>[get_weather(\"Paris\")]<|tool_call_end|>",
                         "<|tool_call_start|>get_weather(city=\"x\")<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=1) junk]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=1, a=2)]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=undefined)]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a={1: 2})]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=\"x)]<|tool_call_end|>",
                         "<|tool_call_start|>[]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=\"\\ud800\")]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=\"\\x00\")]<|tool_call_end|>",
                         "<|tool_call_start|>[f(a=1.2.3)]<|tool_call_end|>"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        elm_tool_calls c;
        elm_error err;
        CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_LFM2, NULL, bad[i], &c, &err) == ELM_ERR_FORMAT &&
                  strstr(err.msg, "tool call "), "lfm2 malformed %s: %s", bad[i], err.msg);
    }
}

static void families_parse(void) {
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"s\": {\"type\": \"string\"}, \"n\": {\"type\": \"integer\"}, "
        "\"b\": {\"type\": \"boolean\"}, \"o\": {\"type\": \"object\"}}}}}]";
    const char *xml = "I will call.\n\n<tool_call>\n<function=f>\n<parameter=s>\n12\nline two\n"
                      "</parameter>\n<parameter=n>\n12\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n"
                      "<parameter=o>\n{\"k\": [1, \"x\"]}\n</parameter>\n</function>\n</tool_call>\n"
                      "<tool_call>\n<function=g>\n</function>\n</tool_call>";
    const char *want_xml[] = {"f", "{\"s\":\"12\\nline two\",\"n\":12,\"b\":true,\"o\":{\"k\":[1,\"x\"]}}",
                              "g", "{}"};
    check_parse(ELM_TEMPLATE_QWEN35, tools, xml, 2, want_xml, "I will call.");
    /* without the tools, values are read as JSON where they parse */
    const char *want_untyped[] = {"f", "{\"s\":\"12\\nline two\",\"n\":12,\"b\":true,\"o\":{\"k\":[1,\"x\"]}}",
                                  "g", "{}"};
    check_parse(ELM_TEMPLATE_QWEN35_NO_THINK, NULL, xml, 2, want_untyped, "I will call.");
    /* cut short: the last call is dropped */
    check_parse(ELM_TEMPLATE_QWEN35, tools, "<tool_call>\n<function=f>\n<parameter=s>\nab", 0,
                NULL, "");
    elm_tool_calls c;
    elm_error err;
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_QWEN35, tools, "<tool_call>\nf()\n</tool_call>",
                                    &c, &err) == ELM_ERR_FORMAT && strstr(err.msg, "tool call 0"),
          "xml bad call: %s", err.msg);
    const char *want_llama[] = {"get_weather", "{\"city\":\"Paris\"}"};
    check_parse(ELM_TEMPLATE_LLAMA32, NULL,
                "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", 1, want_llama, "");
    check_parse(ELM_TEMPLATE_LLAMA31, NULL, "It is {\"name\": \"get_weather\", \"parameters\": "
                "{\"city\": \"Paris\"", 0, NULL, "It is {\"name\": \"get_weather\", \"parameters\": "
                "{\"city\": \"Paris\"");
    check_parse(ELM_TEMPLATE_LLAMA31, NULL, "Sunny today.", 0, NULL, "Sunny today.");
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_LLAMA31, NULL, "{\"name\": 3, \"parameters\": {}}",
                                    &c, &err) == ELM_ERR_FORMAT, "llama bad call");
    const char *want_granite[] = {"now", "{}"};
    check_parse(ELM_TEMPLATE_GRANITE4, NULL, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n"
                "</tool_call>", 1, want_granite, "");
    /* Gemma 4: its value syntax, keys bare or quoted, None as null; a call without its close is
     * cut short; one that does not read is an error */
    const char *want_gemma[] = {"f", ("{\"b\":true,\"n\":12,\"o\":{\"k\":[1,\"x<|\",null]},"
                                      "\"s\":\"a, {b}: \\\"c\\\"\\nd\"}"), "g", "{}"};
    check_parse(ELM_TEMPLATE_GEMMA4, tools, "Let me see.<|tool_call>call:f{b:true,n:12,"
                "o:{<|\"|>k<|\"|>:[1,<|\"|>x<|<|\"|>,None]},s:<|\"|>a, {b}: \"c\"\nd<|\"|>}"
                "<tool_call|><|tool_call>call:g{}<tool_call|>", 2, want_gemma, "Let me see.");
    check_parse(ELM_TEMPLATE_GEMMA4_THINK, tools, "<|tool_call>call:f{s:<|\"|>ab", 0, NULL, "");
    const char *bad_gemma[] = {"<|tool_call>call:f{s:}<tool_call|>", "<|tool_call>f{}<tool_call|>",
                               "<|tool_call>call:{}<tool_call|>", "<|tool_call>call:f{a:1}x<tool_call|>",
                               "<|tool_call>call:f[1]<tool_call|>", "<|tool_call>call:f{a:<|\"|>x}<tool_call|>"};
    for (size_t i = 0; i < sizeof bad_gemma / sizeof *bad_gemma; i++)
        CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_GEMMA4, tools, bad_gemma[i], &c, &err) ==
                  ELM_ERR_FORMAT && strstr(err.msg, "call:NAME{ARGUMENTS}"),
              "gemma4 bad call %zu: %s", i, err.msg);
    CHECK(!strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_GEMMA4), "<|tool_call>"), "gemma4 opening");
    /* Phi-4-mini: a JSON list after functools; cut short, no call; complete and wrong, an error */
    const char *want_phi[] = {"f", "{\"s\":\"x]\"}", "g", "{}"};
    check_parse(ELM_TEMPLATE_PHI4_MINI, tools, "Checking. functools[{\"name\": \"f\", \"arguments\": "
                "{\"s\": \"x]\"}}, {\"name\": \"g\", \"arguments\": {}}]", 2, want_phi, "Checking.");
    check_parse(ELM_TEMPLATE_PHI4_MINI, tools, "functools[{\"name\": \"f\", \"argu", 0, NULL, "");
    /* cut short after complete calls (max_tokens): those are kept */
    check_parse(ELM_TEMPLATE_PHI4_MINI, tools, "Checking. functools[{\"name\": \"f\", \"arguments\": "
                "{\"s\": \"x]\"}}, {\"name\": \"g\", \"arguments\": {}}, {\"name\": \"g\", \"argu", 2,
                want_phi, "Checking.");
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_PHI4_MINI, tools, "functools[{\"name\": \"f\"}]",
                                    &c, &err) == ELM_ERR_FORMAT, "phi4 call without arguments");
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_PHI4_MINI, tools, "functools[{\"name\" 1}]", &c,
                                    &err) == ELM_ERR_FORMAT, "phi4 list that does not parse");
    /* Mistral's calls one after another, a call id (Mistral Small 3.2's) skipped; the text
     * before them (reasoning too) is the content */
    const char *mistral = "[THINK]Weather.[/THINK]Checking.[TOOL_CALLS]get_weather[ARGS]{\"city\": "
                          "\"Paris\", \"days\": 2}[TOOL_CALLS]now[CALL_ID]a1b2c3d4e[ARGS]{}";
    const char *want_mistral[] = {"get_weather", "{\"city\":\"Paris\",\"days\":2}", "now", "{}"};
    check_parse(ELM_TEMPLATE_MINISTRAL3, NULL, mistral, 2, want_mistral,
                "[THINK]Weather.[/THINK]Checking.");
    /* cut short: in the arguments, or before them */
    check_parse(ELM_TEMPLATE_MINISTRAL3, NULL, "[TOOL_CALLS]now[ARGS]{}[TOOL_CALLS]get_weather[ARGS]"
                "{\"city\": \"Pa", 1, want_mistral + 2, "");
    check_parse(ELM_TEMPLATE_MINISTRAL3, NULL, "Hi[TOOL_CALLS]get_wea", 0, NULL, "Hi");
    check_parse(ELM_TEMPLATE_MINISTRAL3, NULL, "Sunny today.", 0, NULL, "Sunny today.");
    const char *bad_mistral[] = {"[TOOL_CALLS]now[ARGS][1]", "[TOOL_CALLS][ARGS]{}",
                                 "[TOOL_CALLS]now[ARGS]{\"a\"[TOOL_CALLS]now[ARGS]{}",
                                 "[TOOL_CALLS]now[TOOL_CALLS]now[ARGS]{}"};
    for (size_t i = 0; i < sizeof bad_mistral / sizeof bad_mistral[0]; i++)
        CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_MINISTRAL3, NULL, bad_mistral[i], &c, &err) ==
                  ELM_ERR_FORMAT && strstr(err.msg, "tool call "), "mistral bad call %zu: %s", i,
              err.msg);
    check_parse(ELM_TEMPLATE_MISTRAL_SMALL32, NULL, mistral, 2, want_mistral,
                "[THINK]Weather.[/THINK]Checking.");
    /* Nemo's: one JSON list, an id the model writes ignored; cut short: no call */
    check_parse(ELM_TEMPLATE_MISTRAL_NEMO, NULL, "Checking.[TOOL_CALLS][{\"name\": \"get_weather\", "
                "\"arguments\": {\"city\": \"Paris\", \"days\": 2}, \"id\": \"a1b2c3d4e\"}, {\"name\": "
                "\"now\", \"arguments\": {}}]", 2, want_mistral, "Checking.");
    check_parse(ELM_TEMPLATE_MISTRAL_NEMO, NULL, "[TOOL_CALLS][{\"name\": \"now\", \"argu", 0, NULL, "");
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_MISTRAL_NEMO, NULL, "[TOOL_CALLS][{\"name\": \"now\"}]",
                                    &c, &err) == ELM_ERR_FORMAT && strstr(err.msg, "tool call 0"),
          "nemo bad call: %s", err.msg);
    CHECK(elm_chat_parse_tool_calls(ELM_TEMPLATE_MISTRAL_NEMO, NULL, "[TOOL_CALLS]{\"name\": \"now\"}",
                                    &c, &err) == ELM_ERR_FORMAT, "nemo not a list: %s", err.msg);
    CHECK(!strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_MINISTRAL3), "[TOOL_CALLS]") &&
              !strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_MISTRAL_SMALL32), "[TOOL_CALLS]"),
          "mistral open");
    lfm2_parse();
    CHECK(!strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_LLAMA32), "{\"name\": \"") &&
              !strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_LFM25), "<|tool_call_start|>") &&
              !strcmp(elm_chat_tool_call_open(ELM_TEMPLATE_QWEN35), "<tool_call>") &&
              !elm_chat_tool_call_open(ELM_TEMPLATE_LLAMA3), "call openings");
}

/* The grammar of t's calls (parallel, not lazy) matches each of good [ng] and none of wrong. */
static void check_grammar(elm_chat_template t, const char *tools, bool lazy, const char *const *good,
                          int ng, const char *const *wrong, int nw) {
    char *gbnf = NULL;
    elm_error err;
    elm_grammar *g = NULL;
    CHECK(elm_chat_tool_grammar(t, tools, NULL, true, lazy, &gbnf, NULL, &err) == ELM_OK &&
              elm_grammar_parse(gbnf, strlen(gbnf), "tools", &g, &err) == ELM_OK,
          "%s grammar: %s\n%s", elm_chat_template_name(t), err.msg, gbnf ? gbnf : "");
    for (int i = 0; g && i < ng; i++)
        CHECK(elm_grammar_match_text(g, good[i], strlen(good[i])) == 2, "%s refused: %s",
              elm_chat_template_name(t), good[i]);
    for (int i = 0; g && i < nw; i++)
        CHECK(elm_grammar_match_text(g, wrong[i], strlen(wrong[i])) != 2, "%s matched: %s",
              elm_chat_template_name(t), wrong[i]);
    elm_grammar_free(g);
    free(gbnf);
}

/* LFM2's calls: keyword arguments in the schema's order, each a Python literal under its
 * schema; what Python's syntax cannot say is refused. */
static void lfm2_grammar(const char *tools) {
    const char *good[] = {
        "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>",
        ("<|tool_call_start|>[get_weather(city=\"New \\\"York\\\"\", days=7, unit=\"F\", tags=[\"a\", "
         "\"bcd\"]), now(x=1, y=True, z=[None, {\"k\": False}])]<|tool_call_end|>"),
        "<|tool_call_start|>[get_weather(city=\"P\", unit=\"C\")]<|tool_call_end|>",
        "<|tool_call_start|>[now()]<|tool_call_end|>"};
    const char *wrong[] = {
        "<|tool_call_start|>[get_weather()]<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(city=\"P\", days=8)]<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(city=\"P\", unit=\"K\")]<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(city=\"P\", tags=[\"abcd\"])]<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(days=2, city=\"P\")]<|tool_call_end|>",
        "<|tool_call_start|>[get_weather(city=\"P\",)]<|tool_call_end|>",
        "<|tool_call_start|>[now(y=true)]<|tool_call_end|>",
        "<|tool_call_start|>[now()]",
        "[now()]<|tool_call_end|>"};
    check_grammar(ELM_TEMPLATE_LFM2, tools, false, good, 4, wrong, 9);
    const char *lazy[] = {"[now(), now()]<|tool_call_end|>"};
    check_grammar(ELM_TEMPLATE_LFM25, tools, true, lazy, 1, good, 1);
    const char *flag = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                       "{\"type\": \"object\", \"properties\": {\"on\": {\"type\": \"boolean\"}, "
                       "\"c\": {\"const\": null}}, \"required\": [\"on\", \"c\"]}}}]";
    const char *flag_good[] = {"<|tool_call_start|>[f(on=False, c=None)]<|tool_call_end|>"};
    const char *flag_wrong[] = {"<|tool_call_start|>[f(on=false, c=None)]<|tool_call_end|>",
                                "<|tool_call_start|>[f(on=True, c=null)]<|tool_call_end|>"};
    check_grammar(ELM_TEMPLATE_LFM2, flag, false, flag_good, 1, flag_wrong, 2);
    const char *refused[] = {
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"a-b\": {\"type\": \"string\"}}}}}]",
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"a\": {\"const\": [true]}}}}}]",
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"array\"}}}]"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *gbnf = NULL;
        elm_error err;
        CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_LFM2, refused[i], NULL, true, false, &gbnf, NULL,
                                    &err) == ELM_ERR_UNSUPPORTED &&
                  strstr(err.msg, "tools[0].function.parameters"),
              "lfm2 refused %zu: %s", i, err.msg);
        free(gbnf);
    }
}

static void families_grammar(void) {
    static const char tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "
        "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}, \"unit\": {\"enum\": [\"C\", \"F\"]}, "
        "\"tags\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/tag\"}}}, "
        "\"required\": [\"city\"], \"$defs\": {\"tag\": {\"type\": \"string\", \"maxLength\": 3}}}}}, "
        "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    const char *xml_good[] = {
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\nNew\n</param\n<York>\n</parameter>\n"
        "<parameter=days>\n7\n</parameter>\n<parameter=unit>\nF\n</parameter>\n<parameter=tags>\n"
        "[\"a\", \"bcd\"]\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=now>\n"
        "<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>"),
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\nends in\n</parameter\n</parameter>\n"
        "</function>\n</tool_call>")};
    const char *xml_wrong[] = {
        "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=days>\n8\n"
        "</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=unit>\nK\n"
        "</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=tags>\n"
        "[\"abcd\"]\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n<parameter=city>\nP\n"
        "</parameter>\n</function>\n</tool_call>"};
    check_grammar(ELM_TEMPLATE_QWEN35, tools, false, xml_good, 3, xml_wrong, 5);
    const char *llama_good[] = {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}",
                                "{\"name\": \"now\", \"parameters\": {}}"};
    const char *llama_wrong[] = {"{\"name\": \"get_weather\", \"parameters\": {}}",
                                 "{\"name\": \"now\", \"parameters\": {}}{\"name\": \"now\", \"parameters\": {}}",
                                 "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"};
    check_grammar(ELM_TEMPLATE_LLAMA32, tools, false, llama_good, 2, llama_wrong, 3);
    const char *llama_lazy[] = {"now\", \"parameters\": {}}"};
    check_grammar(ELM_TEMPLATE_LLAMA31, tools, true, llama_lazy, 1, llama_good, 1);
    const char *granite_good[] = {"<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"};
    check_grammar(ELM_TEMPLATE_GRANITE4, tools, false, granite_good, 1, llama_good, 1);
    /* Gemma 4: its value syntax, the keys in dictsort's order (Unit after days, before city's
     * successor), strings raw up to the quote token, null as None */
    static const char gemma_tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
        "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "
        "{\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}, \"Unit\": {\"enum\": [\"C\", \"F\"]}, "
        "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"maxLength\": 3}}, "
        "\"at\": {\"type\": [\"string\", \"null\"], \"format\": \"date\"}}, "
        "\"required\": [\"city\"]}}}, {\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
    const char *gemma_good[] = {
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
        ("<|tool_call>call:get_weather{at:<|\"|>2026-02-28<|\"|>,city:<|\"|>New\n<|York <| \"|> <|\"<|\"|>,"
         "days:7,tags:[<|\"|>ab<|\"|>,<|\"|><|\"|>],Unit:<|\"|>F<|\"|>}<tool_call|>"
         "<|tool_call>call:now{k:[1,None]}<tool_call|>"),
        "<|tool_call>call:get_weather{at:None,city:<|\"|><|\"|>}<tool_call|>"};
    const char *gemma_wrong[] = {
        "<|tool_call>call:get_weather{}<tool_call|>",
        "<|tool_call>call:get_weather{city:<|\"|>P<|\"|>,days:8}<tool_call|>",
        "<|tool_call>call:get_weather{Unit:<|\"|>F<|\"|>,city:<|\"|>P<|\"|>}<tool_call|>",
        "<|tool_call>call:get_weather{city:<|\"|>P<|\"|>,tags:[<|\"|>abcd<|\"|>]}<tool_call|>",
        "<|tool_call>call:get_weather{city:<|\"|>P<|\"|>,tags:[<|\"|>a<b<|\"|>]}<tool_call|>",
        "<|tool_call>call:get_weather{\"city\": \"P\"}<tool_call|>",
        "<|tool_call>call:get_weather{at:<|\"|>2026-02-30<|\"|>,city:<|\"|>P<|\"|>}<tool_call|>",
        "<|tool_call>call:get_weather{city:<|\"|>P<|\"|> }<tool_call|>"};
    check_grammar(ELM_TEMPLATE_GEMMA4, gemma_tools, false, gemma_good, 3, gemma_wrong, 8);
    const char *phi_good[] = {"functools[{\"name\": \"now\", \"arguments\": {}}, {\"name\": "
                              "\"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}]"};
    const char *phi_wrong[] = {"functools[{\"name\": \"now\", \"arguments\": {}}",
                               "functools[{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}]",
                               "[{\"name\": \"now\", \"arguments\": {}}]"};
    check_grammar(ELM_TEMPLATE_PHI4_MINI, tools, false, phi_good, 1, phi_wrong, 3);
    /* a function of no arguments (additionalProperties false): called with none in the
     * syntaxes that write each argument alone; a required name they do not list is refused */
    static const char none_tools[] =
        "[{\"type\": \"function\", \"function\": {\"name\": \"ping\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {}, \"additionalProperties\": false}}}]";
    const char *lfm2_none[] = {"<|tool_call_start|>[ping()]<|tool_call_end|>"},
               *lfm2_some[] = {"<|tool_call_start|>[ping(a=1)]<|tool_call_end|>"};
    check_grammar(ELM_TEMPLATE_LFM2, none_tools, false, lfm2_none, 1, lfm2_some, 1);
    const char *xml_none[] = {"<tool_call>\n<function=ping>\n</function>\n</tool_call>"},
               *xml_some[] = {"<tool_call>\n<function=ping>\n<parameter=a>\n1\n</parameter>\n"
                              "</function>\n</tool_call>"};
    check_grammar(ELM_TEMPLATE_QWEN35, none_tools, false, xml_none, 1, xml_some, 1);
    static const char *const bad_required[] = {
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"a\": {}}, \"required\": \"a\"}}}]",
        "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"a\": {}}, \"required\": [\"zz\"]}}}]"};
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 2; t++) {
            char *bad = NULL;
            elm_error e2;
            CHECK(elm_chat_tool_grammar(t ? ELM_TEMPLATE_LFM2 : ELM_TEMPLATE_QWEN35,
                                        bad_required[b], NULL, true, false, &bad, NULL, &e2) !=
                          ELM_OK && strstr(e2.msg, "tools[0].function.parameters.required"),
                  "required %d on %d: %s", b, t, e2.msg);
            free(bad);
        }
    const char *gemma_lazy[] = {"call:now{}<tool_call|>"};
    check_grammar(ELM_TEMPLATE_GEMMA4_THINK, gemma_tools, true, gemma_lazy, 1, gemma_good, 1);
    const char *mistral_good[] = {
        "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\", \"days\": 3, \"unit\": \"C\"}",
        "[TOOL_CALLS]now[ARGS]{}[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Rome\",\"tags\":[\"abc\"]}"};
    const char *mistral_wrong[] = {"[TOOL_CALLS]get_weather[ARGS]{}",
                                   "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"P\", \"days\": 8}",
                                   "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"P\", \"tags\": [\"abcd\"]}",
                                   "[TOOL_CALLS]nothing[ARGS]{}", "Hello[TOOL_CALLS]now[ARGS]{}",
                                   "[TOOL_CALLS]now[ARGS]{}\n"};
    check_grammar(ELM_TEMPLATE_MINISTRAL3, tools, false, mistral_good, 2, mistral_wrong, 6);
    /* lazy: after the trigger [TOOL_CALLS], the name */
    const char *mistral_lazy[] = {"now[ARGS]{}", "now[ARGS]{}[TOOL_CALLS]now[ARGS]{}"};
    check_grammar(ELM_TEMPLATE_MINISTRAL3, tools, true, mistral_lazy, 2, mistral_good, 1);
    /* Mistral Small 3.2's template writes call ids: a call may hold one of 9 letters and digits */
    const char *ids_good[] = {mistral_good[0], mistral_good[1],
                              "[TOOL_CALLS]now[CALL_ID]a1b2c3d4e[ARGS]{}"};
    const char *ids_wrong[] = {"[TOOL_CALLS]now[CALL_ID]a1b2[ARGS]{}", "[TOOL_CALLS]now[CALL_ID][ARGS]{}",
                               mistral_wrong[0]};
    check_grammar(ELM_TEMPLATE_MISTRAL_SMALL32, tools, false, ids_good, 3, ids_wrong, 3);
    check_grammar(ELM_TEMPLATE_MINISTRAL3, tools, false, NULL, 0, ids_good + 2, 1);
    /* Nemo's: one JSON list, each call with an id or not */
    const char *nemo_good[] = {
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
        "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}, \"id\": \"a1b2c3d4e\"}, {\"name\": "
        "\"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 7}}]"};
    const char *nemo_wrong[] = {
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {}}]",
        "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}, \"id\": \"a1\"}]",
        "[TOOL_CALLS]{\"name\": \"now\", \"arguments\": {}}", mistral_good[0]};
    check_grammar(ELM_TEMPLATE_MISTRAL_NEMO, tools, false, nemo_good, 2, nemo_wrong, 4);
    const char *nemo_lazy[] = {"[{\"name\": \"now\", \"arguments\": {}}]"};
    check_grammar(ELM_TEMPLATE_MISTRAL_NEMO, tools, true, nemo_lazy, 1, nemo_good, 1);
    lfm2_grammar(tools);
    char *gbnf = NULL;
    elm_error err;
    const char *colon_key = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                            "{\"type\": \"object\", \"properties\": {\"a:b\": {}}}}}]";
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_GEMMA4, colon_key, NULL, true, false, &gbnf, NULL, &err) ==
              ELM_ERR_UNSUPPORTED && strstr(err.msg, "a:b") && strstr(err.msg, "tools[0]"),
          "gemma4 key with a colon: %s", err.msg);
    const char *top_any = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                          "{\"anyOf\": [{\"type\": \"object\"}]}}}]";
    CHECK(elm_chat_tool_grammar(ELM_TEMPLATE_QWEN35, top_any, NULL, true, false, &gbnf, NULL, &err) ==
              ELM_ERR_UNSUPPORTED && strstr(err.msg, "tools[0].function.parameters"),
          "xml anyOf: %s", err.msg);
    const char *root_ref = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                           "{\"type\": \"object\", \"properties\": {\"next\": {\"$ref\": \"#\"}}}}}]";
    const char *nested[] = {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"next\": {\"next\": {}}}}\n</tool_call>"};
    check_grammar(ELM_TEMPLATE_QWEN3, root_ref, false, nested, 1, NULL, 0);
}

/* tool_choice against the tools and the template, as the server and Python read it */
static void tools_choice(void) {
    static const char tools[] = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}]";
    static const struct {
        elm_chat_template t;
        const char *tools, *choice;
        elm_status st;
        elm_tool_mode mode;
        const char *only, *msg;
    } cases[] = {
        {ELM_TEMPLATE_QWEN3, tools, NULL, ELM_OK, ELM_TOOL_CHOICE_AUTO, "", NULL},
        {ELM_TEMPLATE_QWEN3, NULL, NULL, ELM_OK, ELM_TOOL_CHOICE_NONE, "", NULL},
        {ELM_TEMPLATE_QWEN3, "[]", "\"none\"", ELM_OK, ELM_TOOL_CHOICE_NONE, "", NULL},
        {ELM_TEMPLATE_QWEN3, tools, "\"none\"", ELM_OK, ELM_TOOL_CHOICE_NONE, "", NULL},
        {ELM_TEMPLATE_QWEN3, tools, "\"required\"", ELM_OK, ELM_TOOL_CHOICE_REQUIRED, "", NULL},
        {ELM_TEMPLATE_LLAMA32, tools, "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}",
         ELM_OK, ELM_TOOL_CHOICE_REQUIRED, "get_weather", NULL},
        {ELM_TEMPLATE_QWEN3, NULL, "\"auto\"", ELM_ERR_ARG, 0, "", "tool_choice: no tools given"},
        {ELM_TEMPLATE_QWEN3, tools, "\"sometimes\"", ELM_ERR_ARG, 0, "", "tool_choice: expected \"none\""},
        {ELM_TEMPLATE_QWEN3, tools, "{\"function\": {\"name\": \"a b\"}}", ELM_ERR_ARG, 0, "",
         "tool_choice: expected a string or"},
        {ELM_TEMPLATE_QWEN3, "{}", NULL, ELM_ERR_ARG, 0, "", "tools: expected an array"},
        {ELM_TEMPLATE_CHATML, tools, NULL, ELM_ERR_UNSUPPORTED, 0, "",
         "tools: the chat template chatml has no tool calls in edgelm (qwen3, "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        elm_tool_choice c;
        elm_error err = {0};
        const elm_status st = elm_tool_choice_parse(cases[i].t, cases[i].tools, cases[i].choice, &c, &err);
        CHECK(st == cases[i].st, "choice %zu: status %d, want %d (%s)", i, st, cases[i].st, err.msg);
        if (st == ELM_OK && cases[i].st == ELM_OK)
            CHECK(c.mode == cases[i].mode && !strcmp(c.only, cases[i].only), "choice %zu: mode %d "
                  "only '%s'", i, c.mode, c.only);
        if (cases[i].msg)
            CHECK(!strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)), "choice %zu: '%s'", i, err.msg);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    tools_render();
    tools_parse();
    tools_grammar();
    families_render();
    families_parse();
    families_grammar();
    tools_choice();
    return check_done();
}
