/* Type traits (src/core/types.c) against an independent block decoder written here from the
 * docs/formats.md table: the library's to_float must agree exactly with it on llama.cpp's reference
 * quantizations and on random data the library quantized; f16/bf16 conversions round to nearest
 * even (checked against neighbours, not against the library); RTN error stays within the bound
 * each type's scale allows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/model.h"
#include "edgelm/types.h"

/* ---- independent reference decoder (docs/formats.md "ggml blocks") ---- */

static float ref_half(const uint8_t *p) {
    int h = p[0] | p[1] << 8;
    int sign = h >> 15, e = (h >> 10) & 31, man = h & 1023;
    double v = e == 0    ? ldexp(man, -24)
               : e == 31 ? (man ? NAN : INFINITY)
                         : ldexp(1024 + man, e - 25);
    return (float)(sign ? -v : v);
}

/* 4-bit nibble of weight j: low nibble of qs[j] for j < 16, high nibble of qs[j-16] after */
static int nib(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

static int bit5(const uint8_t *qh, int j) {
    uint32_t h =
        (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    return (int)((h >> j) & 1) << 4;
}

/* Decodes one block of `type` into 32 floats; returns the block size in bytes. */
static size_t ref_block(elm_type type, const uint8_t *b, float *out) {
    for (int j = 0; j < 32; j++) {
        switch (type) {
        case ELM_TYPE_Q8_0: out[j] = ref_half(b) * (float)(int8_t)b[2 + j]; break;
        case ELM_TYPE_Q4_0: out[j] = ref_half(b) * (float)(nib(b + 2, j) - 8); break;
        case ELM_TYPE_Q4_1: out[j] = ref_half(b) * (float)nib(b + 4, j) + ref_half(b + 2); break;
        case ELM_TYPE_Q5_0:
            out[j] = ref_half(b) * (float)((nib(b + 6, j) | bit5(b + 2, j)) - 16);
            break;
        case ELM_TYPE_Q5_1:
            out[j] = ref_half(b) * (float)(nib(b + 8, j) | bit5(b + 4, j)) + ref_half(b + 2);
            break;
        default: return 0;
        }
    }
    switch (type) {
    case ELM_TYPE_Q8_0: return 34;
    case ELM_TYPE_Q4_0: return 18;
    case ELM_TYPE_Q4_1: return 20;
    case ELM_TYPE_Q5_0: return 22;
    default: return 24;
    }
}

/* Decodes n weights of any type the reference knows (f32, f16, bf16 and the blocks). */
static void ref_decode(elm_type type, const uint8_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n;) {
        if (type == ELM_TYPE_F32) {
            memcpy(&dst[i], src + 4 * i, 4);
            i++;
        } else if (type == ELM_TYPE_F16) {
            dst[i] = ref_half(src + 2 * i);
            i++;
        } else if (type == ELM_TYPE_BF16) {
            uint32_t u = (uint32_t)(src[2 * i] | src[2 * i + 1] << 8) << 16;
            memcpy(&dst[i], &u, 4);
            i++;
        } else {
            src += ref_block(type, src, dst + i);
            i += 32;
        }
    }
}

static bool same_bits(const float *a, const float *b, int64_t n, int64_t *where) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) != 0) {
            *where = i;
            return false;
        }
    return true;
}

/* ---- (a) reference quantizations written by llama-quantize ---- */

static void test_reference_files(void) {
    const char *files[] = {"llamacpp-q8_0-pure.gguf", "llamacpp-q4_0-pure.gguf",
                           "llamacpp-q4_1-pure.gguf", "llamacpp-q4_0-pure-imatrix.gguf"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char rel[256];
        snprintf(rel, sizeof rel, "stories260K/reference-quants/%s", files[f]);
        elm_model *m = NULL;
        elm_error err;
        elm_status st = elm_model_load(fixture(rel), NULL, &m, &err);
        CHECK(st == ELM_OK, "load %s: %s", rel, err.msg);
        if (st) continue;
        int n_checked = 0;
        for (int32_t i = 0; i < m->n_tensors; i++) {
            const elm_tensor *t = &m->tensors[i];
            int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
            float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
            elm_type_get(t->type)->to_float(t->data, a, n);
            ref_decode(t->type, t->data, b, n);
            int64_t at = -1;
            CHECK(same_bits(a, b, n, &at), "%s %s (%s): to_float differs at %lld: %g vs %g", files[f],
                  t->name, elm_type_get(t->type)->name, (long long)at, at >= 0 ? a[at] : 0,
                  at >= 0 ? b[at] : 0);
            n_checked += t->type != ELM_TYPE_F32;
            free(a);
            free(b);
        }
        CHECK(n_checked == 37, "%s: %d non-f32 tensors checked, expected 37", files[f], n_checked);
        elm_model_free(m);
    }
}

/* ---- (b) random data, quantized by the library ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float urand(void) { return (float)rnd() / 4294967296.0f; } /* [0, 1) */

/* Blocks of varied character: gaussian-ish, all equal, all zero, one outlier, mostly negative. */
static void fill_random(float *x, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        float scale = powf(10.0f, urand() * 6 - 4), shift = urand() < 0.3f ? -scale : 0;
        int kind = (int)(rnd() % 8);
        for (int j = 0; j < 32; j++) {
            float g = (urand() + urand() + urand() - 1.5f) * scale + shift;
            x[b * 32 + j] = kind == 0 ? 0.0f : kind == 1 ? scale : g;
        }
        if (kind == 2) x[b * 32 + rnd() % 32] = 50 * scale;
    }
}

static const elm_type block_types[] = {ELM_TYPE_Q8_0, ELM_TYPE_Q4_0, ELM_TYPE_Q4_1, ELM_TYPE_Q5_0,
                                       ELM_TYPE_Q5_1};

static void test_random_roundtrip(void) {
    enum { N = 32 * 4096 };
    float *x = malloc(N * 4), *a = malloc(N * 4), *b = malloc(N * 4);
    uint8_t *q = malloc(N * 4);
    fill_random(x, N);
    for (size_t k = 0; k < sizeof block_types / sizeof block_types[0]; k++) {
        elm_type type = block_types[k];
        const elm_type_traits *tt = elm_type_get(type);
        tt->from_float(x, q, N);
        tt->to_float(q, a, N);
        ref_decode(type, q, b, N);
        int64_t at = -1;
        CHECK(same_bits(a, b, N, &at), "%s random: to_float differs from the reference at %lld",
              tt->name, (long long)at);
        /* RTN error bound from the block scale; the symmetric types clamp the top code, so the
         * weight opposite the extreme can be one full step off */
        int bad = 0;
        for (int64_t blk = 0; blk < N / 32; blk++) {
            const float *xb = x + blk * 32;
            float amax = 0, mn = INFINITY, mx = -INFINITY;
            for (int j = 0; j < 32; j++) {
                amax = fmaxf(amax, fabsf(xb[j]));
                mn = fminf(mn, xb[j]);
                mx = fmaxf(mx, xb[j]);
            }
            /* the stored f16 scale is off by at most half an f16 step of d (relative 2^-11,
             * absolute 2^-25 once subnormal), and every code multiplies that error */
            float d, bound;
            switch (type) {
            case ELM_TYPE_Q8_0:
                d = amax / 127;
                bound = 0.5f * d + 127 * (d * 0x1p-11f + 0x1p-25f);
                break;
            case ELM_TYPE_Q4_0: d = amax / 8; bound = d + 8 * (d * 0x1p-11f + 0x1p-25f); break;
            case ELM_TYPE_Q5_0: d = amax / 16; bound = d + 16 * (d * 0x1p-11f + 0x1p-25f); break;
            case ELM_TYPE_Q4_1:
                d = (mx - mn) / 15;
                bound = 0.5f * d + 15 * (d * 0x1p-11f + 0x1p-25f) + fabsf(mn) * 0x1p-11f + 0x1p-25f;
                break;
            default:
                d = (mx - mn) / 31;
                bound = 0.5f * d + 31 * (d * 0x1p-11f + 0x1p-25f) + fabsf(mn) * 0x1p-11f + 0x1p-25f;
                break;
            }
            for (int j = 0; j < 32; j++)
                if (!(fabsf(a[blk * 32 + j] - xb[j]) <= bound * 1.001f)) bad++;
        }
        CHECK(bad == 0, "%s: %d weights beyond the RTN error bound", tt->name, bad);
    }
    /* float types too */
    const elm_type ftypes[] = {ELM_TYPE_F32, ELM_TYPE_F16, ELM_TYPE_BF16};
    for (size_t k = 0; k < 3; k++) {
        const elm_type_traits *tt = elm_type_get(ftypes[k]);
        tt->from_float(x, q, N);
        tt->to_float(q, a, N);
        ref_decode(ftypes[k], q, b, N);
        int64_t at = -1;
        CHECK(same_bits(a, b, N, &at), "%s: to_float differs from the reference at %lld", tt->name,
              (long long)at);
    }
    free(x);
    free(a);
    free(b);
    free(q);
}

/* ---- hand-made blocks: known bytes and known values ---- */

static void test_known_blocks(void) {
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 8); /* -8..23 */
    uint8_t q[34];
    /* Q4_0: max |x| is 23 -> d = 23/-8 = -2.875 (exact in f16: 0xC1C0) */
    elm_type_get(ELM_TYPE_Q4_0)->from_float(x, q, 32);
    CHECK(q[0] == 0xC0 && q[1] == 0xC1, "q4_0 scale bytes %02x %02x", q[0], q[1]);
    /* x = 23 -> 23 / -2.875 + 8.5 = 0.5 -> 0; x = -8 -> 2.78 + 8.5 = 11.28 -> 11 */
    CHECK(nib(q + 2, 31) == 0 && nib(q + 2, 0) == 11, "q4_0 nibbles %d %d", nib(q + 2, 31),
          nib(q + 2, 0));
    /* Q8_0 of all zeros: d = 0, every q 0 */
    memset(x, 0, sizeof x);
    elm_type_get(ELM_TYPE_Q8_0)->from_float(x, q, 32);
    int nz = 0;
    for (int j = 0; j < 34; j++) nz += q[j] != 0;
    CHECK(nz == 0, "q8_0 of zeros has %d non-zero bytes", nz);
    elm_type_get(ELM_TYPE_Q8_0)->to_float(q, y, 32);
    CHECK(y[0] == 0 && y[31] == 0, "q8_0 zeros decode to %g", y[0]);
    /* Q5_1 of 0..31: m = 0, d = 1, q = j exactly (bit 4 set for j >= 16) */
    for (int j = 0; j < 32; j++) x[j] = (float)j;
    elm_type_get(ELM_TYPE_Q5_1)->from_float(x, q, 32);
    CHECK(q[4] == 0 && q[5] == 0 && q[6] == 0xff && q[7] == 0xff, "q5_1 qh %02x%02x%02x%02x", q[4],
          q[5], q[6], q[7]);
    elm_type_get(ELM_TYPE_Q5_1)->to_float(q, y, 32);
    int off = 0;
    for (int j = 0; j < 32; j++) off += y[j] != x[j];
    CHECK(off == 0, "q5_1 of 0..31 is not exact (%d off)", off);
}

/* ---- f16 / bf16 ---- */

static float h2f(uint16_t h) {
    uint8_t b[2] = {(uint8_t)h, (uint8_t)(h >> 8)};
    return ref_half(b);
}

static void test_f16(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = elm_f16_to_f32((uint16_t)h);
        float r = h2f((uint16_t)h);
        if (isnan(r)) {
            uint16_t back = elm_f32_to_f16(f);
            bad += !isnan(f) || !(back & 0x200) || (back & 0x7c00) != 0x7c00;
            continue;
        }
        bad += memcmp(&f, &r, 4) != 0 || elm_f32_to_f16(f) != h;
    }
    CHECK(bad == 0, "%d half values do not round trip", bad);

    const struct { float f; uint16_t h; } cases[] = {
        {0.0f, 0x0000},           {-0.0f, 0x8000},        {1.0f, 0x3c00},
        {65504.0f, 0x7bff},       {65519.0f, 0x7bff},     {65520.0f, 0x7c00}, /* tie to even: inf */
        {1e9f, 0x7c00},           {-1e9f, 0xfc00},        {INFINITY, 0x7c00},
        {0x1p-24f, 0x0001},       {0x1p-25f, 0x0000},     /* tie, to even 0 */
        {0x1.8p-24f, 0x0002},     /* 1.5 units: tie to even 2 */
        {0x1.000002p-25f, 0x0001}, {0x1p-14f, 0x0400},
        {0x1.ffcp-15f, 0x0400}, /* 1023.5 units: ties to even, carrying into the normals */
        {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02}, {1e-10f, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(elm_f32_to_f16(cases[i].f) == cases[i].h, "f16(%a) = %04x, expected %04x",
              (double)cases[i].f, elm_f32_to_f16(cases[i].f), cases[i].h);
    CHECK((elm_f32_to_f16(NAN) & 0x7e00) == 0x7e00, "f16(NaN) = %04x", elm_f32_to_f16(NAN));

    /* random floats: the result is the nearest half, ties to the even one */
    bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (rnd() << 16 ^ rnd()) & 0x807fffffu;
        u |= (uint32_t)(100 + rnd() % 44) << 23; /* exponents 2^-27 .. 2^16 */
        float f;
        memcpy(&f, &u, 4);
        uint16_t h = elm_f32_to_f16(f);
        if ((h & 0x7fff) >= 0x7c00) {
            bad += fabsf(f) < 65520.0f;
            continue;
        }
        double e = fabs((double)h2f(h) - f);
        double up = fabs((double)h2f((uint16_t)(h + 1)) - f);
        double dn = (h & 0x7fff) ? fabs((double)h2f((uint16_t)(h - 1)) - f) : INFINITY;
        if ((h & 0x7fff) == 0x7bff) up = fabs(65536.0 - fabs((double)f));
        bad += e > up || e > dn || ((e == up || e == dn) && (h & 1));
    }
    CHECK(bad == 0, "%d random floats not rounded to the nearest even half", bad);
}

static void test_bf16(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = elm_bf16_to_f32((uint16_t)h);
        uint32_t u;
        memcpy(&u, &f, 4);
        if (u != h << 16) bad++;
        if (!isnan(f) && elm_f32_to_bf16(f) != h) bad++;
        if (isnan(f) && !isnan(elm_bf16_to_f32(elm_f32_to_bf16(f)))) bad++;
    }
    CHECK(bad == 0, "%d bf16 values do not round trip", bad);
    const struct { uint32_t f; uint16_t h; } cases[] = {
        {0x3f808000u, 0x3f80}, /* tie, even stays */
        {0x3f818000u, 0x3f82}, /* tie, odd rounds up */
        {0x3f808001u, 0x3f81}, {0x7f7fffffu, 0x7f80}, /* largest float rounds to inf */
        {0x80000001u, 0x8000}, /* tiny negative subnormal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float f;
        memcpy(&f, &cases[i].f, 4);
        CHECK(elm_f32_to_bf16(f) == cases[i].h, "bf16(%08x) = %04x, expected %04x", cases[i].f,
              elm_f32_to_bf16(f), cases[i].h);
    }
    uint16_t qn = elm_f32_to_bf16(NAN);
    CHECK((qn & 0x7fc0) == 0x7fc0, "bf16(NaN) = %04x is not a quiet NaN", qn);
    float snan;
    uint32_t snan_bits = 0x7f800001u; /* signalling NaN whose payload sits below bit 16 */
    memcpy(&snan, &snan_bits, 4);
    CHECK(isnan(elm_bf16_to_f32(elm_f32_to_bf16(snan))), "bf16 of a low-payload NaN is not NaN");
}

/* ---- names and sizes ---- */

static void test_names(void) {
    elm_type t;
    CHECK(elm_type_from_name("q4_0", &t) && t == ELM_TYPE_Q4_0, "q4_0");
    CHECK(elm_type_from_name("Q5_1", &t) && t == ELM_TYPE_Q5_1, "Q5_1 case-insensitive");
    CHECK(elm_type_from_name("bf16", &t) && t == ELM_TYPE_BF16, "bf16");
    CHECK(elm_type_from_name("q4_k", &t) && t == ELM_TYPE_Q4_K, "q4_k");
    CHECK(!elm_type_from_name("q4_k_m", &t), "a recipe is not a type");
    CHECK(!elm_type_from_name("q8_1", &t), "q8_1 is not supported");
    CHECK(elm_type_from_name("IQ2_XXS", &t) && t == ELM_TYPE_IQ2_XXS, "IQ2_XXS");
    CHECK(!elm_type_from_name("", &t), "empty name");
    CHECK(elm_row_bytes(ELM_TYPE_Q4_0, 64) == 36, "q4_0 row of 64");
    CHECK(elm_row_bytes(ELM_TYPE_Q8_0, 4096) == 4352, "q8_0 row of 4096");
    CHECK(elm_row_bytes(ELM_TYPE_Q4_0, 172) == 0, "q4_0 row of 172 is not whole blocks");
    CHECK(elm_row_bytes(ELM_TYPE_F16, 172) == 344, "f16 row of 172");
    CHECK(elm_row_bytes(ELM_TYPE_F32, 0) == 0, "empty row");
    CHECK(elm_type_get(15) == NULL && elm_type_get(9) == NULL && elm_type_get(1000) == NULL,
          "unsupported ids give NULL");
    const struct { elm_type t; size_t bytes; double bpw; } g[] = {
        {ELM_TYPE_Q8_0, 34, 8.5}, {ELM_TYPE_Q4_0, 18, 4.5}, {ELM_TYPE_Q4_1, 20, 5.0},
        {ELM_TYPE_Q5_0, 22, 5.5}, {ELM_TYPE_Q5_1, 24, 6.0}, {ELM_TYPE_BF16, 2, 16.0},
        /* the sub-4-bit types (ggml-common.h's block sizes) */
        {ELM_TYPE_IQ2_XXS, 66, 2.0625}, {ELM_TYPE_IQ2_XS, 74, 2.3125}, {ELM_TYPE_IQ2_S, 82, 2.5625},
        {ELM_TYPE_IQ3_XXS, 98, 3.0625}, {ELM_TYPE_IQ3_S, 110, 3.4375}, {ELM_TYPE_IQ1_S, 50, 1.5625},
        {ELM_TYPE_IQ1_M, 56, 1.75},     {ELM_TYPE_TQ1_0, 54, 1.6875},  {ELM_TYPE_TQ2_0, 66, 2.0625},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        const elm_type_traits *tt = elm_type_get(g[i].t);
        CHECK(tt && tt->block_bytes == g[i].bytes && tt->bits_per_weight == g[i].bpw &&
                  tt->bits_per_weight == 8.0 * tt->block_bytes / tt->block_size,
              "traits of type %d", (int)g[i].t);
    }
}

/* Each list of names holds every type that qualifies, once: a ", "-separated item, not a
 * substring of a longer name (q4_k in iq4_k...). */
static bool listed(const char *list, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

/* The traits files and llama-quantize read: llama.cpp's general.file_type of a file of each type
 * (LLAMA_FTYPE_MOSTLY_*, the _M recipe for the mid k-quants), its fallback type for rows a block
 * does not divide, and the lists of names messages quote. */
static void test_file_traits(void) {
    const struct { elm_type t; uint32_t ftype; elm_type fallback; } g[] = {
        {ELM_TYPE_F32, 0, ELM_TYPE_F32},      {ELM_TYPE_F16, 1, ELM_TYPE_F16},
        {ELM_TYPE_Q4_0, 2, ELM_TYPE_F16},     {ELM_TYPE_Q4_1, 3, ELM_TYPE_F16},
        {ELM_TYPE_Q8_0, 7, ELM_TYPE_F16},     {ELM_TYPE_Q5_0, 8, ELM_TYPE_F16},
        {ELM_TYPE_Q5_1, 9, ELM_TYPE_F16},     {ELM_TYPE_Q2_K, 10, ELM_TYPE_Q4_0},
        {ELM_TYPE_Q3_K, 12, ELM_TYPE_Q4_0},   {ELM_TYPE_Q4_K, 15, ELM_TYPE_Q5_0},
        {ELM_TYPE_Q5_K, 17, ELM_TYPE_Q5_1},   {ELM_TYPE_Q6_K, 18, ELM_TYPE_Q8_0},
        {ELM_TYPE_IQ4_NL, 25, ELM_TYPE_F16},  {ELM_TYPE_IQ4_XS, 30, ELM_TYPE_IQ4_NL},
        {ELM_TYPE_BF16, 32, ELM_TYPE_BF16},   {ELM_TYPE_MXFP4, 38, ELM_TYPE_F16},
        {ELM_TYPE_IQ2_XXS, 19, ELM_TYPE_IQ4_NL}, {ELM_TYPE_IQ2_XS, 20, ELM_TYPE_IQ4_NL},
        {ELM_TYPE_IQ3_XXS, 23, ELM_TYPE_IQ4_NL}, {ELM_TYPE_IQ1_S, 24, ELM_TYPE_IQ4_NL},
        {ELM_TYPE_IQ3_S, 26, ELM_TYPE_IQ4_NL},   {ELM_TYPE_IQ2_S, 28, ELM_TYPE_IQ4_NL},
        {ELM_TYPE_IQ1_M, 31, ELM_TYPE_IQ4_NL},   {ELM_TYPE_TQ1_0, 36, ELM_TYPE_Q4_0},
        {ELM_TYPE_TQ2_0, 37, ELM_TYPE_Q4_0}};
    int n_types = 0, n_listed = 0;
    for (uint32_t t = 0; t < ELM_TYPE_COUNT; t++) {
        const elm_type_traits *tt = elm_type_get(t);
        if (!tt) continue;
        n_types++;
        n_listed += listed(elm_type_names(false), tt->name) &&
                    listed(elm_type_names(true), tt->name) == elm_type_writable((elm_type)t);
    }
    CHECK(n_types == (int)(sizeof g / sizeof g[0]) && n_listed == n_types,
          "%d types, %d listed right: '%s' / '%s'", n_types, n_listed, elm_type_names(false),
          elm_type_names(true));
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        const elm_type_traits *tt = elm_type_get(g[i].t), *fb = elm_type_get(g[i].fallback);
        CHECK(tt && tt->file_type == g[i].ftype && tt->fallback == g[i].fallback &&
                  fb->block_size <= ELM_QK,
              "%s: file type %u, fallback %d", tt ? tt->name : "?", tt ? tt->file_type : 0,
              tt ? (int)tt->fallback : -1);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    test_names();
    test_file_traits();
    test_f16();
    test_bf16();
    test_known_blocks();
    test_random_roundtrip();
    test_reference_files();
    return check_done();
}
