/* What starting a model costs an app, measured through the app API: wall time and resident
 * memory (Linux /proc/self/status: VmRSS, of it RssAnon, the part that is not file pages the OS
 * can drop and re-read, and the peak VmHWM) after edgelm_model_load, after edgelm_ctx_new, and after
 * the first generated token (which touches every weight once). The API maps GGUF files in a
 * -DEDGELM_MINIMAL=ON or Android build and reads them into memory otherwise (src/api/api_model.c).
 *
 *   build:  make   (build/example_load_stats MODEL [N_CTX [THREADS]])
 *   e.g.    edgelm synth --preset tinyllama-1.1b --type q4_0 -o /tmp/tl.gguf
 *           build/example_load_stats /tmp/tl.gguf 512 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgelm/edgelm.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A "VmRSS:"-style line of /proc/self/status in MiB, or -1 where there is none. */
static double status_mib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double mib = -1;
    const size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) {
            mib = atof(line + n) / 1024.0; /* kB */
            break;
        }
    fclose(f);
    return mib;
}

static void report(const char *step, double ms) {
    printf("%-12s %9.1f ms   rss %7.1f MiB (anon %7.1f)   peak %7.1f MiB\n", step, ms,
           status_mib("VmRSS:"), status_mib("RssAnon:"), status_mib("VmHWM:"));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [N_CTX [THREADS]]\n", argv[0]);
        return 1;
    }
    char err[512];
    report("start", 0);
    double t = now_ms();
    edgelm_model *model = NULL;
    if (edgelm_model_load(argv[1], &model, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    report("load", now_ms() - t);
    edgelm_params p = edgelm_default_params();
    p.n_ctx = argc > 2 ? atoi(argv[2]) : 512;
    p.n_threads = argc > 3 ? atoi(argv[3]) : 0;
    p.temp = 0;
    edgelm_ctx *ctx = NULL;
    t = now_ms();
    if (edgelm_ctx_new(model, &p, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        edgelm_model_free(model);
        return 1;
    }
    report("context", now_ms() - t);
    t = now_ms();
    const int st = edgelm_generate(ctx, "Once upon a time", 1, NULL, NULL);
    if (st) fprintf(stderr, "%s\n", edgelm_last_error(ctx));
    else report("first token", now_ms() - t);
    edgelm_ctx_free(ctx);
    edgelm_model_free(model);
    return st ? 1 : 0;
}
