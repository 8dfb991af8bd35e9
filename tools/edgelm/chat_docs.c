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
    elm_hit *hits = NULL;
    int32_t n = 0;
    elm_docs_prompt p = {0};
    const int32_t n_ctx = elm_context_n_ctx(c);
    const elm_chat_msg msgs[2] = {{.role = "system", .content = d->system},
                                  {.role = "user", .content = question}};
    const int skip = d->system ? 0 : 1;
    bool ok = false;
    if (elm_retrieve(d->docs.ix, d->docs.ctx, question, d->docs.mode, d->k, &hits, &n, &err))
        cli_fail("chat: --docs: %s", err.msg);
    else if (elm_docs_prompt_build(&elm_context_model(c)->vocab, d->tmpl, msgs + skip, 2 - skip,
                                   NULL, hits, n, n_ctx, d->n_reply, &p, &err))
        cli_fail("chat: --docs: %s (-c, -n)", err.msg);
    else if (elm_chat_set_system(ch, p.system, &err))
        cli_fail("chat: %s", err.msg);
    else {
        if (p.n_docs < n)
            fprintf(stderr, "edgelm: --docs: %d of the %d chunks retrieved fit the context of %d "
                            "tokens with %d for the reply; the %d lowest-ranked were left out\n",
                    (int)p.n_docs, (int)n, (int)n_ctx, (int)d->n_reply, (int)(n - p.n_docs));
        if (d->verbose) {
            char note[64];
            snprintf(note, sizeof note, "(%d tokens, %d of %d chunks)", (int)p.n_tokens, (int)p.n_docs, (int)n);
            chat_print_prompt(p.text, note);
        }
        ok = !elm_chat_turn(ch, question, cb, NULL, stats, &err);
        fputc('\n', stdout);
        if (ok) print_sources(hits, p.n_docs);
        else cli_fail("chat: %s", err.msg);
    }
    elm_docs_prompt_free(&p);
    elm_hits_free(hits, n);
    return ok;
}
