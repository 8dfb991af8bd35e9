/* Request fields into a grammar (see constraint.h). A constraint the server cannot enforce is a
 * 400 naming it, never a reply in free text: a client that asked for JSON must be able to parse
 * what it gets. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "server/constraint.h"
#include "server/fields.h"

/* Schema (a JSON value) into *g; `field` names it in messages. */
static int from_schema(const cJSON *schema, const char *field, elm_grammar **g, char *msg,
                       size_t cap) {
    if (!cJSON_IsObject(schema) && !cJSON_IsBool(schema))
        return srv_bad(msg, cap, "%s: expected a JSON schema (an object)", field);
    char *text = cJSON_PrintUnformatted(schema), *gbnf = NULL;
    if (!text) return 500;
    elm_error err;
    elm_status st = elm_json_schema_to_gbnf(text, strlen(text), field, &gbnf, &err);
    if (!st) st = elm_grammar_parse(gbnf, strlen(gbnf), field, g, &err);
    free(text);
    free(gbnf);
    if (st == ELM_ERR_NOMEM) return 500;
    return st ? srv_bad(msg, cap, "%s", err.msg) : 0;
}

/* GBNF text into *g; `field` names it in messages. */
static int from_gbnf(const char *gbnf, const char *field, elm_grammar **g, char *msg, size_t cap) {
    elm_error err;
    const elm_status st = elm_grammar_parse(gbnf, strlen(gbnf), field, g, &err);
    return st == ELM_ERR_NOMEM ? 500 : st ? srv_bad(msg, cap, "%s", err.msg) : 0;
}

static bool is_text_format(const cJSON *rf) {
    const cJSON *type = cJSON_IsObject(rf) ? srv_field(rf, "type") : NULL;
    return cJSON_IsString(type) && !strcmp(type->valuestring, "text");
}

/* response_format: {"type": "text" | "json_object" | "json_schema", "json_schema": {"name",
 * "schema", "strict", "description"}}. */
static int response_format(const cJSON *rf, elm_grammar **g, char *msg, size_t cap) {
    if (!cJSON_IsObject(rf)) return srv_bad(msg, cap, "response_format: expected an object");
    const cJSON *type = srv_field(rf, "type");
    if (!cJSON_IsString(type))
        return srv_bad(msg, cap, "response_format.type: expected \"text\", \"json_object\" or "
                                 "\"json_schema\"");
    if (!strcmp(type->valuestring, "text")) return 0;
    if (!strcmp(type->valuestring, "json_object"))
        return from_gbnf(elm_json_object_gbnf(), "response_format", g, msg, cap);
    if (strcmp(type->valuestring, "json_schema"))
        return srv_bad(msg, cap, "response_format.type: expected \"text\", \"json_object\" or "
                                 "\"json_schema\"");
    const cJSON *js = srv_field(rf, "json_schema");
    if (!cJSON_IsObject(js))
        return srv_bad(msg, cap, "response_format.json_schema: expected an object");
    const cJSON *name = srv_field(js, "name"), *strict = srv_field(js, "strict");
    if (name && !cJSON_IsString(name))
        return srv_bad(msg, cap, "response_format.json_schema.name: expected a string");
    if (strict && !cJSON_IsBool(strict))
        return srv_bad(msg, cap, "response_format.json_schema.strict: expected true or false");
    const cJSON *schema = srv_field(js, "schema");
    /* without a schema, any JSON object */
    if (!schema) return from_gbnf(elm_json_object_gbnf(), "response_format", g, msg, cap);
    return from_schema(schema, "response_format.json_schema.schema", g, msg, cap);
}

int srv_constraint_parse(const cJSON *root, elm_grammar **g, char *msg, size_t cap) {
    *g = NULL;
    const cJSON *rf = srv_field(root, "response_format"), *grammar = srv_field(root, "grammar");
    const cJSON *schema = srv_field(root, "json_schema");
    if ((rf && !is_text_format(rf)) + !!grammar + !!schema > 1)
        return srv_bad(msg, cap, "response_format, grammar, json_schema: give one of them");
    if (grammar) {
        if (!cJSON_IsString(grammar)) return srv_bad(msg, cap, "grammar: expected a string (GBNF)");
        return from_gbnf(grammar->valuestring, "grammar", g, msg, cap);
    }
    if (schema) return from_schema(schema, "json_schema", g, msg, cap);
    return rf ? response_format(rf, g, msg, cap) : 0;
}
