/* Reading a whole JSON file into a cJSON tree: the first step of every loader of a JSON document
 * (Hugging Face config.json, tokenizer.json, tokenizer_config.json, the safetensors index). */
#ifndef EDGELM_FORMATS_JSON_FILE_H
#define EDGELM_FORMATS_JSON_FILE_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "edgelm/error.h"

/* Reads `path` (at most max_bytes) and parses it as one JSON object; on success *root is the tree,
 * freed by the caller with cJSON_Delete, else *root is NULL. Errors: elm_read_file's (ELM_ERR_IO
 * for a missing or unreadable file, ELM_ERR_FORMAT for one over max_bytes), and ELM_ERR_FORMAT
 * "PATH: not a JSON object" for invalid JSON or a top-level value of another type (cJSON reports
 * running out of memory the same way). */
elm_status elm_json_read_object(const char *path, size_t max_bytes, cJSON **root, elm_error *err);

/* The same for a file holding one JSON array (sentence-transformers' modules.json): "PATH: not a
 * JSON array" otherwise. */
elm_status elm_json_read_array(const char *path, size_t max_bytes, cJSON **root, elm_error *err);

#endif
