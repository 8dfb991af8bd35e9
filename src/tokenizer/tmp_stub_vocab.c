/* TEMPORARY stub, deleted by whoever implements the tokenizer */
#include "edgelm/vocab.h"
elm_status elm_vocab_alloc(elm_vocab *v, int32_t n, bool s, elm_error *err) { (void)v; (void)n; (void)s; return elm_errorf(err, ELM_ERR_UNSUPPORTED, "vocab not built"); }
elm_status elm_vocab_set_piece(elm_vocab *v, int32_t i, const char *s, size_t len, elm_error *err) { (void)v; (void)i; (void)s; (void)len; (void)err; return ELM_ERR_UNSUPPORTED; }
elm_status elm_vocab_finalize(elm_vocab *v, const char *src, elm_error *err) { (void)v; (void)src; (void)err; return ELM_ERR_UNSUPPORTED; }
void elm_vocab_free(elm_vocab *v) { (void)v; }
int64_t elm_tokenize(const elm_vocab *v, const char *t, size_t len, bool b, int32_t *ids, int64_t max, elm_error *err) { (void)v; (void)t; (void)len; (void)b; (void)ids; (void)max; (void)err; return -1; }
size_t elm_token_to_bytes(const elm_vocab *v, int32_t id, char *out, size_t cap) { (void)v; (void)id; (void)out; (void)cap; return 0; }
void elm_detok_init(elm_detok *d, const elm_vocab *v, bool s) { (void)d; (void)v; (void)s; }
size_t elm_detok_push(elm_detok *d, int32_t id, char *out, size_t cap) { (void)d; (void)id; (void)out; (void)cap; return 0; }
size_t elm_detok_flush(elm_detok *d, char *out, size_t cap) { (void)d; (void)out; (void)cap; return 0; }
char *elm_detokenize(const elm_vocab *v, const int32_t *ids, int64_t n, bool s) { (void)v; (void)ids; (void)n; (void)s; return 0; }
