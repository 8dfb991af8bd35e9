/* Option tables (opts.h): matching, value checks and --help. */
#include "opts.h"

#include <stdint.h>
#include <string.h>

#include "cli.h"
#include "edgelm/context.h"

/* Whether `a` is one of the ", "-separated spellings in names. */
static bool matches(const char *names, const char *a) {
    const size_t n = strlen(a);
    for (const char *p = names; *p;) {
        const size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, a, n)) return true;
        p += len;
        p += strspn(p, ", ");
    }
    return false;
}

static const cli_opt *find(const cli_spec *s, const char *a) {
    for (const cli_opt *const *t = s->tables; *t; t++)
        for (const cli_opt *o = *t; o->names; o++)
            if (matches(o->names, a)) return o;
    return NULL;
}

/* Stores value into o's destination; false after printing the error. */
static bool take(const cli_opt *o, const char *a, const char *v) {
    long l;
    double d;
    switch (o->kind) {
    case CLI_FLAG: *(bool *)o->dst = true; return true;
    case CLI_TEXT: *(const char **)o->dst = v; return true;
    case CLI_INT:
    case CLI_I32:
        if (!cli_parse_long(v, (long)o->lo, (long)o->hi, &l)) {
            cli_fail("%s: invalid value '%s' (expected an integer in %ld..%ld)", a, v, (long)o->lo,
                     (long)o->hi);
            return false;
        }
        if (o->kind == CLI_INT) *(long *)o->dst = l;
        else *(int32_t *)o->dst = (int32_t)l;
        return true;
    case CLI_FLOAT:
    case CLI_DOUBLE:
        if (!cli_parse_float(v, o->lo, o->hi, &d)) {
            cli_fail("%s: invalid value '%s' (expected a number in %g..%g)", a, v, o->lo, o->hi);
            return false;
        }
        if (o->kind == CLI_FLOAT) *(float *)o->dst = (float)d;
        else *(double *)o->dst = d;
        return true;
    case CLI_CALL: return o->call(a, v, o->dst);
    }
    return false;
}

int cli_parse(const cli_spec *s, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cli_help(s, stdout);
            return -1;
        }
        const cli_opt *o = find(s, a);
        if (!o) {
            if (s->positional && a[0] != '-' && !*s->positional) {
                *s->positional = a;
                continue;
            }
            if (s->args && a[0] != '-') {
                s->args->v[s->args->n++] = a;
                continue;
            }
            return cli_fail("%s: %s '%s' (see 'edgelm %s --help')", s->cmd,
                            a[0] == '-' ? "unknown option" : "unexpected argument", a, s->cmd);
        }
        const char *v = NULL;
        if (o->kind != CLI_FLAG && !(v = cli_value(argc, argv, &i))) return 1;
        if (!take(o, a, v)) return 1;
    }
    return 0;
}

void cli_help(const cli_spec *s, FILE *f) {
    fprintf(f, "usage: edgelm %s %s\n", s->cmd, s->usage);
    if (s->about) fprintf(f, "\n%s\n", s->about);
    fputc('\n', f);
    for (const cli_opt *const *t = s->tables; *t; t++)
        for (const cli_opt *o = *t; o->names; o++) {
            char left[64];
            snprintf(left, sizeof left, "%s%s%s%s", o->names[1] == '-' ? "    " : "", o->names,
                     o->arg ? " " : "", o->arg ? o->arg : "");
            const char *h = o->help;
            const size_t first = strcspn(h, "\n");
            if (strlen(left) > 22) fprintf(f, "  %s\n  %-22s %.*s\n", left, "", (int)first, h);
            else fprintf(f, "  %-22s %.*s\n", left, (int)first, h);
            for (h += first; *h == '\n';) {
                h++;
                const size_t len = strcspn(h, "\n");
                fprintf(f, "  %-22s %.*s\n", "", (int)len, h);
                h += len;
            }
        }
    if (s->epilog) fprintf(f, "\n%s\n", s->epilog);
}

bool cli_kv_type(const char *opt, const char *value, void *dst) {
    if (elm_kv_type_from_name(value, dst)) return true;
    cli_fail("%s: invalid value '%s' (expected " ELM_KV_TYPE_NAMES ")", opt, value);
    return false;
}
