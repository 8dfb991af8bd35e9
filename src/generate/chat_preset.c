/* Presets for the common on-device chat tasks (see chat.h): a system prompt and a temperature.
 * Low temperatures where the answer should be faithful rather than varied (translation, answers
 * from a document, code). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/chat.h"

/* A malloc'd printf result, or NULL. */
static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

elm_status elm_chat_preset(const char *name, const char *from, const char *to, const char *context,
                           char **system, float *temp, elm_error *err) {
    *system = NULL;
    if (!strcmp(name, "translate")) {
        if (!from || !to)
            return elm_errorf(err, ELM_ERR_ARG, "preset translate needs --from and --to languages");
        *system = format("You are a translator. Translate each message from %s to %s. Reply with "
                         "the translation only, keeping the meaning, tone and formatting.",
                         from, to);
        *temp = 0.2f;
    } else if (!strcmp(name, "code")) {
        *system = strdup("You are a programming assistant. Answer with correct, complete code in "
                         "a fenced block, then at most a few sentences of explanation. Say so "
                         "when a request is ambiguous.");
        *temp = 0.2f;
    } else if (!strcmp(name, "rag")) {
        if (!context) return elm_errorf(err, ELM_ERR_ARG, "preset rag needs --context FILE");
        *system = format("Answer the user's questions using only the context below. If the "
                         "context does not contain the answer, say \"The context does not say.\" "
                         "and do not guess.\n\nContext:\n%s", context);
        *temp = 0.0f;
    } else {
        return elm_errorf(err, ELM_ERR_ARG, "unknown preset '%s' (translate, code or rag)", name);
    }
    return *system ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "preset: out of memory");
}
