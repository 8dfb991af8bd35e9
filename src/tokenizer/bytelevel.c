/* GPT-2's byte-to-unicode alphabet (see bytelevel.h). The mapping is a pure function of the byte,
 * computed arithmetically, so there is no table to build or share. */
#include "tokenizer/bytelevel.h"

/* Bytes that stand for themselves. */
static int printable(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

/* Code point of byte b's stand-in: itself, or U+0100 + the number of non-printable bytes below b. */
static uint32_t stand_in(unsigned b) {
    if (printable(b)) return b;
    /* non-printable bytes: 0x00..0x20 (33), 0x7F..0xA0 (34), 0xAD (1) */
    if (b <= 0x20) return 0x100 + b;
    if (b <= 0xA0) return 0x100 + 33 + (b - 0x7F);
    return 0x100 + 67; /* 0xAD */
}

size_t elm_bytelevel_encode(const unsigned char *in, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = stand_in(in[i]);
        if (cp < 0x80) {
            out[k++] = (char)cp;
        } else {
            out[k++] = (char)(0xC0 | (cp >> 6));
            out[k++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return k;
}

int elm_bytelevel_byte(uint32_t cp) {
    if (cp < 0x100) return printable(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33) return (int)(cp - 0x100);
    if (cp < 0x100 + 67) return (int)(cp - 0x100 - 33 + 0x7F);
    if (cp == 0x100 + 67) return 0xAD;
    return -1;
}
