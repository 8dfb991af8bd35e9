/* Retrieved chunks as JSON (include/edgelm/rag.h, elm_hits_json): the one shape of a hit that
 * `edgelm search --json` prints (elm_search_json) and the server's citations carry. */
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

static cJSON *hits_array(const elm_hit *hits, int32_t n, const char *number_key) {
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, hit_json(&hits[i], i + 1, number_key));
    return a;
}

char *elm_hits_json(const elm_hit *hits, int32_t n, const char *number_key) {
    cJSON *a = hits_array(hits, n, number_key);
    char *text = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return text;
}

char *elm_search_json(const char *question, elm_search_mode mode, int32_t k, double ms,
                      const elm_hit *hits, int32_t n, bool pretty) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "question", question);
    cJSON_AddStringToObject(root, "mode", elm_search_mode_name(mode));
    cJSON_AddNumberToObject(root, "k", k);
    cJSON_AddNumberToObject(root, "ms", ms);
    cJSON_AddItemToObject(root, "results", hits_array(hits, n, "rank"));
    char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}
