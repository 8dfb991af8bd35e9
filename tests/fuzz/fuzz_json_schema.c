/* libFuzzer harness: JSON-schema translation (elm_json_schema_to_gbnf) of arbitrary bytes. A
 * schema that translates must give GBNF the grammar parser takes (no syntax error, undefined
 * rule, left recursion or oversized repetition may slip out of the translation); one that does
 * not must say why, in one line naming the schema. The same bytes as a tool's parameters, in
 * the JSON of Qwen3's calls and in Gemma 4's value syntax (the translator's other dialect). */
#include "edgelm/chat.h"
#include "edgelm/grammar.h"
#include "fuzz.h"

/* The tool-call grammar of template t for one function with parameters `schema`: it parses. */
static void tool_grammar(elm_chat_template t, const uint8_t *schema, size_t size) {
    static const char head[] = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                               "\"parameters\": ";
    char *tools = malloc(sizeof head + size + 4);
    if (!tools) return;
    memcpy(tools, head, sizeof head - 1);
    memcpy(tools + sizeof head - 1, schema, size);
    memcpy(tools + sizeof head - 1 + size, "}}]", 4);
    char *gbnf = NULL;
    elm_error err = {0};
    if (elm_chat_tool_grammar(t, tools, NULL, true, false, &gbnf, NULL, &err) == ELM_OK) {
        elm_grammar *g = NULL;
        if (!gbnf || elm_grammar_parse(gbnf, strlen(gbnf), "tools.gbnf", &g, &err) != ELM_OK) {
            fprintf(stderr, "tool grammar does not parse: %s\n%s\n", err.msg, gbnf ? gbnf : "");
            abort();
        }
        elm_grammar_free(g);
    } else if (!err.msg[0]) {
        abort();
    }
    free(gbnf);
    free(tools);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *gbnf = NULL;
    elm_error err = {0};
    const elm_status st =
        elm_json_schema_to_gbnf((const char *)data, size, "schema.json", &gbnf, &err);
    fuzz_check_error(st, &err, "schema.json");
    if (st != ELM_OK && !err.msg[0]) abort();
    if (st == ELM_OK) {
        elm_grammar *g = NULL;
        if (!gbnf || elm_grammar_parse(gbnf, strlen(gbnf), "generated.gbnf", &g, &err) != ELM_OK) {
            fprintf(stderr, "generated GBNF does not parse: %s\n%s\n", err.msg,
                    gbnf ? gbnf : "(null)");
            abort();
        }
        elm_grammar_free(g);
    }
    free(gbnf);
    if (!memchr(data, 0, size)) {
        tool_grammar(ELM_TEMPLATE_QWEN3, data, size);
        tool_grammar(ELM_TEMPLATE_GEMMA4, data, size);
    }
    return 0;
}
