/* Calibration sets for GPTQ and AWQ: text samples read from plain text or JSONL, a reproducible
 * mix of several sources by weight (`edgelm calib`), and the token sequences the quantizers run
 * through the model.
 *
 * Recipes follow common practice (docs/deployment.md, "Calibration sets"): 128-512 samples, Alpaca-style
 * instructions rendered with the Alpaca prompt template, short samples dropped, long ones truncated
 * to the sequence length, a fixed seed for reproducibility. */
#ifndef EDGELM_QUANT_CALIB_H
#define EDGELM_QUANT_CALIB_H

#include <stdint.h>
#include "edgelm/error.h"
#include "edgelm/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ text samples */

typedef enum elm_calib_split {
    ELM_CALIB_SPLIT_LINE = 0,      /* one sample per non-empty line */
    ELM_CALIB_SPLIT_PARAGRAPH = 1  /* one sample per run of lines between blank lines */
} elm_calib_split;

typedef struct elm_text_set {
    int32_t n;
    char **texts; /* [n] NUL-terminated UTF-8, owned */
} elm_text_set;

/* Reads the samples of one file. A file whose first non-blank byte is '{' is JSONL: each non-blank
 * line an object rendered as `tmpl` when given ("{field}" placeholders take the field's value;
 * strings as they are, other JSON values printed), else its "text" string, else its Alpaca fields
 * "instruction" (+ "input") + "output" in the Alpaca prompt template. Any other file is plain text
 * split by `split`; samples are trimmed of surrounding whitespace and empty ones skipped.
 * Errors: ELM_ERR_IO (missing, unreadable), ELM_ERR_FORMAT naming PATH:LINE (invalid JSON, a line
 * that is not an object, a missing field), ELM_ERR_NOMEM. An empty file gives n = 0. Free with
 * elm_text_set_free (also after an error). */
elm_status elm_text_set_read(const char *path, elm_calib_split split, const char *tmpl,
                             elm_text_set *out, elm_error *err);
void elm_text_set_free(elm_text_set *s);

/* ---------------------------------------------------- building a calibration file (calib) */

typedef struct elm_calib_source {
    const char *path;
    double weight; /* > 0: share of the samples relative to the other sources */
} elm_calib_source;

typedef struct elm_calib_build_params {
    int32_t n_samples;     /* samples wanted (> 0) */
    int32_t seq_len;       /* most tokens per sample, BOS included (>= 2); longer are truncated */
    int32_t min_tokens;    /* samples with fewer tokens (BOS included) are dropped */
    uint64_t seed;
    elm_calib_split split; /* plain-text sources */
    const char *tmpl;      /* JSONL sources, may be NULL */
} elm_calib_build_params;

typedef struct elm_calib_sample {
    char *text;       /* owned; truncated samples are the decoded first seq_len tokens */
    int32_t n_tokens; /* tokens of text with BOS, at most seq_len */
    int32_t source;   /* index into the sources */
} elm_calib_sample;

typedef struct elm_calib_built {
    int32_t n;
    elm_calib_sample *samples; /* [n], in the seeded mixed order */
    int32_t n_sources;
    int32_t *read;      /* [n_sources] samples read from each source */
    int32_t *eligible;  /* [n_sources] of those, samples with at least min_tokens tokens */
    int32_t *selected;  /* [n_sources] of those, samples taken */
} elm_calib_built;

/* Reads every source (elm_text_set_read), tokenizes each sample with BOS (vocab v), drops those
 * under min_tokens, truncates those over seq_len, and takes n_samples split across the sources in
 * proportion to their weights (largest remainder; a source with too few samples gives its share
 * to the others), each source's samples drawn by a seeded shuffle, the result shuffled again.
 * Same inputs and seed give the same samples in the same order. Fewer than n_samples are taken
 * when the sources run out. Errors: those of elm_text_set_read, ELM_ERR_ARG (no sources, a weight
 * <= 0, n_samples <= 0, seq_len < 2), ELM_ERR_FORMAT "no sample has at least N tokens" when
 * nothing is eligible. Free with elm_calib_built_free (also after an error). */
elm_status elm_calib_build(const elm_vocab *v, const elm_calib_source *sources, int32_t n_sources,
                           const elm_calib_build_params *p, elm_calib_built *out, elm_error *err);
void elm_calib_built_free(elm_calib_built *b);

/* Writes the samples as JSONL, one object per line: {"text": ..., "source": sources[i].path,
 * "n_tokens": ...}, atomically (no partial file on error). ELM_ERR_IO naming path. */
elm_status elm_calib_write_jsonl(const elm_calib_built *b, const elm_calib_source *sources,
                                 const char *path, elm_error *err);

/* ------------------------------------------------------------- token sequences (quantize) */

typedef struct elm_calib_set {
    int32_t n;
    int32_t **ids;     /* [n][n_ids[i]] token ids, BOS first when the vocab adds one */
    int32_t *n_ids;    /* [n], each in [1, seq_len] */
    int64_t n_tokens;  /* sum of n_ids */
} elm_calib_set;

/* Tokenizes texts [n] with BOS and truncates each to seq_len tokens; texts that give no token
 * besides BOS are skipped. ELM_ERR_ARG (seq_len < 2), ELM_ERR_NOMEM, the tokenizer's error. */
elm_status elm_calib_from_texts(const elm_vocab *v, const char *const *texts, int32_t n,
                                int32_t seq_len, elm_calib_set *out, elm_error *err);

/* The calibration sequences of a file `edgelm calib` wrote, or of any text or JSONL file
 * (elm_text_set_read, one sample per line), at most max_samples of them (0 = all) in file order.
 * Errors: those of elm_text_set_read; ELM_ERR_FORMAT "PATH: no calibration samples" when the file
 * has none (empty, blank). Free with elm_calib_free (also after an error). */
elm_status elm_calib_load(const elm_vocab *v, const char *path, int32_t seq_len,
                          int32_t max_samples, elm_calib_set *out, elm_error *err);
void elm_calib_free(elm_calib_set *s);

#ifdef __cplusplus
}
#endif
#endif
