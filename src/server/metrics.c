/* Counters and histograms of GET /metrics (see metrics.h). Bucket bounds are in seconds: time to
 * first token spans a cached one-token prompt (milliseconds) to a long prefill behind a queue
 * (tens of seconds); per-token latency spans one decode step on a fast CPU to a step slowed by a
 * neighbour's prompt chunk. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "server/metrics.h"

/* The routes counted on their own; anything else is "other". */
static const char *const ROUTES[] = {"/v1/chat/completions", "/v1/completions", "/v1/responses",
                                     "/v1/embeddings", "/v1/models", "/health", "/metrics",
                                     "/props", "/tokenize", "/detokenize", "/", "other"};
enum { N_ROUTES = sizeof ROUTES / sizeof ROUTES[0], MAX_PAIRS = 128, MAX_BOUNDS = 16 };

static const double TTFT_BOUNDS[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double TOKEN_BOUNDS[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1};

typedef struct histogram {
    const double *bounds;
    int n_bounds;
    uint64_t bucket[MAX_BOUNDS]; /* observations <= bounds[i], not cumulative (summed at render) */
    uint64_t count;
    double sum;
} histogram;

typedef struct request_count {
    int route;
    unsigned status;
    uint64_t n;
} request_count;

struct srv_metrics {
    pthread_mutex_t mu;
    request_count requests[MAX_PAIRS]; /* in order of first appearance */
    int n_pairs;
    uint64_t prompt_tokens, cached_tokens, generated_tokens, cache_hits;
    histogram ttft, token;
};

srv_metrics *srv_metrics_new(void) {
    srv_metrics *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->ttft = (histogram){.bounds = TTFT_BOUNDS, .n_bounds = sizeof TTFT_BOUNDS / sizeof(double)};
    m->token = (histogram){.bounds = TOKEN_BOUNDS, .n_bounds = sizeof TOKEN_BOUNDS / sizeof(double)};
    return m;
}

void srv_metrics_free(srv_metrics *m) {
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void srv_metrics_request(srv_metrics *m, const char *path, unsigned status) {
    int route = N_ROUTES - 1;
    for (int i = 0; i < N_ROUTES - 1; i++)
        if (!strcmp(path, ROUTES[i])) route = i;
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->n_pairs && (m->requests[i].route != route || m->requests[i].status != status)) i++;
    if (i == m->n_pairs && i < MAX_PAIRS) /* 11 routes by a dozen statuses: never full in practice */
        m->requests[m->n_pairs++] = (request_count){.route = route, .status = status};
    if (i < m->n_pairs) m->requests[i].n++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_job_start(srv_metrics *m, int32_t tokens, int32_t cached) {
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += (uint64_t)tokens;
    m->cached_tokens += (uint64_t)cached;
    m->cache_hits += cached > 0;
    pthread_mutex_unlock(&m->mu);
}

static void observe(histogram *h, double v) {
    int b = 0;
    while (b < h->n_bounds && v > h->bounds[b]) b++;
    if (b < h->n_bounds) h->bucket[b]++;
    h->count++;
    h->sum += v;
}

void srv_metrics_job_end(srv_metrics *m, int32_t generated) {
    pthread_mutex_lock(&m->mu);
    m->generated_tokens += (uint64_t)generated;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_token(srv_metrics *m, bool first, double seconds) {
    pthread_mutex_lock(&m->mu);
    observe(first ? &m->ttft : &m->token, seconds);
    pthread_mutex_unlock(&m->mu);
}

static void head(elm_sbuf *b, const char *name, const char *type, const char *help) {
    elm_sb_printf(b, "# HELP edgelm_%s %s\n# TYPE edgelm_%s %s\n", name, help, name, type);
}

static void scalar(elm_sbuf *b, const char *name, const char *type, const char *help, double v) {
    head(b, name, type, help);
    elm_sb_printf(b, "edgelm_%s %.17g\n", name, v);
}

static void render_histogram(elm_sbuf *b, const char *name, const char *help, const histogram *h) {
    head(b, name, "histogram", help);
    uint64_t cum = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->bucket[i];
        elm_sb_printf(b, "edgelm_%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
                      (unsigned long long)cum);
    }
    elm_sb_printf(b, "edgelm_%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
    elm_sb_printf(b, "edgelm_%s_sum %.17g\nedgelm_%s_count %llu\n", name, h->sum, name,
                  (unsigned long long)h->count);
}

char *srv_metrics_render(srv_metrics *m, int slots_busy, int slots_total, int waiting) {
    elm_sbuf b = {0};
    pthread_mutex_lock(&m->mu);
    head(&b, "requests_total", "counter", "HTTP requests answered, by route and status code");
    for (int i = 0; i < m->n_pairs; i++)
        elm_sb_printf(&b, "edgelm_requests_total{endpoint=\"%s\",code=\"%u\"} %llu\n",
                      ROUTES[m->requests[i].route], m->requests[i].status,
                      (unsigned long long)m->requests[i].n);
    scalar(&b, "prompt_tokens_total", "counter",
           "Prompt tokens of the requests given a slot, cached ones included", (double)m->prompt_tokens);
    scalar(&b, "prompt_tokens_cached_total", "counter",
           "Prompt tokens reused from a slot's cache (prefix caching)", (double)m->cached_tokens);
    scalar(&b, "prefix_cache_hits_total", "counter",
           "Requests given a slot that already held a prefix of their prompt", (double)m->cache_hits);
    scalar(&b, "tokens_generated_total", "counter",
           "Tokens generated (the completion_tokens of the replies)", (double)m->generated_tokens);
    render_histogram(&b, "time_to_first_token_seconds",
                     "From a request's submission to its first generated token", &m->ttft);
    render_histogram(&b, "time_per_output_token_seconds",
                     "Between two consecutive generated tokens of a request", &m->token);
    pthread_mutex_unlock(&m->mu);
    scalar(&b, "slots_busy", "gauge", "Slots generating or prefilling a request", slots_busy);
    scalar(&b, "slots_total", "gauge", "Slots (--parallel)", slots_total);
    scalar(&b, "requests_waiting", "gauge", "Requests queued for a free slot", waiting);
    return elm_sb_finish(&b);
}
