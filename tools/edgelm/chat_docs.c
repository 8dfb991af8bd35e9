/* Questions answered from a document index in `edgelm chat` (see chat_docs.h). */
#include <stdio.h>

#include "chat_docs.h"
#include "cli.h"

void chat_print_prompt(const char *text, const char *note) {
    fprintf(stderr, "edgelm: prompt%s%s:\n%s\nedgelm: end of prompt\n", note ? " " : "",
            note ? note : "", text);
}

static void print_sources(const elm_hit *h, int32_t n) {
    puts(n ? "Sources:" : "Sources: none (no chunk matched the question)");
    for (int32_t i = 0; i < n; i++)
        printf("[%d] %s:%d-%d%s%s\n", (int)i + 1, h[i].file, (int)h[i].line_start,
               (int)h[i].line_end, h[i].heading[0] ? "  " : "", h[i].heading);
    fflush(stdout);
}

bool chat_docs_turn(const chat_docs *d, elm_chat *ch, const elm_context *c, const char *question,
                    elm_token_cb cb, elm_gen_stats *stats) {
    elm_error err;
    elm_docs_turn t;
    const elm_docs_turn_params p = {.ix = d->docs.ix, .embed = d->docs.ctx, .mode = d->docs.mode,
                                    .k = d->k, .tmpl = d->tmpl, .system = d->system,
                                    .n_reply = d->n_reply};
    if (elm_docs_turn_prepare(ch, c, &p, question, &t, &err)) {
        cli_fail("chat: --docs: %s", err.msg);
        return false;
    }
    const int32_t n = t.n_hits, kept = t.prompt.n_docs;
    if (kept < n)
        fprintf(stderr, "edgelm: --docs: %d of the %d chunks retrieved fit the context of %d "
                        "tokens with %d for the reply; the %d lowest-ranked were left out\n",
                (int)kept, (int)n, (int)elm_context_n_ctx(c), (int)d->n_reply, (int)(n - kept));
    if (d->verbose) {
        char note[64];
        snprintf(note, sizeof note, "(%d tokens, %d of %d chunks)", (int)t.prompt.n_tokens,
                 (int)kept, (int)n);
        chat_print_prompt(t.prompt.text, note);
    }
    const bool ok = !elm_chat_turn(ch, question, cb, NULL, stats, &err);
    fputc('\n', stdout);
    if (ok) print_sources(t.hits, kept);
    else cli_fail("chat: %s", err.msg);
    elm_docs_turn_free(&t);
    return ok;
}
