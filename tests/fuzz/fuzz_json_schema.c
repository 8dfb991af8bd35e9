/* libFuzzer harness: JSON-schema translation (elm_json_schema_to_gbnf) of arbitrary bytes. A
 * schema that translates must give GBNF the grammar parser takes (no syntax error, undefined
 * rule, left recursion or oversized repetition may slip out of the translation); one that does
 * not must say why, in one line naming the schema. */
#include "edgelm/grammar.h"
#include "fuzz.h"

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
    return 0;
}
