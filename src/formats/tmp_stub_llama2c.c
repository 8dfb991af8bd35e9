/* TEMPORARY stub, deleted by whoever implements llama2c.c */
#include "formats/loaders.h"
elm_status elm_load_llama2c(elm_model *m, const char *path, const char *tok, elm_error *err) { (void)m; (void)tok; return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: llama2.c loader not built yet", path); }
