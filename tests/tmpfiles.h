/* Header-only helpers for bad-input tests: a scratch directory under $TMPDIR, whole-file reads and
 * writes, and copies of fixture files to mutate. Static functions so each test program that
 * includes this stays a single translation unit. */
#ifndef EDGELM_TESTS_TMPFILES_H
#define EDGELM_TESTS_TMPFILES_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* Creates a fresh directory $TMPDIR/edgelm-test-XXXXXX (check_tmp_dir); the returned buffer is
 * the caller's to free with tmp_dir_remove. NULL on failure. */
static char *tmp_dir_new(void) { return check_tmp_dir(); }

/* "dir/name" in one of 8 rotating static buffers. */
static const char *tmp_path(const char *dir, const char *name) {
    static char buf[8][1024];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Deletes the files in dir, dir itself, and frees the name. */
static void tmp_dir_remove(char *dir) {
    if (!dir) return;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlink(tmp_path(dir, e->d_name));
    if (d) closedir(d);
    rmdir(dir);
    free(dir);
}

/* Reads a whole file into a malloc'd buffer (NUL appended, not counted). */
static unsigned char *file_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

static bool file_write(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* Copies src to dst, keeping the first `len` bytes (SIZE_MAX: all), then `extra` zero bytes. */
static bool file_copy(const char *src, const char *dst, size_t len, size_t extra) {
    size_t n;
    unsigned char *buf = file_read(src, &n);
    if (!buf) return false;
    if (len > n) len = n;
    unsigned char *out = calloc(len + extra + 1, 1);
    bool ok = out && (memcpy(out, buf, len), file_write(dst, out, len + extra));
    free(out);
    free(buf);
    return ok;
}

#endif
