/* A main for a libFuzzer harness without libFuzzer: runs LLVMFuzzerTestOneInput once on each file
 * named, and on each file of each folder named, as `harness -runs=0 CORPUS` or `harness FILE...`
 * does (arguments starting with '-' are libFuzzer's flags, ignored). The ASan+UBSan build links
 * every harness with it (build-asan/fuzz/), so that `make test` replays the corpora and the saved
 * crash inputs (tests/cli_fuzz.sh) in a tree it builds anyway; `make fuzz` builds the fuzzers
 * themselves with clang. Exit status 1 when an input cannot be read; a failing input aborts. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads path whole and runs the harness on it; 0, or 1 (with a line) when it cannot be read. */
static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (f) fclose(f);
        return 1;
    }
    const size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    const int ok = data && fread(data, 1, size, f) == size;
    fclose(f);
    if (ok) LLVMFuzzerTestOneInput(data, size);
    else fprintf(stderr, "replay: cannot read %s\n", path);
    free(data);
    return !ok;
}

/* Runs the harness on every regular file directly in dir, in name order. */
static int run_dir(const char *dir) {
    struct dirent **names;
    const int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", dir);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            bad |= run_file(path);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv) {
    int bad = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') continue;
        bad |= stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        runs++;
    }
    if (!runs) fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return bad || !runs;
}
