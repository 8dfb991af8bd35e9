/* Local document retrieval: a folder of text and Markdown files cut into chunks, stored with
 * their embeddings and a full-text index in one SQLite file, searched by BM25, by cosine
 * similarity or by both fused (reciprocal-rank fusion). The library side of `edgelm index` and
 * `edgelm search` (src/rag/, docs/rag.md).
 *
 * The database (schema version ELM_INDEX_SCHEMA_VERSION):
 *   meta(key, value)        format "edgelm-docs", schema_version, the chunking parameters and,
 *                           for an index with vectors, the embedding model's name, path, width
 *                           and fingerprint (elm_model_fingerprint);
 *   files(id, path, size, hash)       one row per indexed file: its absolute path, bytes and
 *                                     FNV-1a 64 of its contents (hex), to skip unchanged files;
 *   chunks(id, file_id, seq, line_start, line_end, heading, text, n_tokens, vector)
 *                           vector: [dim] little-endian float32 at unit length, NULL in an index
 *                           without a model;
 *   chunks_fts              FTS5 over (text, heading), porter-stemmed, kept in step by triggers.
 *
 * Every writing call runs inside one transaction that elm_index_commit ends: a run that fails or
 * is interrupted leaves the database as it was (a new one is built under a temporary name and
 * renamed over the path at commit). Errors name the database or document file and the problem,
 * in one line; the library prints nothing.
 *
 * Answering (`chat --docs`, `serve --docs`): elm_retrieve's hits go into the system message of
 * the "rag" chat preset (elm_chat_preset) as numbered sources, as many of the best as fit the
 * context beside the conversation and the reply (elm_docs_prompt_build). */
#ifndef EDGELM_RAG_H
#define EDGELM_RAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/chat.h"
#include "edgelm/context.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ELM_INDEX_SCHEMA_VERSION 1

/* ---- chunking */

/* Counts the tokens of text [len] (not NUL-terminated); returns -1 when it cannot (no memory). */
typedef int64_t (*elm_token_count_fn)(void *user, const char *text, size_t len);

/* The words of text [len]: runs of bytes other than ASCII whitespace (user unused). The count an
 * index without a model chunks by. */
int64_t elm_count_words(void *user, const char *text, size_t len);

/* The tokens of text [len] in the vocabulary user (an elm_vocab *), without BOS. */
int64_t elm_count_vocab_tokens(void *user, const char *text, size_t len);

typedef struct elm_chunk_params {
    int32_t max_tokens;     /* most tokens per chunk, >= 8 */
    int32_t overlap_tokens; /* tokens a chunk repeats from the end of the one before it in the
                             * same section, 0 .. max_tokens / 2 */
    elm_token_count_fn count;
    void *user; /* count's */
} elm_chunk_params;

/* ELM_OK when chunks of max_tokens overlapping by overlap_tokens are in range (see
 * elm_chunk_params), else ELM_ERR_ARG naming both. */
elm_status elm_chunk_check(int32_t max_tokens, int32_t overlap_tokens, elm_error *err);

/* One chunk of a text: bytes [start, end) of it, lines line_start .. line_end (1-based,
 * inclusive), its token count (the sum of its pieces' counts) and the path of the Markdown
 * headings it sits under ("Title > Section", "" before any heading; malloc'd). */
typedef struct elm_chunk {
    int64_t start, end;
    int32_t line_start, line_end;
    int32_t n_tokens;
    char *heading;
} elm_chunk;

/* Cuts text [len] into chunks of at most p->max_tokens tokens. A Markdown heading (a line of 1 to
 * 6 '#' and a space, outside a ``` or ~~~ fence) starts a new chunk, and chunks hold whole
 * paragraphs (runs of lines between blank lines; a fenced block is one) while they fit; a
 * paragraph over the limit is cut at line ends, a line at spaces, a word at UTF-8 character
 * boundaries. Consecutive chunks of one section overlap by up to p->overlap_tokens of whole
 * pieces. Any bytes are accepted. *out is malloc'd, [*n] in text order, freed with
 * elm_chunks_free. Errors: ELM_ERR_ARG for parameters out of range, ELM_ERR_NOMEM (also when
 * p->count fails). */
elm_status elm_chunk_text(const char *text, size_t len, const elm_chunk_params *p,
                          elm_chunk **out, int32_t *n, elm_error *err);
void elm_chunks_free(elm_chunk *chunks, int32_t n);

/* ---- the index */

typedef struct elm_index elm_index;

/* The chunking of `edgelm index` and edgelm_index_create when none is given: chunks of at most
 * 256 tokens, each repeating up to 32 of the one before it. */
#define ELM_INDEX_CHUNK_TOKENS 256
#define ELM_INDEX_OVERLAP 32

/* Creates a new index for path, written under a temporary name in path's folder until
 * elm_index_commit renames it over path. An existing file at path must be an edgelm index (it is
 * replaced at commit). m: the embedding model (NULL: BM25 only); chunks are then counted in its
 * tokens, otherwise in words. Errors: ELM_ERR_ARG for chunk sizes out of range; ELM_ERR_FORMAT
 * when path holds something else; ELM_ERR_IO. */
elm_status elm_index_create(const char *path, const elm_model *m, int32_t max_tokens,
                            int32_t overlap_tokens, elm_index **out, elm_error *err);

/* Opens an existing index; writable: begins the transaction elm_index_commit ends. Errors
 * (naming path): ELM_ERR_IO (missing, unreadable, locked), ELM_ERR_FORMAT (not an SQLite file,
 * corrupt, not an edgelm index), ELM_ERR_UNSUPPORTED (another schema version). */
elm_status elm_index_open(const char *path, bool writable, elm_index **out, elm_error *err);

/* Ends the transaction of a writable index (and renames a new one over its path). The index
 * stays open read-only; nothing to do for one opened read-only. Errors (naming the path):
 * ELM_ERR_IO when SQLite cannot commit or the rename fails (the old database stays as it was). */
elm_status elm_index_commit(elm_index *ix, elm_error *err);

/* Closes ix; a transaction not committed is rolled back (a new index's file removed). */
void elm_index_close(elm_index *ix);

/* The embedding model an index was built with: its path as loaded, name and width, or NULL and
 * 0 for a BM25-only index. */
const char *elm_index_model_path(const elm_index *ix);

/* The embedding model ix records (*path; NULL for a BM25-only index), to load: ELM_ERR_IO naming
 * the index and the model when that file is gone, `advice` (what the caller can do instead, "pass
 * the same model with -m") ending the message. */
elm_status elm_index_recorded_model(const elm_index *ix, const char *advice, const char **path,
                                    elm_error *err);
const char *elm_index_model_name(const elm_index *ix);
int32_t elm_index_dim(const elm_index *ix);

/* The most tokens per chunk the index was made with (elm_index_create's max_tokens). */
int32_t elm_index_chunk_tokens(const elm_index *ix);

/* ELM_OK when m is the index's embedding model: same width (ELM_ERR_ARG naming both widths
 * otherwise), then the same weights (elm_model_fingerprint; ELM_ERR_ARG naming both models).
 * ELM_ERR_ARG for a BM25-only index. */
elm_status elm_index_check_model(const elm_index *ix, const elm_model *m, elm_error *err);

/* Counts of a database or of a run's changes. */
typedef struct elm_index_stats {
    int64_t files_indexed;   /* new or changed, chunked and stored */
    int64_t files_unchanged; /* the same bytes as indexed before: left as they are */
    int64_t files_skipped;   /* not UTF-8 text */
    int64_t files_removed;
    int64_t chunks_added, chunks_removed;
} elm_index_stats;

typedef enum elm_index_event {
    ELM_INDEX_FILE_INDEXED,   /* a file's chunks were stored; detail: NULL */
    ELM_INDEX_FILE_UNCHANGED, /* detail: NULL */
    ELM_INDEX_FILE_SKIPPED    /* detail: why ("not UTF-8 text", "holds NUL bytes (binary)",
                               * "over 64 MiB") */
} elm_index_event;

/* Called once per file, done counting from 1 to total. */
typedef void (*elm_index_progress_fn)(void *user, elm_index_event ev, const char *file,
                                      const char *detail, int64_t done, int64_t total);

/* Indexes the files at paths [n_paths] (folders walked, sorted, entries starting with '.' and
 * symbolic links to folders left out) into a writable ix: a file not indexed before, or whose
 * bytes changed, gets its chunks replaced; one with the same bytes is left; one that is not UTF-8
 * text (or holds a NUL byte) is skipped and reported through progress (may be NULL), its chunks
 * of an earlier run removed; an indexed file under a folder of paths that is no longer on disk
 * is removed (stats->files_removed). Files are stored under their absolute paths. c: a context of the index's embedding model (checked with
 * elm_index_check_model) when the index has one, whose n_ctx (and for a non-causal model n_batch)
 * holds a chunk's tokens with BOS and EOS; NULL for a BM25-only index. Adds to *stats. Errors:
 * ELM_ERR_IO naming a path that cannot be read, ELM_ERR_ARG for a chunk over the context (naming
 * its file and lines) or a missing or wrong context; nothing is committed. */
elm_status elm_index_add(elm_index *ix, elm_context *c, const char *const *paths, int32_t n_paths,
                         elm_index_progress_fn progress, void *user, elm_index_stats *stats,
                         elm_error *err);

/* Removes the chunks of the file at path, or of every file under the folder path, from a
 * writable ix (matched by absolute path; the files need not exist any more). ELM_ERR_ARG naming
 * path when nothing indexed matches. Adds to *stats. */
elm_status elm_index_remove(elm_index *ix, const char *path, elm_index_stats *stats,
                            elm_error *err);

/* Files and chunks in ix. ELM_ERR_FORMAT naming the path when SQLite cannot read them. */
elm_status elm_index_count(elm_index *ix, int64_t *files, int64_t *chunks, elm_error *err);

/* ---- retrieval */

typedef enum elm_search_mode {
    ELM_SEARCH_HYBRID = 0, /* BM25 and cosine lists fused by reciprocal rank */
    ELM_SEARCH_BM25 = 1,
    ELM_SEARCH_VECTOR = 2
} elm_search_mode;

/* The constant k of reciprocal-rank fusion: a chunk scores the sum over the lists it is in of
 * 1 / (ELM_RRF_K + its rank), ranks from 1 (Cormack, Clarke, Buettcher 2009). */
#define ELM_RRF_K 60

/* How far down each list hybrid search fuses (k, when k is larger). */
#define ELM_RRF_DEPTH 100

/* One retrieved chunk. Ranks count from 1, 0 where the chunk is not in that list; bm25 is
 * FTS5's bm25() negated (higher is better), cosine the similarity of the question's embedding
 * and the chunk's. Strings malloc'd. */
typedef struct elm_hit {
    int64_t chunk_id;
    char *file, *heading, *text;
    int32_t line_start, line_end;
    int32_t bm25_rank, cosine_rank;
    double bm25, cosine, fused;
} elm_hit;

/* The k chunks of ix that best answer question (UTF-8): BM25 ranks the chunks holding any of its
 * words (FTS5, porter-stemmed), cosine ranks every chunk by brute force against the question's
 * embedding (c: a context of the index's model, as elm_index_add's; NULL for BM25), hybrid fuses
 * the first ELM_RRF_DEPTH of each list (more when k is larger) by reciprocal rank. Hits are in
 * order of the mode's score (ties by chunk id); *out malloc'd [*n], *n <= k, freed with
 * elm_hits_free. Errors: ELM_ERR_ARG for k < 1, a vector mode without a context or on a BM25-only
 * index, a question with no tokens or over the context (naming both counts); ELM_ERR_FORMAT when
 * SQLite cannot read the index or a stored vector is not dim floats (naming the chunk);
 * elm_embed's; ELM_ERR_NOMEM. */
elm_status elm_retrieve(elm_index *ix, elm_context *c, const char *question, elm_search_mode mode,
                        int32_t k, elm_hit **out, int32_t *n, elm_error *err);
void elm_hits_free(elm_hit *hits, int32_t n);

/* "hybrid", "bm25", "vector"; and back (false for another name). */
const char *elm_search_mode_name(elm_search_mode mode);
bool elm_search_mode_from_name(const char *name, elm_search_mode *out);

/* Hits [n] as a JSON array (malloc'd text; NULL when out of memory): one object per hit in the
 * order given, {number_key: its 1-based place, "chunk_id", "file", "line_start", "line_end",
 * "heading", "text", "scores": {"fused", "bm25", "bm25_rank", "cosine", "cosine_rank"}}, a score
 * null where the hit is not in that list. number_key: "rank" for search results, "index" for the
 * citations of an answer (its [1], [2]). */
char *elm_hits_json(const elm_hit *hits, int32_t n, const char *number_key);

/* What `edgelm search --json` prints and edgelm_retrieve returns: one JSON object {"question",
 * "mode" (elm_search_mode_name), "k", "ms" (the retrieval's milliseconds), "results":
 * elm_hits_json of hits [n] with "rank"}, indented when pretty. malloc'd; NULL when out of
 * memory. */
char *elm_search_json(const char *question, elm_search_mode mode, int32_t k, double ms,
                      const elm_hit *hits, int32_t n, bool pretty);

/* ---- answering from retrieved chunks */

/* The sources of an answer: a line asking the model to cite them as [1], [2], then each hit as
 *     [i] FILE:LINE_START-LINE_END, HEADING      (FILE without its folders; no ", HEADING" when
 *     TEXT                                        the chunk is under no heading)
 * separated by blank lines, numbered from 1 in the order given; "(no document matched the
 * question)" after that line when n is 0. What elm_docs_prompt_build puts in the "rag" preset's
 * context. malloc'd; NULL when out of memory. */
char *elm_docs_context(const elm_hit *hits, int32_t n);

/* A conversation's prompt with the sources that fit in it. */
typedef struct elm_docs_prompt {
    char *system;     /* the system message: the "rag" preset over the kept sources, then the
                       * conversation's own system message after a blank line (malloc'd) */
    char *text;       /* the conversation rendered with it by the template, ending with the
                       * generation prompt (malloc'd): what a chat's first turn prefills */
    int32_t n_docs;   /* hits [0, n_docs) are in it, cited as [1] .. [n_docs] */
    int32_t n_tokens; /* text's tokens in the vocabulary, control tokens parsed, with BOS when the
                       * vocabulary adds one and the text does not open with it */
} elm_docs_prompt;

/* Builds the prompt of a conversation answered from hits [n_hits] (elm_retrieve's, best first):
 * msgs [n_msgs] (elm_chat_render_tools's messages; a first "system" message is kept after the
 * preset's instructions) rendered by template t with tools (NULL: none) and a system message of
 * the "rag" preset whose context is elm_docs_context of the first n_docs hits. n_docs is the most
 * hits whose prompt, counted in v's tokens, leaves n_reply tokens of n_ctx for the reply: hits
 * are dropped lowest-ranked first. *out is filled (free with elm_docs_prompt_free); on failure it
 * is zeroed. Errors: ELM_ERR_ARG when even the prompt without any hit does not fit (naming its
 * tokens, n_ctx and n_reply), n_reply < 0, and elm_chat_render_tools's; ELM_ERR_NOMEM. */
elm_status elm_docs_prompt_build(const elm_vocab *v, elm_chat_template t, const elm_chat_msg *msgs,
                                 int32_t n_msgs, const char *tools, const elm_hit *hits,
                                 int32_t n_hits, int32_t n_ctx, int32_t n_reply,
                                 elm_docs_prompt *out, elm_error *err);
void elm_docs_prompt_free(elm_docs_prompt *p);

/* What a chat answers a question from: the index, the embedding context for its questions (NULL
 * for BM25; elm_retrieve's c), the search mode, the chunks retrieved (k), the conversation's
 * template and own system message (NULL: none; kept after the preset's instructions) and the
 * tokens of the chat's context kept for the reply. */
typedef struct elm_docs_turn_params {
    elm_index *ix;
    elm_context *embed;
    elm_search_mode mode;
    int32_t k;
    elm_chat_template tmpl;
    const char *system;
    int32_t n_reply;
} elm_docs_turn_params;

/* A question made ready to answer: the hits retrieved (best first, [n_hits]) and the prompt that
 * holds the first prompt.n_docs of them, cited as [1] .. [n_docs]. */
typedef struct elm_docs_turn {
    elm_hit *hits;
    int32_t n_hits;
    elm_docs_prompt prompt;
} elm_docs_turn;

/* Readies ch, a chat on context c (whose n_ctx bounds the prompt), to answer question from p->ix:
 * retrieves p->k chunks (elm_retrieve), builds the prompt of the system message and the question
 * with as many as fit beside p->n_reply tokens (elm_docs_prompt_build) and restarts the
 * conversation with its system message (elm_chat_set_system). The caller then runs
 * elm_chat_turn(ch, question, ...) and cites out->hits [0, out->prompt.n_docs). What
 * `chat --docs` and the app API's edgelm_chat_docs do per question. *out is filled (free with
 * elm_docs_turn_free), zeroed on failure. Errors: elm_retrieve's, elm_docs_prompt_build's,
 * ELM_ERR_NOMEM; the conversation is left as it was when retrieval or the prompt fails. */
elm_status elm_docs_turn_prepare(elm_chat *ch, const elm_context *c, const elm_docs_turn_params *p,
                                 const char *question, elm_docs_turn *out, elm_error *err);
void elm_docs_turn_free(elm_docs_turn *t);

/* The n_ctx (and n_batch) of a context of ix's embedding model m that holds one of its chunks
 * with BOS, EOS and the merges the chunker's per-piece counts miss (1.5 x the chunk size + 8),
 * capped at m's trained context: what elm_index_add and questions of similar size need. */
int32_t elm_index_embed_n_ctx(const elm_index *ix, const elm_model *m);

#ifdef __cplusplus
}
#endif
#endif
