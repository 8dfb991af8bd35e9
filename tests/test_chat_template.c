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
        {"{{ messages }}", ELM_TEMPLATE_PLAIN},
        {NULL, ELM_TEMPLATE_PLAIN},
    };
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        const elm_chat_template got = elm_chat_template_detect(d[i].jinja);
        CHECK(got == d[i].want, "detect case %zu: %s, want %s", i, elm_chat_template_name(got),
              elm_chat_template_name(d[i].want));
    }
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

int main(int argc, char **argv) {
    check_init(argc, argv);
    render_cases();
    trimming();
    bad_input();
    detection();
    presets();
    return check_done();
}
