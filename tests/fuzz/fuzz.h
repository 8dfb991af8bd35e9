/* Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c): the loaders read files by path, so each
 * input is written to a file in a folder of the process's own (under $TMPDIR) and loaded from
 * there. A harness fails (abort, for libFuzzer to save the input) when a loader reports an error
 * without naming the file, or succeeds without a message being needed; crashes, leaks and
 * undefined behaviour are caught by ASan/UBSan. Fixtures ($EDGELM_FIXTURES, default
 * ../shared/fixtures) give the harnesses that need a model its vocabulary. */
#ifndef EDGELM_TESTS_FUZZ_H
#define EDGELM_TESTS_FUZZ_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgelm/error.h"
#include "edgelm/model.h"

static inline int fuzz_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* Removes path and everything under it. */
static inline void fuzz_rm_tree(const char *path) {
    nftw(path, fuzz_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char fuzz_scratch[1024];

static inline void fuzz_dir_remove(void) { fuzz_rm_tree(fuzz_scratch); }

/* The process's scratch folder, created on first use and removed when the process exits (left
 * behind only by a crash, beside the input libFuzzer saves). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_scratch[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(fuzz_scratch, sizeof fuzz_scratch, "%s/edgelm-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(fuzz_scratch)) abort();
        atexit(fuzz_dir_remove);
    }
    return fuzz_scratch;
}

/* Writes data [size] to name in the scratch folder; returns the path (static, per name slot). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char path[4][1100];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path[k], "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
    return path[k];
}

/* A fixture's path ($EDGELM_FIXTURES/rel). */
static inline const char *fuzz_fixture(const char *rel) {
    static char path[1100];
    const char *fx = getenv("EDGELM_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", fx && *fx ? fx : "../shared/fixtures", rel);
    return path;
}

/* The stories260K model (its vocabulary and tensor names), loaded on first use; aborts when the
 * fixture cannot be read. */
static inline elm_model *fuzz_model(void) {
    static elm_model *m;
    elm_error err;
    if (!m && elm_model_load(fuzz_fixture("stories260K/stories260K-f32.gguf"), NULL, &m, &err))
        abort();
    return m;
}

/* An error must be one line naming `what` (the file or the field). */
static inline void fuzz_check_error(elm_status st, const elm_error *err, const char *what) {
    if (st == ELM_OK || st == ELM_ERR_NOMEM) return;
    if (!strstr(err->msg, what) || strchr(err->msg, '\n')) {
        fprintf(stderr, "error does not name '%s' or is not one line: %s\n", what, err->msg);
        abort();
    }
}

/* Splits data at the first occurrence of the 4-byte separator "\n--\n" (inputs made of two
 * files); without one, the second part is empty. */
static inline void fuzz_split(const uint8_t *data, size_t size, size_t *first, const uint8_t **second,
                       size_t *second_size) {
    for (size_t i = 0; i + 4 <= size; i++)
        if (!memcmp(data + i, "\n--\n", 4)) {
            *first = i;
            *second = data + i + 4;
            *second_size = size - i - 4;
            return;
        }
    *first = size;
    *second = data + size;
    *second_size = 0;
}

#endif
