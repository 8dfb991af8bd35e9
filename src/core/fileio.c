/* File mapping, whole-file reads and atomic writes (see fileio.h). */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

elm_status elm_map_file(const char *path, void **addr, size_t *size, elm_error *err) {
    *addr = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return elm_errorf(err, ELM_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return ELM_OK;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return elm_errorf(err, ELM_ERR_IO, "%s: mmap: %s", path, strerror(e));
    *addr = p;
    *size = (size_t)st.st_size;
    return ELM_OK;
}

void elm_unmap(void *addr, size_t size) {
    if (addr && size) munmap(addr, size);
}

elm_status elm_read_file(const char *path, size_t max_bytes, char **buf, size_t *size,
                         elm_error *err) {
    *buf = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return elm_errorf(err, ELM_ERR_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: file too large (%lld bytes, limit %zu)", path,
                          (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *p = malloc(n + 1);
    if (!p) {
        fclose(f);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
    }
    if (n && fread(p, 1, n, f) != n) {
        free(p);
        fclose(f);
        return elm_errorf(err, ELM_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    p[n] = '\0';
    *buf = p;
    *size = n;
    return ELM_OK;
}

bool elm_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool elm_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

elm_status elm_out_open(elm_out *o, const char *path, elm_error *err) {
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        return elm_errorf(err, ELM_ERR_ARG, "%s: output path too long", path);
    strcpy(o->path, path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) return elm_errorf(err, ELM_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    fchmod(fd, 0644);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        close(fd);
        unlink(o->tmp);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    }
    return ELM_OK;
}

elm_status elm_out_write(elm_out *o, const void *buf, size_t n, elm_error *err) {
    if (n && fwrite(buf, 1, n, o->f) != n)
        return elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    return ELM_OK;
}

elm_status elm_out_commit(elm_out *o, elm_error *err) {
    int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad) {
        unlink(o->tmp);
        return elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", o->path, strerror(e));
    }
    if (rename(o->tmp, o->path) != 0) {
        e = errno;
        unlink(o->tmp);
        return elm_errorf(err, ELM_ERR_IO, "%s: rename failed: %s", o->path, strerror(e));
    }
    return ELM_OK;
}

void elm_out_abort(elm_out *o) {
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = '\0';
}
