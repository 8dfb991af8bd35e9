/* Shared helpers of the edgelm subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/fileio.h"

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("edgelm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int print_json(cJSON *o, const char *cmd, bool formatted) {
    char *s = !o ? NULL : formatted ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return cli_fail("%s: out of memory building JSON", cmd);
    puts(s);
    cJSON_free(s);
    return 0;
}

int cli_print_json(cJSON *o, const char *cmd) { return print_json(o, cmd, true); }

int cli_print_json_line(cJSON *o, const char *cmd) { return print_json(o, cmd, false); }

void cli_json_numbers(cJSON *o, const cli_json_num *nums, size_t n) {
    for (size_t i = 0; i < n; i++) cJSON_AddNumberToObject(o, nums[i].key, nums[i].value);
}

bool cli_parse_long(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_parse_float(const char *s, double lo, double hi, double *out) {
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || isnan(v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_fail("option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

static elm_model *load(const char *path, const elm_load_opts *opts) {
    elm_error err;
    elm_error_clear(&err);
    elm_model *m = NULL;
    if (elm_model_load(path, opts, &m, &err) != ELM_OK) {
        cli_fail("%s", err.msg);
        return NULL;
    }
    return m;
}

int cli_check_output(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + (slash == path)) : 1,
             slash ? path : ".");
    if (!elm_is_dir(dir) || access(dir, W_OK) != 0)
        return cli_fail("%s: folder '%s' does not exist or is not writable", path, dir);
    return 0;
}

elm_model *cli_load_model(const char *path, const char *tokenizer_path) {
    return load(path, &(elm_load_opts){.tokenizer_path = tokenizer_path});
}

elm_model *cli_load_model_to_run(const char *path, const char *tokenizer_path, bool mmap) {
    return load(path, &(elm_load_opts){.tokenizer_path = tokenizer_path, .in_memory = !mmap});
}

double cli_peak_rss_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

char *cli_read_text(const char *path, size_t *len) {
    char *buf = NULL;
    elm_error err;
    if (elm_read_file(path, (size_t)1 << 31, &buf, len, &err) != ELM_OK) {
        cli_fail("%s", err.msg);
        return NULL;
    }
    /* text never holds a NUL byte; a model or other binary file given by mistake does */
    const char *nul = memchr(buf, 0, *len);
    if (nul) {
        cli_fail("%s: a NUL byte at offset %zu: a binary file, not text", path, (size_t)(nul - buf));
        free(buf);
        return NULL;
    }
    return buf;
}

int cli_split_lines(char *buf, char **lines, int cap) {
    int n = 0;
    for (char *s = buf; *s && n < cap;) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        const size_t len = strlen(s);
        if (len && s[len - 1] == '\r') s[len - 1] = '\0';
        if (*s) lines[n++] = s;
        if (!nl) break;
        s = nl + 1;
    }
    return n;
}

void cli_progress(long done, long total, const char *fmt, ...) {
    const bool tty = isatty(STDERR_FILENO);
    if (!tty && done != total && (done * 10 / total) == ((done - 1) * 10 / total)) return;
    va_list ap;
    va_start(ap, fmt);
    if (tty) fputc('\r', stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (!tty || done == total) fputc('\n', stderr);
}
