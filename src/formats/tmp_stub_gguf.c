/* TEMPORARY stub, deleted by whoever implements gguf_read.c */
#include "formats/loaders.h"
elm_status elm_load_gguf(elm_model *m, const char *path, elm_error *err) { (void)m; return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: GGUF loader not built yet", path); }
elm_status elm_load_gguf_vocab(const char *path, elm_vocab *v, elm_error *err) { (void)v; return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: GGUF loader not built yet", path); }
