/* elm_model_load: picks the loader from what the path is, then binds the model's layer slots.
 * A llama2.c checkpoint has no magic: anything that is not a directory or GGUF is tried as one
 * (its loader checks the header against the file size). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "formats/loaders.h"
#include "model/arch.h"

elm_status elm_model_load(const char *path, const elm_load_opts *opts, elm_model **out,
                          elm_error *err) {
    *out = NULL;
    elm_model *m = NULL;
    elm_status st;
    bool in_memory = false; /* the tensors lie in memory the model owns (a GGUF read in) */
    if (elm_is_dir(path)) {
        if (!(m = elm_model_new(path, "hf", err))) return ELM_ERR_NOMEM;
        st = elm_load_hf(m, path, err);
    } else {
        /* a FIFO or device would block or stream forever */
        if (access(path, F_OK) == 0 && !elm_file_exists(path))
            return elm_errorf(err, ELM_ERR_IO, "%s: not a regular file or a model folder", path);
        FILE *f = fopen(path, "rb");
        if (!f) return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
        unsigned char magic[4] = {0};
        size_t got = fread(magic, 1, 4, f);
        fclose(f);
        bool gguf = got == 4 && memcmp(magic, "GGUF", 4) == 0;
        if (!(m = elm_model_new(path, gguf ? "gguf" : "llama2c", err))) return ELM_ERR_NOMEM;
        in_memory = gguf && opts && opts->in_memory;
        st = gguf ? elm_load_gguf(m, path, in_memory, err)
                  : elm_load_llama2c(m, path, opts ? opts->tokenizer_path : NULL, err);
    }
    /* inspect reads vocab-only files and families edgelm does not run, unbound */
    const bool as_read = opts && opts->inspect && (m->n_tensors == 0 || !elm_arch_find(m->hp.arch));
    if (!st && !as_read) st = elm_model_bind(m, err);
    if (!st && !as_read && in_memory) st = elm_model_pack(m, elm_kernels_best(), err);
    if (st) {
        elm_model_free(m);
        return st;
    }
    *out = m;
    return ELM_OK;
}
