/* FNV-1a 64 (Fowler, Noll, Vo; IETF draft-eastlake-fnv): a fast hash for hash tables and file
 * checksums. Not a defence against deliberate tampering. */
#ifndef EDGELM_CORE_HASH_H
#define EDGELM_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define ELM_FNV1A_INIT 0xcbf29ce484222325ull

/* Continues hash h (start from ELM_FNV1A_INIT) over n bytes at p. */
static inline uint64_t elm_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif
