/* Whole-file JSON reading (see json_file.h). */
#include <stdlib.h>

#include "core/fileio.h"
#include "formats/json_file.h"

/* The file's JSON value of cJSON type `type` (cJSON_Object, cJSON_Array). */
static elm_status read_json(const char *path, size_t max_bytes, int type, cJSON **root,
                            elm_error *err) {
    char *text;
    size_t len;
    *root = NULL;
    elm_status st = elm_read_file(path, max_bytes, &text, &len, err);
    if (st) return st;
    cJSON *tree = cJSON_ParseWithLength(text, len);
    free(text);
    if (!tree || (tree->type & 0xFF) != type) {
        cJSON_Delete(tree);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not a JSON %s", path,
                          type == cJSON_Object ? "object" : "array");
    }
    *root = tree;
    return ELM_OK;
}

elm_status elm_json_read_object(const char *path, size_t max_bytes, cJSON **root, elm_error *err) {
    return read_json(path, max_bytes, cJSON_Object, root, err);
}

elm_status elm_json_read_array(const char *path, size_t max_bytes, cJSON **root, elm_error *err) {
    return read_json(path, max_bytes, cJSON_Array, root, err);
}
