/* edgelm.h — the one header an application includes.
 *
 * The small app-facing API a chat app or a JNI bridge binds to: opaque handles, plain C types,
 * UTF-8 strings, status codes and error strings kept per handle. It needs no other edgelm header;
 * the elm_* headers beside it (model.h, context.h, chat.h, ...) are the full library for advanced
 * use. There is no global state: a model is read-only once loaded and can be
 * shared by several contexts, each used by one thread at a time, all running at once.
 *
 * Typical use (examples/chat.c):
 *     edgelm_model *m; edgelm_ctx *c; char err[256];
 *     if (edgelm_model_load("model.gguf", &m, err, sizeof err)) { puts(err); return 1; }
 *     edgelm_params p = edgelm_default_params();
 *     if (edgelm_ctx_new(m, &p, &c, err, sizeof err)) { ... }
 *     edgelm_chat(c, "Hello!", 256, on_piece, view);   // streams the reply into on_piece
 *     edgelm_stats s = edgelm_get_stats(c);            // ttft_ms, tokens_per_sec, ...
 *     edgelm_ctx_free(c); edgelm_model_free(m);
 *
 * Status codes are elm_status values (0 = ok); a callback's request to stop is not an error. */
#ifndef EDGELM_EDGELM_H
#define EDGELM_EDGELM_H

#include <stddef.h>
#include <stdint.h>
#include "edgelm/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct edgelm_model edgelm_model;
typedef struct edgelm_ctx edgelm_ctx;

/* Settings of a context. Start from edgelm_default_params(). */
typedef struct edgelm_params {
    int32_t n_ctx;             /* KV cache size in tokens; 0: the model's trained context, <= 4096 */
    int32_t n_batch;           /* most prompt tokens per forward pass; 0: n_ctx */
    int32_t n_threads;         /* 0: all online cores */
    const char *cache_type_k;  /* KV cache element type "f32" (NULL), "f16", "q8_0" or "q4_0" */
    const char *cache_type_v;
    int32_t n_keep;            /* tokens a context shift keeps; 0: the system prompt */
    int no_context_shift;      /* non-zero: stop at a full context instead of shifting it */
    float temp;                /* sampling (sampler.h); temp 0 is greedy */
    int32_t top_k;
    float top_p, min_p, repeat_penalty;
    int32_t repeat_last_n;
    uint64_t seed;
    const char *chat_template; /* "auto" (NULL): from the model's metadata (an unrecognised one
                                * is an error); or a template name */
    int no_think;              /* non-zero: thinking models (Qwen3, Qwen3.5, SmolLM3) answer
                                * without reasoning first (enable_thinking false, /no_think);
                                * Gemma 4 does by default ("gemma4-think" reasons) */
    const char *system_prompt; /* NULL: none */
    edgelm_model *draft;       /* speculative decoding with this model (same vocabulary), or NULL */
    int32_t draft_max;         /* most tokens drafted per step (default 8) */
    float draft_min_p;         /* the draft stops below this confidence (default 0.5) */
    int32_t lookup;            /* prompt-lookup decoding: most tokens copied per step (0 = off) */
    const char *grammar;       /* GBNF text (llama.cpp's syntax, grammar.h): every reply follows
                                * it; NULL: free text. Not with a draft or lookup. */
    const char *json_schema;   /* a JSON schema (text): every reply is JSON valid under it;
                                * NULL: free text. Not with grammar. */
} edgelm_params;

/* Called with each piece of generated text (NUL-terminated UTF-8, possibly "" while a multi-byte
 * character is incomplete) and its token id; id -1 ends the stream with any held-back text.
 * Returning non-zero stops the generation. */
typedef int (*edgelm_token_fn)(const char *piece, int32_t token_id, void *user);

/* Figures of the last edgelm_generate / edgelm_chat call. */
typedef struct edgelm_stats {
    int32_t prompt_tokens;  /* tokens prefilled by the call (the new ones only) */
    int32_t tokens;         /* tokens generated */
    double prefill_ms;      /* wall time of the prompt's forward pass */
    double ttft_ms;         /* call -> first generated token */
    double decode_avg_ms;   /* mean wall time per token after the first */
    double tokens_per_sec;  /* generated tokens after the first per second */
    double peak_rss_mib;    /* peak resident memory of the process so far */
    size_t kv_cache_bytes;  /* this context's KV cache */
    double acceptance_rate; /* speculative decoding: drafted tokens accepted (0 without) */
} edgelm_stats;

edgelm_params edgelm_default_params(void);

/* Loads a GGUF file, a Hugging Face folder or a llama2.c checkpoint. On failure returns the
 * status and writes the message (naming the file and the problem) to errbuf [errcap]. */
int edgelm_model_load(const char *path, edgelm_model **out, char *errbuf, size_t errcap);
/* As edgelm_model_load, but a GGUF file is mapped rather than read, and its matrices are left in
 * the file's layout: loading costs the header and the tensor table, not the weights' memory (a
 * 30B file's 17 GB), which is what reading what a model is (edgelm_model_info) wants. The handle
 * also runs, at the speed of mapped weights. Hugging Face folders and llama2.c checkpoints are
 * read either way. */
int edgelm_model_load_mapped(const char *path, edgelm_model **out, char *errbuf, size_t errcap);
void edgelm_model_free(edgelm_model *m);

/* The library model behind a handle, for the lower-level API (elm_*, edgelm/model.h). */
typedef struct elm_model elm_model;
const elm_model *edgelm_model_get(const edgelm_model *m);

/* A context on model m (borrowed: free the context first) with its own KV cache, sampler and
 * conversation. Errors as edgelm_model_load. */
int edgelm_ctx_new(edgelm_model *m, const edgelm_params *p, edgelm_ctx **out, char *errbuf,
                   size_t errcap);
void edgelm_ctx_free(edgelm_ctx *c);

/* Token ids of text [UTF-8, NUL-terminated]: BOS first when add_bos (and the model has one),
 * control tokens written in the text ("<|im_start|>") parsed when parse_special. Writes at most
 * max_ids; returns the full count (call again with more room when larger), -1 on failure. */
int32_t edgelm_tokenize(const edgelm_model *m, const char *text, int add_bos, int parse_special,
                        int32_t *ids, int32_t max_ids);

/* The text of ids [n] as a malloc'd string (free with edgelm_free), NULL when out of memory. */
char *edgelm_detokenize(const edgelm_model *m, const int32_t *ids, int32_t n);
void edgelm_free(void *p);

/* What model m is, as one JSON object in a malloc'd string (free with edgelm_free), NULL when out
 * of memory: "path", "architecture", "n_vocab", "n_ctx_train", "dim", "n_layers", "n_heads",
 * "n_kv_heads", "head_dim", "ffn_dim", "params", "bytes" (of the weights), "bos_id" and "eos_id"
 * (-1: none), "add_bos" (whether text starts with BOS), "chat_template" (the model's Jinja text,
 * or null). For bindings that cannot read elm_model's fields (python/edgelm). */
char *edgelm_model_info(const edgelm_model *m);

/* One chat turn: the user message goes through the chat template after the conversation the
 * context holds (only its own tokens are prefilled), and the reply is streamed to fn (may be
 * NULL) until the end of the turn, n_predict tokens, or fn returning non-zero. */
int edgelm_chat(edgelm_ctx *c, const char *user_message, int32_t n_predict, edgelm_token_fn fn,
                void *user);

/* Plain continuation: text is appended as it is (no template) and the continuation streamed. */
int edgelm_generate(edgelm_ctx *c, const char *text, int32_t n_predict, edgelm_token_fn fn,
                    void *user);

/* The last reply's whole text ("" before any). Valid until the next call on c. */
const char *edgelm_last_reply(const edgelm_ctx *c);

/* Forgets the conversation (the KV cache empties; the next turn starts with the system prompt). */
void edgelm_reset(edgelm_ctx *c);

/* Saves / restores the conversation (tokens + KV cache) to / from a session file. */
int edgelm_save(edgelm_ctx *c, const char *path);
int edgelm_load(edgelm_ctx *c, const char *path);

edgelm_stats edgelm_get_stats(const edgelm_ctx *c);

/* Message of the last failed call on c ("" after a success). */
const char *edgelm_last_error(const edgelm_ctx *c);

/* ---- documents: answers from a local index (docs/rag.md), as `edgelm index`, `edgelm search`
 * and `edgelm chat --docs` make and use it. They need SQLite: the -DEDGELM_MINIMAL=ON library has
 * them when the build finds it (the app's own SQLite on Android), and otherwise every call below
 * returns ELM_ERR_UNSUPPORTED saying so.
 *
 *     edgelm_index *ix;
 *     if (edgelm_index_open("notes.db", NULL, 0, &ix, err, sizeof err)) { puts(err); ... }
 *     char *hits = edgelm_retrieve(ix, "Where is the spare key?", 5, NULL); // JSON, see below
 *     edgelm_free(hits);
 *     edgelm_chat_docs(c, ix, "Where is the spare key?", 5, 256, on_piece, view);
 *     puts(edgelm_last_citations(c));                  // the sources [1], [2] .. as JSON
 *     edgelm_index_free(ix);
 *
 * An index handle is used by one thread at a time (its embedding context is not shared); several
 * handles may be open on one file for reading. */
typedef struct edgelm_index edgelm_index;

/* Opens the index at path (made by `edgelm index` or edgelm_index_create). An index with vectors
 * needs its embedding model: embed_model (borrowed: free the index first) when given, which must
 * be the one the index was built with (same width and weights), otherwise the model whose path
 * the index records is loaded (and freed with the index). A BM25-only index takes no model
 * (embed_model must be NULL). writable non-zero: edgelm_index_add / edgelm_index_remove may
 * change it until edgelm_index_commit. Errors, the message (naming the file and the problem) in
 * errbuf [errcap]: ELM_ERR_ARG (NULL path or out, a model that is not the index's, or one for a
 * BM25-only index), ELM_ERR_IO (missing, unreadable or locked file), ELM_ERR_FORMAT (not an
 * SQLite file, corrupt, not an edgelm index), ELM_ERR_UNSUPPORTED (another schema version), and
 * edgelm_model_load's for the recorded model. *out is NULL on failure. */
int edgelm_index_open(const char *path, edgelm_model *embed_model, int writable,
                      edgelm_index **out, char *errbuf, size_t errcap);

/* Creates a new, writable index for path: written under a temporary name beside it until
 * edgelm_index_commit renames it over path (an existing file there must be an edgelm index).
 * embed_model (borrowed): the embedding model whose vectors the index stores, chunks counted in
 * its tokens; NULL: BM25 only, chunks counted in words. chunk_tokens: most tokens (words) per
 * chunk, 8 or more, 0: 256; overlap: tokens a chunk repeats from the one before it,
 * 0 .. chunk_tokens / 2, below 0: 32. Errors as edgelm_index_open, and ELM_ERR_ARG for chunk
 * sizes out of range, ELM_ERR_FORMAT when path holds something other than an index. */
int edgelm_index_create(const char *path, edgelm_model *embed_model, int32_t chunk_tokens,
                        int32_t overlap, edgelm_index **out, char *errbuf, size_t errcap);

/* Indexes the files at paths [n] (UTF-8 text or Markdown; folders walked, entries starting with
 * '.' left out) into a writable index: new or changed files get their chunks (and vectors), files
 * with the same bytes as before are left, files that are not UTF-8 text are skipped. Nothing is
 * saved before edgelm_index_commit. Errors (message in errbuf [errcap] and
 * edgelm_index_last_error): ELM_ERR_ARG (NULL arguments, an index not open writable, a chunk over
 * the embedding context), ELM_ERR_IO naming a file that cannot be read. */
int edgelm_index_add(edgelm_index *ix, const char *const *paths, int32_t n, char *errbuf,
                     size_t errcap);

/* Removes the file at path, or every file under the folder path, from a writable index (the
 * files need not exist any more). ELM_ERR_ARG naming path when nothing indexed matches. Errors
 * as edgelm_index_add. */
int edgelm_index_remove(edgelm_index *ix, const char *path, char *errbuf, size_t errcap);

/* Saves the changes of a writable index (a new one is renamed over its path); the handle stays
 * open for reading (open it again to change it again). A read-only index: nothing to do.
 * ELM_ERR_IO when it cannot be saved (the file on disk stays as it was). Closing without a commit
 * drops the changes. */
int edgelm_index_commit(edgelm_index *ix, char *errbuf, size_t errcap);

/* Closes ix (uncommitted changes dropped) and frees the embedding model it loaded. */
void edgelm_index_free(edgelm_index *ix);

/* The k (>= 1) chunks of ix that best answer question (UTF-8), as `edgelm search --json` prints
 * them: one JSON object in a malloc'd string (free with edgelm_free)
 *     {"question", "mode", "k", "results": [{"rank" (from 1), "chunk_id", "file" (absolute path),
 *      "line_start", "line_end" (1-based, inclusive), "heading" ("Title > Section" or ""),
 *      "text", "scores": {"fused", "bm25", "bm25_rank", "cosine", "cosine_rank"}}, ...]}
 * best first, at most k, a score null where the chunk is not in that list. mode: "hybrid" (BM25
 * and vectors fused), "bm25" or "vector"; NULL: hybrid for an index with vectors, else bm25.
 * NULL on failure, the message in edgelm_index_last_error: ELM_ERR_ARG cases (NULL arguments, k
 * < 1, an unknown mode, a vector mode on a BM25-only index, a question with no tokens or over the
 * embedding context), an unreadable index, out of memory. */
char *edgelm_retrieve(edgelm_index *ix, const char *question, int32_t k, const char *mode);

/* Message of the last failed call on ix ("" after a success). */
const char *edgelm_index_last_error(const edgelm_index *ix);

/* One question answered from ix on context c: the k best chunks (the index's default mode, as
 * edgelm_retrieve with NULL) go, as many as fit the context beside n_predict tokens for the
 * reply, into the system message as numbered sources ("rag" preset, docs/rag.md) after which
 * c's own system_prompt follows; the conversation restarts with it (the earlier turns are
 * forgotten), and the reply is streamed to fn (may be NULL) as edgelm_chat does. edgelm_chat
 * after it asks follow-up questions on the same sources; edgelm_reset returns to c's own system
 * prompt. The sampling is c's (`chat --docs` answers greedily, temp 0). Returns the status; the
 * message is in edgelm_last_error(c): ELM_ERR_ARG (NULL arguments, k < 1, n_predict <= 0, a
 * prompt that does not fit the context even without a source), and edgelm_retrieve's errors. */
int edgelm_chat_docs(edgelm_ctx *c, edgelm_index *ix, const char *question, int32_t k,
                     int32_t n_predict, edgelm_token_fn fn, void *user);

/* The sources of the last edgelm_chat_docs answer on c, those its prompt held and the reply cites
 * as [1], [2], ..: a JSON array of {"index" (the citation's number, from 1), "chunk_id", "file",
 * "line_start", "line_end", "heading", "text", "scores"} as in edgelm_retrieve. "[]" before any,
 * after a failed call and after edgelm_reset. Valid until the next call on c. */
const char *edgelm_last_citations(const edgelm_ctx *c);

/* Short text for a status code ("format error", ...). */
const char *edgelm_status_string(int status);

#ifdef __cplusplus
}
#endif
#endif
