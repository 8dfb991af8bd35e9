/* Mixtures of experts (model/ffn_moe.c) on the synth --tiny qwen3moe, lfm2moe, gpt-oss, qwen35moe
 * and granitehybrid --experts models (8 experts, 2 per token; lfm2moe's first layer dense, its
 * router a sigmoid with a selection bias; gpt-oss's router biased, the chosen weighed by a
 * softmax over their logits; the hybrids' shared expert, Qwen3.5-MoE's gated):
 * their sizes and stacked experts survive GGUF; a prompt fed at once, token by token and in
 * chunks gives the same logits; a decoded token runs its 2 experts alone; the server's decode
 * step of 4 sequences gives each one's logits and runs an expert once for all its slots; the prompts of the
 * interop test against llama.cpp (tests/cli_interop_arch.sh) route to every expert of every
 * expert layer; lfm2moe's bias picks the experts without weighing them, gpt-oss's router bias
 * picks them and its softmax over the chosen ignores a shift common to them; and bad files are
 * refused in one line naming the file: an expert count or top-k that does not match the tensors,
 * a router of the wrong shape, a file cut short in its last expert stack, lfm2moe's selection
 * bias missing, a gating function edgelm does not run, a shared expert of another size than the
 * file says, Qwen3.5-MoE's shared expert gate missing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "edgelm/context.h"
#include "edgelm/model.h"
#include "formats/gguf_write.h"
#include "shapes/synth_tiny.h"
#include "tmpfiles.h"

enum { CTX = 128, EXPERTS = 8, USED = 2, MAX_LAYERS = 4 };

static char *tmpdir;

/* The synth --tiny model of arch with its interop vocabulary (granitehybrid: --experts). */
static elm_model *tiny(const char *arch, const char *vocab) {
    char rel[96];
    snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", vocab);
    elm_synth_tiny o = {.arch = arch, .vocab_path = fixture(rel), .seed = 7,
                        .experts = !strcmp(arch, "granitehybrid")};
    elm_model *m = NULL;
    elm_error err;
    CHECK(elm_synth_tiny_model(&o, &m, NULL, &err) == ELM_OK, "%s: synth: %s", arch, err.msg);
    CHECK(!m || m->hp.n_layers <= MAX_LAYERS, "%s: %d layers", arch, m ? m->hp.n_layers : 0);
    return m;
}

/* Which experts of which layer a pass ran (the products' hook sees each expert's gate view). */
typedef struct {
    const elm_model *m;
    int runs[MAX_LAYERS][EXPERTS];
} expert_count;

static void count_expert(const elm_tensor *w, int layer, const float *x, int64_t n_tok,
                         void *user) {
    (void)x, (void)n_tok;
    expert_count *ec = user;
    if (layer < 0 || layer >= MAX_LAYERS || !strstr(w->name, "ffn_gate_exps")) return;
    const elm_tensor *stack = ec->m->layers[layer].gate_exps;
    ec->runs[layer][((const char *)w->data - (const char *)stack->data) / w->nbytes]++;
}

/* Logits of n ids fed n_batch at a time, every expert run counted into ec when given. */
static float *logits(const elm_model *m, const int32_t *ids, int n, int n_batch,
                     expert_count *ec) {
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params p = {.n_ctx = CTX, .n_batch = n_batch, .n_threads = 2};
    float *out = malloc(sizeof(float) * (size_t)n * (size_t)m->hp.n_vocab);
    elm_status st = out ? elm_context_new(m, &p, &c, &err) : ELM_ERR_NOMEM;
    if (!st && ec) elm_context_set_hook(c, count_expert, ec);
    for (int off = 0; !st && off < n; off += n_batch)
        st = elm_forward(c, ids + off, n - off < n_batch ? n - off : n_batch,
                         out + (size_t)off * (size_t)m->hp.n_vocab, true, &err);
    CHECK(st == ELM_OK, "forward: %s", st ? err.msg : "");
    elm_context_free(c);
    if (st) free(out);
    return st ? NULL : out;
}

static float max_diff(const float *a, const float *b, size_t n) {
    float d = 0;
    for (size_t i = 0; a && b && i < n; i++) d = fmaxf(d, fabsf(a[i] - b[i]));
    return a && b ? d : INFINITY;
}

/* The tiny model's shapes, and the same tensors, hyper-parameters and logits from its GGUF. */
static void test_file(const elm_model *m) {
    const elm_hparams *hp = &m->hp;
    const char *arch = hp->arch;
    const bool lfm2 = !strcmp(arch, "lfm2moe"), oss = !strcmp(arch, "gpt-oss");
    const elm_layer *L = &m->layers[1], *L0 = &m->layers[0];
    CHECK(hp->n_expert == EXPERTS && hp->n_expert_used == USED && hp->expert_ffn_dim == 32 &&
              L->router && L->router->ne[1] == EXPERTS && L->gate_exps->ne[2] == EXPERTS &&
              L->down_exps->ne[0] == 32 && L->down_exps->ne[1] == hp->dim && !L->w_gate,
          "%s: sizes or slots", arch);
    /* lfm2moe: a dense first layer of the dense FFN size, a sigmoid router with its bias */
    CHECK(lfm2 ? hp->n_dense_lead == 1 && hp->moe_gating == ELM_MOE_SIGMOID && !L0->router &&
                     L0->w_gate && L0->w_gate->ne[1] == hp->ffn_dim && L->router_bias &&
                     L->router_bias->ne[0] == EXPERTS
               : hp->n_dense_lead == 0 && L0->router && !L->router_bias &&
                     hp->moe_gating == (oss ? ELM_MOE_SOFTMAX_WEIGHT : ELM_MOE_SOFTMAX) &&
                     (oss ? L->router_b && L->gate_exps_b && L->up_exps_b && L->down_exps_b &&
                                L->sinks && L->bo
                          : !L->router_b),
          "%s: dense layers %d, gating %d", arch, hp->n_dense_lead, hp->moe_gating);
    /* the hybrids' shared expert: Granite's twice an expert, Qwen3.5-MoE's an expert's, gated */
    const bool granite = !strcmp(arch, "granitehybrid"), q35 = !strcmp(arch, "qwen35moe");
    const int32_t sff = granite ? 64 : q35 ? 32 : 0;
    CHECK(hp->shexp_ffn_dim == sff &&
              (sff ? L->shexp_gate && L->shexp_up && L->shexp_down &&
                         L->shexp_down->ne[0] == sff && L->shexp_gate->ne[1] == sff
                   : !L->shexp_down) &&
              !L->shexp_gate_inp == !q35,
          "%s: shared expert of %d", arch, hp->shexp_ffn_dim);
    const char *path = tmp_path(tmpdir, "moe.gguf");
    elm_model *g = NULL;
    elm_error err;
    CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK &&
              elm_model_load(path, NULL, &g, &err) == ELM_OK,
          "%s: GGUF: %s", arch, err.msg);
    if (!g) return;
    bool same = g->n_tensors == m->n_tensors && g->hp.n_expert == EXPERTS &&
                g->hp.n_expert_used == USED && g->hp.expert_ffn_dim == 32 &&
                g->hp.n_dense_lead == hp->n_dense_lead && g->hp.moe_gating == hp->moe_gating;
    for (int32_t i = 0; same && i < m->n_tensors; i++) {
        const elm_tensor *t = &m->tensors[i], *u = elm_model_find(g, t->name);
        same = u && u->n_dims == t->n_dims && !memcmp(u->ne, t->ne, sizeof t->ne) &&
               !memcmp(u->data, t->data, t->nbytes);
    }
    CHECK(same && g->hp.shexp_ffn_dim == hp->shexp_ffn_dim, "%s: GGUF copy differs", arch);
    const int32_t ids[4] = {12522, 5193, 264, 882};
    float *a = logits(m, ids, 4, 4, NULL), *b = logits(g, ids, 4, 4, NULL);
    CHECK(a && b && !memcmp(a, b, 4 * sizeof *a * (size_t)hp->n_vocab), "%s: GGUF logits", arch);
    free(a), free(b);
    elm_model_free(g);
}

/* The interop test's prompts through the model, at once, a token at a time and in chunks of
 * 5: the same logits, and together they route to every expert of every expert layer. */
static void test_routing(const elm_model *m) {
    static const char *prompts[] = {
        "Once upon a time", "The capital of France is",
        "Once upon a time there was a little girl who lived in a village near the forest. "
        "Whenever she went out, the little girl wore a red riding cloak, so everyone in the "
        "village called her"};
    expert_count ec = {.m = m};
    const size_t V = (size_t)m->hp.n_vocab;
    for (int i = 0; i < 3; i++) {
        int32_t *ids = NULL;
        int64_t n = 0;
        elm_error err;
        if (elm_tokenize_alloc(&m->vocab, prompts[i], strlen(prompts[i]), false, false, &ids, &n,
                               &err)) {
            CHECK(false, "tokenize: %s", err.msg);
            continue;
        }
        float *all = logits(m, ids, (int)n, (int)n, &ec), *one = logits(m, ids, (int)n, 1, NULL),
              *five = logits(m, ids, (int)n, 5, NULL);
        const float d1 = max_diff(all, one, (size_t)n * V), d5 = max_diff(all, five, (size_t)n * V);
        /* gpt-oss's YaRN magnitude (q and k × 1.35: scores × 1.8) and the clamped SwiGLU's u + 1
         * carry the products' rounding further (its 40-token prompt: 1.2e-4 at logits of 13) */
        const bool scans =
            !strcmp(m->hp.arch, "qwen35moe") || !strcmp(m->hp.arch, "granitehybrid");
        /* the chunked scans of DeltaNet and Mamba-2 layers sum otherwise (test_hybrid's 1e-3) */
        const float tol = scans ? 1e-3f : m->hp.rope_yarn ? 2e-4f : 1e-4f;
        CHECK(d1 < tol && d5 < tol, "%s: prompt %d: at once vs a token at a time %g, by 5 %g",
              m->hp.arch, i, d1, d5);
        free(all), free(one), free(five), free(ids);
    }
    const int first = m->hp.n_dense_lead, n_layers = m->hp.n_layers;
    for (int l = 0; l < n_layers; l++)
        for (int e = 0; e < EXPERTS; e++)
            CHECK(l < first ? ec.runs[l][e] == 0 : ec.runs[l][e] > 0,
                  "%s: layer %d: expert %d chosen %d times by the prompts", m->hp.arch, l, e,
                  ec.runs[l][e]);
    /* one token: its 2 experts per layer, each once */
    expert_count one = {.m = m};
    const int32_t id = 882;
    free(logits(m, &id, 1, 1, &one));
    for (int l = first; l < n_layers; l++) {
        int ran = 0, most = 0;
        for (int e = 0; e < EXPERTS; e++) {
            ran += one.runs[l][e] > 0;
            most = one.runs[l][e] > most ? one.runs[l][e] : most;
        }
        CHECK(ran == USED && most == 1, "%s: layer %d: a decoded token ran %d experts",
              m->hp.arch, l, ran);
    }
}

/* The server's decode step (server/scheduler.c): one elm_forward_seqs pass over the next token
 * of 4 sequences, each in its own quarter of the cache (a hybrid's own recurrent state, a
 * windowed model's every position): each sequence's logits are those it gives alone, and in each
 * pass an expert runs once for all the slots routed to it (its matrices read once a step), so
 * the passes run fewer experts than their slots (4 tokens x 2 each a layer). */
static void test_served_step(const elm_model *m) {
    enum { SEQS = 4, STEPS = 6 };
    static const int32_t ids[SEQS][STEPS] = {{12522, 5193, 264, 882, 311, 1917},
                                             {791, 6864, 315, 9822, 374, 12366},
                                             {9906, 1070, 13, 358, 1097, 264},
                                             {3923, 574, 1139, 279, 2035, 30}};
    const size_t V = (size_t)m->hp.n_vocab;
    const char *arch = m->hp.arch;
    float *alone[SEQS], *lg = malloc(sizeof(float) * SEQS * V);
    for (int s = 0; s < SEQS; s++) alone[s] = logits(m, ids[s], STEPS, 1, NULL);
    elm_context *c = NULL;
    elm_error err;
    const elm_context_params p = {.n_ctx = CTX, .n_batch = SEQS, .n_threads = 2,
                                  .n_seq = SEQS, .swa_full = true};
    elm_status st = lg ? elm_context_new(m, &p, &c, &err) : ELM_ERR_NOMEM;
    CHECK(st == ELM_OK, "%s: context of %d sequences: %s", arch, SEQS, st ? err.msg : "");
    expert_count ec = {.m = m};
    if (!st) elm_context_set_hook(c, count_expert, &ec);
    float worst = 0;
    int runs = 0, slots = 0, most = 0;
    for (int t = 0; !st && t < STEPS; t++) {
        int32_t tok[SEQS], pos[SEQS], row0[SEQS], out[SEQS];
        for (int s = 0; s < SEQS; s++)
            tok[s] = ids[s][t], pos[s] = t, row0[s] = s * (CTX / SEQS), out[s] = s;
        memset(ec.runs, 0, sizeof ec.runs);
        st = elm_forward_seqs(c, tok, pos, row0, SEQS, out, SEQS, lg, &err);
        CHECK(st == ELM_OK, "%s: step %d: %s", arch, t, st ? err.msg : "");
        for (int s = 0; !st && s < SEQS; s++)
            worst = fmaxf(worst, max_diff(lg + s * V, alone[s] + (size_t)t * V, V));
        for (int l = m->hp.n_dense_lead; l < m->hp.n_layers; l++, slots += SEQS * USED)
            for (int e = 0; e < EXPERTS; e++) {
                runs += ec.runs[l][e];
                most = ec.runs[l][e] > most ? ec.runs[l][e] : most;
            }
    }
    /* test_routing's tolerances: the hybrids' chunked scans, gpt-oss's YaRN */
    const bool scans = !strcmp(arch, "qwen35moe") || !strcmp(arch, "granitehybrid");
    const float tol = scans ? 1e-3f : m->hp.rope_yarn ? 2e-4f : 1e-4f;
    CHECK(!st && worst < tol, "%s: 4 sequences in one pass vs each alone: max |delta| %g", arch,
          worst);
    CHECK(!st && most == 1 && runs < slots, "%s: %d expert runs for %d slots (an expert at most "
          "%d times a pass)", arch, runs, slots, most);
    elm_context_free(c);
    for (int s = 0; s < SEQS; s++) free(alone[s]);
    free(lg);
}

/* lfm2moe's selection bias picks the experts and leaves their weights to the sigmoid, and
 * gpt-oss's router bias picks them and its softmax over the chosen two ignores a shift they share:
 * a bias of +10 on experts 6 and 7 of layer 1 routes a token there, and +20 gives the same
 * logits. */
static void test_bias(const elm_model *m) {
    const elm_layer *L = &m->layers[1];
    float *b = (L->router_bias ? L->router_bias : L->router_b)->data; /* synth's F32 buffer */
    float keep[EXPERTS];
    memcpy(keep, b, sizeof keep);
    const int32_t id = 882;
    float *at[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        b[6] = b[7] = 10.0f * (float)(k + 1);
        expert_count ec = {.m = m};
        at[k] = logits(m, &id, 1, 1, &ec); /* the context decodes the bias it is made with */
        CHECK(ec.runs[1][6] == 1 && ec.runs[1][7] == 1, "%s: bias %g: experts 6, 7 ran %d, %d",
              m->hp.arch, b[6], ec.runs[1][6], ec.runs[1][7]);
    }
    CHECK(at[0] && at[1] && max_diff(at[0], at[1], (size_t)m->hp.n_vocab) < 1e-4f,
          "%s: the bias shared by the chosen experts weighs them", m->hp.arch);
    free(at[0]), free(at[1]);
    memcpy(b, keep, sizeof keep);
}

/* m written with its hyper-parameters or router edited must load to an error naming the file
 * and holding `want`. */
static void expect_error(elm_model *m, const char *want) {
    const char *path = tmp_path(tmpdir, "bad.gguf");
    elm_model *bad = NULL;
    elm_error err;
    CHECK(elm_gguf_write_model(m, path, &err) == ELM_OK, "write: %s", err.msg);
    const elm_status st = elm_model_load(path, NULL, &bad, &err);
    CHECK(st && strstr(err.msg, path) && strstr(err.msg, want) && !strchr(err.msg, '\n'),
          "expected '%s': %d %s", want, st, st ? err.msg : "loaded");
    elm_model_free(bad);
    unlink(path);
}

/* lfm2moe's own refusals: its layer 1 without the selection bias, an unknown gating function. */
static void test_lfm2_refusals(elm_model *m) {
    elm_tensor *bias = elm_model_find(m, "blk.1.exp_probs_b.bias");
    memcpy(bias->name, "blk.1.exp_probs_x", 17); /* written under another name */
    expect_error(m, "missing tensor 'blk.1.exp_probs_b.bias'");
    memcpy(bias->name, "blk.1.exp_probs_b", 17);
    m->hp.moe_gating = 4; /* llama.cpp's sqrt(softplus), which no family here has */
    expect_error(m, "expert gating function 4");
    m->hp.moe_gating = ELM_MOE_SIGMOID;
}

/* The shared expert's refusals: a size the tensors do not have, Qwen3.5-MoE's gate missing. */
static void test_shared_refusals(elm_model *m) {
    m->hp.shexp_ffn_dim *= 2;
    expect_error(m, "ffn_gate_shexp.weight");
    m->hp.shexp_ffn_dim /= 2;
    elm_tensor *gate = elm_model_find(m, "blk.1.ffn_gate_inp_shexp.weight");
    if (!gate) return;
    gate->name[5] = 'X'; /* written under another name */
    expect_error(m, "missing tensor 'blk.1.ffn_gate_inp_shexp.weight'");
    gate->name[5] = 'f';
}

static void test_refusals(elm_model *m) {
    m->hp.n_expert = 4; /* the stacks hold 8 */
    expect_error(m, "ffn_gate_inp.weight");
    m->hp.n_expert = EXPERTS;
    m->hp.n_expert_used = 9;
    expect_error(m, "top 9");
    m->hp.n_expert_used = USED;
    /* Granite's experts are feed_forward_length wide (its converter's key) */
    int32_t *eff = strcmp(m->hp.arch, "granitehybrid") ? &m->hp.expert_ffn_dim : &m->hp.ffn_dim;
    *eff = 16;
    expect_error(m, "ffn_gate_exps.weight");
    *eff = 32;
    elm_tensor *router = elm_model_find(m, "blk.1.ffn_gate_inp.weight");
    router->ne[0] /= 2, router->ne[1] *= 2; /* the same bytes as [16, 32] */
    expect_error(m, "blk.1.ffn_gate_inp.weight");
    router->ne[0] *= 2, router->ne[1] /= 2;
    /* the whole file written here, not left over from test_file */
    const char *good = tmp_path(tmpdir, "good.gguf"), *cut = tmp_path(tmpdir, "cut.gguf");
    elm_error err;
    CHECK(elm_gguf_write_model(m, good, &err) == ELM_OK, "write: %s", err.msg);
    size_t n = 0;
    unsigned char *bytes = file_read(good, &n);
    elm_model *bad = NULL;
    const elm_status st = bytes && file_copy(good, cut, n - 1000, 0)
                              ? elm_model_load(cut, NULL, &bad, &err)
                              : ELM_ERR_IO;
    CHECK(bytes && st && strstr(err.msg, cut), "a file cut short: %d %s", st,
          st ? err.msg : "loaded");
    elm_model_free(bad);
    free(bytes);
    unlink(cut);
    unlink(good);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    tmpdir = tmp_dir_new();
    static const char *families[][2] = {{"qwen3moe", "qwen2"},       {"lfm2moe", "llama-bpe"},
                                        {"gpt-oss", "llama-bpe"},     {"qwen35moe", "qwen35"},
                                        {"granitehybrid", "llama-bpe"}};
    for (int f = 0; f < 5 && tmpdir; f++) {
        elm_model *m = tiny(families[f][0], families[f][1]);
        if (m) {
            test_file(m);
            test_routing(m);
            test_served_step(m);
            if (f == 1 || f == 2) test_bias(m);
            if (f == 1) test_lfm2_refusals(m);
            if (f >= 3) test_shared_refusals(m);
            test_refusals(m);
        }
        elm_model_free(m);
    }
    if (tmpdir) tmp_dir_remove(tmpdir);
    return check_done();
}
