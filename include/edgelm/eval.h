/* Accuracy validation of a quantized model against its full-precision baseline (`edgelm eval`):
 * KL divergence, top-1/top-5 agreement and Δp on the positions perplexity scores, generation
 * similarity of greedy continuations, and the report (terminal table, JSON, Markdown, SVG).
 *
 * Data flow: the baseline's pass writes its log-probabilities at every scored position to a
 * reference file (docs/eval-ref-cache.md), which is then memory-mapped and read by each quantized
 * model's pass. A live baseline and a cached one go through the same file, so they give the same
 * figures bit for bit. Definitions follow docs/formats.md ("KL divergence and friends", "Generation
 * similarity"); thresholds follow docs/deployment.md ("Validation before shipping"). */
#ifndef EDGELM_EVAL_H
#define EDGELM_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "edgelm/model.h"
#include "edgelm/perplexity.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Verdict thresholds (docs/deployment.md): PPL change below 5% is "excellent", similarity above 90%
 * "acceptable"; a continuation is "complete" when longer than 10 characters before EOS. */
#define ELM_EVAL_PPL_EXCELLENT_PCT 5.0
#define ELM_EVAL_SIM_ACCEPTABLE 0.90
#define ELM_EVAL_COMPLETE_CHARS 10

/* ------------------------------------------------------------------ per-position statistics */

/* log-softmax of logits [n] computed in double (max subtracted, sum of exp in double) and rounded
 * to float32: the precision the reference file stores, used for both sides of every comparison. */
void elm_log_softmax_f32(const float *logits, int32_t n, float *out);

/* Summary over scored positions. KLD = Σ_i P_i (log P_i - log Q_i) over the full vocabulary (no
 * term skipped, summed in double), P the reference, Q the quantized distribution; median and p99
 * interpolate linearly between order statistics (rank q*(n-1)); stderr = sqrt(var / (n-1)). */
typedef struct elm_kld_stats {
    int64_t n;                /* positions */
    double kld_mean, kld_stderr, kld_median, kld_p99, kld_max; /* nats */
    double top1_pct;          /* % of positions where argmax P == argmax Q (first index on ties) */
    double top5_overlap_pct;  /* mean |top5(P) ∩ top5(Q)| / 5, in % */
    double rms_dp_pct;        /* sqrt(mean(Δp²)) in %, Δp = Q(next) - P(next) */
} elm_kld_stats;

typedef struct elm_kld_acc elm_kld_acc;

/* Accumulator for up to `capacity` positions (> 0). NULL on allocation failure. */
elm_kld_acc *elm_kld_acc_new(int64_t capacity);
void elm_kld_acc_free(elm_kld_acc *a);

/* Adds one position from the log-probs ref_lp and q_lp [n_vocab] and the id of the true next
 * token (in [0, n_vocab)). Returns false (and adds nothing) when the accumulator is full. */
bool elm_kld_acc_add(elm_kld_acc *a, const float *ref_lp, const float *q_lp, int32_t n_vocab,
                     int32_t next);

/* Summarises the positions added so far (sorts the per-position KLD values in place). */
void elm_kld_acc_finish(elm_kld_acc *a, elm_kld_stats *out);

/* ------------------------------------------------------------- reference log-prob file */

#define ELM_REF_VERSION 1
#define ELM_REF_NAME_MAX 48

/* Header of a reference file (layout in docs/eval-ref-cache.md). */
typedef struct elm_ref_info {
    uint32_t version;
    int32_t n_vocab, n_ctx, n_chunks;
    int64_t n_scored;        /* n_chunks * (n_ctx - n_ctx/2 - 1) */
    int64_t n_text_tokens;   /* tokens of the whole text, BOS included */
    uint64_t model_bytes;    /* the baseline's size on disk */
    char model_name[ELM_REF_NAME_MAX]; /* the baseline's file name, NUL-terminated */
    double ppl, ppl_stderr, mean_nll;  /* the baseline's perplexity on these chunks */
} elm_ref_info;

/* An open (memory-mapped, validated) reference file. */
typedef struct elm_ref {
    char path[512];
    elm_ref_info info;
    const int32_t *tokens;   /* [n_chunks * n_ctx]: the text's ids, BOS first, before BOS replacement */
    const float *logprobs;   /* [n_scored, n_vocab]: chunk by chunk, positions n_ctx/2 .. n_ctx-2 */
    void *map;
    size_t map_size;
} elm_ref;

/* Maps and validates a reference file: magic, version, header fields in range, file size equal
 * to what the header implies, checksum. ELM_ERR_IO when unreadable, ELM_ERR_FORMAT naming the
 * file and the problem otherwise. Close with elm_ref_close. */
elm_status elm_ref_open(const char *path, elm_ref **out, elm_error *err);
void elm_ref_close(elm_ref *r);

/* Checks that the reference fits a run: the model's vocabulary size, the chunk size n_ctx and the
 * run's token ids [n_tokens] (same chunk count, same ids in every chunk). ELM_ERR_ARG with a
 * message naming the reference file and what differs. */
elm_status elm_ref_check(const elm_ref *r, int32_t n_vocab, int32_t n_ctx, const int32_t *tokens,
                         int64_t n_tokens, elm_error *err);

typedef struct elm_ref_writer elm_ref_writer;

/* Starts a reference file at `path` (written to a temporary name, renamed by finish). info gives
 * n_vocab, n_ctx, n_chunks, n_text_tokens, model_bytes and model_name (n_scored and version are
 * derived); tokens [n_chunks * n_ctx]. ELM_ERR_ARG for sizes out of range, ELM_ERR_IO. */
elm_status elm_ref_writer_open(const char *path, const elm_ref_info *info, const int32_t *tokens,
                               elm_ref_writer **out, elm_error *err);

/* Appends the log-probs [n_vocab] of the next scored position. An I/O error, or more rows than
 * n_scored, is remembered and reported by finish. */
void elm_ref_writer_add(elm_ref_writer *w, const float *logprobs);

/* Records the baseline's perplexity, writes the header and checksum, renames the file into place
 * and frees the writer. Fails (removing the partial file) after any earlier error or when fewer
 * than n_scored rows were added. */
elm_status elm_ref_writer_finish(elm_ref_writer *w, const elm_ppl_result *ppl, elm_error *err);

/* Removes the partial file and frees the writer. */
void elm_ref_writer_abort(elm_ref_writer *w);

/* ------------------------------------------------------------------------ model passes */

/* The baseline pass: evaluates the chunks of tokens [n_tokens] (elm_eval_chunks) and writes every
 * scored position's log-probs to a reference file at `path`; model_bytes is recorded in it.
 * Errors from elm_eval_chunks or the writer. */
elm_status elm_eval_reference(const elm_model *m, const int32_t *tokens, int64_t n_tokens,
                              const elm_ppl_params *p, uint64_t model_bytes, const char *path,
                              elm_chunk_fn on_chunk, void *user, elm_ppl_result *ppl,
                              elm_error *err);

/* A quantized model's pass over the same chunks: checks the reference against the model and the
 * tokens (elm_ref_check), then fills its perplexity and the statistics against the reference. */
elm_status elm_eval_compare(const elm_model *m, const elm_ref *ref, const int32_t *tokens,
                            int64_t n_tokens, const elm_ppl_params *p, elm_chunk_fn on_chunk,
                            void *user, elm_ppl_result *ppl, elm_kld_stats *kld, elm_error *err);

/* ------------------------------------------------------------------ generation similarity */

/* difflib's SequenceMatcher(None, a, b, autojunk).ratio() over the code points of the UTF-8
 * strings a [alen bytes] and b [blen bytes]: 2*M/T with M the characters matched by the
 * Ratcliff/Obershelp longest-block recursion, 1.0 when both are empty. With autojunk, when b has
 * n >= 200 code points, every code point occurring in b more than n/100 + 1 times never starts a
 * match (it may still extend one). Invalid UTF-8 bytes count as U+FFFD each. ELM_ERR_NOMEM. */
elm_status elm_similarity_ratio(const char *a, size_t alen, const char *b, size_t blen,
                                bool autojunk, double *ratio, elm_error *err);

/* Greedy continuations of a set of prompts. */
typedef struct elm_continuations {
    int32_t n;          /* prompts */
    char **texts;       /* [n] UTF-8 continuation (no prompt), NUL-terminated, owned */
    int32_t *n_tokens;  /* [n] generated tokens before EOS */
} elm_continuations;

/* For each prompt (tokenized with BOS when the model adds one), generates up to n_predict tokens
 * greedily, stopping at EOS, in a context of p's threads and KV cache types (p's n_ctx and
 * n_batch are not used: the context is sized for the longest prompt). ELM_ERR_ARG for an empty
 * prompt or n_predict <= 0. Free with elm_continuations_free (also after an error). */
elm_status elm_eval_continuations(const elm_model *m, const char *const *prompts, int32_t n_prompts,
                                  int32_t n_predict, const elm_ppl_params *p,
                                  elm_continuations *out, elm_error *err);
void elm_continuations_free(elm_continuations *c);

typedef struct elm_gen_quality {
    int32_t n_prompts;
    double similarity;       /* mean ratio(ref text, text), in [0, 1] */
    double exact_match_rate; /* share of texts identical to the reference's, in [0, 1] */
    double completion_rate;  /* share of texts longer than ELM_EVAL_COMPLETE_CHARS code points */
    double avg_chars;        /* mean length in code points */
    double avg_tokens;       /* mean generated tokens */
} elm_gen_quality;

/* Compares continuations q with the reference's (same prompts, same count). ELM_ERR_ARG when the
 * counts differ, ELM_ERR_NOMEM. */
elm_status elm_gen_quality_of(const elm_continuations *ref, const elm_continuations *q,
                              elm_gen_quality *out, elm_error *err);

/* ------------------------------------------------------------------------------- report */

typedef struct elm_eval_entry {
    const char *name;        /* label (file name) */
    const char *path;
    double size_mib;         /* size on disk, MiB */
    elm_ppl_result ppl;
    elm_kld_stats kld;       /* against the baseline (the baseline's own: 0 KLD, 100% agreement) */
    bool has_gen;
    elm_gen_quality gen;
} elm_eval_entry;

typedef struct elm_eval_report {
    const char *text_path;
    int32_t n_ctx, chunks;
    int64_t scored_tokens;
    int32_t n_prompts, n_predict; /* 0 when no prompts were given */
    elm_type type_k, type_v;      /* the models' KV cache (the baseline's is F32) */
    elm_eval_entry baseline;
    int32_t n_models;
    const elm_eval_entry *models; /* [n_models] */
} elm_eval_report;

typedef enum elm_plot_y { ELM_PLOT_KLD = 0, ELM_PLOT_PPL = 1 } elm_plot_y;

/* 100 * (ppl / baseline ppl - 1). */
double elm_eval_ppl_change_pct(const elm_eval_report *r, const elm_eval_entry *e);

/* "excellent" when change_pct < ELM_EVAL_PPL_EXCELLENT_PCT (a lower PPL counts), else "flagged". */
const char *elm_eval_ppl_verdict(double change_pct);

/* "acceptable" when similarity > ELM_EVAL_SIM_ACCEPTABLE, else "flagged". */
const char *elm_eval_sim_verdict(double similarity);

/* Renderers: each returns a malloc'd NUL-terminated document (caller frees), NULL when out of
 * memory. text: the terminal table (metric | baseline | each model | change) and verdict lines;
 * markdown: the same as a Markdown table; json: the object docs/eval.schema.json describes; svg: a
 * self-contained SVG plot of size (MiB) against mean KLD or PPL, one labelled point per file. */
char *elm_report_text(const elm_eval_report *r);
char *elm_report_markdown(const elm_eval_report *r);
char *elm_report_json(const elm_eval_report *r);
char *elm_report_svg(const elm_eval_report *r, elm_plot_y y);

/* ------------------------------------------------------------------------ a whole evaluation */

/* What elm_evaluate compares (the options of `edgelm eval`). Paths are UTF-8 file names. */
typedef struct elm_eval_params {
    const char *ref;            /* the full-precision baseline model, or NULL with ref_logits */
    const char *ref_logits;     /* a reference file save_ref wrote, instead of the baseline's pass
                                 * (ref still needed for prompts), or NULL */
    const char *save_ref;       /* keep the baseline's log-probs in this file (else a temporary
                                 * one), or NULL; needs ref, excludes ref_logits */
    const char *const *models;  /* [n_models] quantized models (none only with save_ref) */
    int32_t n_models;
    const char *text;           /* the evaluation text's file: UTF-8, at least 2 x n_ctx tokens */
    const char *const *prompts; /* [n_prompts] prompts whose greedy continuations are compared
                                 * (needs ref), or NULL */
    int32_t n_prompts;
    int32_t n_ctx;              /* tokens per chunk (>= 4) */
    int32_t n_batch;            /* tokens per forward pass (0: n_ctx) */
    int32_t n_predict;          /* most tokens per continuation (> 0 with prompts) */
    int32_t n_threads;          /* 0: all online cores */
    const char *tokenizer;      /* a llama2.c tokenizer.bin not beside the checkpoints, or NULL */
    bool mmap;                  /* map GGUF files instead of reading them into memory */
    elm_type type_k, type_v;    /* the KV cache of the models under test (0: F32, as the
                                 * baseline's always is): what a quantized cache costs */
} elm_eval_params;

typedef struct elm_eval_callbacks {
    /* after each chunk of a model's pass: its file name, chunk of n_chunks, the running PPL;
     * may be NULL */
    void (*chunk)(const char *name, int32_t chunk, int32_t n_chunks, double ppl, void *user);
    /* a line about the run ("q4.gguf: 8 greedy continuations of up to 64 tokens"); may be NULL */
    void (*note)(const char *line, void *user);
    void *user;
} elm_eval_callbacks;

typedef struct elm_eval_run elm_eval_run;

/* Runs an evaluation as `edgelm eval` does: checks every model file and vocabulary against the
 * baseline's first (mapped, weights unread), runs the baseline's pass into a reference file (or
 * opens ref_logits), each model's pass against it, and with prompts the greedy continuations of
 * the baseline and of each model. *out (free with elm_eval_run_free, also after an error) then
 * holds the report (elm_eval_run_report); p and its strings must outlive it. cb may be NULL.
 * Errors: ELM_ERR_ARG for parameters out of range or inconsistent (naming what), a text shorter
 * than 2 x n_ctx tokens or a vocabulary that differs from the baseline's; the loaders' (naming
 * the file), elm_ref_open's and elm_ref_check's, ELM_ERR_FORMAT for a text holding a NUL byte,
 * ELM_ERR_IO for a missing file, ELM_ERR_NOMEM. */
elm_status elm_evaluate(const elm_eval_params *p, const elm_eval_callbacks *cb,
                        elm_eval_run **out, elm_error *err);

/* The report of a run elm_evaluate finished (for the renderers above); valid while r is. */
const elm_eval_report *elm_eval_run_report(const elm_eval_run *r);
void elm_eval_run_free(elm_eval_run *r);

#ifdef __cplusplus
}
#endif
#endif
