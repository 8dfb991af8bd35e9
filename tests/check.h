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
int check_done(void);

#endif
