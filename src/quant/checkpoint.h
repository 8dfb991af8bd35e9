/* The per-block checkpoint of a GPTQ/AWQ run (`edgelm quantize --resume`): beside the output, a
 * file holding what the blocks done so far produced (each finished tensor's encoded bytes or, for
 * norms and biases, float values, and its error figures) and the calibration states at the next
 * block's input, so that an interrupted run goes on from the block it was in and writes the same
 * file an uninterrupted run writes.
 *
 * Layout (native byte order: a checkpoint belongs to the machine that wrote it):
 *   [0, 4096)              header: magic, version, the source's identity (size, mtime, a hash of
 *                          its tensor table), a hash of the options (method, each tensor's planned
 *                          type, damping, act-order, the calibration tokens), the stage (blocks
 *                          done), the end of the records, the slot and hash of the states, a hash
 *                          of the records, a hash of the header itself;
 *   two state slots        [Σ calibration tokens, dim] float32 each: a commit writes the slot the
 *                          header does not name, then the header, so a kill at any moment leaves
 *                          the last committed checkpoint whole;
 *   records                appended per block: tensor index, kind, size, error figures, data.
 * Records and states are hashed (FNV-1a), so a damaged file is refused rather than resumed. */
#ifndef EDGELM_QUANT_CHECKPOINT_H
#define EDGELM_QUANT_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include "edgelm/quant.h"

struct elm_qrun;
typedef struct elm_ckpt elm_ckpt;

/* Opens the checkpoint `path` of run r (whose source, params, plan and final stages are set):
 * with resume, an existing file is validated against r's source and options, its 1-D tensors'
 * values and the error figures of its finished tensors are loaded into r, its states into x
 * (n_x floats), and *stage receives the blocks it holds (0 when there is no file: the run starts
 * over). Without resume, or with no file, the next commit creates it afresh. Errors, naming path:
 * ELM_ERR_FORMAT "not a checkpoint", "corrupt" (a hash or size does not match), "made from another
 * source file", "made with other options"; ELM_ERR_IO; ELM_ERR_NOMEM. Close with elm_ckpt_close. */
elm_status elm_ckpt_open(const char *path, struct elm_qrun *r, bool resume, float *x, size_t n_x,
                         int32_t *stage, elm_ckpt **out, elm_error *err);

/* Appends the tensors that became final at `stage` (r->final_stage[i] == stage: their r->bytes,
 * or the float values of 1-D ones) and the states x, then rewrites the header with stage.
 * ELM_ERR_IO naming the file. */
elm_status elm_ckpt_commit(elm_ckpt *c, const struct elm_qrun *r, int32_t stage, const float *x,
                           elm_error *err);

/* Whether tensor i's bytes come from the checkpoint (a block finished before the resume), and
 * reading them (n bytes) into dst. ELM_ERR_IO naming the file. */
bool elm_ckpt_has(const elm_ckpt *c, int32_t i);
elm_status elm_ckpt_read(elm_ckpt *c, int32_t i, void *dst, size_t n, elm_error *err);

/* Closes c (NULL allowed); with remove, deletes its file (the run succeeded). */
void elm_ckpt_close(elm_ckpt *c, bool remove);

#endif
