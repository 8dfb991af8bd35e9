/* Chat templates: a fixed 2-turn conversation with a system prompt rendered by each built-in
 * template equals the string the family's published Jinja template produces (expected strings
 * written out by hand from meta-llama/Llama-2-7b-chat-hf, meta-llama/Meta-Llama-3-8B-Instruct,
 * ChatML, microsoft/Phi-3-mini-4k-instruct and Gemma's tokenizer_config.json chat_template);
 * turns rendered one at a time concatenate to the whole; detection by signature; presets. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "edgelm/chat.h"

static const elm_chat_msg conv[] = {
    {"system", "You are a helpful assistant."},
    {"user", "Hi there!"},
    {"assistant", "Hello! How can I help?"},
    {"user", "Tell me a joke."},
    {"assistant", "Why did the chicken cross the road?"},
};

typedef struct expected {
    elm_chat_template t;
    const char *with_prompt; /* conv[0..4) + generation prompt */
    const char *full;        /* conv[0..5), no generation prompt */
    const char *reply_prefix; /* what a generated reply starts with beyond the generation prompt */
} expected;

static const expected cases[] = {
    {ELM_TEMPLATE_LLAMA2,
     "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHi there! [/INST] Hello! How "
     "can I help? </s><s>[INST] Tell me a joke. [/INST]",
     "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHi there! [/INST] Hello! How "
     "can I help? </s><s>[INST] Tell me a joke. [/INST] Why did the chicken cross the road? </s>",
     " "},
    {ELM_TEMPLATE_LLAMA3,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
     "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "
     "there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I "
     "help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a "
     "joke.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful "
     "assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi "
     "there!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello! How can I "
     "help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTell me a "
     "joke.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nWhy did the chicken cross "
     "the road?<|eot_id|>",
     ""},
    {ELM_TEMPLATE_CHATML,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi "
     "there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi "
     "there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken "
     "cross the road?<|im_end|>\n",
     ""},
    {ELM_TEMPLATE_PHI3,
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHi there!<|end|>\n"
     "<|assistant|>\nHello! How can I help?<|end|>\n<|user|>\nTell me a joke.<|end|>\n"
     "<|assistant|>\n",
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHi there!<|end|>\n"
     "<|assistant|>\nHello! How can I help?<|end|>\n<|user|>\nTell me a joke.<|end|>\n"
     "<|assistant|>\nWhy did the chicken cross the road?<|end|>\n<|endoftext|>",
     ""},
    {ELM_TEMPLATE_GEMMA,
     "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHi "
     "there!<end_of_turn>\n<start_of_turn>model\nHello! How can I "
     "help?<end_of_turn>\n<start_of_turn>user\nTell me a joke.<end_of_turn>\n"
     "<start_of_turn>model\n",
     "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHi "
     "there!<end_of_turn>\n<start_of_turn>model\nHello! How can I "
     "help?<end_of_turn>\n<start_of_turn>user\nTell me a joke.<end_of_turn>\n"
     "<start_of_turn>model\nWhy did the chicken cross the road?<end_of_turn>\n",
     ""},
    {ELM_TEMPLATE_PLAIN,
     "You are a helpful assistant.\n\nUser: Hi there!\nAssistant: Hello! How can I help?\nUser: "
     "Tell me a joke.\nAssistant:",
     "You are a helpful assistant.\n\nUser: Hi there!\nAssistant: Hello! How can I help?\nUser: "
     "Tell me a joke.\nAssistant: Why did the chicken cross the road?\n",
     " "},
};

static void render_cases(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const expected *e = &cases[i];
        const char *name = elm_chat_template_name(e->t);
        char *out = NULL;
        elm_error err;
        CHECK(elm_chat_render(e->t, conv, 4, true, &out, &err) == ELM_OK, "%s: %s", name, err.msg);
        CHECK(out && !strcmp(out, e->with_prompt), "%s with prompt:\n got [%s]\nwant [%s]", name,
              out ? out : "", e->with_prompt);
        free(out);
        CHECK(elm_chat_render(e->t, conv, 5, false, &out, &err) == ELM_OK, "%s: %s", name, err.msg);
        CHECK(out && !strcmp(out, e->full), "%s full:\n got [%s]\nwant [%s]", name,
              out ? out : "", e->full);
        free(out);

        /* turn by turn, with the reply as the model generates it, gives the same text */
        char *t1 = NULL, *t2 = NULL;
        elm_chat_render_turn(e->t, conv[0].content, conv[1].content, true, &t1, &err);
        elm_chat_render_turn(e->t, conv[0].content, conv[3].content, false, &t2, &err);
        char joined[2048];
        snprintf(joined, sizeof joined, "%s%s%s%s", t1 ? t1 : "", e->reply_prefix,
                 conv[2].content, t2 ? t2 : "");
        CHECK(!strcmp(joined, e->with_prompt), "%s turns:\n got [%s]\nwant [%s]", name, joined,
              e->with_prompt);
        free(t1);
        free(t2);

        elm_chat_template back;
        CHECK(elm_chat_template_parse(name, &back) && back == e->t, "%s: name round trip", name);
    }
}

/* Content is trimmed where the family's template trims it (llama3 | trim), kept otherwise. */
static void trimming(void) {
    const elm_chat_msg m[] = {{"user", "  spaced out \n"}};
    char *out = NULL;
    elm_chat_render(ELM_TEMPLATE_LLAMA3, m, 1, false, &out, NULL);
    CHECK(out && strstr(out, "\n\nspaced out<|eot_id|>"), "llama3 trims: [%s]", out ? out : "");
    free(out);
    elm_chat_render(ELM_TEMPLATE_CHATML, m, 1, false, &out, NULL);
    CHECK(out && strstr(out, "user\n  spaced out \n<|im_end|>"), "chatml keeps: [%s]",
          out ? out : "");
    free(out);
    /* no system prompt: gemma's first user turn has no prefix */
    elm_chat_render(ELM_TEMPLATE_GEMMA, conv + 1, 1, true, &out, NULL);
    CHECK(out && !strcmp(out, "<bos><start_of_turn>user\nHi there!<end_of_turn>\n"
                              "<start_of_turn>model\n"),
          "gemma without system: [%s]", out ? out : "");
    free(out);
}

static void bad_input(void) {
    char *out = (char *)1;
    elm_error err;
    const elm_chat_msg bad[] = {{"user", "a"}, {"system", "late system"}};
    CHECK(elm_chat_render(ELM_TEMPLATE_CHATML, bad, 2, true, &out, &err) == ELM_ERR_ARG && !out,
          "system message not first accepted");
    CHECK(strstr(err.msg, "role 'system'") != NULL, "message: %s", err.msg);
    const elm_chat_msg tool[] = {{"tool", "x"}};
    CHECK(elm_chat_render(ELM_TEMPLATE_LLAMA3, tool, 1, true, &out, &err) == ELM_ERR_ARG,
          "unknown role accepted");
    CHECK(elm_chat_render((elm_chat_template)99, conv, 1, true, &out, &err) == ELM_ERR_ARG,
          "bad template accepted");
    elm_chat_template t;
    CHECK(!elm_chat_template_parse("vicuna", &t), "unknown name parsed");
}

/* Jinja templates as the models ship them are recognised by their markers. */
static void detection(void) {
    const struct {
        const char *jinja;
        elm_chat_template want;
    } d[] = {
        {"{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
         "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}",
         ELM_TEMPLATE_LLAMA3},
        {"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
         "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
         ELM_TEMPLATE_CHATML},
        {"{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\\n' + "
         "message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' "
         "+ message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}",
         ELM_TEMPLATE_PHI3},
        {"{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + role + '\\n' + "
         "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}",
         ELM_TEMPLATE_GEMMA},
        {"{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\\\n' + "
         "system_message %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}",
         ELM_TEMPLATE_LLAMA2},
        /* Qwen3: ChatML with enable_thinking; SmolLM3: ChatML under its metadata block; Gemma 3:
         * Gemma's turns with the system text as first_user_prefix */
        {"{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' }}{% endfor %}"
         "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n"
         "</think>\\n\\n' }}{%- endif %}",
         ELM_TEMPLATE_QWEN3},
        {"{{- \"<|im_start|>system\\n\" -}}{{- \"Reasoning Mode: \" + reasoning_mode + "
         "\"\\n\\n\" -}}{%- if enable_thinking -%}{%- endif -%}",
         ELM_TEMPLATE_SMOLLM3},
        {"{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}{{ '<start_of_turn>' "
         "+ role + '\\n' + (first_user_prefix if loop.first else \"\") }}",
         ELM_TEMPLATE_GEMMA},
        {"{{ messages }}", ELM_TEMPLATE_PLAIN},
        {NULL, ELM_TEMPLATE_PLAIN},
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        const elm_chat_template got = elm_chat_template_detect(d[i].jinja);
        CHECK(got == d[i].want, "detect case %zu: %s, want %s", i, elm_chat_template_name(got),
              elm_chat_template_name(d[i].want));
    }
    elm_chat_template t;
    CHECK(!elm_chat_template_recognise("{{ messages }}", &t) &&
              elm_chat_template_recognise(NULL, &t) && t == ELM_TEMPLATE_PLAIN,
          "an unknown template is not recognised, no template is plain");
    CHECK(!strcmp(elm_chat_template_eot(ELM_TEMPLATE_CHATML), "<|im_end|>"), "chatml eot");
    CHECK(elm_chat_template_eot(ELM_TEMPLATE_PLAIN) == NULL, "plain has no eot token");
}

static void presets(void) {
    char *sys = NULL;
    float temp = -1;
    elm_error err;
    CHECK(elm_chat_preset("translate", "English", "French", NULL, &sys, &temp, &err) == ELM_OK,
          "%s", err.msg);
    CHECK(sys && strstr(sys, "from English to French") && temp >= 0, "translate: %s",
          sys ? sys : "");
    free(sys);
    CHECK(elm_chat_preset("rag", NULL, NULL, "The sky is green.", &sys, &temp, &err) == ELM_OK,
          "%s", err.msg);
    CHECK(sys && strstr(sys, "Context:\nThe sky is green.") && strstr(sys, "does not say"),
          "rag: %s", sys ? sys : "");
    free(sys);
    CHECK(elm_chat_preset("code", NULL, NULL, NULL, &sys, &temp, &err) == ELM_OK && sys, "code");
    free(sys);
    CHECK(elm_chat_preset("translate", "English", NULL, NULL, &sys, &temp, &err) == ELM_ERR_ARG,
          "translate without --to accepted");
    CHECK(elm_chat_preset("rag", NULL, NULL, NULL, &sys, &temp, &err) == ELM_ERR_ARG,
          "rag without context accepted");
    CHECK(elm_chat_preset("poetry", NULL, NULL, NULL, &sys, &temp, &err) == ELM_ERR_ARG &&
              strstr(err.msg, "unknown preset"),
          "unknown preset: %s", err.msg);
}


/* Qwen3, Gemma 3 and SmolLM3, three conversations each (a system prompt; an earlier reply with
 * its reasoning in a think block; a finished reply without generation prompt), as their Jinja
 * templates (Qwen/Qwen3-0.6B, google/gemma-3-1b-it, HuggingFaceTB/SmolLM3-3B in llama.cpp's
 * models/templates) render them, with thinking on and off. Written out by hand from the Jinja. */
#define SMOL_HEAD "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\nReasoning Mode: "
#define SMOL_THINK_DEFAULT                                                                        \
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face. Your role as an "       \
    "assistant involves thoroughly exploring questions through a systematic thinking process "    \
    "before providing the final precise and accurate solutions. This requires engaging in a "     \
    "comprehensive cycle of analysis, summarizing, exploration, reassessment, reflection, "       \
    "backtracking, and iteration to develop well-considered thinking process. Please structure "  \
    "your response into two main sections: Thought and Solution using the specified format: "     \
    "<think> Thought section </think> Solution section. In the Thought section, detail your "     \
    "reasoning process in steps. Each step should include detailed considerations such as "       \
    "analysing questions, summarizing relevant findings, brainstorming new ideas, verifying the " \
    "accuracy of the current steps, refining any errors, and revisiting previous steps. In the "  \
    "Solution section, based on various attempts, explorations, and reflections from the Thought "\
    "section, systematically present the final solution that you deem correct. The Solution "     \
    "section should be logical, accurate, and concise and detail necessary steps needed to reach "\
    "the conclusion."
#define SMOL_NO_THINK_HEAD                                                                       \
    SMOL_HEAD "/no_think\n\n## Custom Instructions\n\nYou are a helpful AI assistant named "       \
              "SmolLM, trained by Hugging Face.\n\n<|im_end|>\n"
#define SMOL_THINK_HEAD SMOL_HEAD "/think\n\n## Custom Instructions\n\n" SMOL_THINK_DEFAULT "\n\n<|im_end|>\n"

static void thinking_families(void) {
    static const elm_chat_msg a[] = {{"system", "You are a helpful assistant."},
                                     {"user", "Hi there!"}};
    static const elm_chat_msg b[] = {
        {"user", "Hi there!"},
        {"assistant", "<think>\nThe user greets.\n</think>\n\nHello! How can I help?"},
        {"user", "Tell me a joke."}};
    static const elm_chat_msg c[] = {{"user", "Hi there!"}, {"assistant", "Hello!"}};
    static const elm_chat_msg d[] = {{"system", "Be brief. /no_think"}, {"user", "Hi"}};
    const struct {
        elm_chat_template t;
        const elm_chat_msg *msgs;
        int n;
        bool gen;
        const char *want;
    } k[] = {
        {ELM_TEMPLATE_QWEN3, a, 2, true,
         "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi "
         "there!<|im_end|>\n<|im_start|>assistant\n"},
        {ELM_TEMPLATE_QWEN3, b, 3, true,
         "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I "
         "help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n"},
        {ELM_TEMPLATE_QWEN3, c, 2, false,
         "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
         "Hello!<|im_end|>\n"},
        {ELM_TEMPLATE_QWEN3_NO_THINK, a, 2, true,
         "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi "
         "there!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {ELM_TEMPLATE_QWEN3_NO_THINK, b, 3, true,
         "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I "
         "help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n"
         "<think>\n\n</think>\n\n"},
        {ELM_TEMPLATE_QWEN3_NO_THINK, c, 2, false,
         "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
         "Hello!<|im_end|>\n"},
        /* Gemma 3: the system text and a blank line open the first user turn; content | trim */
        {ELM_TEMPLATE_GEMMA, a, 2, true,
         "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHi there!<end_of_turn>\n"
         "<start_of_turn>model\n"},
        {ELM_TEMPLATE_GEMMA, b, 3, true,
         "<bos><start_of_turn>user\nHi there!<end_of_turn>\n<start_of_turn>model\n<think>\nThe "
         "user greets.\n</think>\n\nHello! How can I help?<end_of_turn>\n<start_of_turn>user\n"
         "Tell me a joke.<end_of_turn>\n<start_of_turn>model\n"},
        {ELM_TEMPLATE_GEMMA, c, 2, false,
         "<bos><start_of_turn>user\nHi there!<end_of_turn>\n<start_of_turn>model\nHello!"
         "<end_of_turn>\n"},
        {ELM_TEMPLATE_SMOLLM3, a, 2, true,
         SMOL_HEAD "/think\n\n## Custom Instructions\n\nYou are a helpful assistant.\n\n"
                   "<|im_end|>\n<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"},
        {ELM_TEMPLATE_SMOLLM3, b, 3, true,
         SMOL_THINK_HEAD "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n<think>\n"
                         "The user greets.\n</think>\n\nHello! How can I help?<|im_end|>\n"
                         "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n"},
        {ELM_TEMPLATE_SMOLLM3, c, 2, false,
         SMOL_THINK_HEAD "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\nHello!"
                         "<|im_end|>\n"},
        {ELM_TEMPLATE_SMOLLM3, d, 2, true, /* the system message switches thinking off */
         SMOL_HEAD "/no_think\n\n## Custom Instructions\n\nBe brief.\n\n<|im_end|>\n"
                   "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n"},
        {ELM_TEMPLATE_SMOLLM3_NO_THINK, a, 2, true,
         SMOL_HEAD "/no_think\n\n## Custom Instructions\n\nYou are a helpful assistant.\n\n"
                   "<|im_end|>\n<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"
                   "<think>\n\n</think>\n"},
        {ELM_TEMPLATE_SMOLLM3_NO_THINK, b, 3, true,
         SMOL_NO_THINK_HEAD "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"
                            "<think>\n\n</think>\n<think>\nThe user greets.\n</think>\n\nHello! How "
                            "can I help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n"
                            "<|im_start|>assistant\n<think>\n\n</think>\n"},
        {ELM_TEMPLATE_SMOLLM3_NO_THINK, c, 2, false,
         SMOL_NO_THINK_HEAD "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"
                            "<think>\n\n</think>\nHello!<|im_end|>\n"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char *out = NULL;
        elm_error err;
        CHECK(elm_chat_render(k[i].t, k[i].msgs, k[i].n, k[i].gen, &out, &err) == ELM_OK,
              "case %zu: %s", i, err.msg);
        CHECK(out && !strcmp(out, k[i].want), "%s case %zu:\n got [%s]\nwant [%s]",
              elm_chat_template_name(k[i].t), i, out ? out : "", k[i].want);
        free(out);
    }
    /* the thinking switch pairs the variants; other families have none */
    CHECK(elm_chat_template_thinking(ELM_TEMPLATE_QWEN3, false) == ELM_TEMPLATE_QWEN3_NO_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_QWEN3_NO_THINK, true) == ELM_TEMPLATE_QWEN3 &&
              elm_chat_template_thinking(ELM_TEMPLATE_QWEN3, true) == ELM_TEMPLATE_QWEN3 &&
              elm_chat_template_thinking(ELM_TEMPLATE_SMOLLM3, false) ==
                  ELM_TEMPLATE_SMOLLM3_NO_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_GEMMA, false) == ELM_TEMPLATE_GEMMA,
          "thinking switch");
    /* SmolLM3 turns concatenate to the whole conversation in both modes */
    for (int off = 0; off < 2; off++) {
        elm_chat_template t = off ? ELM_TEMPLATE_SMOLLM3_NO_THINK : ELM_TEMPLATE_SMOLLM3;
        char *t1 = NULL, *t2 = NULL, *whole = NULL, joined[4096];
        const elm_chat_msg conv3[] = {b[0], {"assistant", "Hello!"}, b[2]};
        elm_chat_render_turn(t, NULL, b[0].content, true, &t1, NULL);
        elm_chat_render_turn(t, NULL, b[2].content, false, &t2, NULL);
        elm_chat_render(t, conv3, 3, true, &whole, NULL);
        snprintf(joined, sizeof joined, "%s%s%s", t1 ? t1 : "", "Hello!", t2 ? t2 : "");
        CHECK(whole && !strcmp(joined, whole), "%s turns:\n got [%s]\nwant [%s]",
              elm_chat_template_name(t), joined, whole ? whole : "");
        free(t1);
        free(t2);
        free(whole);
    }
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    render_cases();
    trimming();
    bad_input();
    detection();
    presets();
    thinking_families();
    return check_done();
}
