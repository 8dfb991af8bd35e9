/* Session files: a context's conversation (token ids and their KV cache) saved to disk and
 * restored later, in this or another process, so a chat continues without prefilling its history
 * again. The file names the model it belongs to and is checked in full before anything is loaded.
 *
 * Layout (little-endian, version 1):
 *   "EDGELMSS" | u32 version | u32 header bytes (72)
 *   i32 n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim | u64 parameters
 *   u64 weights fingerprint (FNV-1a 64 of the first 4 KiB of the token embedding and the output
 *       norm: tells apart two quantizations of one model)
 *   u32 type_k, type_v (elm_type) | i32 n_tokens | u32 reserved (0)
 *   i32 tokens[n_tokens]
 *   per layer: keys [n_tokens, row_k bytes], values [n_tokens, row_v bytes] (the cache's encoding)
 *   u64 FNV-1a 64 of everything before it */
#ifndef EDGELM_SESSION_H
#define EDGELM_SESSION_H

#include "edgelm/context.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELM_SESSION_VERSION 1

/* Writes the context's cached tokens and KV cache to path (atomically: a temporary file renamed on
 * success). ELM_ERR_IO naming the file. */
elm_status elm_session_save(const elm_context *c, const char *path, elm_error *err);

/* Replaces the context's cache with the session in path; on any error the context is left as it
 * was. ELM_ERR_FORMAT (message naming the file and the problem) for a file that is not a session,
 * of another version, of the wrong size, with a bad checksum or token ids out of range;
 * ELM_ERR_ARG for a session of another model, with other cache types, or longer than the
 * context. */
elm_status elm_session_load(elm_context *c, const char *path, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
