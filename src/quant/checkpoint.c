/* Per-block checkpoints of the calibrated methods (checkpoint.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "quant/checkpoint.h"
#include "quant/layerwise.h"

/* Bumped whenever what a block produces could change (format or algorithm): an older checkpoint
 * is then refused instead of mixing two versions' blocks in one file. */
#define CKPT_VERSION 1
#define CKPT_HEADER 4096
static const char magic[8] = {'E', 'L', 'M', 'Q', 'C', 'K', 'P', 'T'};

typedef struct header {
    char magic[8];
    uint64_t version, src_size;
    int64_t src_mtime_ns;
    uint64_t src_hash, opts_hash, n_x, stage, records_end, slot, x_hash, records_hash;
    int64_t n_damp_raised;
    uint64_t self_hash; /* of the fields above */
} header;

/* One finished tensor; its nbytes of data follow. */
typedef struct record {
    int32_t index, kind; /* kind 0: encoded bytes, 1: float values of a 1-D tensor */
    uint64_t nbytes;
    double err_before, err_after, damp;
    int64_t dead_inputs;
} record;

struct elm_ckpt {
    char path[1100];
    int fd;
    header h;
    int64_t *off; /* [n tensors] offset of a resumed tensor's bytes, or -1 */
    int32_t n;
};

static uint64_t self_hash(const header *h) {
    return elm_fnv1a(ELM_FNV1A_INIT, h, offsetof(header, self_hash));
}

static elm_status io_error(const elm_ckpt *c, const char *what, elm_error *err) {
    return elm_errorf(err, ELM_ERR_IO, "%s: %s the checkpoint: %s", c->path, what, strerror(errno));
}

static bool pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
    const char *p = buf;
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return true;
}

/* false on an error or a short file (errno 0 then). */
static bool pread_all(int fd, void *buf, size_t n, uint64_t off) {
    char *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = 0;
            return false;
        }
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return true;
}

/* What the blocks of this run depend on: the source and the options, as two hashes. */
static void identity(const elm_qrun *r, header *h) {
    const elm_model *m = r->src;
    struct stat st;
    if (stat(m->path, &st) == 0) {
        h->src_size = (uint64_t)st.st_size;
        h->src_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    uint64_t s = ELM_FNV1A_INIT;
    const int32_t dims[] = {m->hp.n_layers, m->hp.dim, m->hp.n_vocab, m->n_tensors};
    s = elm_fnv1a(s, dims, sizeof dims);
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        s = elm_fnv1a(s, t->name, strlen(t->name) + 1);
        s = elm_fnv1a(s, &t->type, sizeof t->type);
        s = elm_fnv1a(s, t->ne, sizeof t->ne);
    }
    h->src_hash = s;
    const elm_quant_params *p = r->params;
    uint64_t o = ELM_FNV1A_INIT;
    const int32_t method = p->method, act_order = p->act_order;
    o = elm_fnv1a(o, &method, sizeof method);
    o = elm_fnv1a(o, &act_order, sizeof act_order);
    o = elm_fnv1a(o, &p->damp, sizeof p->damp);
    for (int32_t i = 0; i < m->n_tensors; i++) o = elm_fnv1a(o, &r->plan[i].type, sizeof r->plan[i].type);
    o = elm_fnv1a(o, &p->calib->n, sizeof p->calib->n);
    for (int32_t i = 0; i < p->calib->n; i++) {
        o = elm_fnv1a(o, &p->calib->n_ids[i], sizeof p->calib->n_ids[i]);
        o = elm_fnv1a(o, p->calib->ids[i], sizeof(int32_t) * (size_t)p->calib->n_ids[i]);
    }
    h->opts_hash = o;
}

static uint64_t slot_offset(const header *h, uint64_t slot) {
    return CKPT_HEADER + slot * h->n_x * sizeof(float);
}

static elm_status write_header(elm_ckpt *c, elm_error *err) {
    c->h.self_hash = self_hash(&c->h);
    return pwrite_all(c->fd, &c->h, sizeof c->h, 0) ? ELM_OK : io_error(c, "writing", err);
}

static elm_status corrupt(const elm_ckpt *c, const char *why, elm_error *err) {
    return elm_errorf(err, ELM_ERR_FORMAT, "%s: corrupt checkpoint (%s): delete it to start over",
                      c->path, why);
}

/* Reads and checks the records of a resumed checkpoint: every tensor finished by its stage once,
 * with the size the plan gives it; 1-D values and error figures go into r. */
static elm_status load_records(elm_ckpt *c, elm_qrun *r, elm_error *err) {
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", c->path);
    uint64_t pos = slot_offset(&c->h, 2), hash = ELM_FNV1A_INIT;
    int32_t expected = 0, seen = 0;
    for (int32_t i = 0; i < c->n; i++) expected += r->final_stage[i] >= 1 && (uint64_t)r->final_stage[i] <= c->h.stage;
    elm_status st = ELM_OK;
    while (!st && pos < c->h.records_end) {
        record rec;
        if (!pread_all(c->fd, &rec, sizeof rec, pos)) {
            st = errno ? io_error(c, "reading", err) : corrupt(c, "truncated", err);
            break;
        }
        hash = elm_fnv1a(hash, &rec, sizeof rec);
        pos += sizeof rec;
        const int32_t i = rec.index;
        const elm_tensor *t = i >= 0 && i < c->n ? &r->tensors[i] : NULL;
        const uint64_t want = !t ? 0
                              : rec.kind == 1 ? sizeof(float) * (uint64_t)t->ne[0]
                                              : elm_row_bytes(r->plan[i].type, t->ne[0]) *
                                                    (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        if (!t || r->final_stage[i] < 1 || (uint64_t)r->final_stage[i] > c->h.stage ||
            c->off[i] >= 0 || rec.kind != (t->n_dims < 2) || rec.nbytes != want ||
            rec.nbytes > c->h.records_end - pos) {
            st = corrupt(c, "a record does not match the model", err);
            break;
        }
        c->off[i] = (int64_t)pos;
        seen++;
        r->info[i].err_before = rec.err_before;
        r->info[i].err_after = rec.err_after;
        r->info[i].damp = rec.damp;
        r->info[i].dead_inputs = rec.dead_inputs;
        for (uint64_t done = 0; done < rec.nbytes && !st;) {
            const size_t k = rec.nbytes - done < CHUNK ? (size_t)(rec.nbytes - done) : CHUNK;
            char *dst = rec.kind == 1 ? (char *)t->data + done : buf;
            if (!pread_all(c->fd, dst, k, pos + done))
                st = errno ? io_error(c, "reading", err) : corrupt(c, "truncated", err);
            hash = elm_fnv1a(hash, dst, k);
            done += k;
        }
        pos += rec.nbytes;
    }
    free(buf);
    if (!st && (hash != c->h.records_hash || pos != c->h.records_end))
        st = corrupt(c, "the records' hash does not match", err);
    if (!st && seen != expected) st = corrupt(c, "tensors are missing", err);
    return st;
}

elm_status elm_ckpt_open(const char *path, elm_qrun *r, bool resume, float *x, size_t n_x,
                         int32_t *stage, elm_ckpt **out, elm_error *err) {
    *out = NULL;
    *stage = 0;
    elm_ckpt *c = calloc(1, sizeof *c);
    if (c) c->off = malloc(sizeof *c->off * (size_t)(r->src->n_tensors ? r->src->n_tensors : 1));
    if (!c || !c->off) {
        if (c) free(c);
        return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    c->n = r->src->n_tensors;
    for (int32_t i = 0; i < c->n; i++) c->off[i] = -1;
    header want = {.version = CKPT_VERSION, .n_x = n_x};
    memcpy(want.magic, magic, sizeof magic);
    identity(r, &want);
    elm_status st = ELM_OK;
    c->fd = resume ? open(path, O_RDWR | O_CLOEXEC) : -1;
    if (c->fd >= 0) {
        if (!pread_all(c->fd, &c->h, sizeof c->h, 0) || memcmp(c->h.magic, magic, sizeof magic))
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: not an edgelm quantization checkpoint", path);
        else if (c->h.self_hash != self_hash(&c->h))
            st = corrupt(c, "its header's hash does not match", err);
        else if (c->h.version != CKPT_VERSION)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: checkpoint of another edgelm version (format "
                            "%llu, this one writes %d): delete it to start over", path,
                            (unsigned long long)c->h.version, CKPT_VERSION);
        else if (c->h.src_size != want.src_size || c->h.src_mtime_ns != want.src_mtime_ns ||
                 c->h.src_hash != want.src_hash)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: checkpoint made from another source file "
                            "than %s (size, time or tensors differ): delete it to start over",
                            path, r->src->path);
        else if (c->h.opts_hash != want.opts_hash || c->h.n_x != n_x)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: checkpoint made with other options (method, "
                            "types, damping or calibration): rerun with those or without --resume",
                            path);
        else if (c->h.stage > (uint64_t)r->src->hp.n_layers || c->h.slot > 1)
            st = corrupt(c, "its block count is out of range", err);
        if (!st) st = load_records(c, r, err);
        if (!st && c->h.stage > 0) {
            if (!pread_all(c->fd, x, sizeof(float) * n_x, slot_offset(&c->h, c->h.slot)))
                st = errno ? io_error(c, "reading", err) : corrupt(c, "truncated", err);
            else if (elm_fnv1a(ELM_FNV1A_INIT, x, sizeof(float) * n_x) != c->h.x_hash)
                st = corrupt(c, "the calibration states' hash does not match", err);
        }
        if (!st) {
            *stage = (int32_t)c->h.stage;
            r->n_damp_raised = (int32_t)c->h.n_damp_raised;
        }
    } else if (resume && errno != ENOENT) {
        st = elm_errorf(err, ELM_ERR_IO, "%s: cannot open the checkpoint: %s", path, strerror(errno));
    } else {
        /* a fresh checkpoint of no block: valid from the start, so a kill before the first block
         * leaves one that resumes as a new run */
        c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        c->h = want;
        c->h.records_end = slot_offset(&c->h, 2);
        c->h.records_hash = ELM_FNV1A_INIT;
        st = c->fd < 0 ? io_error(c, "creating", err) : write_header(c, err);
    }
    if (st) {
        elm_ckpt_close(c, false);
        return st;
    }
    *out = c;
    return ELM_OK;
}

elm_status elm_ckpt_commit(elm_ckpt *c, const elm_qrun *r, int32_t stage, const float *x,
                           elm_error *err) {
    uint64_t pos = c->h.records_end, hash = c->h.records_hash;
    for (int32_t i = 0; i < c->n; i++) {
        if (r->final_stage[i] != stage) continue;
        const elm_tensor *t = &r->tensors[i];
        const bool values = t->n_dims < 2;
        const void *data = values ? t->data : r->bytes[i];
        const record rec = {i, values,
                            values ? sizeof(float) * (uint64_t)t->ne[0]
                                   : elm_row_bytes(r->plan[i].type, t->ne[0]) *
                                         (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]),
                            r->info[i].err_before, r->info[i].err_after, r->info[i].damp,
                            r->info[i].dead_inputs};
        if (!data || !pwrite_all(c->fd, &rec, sizeof rec, pos) ||
            !pwrite_all(c->fd, data, rec.nbytes, pos + sizeof rec))
            return data ? io_error(c, "writing", err)
                        : elm_errorf(err, ELM_ERR_ARG, "%s: '%s' is not done at block %d", c->path,
                                     t->name, stage);
        hash = elm_fnv1a(elm_fnv1a(hash, &rec, sizeof rec), data, rec.nbytes);
        pos += sizeof rec + rec.nbytes;
    }
    const uint64_t slot = c->h.slot ^ 1, nb = sizeof(float) * c->h.n_x;
    if (!pwrite_all(c->fd, x, nb, slot_offset(&c->h, slot))) return io_error(c, "writing", err);
    /* the records and states reach the disk before the header that names them */
    if (fdatasync(c->fd) != 0) return io_error(c, "writing", err);
    c->h.stage = (uint64_t)stage;
    c->h.records_end = pos;
    c->h.records_hash = hash;
    c->h.slot = slot;
    c->h.x_hash = elm_fnv1a(ELM_FNV1A_INIT, x, nb);
    c->h.n_damp_raised = r->n_damp_raised;
    return write_header(c, err);
}

bool elm_ckpt_has(const elm_ckpt *c, int32_t i) { return c && c->off[i] >= 0; }

elm_status elm_ckpt_read(elm_ckpt *c, int32_t i, void *dst, size_t n, elm_error *err) {
    if (pread_all(c->fd, dst, n, (uint64_t)c->off[i])) return ELM_OK;
    return errno ? io_error(c, "reading", err) : corrupt(c, "truncated", err);
}

void elm_ckpt_close(elm_ckpt *c, bool remove) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    if (remove) unlink(c->path);
    free(c->off);
    free(c);
}
