/* edgelm chat: a multi-turn conversation on the terminal or from piped stdin (one message per
 * line), kept in the KV cache between turns; replies stream to stdout, notices go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "edgelm/chat.h"
#include "gen_opts.h"

static void usage(FILE *f) {
    fputs("usage: edgelm chat -m MODEL [options]   (then one message per line; /help for commands)\n"
          "  -m, --model PATH       GGUF file, Hugging Face folder or llama2.c model.bin\n"
          "      --system TEXT      system prompt\n"
          "      --template NAME    auto (default: from the model), llama2, llama3, chatml, phi3,\n"
          "                         gemma, qwen3, qwen3-no-think, smollm3, smollm3-no-think or\n"
          "                         plain\n"
          "      --think on|off     thinking models (Qwen3, SmolLM3): reason in a <think> block\n"
          "                         first (on, their default) or answer at once (off)\n"
          "      --preset NAME      translate (with --from L --to L), code, or rag (with\n"
          "                         --context FILE: answers only from that text)\n"
          "      --tokenizer PATH   llama2.c tokenizer.bin when not beside model.bin\n",
          f);
    gen_opts_usage(f);
    fputs("  -n is the most tokens per reply here (default 256).\n"
          "commands: /reset  /stats  /save FILE  /load FILE  /help  /quit\n",
          f);
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
        usage(stdout);
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

/* The system prompt from --system or a preset (malloc'd into *owned when made here). */
static bool system_prompt(const char *preset, const char *from, const char *to,
                          const char *context_file, bool temp_set, gen_opts *o,
                          const char **system, char **owned) {
    if (!preset) return true;
    char *context = NULL;
    if (context_file) {
        size_t len;
        if (!(context = cli_read_text(context_file, &len))) return false;
    }
    elm_error err;
    float temp = 0;
    const elm_status st = elm_chat_preset(preset, from, to, context, owned, &temp, &err);
    free(context);
    if (st) {
        cli_fail("chat: %s", err.msg);
        return false;
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
    if (!temp_set) o->gp.sampling.temp = temp;
    return true;
}

int cmd_chat(int argc, char **argv) {
    const char *model = NULL, *system = NULL, *tmpl_name = "auto", *preset = NULL, *from = NULL;
    const char *to = NULL, *context_file = NULL, *tokenizer = NULL, *think = NULL;
    gen_opts o;
    gen_opts_init(&o);
    o.gp.n_predict = 256;
    bool temp_set = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) CLI_STR(model);
        else if (!strcmp(a, "--system")) CLI_STR(system);
        else if (!strcmp(a, "--template")) CLI_STR(tmpl_name);
        else if (!strcmp(a, "--think")) CLI_STR(think);
        else if (!strcmp(a, "--preset")) CLI_STR(preset);
        else if (!strcmp(a, "--from")) CLI_STR(from);
        else if (!strcmp(a, "--to")) CLI_STR(to);
        else if (!strcmp(a, "--context")) CLI_STR(context_file);
        else if (!strcmp(a, "--tokenizer")) CLI_STR(tokenizer);
        else if (gen_opts_parse(&o, argc, argv, &i)) {
            if (o.failed) return 1;
            temp_set |= !strcmp(a, "--temp");
        } else return cli_fail("chat: unknown option '%s' (see edgelm chat --help)", a);
    }
    if (!model) return cli_fail("chat: -m MODEL is required (see edgelm chat --help)");
    elm_chat_template tmpl = ELM_TEMPLATE_PLAIN;
    if (strcmp(tmpl_name, "auto") != 0 && !elm_chat_template_parse(tmpl_name, &tmpl))
        return cli_fail("--template: invalid value '%s' (expected auto, %s)", tmpl_name,
                        elm_chat_template_names());
    if (think && strcmp(think, "on") != 0 && strcmp(think, "off") != 0)
        return cli_fail("--think: invalid value '%s' (expected on or off)", think);
    char *owned_system = NULL;
    if (!system_prompt(preset, from, to, context_file, temp_set, &o, &system, &owned_system))
        return 1;
    o.gp.sampling.seed = gen_opts_seed(&o);

    int rc = 1;
    gen_stack stack = {0};
    elm_chat *chat = NULL;
    elm_model *m = cli_load_model_to_run(model, tokenizer, o.mmap);
    if (!m || !gen_stack_new(&stack, &o, m, model)) goto done;
    if (!strcmp(tmpl_name, "auto") && !elm_chat_template_recognise(m->vocab.chat_template, &tmpl)) {
        cli_fail("%s: chat template not recognised (choose one with --template: %s)", model,
                 elm_chat_template_names());
        goto done;
    }
    if (think) {
        elm_chat_template switched = elm_chat_template_thinking(tmpl, !strcmp(think, "on"));
        if (switched == tmpl && elm_chat_template_thinking(tmpl, strcmp(think, "on") != 0) == tmpl) {
            cli_fail("--think: template %s has no thinking switch (qwen3, smollm3 have one)",
                     elm_chat_template_name(tmpl));
            goto done;
        }
        tmpl = switched;
    }
    elm_error err;
    elm_error_clear(&err);
    o.gp.n_keep = (int32_t)(o.keep < 0 ? 0 : o.keep); /* 0: the chat keeps its system turn */
    const elm_chat_params cp = {.tmpl = tmpl, .system = system, .gen = o.gp,
                                .spec = stack.speculative ? &stack.spec : NULL};
    if (elm_chat_new(stack.ctx, &cp, &chat, &err)) {
        cli_fail("%s: %s", model, err.msg);
        goto done;
    }
    chat_cli s = {.chat = chat, .stack = &stack, .tmpl = tmpl, .speculative = stack.speculative};
    const bool tty = isatty(STDIN_FILENO);
    if (tty) {
        char kv[96];
        gen_kv_summary(stack.ctx, kv, sizeof kv);
        fprintf(stderr, "edgelm: chat with %s | template %s | context %d tokens | %s | /help for "
                        "commands\n",
                model, elm_chat_template_name(tmpl), elm_context_n_ctx(stack.ctx), kv);
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
            failed |= !command(&s, line, &quit);
            continue;
        }
        if (elm_chat_turn(chat, line, on_piece, NULL, &s.last, &err)) {
            fputc('\n', stdout);
            cli_fail("%s: %s", model, err.msg);
            failed = true;
            continue;
        }
        fputc('\n', stdout);
        fflush(stdout);
    }
    free(line);
    rc = failed && !tty ? 1 : 0;
done:
    elm_chat_free(chat);
    gen_stack_free(&stack);
    elm_model_free(m);
    free(owned_system);
    return rc;
}
