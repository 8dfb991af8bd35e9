/* File mapping, whole-file reads and atomic writes (see fileio.h). */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens a regular file for reading into *fd with its stat. O_NONBLOCK: opening a FIFO for
 * reading would otherwise wait for a writer before the check could refuse it (it has no effect
 * on regular files). */
static elm_status open_regular(const char *path, int *fd, struct stat *st, elm_error *err) {
    *fd = open(path, O_RDONLY | O_NONBLOCK);
    if (*fd < 0) return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(errno));
    if (fstat(*fd, st) != 0) {
        const int e = errno;
        close(*fd);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st->st_mode)) {
        close(*fd);
        return elm_errorf(err, ELM_ERR_IO, "%s: not a regular file", path);
    }
    return ELM_OK;
}

/* The whole of fd (n > 0 bytes) mapped read-only. */
static elm_status map_fd(int fd, size_t n, const char *path, void **addr, elm_error *err) {
    void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return elm_errorf(err, ELM_ERR_IO, "%s: mmap: %s", path, strerror(errno));
    *addr = p;
    return ELM_OK;
}

enum { HUGE_PAGE = 2 << 20 };

/* Anonymous memory for n bytes starting on a HUGE_PAGE boundary, or MAP_FAILED. */
static void *map_aligned(size_t n) {
    const size_t len = (n + 4095) / 4096 * 4096;
    char *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (p == MAP_FAILED) return p;
    char *q = (char *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (q > p) munmap(p, (size_t)(q - p));
    if (q + len < p + len + HUGE_PAGE) munmap(q + len, (size_t)(p + len + HUGE_PAGE - (q + len)));
#ifdef MADV_HUGEPAGE
    madvise(q, len, MADV_HUGEPAGE);
#endif
    return q;
}

/* The whole of fd (n > 0 bytes) read into huge-page-aligned anonymous memory. */
static elm_status read_fd_huge(int fd, size_t n, const char *path, void **addr, elm_error *err) {
    char *p = map_aligned(n);
    if (p == MAP_FAILED)
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, n);
    /* 2 MiB reads: one huge page each (a single large read measured 9x slower to fault in) */
    for (size_t off = 0; off < n;) {
        const size_t want = n - off < HUGE_PAGE ? n - off : HUGE_PAGE;
        const ssize_t got = pread(fd, p + off, want, (off_t)off);
        if (got <= 0) {
            const int e = errno;
            elm_unmap(p, n);
            return elm_errorf(err, ELM_ERR_IO, "%s: read at offset %zu: %s", path, off,
                              got == 0 ? "unexpected end of file" : strerror(e));
        }
        off += (size_t)got;
    }
    *addr = p;
    return ELM_OK;
}

/* elm_map_file and elm_read_file_huge: the file opened and checked, its contents brought in by
 * `in` (not called for an empty file: *addr NULL, *size 0), the file closed. */
static elm_status contents(const char *path, void **addr, size_t *size, elm_error *err,
                           elm_status (*in)(int, size_t, const char *, void **, elm_error *)) {
    *addr = NULL;
    *size = 0;
    int fd;
    struct stat st;
    elm_status status = open_regular(path, &fd, &st, err);
    if (status) return status;
    const size_t n = (size_t)st.st_size;
    if (n) status = in(fd, n, path, addr, err);
    close(fd);
    if (!status) *size = n;
    return status;
}

elm_status elm_map_file(const char *path, void **addr, size_t *size, elm_error *err) {
    return contents(path, addr, size, err, map_fd);
}

elm_status elm_read_file_huge(const char *path, void **addr, size_t *size, elm_error *err) {
    return contents(path, addr, size, err, read_fd_huge);
}

void elm_unmap(void *addr, size_t size) {
    if (addr && size) munmap(addr, size);
}

elm_status elm_read_file(const char *path, size_t max_bytes, char **buf, size_t *size,
                         elm_error *err) {
    *buf = NULL;
    *size = 0;
    int fd;
    struct stat st;
    elm_status status = open_regular(path, &fd, &st, err);
    if (status) return status;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        const int e = errno;
        close(fd);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(e));
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

/* The output is first an unnamed file (O_TMPFILE) in the target's folder, so an interrupted or
 * killed run leaves nothing behind; it gets a name only at commit. Filesystems without O_TMPFILE
 * fall back to a named temporary (mkstemp) that abort removes. */
elm_status elm_out_open(elm_out *o, const char *path, elm_error *err) {
    memset(o, 0, sizeof *o);
    size_t len = strlen(path);
    if (len == 0) return elm_errorf(err, ELM_ERR_ARG, "output path is empty");
    if (len >= sizeof o->path - 32)
        return elm_errorf(err, ELM_ERR_ARG, "%s: output path too long", path);
    if (path[len - 1] == '/')
        return elm_errorf(err, ELM_ERR_ARG, "%s: output path names a folder, not a file", path);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return elm_errorf(err, ELM_ERR_IO,
                          "%s: exists and is not a regular file (outputs replace regular files only)",
                          path);
    strcpy(o->path, path);
    char dir[sizeof o->path];
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);

#if defined(O_TMPFILE) && !defined(__ANDROID__)
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
#else
    /* Android: naming an unnamed file (linkat through /proc/self/fd) is not something app SELinux
     * domains can count on, so apps take the named temporary; libcs without O_TMPFILE do too. */
    int fd = -1;
    errno = EOPNOTSUPP;
#endif
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", path);
        fd = mkstemp(o->tmp);
        if (fd >= 0) fchmod(fd, 0644);
        else o->tmp[0] = '\0';
    }
    if (fd < 0) return elm_errorf(err, ELM_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        if (o->tmp[0]) unlink(o->tmp);
        return elm_errorf(err, ELM_ERR_IO, "%s: %s", path, strerror(e));
    }
    return ELM_OK;
}

/* Gives the unnamed file a temporary name beside the target (o->tmp), through /proc or, failing
 * that, AT_EMPTY_PATH. */
static int name_tmpfile(elm_out *o, int fd) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int k = 0; k < 100; k++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%d", o->path, (long)getpid(), k);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        if (errno == EEXIST) continue;
#ifdef AT_EMPTY_PATH
        if (linkat(fd, "", AT_FDCWD, o->tmp, AT_EMPTY_PATH) == 0) return 0;
#endif
        if (errno != EEXIST) break;
    }
    o->tmp[0] = '\0';
    return -1;
}

elm_status elm_out_write(elm_out *o, const void *buf, size_t n, elm_error *err) {
    if (n && fwrite(buf, 1, n, o->f) != n)
        return elm_errorf(err, ELM_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    return ELM_OK;
}

elm_status elm_out_commit(elm_out *o, elm_error *err) {
    const bool unnamed = o->tmp[0] == '\0';
    int bad = fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
    int e = errno;
    if (!bad && unnamed && name_tmpfile(o, fileno(o->f)) != 0) bad = 1, e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad) {
        if (o->tmp[0]) unlink(o->tmp);
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

const char *elm_base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}
