/* The super-block layouts as docs/kquants.md writes them down: a small decoder written from that
 * page (not calling the library's decoders) decodes every block of every Q2_K..Q6_K, IQ4_NL and
 * IQ4_XS tensor of the wide256 reference files (llama-quantize's), and the library's
 * dequantization (the types table's to_float) must equal it bit for bit. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/model.h"

/* the page's IQ4 grid */
static const float grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                               1,    13,   25,  38,  53,  69,  89,  113};

static float half(const uint8_t *p) { return elm_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* bits [shift, shift + width) of byte b */
static int bits(uint8_t b, int shift, int width) { return (b >> shift) & ((1 << width) - 1); }

/* One super-block (or IQ4_NL block) b of type t into y; returns the block's weight count. */
static int decode_block(elm_type t, const uint8_t *b, float *y) {
    switch (t) {
    case ELM_TYPE_Q2_K:
        for (int w = 0; w < 256; w++) {
            const int h = w / 128, k = w % 128 / 32, l = w % 32;
            const uint8_t s = b[w / 16];
            const int q = bits(b[16 + 32 * h + l], 2 * k, 2);
            y[w] = half(b + 80) * bits(s, 0, 4) * q - half(b + 82) * bits(s, 4, 4);
        }
        return 256;
    case ELM_TYPE_Q3_K:
        for (int w = 0; w < 256; w++) {
            const int h = w / 128, k = w % 128 / 32, l = w % 32, j = w / 16;
            const uint8_t *s = b + 96;
            const int lo = j < 8 ? bits(s[j], 0, 4) : bits(s[j - 8], 4, 4);
            const int sc = (lo | bits(s[8 + j % 4], 2 * (j / 4), 2) << 4) - 32;
            const int q = bits(b[32 + 32 * h + l], 2 * k, 2) + 4 * bits(b[w % 32], w / 32, 1) - 4;
            y[w] = half(b + 108) * sc * q;
        }
        return 256;
    case ELM_TYPE_Q4_K:
    case ELM_TYPE_Q5_K: {
        const bool five = t == ELM_TYPE_Q5_K;
        const uint8_t *s = b + 4, *qs = b + (five ? 48 : 16);
        for (int w = 0; w < 256; w++) {
            const int p = w / 64, hi = w % 64 / 32, l = w % 32, j = w / 32;
            int sc, m;
            if (j < 4) {
                sc = bits(s[j], 0, 6);
                m = bits(s[j + 4], 0, 6);
            } else {
                sc = bits(s[j + 4], 0, 4) | bits(s[j - 4], 6, 2) << 4;
                m = bits(s[j + 4], 4, 4) | bits(s[j], 6, 2) << 4;
            }
            int q = bits(qs[32 * p + l], 4 * hi, 4);
            if (five) q += 16 * bits(b[16 + w % 32], w / 32, 1);
            y[w] = half(b) * sc * q - half(b + 2) * m;
        }
        return 256;
    }
    case ELM_TYPE_Q6_K:
        for (int w = 0; w < 256; w++) {
            const int h = w / 128, k = w % 128 / 32, l = w % 32;
            const int lo = bits(b[64 * h + 32 * (k % 2) + l], 4 * (k / 2), 4);
            const int q = (lo | bits(b[128 + 32 * h + l], 2 * k, 2) << 4) - 32;
            y[w] = half(b + 208) * (int8_t)b[192 + w / 16] * q;
        }
        return 256;
    case ELM_TYPE_IQ4_NL:
        for (int l = 0; l < 32; l++) y[l] = half(b) * grid[bits(b[2 + l % 16], 4 * (l / 16), 4)];
        return 32;
    case ELM_TYPE_IQ4_XS: {
        const int sh = b[2] | b[3] << 8;
        for (int w = 0; w < 256; w++) {
            const int j = w / 32, l = w % 32;
            const int ls = (bits(b[4 + j / 2], 4 * (j % 2), 4) | ((sh >> (2 * j)) & 3) << 4) - 32;
            y[w] = half(b) * ls * grid[bits(b[8 + 16 * j + l % 16], 4 * (l / 16), 4)];
        }
        return 256;
    }
    default: return 0;
    }
}

static const struct { elm_type t; size_t bytes; } layouts[] = {
    {ELM_TYPE_Q2_K, 84},   {ELM_TYPE_Q3_K, 110},  {ELM_TYPE_Q4_K, 144},  {ELM_TYPE_Q5_K, 176},
    {ELM_TYPE_Q6_K, 210},  {ELM_TYPE_IQ4_NL, 18}, {ELM_TYPE_IQ4_XS, 136}};

/* Decodes every tensor of a listed type in file; counts blocks and tensors per type. */
static void check_file(const char *path, long blocks[], int *tensors) {
    elm_model *m = NULL;
    elm_error err;
    if (elm_model_load(path, NULL, &m, &err)) {
        CHECK(0, "load %s: %s", path, err.msg);
        return;
    }
    for (int32_t i = 0; i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i];
        size_t k = 0;
        while (k < sizeof layouts / sizeof layouts[0] && layouts[k].t != t->type) k++;
        if (k == sizeof layouts / sizeof layouts[0]) continue;
        const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        float *lib = malloc((size_t)n * 4), *ind = malloc((size_t)n * 4);
        elm_type_get(t->type)->to_float(t->data, lib, n);
        const uint8_t *b = t->data;
        int64_t done = 0;
        long nb = 0;
        while (done < n) {
            done += decode_block(t->type, b, ind + done);
            b += layouts[k].bytes;
            nb++;
        }
        CHECK((size_t)(b - (const uint8_t *)t->data) == t->nbytes, "%s %s: %zu block bytes, "
              "tensor has %zu", path, t->name, (size_t)(b - (const uint8_t *)t->data), t->nbytes);
        int64_t diff = 0;
        for (int64_t j = 0; j < n; j++) diff += memcmp(&lib[j], &ind[j], 4) != 0;
        CHECK(diff == 0, "%s %s: %lld of %lld weights differ from the documented layout", path,
              t->name, (long long)diff, (long long)n);
        blocks[k] += nb;
        tensors[k]++;
        free(lib);
        free(ind);
    }
    elm_model_free(m);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const char *dir = fixture("wide256/reference-quants");
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    long blocks[7] = {0};
    int tensors[7] = {0}, files = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        const size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".gguf") || strstr(e->d_name, "imatrix-"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        check_file(path, blocks, tensors);
        files++;
    }
    if (d) closedir(d);
    /* every type is exercised, on many blocks */
    for (size_t k = 0; k < 7; k++)
        CHECK(tensors[k] > 0 && blocks[k] > 1000, "%s: %d tensors, %ld blocks decoded",
              elm_type_get(layouts[k].t)->name, tensors[k], blocks[k]);
    CHECK(files >= 19, "%d files", files);
    return check_done();
}
