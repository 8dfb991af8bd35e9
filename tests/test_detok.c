/* Decoder tests: token bytes, the streaming decoder's hold-back of characters split over
 * byte-fallback tokens (every emitted chunk is complete UTF-8), U+FFFD for ill-formed byte runs,
 * flush, the leading-space rule and output truncation. Uses the stories260K GGUF vocab, whose
 * byte tokens are id = 3 + byte. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats/loaders.h"

#define BYTE(b) (3 + (b))
#define FFFD "\xEF\xBF\xBD"

/* Whether s[0, n) is well-formed UTF-8 (Unicode 15, table 3-7). */
static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                   : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (len == 0) return false;
        /* the second byte's range is narrower after E0, ED, F0, F4 */
        unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; k++) {
            unsigned char d = s[i + k];
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return false;
        }
        i += len;
    }
    return true;
}

/* Streams ids through a decoder, checking each chunk is valid UTF-8; returns the concatenation
 * (static buffer) and the size of each chunk in chunk_len[i] (the flush's last). */
static const char *stream(const elm_vocab *v, const int32_t *ids, int n, bool strip,
                          size_t *chunk_len) {
    static char all[1024];
    char chunk[64];
    size_t len = 0;
    elm_detok d;
    elm_detok_init(&d, v, strip);
    for (int i = 0; i <= n; i++) {
        size_t k = i < n ? elm_detok_push(&d, ids[i], chunk, sizeof chunk)
                         : elm_detok_flush(&d, chunk, sizeof chunk);
        CHECK(k < sizeof chunk && chunk[k] == '\0', "chunk %d not terminated", i);
        CHECK(valid_utf8((const unsigned char *)chunk, k), "chunk %d is not valid UTF-8", i);
        if (chunk_len) chunk_len[i] = k;
        memcpy(all + len, chunk, k);
        len += k;
    }
    all[len] = '\0';
    return all;
}

static void check_split_character(const elm_vocab *v) {
    /* "你好" as golden/tokenize.json encodes it: BOS, "▁", then the six bytes of the two
     * characters, each its own byte-fallback token. */
    const int32_t ids[] = {1, 410, 231, 192, 163, 232, 168, 192};
    size_t chunk[9];
    const char *text = stream(v, ids, 8, true, chunk);
    CHECK(strcmp(text, "你好") == 0, "streamed '%s'", text);
    CHECK(chunk[0] == 0 && chunk[1] == 0, "BOS and the stripped prefix space print nothing");
    CHECK(chunk[2] == 0 && chunk[3] == 0 && chunk[4] == 3, "first character held back, then whole");
    CHECK(chunk[5] == 0 && chunk[6] == 0 && chunk[7] == 3, "second character held back");
    CHECK(chunk[8] == 0, "nothing left to flush");
    char *whole = elm_detokenize(v, ids, 8, true);
    CHECK(whole && strcmp(whole, text) == 0, "elm_detokenize differs from the stream");
    free(whole);
    whole = elm_detokenize(v, ids, 8, false);
    CHECK(whole && strcmp(whole, " 你好") == 0, "without strip: '%s'", whole ? whole : "");
    free(whole);
}

static void check_ill_formed(const elm_vocab *v) {
    /* lead byte of 3, then 'A': the broken sequence is one U+FFFD, 'A' survives */
    const int32_t broken[] = {BYTE(0xE4), BYTE('A')};
    CHECK(strcmp(stream(v, broken, 2, false, NULL), FFFD "A") == 0, "broken sequence");
    const int32_t stray[] = {BYTE(0x80), BYTE(0xC0), BYTE(0xFF)};
    CHECK(strcmp(stream(v, stray, 3, false, NULL), FFFD FFFD FFFD) == 0,
          "continuation without lead, overlong lead, 0xFF");
    /* E0 80 is an overlong form: the second byte already breaks it */
    const int32_t overlong[] = {BYTE(0xE0), BYTE(0x80)};
    CHECK(strcmp(stream(v, overlong, 2, false, NULL), FFFD FFFD) == 0, "E0 80");
    /* an unfinished character at the end comes out of flush as one U+FFFD */
    const int32_t tail[] = {BYTE('o'), BYTE(0xE4), BYTE(0xBD)};
    size_t chunk[4];
    CHECK(strcmp(stream(v, tail, 3, false, chunk), "o" FFFD) == 0, "truncated at the end");
    CHECK(chunk[3] == 3, "flush emits the held bytes as U+FFFD");
    /* a text piece interrupting a held sequence */
    const int32_t interrupted[] = {BYTE(0xE4), 403};
    char *s = elm_detokenize(v, interrupted, 2, false);
    CHECK(s && strcmp(s, FFFD " Once") == 0, "interrupted: '%s'", s ? s : "");
    free(s);
}

static void check_token_bytes(const elm_vocab *v) {
    char buf[16];
    size_t n = elm_token_to_bytes(v, 403, buf, sizeof buf);
    CHECK(n == 5 && memcmp(buf, " Once", 5) == 0, "token 403 is ' Once' (%zu bytes)", n);
    CHECK(elm_token_to_bytes(v, 403, buf, 3) == 3 && memcmp(buf, " On", 3) == 0, "truncated");
    CHECK(elm_token_to_bytes(v, BYTE('\n'), buf, sizeof buf) == 1 && buf[0] == '\n', "<0x0A>");
    CHECK(elm_token_to_bytes(v, 1, buf, sizeof buf) == 0, "BOS prints nothing");
    CHECK(elm_token_to_bytes(v, 0, buf, sizeof buf) == 0, "<unk> prints nothing");
    CHECK(elm_token_to_bytes(v, 512, buf, sizeof buf) == 0, "id past the vocab");
    CHECK(elm_token_to_bytes(v, -1, buf, sizeof buf) == 0, "negative id");
}

static void check_leading_space(const elm_vocab *v) {
    /* BOS "Once upon a time": the prefix space goes, the inner ones stay */
    const int32_t ids[] = {1, 403, 407, 261, 378};
    CHECK(strcmp(stream(v, ids, 5, true, NULL), "Once upon a time") == 0, "strip");
    CHECK(strcmp(stream(v, ids, 5, false, NULL), " Once upon a time") == 0, "no strip");
    /* truncated output stays a prefix and NUL-terminated */
    elm_detok d;
    elm_detok_init(&d, v, false);
    char small[4];
    size_t n = elm_detok_push(&d, 403, small, sizeof small);
    CHECK(n == 3 && strcmp(small, " On") == 0, "cap 4 keeps ' On' (%zu)", n);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    elm_vocab v;
    elm_error err;
    elm_status st = elm_vocab_load(fixture("stories260K/stories260K-f32.gguf"), &v, &err);
    CHECK(st == ELM_OK, "%s", err.msg);
    if (st == ELM_OK) {
        check_split_character(&v);
        check_ill_formed(&v);
        check_token_bytes(&v);
        check_leading_space(&v);
        elm_vocab_free(&v);
    }
    return check_done();
}
