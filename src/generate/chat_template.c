/* Built-in chat templates (see chat.h): each family's published Jinja template written out as the
 * text around each message, so one renderer serves every family and a whole conversation is the
 * concatenation of its turns (which is what lets a chat prefill only a turn's new tokens). */
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "edgelm/chat.h"

typedef struct tmpl_spec {
    const char *name;
    const char *sig[2];        /* substrings a Jinja template of this family contains (NULL: none) */
    const char *bos;           /* text opening the conversation */
    const char *sys_pre, *sys_post;     /* a system block of its own; NULL: merged into the first
                                         * user message as merge_pre + system + merge_post + user */
    const char *merge_pre, *merge_post;
    const char *user_pre, *user_post;
    const char *asst_pre, *asst_post;   /* around a finished assistant message */
    const char *gen_prompt;             /* add_generation_prompt */
    const char *end_no_gen;             /* closes a conversation rendered without it */
    const char *eot;                    /* end-of-turn token text, NULL: end-of-sequence */
    bool trim;                          /* message content | trim */
} tmpl_spec;

static const tmpl_spec specs[ELM_TEMPLATE_COUNT] = {
    [ELM_TEMPLATE_PLAIN] = {.name = "plain", .bos = "", .sys_pre = "", .sys_post = "\n\n",
                            .user_pre = "User: ", .user_post = "\n", .asst_pre = "Assistant: ",
                            .asst_post = "\n", .gen_prompt = "Assistant:", .end_no_gen = "",
                            .trim = true},
    /* the user turn opens with BOS itself; a reply is " " + reply.strip() + " " + eos */
    [ELM_TEMPLATE_LLAMA2] = {.name = "llama2", .sig = {"[INST]", NULL}, .bos = "",
                             .merge_pre = "<<SYS>>\n", .merge_post = "\n<</SYS>>\n\n",
                             .user_pre = "<s>[INST] ", .user_post = " [/INST]", .asst_pre = " ",
                             .asst_post = " </s>", .gen_prompt = "", .end_no_gen = "",
                             .eot = "</s>", .trim = true},
    [ELM_TEMPLATE_LLAMA3] = {.name = "llama3", .sig = {"<|start_header_id|>", "<|eot_id|>"},
                             .bos = "<|begin_of_text|>",
                             .sys_pre = "<|start_header_id|>system<|end_header_id|>\n\n",
                             .sys_post = "<|eot_id|>",
                             .user_pre = "<|start_header_id|>user<|end_header_id|>\n\n",
                             .user_post = "<|eot_id|>",
                             .asst_pre = "<|start_header_id|>assistant<|end_header_id|>\n\n",
                             .asst_post = "<|eot_id|>",
                             .gen_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n",
                             .end_no_gen = "", .eot = "<|eot_id|>", .trim = true},
    [ELM_TEMPLATE_CHATML] = {.name = "chatml", .sig = {"<|im_start|>", NULL}, .bos = "",
                             .sys_pre = "<|im_start|>system\n", .sys_post = "<|im_end|>\n",
                             .user_pre = "<|im_start|>user\n", .user_post = "<|im_end|>\n",
                             .asst_pre = "<|im_start|>assistant\n", .asst_post = "<|im_end|>\n",
                             .gen_prompt = "<|im_start|>assistant\n", .end_no_gen = "",
                             .eot = "<|im_end|>", .trim = false},
    [ELM_TEMPLATE_PHI3] = {.name = "phi3", .sig = {"<|user|>", "<|end|>"}, .bos = "",
                           .sys_pre = "<|system|>\n", .sys_post = "<|end|>\n",
                           .user_pre = "<|user|>\n", .user_post = "<|end|>\n",
                           .asst_pre = "<|assistant|>\n", .asst_post = "<|end|>\n",
                           .gen_prompt = "<|assistant|>\n", .end_no_gen = "<|endoftext|>",
                           .eot = "<|end|>", .trim = false},
    [ELM_TEMPLATE_GEMMA] = {.name = "gemma", .sig = {"<start_of_turn>", NULL}, .bos = "<bos>",
                            .merge_pre = "", .merge_post = "\n\n",
                            .user_pre = "<start_of_turn>user\n", .user_post = "<end_of_turn>\n",
                            .asst_pre = "<start_of_turn>model\n", .asst_post = "<end_of_turn>\n",
                            .gen_prompt = "<start_of_turn>model\n", .end_no_gen = "",
                            .eot = "<end_of_turn>", .trim = true},
};

/* Detection order: the more specific markers first (Phi-3 and Llama 3 templates may also mention
 * tokens of other families in comments; ChatML's marker is the most widely borrowed). */
static const elm_chat_template detect_order[] = {ELM_TEMPLATE_LLAMA3, ELM_TEMPLATE_PHI3,
                                                 ELM_TEMPLATE_GEMMA, ELM_TEMPLATE_CHATML,
                                                 ELM_TEMPLATE_LLAMA2};

const char *elm_chat_template_name(elm_chat_template t) {
    return (unsigned)t < ELM_TEMPLATE_COUNT ? specs[t].name : "unknown";
}

bool elm_chat_template_parse(const char *name, elm_chat_template *out) {
    for (int t = 0; name && t < ELM_TEMPLATE_COUNT; t++)
        if (!strcmp(name, specs[t].name)) {
            *out = (elm_chat_template)t;
            return true;
        }
    return false;
}

elm_chat_template elm_chat_template_detect(const char *jinja) {
    if (!jinja) return ELM_TEMPLATE_PLAIN;
    for (size_t i = 0; i < sizeof detect_order / sizeof detect_order[0]; i++) {
        const tmpl_spec *s = &specs[detect_order[i]];
        if (strstr(jinja, s->sig[0]) && (!s->sig[1] || strstr(jinja, s->sig[1])))
            return detect_order[i];
    }
    return ELM_TEMPLATE_PLAIN;
}

const char *elm_chat_template_eot(elm_chat_template t) {
    return (unsigned)t < ELM_TEMPLATE_COUNT ? specs[t].eot : NULL;
}

/* A growing string; `ok` turns false on the first failed allocation and stays so. */
typedef elm_sbuf text;

static void put_n(text *t, const char *s, size_t n) { elm_sb_put(t, s, n); }
static void put(text *t, const char *s) { elm_sb_puts(t, s); }

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* content, or content with leading and trailing whitespace removed (Jinja's trim / str.strip) */
static void put_content(text *t, const tmpl_spec *s, const char *content) {
    size_t b = 0, e = strlen(content);
    if (s->trim) {
        while (b < e && is_space(content[b])) b++;
        while (e > b && is_space(content[e - 1])) e--;
    }
    put_n(t, content + b, e - b);
}

/* A user message; `system` (or NULL) merged in front of it for families without a system block. */
static void put_user(text *t, const tmpl_spec *s, const char *system, const char *content) {
    put(t, s->user_pre);
    if (system && !s->sys_pre) {
        put(t, s->merge_pre);
        put(t, system);
        put(t, s->merge_post);
    }
    put_content(t, s, content);
    put(t, s->user_post);
}

/* The opening of a conversation: BOS text and, for families that have one, the system block. */
static void put_opening(text *t, const tmpl_spec *s, const char *system) {
    put(t, s->bos);
    if (system && s->sys_pre) {
        put(t, s->sys_pre);
        put_content(t, s, system);
        put(t, s->sys_post);
    }
}

static elm_status finish(text *t, char **out, elm_error *err) {
    if (!(*out = elm_sb_finish(t))) return elm_errorf(err, ELM_ERR_NOMEM, "chat template: out of memory");
    return ELM_OK;
}

elm_status elm_chat_render(elm_chat_template tm, const elm_chat_msg *msgs, int32_t n,
                           bool add_generation_prompt, char **out, elm_error *err) {
    *out = NULL;
    if ((unsigned)tm >= ELM_TEMPLATE_COUNT)
        return elm_errorf(err, ELM_ERR_ARG, "chat template %d unknown", (int)tm);
    const tmpl_spec *s = &specs[tm];
    const char *system = NULL;
    int32_t first = 0;
    if (n > 0 && !strcmp(msgs[0].role, "system")) {
        system = msgs[0].content;
        first = 1;
    }
    text t = {0};
    put(&t, ""); /* an empty conversation renders as "" rather than NULL */
    put_opening(&t, s, system);
    bool pending_system = system != NULL;
    for (int32_t i = first; i < n; i++) {
        if (!strcmp(msgs[i].role, "user")) {
            put_user(&t, s, pending_system ? system : NULL, msgs[i].content);
            pending_system = false;
        } else if (!strcmp(msgs[i].role, "assistant")) {
            put(&t, s->asst_pre);
            put_content(&t, s, msgs[i].content);
            put(&t, s->asst_post);
        } else {
            free(t.s);
            return elm_errorf(err, ELM_ERR_ARG, "chat message %d: role '%s' (expected %s)", i,
                              msgs[i].role, i == 0 ? "system, user or assistant" : "user or assistant");
        }
    }
    put(&t, add_generation_prompt ? s->gen_prompt : s->end_no_gen);
    return finish(&t, out, err);
}

elm_status elm_chat_render_turn(elm_chat_template tm, const char *system, const char *user,
                                bool first, char **out, elm_error *err) {
    *out = NULL;
    if ((unsigned)tm >= ELM_TEMPLATE_COUNT)
        return elm_errorf(err, ELM_ERR_ARG, "chat template %d unknown", (int)tm);
    const tmpl_spec *s = &specs[tm];
    text t = {0};
    put(&t, "");
    if (first) put_opening(&t, s, system);
    else put(&t, s->asst_post);
    put_user(&t, s, first ? system : NULL, user);
    put(&t, s->gen_prompt);
    return finish(&t, out, err);
}
