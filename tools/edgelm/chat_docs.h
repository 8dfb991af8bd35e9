/* `edgelm chat --docs DB`: each message is a question answered from the index's chunks
 * (edgelm/rag.h): the top k retrieved, as many of them as fit put into the "rag" preset's system
 * prompt (elm_docs_prompt_build), the conversation restarted with that prompt, the reply
 * streamed, then its sources listed. */
#ifndef EDGELM_TOOLS_CHAT_DOCS_H
#define EDGELM_TOOLS_CHAT_DOCS_H

#include <stdbool.h>
#include "docs.h"

typedef struct chat_docs {
    cli_docs docs;
    int32_t k;            /* chunks retrieved per question */
    elm_chat_template tmpl;
    const char *system;   /* --system: added after the preset's instructions, or NULL */
    int32_t n_reply;      /* tokens of the context kept for the reply (-n) */
    bool verbose;         /* --verbose-prompt: each prompt on stderr before its reply */
} chat_docs;

/* Answers question on ch, a chat on context c (whose size bounds the prompt), streaming the reply to cb,
 * then prints a newline and the sources the prompt held on stdout. Prints the error in one line
 * and returns false when a step fails. */
bool chat_docs_turn(const chat_docs *d, elm_chat *ch, const elm_context *c, const char *question,
                    elm_token_cb cb, elm_gen_stats *stats);

/* Prints a turn's prompt text to stderr between marker lines (--verbose-prompt); note (may be
 * NULL) goes on the first. */
void chat_print_prompt(const char *text, const char *note);

#endif
