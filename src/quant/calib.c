/* Calibration sets (edgelm/quant.h): the seeded, weighted mix of sources `edgelm calib` writes,
 * and the token sequences GPTQ/AWQ run through the model. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "edgelm/quant.h"

/* splitmix64 (Steele, Lea, Flood 2014): a tiny, well-mixed generator, the same on every platform. */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fisher-Yates shuffle of idx [n]; the modulo bias is irrelevant at these sizes. */
static void shuffle(int32_t *idx, int32_t n, uint64_t *rng) {
    for (int32_t i = n - 1; i > 0; i--) {
        int32_t j = (int32_t)(rng_next(rng) % (uint64_t)(i + 1));
        int32_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* Tokenizes text with BOS into a malloc'd array (*ids, *n), sized by a first guess of one token
 * per byte (byte-fallback BPE never needs more) and grown when a vocabulary does need more. */
static elm_status tokenize(const elm_vocab *v, const char *text, int32_t **ids, int64_t *n,
                           elm_error *err) {
    const size_t len = strlen(text);
    int64_t cap = (int64_t)len + 2;
    *n = 0;
    *ids = NULL;
    for (;;) {
        int32_t *p = realloc(*ids, sizeof(int32_t) * (size_t)cap);
        if (!p) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
        *ids = p;
        *n = elm_tokenize(v, text, len, v->add_bos, *ids, cap, err);
        if (*n < 0) return err->code;
        if (*n <= cap) return ELM_OK;
        cap = *n;
    }
}

/* --------------------------------------------------------------------------- build */

typedef struct candidate {
    char *text; /* owned until moved into a sample */
    int32_t n_tokens;
} candidate;

typedef struct pool {
    int32_t n;
    candidate *c;
} pool;

static void pool_free(pool *p) {
    for (int32_t i = 0; i < p->n; i++) free(p->c[i].text);
    free(p->c);
}

/* The eligible samples of one source, truncated to seq_len tokens. */
static elm_status read_source(const elm_vocab *v, const elm_calib_source *s,
                              const elm_calib_build_params *p, pool *out, int32_t *n_read,
                              elm_error *err) {
    elm_text_set ts;
    elm_status st = elm_text_set_read(s->path, p->split, p->tmpl, &ts, err);
    *n_read = ts.n;
    out->c = st ? NULL : calloc(ts.n ? (size_t)ts.n : 1, sizeof *out->c);
    if (!st && !out->c) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", s->path);
    const bool bos = v->add_bos && v->bos_id >= 0;
    for (int32_t i = 0; i < ts.n && !st; i++) {
        int32_t *ids = NULL;
        int64_t n = 0;
        st = tokenize(v, ts.texts[i], &ids, &n, err);
        if (!st && n >= p->min_tokens && n > (bos ? 1 : 0)) {
            candidate *c = &out->c[out->n];
            if (n > p->seq_len) {
                /* the text of the first seq_len tokens, re-counted as the quantizer will read it */
                c->text = elm_detokenize(v, ids + bos, p->seq_len - bos, v->add_space_prefix);
                free(ids);
                ids = NULL;
                if (!c->text) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", s->path);
                if (!st) st = tokenize(v, c->text, &ids, &n, err);
                if (n > p->seq_len) n = p->seq_len;
            } else {
                c->text = ts.texts[i];
                ts.texts[i] = NULL;
            }
            c->n_tokens = (int32_t)n;
            out->n++;
        }
        free(ids);
    }
    elm_text_set_free(&ts);
    return st;
}

/* Splits n across sources by weight, largest remainder first (lower index on ties), capping each
 * at what it has and handing the rest to the others until n is met or all are exhausted. */
static void allot(const elm_calib_source *src, const int32_t *avail, int32_t n_src, int32_t n,
                  int32_t *quota, int32_t *add, double *frac) {
    memset(quota, 0, sizeof *quota * (size_t)n_src);
    for (;;) {
        int32_t given = 0;
        double wsum = 0;
        for (int32_t i = 0; i < n_src; i++) {
            given += quota[i];
            if (quota[i] < avail[i]) wsum += src[i].weight;
        }
        int32_t left = n - given;
        if (left <= 0 || wsum <= 0) return;
        int32_t add_total = 0;
        for (int32_t i = 0; i < n_src; i++) {
            add[i] = 0;
            frac[i] = -1;
            if (quota[i] >= avail[i]) continue;
            double exact = left * src[i].weight / wsum;
            add[i] = (int32_t)exact;
            frac[i] = exact - add[i];
            add_total += add[i];
        }
        for (int32_t k = add_total; k < left; k++) {
            int32_t best = -1;
            for (int32_t i = 0; i < n_src; i++)
                if (quota[i] < avail[i] && frac[i] >= 0 && (best < 0 || frac[i] > frac[best]))
                    best = i;
            if (best < 0) break;
            add[best]++;
            frac[best] = -1;
        }
        int32_t progress = 0;
        for (int32_t i = 0; i < n_src; i++) {
            int32_t room = avail[i] - quota[i], a = add[i] < room ? add[i] : room;
            quota[i] += a;
            progress += a;
        }
        if (!progress) return;
    }
}

elm_status elm_calib_build(const elm_vocab *v, const elm_calib_source *sources, int32_t n_sources,
                           const elm_calib_build_params *p, elm_calib_built *out, elm_error *err) {
    *out = (elm_calib_built){0};
    if (n_sources <= 0) return elm_errorf(err, ELM_ERR_ARG, "no calibration sources");
    if (p->n_samples <= 0 || p->seq_len < 2)
        return elm_errorf(err, ELM_ERR_ARG, "calibration: %d samples of %d tokens is not a set",
                          p->n_samples, p->seq_len);
    for (int32_t i = 0; i < n_sources; i++)
        if (!(sources[i].weight > 0))
            return elm_errorf(err, ELM_ERR_ARG, "%s: source weight %g must be positive",
                              sources[i].path, sources[i].weight);
    pool *pools = calloc((size_t)n_sources, sizeof *pools);
    out->n_sources = n_sources;
    out->read = calloc((size_t)n_sources, sizeof(int32_t));
    out->eligible = calloc((size_t)n_sources, sizeof(int32_t));
    out->selected = calloc((size_t)n_sources, sizeof(int32_t));
    elm_status st = ELM_OK;
    if (!pools || !out->read || !out->eligible || !out->selected)
        st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    int32_t total = 0;
    for (int32_t i = 0; i < n_sources && !st; i++) {
        st = read_source(v, &sources[i], p, &pools[i], &out->read[i], err);
        out->eligible[i] = pools[i].n;
        total += pools[i].n;
    }
    if (!st && total == 0)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s%s: no sample has at least %d tokens",
                        sources[0].path, n_sources > 1 ? " and the other sources" : "",
                        p->min_tokens);
    int32_t want = p->n_samples < total ? p->n_samples : total;
    int32_t *order = NULL, *add = NULL;
    double *frac = NULL;
    if (!st) {
        out->samples = calloc(want > 0 ? (size_t)want : 1, sizeof *out->samples);
        order = malloc(sizeof *order * (total > 0 ? (size_t)total : 1));
        add = malloc(sizeof *add * (size_t)(uint32_t)n_sources);
        frac = malloc(sizeof *frac * (size_t)(uint32_t)n_sources);
        if (!out->samples || !order || !add || !frac)
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        allot(sources, out->eligible, n_sources, want, out->selected, add, frac);
        for (int32_t i = 0; i < n_sources; i++) {
            uint64_t rng = p->seed ^ (0x5851f42d4c957f2dull * (uint64_t)(i + 1));
            for (int32_t k = 0; k < pools[i].n; k++) order[k] = k;
            shuffle(order, pools[i].n, &rng);
            for (int32_t k = 0; k < out->selected[i]; k++) {
                candidate *c = &pools[i].c[order[k]];
                out->samples[out->n++] = (elm_calib_sample){c->text, c->n_tokens, i};
                c->text = NULL;
            }
        }
        uint64_t rng = p->seed;
        for (int32_t k = 0; k < out->n; k++) order[k] = k;
        shuffle(order, out->n, &rng);
        elm_calib_sample *mixed = malloc(sizeof *mixed * (out->n > 0 ? (size_t)out->n : 1));
        if (!mixed) {
            st = elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
        } else {
            for (int32_t k = 0; k < out->n; k++) mixed[k] = out->samples[order[k]];
            free(out->samples);
            out->samples = mixed;
        }
    }
    free(order);
    free(add);
    free(frac);
    for (int32_t i = 0; pools && i < n_sources; i++) pool_free(&pools[i]);
    free(pools);
    return st;
}

void elm_calib_built_free(elm_calib_built *b) {
    for (int32_t i = 0; b->samples && i < b->n; i++) free(b->samples[i].text);
    free(b->samples);
    free(b->read);
    free(b->eligible);
    free(b->selected);
    *b = (elm_calib_built){0};
}

elm_status elm_calib_write_jsonl(const elm_calib_built *b, const elm_calib_source *sources,
                                 const char *path, elm_error *err) {
    elm_out o = {0};
    elm_status st = elm_out_open(&o, path, err);
    for (int32_t i = 0; i < b->n && !st; i++) {
        const elm_calib_sample *s = &b->samples[i];
        cJSON *j = cJSON_CreateObject();
        char *line = NULL;
        if (j && cJSON_AddStringToObject(j, "text", s->text) &&
            cJSON_AddStringToObject(j, "source", sources[s->source].path) &&
            cJSON_AddNumberToObject(j, "n_tokens", s->n_tokens))
            line = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!line) st = elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
        if (!st) st = elm_out_write(&o, line, strlen(line), err);
        if (!st) st = elm_out_write(&o, "\n", 1, err);
        free(line);
    }
    if (st) {
        if (o.f) elm_out_abort(&o);
        return st;
    }
    return elm_out_commit(&o, err);
}

/* ------------------------------------------------------------------ token sequences */

elm_status elm_calib_from_texts(const elm_vocab *v, const char *const *texts, int32_t n,
                                int32_t seq_len, elm_calib_set *out, elm_error *err) {
    *out = (elm_calib_set){0};
    if (seq_len < 2) return elm_errorf(err, ELM_ERR_ARG, "calibration sequence length %d < 2", seq_len);
    out->ids = calloc(n > 0 ? (size_t)n : 1, sizeof *out->ids);
    out->n_ids = calloc(n > 0 ? (size_t)n : 1, sizeof *out->n_ids);
    if (!out->ids || !out->n_ids) return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    const int64_t min = v->add_bos && v->bos_id >= 0 ? 2 : 1;
    for (int32_t i = 0; i < n; i++) {
        int32_t *ids;
        int64_t k;
        elm_status st = tokenize(v, texts[i], &ids, &k, err);
        if (st) {
            free(ids);
            return st;
        }
        if (k < min) {
            free(ids);
            continue;
        }
        if (k > seq_len) k = seq_len;
        out->ids[out->n] = ids;
        out->n_ids[out->n++] = (int32_t)k;
        out->n_tokens += k;
    }
    return ELM_OK;
}

elm_status elm_calib_load(const elm_vocab *v, const char *path, int32_t seq_len,
                          int32_t max_samples, elm_calib_set *out, elm_error *err) {
    *out = (elm_calib_set){0};
    elm_text_set ts;
    elm_status st = elm_text_set_read(path, ELM_CALIB_SPLIT_LINE, NULL, &ts, err);
    int32_t n = max_samples > 0 && max_samples < ts.n ? max_samples : ts.n;
    if (!st) st = elm_calib_from_texts(v, (const char *const *)ts.texts, n, seq_len, out, err);
    if (!st && out->n == 0)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: no calibration samples (the file is empty)", path);
    elm_text_set_free(&ts);
    return st;
}

void elm_calib_free(elm_calib_set *s) {
    for (int32_t i = 0; s->ids && i < s->n; i++) free(s->ids[i]);
    free(s->ids);
    free(s->n_ids);
    *s = (elm_calib_set){0};
}
