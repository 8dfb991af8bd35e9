/* Gemma 4's tool text (chat_tools.h): the declarations in its system turn, its calls and its
 * results, as its Jinja template (tests/data/templates/google-gemma-4-31B-it.jinja) writes them:
 * not JSON but a syntax of its own, with bare keys in sorted order and strings between <|"|>
 * tokens. The template's quirks are kept, since the model was trained on its output: a property
 * named like a schema keyword is left out, an object property without properties lists its own
 * keys, an absent description is an empty string. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "generate/chat_tools.h"

/* a before b in Jinja's dictsort (case-insensitive; ties keep their order) */
static int key_cmp(const char *a, const char *b) {
    for (;; a++, b++) {
        const int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
        if (x != y || !x) return x - y;
    }
}

/* The members of object o sorted as dictsort sorts them: a malloc'd array [*n], NULL when empty
 * or out of memory (written then as an empty object, and the caller's buffer is not failed: a
 * tools list is small). */
static const cJSON **sorted_members(const cJSON *o, int *n) {
    *n = cJSON_GetArraySize(o);
    const cJSON **m = *n ? malloc(sizeof *m * (size_t)*n) : NULL;
    if (!m) return *n = 0, NULL;
    int k = 0;
    for (const cJSON *c = o->child; c; c = c->next) { /* insertion sort: stable */
        int j = k++;
        while (j > 0 && key_cmp(m[j - 1]->string, c->string) > 0) {
            m[j] = m[j - 1];
            j--;
        }
        m[j] = c;
    }
    return m;
}

cJSON *elm_gemma4_sorted_copy(const cJSON *v) {
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return cJSON_Duplicate(v, false);
    cJSON *out = cJSON_IsObject(v) ? cJSON_CreateObject() : cJSON_CreateArray();
    int n = 0;
    const cJSON **m = cJSON_IsObject(v) ? sorted_members(v, &n) : NULL;
    if (cJSON_IsObject(v) && n != cJSON_GetArraySize(v)) { /* out of memory */
        cJSON_Delete(out);
        return NULL;
    }
    int i = 0;
    for (const cJSON *c = v->child; out && c; c = c->next, i++) {
        const cJSON *x = m ? m[i] : c;
        cJSON *copy = elm_gemma4_sorted_copy(x);
        if (!copy || !(m ? cJSON_AddItemToObject(out, x->string, copy)
                         : cJSON_AddItemToArray(out, copy))) {
            cJSON_Delete(copy);
            cJSON_Delete(out);
            out = NULL;
        }
    }
    free(m);
    return out;
}

static void put_quoted(elm_sbuf *t, const char *s) {
    elm_sb_puts(t, ELM_GEMMA4_QUOTE);
    elm_sb_puts(t, s);
    elm_sb_puts(t, ELM_GEMMA4_QUOTE);
}

void elm_put_gemma4_value(elm_sbuf *t, const cJSON *v, bool quote_keys) {
    if (cJSON_IsString(v)) {
        put_quoted(t, v->valuestring);
    } else if (cJSON_IsBool(v)) {
        elm_sb_puts(t, cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsObject(v)) {
        int n;
        const cJSON **m = sorted_members(v, &n);
        elm_sb_puts(t, "{");
        for (int i = 0; i < n; i++) {
            if (i) elm_sb_puts(t, ",");
            if (quote_keys) put_quoted(t, m[i]->string);
            else elm_sb_puts(t, m[i]->string);
            elm_sb_puts(t, ":");
            elm_put_gemma4_value(t, m[i], quote_keys);
        }
        elm_sb_puts(t, "}");
        free(m);
    } else if (cJSON_IsArray(v)) {
        elm_sb_puts(t, "[");
        for (const cJSON *c = v->child; c; c = c->next) {
            if (c != v->child) elm_sb_puts(t, ",");
            elm_put_gemma4_value(t, c, quote_keys);
        }
        elm_sb_puts(t, "]");
    } else if (cJSON_IsNumber(v)) {
        elm_put_py_json(t, v, -1);
    } else {
        elm_sb_puts(t, "None"); /* Python's str(None) */
    }
}

/* `value['type'] | upper`: a string upper-cased, absent "" , a list as Python's repr of it */
static void put_type_upper(elm_sbuf *t, const cJSON *type) {
    elm_sbuf s = {0};
    if (cJSON_IsString(type)) {
        elm_sb_puts(&s, type->valuestring);
    } else if (cJSON_IsArray(type)) {
        elm_sb_puts(&s, "[");
        for (const cJSON *c = type->child; c; c = c->next)
            elm_sb_printf(&s, "%s'%s'", c == type->child ? "" : ", ",
                          cJSON_IsString(c) ? c->valuestring : "");
        elm_sb_puts(&s, "]");
    } else if (cJSON_IsNull(type)) {
        elm_sb_puts(&s, "None");
    }
    for (size_t i = 0; i < s.len; i++) s.s[i] = (char)toupper((unsigned char)s.s[i]);
    elm_sb_put(t, s.s ? s.s : "", s.len);
    free(s.s);
}

static bool type_is(const cJSON *type, const char *upper) {
    elm_sbuf s = {0};
    put_type_upper(&s, type);
    const bool is = s.s && !strcmp(s.s, upper);
    free(s.s);
    return is;
}

/* required:[<|"|>a<|"|>,...] */
static void put_required(elm_sbuf *t, const cJSON *req) {
    elm_sb_puts(t, "required:[");
    for (const cJSON *c = req->child; c; c = c->next) {
        if (c != req->child) elm_sb_puts(t, ",");
        put_quoted(t, cJSON_IsString(c) ? c->valuestring : "");
    }
    elm_sb_puts(t, "]");
}

/* the template's `if add_comma %},{% else %}{% set add_comma = true %}` */
static void comma(elm_sbuf *t, bool *add) {
    if (*add) elm_sb_puts(t, ",");
    *add = true;
}

static void put_params(elm_sbuf *t, const cJSON *props);

/* An array property's items: each member but nulls, the nested properties and required lists in
 * their own forms. */
static void put_items(elm_sbuf *t, const cJSON *items) {
    int n;
    const cJSON **m = sorted_members(items, &n);
    elm_sb_puts(t, "items:{");
    bool first = true;
    for (int i = 0; i < n; i++) {
        const cJSON *v = m[i];
        if (cJSON_IsNull(v)) continue;
        if (!first) elm_sb_puts(t, ",");
        first = false;
        if (!strcmp(v->string, "properties")) {
            elm_sb_puts(t, "properties:{");
            if (cJSON_IsObject(v)) put_params(t, v);
            elm_sb_puts(t, "}");
        } else if (!strcmp(v->string, "required")) {
            if (cJSON_IsArray(v)) put_required(t, v);
            else elm_sb_puts(t, "required:[]");
        } else if (!strcmp(v->string, "type")) {
            elm_sb_puts(t, "type:");
            if (cJSON_IsArray(v)) { /* type | map('upper') | list */
                elm_sb_puts(t, "[");
                for (const cJSON *c = v->child; c; c = c->next) {
                    if (c != v->child) elm_sb_puts(t, ",");
                    elm_sb_puts(t, ELM_GEMMA4_QUOTE);
                    put_type_upper(t, c);
                    elm_sb_puts(t, ELM_GEMMA4_QUOTE);
                }
                elm_sb_puts(t, "]");
            } else {
                elm_sb_puts(t, ELM_GEMMA4_QUOTE);
                put_type_upper(t, v);
                elm_sb_puts(t, ELM_GEMMA4_QUOTE);
            }
        } else {
            elm_sb_printf(t, "%s:", v->string);
            elm_put_gemma4_value(t, v, true);
        }
    }
    elm_sb_puts(t, "}");
    free(m);
}

/* The template's format_parameters: each property (keys sorted, schema keywords skipped) as
 * NAME:{description,enum|items,nullable,properties,required,type}. */
static void put_params(elm_sbuf *t, const cJSON *props) {
    static const char *const standard[] = {"description", "type", "properties", "required",
                                           "nullable"};
    int n;
    const cJSON **m = sorted_members(props, &n);
    bool first = true;
    for (int i = 0; i < n; i++) {
        const cJSON *v = m[i];
        bool skip = false;
        for (size_t k = 0; k < sizeof standard / sizeof *standard; k++)
            skip = skip || !strcmp(v->string, standard[k]);
        if (skip) continue;
        if (!first) elm_sb_puts(t, ",");
        first = false;
        elm_sb_printf(t, "%s:{", v->string);
        bool add = false;
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(v, "description");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(v, "type");
        if (elm_jinja_truthy(desc)) {
            elm_sb_puts(t, "description:");
            if (cJSON_IsString(desc)) put_quoted(t, desc->valuestring);
            else elm_put_gemma4_value(t, desc, true);
            add = true;
        }
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(v, "enum");
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(v, "items");
        if (type_is(type, "STRING") && elm_jinja_truthy(en)) {
            comma(t, &add);
            elm_sb_puts(t, "enum:");
            elm_put_gemma4_value(t, en, true);
        } else if (type_is(type, "ARRAY") && cJSON_IsObject(items) && items->child) {
            comma(t, &add);
            put_items(t, items);
        }
        if (elm_jinja_truthy(cJSON_GetObjectItemCaseSensitive(v, "nullable"))) {
            comma(t, &add);
            elm_sb_puts(t, "nullable:true");
        }
        if (type_is(type, "OBJECT")) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "properties");
            comma(t, &add);
            elm_sb_puts(t, "properties:{");
            put_params(t, cJSON_IsObject(p) ? p : v);
            elm_sb_puts(t, "}");
            const cJSON *req = cJSON_GetObjectItemCaseSensitive(v, "required");
            if (elm_jinja_truthy(req) && cJSON_IsArray(req)) {
                comma(t, &add);
                put_required(t, req);
            }
        }
        comma(t, &add);
        elm_sb_puts(t, "type:" ELM_GEMMA4_QUOTE);
        put_type_upper(t, type);
        elm_sb_puts(t, ELM_GEMMA4_QUOTE "}");
    }
    free(m);
}

void elm_tools_put_gemma4_declarations(elm_sbuf *t, const cJSON *tools) {
    for (const cJSON *tool = tools->child; tool; tool = tool->next) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(tool, "function");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(f, "description");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
        elm_sb_printf(t, "<|tool>declaration:%s{description:" ELM_GEMMA4_QUOTE,
                      cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring);
        if (cJSON_IsString(desc)) elm_sb_puts(t, desc->valuestring);
        elm_sb_puts(t, ELM_GEMMA4_QUOTE);
        if (elm_jinja_truthy(params)) {
            const cJSON *props = cJSON_GetObjectItemCaseSensitive(params, "properties");
            const cJSON *req = cJSON_GetObjectItemCaseSensitive(params, "required");
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(params, "type");
            elm_sb_puts(t, ",parameters:{");
            if (elm_jinja_truthy(props) && cJSON_IsObject(props)) {
                elm_sb_puts(t, "properties:{");
                put_params(t, props);
                elm_sb_puts(t, "},");
            }
            if (elm_jinja_truthy(req) && cJSON_IsArray(req)) {
                put_required(t, req);
                elm_sb_puts(t, ",");
            }
            if (elm_jinja_truthy(type)) { /* without a type the template leaves the block open */
                elm_sb_puts(t, "type:" ELM_GEMMA4_QUOTE);
                put_type_upper(t, type);
                elm_sb_puts(t, ELM_GEMMA4_QUOTE "}");
            }
        }
        elm_sb_puts(t, "}<tool|>");
    }
}

void elm_tools_put_gemma4_result(elm_sbuf *t, const char *name, const char *content) {
    elm_sb_printf(t, "<|tool_response>response:%s{value:", name);
    put_quoted(t, content);
    elm_sb_puts(t, "}<tool_response|>");
}
