/* Minimal test harness: CHECK records a failure and goes on; check_done prints the closing line
 * "N passed, N failed" and returns the exit status. argv[1] of every test is the fixtures folder. */
#ifndef EDGELM_TESTS_CHECK_H
#define EDGELM_TESTS_CHECK_H

#include <stdio.h>

extern int check_passed, check_failed;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (cond) {                                                         \
            check_passed++;                                                 \
        } else {                                                            \
            check_failed++;                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

/* Path under the fixtures folder given on the command line (static buffer, rotated 8 deep). */
const char *fixture(const char *rel);
void check_init(int argc, char **argv);

/* Parses a JSON file (a golden); NULL (and a recorded failure) if unreadable. Free with cJSON_Delete. */
struct cJSON *check_load_json(const char *path);

/* Copies of int arrays from a JSON array of numbers; returns the count (<= cap). */
int check_json_ids(const struct cJSON *arr, int *out, int cap);
/* "N passed, N failed"; EXIT_FAILURE when a check failed or when none ran at all (a test that
 * checked nothing proves nothing). */
int check_done(void);

/* ctest's SKIP_RETURN_CODE for every test (CMakeLists.txt): a test that cannot run returns it and
 * is listed as skipped, never as passed. */
#define CHECK_SKIP_CODE 77

/* Prints "SKIPPED: why" and returns CHECK_SKIP_CODE, for main to return. */
int check_skip(const char *why);

/* A fresh folder for the test's files under $TMPDIR (default /tmp); the caller frees the name
 * (and removes the folder). NULL when it cannot be created. */
char *check_tmp_dir(void);

/* The number at `key` ("files.q4_0-pure.ppl": object keys joined by dots) of the golden JSON file
 * `rel` under the fixtures folder: reference figures come from the goldens, never from literals.
 * NaN (and a recorded failure) when the file or the key is missing. */
double check_golden_number(const char *rel, const char *key);

#endif
