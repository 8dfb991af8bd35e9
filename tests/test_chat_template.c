/* Chat templates: a fixed 2-turn conversation with a system prompt rendered by each built-in
 * template equals the string the family's published Jinja template produces (expected strings
 * written out by hand from meta-llama/Llama-2-7b-chat-hf, meta-llama/Meta-Llama-3-8B-Instruct,
 * ChatML, microsoft/Phi-3-mini-4k-instruct, Gemma's tokenizer_config.json chat_template and the
 * templates of tests/data/templates); turns rendered one at a time concatenate to the whole;
 * detection by signature, on snippets and on the real templates; presets. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/fileio.h"
#include "edgelm/chat.h"

static const elm_chat_msg conv[] = {
    {.role = "system", .content = "You are a helpful assistant."},
    {.role = "user", .content = "Hi there!"},
    {.role = "assistant", .content = "Hello! How can I help?"},
    {.role = "user", .content = "Tell me a joke."},
    {.role = "assistant", .content = "Why did the chicken cross the road?"},
};

/* msgs [n] rendered by t (with the generation prompt when gen) equals want; `what` names the
 * case. */
static void check_render(elm_chat_template t, const elm_chat_msg *msgs, int n, bool gen,
                         const char *want, const char *what) {
    char *out = NULL;
    elm_error err;
    CHECK(elm_chat_render(t, msgs, n, gen, &out, &err) == ELM_OK, "%s %s: %s",
          elm_chat_template_name(t), what, err.msg);
    CHECK(out && !strcmp(out, want), "%s %s:\n got [%s]\nwant [%s]", elm_chat_template_name(t),
          what, out ? out : "", want);
    free(out);
}

typedef struct expected {
    elm_chat_template t;
    const char *with_prompt; /* conv[0..4) + generation prompt */
    const char *full;        /* conv[0..5), no generation prompt */
    const char *reply_prefix; /* what a generated reply starts with beyond the generation prompt */
} expected;

#define LLAMA31_HEAD                                                                              \
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "      \
    "December 2023\nToday Date: 26 Jul 2024\n\n"
#define LLAMA31_TURNS                                                                             \
    "<|start_header_id|>user<|end_header_id|>\n\nHi there!<|eot_id|><|start_header_id|>assistant" \
    "<|end_header_id|>\n\nHello! How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>" \
    "\n\nTell me a joke.<|eot_id|>"

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
    /* LiquidAI/LFM2-8B-A1B, LFM2.5-Instruct (tests/data/templates): ChatML after BOS */
    {ELM_TEMPLATE_LFM2,
     "<|startoftext|><|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
     "Hi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n",
     "<|startoftext|><|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
     "Hi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken "
     "cross the road?<|im_end|>\n",
     ""},
    {ELM_TEMPLATE_LFM25,
     "<|startoftext|><|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
     "Hi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n",
     "<|startoftext|><|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
     "Hi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"
     "<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\nWhy did the chicken "
     "cross the road?<|im_end|>\n",
     ""},
    /* ibm-granite/granite-4.0 (tests/data/templates) */
    {ELM_TEMPLATE_GRANITE4,
     "<|start_of_role|>system<|end_of_role|>You are a helpful assistant.<|end_of_text|>\n"
     "<|start_of_role|>user<|end_of_role|>Hi there!<|end_of_text|>\n<|start_of_role|>assistant"
     "<|end_of_role|>Hello! How can I help?<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>"
     "Tell me a joke.<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>",
     "<|start_of_role|>system<|end_of_role|>You are a helpful assistant.<|end_of_text|>\n"
     "<|start_of_role|>user<|end_of_role|>Hi there!<|end_of_text|>\n<|start_of_role|>assistant"
     "<|end_of_role|>Hello! How can I help?<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>"
     "Tell me a joke.<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>Why did the "
     "chicken cross the road?<|end_of_text|>\n",
     ""},
    /* microsoft/Phi-4-mini-instruct: no newlines, unlike Phi-3 */
    {ELM_TEMPLATE_PHI4_MINI,
     "<|system|>You are a helpful assistant.<|end|><|user|>Hi there!<|end|><|assistant|>Hello! "
     "How can I help?<|end|><|user|>Tell me a joke.<|end|><|assistant|>",
     "<|system|>You are a helpful assistant.<|end|><|user|>Hi there!<|end|><|assistant|>Hello! "
     "How can I help?<|end|><|user|>Tell me a joke.<|end|><|assistant|>Why did the chicken cross "
     "the road?<|end|><|endoftext|>",
     ""},
    /* meta-llama/Llama-3.1-8B-Instruct (tests/data/templates), rendered by jinja2 */
    {ELM_TEMPLATE_LLAMA31,
     LLAMA31_HEAD "You are a helpful assistant.<|eot_id|>" LLAMA31_TURNS
     "<|start_header_id|>assistant<|end_header_id|>\n\n",
     LLAMA31_HEAD "You are a helpful assistant.<|eot_id|>" LLAMA31_TURNS
     "<|start_header_id|>assistant<|end_header_id|>\n\nWhy did the chicken cross the road?<|eot_id|>",
     ""},
    /* mistralai/Ministral-3-14B-Reasoning-2512 (tests/data/templates): messages as they are, no
     * generation prompt */
    {ELM_TEMPLATE_MINISTRAL3,
     "<s>[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hi there![/INST]Hello! "
     "How can I help?</s>[INST]Tell me a joke.[/INST]",
     "<s>[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hi there![/INST]Hello! "
     "How can I help?</s>[INST]Tell me a joke.[/INST]Why did the chicken cross the road?</s>",
     ""},
    /* mistralai/Mistral-Small-3.2-24B-Instruct-2506 (tests/data/templates): the same turns */
    {ELM_TEMPLATE_MISTRAL_SMALL32,
     "<s>[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hi there![/INST]Hello! "
     "How can I help?</s>[INST]Tell me a joke.[/INST]",
     "<s>[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT][INST]Hi there![/INST]Hello! "
     "How can I help?</s>[INST]Tell me a joke.[/INST]Why did the chicken cross the road?</s>",
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
    const elm_chat_msg m[] = {{.role = "user", .content = "  spaced out \n"}};
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
    /* Qwen3.5 and Gemma 4 trim every message and write an empty system message as an empty
     * block; LFM2 and Granite 4.0 test its text: no block, Granite's default one */
    const elm_chat_msg e[] = {{.role = "system", .content = ""}, {.role = "user", .content = "  spaced out \n"}};
    check_render(ELM_TEMPLATE_QWEN35, e, 2, true,
                 "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nspaced out<|im_end|>\n"
                 "<|im_start|>assistant\n<think>\n",
                 "empty system");
    check_render(ELM_TEMPLATE_GEMMA4, e, 2, true,
                 "<bos><|turn>system\n<turn|>\n<|turn>user\nspaced out<turn|>\n<|turn>model\n"
                 "<|channel>thought\n<channel|>",
                 "empty system");
    check_render(ELM_TEMPLATE_LFM2, e, 2, true,
                 "<|startoftext|><|im_start|>user\n  spaced out \n<|im_end|>\n"
                 "<|im_start|>assistant\n",
                 "empty system");
    check_render(ELM_TEMPLATE_GRANITE4, e, 2, true,
                 "<|start_of_role|>system<|end_of_role|>You are a helpful assistant. Please ensure "
                 "responses are professional, accurate, and safe.<|end_of_text|>\n<|start_of_role|>"
                 "user<|end_of_role|>  spaced out \n<|end_of_text|>\n<|start_of_role|>assistant"
                 "<|end_of_role|>",
                 "empty system");
    /* Ministral 3 keeps messages as they are and writes an empty system message as an empty
     * block, its default one without a system message */
    check_render(ELM_TEMPLATE_MINISTRAL3, e, 2, true,
                 "<s>[SYSTEM_PROMPT][/SYSTEM_PROMPT][INST]  spaced out \n[/INST]", "empty system");
    char *def = NULL;
    elm_chat_render(ELM_TEMPLATE_MINISTRAL3, e + 1, 1, true, &def, NULL);
    CHECK(def && !strncmp(def, "<s>[SYSTEM_PROMPT]# HOW YOU SHOULD THINK AND ANSWER\n\nFirst", 58) &&
              strstr(def, "self-contained response.[/SYSTEM_PROMPT][INST]"),
          "ministral3 default system: [%s]", def ? def : "");
    free(def);
    /* Mistral Small 3.2's default is dated today (strftime_now("%Y-%m-%d")) */
    elm_chat_render(ELM_TEMPLATE_MISTRAL_SMALL32, e + 1, 1, true, &def, NULL);
    char dated[64];
    const time_t now = time(NULL);
    struct tm tm;
    strftime(dated, sizeof dated, "The current date is %Y-%m-%d.\n\nWhen", localtime_r(&now, &tm));
    CHECK(def && !strncmp(def, "<s>[SYSTEM_PROMPT]You are Mistral Small 3, a Large", 50) &&
              strstr(def, dated) && strstr(def, "at the moment.[/SYSTEM_PROMPT][INST]  spaced out \n[/INST]"),
          "mistral-small32 default system: [%s]", def ? def : "");
    free(def);
    /* Mistral Nemo (its template rendered by jinja2): the system message goes into the user
     * message that ends the conversation, and nowhere when a reply ends it; turn by turn it stays
     * in the first */
    check_render(ELM_TEMPLATE_MISTRAL_NEMO, conv, 4, true,
                 "<s>[INST]Hi there![/INST]Hello! How can I help?</s>[INST]You are a helpful "
                 "assistant.\n\nTell me a joke.[/INST]", "system in the last user message");
    check_render(ELM_TEMPLATE_MISTRAL_NEMO, conv, 5, false,
                 "<s>[INST]Hi there![/INST]Hello! How can I help?</s>[INST]Tell me a joke.[/INST]"
                 "Why did the chicken cross the road?</s>", "a reply last");
    char *turn = NULL;
    elm_chat_render_turn(ELM_TEMPLATE_MISTRAL_NEMO, conv[0].content, conv[1].content, true, &turn, NULL);
    CHECK(turn && !strcmp(turn, "<s>[INST]You are a helpful assistant.\n\nHi there![/INST]"),
          "mistral-nemo first turn: [%s]", turn ? turn : "");
    free(turn);
    elm_chat_render_turn(ELM_TEMPLATE_MISTRAL_NEMO, conv[0].content, conv[3].content, false, &turn, NULL);
    CHECK(turn && !strcmp(turn, "</s>[INST]Tell me a joke.[/INST]"), "mistral-nemo later turn: [%s]",
          turn ? turn : "");
    free(turn);
    /* Qwen3.5 trims a reply and its reasoning, Qwen3 strips only the newlines around them */
    const elm_chat_msg r[] = {{.role = "user", .content = "Hi"}, {.role = "assistant", .content = " <think> Spaced. </think> Answer \n"}};
    check_render(ELM_TEMPLATE_QWEN35, r, 2, false,
                 "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nSpaced.\n"
                 "</think>\n\n Answer<|im_end|>\n",
                 "spaced reply");
    check_render(ELM_TEMPLATE_QWEN3, r, 2, false,
                 "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n Spaced. \n"
                 "</think>\n\n Answer \n<|im_end|>\n",
                 "spaced reply");
    /* Gemma 4: an assistant message after another continues its turn */
    const elm_chat_msg two[] = {{.role = "user", .content = "Hi"}, {.role = "assistant", .content = "A"}, {.role = "assistant", .content = "B"}};
    check_render(ELM_TEMPLATE_GEMMA4, two, 3, false,
                 "<bos><|turn>user\nHi<turn|>\n<|turn>model\nA<turn|>\nB<turn|>\n", "two replies");
}

static void bad_input(void) {
    char *out = (char *)1;
    elm_error err;
    const elm_chat_msg bad[] = {{.role = "user", .content = "a"}, {.role = "system", .content = "late system"}};
    CHECK(elm_chat_render(ELM_TEMPLATE_CHATML, bad, 2, true, &out, &err) == ELM_ERR_ARG && !out,
          "system message not first accepted");
    CHECK(strstr(err.msg, "role 'system'") != NULL, "message: %s", err.msg);
    const elm_chat_msg tool[] = {{.role = "tool", .content = "x"}};
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
    static const elm_chat_msg a[] = {{.role = "system", .content = "You are a helpful assistant."},
                                     {.role = "user", .content = "Hi there!"}};
    static const elm_chat_msg b[] = {
        {.role = "user", .content = "Hi there!"},
        {.role = "assistant", .content = "<think>\nThe user greets.\n</think>\n\nHello! How can I help?"},
        {.role = "user", .content = "Tell me a joke."}};
    static const elm_chat_msg c[] = {{.role = "user", .content = "Hi there!"}, {.role = "assistant", .content = "Hello!"}};
    static const elm_chat_msg d[] = {{.role = "system", .content = "Be brief. /no_think"}, {.role = "user", .content = "Hi"}};
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
        char what[32];
        snprintf(what, sizeof what, "case %zu", i);
        check_render(k[i].t, k[i].msgs, k[i].n, k[i].gen, k[i].want, what);
    }
    /* the thinking switch pairs the variants; other families have none */
    CHECK(elm_chat_template_thinking(ELM_TEMPLATE_QWEN3, false) == ELM_TEMPLATE_QWEN3_NO_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_QWEN3_NO_THINK, true) == ELM_TEMPLATE_QWEN3 &&
              elm_chat_template_thinking(ELM_TEMPLATE_QWEN3, true) == ELM_TEMPLATE_QWEN3 &&
              elm_chat_template_thinking(ELM_TEMPLATE_SMOLLM3, false) ==
                  ELM_TEMPLATE_SMOLLM3_NO_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_GEMMA, false) == ELM_TEMPLATE_GEMMA &&
              elm_chat_template_thinking(ELM_TEMPLATE_QWEN35, false) ==
                  ELM_TEMPLATE_QWEN35_NO_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_GEMMA4, true) == ELM_TEMPLATE_GEMMA4_THINK &&
              elm_chat_template_thinking(ELM_TEMPLATE_GEMMA4, false) == ELM_TEMPLATE_GEMMA4 &&
              elm_chat_template_thinking(ELM_TEMPLATE_GEMMA4_THINK, false) == ELM_TEMPLATE_GEMMA4 &&
              elm_chat_template_thinking(ELM_TEMPLATE_LFM25, false) == ELM_TEMPLATE_LFM25,
          "thinking switch");
    /* without a system message, the turns of the families whose opening is more than BOS
     * (SmolLM3's metadata block in both modes, Granite 4.0's default system message, Gemma 4's
     * system turn with thinking on) and of the others with a reply as generated concatenate to the
     * whole conversation */
    const elm_chat_template turn_wise[] = {
        ELM_TEMPLATE_SMOLLM3, ELM_TEMPLATE_SMOLLM3_NO_THINK, ELM_TEMPLATE_GRANITE4,
        ELM_TEMPLATE_GEMMA4_THINK, ELM_TEMPLATE_LFM2, ELM_TEMPLATE_LFM25, ELM_TEMPLATE_PHI4_MINI};
    for (size_t i = 0; i < sizeof turn_wise / sizeof turn_wise[0]; i++) {
        const elm_chat_template t = turn_wise[i];
        char *t1 = NULL, *t2 = NULL, *whole = NULL, joined[4096];
        const elm_chat_msg conv3[] = {b[0], {.role = "assistant", .content = "Hello!"}, b[2]};
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

/* LFM2, LFM2.5, Qwen3.5, Granite 4.0, Gemma 4 and Phi-4-mini, three conversations each: a system
 * prompt and several turns with the generation prompt (in cases[] for the families without a
 * thinking switch); no system message and an earlier reply with its reasoning, with the generation
 * prompt; the same finished by a reply with reasoning, without it. As the templates of
 * tests/data/templates render them, written out by hand from the Jinja. The replies reason as the model writes it: in a think block, or Gemma 4's thought
 * channel. */
#define R1 "<think>\nThe user greets.\n</think>\n\nHello! How can I help?"
#define R2 "<think>\nA classic.\n</think>\n\nWhy did the chicken cross the road?"
#define SYS_QWEN                                                                                  \
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi "            \
    "there!<|im_end|>\n<|im_start|>assistant\nHello! How can I help?<|im_end|>\n"                 \
    "<|im_start|>user\nTell me a joke.<|im_end|>\n"
#define HISTORY_QWEN                                                                              \
    "<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\nHello! How can I "             \
    "help?<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n"
#define LFM_HI "<|startoftext|><|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n"
#define LFM_JOKE "<|im_end|>\n<|im_start|>user\nTell me a joke.<|im_end|>\n<|im_start|>assistant\n"
#define GRANITE_DEFAULT                                                                           \
    "<|start_of_role|>system<|end_of_role|>You are a helpful assistant. Please ensure responses "   \
    "are professional, accurate, and safe.<|end_of_text|>\n"
#define GRANITE_HI GRANITE_DEFAULT "<|start_of_role|>user<|end_of_role|>Hi there!<|end_of_text|>\n"
#define GRANITE_JOKE                                                                              \
    "<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Tell me a joke.<|end_of_text|>\n"        \
    "<|start_of_role|>assistant<|end_of_role|>"
#define SYS_GEMMA4_TURNS                                                                          \
    "You are a helpful assistant.<turn|>\n<|turn>user\nHi there!<turn|>\n<|turn>model\nHello! "    \
    "How can I help?<turn|>\n<|turn>user\nTell me a joke.<turn|>\n<|turn>model\n"
#define HISTORY_GEMMA4                                                                            \
    "<|turn>user\nHi there!<turn|>\n<|turn>model\nHello! How can I help?<turn|>\n<|turn>user\n"    \
    "Tell me a joke.<turn|>\n<|turn>model\n"
#define PHI4_HI                                                                                   \
    "<|user|>Hi there!<|end|><|assistant|>" R1 "<|end|><|user|>Tell me a joke.<|end|><|assistant|>"

static void three_conversations(void) {
    static const elm_chat_msg think[] = {
        {.role = "user", .content = "Hi there!"}, {.role = "assistant", .content = R1}, {.role = "user", .content = "Tell me a joke."}, {.role = "assistant", .content = R2}};
    static const elm_chat_msg channel[] = {
        {.role = "user", .content = "Hi there!"},
        {.role = "assistant", .content = "<|channel>thought\nThe user greets.<channel|>Hello! How can I help?"},
        {.role = "user", .content = "Tell me a joke."},
        {.role = "assistant", .content = "<|channel>thought\nA classic.<channel|>Why did the chicken cross the road?"}};
    const struct {
        elm_chat_template t;
        const elm_chat_msg *msgs;
        int n;
        bool gen;
        const char *want;
    } k[] = {
        /* LFM2 keeps every reply as it is */
        {ELM_TEMPLATE_LFM2, think, 3, true, LFM_HI R1 LFM_JOKE},
        {ELM_TEMPLATE_LFM2, think, 4, false, LFM_HI R1 LFM_JOKE R2 "<|im_end|>\n"},
        /* LFM2.5: replies before the latest lose their reasoning, trimmed */
        {ELM_TEMPLATE_LFM25, think, 3, true, LFM_HI R1 LFM_JOKE},
        {ELM_TEMPLATE_LFM25, think, 4, false,
         LFM_HI "Hello! How can I help?" LFM_JOKE R2 "<|im_end|>\n"},
        /* Qwen3.5: the generation prompt opens the think block (or holds an empty one); replies
         * before the last user message lose their reasoning, later ones keep it in a block */
        {ELM_TEMPLATE_QWEN35, conv, 4, true, SYS_QWEN "<|im_start|>assistant\n<think>\n"},
        {ELM_TEMPLATE_QWEN35, think, 3, true, HISTORY_QWEN "<|im_start|>assistant\n<think>\n"},
        {ELM_TEMPLATE_QWEN35, think, 4, false,
         HISTORY_QWEN "<|im_start|>assistant\n<think>\nA classic.\n</think>\n\nWhy did the chicken "
                      "cross the road?<|im_end|>\n"},
        {ELM_TEMPLATE_QWEN35_NO_THINK, conv, 4, true,
         SYS_QWEN "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {ELM_TEMPLATE_QWEN35_NO_THINK, think, 3, true,
         HISTORY_QWEN "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {ELM_TEMPLATE_QWEN35_NO_THINK, think, 4, false,
         HISTORY_QWEN "<|im_start|>assistant\n<think>\nA classic.\n</think>\n\nWhy did the chicken "
                      "cross the road?<|im_end|>\n"},
        /* Granite 4.0: its default system message, replies as they are */
        {ELM_TEMPLATE_GRANITE4, think, 3, true,
         GRANITE_HI "<|start_of_role|>assistant<|end_of_role|>" R1 GRANITE_JOKE},
        {ELM_TEMPLATE_GRANITE4, think, 4, false,
         GRANITE_HI "<|start_of_role|>assistant<|end_of_role|>" R1 GRANITE_JOKE R2
                    "<|end_of_text|>\n"},
        /* Gemma 4: thought channels go from every reply; thinking off (the default) opens the
         * reply with an empty channel, on puts <|think|> in a system turn always written */
        {ELM_TEMPLATE_GEMMA4, conv, 4, true,
         "<bos><|turn>system\n" SYS_GEMMA4_TURNS "<|channel>thought\n<channel|>"},
        {ELM_TEMPLATE_GEMMA4, channel, 3, true,
         "<bos>" HISTORY_GEMMA4 "<|channel>thought\n<channel|>"},
        {ELM_TEMPLATE_GEMMA4, channel, 4, false,
         "<bos>" HISTORY_GEMMA4 "Why did the chicken cross the road?<turn|>\n"},
        {ELM_TEMPLATE_GEMMA4_THINK, conv, 4, true,
         "<bos><|turn>system\n<|think|>\n" SYS_GEMMA4_TURNS},
        {ELM_TEMPLATE_GEMMA4_THINK, channel, 3, true,
         "<bos><|turn>system\n<|think|>\n<turn|>\n" HISTORY_GEMMA4},
        {ELM_TEMPLATE_GEMMA4_THINK, channel, 4, false,
         "<bos><|turn>system\n<|think|>\n<turn|>\n" HISTORY_GEMMA4 "Why did the chicken cross the "
         "road?<turn|>\n"},
        /* Phi-4-mini: replies as they are, EOS closes a conversation without the prompt */
        {ELM_TEMPLATE_PHI4_MINI, think, 3, true, PHI4_HI},
        {ELM_TEMPLATE_PHI4_MINI, think, 4, false, PHI4_HI R2 "<|end|><|endoftext|>"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char what[48];
        snprintf(what, sizeof what, "%s, %d messages%s", k[i].msgs == conv ? "system" : "no system",
                 k[i].n, k[i].gen ? " + prompt" : "");
        check_render(k[i].t, k[i].msgs, k[i].n, k[i].gen, k[i].want, what);
    }
}

/* The templates as the models publish them (tests/data/templates, beside this file) are
 * recognised as their family's, and the new families' markers take no other family's template:
 * Qwen3's and SmolLM3's stay theirs, Granite 4.1's (no default system message) none. */
static void detection_published(void) {
    const struct {
        const char *file;
        elm_chat_template want; /* ELM_TEMPLATE_PLAIN: not recognised */
    } d[] = {
        {"LFM2-8B-A1B.jinja", ELM_TEMPLATE_LFM2},
        {"LFM2.5-Instruct.jinja", ELM_TEMPLATE_LFM25},
        {"Qwen3.5-4B.jinja", ELM_TEMPLATE_QWEN35},
        {"ibm-granite-granite-4.0.jinja", ELM_TEMPLATE_GRANITE4},
        {"google-gemma-4-31B-it.jinja", ELM_TEMPLATE_GEMMA4},
        {"Qwen-Qwen3-0.6B.jinja", ELM_TEMPLATE_QWEN3},
        {"HuggingFaceTB-SmolLM3-3B.jinja", ELM_TEMPLATE_SMOLLM3},
        {"ibm-granite-granite-4.1.jinja", ELM_TEMPLATE_PLAIN},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", ELM_TEMPLATE_LLAMA31},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", ELM_TEMPLATE_LLAMA32},
        {"microsoft-Phi-4-mini-instruct.jinja", ELM_TEMPLATE_PHI4_MINI},
        {"mistralai-Ministral-3-14B-Reasoning-2512.jinja", ELM_TEMPLATE_MINISTRAL3},
        {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ELM_TEMPLATE_MISTRAL_SMALL32},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ELM_TEMPLATE_MISTRAL_NEMO},
        {"openai-gpt-oss-120b.jinja", ELM_TEMPLATE_GPT_OSS},
    };
    const char *slash = strrchr(__FILE__, '/');
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        char path[4096], *jinja = NULL;
        size_t len;
        elm_error err;
        snprintf(path, sizeof path, "%.*sdata/templates/%s",
                 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__, d[i].file);
        if (elm_read_file(path, 1 << 20, &jinja, &len, &err)) {
            CHECK(0, "%s", err.msg);
            continue;
        }
        elm_chat_template got;
        const bool known = elm_chat_template_recognise(jinja, &got);
        CHECK(known == (d[i].want != ELM_TEMPLATE_PLAIN) && got == d[i].want, "%s: %s, want %s",
              d[i].file, known ? elm_chat_template_name(got) : "not recognised",
              d[i].want != ELM_TEMPLATE_PLAIN ? elm_chat_template_name(d[i].want) : "none");
        free(jinja);
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
    three_conversations();
    detection_published();
    return check_done();
}
