/* llama2.c checkpoint (`model.bin`, version 0) and `tokenizer.bin` loader (docs/formats.md, "llama2.c
 * checkpoint"). The checkpoint has no magic, so the header is checked field by field and the file
 * size must equal exactly what the header implies; anything else is reported as "not a GGUF file
 * and not a llama2.c checkpoint". The F32 arrays are mmapped in place. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "formats/loaders.h"

#define L2C_HEADER_BYTES 28
#define L2C_MAX_TOKENIZER (256u << 20)
#define SP_SPACE "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

typedef struct l2c_header {
    int32_t dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
} l2c_header;

static int64_t n_vocab(const l2c_header *h) { return h->vocab < 0 ? -(int64_t)h->vocab : h->vocab; }

/* Range-checks each field; explains the first bad one in why (for the caller's message). */
static bool header_valid(const l2c_header *h, char *why, size_t cap) {
    const struct { const char *name; int64_t v, max; } f[] = {
        {"dim", h->dim, 1 << 20},         {"hidden_dim", h->hidden, 1 << 22},
        {"n_layers", h->n_layers, 4096},  {"n_heads", h->n_heads, 1 << 16},
        {"n_kv_heads", h->n_kv_heads, 1 << 16}, {"vocab_size", n_vocab(h), 1 << 24},
        {"seq_len", h->seq_len, 1 << 24}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].v < 1 || f[i].v > f[i].max) {
            snprintf(why, cap, "header field %s = %lld is out of range", f[i].name,
                     (long long)f[i].v);
            return false;
        }
    if (h->dim % h->n_heads || (h->dim / h->n_heads) % 2 || h->n_heads % h->n_kv_heads) {
        snprintf(why, cap, "%d heads / %d KV heads do not fit dim %d", h->n_heads, h->n_kv_heads,
                 h->dim);
        return false;
    }
    return true;
}

/* Bytes the whole checkpoint must have (header, arrays in order, freq_cis, wcls when untied). The
 * header ranges bound every product below 2^60. */
static uint64_t expected_size(const l2c_header *h) {
    uint64_t dim = (uint64_t)h->dim, L = (uint64_t)h->n_layers, hid = (uint64_t)h->hidden;
    uint64_t vocab = (uint64_t)n_vocab(h), hs = dim / (uint64_t)h->n_heads;
    uint64_t kv = hs * (uint64_t)h->n_kv_heads;
    uint64_t floats = vocab * dim + L * (2 * dim + 2 * dim * dim + 2 * kv * dim + 3 * hid * dim) +
                      dim + (uint64_t)h->seq_len * hs;
    if (h->vocab < 0) floats += vocab * dim;
    return L2C_HEADER_BYTES + 4 * floats;
}

/* Adds the F32 tensor `name` of [rows, cols] (rows 0: a vector) at *p, or with `per_layer` one
 * "blk.N.name" per layer stacked back to back; advances *p past them. */
static elm_status add_f32(elm_model *m, const char *name, bool per_layer, int64_t rows,
                          int64_t cols, float **p, elm_error *err) {
    int64_t ne[2] = {cols, rows};
    int64_t count = cols * (rows ? rows : 1);
    int n = per_layer ? m->hp.n_layers : 1;
    for (int l = 0; l < n; l++) {
        char full[ELM_NAME_MAX];
        if (per_layer) snprintf(full, sizeof full, "blk.%d.%s", l, name);
        else snprintf(full, sizeof full, "%s", name);
        elm_status st = elm_model_add_tensor(m, full, ELM_TYPE_F32, rows ? 2 : 1, ne, *p,
                                             (size_t)count * sizeof(float), err);
        if (st) return st;
        *p += count;
    }
    return ELM_OK;
}

/* Points the model's tensors into the checkpoint; the arrays are [out, in] row-major, which is
 * ne = {in, out}. */
static elm_status add_tensors(elm_model *m, const l2c_header *h, float *p, elm_error *err) {
    int64_t dim = h->dim, hid = h->hidden, vocab = n_vocab(h);
    int64_t hs = dim / h->n_heads, kv = hs * h->n_kv_heads;
    elm_status st;
    if ((st = add_f32(m, "token_embd.weight", false, vocab, dim, &p, err)) ||
        (st = add_f32(m, "attn_norm.weight", true, 0, dim, &p, err)) ||
        (st = add_f32(m, "attn_q.weight", true, dim, dim, &p, err)) ||
        (st = add_f32(m, "attn_k.weight", true, kv, dim, &p, err)) ||
        (st = add_f32(m, "attn_v.weight", true, kv, dim, &p, err)) ||
        (st = add_f32(m, "attn_output.weight", true, dim, dim, &p, err)) ||
        (st = add_f32(m, "ffn_norm.weight", true, 0, dim, &p, err)) ||
        (st = add_f32(m, "ffn_gate.weight", true, hid, dim, &p, err)) ||
        (st = add_f32(m, "ffn_down.weight", true, dim, hid, &p, err)) ||
        (st = add_f32(m, "ffn_up.weight", true, hid, dim, &p, err)) ||
        (st = add_f32(m, "output_norm.weight", false, 0, dim, &p, err)))
        return st;
    p += h->seq_len * hs; /* freq_cis_real and freq_cis_imag: RoPE is recomputed */
    if (h->vocab < 0) st = add_f32(m, "output.weight", false, vocab, dim, &p, err);
    return st;
}

/* The tokenizer beside the checkpoint: tokenizer.bin, else the only tok*.bin in that folder. */
static elm_status find_tokenizer(const char *model_path, char *out, size_t cap, elm_error *err) {
    const char *slash = strrchr(model_path, '/');
    char dir[1024];
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - model_path + 1), model_path);
    else snprintf(dir, sizeof dir, "./");
    if (snprintf(out, cap, "%stokenizer.bin", dir) >= (int)cap)
        return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", model_path);
    if (elm_file_exists(out)) return ELM_OK;
    DIR *d = opendir(dir);
    int found = 0;
    char name[256] = "";
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strncmp(e->d_name, "tok", 3) != 0 || strcmp(e->d_name + len - 4, ".bin"))
            continue;
        char cand[1300];
        if (snprintf(cand, sizeof cand, "%s%s", dir, e->d_name) >= (int)sizeof cand ||
            !elm_file_exists(cand))
            continue;
        if (++found == 1) snprintf(name, sizeof name, "%s", e->d_name);
    }
    if (d) closedir(d);
    if (found == 1) {
        if (snprintf(out, cap, "%s%s", dir, name) >= (int)cap)
            return elm_errorf(err, ELM_ERR_ARG, "%s: path too long", model_path);
        return ELM_OK;
    }
    if (found > 1)
        return elm_errorf(err, ELM_ERR_IO, "%s: several tok*.bin files in %s: name the tokenizer",
                          model_path, dir);
    return elm_errorf(err, ELM_ERR_IO, "%s: no tokenizer found (looked for %stokenizer.bin and "
                      "%stok*.bin)", model_path, dir, dir);
}

/* Piece i of tokenizer.bin in the vocab's SentencePiece spelling: "\n<s>\n" -> "<s>", and a plain
 * space -> "▁" except in byte pieces "<0xXX>". Returns the type. buf holds 3*len+1 bytes. */
static int32_t convert_piece(int32_t id, const char *s, int32_t len, char *buf, size_t *out_len) {
    if (id == 1 || id == 2) {
        while (len > 0 && *s == '\n') s++, len--;
        while (len > 0 && s[len - 1] == '\n') len--;
    }
    size_t n = 0;
    for (int32_t i = 0; i < len; i++) {
        if (s[i] == ' ' && id > 2) {
            memcpy(buf + n, SP_SPACE, 3);
            n += 3;
        } else {
            buf[n++] = s[i];
        }
    }
    buf[n] = '\0';
    *out_len = n;
    if (id == 0) return ELM_TOKEN_UNKNOWN;
    if (id <= 2) return ELM_TOKEN_CONTROL;
    bool byte = n == 6 && memcmp(buf, "<0x", 3) == 0 && buf[5] == '>' &&
                strchr("0123456789ABCDEF", buf[3]) && strchr("0123456789ABCDEF", buf[4]) &&
                buf[3] && buf[4];
    return byte ? ELM_TOKEN_BYTE : ELM_TOKEN_NORMAL;
}

/* tokenizer.bin: int32 max_token_length, then per token f32 score, int32 len, len bytes. */
static elm_status parse_tokenizer(const char *path, const unsigned char *b, size_t size,
                                  int32_t n, elm_vocab *v, elm_error *err) {
    int32_t max_len;
    if (size < 4) return elm_errorf(err, ELM_ERR_FORMAT, "%s: too short for a tokenizer", path);
    memcpy(&max_len, b, 4);
    if (max_len < 1 || max_len > (1 << 20))
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: max_token_length %d is out of range", path,
                          max_len);
    elm_status st = elm_vocab_alloc(v, n, true, err);
    if (st) return st;
    char *buf = malloc((size_t)max_len * 3 + 1);
    if (!buf) return elm_errorf(err, ELM_ERR_NOMEM, "%s: out of memory", path);
    size_t off = 4;
    for (int32_t i = 0; i < n && !st; i++) {
        int32_t len;
        if (size - off < 8) {
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: ends at token %d, the model has %d", path, i,
                            n);
            break;
        }
        memcpy(&v->scores[i], b + off, 4);
        memcpy(&len, b + off + 4, 4);
        off += 8;
        if (len < 0 || len > max_len)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: token %d has length %d (max_token_length %d)",
                            path, i, len, max_len);
        else if ((size_t)len > size - off)
            st = elm_errorf(err, ELM_ERR_FORMAT, "%s: token %d of length %d runs past the end of "
                            "the file", path, i, len);
        if (st) break;
        size_t plen;
        v->types[i] = convert_piece(i, (const char *)b + off, len, buf, &plen);
        st = elm_vocab_set_piece(v, i, buf, plen, err);
        off += (size_t)len;
    }
    free(buf);
    if (!st && off != size)
        st = elm_errorf(err, ELM_ERR_FORMAT, "%s: %zu bytes left after the model's %d tokens (a "
                        "tokenizer for another model?)", path, size - off, n);
    return st;
}

static elm_status load_tokenizer(const char *path, int32_t n, elm_vocab *v, elm_error *err) {
    char *text;
    size_t size;
    elm_status st = elm_read_file(path, L2C_MAX_TOKENIZER, &text, &size, err);
    if (st) return st;
    st = parse_tokenizer(path, (const unsigned char *)text, size, n, v, err);
    free(text);
    if (!st) {
        snprintf(v->model, sizeof v->model, "llama");
        v->unk_id = 0;
        v->bos_id = 1;
        v->eos_id = 2;
        v->add_bos = true;
        v->add_eos = false;
        v->add_space_prefix = true;
        v->byte_fallback = true;
        st = elm_vocab_finalize(v, path, err);
    }
    if (st) elm_vocab_free(v);
    return st;
}

static void set_hparams(elm_model *m, const l2c_header *h) {
    elm_hparams *hp = &m->hp;
    snprintf(hp->arch, sizeof hp->arch, "llama");
    hp->n_vocab = (int32_t)n_vocab(h);
    hp->dim = h->dim;
    hp->n_layers = h->n_layers;
    hp->n_heads = h->n_heads;
    hp->n_kv_heads = h->n_kv_heads;
    hp->head_dim = h->dim / h->n_heads;
    hp->rope_dim = hp->head_dim;
    hp->ffn_dim = h->hidden;
    hp->n_ctx_train = h->seq_len;
    hp->rms_eps = 1e-5f;
    hp->rope_theta = 10000.0f;
    hp->tied_output = h->vocab > 0;
    const char *base = strrchr(m->path, '/');
    snprintf(m->name, sizeof m->name, "%.127s", base ? base + 1 : m->path);
}

elm_status elm_load_llama2c(elm_model *m, const char *path, const char *tokenizer_path,
                            elm_error *err) {
    void *map;
    size_t size;
    elm_status st = elm_map_file(path, &map, &size, err);
    if (st) return st;
    if (map && (st = elm_model_own_mapping(m, map, size, err))) return st;
    l2c_header h;
    char why[160];
    if (size < L2C_HEADER_BYTES)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: not a GGUF file and not a llama2.c checkpoint "
                          "(%zu bytes, shorter than the header)", path, size);
    memcpy(&h, map, sizeof h);
    if (!header_valid(&h, why, sizeof why))
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: not a GGUF file and not a llama2.c checkpoint (%s)", path, why);
    uint64_t want = expected_size(&h);
    if (want != size)
        return elm_errorf(err, ELM_ERR_FORMAT,
                          "%s: not a GGUF file and not a complete llama2.c checkpoint (its header: "
                          "dim %d, %d layers, vocab %d, seq_len %d needs %llu bytes; the file has "
                          "%zu)", path, h.dim, h.n_layers, h.vocab, h.seq_len,
                          (unsigned long long)want, size);
    set_hparams(m, &h);
    if ((st = add_tensors(m, &h, (float *)((char *)map + L2C_HEADER_BYTES), err))) return st;
    char tok[1100];
    if (tokenizer_path) snprintf(tok, sizeof tok, "%s", tokenizer_path);
    else if ((st = find_tokenizer(path, tok, sizeof tok, err))) return st;
    return load_tokenizer(tok, m->hp.n_vocab, &m->vocab, err);
}
