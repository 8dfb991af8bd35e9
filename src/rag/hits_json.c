/* Retrieved chunks as JSON (include/edgelm/rag.h, elm_hits_json): the one shape of a hit that
 * `edgelm search --json` prints and the server's citations carry. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "edgelm/rag.h"

/* A score, or null where the hit is not in its list (rank 0). */
static cJSON *score(int32_t rank, double value) {
    return rank ? cJSON_CreateNumber(value) : cJSON_CreateNull();
}

static cJSON *hit_json(const elm_hit *h, int32_t number, const char *number_key) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, number_key, number);
    cJSON_AddNumberToObject(r, "chunk_id", (double)h->chunk_id);
    cJSON_AddStringToObject(r, "file", h->file);
    cJSON_AddNumberToObject(r, "line_start", h->line_start);
    cJSON_AddNumberToObject(r, "line_end", h->line_end);
    cJSON_AddStringToObject(r, "heading", h->heading);
    cJSON_AddStringToObject(r, "text", h->text);
    cJSON *s = cJSON_AddObjectToObject(r, "scores");
    cJSON_AddNumberToObject(s, "fused", h->fused);
    cJSON_AddItemToObject(s, "bm25", score(h->bm25_rank, h->bm25));
    cJSON_AddItemToObject(s, "bm25_rank", score(h->bm25_rank, h->bm25_rank));
    cJSON_AddItemToObject(s, "cosine", score(h->cosine_rank, h->cosine));
    cJSON_AddItemToObject(s, "cosine_rank", score(h->cosine_rank, h->cosine_rank));
    return r;
}

char *elm_hits_json(const elm_hit *hits, int32_t n, const char *number_key) {
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, hit_json(&hits[i], i + 1, number_key));
    char *text = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return text;
}
