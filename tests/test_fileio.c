/* Atomic outputs: nothing is visible in the folder until commit (so a killed process leaves no
 * partial file), commit replaces an existing file, abort leaves nothing, and non-regular targets
 * (devices, folders) are refused before any work. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/fileio.h"

static int entries(const char *dir) {
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    char *dir = check_tmp_dir();
    if (!dir) return check_skip("cannot create a temporary folder");
    char path[256];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    elm_out o;
    elm_error err;

    CHECK(elm_out_open(&o, path, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_out_write(&o, "hello", 5, &err) == ELM_OK, "%s", err.msg);
    CHECK(entries(dir) == 0, "a file is visible before commit (%d entries)", entries(dir));
    CHECK(elm_out_commit(&o, &err) == ELM_OK, "%s", err.msg);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 5 && entries(dir) == 1, "committed file");

    CHECK(elm_out_open(&o, path, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_out_write(&o, "bye", 3, &err) == ELM_OK, "%s", err.msg);
    elm_out_abort(&o);
    CHECK(stat(path, &st) == 0 && st.st_size == 5 && entries(dir) == 1, "abort keeps the old file only");

    CHECK(elm_out_open(&o, path, &err) == ELM_OK, "%s", err.msg);
    CHECK(elm_out_write(&o, "replaced", 8, &err) == ELM_OK && elm_out_commit(&o, &err) == ELM_OK, "%s", err.msg);
    CHECK(stat(path, &st) == 0 && st.st_size == 8 && entries(dir) == 1, "commit replaces");

    CHECK(elm_out_open(&o, "/dev/null", &err) == ELM_ERR_IO && strstr(err.msg, "not a regular file"),
          "device accepted: %s", err.msg);
    CHECK(elm_out_open(&o, dir, &err) == ELM_ERR_IO, "folder accepted: %s", err.msg);
    char slash[300];
    snprintf(slash, sizeof slash, "%s/", dir);
    CHECK(elm_out_open(&o, slash, &err) == ELM_ERR_ARG, "trailing slash accepted: %s", err.msg);
    CHECK(elm_out_open(&o, "/nonexistent-dir/x.gguf", &err) == ELM_ERR_IO &&
              strstr(err.msg, "/nonexistent-dir/x.gguf"), "missing folder: %s", err.msg);

    unlink(path);
    rmdir(dir);
    free(dir);
    return check_done();
}
