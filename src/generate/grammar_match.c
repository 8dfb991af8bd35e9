/* Matching bytes against a compiled grammar (grammar.h), and the token masks built on it.
 *
 * A parse position is a stack: its top is a byte set element waiting for a byte, the entries
 * below it the places to return to when a rule ends (a pushdown automaton, as llama.cpp's
 * grammar stacks). Stacks are hash-consed nodes (pos, parent), so equal stacks are one id, and the
 * set of stacks the text so far can be in is a hash-consed sorted list of ids: a state. A state's
 * step by each byte is computed once and remembered, and so is the mask of tokens it allows, so
 * the text inside a long string or a list (the same state again and again) costs a lookup. The
 * mask walks the vocabulary's token bytes in sorted order, sharing each common prefix's steps
 * with the previous token and skipping every token under a prefix no state accepts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "generate/grammar_impl.h"

#define UNKNOWN (-1)
#define DEAD 0                    /* the empty state: no parse goes on */
#define MAX_TOKEN_BYTES 1024
#define COMPACT_NODES (1 << 20)   /* past this many stack nodes, the next accept starts afresh */
#define MASK_CACHE_BYTES (64 << 20)

typedef struct { int32_t pos, parent; } gnode;

typedef struct {
    int32_t off, n;   /* stack ids in items[off .. off + n), sorted */
    uint32_t hash;
    int32_t *next;    /* [256] the state after each byte, UNKNOWN until computed; NULL: none */
    uint32_t *mask;   /* [words] allowed tokens (bits by id), or NULL */
} gstate;

/* The stacks and states a matcher has met. Node 0 is the empty stack (the grammar matched). */
typedef struct {
    const elm_grammar *g;
    gnode *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *node_tab; /* open addressing, ids; size cap_nodes * 2 */
    int32_t *items;
    int64_t n_items, cap_items;
    gstate *states;
    int32_t n_states, cap_states;
    int32_t *state_tab; /* open addressing, ids; size cap_states * 2 */
    /* one expansion's scratch: the work list, the stacks found, the (pos, parent) pairs seen */
    int32_t *work, n_work, cap_work;
    int32_t *found, n_found, cap_found;
    uint64_t *seen;
    int32_t cap_seen, n_seen;
    int32_t *touched;   /* [cap_seen / 2] the slots of seen in use */
    bool nomem;
} gworld;

struct elm_grammar_vocab {
    const elm_vocab *v;
    int32_t n_vocab;
    int32_t n;          /* tokens with bytes, sorted by them */
    int32_t *ids;       /* [n] */
    int64_t *off;       /* [n + 1] into bytes */
    int32_t *lcp;       /* [n] bytes shared with the previous token */
    unsigned char *bytes;
    int32_t max_len;
    int32_t *end_ids;
    int32_t n_end;
};

struct elm_grammar_matcher {
    gworld w;
    const elm_grammar_vocab *gv;
    int32_t state;
    char *trigger;      /* lazy: the text that starts the grammar, or NULL */
    unsigned char *tail; /* the text accepted while waiting for it: its last bytes */
    size_t tail_len;
    bool waiting;       /* lazy and the trigger not seen yet */
    bool accepted_any;
    int32_t *walk;      /* [max_len + 1] states along the current token's bytes */
    size_t mask_bytes;  /* held by the states' masks */
};

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static bool grow(void **p, int32_t *cap, size_t elem, int32_t need) {
    if (need <= *cap) return true;
    int32_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *n = realloc(*p, elem * (size_t)c);
    if (!n) return false;
    *p = n, *cap = c;
    return true;
}

static void world_free(gworld *w) {
    for (int32_t i = 0; i < w->n_states; i++) {
        free(w->states[i].next);
        free(w->states[i].mask);
    }
    free(w->nodes);
    free(w->node_tab);
    free(w->items);
    free(w->states);
    free(w->state_tab);
    free(w->work);
    free(w->found);
    free(w->seen);
    free(w->touched);
    memset(w, 0, sizeof *w);
}

static int32_t cons(gworld *w, int32_t pos, int32_t parent);
static int32_t intern_state(gworld *w, const int32_t *ids, int32_t n);

/* A world with node 0 and the dead state; false when out of memory. */
static bool world_init(gworld *w, const elm_grammar *g) {
    memset(w, 0, sizeof *w);
    w->g = g;
    if (!grow((void **)&w->nodes, &w->cap_nodes, sizeof *w->nodes, 1024)) return false;
    if (!(w->node_tab = malloc(sizeof *w->node_tab * (size_t)w->cap_nodes * 2))) return false;
    memset(w->node_tab, 0xff, sizeof *w->node_tab * (size_t)w->cap_nodes * 2);
    w->nodes[w->n_nodes++] = (gnode){-1, -1};
    if (!grow((void **)&w->states, &w->cap_states, sizeof *w->states, 256)) return false;
    if (!(w->state_tab = malloc(sizeof *w->state_tab * (size_t)w->cap_states * 2))) return false;
    memset(w->state_tab, 0xff, sizeof *w->state_tab * (size_t)w->cap_states * 2);
    return intern_state(w, NULL, 0) == DEAD;
}

static uint32_t node_hash(int32_t pos, int32_t parent) {
    return (uint32_t)mix((uint64_t)(uint32_t)pos << 32 | (uint32_t)parent);
}

/* The id of stack (pos, parent), made if new; -1 when out of memory. */
static int32_t cons(gworld *w, int32_t pos, int32_t parent) {
    uint32_t mask = (uint32_t)w->cap_nodes * 2 - 1, h = node_hash(pos, parent) & mask;
    for (int32_t id; (id = w->node_tab[h]) >= 0; h = (h + 1) & mask)
        if (w->nodes[id].pos == pos && w->nodes[id].parent == parent) return id;
    if (w->n_nodes == w->cap_nodes) {
        if (!grow((void **)&w->nodes, &w->cap_nodes, sizeof *w->nodes, w->n_nodes + 1)) return -1;
        int32_t *tab = malloc(sizeof *tab * (size_t)w->cap_nodes * 2);
        if (!tab) return -1;
        memset(tab, 0xff, sizeof *tab * (size_t)w->cap_nodes * 2);
        mask = (uint32_t)w->cap_nodes * 2 - 1;
        for (int32_t i = 1; i < w->n_nodes; i++) {
            uint32_t k = node_hash(w->nodes[i].pos, w->nodes[i].parent) & mask;
            while (tab[k] >= 0) k = (k + 1) & mask;
            tab[k] = i;
        }
        free(w->node_tab);
        w->node_tab = tab;
        h = node_hash(pos, parent) & mask;
        while (w->node_tab[h] >= 0) h = (h + 1) & mask;
    }
    w->nodes[w->n_nodes] = (gnode){pos, parent};
    w->node_tab[h] = w->n_nodes;
    return w->n_nodes++;
}

static uint32_t ids_hash(const int32_t *ids, int32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++) h = mix(h ^ (uint32_t)ids[i]) + 0x9E3779B97F4A7C15ull;
    return (uint32_t)h;
}

/* The id of the state holding stacks ids [n] (sorted, distinct), made if new; -1 when out of
 * memory. */
static int32_t intern_state(gworld *w, const int32_t *ids, int32_t n) {
    const uint32_t hash = ids_hash(ids, n);
    uint32_t mask = (uint32_t)w->cap_states * 2 - 1, h = hash & mask;
    for (int32_t id; (id = w->state_tab[h]) >= 0; h = (h + 1) & mask) {
        const gstate *s = &w->states[id];
        if (s->hash == hash && s->n == n &&
            (n == 0 || !memcmp(w->items + s->off, ids, sizeof *ids * (size_t)n)))
            return id;
    }
    if (w->n_items + n > w->cap_items) {
        int64_t cap = w->cap_items ? w->cap_items : 1024;
        while (cap < w->n_items + n) cap *= 2;
        int32_t *it = realloc(w->items, sizeof *it * (size_t)cap);
        if (!it) return -1;
        w->items = it, w->cap_items = cap;
    }
    if (w->n_states == w->cap_states) {
        if (!grow((void **)&w->states, &w->cap_states, sizeof *w->states, w->n_states + 1))
            return -1;
        int32_t *tab = malloc(sizeof *tab * (size_t)w->cap_states * 2);
        if (!tab) return -1;
        memset(tab, 0xff, sizeof *tab * (size_t)w->cap_states * 2);
        mask = (uint32_t)w->cap_states * 2 - 1;
        for (int32_t i = 0; i < w->n_states; i++) {
            uint32_t k = w->states[i].hash & mask;
            while (tab[k] >= 0) k = (k + 1) & mask;
            tab[k] = i;
        }
        free(w->state_tab);
        w->state_tab = tab;
        h = hash & mask;
        while (w->state_tab[h] >= 0) h = (h + 1) & mask;
    }
    if (n) memcpy(w->items + w->n_items, ids, sizeof *ids * (size_t)n);
    w->states[w->n_states] = (gstate){.off = (int32_t)w->n_items, .n = n, .hash = hash};
    w->n_items += n;
    w->state_tab[h] = w->n_states;
    return w->n_states++;
}

/* Marks (pos, parent) seen in this expansion; false when it already was. */
static bool first_visit(gworld *w, int32_t pos, int32_t parent) {
    if (2 * (w->n_seen + 1) > w->cap_seen) {
        const int32_t cap = w->cap_seen ? w->cap_seen * 2 : 256;
        uint64_t *t = malloc(sizeof *t * (size_t)cap);
        int32_t *touched = malloc(sizeof *touched * (size_t)(cap / 2));
        if (!t || !touched) {
            free(t);
            free(touched);
            return w->nomem = true, false;
        }
        memset(t, 0xff, sizeof *t * (size_t)cap);
        for (int32_t i = 0; i < w->n_seen; i++) {
            const uint64_t key = w->seen[w->touched[i]];
            uint32_t k = (uint32_t)mix(key) & (uint32_t)(cap - 1);
            while (t[k] != UINT64_MAX) k = (k + 1) & (uint32_t)(cap - 1);
            t[k] = key;
            touched[i] = (int32_t)k;
        }
        free(w->seen);
        free(w->touched);
        w->seen = t, w->touched = touched, w->cap_seen = cap;
    }
    const uint64_t key = (uint64_t)(uint32_t)pos << 32 | (uint32_t)parent;
    uint32_t k = (uint32_t)mix(key) & (uint32_t)(w->cap_seen - 1);
    for (; w->seen[k] != UINT64_MAX; k = (k + 1) & (uint32_t)(w->cap_seen - 1))
        if (w->seen[k] == key) return false;
    w->seen[k] = key;
    w->touched[w->n_seen++] = (int32_t)k;
    return true;
}

static bool push_work(gworld *w, int32_t pos, int32_t parent) {
    if (!grow((void **)&w->work, &w->cap_work, sizeof *w->work, w->n_work + 2))
        return w->nomem = true, false;
    w->work[w->n_work++] = pos;
    w->work[w->n_work++] = parent;
    return true;
}

static void add_found(gworld *w, int32_t id) {
    if (id < 0 || !grow((void **)&w->found, &w->cap_found, sizeof *w->found, w->n_found + 1)) {
        w->nomem = true;
        return;
    }
    w->found[w->n_found++] = id;
}

/* Every stack reachable from "continue at pos, then return to parent" without a byte: pops past
 * ended alternatives, expands rule references into their alternatives (a reference last in its
 * alternative returns straight to the parent, so right recursion does not grow the stack) and
 * collects the stacks whose top waits for a byte, or node 0 when the whole grammar has ended. */
static void expand(gworld *w, int32_t pos, int32_t parent) {
    const elm_grammar *g = w->g;
    if (!push_work(w, pos, parent)) return;
    while (w->n_work && !w->nomem) {
        parent = w->work[--w->n_work];
        pos = w->work[--w->n_work];
        while (first_visit(w, pos, parent)) {
            const int32_t e = g->elems[pos];
            if (e == GR_END) {
                if (parent == 0) {
                    add_found(w, 0);
                    break;
                }
                pos = w->nodes[parent].pos;
                parent = w->nodes[parent].parent;
                continue;
            }
            if (!GR_IS_RULE(e)) {
                add_found(w, cons(w, pos, parent));
                break;
            }
            const int32_t r = GR_RULE_OF(e);
            const int32_t ret = g->elems[pos + 1] == GR_END ? parent : cons(w, pos + 1, parent);
            if (ret < 0) {
                w->nomem = true;
                break;
            }
            for (int32_t a = g->rule_alt[r]; a < g->rule_alt[r + 1]; a++)
                if (!push_work(w, g->alt_start[a], ret)) break;
            break;
        }
    }
}

static int cmp_id(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void expand_begin(gworld *w) {
    w->n_found = w->n_work = 0;
    for (int32_t i = 0; i < w->n_seen; i++) w->seen[w->touched[i]] = UINT64_MAX;
    w->n_seen = 0;
}

/* The state of the stacks found, sorted and distinct; -1 when out of memory. */
static int32_t expand_end(gworld *w) {
    if (w->nomem) return w->nomem = false, -1;
    int32_t *f = w->found;
    if (w->n_found > 32) {
        qsort(f, (size_t)w->n_found, sizeof *f, cmp_id);
    } else { /* the usual few stacks: no call per comparison */
        for (int32_t i = 1; i < w->n_found; i++) {
            const int32_t x = f[i];
            int32_t j = i;
            for (; j > 0 && f[j - 1] > x; j--) f[j] = f[j - 1];
            f[j] = x;
        }
    }
    int32_t n = 0;
    for (int32_t i = 0; i < w->n_found; i++)
        if (!n || w->found[n - 1] != w->found[i]) w->found[n++] = w->found[i];
    return intern_state(w, w->found, n);
}

/* The state at the start of the grammar. */
static int32_t start_state(gworld *w) {
    expand_begin(w);
    const elm_grammar *g = w->g;
    for (int32_t a = g->rule_alt[g->root]; a < g->rule_alt[g->root + 1]; a++)
        expand(w, g->alt_start[a], 0);
    return expand_end(w);
}

/* State s after byte b (remembered); DEAD when no stack accepts it, -1 when out of memory. */
static int32_t step(gworld *w, int32_t s, unsigned char b) {
    gstate *st = &w->states[s];
    if (st->next && st->next[b] != UNKNOWN) return st->next[b];
    if (s == DEAD) return DEAD;
    if (!st->next) {
        if (!(st->next = malloc(sizeof *st->next * 256))) return -1;
        for (int i = 0; i < 256; i++) st->next[i] = UNKNOWN;
    }
    expand_begin(w);
    for (int32_t i = 0; i < st->n; i++) {
        const int32_t id = w->items[st->off + i];
        if (id == 0) continue;
        const gnode nd = w->nodes[id];
        if (gr_byteset_has(&w->g->sets[w->g->elems[nd.pos]], b)) expand(w, nd.pos + 1, nd.parent);
    }
    const int32_t r = expand_end(w);
    if (r >= 0) w->states[s].next[b] = r; /* states may have moved */
    return r;
}

static bool state_accepts(const gworld *w, int32_t s) {
    const gstate *st = &w->states[s];
    return st->n > 0 && w->items[st->off] == 0; /* sorted: node 0 first */
}

int elm_grammar_match_text(const elm_grammar *g, const char *text, size_t len) {
    gworld w;
    int result = 0;
    int32_t s = world_init(&w, g) ? start_state(&w) : -1;
    for (size_t i = 0; s > DEAD && i < len; i++) s = step(&w, s, (unsigned char)text[i]);
    if (s > DEAD) result = state_accepts(&w, s) ? 2 : 1;
    world_free(&w);
    return result;
}

/* ---- vocabulary ---- */

typedef struct { const unsigned char *p; int32_t len, id; } token_bytes;

static int by_bytes(const void *a, const void *b) {
    const token_bytes *x = a, *y = b;
    const int c = memcmp(x->p, y->p, (size_t)(x->len < y->len ? x->len : y->len));
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

void elm_grammar_vocab_free(elm_grammar_vocab *gv) {
    if (!gv) return;
    free(gv->ids);
    free(gv->off);
    free(gv->lcp);
    free(gv->bytes);
    free(gv->end_ids);
    free(gv);
}

static bool is_end(const elm_grammar_vocab *gv, int32_t id) {
    for (int32_t i = 0; i < gv->n_end; i++)
        if (gv->end_ids[i] == id) return true;
    return false;
}

elm_grammar_vocab *elm_grammar_vocab_new(const elm_vocab *v, const int32_t *end_ids,
                                         int32_t n_end) {
    return elm_grammar_vocab_new_preserved(v, end_ids, n_end, NULL, 0);
}

/* The bytes of token id: its text (elm_token_to_bytes), or a preserved control token's piece. */
static size_t token_bytes_of(const elm_vocab *v, int32_t id, const int32_t *preserved,
                             int32_t n_preserved, unsigned char *out) {
    for (int32_t k = 0; v->types[id] == ELM_TOKEN_CONTROL && k < n_preserved; k++) {
        if (preserved[k] != id) continue;
        const size_t len = v->piece_len[id];
        if (len < MAX_TOKEN_BYTES) memcpy(out, v->pieces[id], len);
        return len;
    }
    return elm_token_to_bytes(v, id, (char *)out, MAX_TOKEN_BYTES);
}

/* Every token's bytes by id (off), then the order of those that have any, end tokens left out
 * (they are allowed by the state, not by their text), sorted by their bytes. */
elm_grammar_vocab *elm_grammar_vocab_new_preserved(const elm_vocab *v, const int32_t *end_ids,
                                                   int32_t n_end, const int32_t *preserved,
                                                   int32_t n_preserved) {
    elm_grammar_vocab *gv = calloc(1, sizeof *gv);
    if (!gv) return NULL;
    const int32_t nv = v->n_tokens;
    gv->v = v;
    gv->n_vocab = nv;
    gv->off = malloc(sizeof *gv->off * ((size_t)nv + 1));
    token_bytes *order = malloc(sizeof *order * (size_t)(nv ? nv : 1));
    unsigned char *tmp = malloc(MAX_TOKEN_BYTES);
    gv->end_ids = malloc(sizeof *gv->end_ids * (size_t)(n_end > 0 ? n_end : 1));
    int64_t cap = (int64_t)nv * 8 + 64;
    gv->bytes = malloc((size_t)cap);
    bool ok = gv->off && order && tmp && gv->end_ids && gv->bytes;
    for (int32_t i = 0; ok && i < n_end; i++)
        if (end_ids[i] >= 0 && end_ids[i] < nv && !is_end(gv, end_ids[i]))
            gv->end_ids[gv->n_end++] = end_ids[i];
    int64_t at = 0;
    for (int32_t i = 0; ok && i < nv; i++) {
        gv->off[i] = at;
        size_t len = token_bytes_of(v, i, preserved, n_preserved, tmp);
        if (len >= MAX_TOKEN_BYTES || is_end(gv, i)) len = 0; /* never allowed as text */
        if (at + (int64_t)len > cap) {
            while (at + (int64_t)len > cap) cap *= 2;
            unsigned char *nb = realloc(gv->bytes, (size_t)cap);
            if (!(ok = nb != NULL)) break;
            gv->bytes = nb;
        }
        memcpy(gv->bytes + at, tmp, len);
        at += (int64_t)len;
        if (len) order[gv->n++] = (token_bytes){NULL, (int32_t)len, i};
        if ((int32_t)len > gv->max_len) gv->max_len = (int32_t)len;
    }
    free(tmp);
    if (ok) {
        gv->off[nv] = at;
        for (int32_t k = 0; k < gv->n; k++) order[k].p = gv->bytes + gv->off[order[k].id];
        qsort(order, (size_t)gv->n, sizeof *order, by_bytes);
        gv->ids = malloc(sizeof *gv->ids * (size_t)(gv->n ? gv->n : 1));
        gv->lcp = malloc(sizeof *gv->lcp * (size_t)(gv->n ? gv->n : 1));
        ok = gv->ids && gv->lcp;
    }
    for (int32_t k = 0; ok && k < gv->n; k++) {
        int32_t l = 0;
        if (k > 0)
            while (l < order[k - 1].len && l < order[k].len && order[k - 1].p[l] == order[k].p[l])
                l++;
        gv->ids[k] = order[k].id;
        gv->lcp[k] = l;
    }
    free(order);
    if (!ok) {
        elm_grammar_vocab_free(gv);
        return NULL;
    }
    return gv;
}

/* ---- matcher ---- */

elm_grammar_matcher *elm_grammar_matcher_new(const elm_grammar *g, const elm_grammar_vocab *gv) {
    elm_grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->gv = gv;
    m->walk = malloc(sizeof *m->walk * (size_t)(gv->max_len + 1));
    if (!m->walk || !world_init(&m->w, g) || (m->state = start_state(&m->w)) < 0) {
        elm_grammar_matcher_free(m);
        return NULL;
    }
    return m;
}

elm_status elm_grammar_matcher_set_trigger(elm_grammar_matcher *m, const char *trigger,
                                           elm_error *err) {
    if (!trigger || !*trigger || m->accepted_any || m->trigger)
        return elm_errorf(err, ELM_ERR_ARG, "grammar: a trigger must be set, once, before any token");
    const size_t n = strlen(trigger);
    m->trigger = malloc(n + 1);
    m->tail = malloc(n + MAX_TOKEN_BYTES);
    if (!m->trigger || !m->tail) return elm_errorf(err, ELM_ERR_NOMEM, "grammar: out of memory");
    memcpy(m->trigger, trigger, n + 1);
    m->waiting = true;
    return ELM_OK;
}

/* Lazy and waiting: appends token id's bytes to the tail; at the trigger, the grammar starts on
 * what follows it. False when out of memory. */
static bool watch_trigger(elm_grammar_matcher *m, int32_t id) {
    const elm_grammar_vocab *gv = m->gv;
    const size_t tl = strlen(m->trigger), len = (size_t)(gv->off[id + 1] - gv->off[id]);
    if (m->tail_len >= tl) { /* keep the bytes a trigger could still start in */
        memmove(m->tail, m->tail + m->tail_len - (tl - 1), tl - 1);
        m->tail_len = tl - 1;
    }
    memcpy(m->tail + m->tail_len, gv->bytes + gv->off[id], len);
    m->tail_len += len;
    for (size_t i = 0; i + tl <= m->tail_len; i++) {
        if (memcmp(m->tail + i, m->trigger, tl)) continue;
        m->waiting = false;
        int32_t s = m->state;
        for (size_t k = i + tl; s > DEAD && k < m->tail_len; k++) s = step(&m->w, s, m->tail[k]);
        if (s < 0) return false;
        m->state = s;
        return true;
    }
    return true;
}

void elm_grammar_matcher_free(elm_grammar_matcher *m) {
    if (!m) return;
    free(m->trigger);
    free(m->tail);
    world_free(&m->w);
    free(m->walk);
    free(m);
}

/* The state after token id's bytes from the current one; DEAD when refused, -1 when out of
 * memory. */
static int32_t after_token(elm_grammar_matcher *m, int32_t id) {
    const elm_grammar_vocab *gv = m->gv;
    const int64_t from = gv->off[id], to = gv->off[id + 1];
    if (from == to) return DEAD;
    int32_t s = m->state;
    for (int64_t i = from; s > DEAD && i < to; i++) s = step(&m->w, s, gv->bytes[i]);
    return s;
}

bool elm_grammar_allows(elm_grammar_matcher *m, int32_t id) {
    if (id < 0 || id >= m->gv->n_vocab) return false;
    if (m->waiting) return true;
    if (is_end(m->gv, id)) return state_accepts(&m->w, m->state);
    const gstate *st = &m->w.states[m->state];
    if (st->mask) return st->mask[id >> 5] >> (id & 31) & 1;
    return after_token(m, id) > DEAD;
}

/* The allowed tokens of the current state as bits, computed by one walk of the sorted token
 * bytes (then kept with the state); NULL when out of memory. */
static const uint32_t *state_mask(elm_grammar_matcher *m) {
    const elm_grammar_vocab *gv = m->gv;
    if (m->w.states[m->state].mask) return m->w.states[m->state].mask;
    const size_t words = ((size_t)gv->n_vocab + 31) / 32;
    uint32_t *bits = calloc(words, sizeof *bits);
    if (!bits) return NULL;
    int32_t *st = m->walk, known = 0;
    st[0] = m->state;
    for (int32_t k = 0; k < gv->n;) {
        const int32_t id = gv->ids[k];
        const unsigned char *b = gv->bytes + gv->off[id];
        const int32_t len = (int32_t)(gv->off[id + 1] - gv->off[id]);
        int32_t d = gv->lcp[k] < known ? gv->lcp[k] : known;
        while (d < len && st[d] > DEAD) {
            st[d + 1] = step(&m->w, st[d], b[d]);
            d++;
        }
        known = d;
        if (st[d] < 0) {
            free(bits);
            return NULL;
        }
        if (st[d] == DEAD) { /* every token under this prefix is refused too */
            do k++;
            while (k < gv->n && gv->lcp[k] >= d);
            continue;
        }
        bits[id >> 5] |= 1u << (id & 31);
        k++;
    }
    if (state_accepts(&m->w, m->state))
        for (int32_t i = 0; i < gv->n_end; i++)
            bits[gv->end_ids[i] >> 5] |= 1u << (gv->end_ids[i] & 31);
    if (m->mask_bytes + words * 4 > MASK_CACHE_BYTES) { /* drop the older masks */
        for (int32_t i = 0; i < m->w.n_states; i++) {
            free(m->w.states[i].mask);
            m->w.states[i].mask = NULL;
        }
        m->mask_bytes = 0;
    }
    m->w.states[m->state].mask = bits;
    m->mask_bytes += words * 4;
    return bits;
}

int32_t elm_grammar_mask(elm_grammar_matcher *m, float *logits) {
    if (m->waiting) return m->gv->n_vocab;
    const uint32_t *bits = state_mask(m);
    int32_t n = 0;
    for (int32_t i = 0; i < m->gv->n_vocab; i++) {
        const bool ok = bits ? bits[i >> 5] >> (i & 31) & 1 : elm_grammar_allows(m, i);
        if (ok) n++;
        else logits[i] = -INFINITY;
    }
    return n;
}

/* Starts the world afresh from the current state's stacks, when it has grown past its budget:
 * the stacks of states no longer reachable are dropped with every remembered step and mask. */
static bool compact(elm_grammar_matcher *m) {
    gworld *old = &m->w, w;
    if (!world_init(&w, old->g)) {
        world_free(&w);
        return false;
    }
    const gstate *cur = &old->states[m->state];
    int32_t *ids = malloc(sizeof *ids * (size_t)(cur->n ? cur->n : 1));
    int32_t *chain = malloc(sizeof *chain * (size_t)old->n_nodes);
    bool ok = ids && chain;
    for (int32_t i = 0; ok && i < cur->n; i++) {
        int32_t depth = 0;
        for (int32_t id = old->items[cur->off + i]; id != 0; id = old->nodes[id].parent)
            chain[depth++] = id;
        int32_t nid = 0;
        while (ok && depth--) ok = (nid = cons(&w, old->nodes[chain[depth]].pos, nid)) >= 0;
        ids[i] = nid;
    }
    if (ok) {
        qsort(ids, (size_t)cur->n, sizeof *ids, cmp_id);
        m->state = intern_state(&w, ids, cur->n);
        ok = m->state >= 0;
    }
    free(ids);
    free(chain);
    if (!ok) {
        world_free(&w);
        return false;
    }
    world_free(old);
    m->w = w;
    m->mask_bytes = 0;
    return true;
}

elm_status elm_grammar_accept(elm_grammar_matcher *m, int32_t id, elm_error *err) {
    if (id < 0 || id >= m->gv->n_vocab)
        return elm_errorf(err, ELM_ERR_ARG, "grammar: token %d is out of the vocabulary", id);
    m->accepted_any = true;
    if (m->waiting) {
        if (!is_end(m->gv, id) && !watch_trigger(m, id))
            return elm_errorf(err, ELM_ERR_NOMEM, "grammar: out of memory");
        return ELM_OK;
    }
    if (is_end(m->gv, id)) {
        if (state_accepts(&m->w, m->state)) return ELM_OK;
        return elm_errorf(err, ELM_ERR_ARG, "grammar: end token %d before the grammar is complete",
                          id);
    }
    const int32_t s = after_token(m, id);
    if (s < 0) return elm_errorf(err, ELM_ERR_NOMEM, "grammar: out of memory");
    if (s == DEAD)
        return elm_errorf(err, ELM_ERR_ARG, "grammar: token %d is not allowed here", id);
    m->state = s;
    if (m->w.n_nodes > COMPACT_NODES && !compact(m))
        return elm_errorf(err, ELM_ERR_NOMEM, "grammar: out of memory");
    return ELM_OK;
}

bool elm_grammar_done(const elm_grammar_matcher *m) {
    if (m->waiting) return false;
    const gstate *st = &m->w.states[m->state];
    return st->n == 1 && m->w.items[st->off] == 0;
}

int32_t elm_grammar_end_id(const elm_grammar_matcher *m) {
    return m->gv->n_end ? m->gv->end_ids[0] : -1;
}
