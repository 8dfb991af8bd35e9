/* edgelm chat: a multi-turn conversation on the terminal or from piped stdin (one message per
 * line), kept in the KV cache between turns; replies stream to stdout, notices go to stderr. With
 * --docs each message is a question answered from a document index instead (chat_docs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_docs.h"
#include "cli.h"
#include "edgelm/chat.h"
#include "gen_opts.h"
#include "opts.h"

typedef struct chat_opts {
    const char *model, *system, *tmpl_name, *think, *preset, *from, *to, *context_file, *tokenizer;
    const char *docs, *effort;
    long docs_k;
    bool verbose_prompt;
    gen_opts gen;
} chat_opts;

/* The command's interface, bound to o (static: /help prints it during the chat). */
static const cli_spec *chat_spec(chat_opts *o) {
    static cli_opt opts[14];
    static const cli_opt *tables[3];
    static cli_spec spec;
    const cli_opt t[] = {
        CLI_OPT_MODEL(&o->model),
        CLI_OPT_TOKENIZER(&o->tokenizer),
        {"--system", "TEXT", CLI_TEXT, &o->system, 0, 0, "system prompt", 0},
        {"--template", "NAME", CLI_TEXT, &o->tmpl_name, 0, 0, "auto (default: from the model), llama2, llama3, chatml, phi3,\nphi4-mini, gemma, gemma4, gemma4-think, qwen3, qwen3-no-think,\nqwen35, qwen35-no-think, smollm3, smollm3-no-think, lfm2, lfm25,\ngranite4, llama31, llama32, ministral3, mistral-small32,\nmistral-nemo, gpt-oss or plain", 0},
        {"--think", "on|off", CLI_TEXT, &o->think, 0, 0, "thinking models (Qwen3, Qwen3.5, SmolLM3, Gemma 4): reason\nfirst (on; the default but for Gemma 4) or answer at once (off)", 0},
        {"--reasoning-effort", "low|medium|high", CLI_TEXT, &o->effort, 0, 0, "gpt-oss: how much it reasons (default medium)", 0},
        {"--preset", "NAME", CLI_TEXT, &o->preset, 0, 0, "translate (with --from L --to L), code, or rag (with\n--context FILE: answers only from that text)", 0},
        {"--from", "LANG", CLI_TEXT, &o->from, 0, 0, "translate: source language", 0},
        {"--to", "LANG", CLI_TEXT, &o->to, 0, 0, "translate: target language", 0},
        {"--context", "FILE", CLI_TEXT, &o->context_file, 0, 0, "rag: the text answers come from", 0},
        {"--docs", "DB", CLI_TEXT, &o->docs, 0, 0, "answer each message from this document index (edgelm index):\nits best chunks in the rag preset's prompt, sources listed\nafter the reply (each message is a new question)", 0},
        {"--docs-k", "N", CLI_INT, &o->docs_k, 1, 100, "chunks retrieved per question (default 5; those that do not\nfit the context with -n for the reply are left out)", 0},
        {"--verbose-prompt", NULL, CLI_FLAG, &o->verbose_prompt, 0, 0, "print each turn's prompt text to stderr before its reply", 0},
        {0}};
    memcpy(opts, t, sizeof t);
    tables[0] = opts;
    tables[1] = gen_opts_table(&o->gen);
    spec = (cli_spec){"chat", "-m MODEL [options]   (then one message per line; /help for commands)",
                      NULL, tables,
                      "-n is the most tokens per reply here (default 256).\n"
                      "commands: /reset  /stats  /save FILE  /load FILE  /help  /quit",
                      NULL, NULL};
    return &spec;
}

static int on_piece(const char *text, size_t len, int32_t id, void *user) {
    (void)id;
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

typedef struct chat_cli {
    elm_chat *chat;
    gen_stack *stack;
    elm_gen_stats last;
    elm_chat_template tmpl;
    bool speculative;
    const cli_spec *spec;   /* for /help */
    const char *model;      /* the path, for messages */
    const char *system;     /* the system prompt (--verbose-prompt renders turns with it) */
    elm_chat_opts opts;     /* --reasoning-effort */
    bool verbose;           /* --verbose-prompt */
    const chat_docs *docs;  /* --docs, or NULL */
} chat_cli;

static void print_stats(const chat_cli *s) {
    const elm_gen_stats *g = &s->last;
    const elm_context *c = s->stack->ctx;
    char kv[96];
    gen_kv_summary(c, kv, sizeof kv);
    printf("prompt %d tokens, %.1f ms | first token %.1f ms | generated %d tokens, %.1f tok/s | "
           "template %s | context %d/%d | %s | peak RSS %.1f MiB\n",
           g->prompt_tokens, g->prefill_ms, g->ttft_ms, g->generated_tokens, g->decode_tps,
           elm_chat_template_name(s->tmpl), elm_context_n_past(c), elm_context_n_ctx(c), kv,
           cli_peak_rss_mib());
    if (s->speculative) {
        char sp[192];
        gen_spec_summary(elm_chat_spec_stats(s->chat), sp, sizeof sp);
        printf("speculative: %s\n", sp);
    }
    fflush(stdout);
}

/* Runs one command line ("/save x"); false when it failed (message printed). */
static bool command(chat_cli *s, const char *line, bool *quit) {
    elm_error err;
    elm_error_clear(&err);
    const char *arg = strchr(line, ' ');
    const size_t name_len = arg ? (size_t)(arg - line) : strlen(line);
    while (arg && *arg == ' ') arg++;
#define CMD(x) (name_len == strlen(x) && !strncmp(line, x, name_len))
    if (CMD("/quit") || CMD("/exit")) {
        *quit = true;
    } else if (CMD("/help")) {
        cli_help(s->spec, stdout);
    } else if (CMD("/reset")) {
        elm_chat_reset(s->chat);
        fputs("edgelm: conversation cleared\n", stderr);
    } else if (CMD("/stats")) {
        print_stats(s);
    } else if (CMD("/save") || CMD("/load")) {
        if (!arg || !*arg) {
            cli_fail("%.*s needs a FILE", (int)name_len, line);
            return false;
        }
        const bool save = CMD("/save");
        if ((save ? elm_chat_save : elm_chat_load)(s->chat, arg, &err)) {
            cli_fail("%s", err.msg);
            return false;
        }
        fprintf(stderr, "edgelm: %s %s (%d tokens)\n", save ? "saved" : "loaded", arg,
                elm_context_n_past(s->stack->ctx));
    } else {
        cli_fail("unknown command '%.*s' (try /help)", (int)name_len, line);
        return false;
    }
#undef CMD
    return true;
}

/* The system prompt from --system or a preset (malloc'd into *owned when made here), and the
 * preset's temperature unless --temp was given. With --docs only the rag preset's temperature:
 * each question's system prompt is made from its chunks (chat_docs.c). */
static bool system_prompt(const chat_opts *c, bool temp_set, gen_opts *o, const char **system,
                          char **owned) {
    const char *preset = c->docs ? "rag" : c->preset;
    if (!preset) return true;
    char *context = NULL;
    if (c->context_file) {
        size_t len;
        if (!(context = cli_read_text(c->context_file, &len))) return false;
    }
    elm_error err;
    float temp = 0;
    const elm_status st = elm_chat_preset(preset, c->from, c->to, c->docs ? "" : context, owned,
                                          &temp, &err);
    free(context);
    if (st) {
        cli_fail("chat: %s", err.msg);
        return false;
    }
    if (!temp_set) o->gp.sampling.temp = temp;
    if (c->docs) {
        free(*owned);
        *owned = NULL;
        return true;
    }
    if (*system) {
        /* --system adds to the preset's instructions */
        const size_t len = strlen(*owned) + strlen(*system) + 3;
        char *both = malloc(len);
        if (!both) {
            cli_fail("out of memory");
            return false;
        }
        snprintf(both, len, "%s\n\n%s", *owned, *system);
        free(*owned);
        *owned = both;
    }
    *system = *owned;
    return true;
}

/* One message: a turn of the conversation, or with --docs a question answered from the
 * documents; the reply ends with a newline. false when it failed (message printed). */
static bool turn(chat_cli *s, const char *line) {
    if (s->docs) return chat_docs_turn(s->docs, s->chat, s->stack->ctx, line, on_piece, &s->last);
    elm_error err;
    elm_error_clear(&err);
    if (s->verbose) {
        char *text = NULL;
        const bool first = elm_context_n_past(s->stack->ctx) == 0;
        if (!elm_chat_render_turn_with(s->tmpl, s->system, line, first, &s->opts, &text, &err))
            chat_print_prompt(text, NULL);
        free(text);
    }
    const bool ok = !elm_chat_turn(s->chat, line, on_piece, NULL, &s->last, &err);
    fputc('\n', stdout);
    if (!ok) cli_fail("%s: %s", s->model, err.msg);
    fflush(stdout);
    return ok;
}

/* Reads messages (and /commands) from stdin until EOF or /quit; returns the exit status: 1 when
 * a turn or command failed with stdin not a terminal (a script), else 0. */
static int repl(chat_cli *s) {
    const char *model = s->model;
    const bool tty = isatty(STDIN_FILENO);
    if (tty) {
        char kv[96];
        gen_kv_summary(s->stack->ctx, kv, sizeof kv);
        fprintf(stderr, "edgelm: chat with %s | template %s | context %d tokens | %s | /help for "
                        "commands\n",
                model, elm_chat_template_name(s->tmpl), elm_context_n_ctx(s->stack->ctx), kv);
    }
    char *line = NULL;
    size_t cap = 0;
    bool quit = false, failed = false;
    while (!quit && !(failed && !tty)) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        if (line[0] == '/') {
            failed |= !command(s, line, &quit);
            continue;
        }
        failed |= !turn(s, line);
    }
    free(line);
    return failed && !tty ? 1 : 0;
}

int cmd_chat(int argc, char **argv) {
    chat_opts o = {.tmpl_name = "auto"};
    gen_opts_init(&o.gen);
    o.gen.gp.n_predict = 256;
    const float temp_default = o.gen.gp.sampling.temp;
    o.gen.gp.sampling.temp = -1; /* unset: a preset may choose it */
    const cli_spec *spec = chat_spec(&o);
    CLI_PARSE_OR_RETURN(spec, argc, argv);
    const bool temp_set = o.gen.gp.sampling.temp >= 0;
    if (!temp_set) o.gen.gp.sampling.temp = temp_default;
    if (!o.model) return cli_fail("chat: -m MODEL is required (see edgelm chat --help)");
    elm_chat_template tmpl = ELM_TEMPLATE_PLAIN;
    if (strcmp(o.tmpl_name, "auto") != 0 && !elm_chat_template_parse(o.tmpl_name, &tmpl))
        return cli_fail("--template: invalid value '%s' (expected auto, %s)", o.tmpl_name,
                        elm_chat_template_names());
    elm_error effort_err;
    if (o.effort && elm_chat_effort_check(o.effort, &effort_err))
        return cli_fail("--reasoning-effort: invalid value '%s' (expected low, medium or high)",
                        o.effort);
    if (o.think && strcmp(o.think, "on") != 0 && strcmp(o.think, "off") != 0)
        return cli_fail("--think: invalid value '%s' (expected on or off)", o.think);
    if (o.docs && (o.preset || o.context_file))
        return cli_fail("chat: --docs answers with the rag preset over its chunks: leave out "
                        "--preset and --context");
    const char *system = o.system, *model = o.model;
    char *owned_system = NULL;
    if (!system_prompt(&o, temp_set, &o.gen, &system, &owned_system))
        return 1;
    o.gen.gp.sampling.seed = gen_opts_seed(&o.gen);

    int rc = 1;
    gen_stack stack = {0};
    elm_chat *chat = NULL;
    elm_model *m = NULL;
    chat_docs docs = {.k = (int32_t)(o.docs_k ? o.docs_k : 5), .system = o.system,
                      .n_reply = o.gen.gp.n_predict, .verbose = o.verbose_prompt};
    const cli_docs_opts dopts = {.db = o.docs, .threads = o.gen.n_threads};
    if (o.docs && !cli_docs_open(&docs.docs, &dopts)) goto done;
    m = cli_load_model_to_run(model, o.tokenizer, gen_opts_mmap(&o.gen));
    if (!m || !gen_stack_new(&stack, &o.gen, m, model)) goto done;
    if (!strcmp(o.tmpl_name, "auto") && !elm_chat_template_recognise(m->vocab.chat_template, &tmpl)) {
        cli_fail("%s: chat template not recognised (choose one with --template: %s)", model,
                 elm_chat_template_names());
        goto done;
    }
    if (o.think) {
        const bool on = !strcmp(o.think, "on");
        const elm_chat_template switched = elm_chat_template_thinking(tmpl, on);
        if (switched == tmpl && elm_chat_template_thinking(tmpl, !on) == tmpl) {
            cli_fail("--think: template %s has no thinking switch (qwen3, qwen35, smollm3 and "
                     "gemma4 have one)", elm_chat_template_name(tmpl));
            goto done;
        }
        tmpl = switched;
    }
    elm_error err;
    elm_error_clear(&err);
    o.gen.gp.n_keep = (int32_t)(o.gen.keep < 0 ? 0 : o.gen.keep); /* 0: the chat keeps its system turn */
    o.gen.gp.grammar = stack.grammar;
    /* gpt-oss's replies show their channels: the markers as their text */
    int32_t markers[ELM_TOOL_PRESERVED_MAX];
    if (elm_chat_template_channels(tmpl)) {
        o.gen.gp.n_preserved = elm_chat_tool_preserved_ids(tmpl, &m->vocab, markers);
        o.gen.gp.preserved = markers;
    }
    const elm_chat_opts ropts = {.reasoning_effort = o.effort, .now = 0};
    const elm_chat_params cp = {.tmpl = tmpl, .system = system, .gen = o.gen.gp,
                                .spec = stack.speculative ? &stack.spec : NULL, .opts = ropts};
    if (elm_chat_new(stack.ctx, &cp, &chat, &err)) {
        cli_fail("%s: %s", model, err.msg);
        goto done;
    }
    docs.tmpl = tmpl;
    chat_cli s = {.chat = chat, .stack = &stack, .tmpl = tmpl, .speculative = stack.speculative,
                  .spec = spec, .model = model, .system = system, .opts = ropts,
                  .verbose = o.verbose_prompt,
                  .docs = o.docs ? &docs : NULL};
    rc = repl(&s);
done:
    cli_docs_close(&docs.docs);
    elm_chat_free(chat);
    gen_stack_free(&stack);
    elm_model_free(m);
    free(owned_system);
    return rc;
}
