/* TEMPORARY stub, deleted by whoever implements hf.c */
#include "formats/loaders.h"
elm_status elm_load_hf(elm_model *m, const char *dir, elm_error *err) { (void)m; return elm_errorf(err, ELM_ERR_UNSUPPORTED, "%s: HF loader not built yet", dir); }
