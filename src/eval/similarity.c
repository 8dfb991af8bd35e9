/* Generation similarity as Python's difflib.SequenceMatcher(None, a, b).ratio() computes it
 * (docs/formats.md, "Generation similarity"; CPython Lib/difflib.py), over Unicode code points.
 *
 * Ratcliff/Obershelp: find the longest matching block of a[alo:ahi] and b[blo:bhi], then do the
 * same to the pieces left and right of it; ratio = 2*M/T with M the matched elements. difflib's
 * details that change the result, all reproduced here:
 *  - the longest block is the first found when scanning i over a and, for each i, the positions
 *    j of a[i] in b in increasing order, keeping a new block only when strictly longer;
 *  - "autojunk": when b has n >= 200 elements, those occurring in b more than n/100 + 1 times are
 *    "popular" and removed from the index b2j, so they never start or continue a block in the
 *    scan; the found block is then extended on both ends over equal elements, popular included
 *    (with isjunk None no element is junk, so the extension is plain equality);
 *  - an empty result for a region ends its recursion. */
#include <stdlib.h>
#include <string.h>

#include "edgelm/eval.h"

/* ------------------------------------------------------------------ UTF-8 to code points */

/* Decodes s [n bytes] into cp (room for n entries); invalid or truncated sequences give U+FFFD
 * per byte. Returns the count. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        const unsigned c = s[i];
        int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        uint32_t v = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int t = 1; ok && t < len; t++) {
            ok = (s[i + t] & 0xC0) == 0x80;
            v = v << 6 | (s[i + t] & 0x3F);
        }
        /* reject overlong forms, surrogates and values past U+10FFFF, as Python's decoder does */
        static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
        ok = ok && v >= min_of[len] && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF);
        cp[k++] = ok ? v : 0xFFFD;
        i += ok ? (size_t)len : 1;
    }
    return k;
}

/* ------------------------------------------------------------------------------- matcher */

typedef struct {
    const uint32_t *a, *b;
    size_t la, lb;
    /* b2j: for each distinct non-popular element keys[k] of b (sorted), its positions in b are
     * pos[first[k] .. first[k+1]) in increasing order */
    uint32_t *keys;
    size_t *first, *pos;
    size_t n_keys;
    /* j2len of the previous and current row of the scan, indexed by j + 1, and the entries set */
    size_t *prev, *cur, *prev_set, *cur_set;
    size_t n_prev, n_cur;
} matcher;

typedef struct {
    uint32_t cp;
    size_t j;
} elem;

static int cmp_elem(const void *x, const void *y) {
    const elem *a = x, *b = y;
    if (a->cp != b->cp) return a->cp < b->cp ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

static bool build_b2j(matcher *m, bool autojunk) {
    const size_t n = m->lb;
    elem *e = malloc(sizeof(elem) * (n ? n : 1));
    m->keys = malloc(sizeof(uint32_t) * (n ? n : 1));
    m->first = malloc(sizeof(size_t) * (n + 1));
    m->pos = malloc(sizeof(size_t) * (n ? n : 1));
    if (!e || !m->keys || !m->first || !m->pos) {
        free(e);
        return false;
    }
    for (size_t j = 0; j < n; j++) e[j] = (elem){m->b[j], j};
    qsort(e, n, sizeof(elem), cmp_elem);
    const size_t popular_over = n / 100 + 1;
    size_t k = 0, np = 0;
    for (size_t s = 0; s < n;) {
        size_t t = s;
        while (t < n && e[t].cp == e[s].cp) t++;
        if (!(autojunk && n >= 200 && t - s > popular_over)) {
            m->keys[k] = e[s].cp;
            m->first[k++] = np;
            for (size_t u = s; u < t; u++) m->pos[np++] = e[u].j;
        }
        s = t;
    }
    m->first[k] = np;
    m->n_keys = k;
    free(e);
    return true;
}

/* Positions of element x in b (empty when absent or popular). */
static const size_t *b2j(const matcher *m, uint32_t x, size_t *count) {
    size_t lo = 0, hi = m->n_keys;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (m->keys[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    if (lo == m->n_keys || m->keys[lo] != x) {
        *count = 0;
        return NULL;
    }
    *count = m->first[lo + 1] - m->first[lo];
    return m->pos + m->first[lo];
}

/* difflib's find_longest_match over a[alo:ahi], b[blo:bhi]: sets *bi, *bj, returns the size. */
static size_t longest_match(matcher *m, size_t alo, size_t ahi, size_t blo, size_t bhi, size_t *bi,
                            size_t *bj) {
    size_t besti = alo, bestj = blo, best = 0;
    for (size_t i = alo; i < ahi; i++) {
        size_t cnt;
        const size_t *js = b2j(m, m->a[i], &cnt);
        m->n_cur = 0;
        for (size_t t = 0; t < cnt; t++) {
            const size_t j = js[t];
            if (j < blo) continue;
            if (j >= bhi) break;
            const size_t k = m->prev[j] + 1; /* prev[j] is j2len[j-1]: stored at index (j-1)+1 */
            m->cur[j + 1] = k;
            m->cur_set[m->n_cur++] = j + 1;
            if (k > best) {
                besti = i + 1 - k;
                bestj = j + 1 - k;
                best = k;
            }
        }
        for (size_t t = 0; t < m->n_prev; t++) m->prev[m->prev_set[t]] = 0;
        size_t *sw = m->prev;
        m->prev = m->cur;
        m->cur = sw;
        sw = m->prev_set;
        m->prev_set = m->cur_set;
        m->cur_set = sw;
        m->n_prev = m->n_cur;
    }
    for (size_t t = 0; t < m->n_prev; t++) m->prev[m->prev_set[t]] = 0;
    m->n_prev = 0;
    while (besti > alo && bestj > blo && m->a[besti - 1] == m->b[bestj - 1]) {
        besti--;
        bestj--;
        best++;
    }
    while (besti + best < ahi && bestj + best < bhi && m->a[besti + best] == m->b[bestj + best]) best++;
    *bi = besti;
    *bj = bestj;
    return best;
}

typedef struct {
    size_t alo, ahi, blo, bhi;
} region;

/* Σ sizes of difflib's matching blocks (get_matching_blocks without the final sentinel). */
static bool matched_total(matcher *m, size_t *total) {
    size_t cap = 16, n = 0, sum = 0;
    region *stack = malloc(sizeof(region) * cap);
    if (!stack) return false;
    stack[n++] = (region){0, m->la, 0, m->lb};
    while (n > 0) {
        const region r = stack[--n];
        size_t i, j;
        const size_t k = longest_match(m, r.alo, r.ahi, r.blo, r.bhi, &i, &j);
        if (k == 0) continue;
        sum += k;
        if (n + 2 > cap) {
            region *grown = realloc(stack, sizeof(region) * cap * 2);
            if (!grown) {
                free(stack);
                return false;
            }
            stack = grown;
            cap *= 2;
        }
        if (r.alo < i && r.blo < j) stack[n++] = (region){r.alo, i, r.blo, j};
        if (i + k < r.ahi && j + k < r.bhi) stack[n++] = (region){i + k, r.ahi, j + k, r.bhi};
    }
    free(stack);
    *total = sum;
    return true;
}

elm_status elm_similarity_ratio(const char *a, size_t alen, const char *b, size_t blen,
                                bool autojunk, double *ratio, elm_error *err) {
    *ratio = 0;
    matcher m = {0};
    uint32_t *ca = malloc(sizeof(uint32_t) * (alen ? alen : 1));
    uint32_t *cb = malloc(sizeof(uint32_t) * (blen ? blen : 1));
    bool ok = ca && cb;
    if (ok) {
        m.a = ca;
        m.b = cb;
        m.la = utf8_decode((const unsigned char *)a, alen, ca);
        m.lb = utf8_decode((const unsigned char *)b, blen, cb);
        m.prev = calloc(m.lb + 1, sizeof(size_t));
        m.cur = calloc(m.lb + 1, sizeof(size_t));
        m.prev_set = malloc(sizeof(size_t) * (m.lb + 1));
        m.cur_set = malloc(sizeof(size_t) * (m.lb + 1));
        ok = m.prev && m.cur && m.prev_set && m.cur_set && build_b2j(&m, autojunk);
    }
    size_t total = 0;
    ok = ok && matched_total(&m, &total);
    const size_t length = m.la + m.lb;
    if (ok) *ratio = length ? 2.0 * (double)total / (double)length : 1.0;
    free(m.keys);
    free(m.first);
    free(m.pos);
    free(m.prev);
    free(m.cur);
    free(m.prev_set);
    free(m.cur_set);
    free(ca);
    free(cb);
    return ok ? ELM_OK : elm_errorf(err, ELM_ERR_NOMEM, "out of memory comparing %zu and %zu bytes", alen, blen);
}
