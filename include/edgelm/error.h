/* edgelm error reporting: every fallible call returns an elm_status and fills an elm_error whose
 * message names the file and the problem ("model.gguf: tensor 'x' offset+size past end of file").
 * The library never prints and never exits. */
#ifndef EDGELM_ERROR_H
#define EDGELM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum elm_status {
    ELM_OK = 0,
    ELM_ERR_IO = 1,          /* file missing, unreadable, write failed */
    ELM_ERR_FORMAT = 2,      /* malformed input: bad magic, truncated, inconsistent sizes */
    ELM_ERR_UNSUPPORTED = 3, /* well-formed but not handled: architecture, tensor type */
    ELM_ERR_NOMEM = 4,       /* allocation failed */
    ELM_ERR_ARG = 5          /* invalid argument from the caller (e.g. n_ctx 0, prompt too long) */
} elm_status;

typedef struct elm_error {
    elm_status code;
    char msg[512];
} elm_error;

/* Records code and a printf-style message in err (may be NULL); returns code so callers can
 * `return elm_errorf(err, ELM_ERR_FORMAT, "%s: bad magic", path);`. An argument may be err->msg
 * itself, to prefix a lower call's message: `elm_errorf(err, s, "%s: %s", path, err->msg)`. */
elm_status elm_errorf(elm_error *err, elm_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to ELM_OK with an empty message. */
void elm_error_clear(elm_error *err);

/* Short name of a status ("format error", ...). */
const char *elm_status_str(elm_status code);

#ifdef __cplusplus
}
#endif
#endif
