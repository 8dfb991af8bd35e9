/* libFuzzer harness: GBNF grammars (elm_grammar_parse). The first byte says where the input is cut
 * in two: the grammar, then a text. A grammar that parses is matched against the text, and a
 * matcher over the stories260K vocabulary masks, allows and accepts tokens of the text's
 * encoding as far as they are allowed; a refused grammar must have a one-line message naming
 * it. */
#include "edgelm/grammar.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const elm_model *m = fuzz_model();
    if (size == 0) return 0;
    size_t cut = 1 + (size - 1) * data[0] / 256;
    char *gbnf = malloc(cut), *text = malloc(size - cut + 1);
    if (!gbnf || !text) abort();
    memcpy(gbnf, data + 1, cut - 1);
    memcpy(text, data + cut, size - cut);
    elm_grammar *g = NULL;
    elm_error err;
    const elm_status st = elm_grammar_parse(gbnf, cut - 1, "fuzz.gbnf", &g, &err);
    fuzz_check_error(st, &err, "fuzz.gbnf");
    if (st == ELM_OK) {
        const int r = elm_grammar_match_text(g, text, size - cut);
        if (r < 0 || r > 2) abort();
        elm_grammar_vocab *gv = elm_grammar_vocab_new(&m->vocab, &m->vocab.eos_id, 1);
        elm_grammar_matcher *gm = gv ? elm_grammar_matcher_new(g, gv) : NULL;
        int32_t ids[64];
        const int64_t n = elm_tokenize(&m->vocab, text, size - cut, false, ids, 64, &err);
        float *logits = calloc((size_t)m->hp.n_vocab, sizeof *logits);
        for (int64_t i = 0; gm && logits && i < n && i < 64; i++) {
            const int32_t allowed = elm_grammar_mask(gm, logits);
            const bool ok = elm_grammar_allows(gm, ids[i]);
            if (ok != (logits[ids[i]] == 0) || allowed < (int32_t)ok) abort();
            if (!ok) break;
            if (elm_grammar_accept(gm, ids[i], &err)) abort();
            for (int32_t k = 0; k < m->hp.n_vocab; k++) logits[k] = 0;
        }
        free(logits);
        elm_grammar_matcher_free(gm);
        elm_grammar_vocab_free(gv);
    }
    elm_grammar_free(g);
    free(gbnf);
    free(text);
    return 0;
}
