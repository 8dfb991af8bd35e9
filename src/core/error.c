/* elm_error: formatted error messages that name the file and the problem. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "edgelm/error.h"

elm_status elm_errorf(elm_error *err, elm_status code, const char *fmt, ...) {
    if (err) {
        /* formatted apart first: an argument may be err->msg itself (a prefix added to a lower
         * call's message) */
        char msg[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(err->msg, msg, sizeof msg);
        /* names quoted from a hostile file may hold newlines or escapes: the message stays one
         * printable line */
        for (char *c = err->msg; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
        err->code = code;
    }
    return code;
}

void elm_error_clear(elm_error *err) {
    if (err) {
        err->code = ELM_OK;
        err->msg[0] = '\0';
    }
}

const char *elm_status_str(elm_status code) {
    switch (code) {
    case ELM_OK: return "ok";
    case ELM_ERR_IO: return "I/O error";
    case ELM_ERR_FORMAT: return "format error";
    case ELM_ERR_UNSUPPORTED: return "unsupported";
    case ELM_ERR_NOMEM: return "out of memory";
    case ELM_ERR_ARG: return "invalid argument";
    }
    return "unknown error";
}
