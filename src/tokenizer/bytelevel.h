/* GPT-2's byte-to-unicode alphabet (Radford et al. 2019, the released encoder.py
 * "bytes_to_unicode"): byte-level BPE vocabularies spell every byte as one printable character so
 * that merges and pieces are plain strings. Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
 * themselves (as code points); the other 68 bytes, in increasing order, become U+0100 + k ("Ġ"
 * U+0120 is the space). */
#ifndef EDGELM_TOKENIZER_BYTELEVEL_H
#define EDGELM_TOKENIZER_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Writes the UTF-8 of the stand-ins of in[0, n) to out (room for 2n bytes: every stand-in is at
 * most U+0143); returns the bytes written. */
size_t elm_bytelevel_encode(const unsigned char *in, size_t n, char *out);

/* The byte code point cp stands for, or -1 when cp is not in the alphabet. */
int elm_bytelevel_byte(uint32_t cp);

#endif
