/* Calibration text samples (edgelm/quant.h, elm_text_set_read): plain text split by line or by
 * paragraph, or JSONL objects rendered from a "text" field, Alpaca instruction fields or a
 * caller's {field} template. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/fileio.h"
#include "edgelm/quant.h"

#define MAX_CALIB_FILE ((size_t)1 << 31)

/* The Alpaca prompt (Taori et al. 2023, Stanford Alpaca), with the response appended. */
static const char alpaca_head[] =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n";
static const char alpaca_head_input[] =
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n### Instruction:\n";


static elm_status push(elm_text_set *s, const char *p, size_t n, int32_t *cap, const char *path,
                       elm_error *err) {
    while (n && isspace((unsigned char)*p)) p++, n--;
    while (n && isspace((unsigned char)p[n - 1])) n--;
    if (!n) return ELM_OK;
    if (s->n == *cap) {
        int32_t c = *cap ? *cap * 2 : 64;
        char **t = realloc(s->texts, sizeof *t * (size_t)c);
        if (!t) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
        s->texts = t;
        *cap = c;
    }
    char *copy = malloc(n + 1);
    if (!copy) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    memcpy(copy, p, n);
    copy[n] = 0;
    s->texts[s->n++] = copy;
    return ELM_OK;
}

static bool blank(const char *p, const char *end) {
    for (; p < end; p++)
        if (!isspace((unsigned char)*p)) return false;
    return true;
}

static elm_status read_plain(const char *buf, size_t size, elm_calib_split split, const char *path,
                             elm_text_set *out, elm_error *err) {
    int32_t cap = 0;
    const char *end = buf + size, *para = NULL;
    for (const char *line = buf; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *eol = nl ? nl : end;
        elm_status st = ELM_OK;
        if (split == ELM_CALIB_SPLIT_LINE) {
            st = push(out, line, (size_t)(eol - line), &cap, path, err);
        } else if (blank(line, eol)) {
            if (para) st = push(out, para, (size_t)(line - para), &cap, path, err);
            para = NULL;
        } else if (!para) {
            para = line;
        }
        if (st) return st;
        line = nl ? nl + 1 : end;
    }
    return para ? push(out, para, (size_t)(end - para), &cap, path, err) : ELM_OK;
}

/* A field's text: strings as they are, other JSON values printed. NULL when absent. */
static char *field_text(const cJSON *o, const char *name, bool *nomem) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!f) return NULL;
    char *s = cJSON_IsString(f) ? strdup(f->valuestring) : cJSON_PrintUnformatted(f);
    if (!s) *nomem = true;
    return s;
}

/* "{name}" with name of letters, digits, '_', '-' or '.' is a placeholder; other braces are text. */
static size_t placeholder(const char *p) {
    if (*p != '{') return 0;
    size_t n = 1;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-' || p[n] == '.') n++;
    return p[n] == '}' && n > 1 ? n + 1 : 0;
}

static elm_status render_template(const cJSON *o, const char *tmpl, elm_sbuf *b, const char *where,
                                  elm_error *err) {
    for (const char *p = tmpl; *p;) {
        size_t n = placeholder(p);
        if (!n) {
            elm_sb_put(b, p++, 1);
            continue;
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 2 < 255 ? n - 2 : 255), p + 1);
        bool nomem = false;
        char *v = field_text(o, name, &nomem);
        if (!v)
            return nomem ? elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", where)
                         : elm_errorf(err, ELM_ERR_FORMAT, "%s: no field '%s' for the template",
                                      where, name);
        elm_sb_puts(b, v);
        free(v);
        p += n;
    }
    return ELM_OK;
}

static elm_status render_object(const cJSON *o, const char *tmpl, elm_sbuf *b, const char *where,
                                elm_error *err) {
    if (tmpl) return render_template(o, tmpl, b, where, err);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text");
    if (cJSON_IsString(text)) {
        elm_sb_puts(b, text->valuestring);
        return ELM_OK;
    }
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "instruction");
    const cJSON *inp = cJSON_GetObjectItemCaseSensitive(o, "input");
    const cJSON *outp = cJSON_GetObjectItemCaseSensitive(o, "output");
    if (!cJSON_IsString(ins) || (outp && !cJSON_IsString(outp)) || (inp && !cJSON_IsString(inp)))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: no string field 'text' nor 'instruction'/'input'/'output' (use a "
                          "template for other fields)", where);
    bool has_input = inp && inp->valuestring[0];
    elm_sb_puts(b, has_input ? alpaca_head_input : alpaca_head);
    elm_sb_puts(b, ins->valuestring);
    if (has_input) {
        elm_sb_puts(b, "\n\n### Input:\n");
        elm_sb_puts(b, inp->valuestring);
    }
    elm_sb_puts(b, "\n\n### Response:\n");
    if (outp) elm_sb_puts(b, outp->valuestring);
    return ELM_OK;
}

static elm_status read_jsonl(const char *buf, size_t size, const char *tmpl, const char *path,
                             elm_text_set *out, elm_error *err) {
    int32_t cap = 0;
    const char *end = buf + size;
    long lineno = 0;
    elm_sbuf b = {0};
    elm_status st = ELM_OK;
    for (const char *line = buf; line < end && !st;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *eol = nl ? nl : end;
        lineno++;
        if (!blank(line, eol)) {
            char where[1100];
            snprintf(where, sizeof where, "%s:%ld", path, lineno);
            cJSON *o = cJSON_ParseWithLength(line, (size_t)(eol - line));
            elm_sb_clear(&b);
            if (!o)
                st = elm_errorf(err, ELM_ERR_FORMAT, "%s: invalid JSON", where);
            else if (!cJSON_IsObject(o))
                st = elm_errorf(err, ELM_ERR_FORMAT, "%s: not a JSON object", where);
            else
                st = render_object(o, tmpl, &b, where, err);
            cJSON_Delete(o);
            if (!st && b.oom) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", where);
            if (!st && b.len) st = push(out, b.s, b.len, &cap, path, err);
        }
        line = nl ? nl + 1 : end;
    }
    free(b.s);
    return st;
}

elm_status elm_text_set_read(const char *path, elm_calib_split split, const char *tmpl,
                             elm_text_set *out, elm_error *err) {
    *out = (elm_text_set){0};
    char *buf = NULL;
    size_t size = 0;
    elm_status st = elm_read_file(path, MAX_CALIB_FILE, &buf, &size, err);
    if (st) return st;
    /* a model or other binary file passed by mistake would otherwise become "text" samples */
    const char *nul = memchr(buf, 0, size);
    if (nul) {
        st = elm_errorf(err, ELM_ERR_FORMAT,
                        "%s: not text (a NUL byte at offset %zu): calibration text is plain "
                        "UTF-8 or JSONL", path, (size_t)(nul - buf));
        free(buf);
        return st;
    }
    size_t i = 0;
    while (i < size && isspace((unsigned char)buf[i])) i++;
    st = i < size && buf[i] == '{' ? read_jsonl(buf, size, tmpl, path, out, err)
                                   : read_plain(buf, size, split, path, out, err);
    free(buf);
    return st;
}

void elm_text_set_free(elm_text_set *s) {
    for (int32_t i = 0; i < s->n; i++) free(s->texts[i]);
    free(s->texts);
    *s = (elm_text_set){0};
}
