/* The recurrent layers' state per sequence (context_state.h): cutting a batch into runs of one
 * sequence, and the checkpoints that stand in for rolling back. A recurrent state cannot forget
 * its last tokens the way a KV cache drops rows; it can only be put back to a copy taken earlier
 * and fed the tokens since. So the state a multi-token run starts from and the one it ends with
 * are kept (a speculative step verifies its draft in one such run; a prompt is fed in such runs),
 * ELM_STATE_CKPTS per sequence, replacing the lowest position. */
#include <string.h>

#include "model/arch.h"
#include "model/context_state.h"
#include "model/layer_kind.h"

static float *ckpt_of(const elm_context *c, int seq, int i) {
    return c->ckpt + ((size_t)seq * ELM_STATE_CKPTS + (size_t)i) * (size_t)c->state_floats;
}

static float *state_of(const elm_context *c, int seq) {
    return c->state + (size_t)seq * (size_t)c->state_floats;
}

/* Copies sequence seq's state as the checkpoint of position pos (one per position). */
static void checkpoint(elm_context *c, int seq, int32_t pos) {
    int32_t *cp = c->ckpt_pos + (size_t)seq * ELM_STATE_CKPTS;
    int slot = 0;
    for (int i = 0; i < ELM_STATE_CKPTS; i++) {
        if (cp[i] == pos) return; /* the state there does not change */
        if (cp[i] < cp[slot]) slot = i;
    }
    memcpy(ckpt_of(c, seq, slot), state_of(c, seq), sizeof(float) * (size_t)c->state_floats);
    cp[slot] = pos;
}

elm_status elm_seq_begin(elm_context *c, int32_t n, elm_error *err) {
    c->n_runs = 0;
    if (!c->state_floats) return ELM_OK;
    for (int32_t t = 0; t < n; t++) {
        const int seq = c->seq_rows ? c->row0[t] / c->seq_rows : 0;
        elm_seq_run *r = c->n_runs ? &c->runs[c->n_runs - 1] : NULL;
        if (r && r->seq == seq && c->pos[r->t0 + r->n - 1] + 1 == c->pos[t]) {
            r->n++;
            continue;
        }
        c->runs[c->n_runs++] = (elm_seq_run){t, 1, seq};
    }
    /* checked before any state changes, so that an error leaves every sequence as it was */
    for (int i = 0; i < c->n_runs; i++) {
        const elm_seq_run *r = &c->runs[i];
        int32_t at = c->seq_pos[r->seq];
        for (int j = 0; j < i; j++) /* an earlier run of the batch moves it on */
            if (c->runs[j].seq == r->seq) at = c->pos[c->runs[j].t0] + c->runs[j].n;
        if (c->pos[r->t0] != 0 && c->pos[r->t0] != at)
            return elm_errorf(err, ELM_ERR_ARG,
                              "sequence %d: its recurrent state stands at position %d, the batch "
                              "continues at %d", r->seq, at, c->pos[r->t0]);
    }
    for (int i = 0; i < c->n_runs; i++) {
        const elm_seq_run *r = &c->runs[i];
        if (c->pos[r->t0] == 0) {
            memset(state_of(c, r->seq), 0, sizeof(float) * (size_t)c->state_floats);
            for (int k = 0; k < ELM_STATE_CKPTS; k++)
                c->ckpt_pos[(size_t)r->seq * ELM_STATE_CKPTS + k] = -1;
        } else if (r->n > 1) {
            checkpoint(c, r->seq, c->pos[r->t0]);
        }
    }
    return ELM_OK;
}

void elm_seq_end(elm_context *c) {
    for (int i = 0; i < c->n_runs; i++) {
        const elm_seq_run *r = &c->runs[i];
        c->seq_pos[r->seq] = c->pos[r->t0] + r->n;
        if (r->n > 1) checkpoint(c, r->seq, c->seq_pos[r->seq]);
    }
}

int32_t elm_seq_restore(elm_context *c, int seq, int32_t n_max) {
    if (!c->state_floats) return n_max;
    int32_t *cp = c->ckpt_pos + (size_t)seq * ELM_STATE_CKPTS;
    int best = -1;
    for (int i = 0; i < ELM_STATE_CKPTS; i++) {
        if (cp[i] > n_max) cp[i] = -1;
        else if (cp[i] >= 0 && (best < 0 || cp[i] > cp[best])) best = i;
    }
    /* the state itself, when it has not gone past n_max and is the latest */
    if (c->seq_pos[seq] <= n_max && (best < 0 || c->seq_pos[seq] >= cp[best]))
        return c->seq_pos[seq];
    if (best < 0) {
        memset(state_of(c, seq), 0, sizeof(float) * (size_t)c->state_floats);
        c->seq_pos[seq] = 0;
        return 0;
    }
    memcpy(state_of(c, seq), ckpt_of(c, seq, best), sizeof(float) * (size_t)c->state_floats);
    c->seq_pos[seq] = cp[best];
    return cp[best];
}

int32_t elm_context_seq_rewind(elm_context *c, int32_t row0, int32_t n_past) {
    if (!c->state_floats) return n_past;
    const int seq = c->seq_rows ? row0 / c->seq_rows : 0;
    return seq < c->n_seq ? elm_seq_restore(c, seq, n_past) : 0;
}

size_t elm_state_bytes(const elm_hparams *hp) {
    const elm_arch *a = elm_arch_find(hp->arch);
    const elm_layer_ops *ops = a ? elm_layer_ops_of(a->recurrent) : NULL;
    int64_t floats = 0;
    for (int l = 0; ops && l < hp->n_layers; l++)
        if (elm_layer_recurrent(hp, l)) floats += ops->state_floats(hp, l);
    return sizeof(float) * (size_t)floats * (1 + ELM_STATE_CKPTS);
}
