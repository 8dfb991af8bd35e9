/* A minimal chat program on the app API (include/edgelm/edgelm.h): load a model, open a context,
 * then for every line on stdin stream the reply and show "first token ms | tokens/s | tokens".
 *
 *   build:  make            (the binary is build/example_chat)
 *   run:    build/example_chat MODEL.gguf ["system prompt" [THREADS]] < questions.txt
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelm/edgelm.h"

static int show_piece(const char *piece, int32_t token_id, void *user) {
    (void)token_id;
    (void)user;
    fputs(piece, stdout);
    fflush(stdout);
    return 0; /* non-zero would stop the reply (a "stop" button) */
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [SYSTEM_PROMPT [THREADS]] < messages\n", argv[0]);
        return 1;
    }
    char err[512];
    edgelm_model *model = NULL;
    if (edgelm_model_load(argv[1], &model, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    edgelm_params p = edgelm_default_params();
    p.system_prompt = argc > 2 ? argv[2] : NULL;
    p.n_threads = argc > 3 ? atoi(argv[3]) : 0; /* 0: all cores */
    p.cache_type_k = "q8_0"; /* a quarter of the f32 cache for the keys */
    edgelm_ctx *ctx = NULL;
    if (edgelm_ctx_new(model, &p, &ctx, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        edgelm_model_free(model);
        return 1;
    }
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) continue;
        if (edgelm_chat(ctx, line, 256, show_piece, NULL)) {
            fprintf(stderr, "\nerror: %s\n", edgelm_last_error(ctx));
            break;
        }
        const edgelm_stats s = edgelm_get_stats(ctx);
        fprintf(stderr, "\n[first token %.0f ms | %.1f tokens/s | %d tokens | KV %.2f MiB]\n",
                s.ttft_ms, s.tokens_per_sec, s.tokens, s.kv_cache_bytes / 1048576.0);
    }
    edgelm_ctx_free(ctx);
    edgelm_model_free(model);
    return 0;
}
