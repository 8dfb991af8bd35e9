/* A whole evaluation (eval.h, elm_evaluate): the baseline's pass into a reference file (or a saved
 * one), each quantized model's pass against it, greedy continuations of the prompts, gathered into
 * the report the renderers take. `edgelm eval` and the Python package both run this, so their
 * figures are the same numbers. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "edgelm/eval.h"

struct elm_eval_run {
    const elm_eval_params *p;
    const elm_eval_callbacks *cb;
    char *text;
    size_t text_len;
    elm_ref *ref;
    elm_continuations ref_gen;
    elm_eval_entry base;
    elm_eval_entry *models; /* [p->n_models] */
    elm_eval_report report;
};

/* Size on disk: the file itself, or a Hugging Face folder's *.safetensors files. */
static uint64_t disk_bytes(const char *path, const elm_model *m) {
    struct stat st;
    if (stat(path, &st) != 0) return elm_model_bytes(m);
    if (!S_ISDIR(st.st_mode)) return (uint64_t)st.st_size;
    uint64_t sum = 0;
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        const size_t n = strlen(e->d_name);
        char full[4096];
        if (n > 12 && !strcmp(e->d_name + n - 12, ".safetensors") &&
            snprintf(full, sizeof full, "%s/%s", path, e->d_name) < (int)sizeof full &&
            stat(full, &st) == 0)
            sum += (uint64_t)st.st_size;
    }
    if (d) closedir(d);
    return sum ? sum : elm_model_bytes(m);
}

static double mib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

/* Same token pieces, in the same order. */
static bool same_pieces(const elm_vocab *a, const elm_vocab *b) {
    if (a->n_tokens != b->n_tokens) return false;
    for (int32_t i = 0; i < a->n_tokens; i++)
        if (a->piece_len[i] != b->piece_len[i] || memcmp(a->pieces[i], b->pieces[i], a->piece_len[i]))
            return false;
    return true;
}

static elm_status load(const elm_eval_params *p, const char *path, bool to_run, elm_model **m,
                       elm_error *err) {
    const elm_load_opts o = {.tokenizer_path = p->tokenizer, .in_memory = to_run && !p->mmap};
    return elm_model_load(path, &o, m, err);
}

/* The chunk callback of the model named in user. */
typedef struct chunk_user {
    const elm_eval_callbacks *cb;
    const char *name;
} chunk_user;

static void on_chunk(int32_t chunk, int32_t n_chunks, double ppl, void *user) {
    const chunk_user *u = user;
    if (u->cb && u->cb->chunk) u->cb->chunk(u->name, chunk, n_chunks, ppl, u->cb->user);
}

static void note(const elm_eval_run *r, const char *name) {
    if (!r->cb || !r->cb->note) return;
    char line[1200];
    snprintf(line, sizeof line, "%s: %d greedy continuations of up to %d tokens", name,
             r->p->n_prompts, r->p->n_predict);
    r->cb->note(line, r->cb->user);
}

/* The baseline's pass: its log-probs go to save_ref or to a temporary file that is unlinked as
 * soon as it is mapped. */
static elm_status run_baseline(elm_eval_run *r, const elm_model *base, const int32_t *ids,
                               int64_t n_ids, const elm_ppl_params *pp, elm_error *err) {
    const elm_eval_params *p = r->p;
    if (n_ids < 2 * (int64_t)pp->n_ctx) /* before creating any file */
        return elm_errorf(err, ELM_ERR_ARG, "%s: text has %lld tokens; need at least %d (2 x "
                          "context %d)", p->text, (long long)n_ids, 2 * pp->n_ctx, pp->n_ctx);
    char dir[1024] = "", path[1100];
    if (p->save_ref) {
        snprintf(path, sizeof path, "%s", p->save_ref);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/edgelm-eval-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
            return elm_errorf(err, ELM_ERR_IO, "%s: cannot create a temporary folder", dir);
        snprintf(path, sizeof path, "%s/reference.elmref", dir);
    }
    elm_ppl_result ppl;
    chunk_user u = {r->cb, elm_base_name(p->ref)};
    elm_status st = elm_eval_reference(base, ids, n_ids, pp, disk_bytes(p->ref, base), path,
                                       on_chunk, &u, &ppl, err);
    if (!st) st = elm_ref_open(path, &r->ref, err);
    if (dir[0]) {
        unlink(path);
        rmdir(dir);
    }
    return st;
}

/* err's message after "what: " (the lower call's message names no file). */
static elm_status prefixed(elm_error *err, elm_status st, const char *what) {
    return elm_errorf(err, st, "%s: %s", what, err->msg);
}

static elm_status tokenize_text(const elm_eval_run *r, const elm_model *m, int32_t **ids,
                                int64_t *n, elm_error *err) {
    const elm_status st = elm_ppl_tokenize(m, r->text, r->text_len, ids, n, err);
    return st ? prefixed(err, st, r->p->text) : ELM_OK;
}

static elm_status continuations(const elm_eval_run *r, const elm_model *m, const char *name,
                                const elm_ppl_params *pp, elm_continuations *out,
                                elm_error *err) {
    note(r, name);
    const elm_status st = elm_eval_continuations(m, r->p->prompts, r->p->n_prompts,
                                                 r->p->n_predict, pp, out, err);
    return st ? prefixed(err, st, m->path) : ELM_OK;
}

/* The reference (live or saved) and the baseline's own entry and continuations. */
static elm_status prepare_baseline(elm_eval_run *r, const elm_ppl_params *pp, elm_error *err) {
    const elm_eval_params *p = r->p;
    elm_model *base = NULL;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    elm_status st = p->ref ? load(p, p->ref, true, &base, err) : ELM_OK;
    if (!st && base) st = tokenize_text(r, base, &ids, &n_ids, err);
    if (!st && p->ref_logits) {
        st = elm_ref_open(p->ref_logits, &r->ref, err);
        /* without a baseline, each model's pass checks the file */
        if (!st && base) st = elm_ref_check(r->ref, base->hp.n_vocab, pp->n_ctx, ids, n_ids, err);
    } else if (!st) {
        st = run_baseline(r, base, ids, n_ids, pp, err);
    }
    if (!st) {
        const elm_ref_info *in = &r->ref->info;
        elm_eval_entry *e = &r->base;
        e->name = base ? elm_base_name(p->ref) : in->model_name;
        e->path = base ? p->ref : in->model_name;
        e->size_mib = mib(base ? disk_bytes(p->ref, base) : in->model_bytes);
        e->ppl = (elm_ppl_result){.ppl = in->ppl, .ppl_stderr = in->ppl_stderr,
                                  .mean_nll = in->mean_nll, .n_ctx = in->n_ctx,
                                  .chunks = in->n_chunks, .n_tokens = in->n_text_tokens,
                                  .scored_tokens = in->n_scored};
        e->kld = (elm_kld_stats){.n = in->n_scored, .top1_pct = 100, .top5_overlap_pct = 100};
    }
    if (!st && p->n_prompts > 0) {
        st = continuations(r, base, r->base.name, pp, &r->ref_gen, err);
        if (!st) st = elm_gen_quality_of(&r->ref_gen, &r->ref_gen, &r->base.gen, err);
        r->base.has_gen = !st;
    }
    free(ids);
    elm_model_free(base);
    return st;
}

static elm_status evaluate_model(elm_eval_run *r, int32_t k, const elm_ppl_params *pp,
                                 elm_error *err) {
    const char *path = r->p->models[k];
    elm_eval_entry *e = &r->models[k];
    e->name = elm_base_name(path);
    e->path = path;
    elm_model *m = NULL;
    elm_status st = load(r->p, path, true, &m, err);
    if (st) return st;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    st = tokenize_text(r, m, &ids, &n_ids, err);
    chunk_user u = {r->cb, e->name};
    if (!st) st = elm_eval_compare(m, r->ref, ids, n_ids, pp, on_chunk, &u, &e->ppl, &e->kld, err);
    e->size_mib = mib(disk_bytes(path, m));
    if (!st && r->p->n_prompts > 0) {
        elm_continuations gen;
        st = continuations(r, m, e->name, pp, &gen, err);
        if (!st) st = elm_gen_quality_of(&r->ref_gen, &gen, &e->gen, err);
        e->has_gen = !st;
        elm_continuations_free(&gen);
    }
    free(ids);
    elm_model_free(m);
    return st;
}

static elm_status check_params(const elm_eval_params *p, elm_error *err) {
    if (!p->text) return elm_errorf(err, ELM_ERR_ARG, "evaluate: no evaluation text");
    if (!p->ref && !p->ref_logits)
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: a baseline model or a reference file is "
                          "required");
    if (p->save_ref && (!p->ref || p->ref_logits))
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: saving the reference needs the baseline "
                          "model and no reference file");
    if (p->n_models < 0 || (p->n_models == 0 && !p->save_ref))
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: no model to evaluate");
    if (p->n_prompts > 0 && !p->ref)
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: prompts need the baseline model for its "
                          "continuations");
    if (p->n_prompts > 0 && p->n_predict <= 0)
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: tokens per continuation must be > 0 (got "
                          "%d)", p->n_predict);
    if (p->n_ctx < 4)
        return elm_errorf(err, ELM_ERR_ARG, "context size %d too small (need at least 4)", p->n_ctx);
    if (p->n_batch < 0 || p->n_threads < 0)
        return elm_errorf(err, ELM_ERR_ARG, "evaluate: negative batch size or threads");
    /* a missing file is reported before the baseline pass, not after it */
    for (int32_t k = 0; k < p->n_models; k++)
        if (access(p->models[k], R_OK) != 0)
            return elm_errorf(err, ELM_ERR_IO, "%s: %s", p->models[k], strerror(errno));
    return ELM_OK;
}

/* A broken model file, or one whose vocabulary is not the baseline's, is reported before the
 * baseline's minutes of work: mapping a GGUF file validates its header and tensor table without
 * reading the weights. */
static elm_status check_models(const elm_eval_params *p, elm_error *err) {
    elm_model *ref = NULL;
    elm_status st = p->ref ? load(p, p->ref, false, &ref, err) : ELM_OK;
    if (st) return st;
    int32_t ref_vocab = ref ? ref->hp.n_vocab : 0;
    if (!ref) {
        elm_ref *cache;
        if ((st = elm_ref_open(p->ref_logits, &cache, err))) return st;
        ref_vocab = cache->info.n_vocab;
        elm_ref_close(cache);
    }
    for (int32_t k = 0; k < p->n_models && !st; k++) {
        elm_model *m = NULL;
        st = load(p, p->models[k], false, &m, err);
        if (!st && (m->hp.n_vocab != ref_vocab || (ref && !same_pieces(&m->vocab, &ref->vocab))))
            st = elm_errorf(err, ELM_ERR_ARG, "%s: vocabulary (%d tokens) differs from the "
                            "reference %s's (%d tokens)", p->models[k], m->hp.n_vocab,
                            ref ? p->ref : p->ref_logits, ref_vocab);
        elm_model_free(m);
    }
    elm_model_free(ref);
    return st;
}

elm_status elm_evaluate(const elm_eval_params *p, const elm_eval_callbacks *cb,
                        elm_eval_run **out, elm_error *err) {
    *out = NULL;
    elm_status st = check_params(p, err);
    if (st) return st;
    elm_eval_run *r = calloc(1, sizeof *r);
    if (!r || !(r->models = calloc(p->n_models ? (size_t)p->n_models : 1, sizeof *r->models))) {
        free(r);
        return elm_errorf(err, ELM_ERR_NOMEM, "out of memory");
    }
    *out = r;
    r->p = p;
    r->cb = cb;
    if ((st = elm_read_file(p->text, (size_t)1 << 31, &r->text, &r->text_len, err))) return st;
    /* text never holds a NUL byte; a model or other binary file given by mistake does */
    const char *nul = memchr(r->text, 0, r->text_len);
    if (nul)
        return elm_errorf(err, ELM_ERR_FORMAT, "%s: a NUL byte at offset %zu: a binary file, not "
                          "text", p->text, (size_t)(nul - r->text));
    const elm_ppl_params pp = {.n_ctx = p->n_ctx, .n_batch = p->n_batch,
                               .n_threads = p->n_threads};
    elm_ppl_params pm = pp; /* the models under test: the baseline keeps the exact F32 cache */
    pm.type_k = p->type_k;
    pm.type_v = p->type_v;
    st = check_models(p, err);
    if (!st) st = prepare_baseline(r, &pp, err);
    for (int32_t k = 0; k < p->n_models && !st; k++) st = evaluate_model(r, k, &pm, err);
    if (st) return st;
    const elm_ref_info *in = &r->ref->info;
    r->report = (elm_eval_report){
        .text_path = p->text, .n_ctx = in->n_ctx, .chunks = in->n_chunks,
        .scored_tokens = in->n_scored, .n_prompts = p->n_prompts,
        .n_predict = p->n_prompts ? p->n_predict : 0, .type_k = p->type_k, .type_v = p->type_v,
        .baseline = r->base,
        .n_models = p->n_models, .models = r->models};
    return ELM_OK;
}

const elm_eval_report *elm_eval_run_report(const elm_eval_run *r) { return &r->report; }

void elm_eval_run_free(elm_eval_run *r) {
    if (!r) return;
    elm_continuations_free(&r->ref_gen);
    elm_ref_close(r->ref);
    free(r->models);
    free(r->text);
    free(r);
}
