/* Whole-file JSON reading (see json_file.h). */
#include <stdlib.h>

#include "core/fileio.h"
#include "formats/json_file.h"

elm_status elm_json_read_object(const char *path, size_t max_bytes, cJSON **root, elm_error *err) {
    char *text;
    size_t len;
    *root = NULL;
    elm_status st = elm_read_file(path, max_bytes, &text, &len, err);
    if (st) return st;
    cJSON *tree = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(tree)) {
        cJSON_Delete(tree);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not a JSON object", path);
    }
    *root = tree;
    return ELM_OK;
}
