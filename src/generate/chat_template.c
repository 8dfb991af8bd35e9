/* Built-in chat templates (see chat.h): each family's published Jinja template written out as the
 * text around each message, so one renderer serves every family and a whole conversation is the
 * concatenation of its turns (which is what lets a chat prefill only a turn's new tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/strbuf.h"
#include "edgelm/chat.h"
#include "generate/chat_tools.h"

/* How a finished assistant message is written: the families differ in what they keep of the
 * reasoning a reply starts with. */
typedef enum reply_form {
    REPLY_CONTENT = 0, /* its content (trimmed where the family trims content) */
    REPLY_SMOLLM3,     /* without leading newlines */
    REPLY_QWEN3,       /* the reasoning in a think block after the last user message, none before */
    REPLY_QWEN35,      /* the same on the trimmed text, and a block on every reply after the last
                        * user message, reasoning or not */
    REPLY_LFM25,       /* replies before the latest keep only their text after "</think>" */
    REPLY_GEMMA4,      /* thought channels (<|channel>..<channel|>) removed, the rest trimmed */
} reply_form;

typedef struct tmpl_spec {
    const char *name;
    const char *sig[2];        /* substrings a Jinja template of this family contains (NULL: none) */
    const char *bos;           /* text opening the conversation */
    const char *sys_pre, *sys_post;     /* a system block of its own; NULL: merged into the first
                                         * user message as merge_pre + system + merge_post + user */
    const char *sys_default;            /* the system block's text without a system message
                                         * (NULL: no block then) */
    const char *sys_default_dated;      /* Mistral Small 3.2: the default text goes on with
                                         * today's date (YYYY-MM-DD) and this */
    bool sys_if_text;                   /* an empty system message counts as none (the template
                                         * tests the text, not the message) */
    const char *merge_pre, *merge_post;
    bool merge_last;                    /* Mistral Nemo: merged into the user message that ends
                                         * the conversation (none when another ends it) */
    const char *user_pre, *user_post;
    const char *asst_pre, *asst_post;   /* around a finished assistant message */
    const char *gen_prompt;             /* add_generation_prompt */
    const char *end_no_gen;             /* closes a conversation rendered without it */
    const char *eot;                    /* end-of-turn token text, NULL: end-of-sequence */
    bool trim;                          /* message content | trim */
    reply_form reply;
    bool smollm3;        /* SmolLM3: metadata system block, reasoning mode (see smollm3_thinks) */
    bool no_think;       /* thinking off (Qwen3 enable_thinking false, /no_think; Gemma 4's
                          * default) */
    elm_chat_template think_pair; /* the same family with thinking switched */
    elm_tool_syntax tools;        /* how tools, calls and results are written (none: refused) */
    const char *date;    /* Llama 3.1: the system turn is dated (NULL: none; "": today) */
} tmpl_spec;

/* The system, user and assistant turns of the families whose turns are all head(role) + text +
 * end (the generation prompt is then the assistant's head, with a thinking block or not). */
#define ROLES(head, end)                                                                          \
    .sys_pre = head("system"), .sys_post = end, .user_pre = head("user"), .user_post = end,       \
    .asst_pre = head("assistant"), .asst_post = end
#define LLAMA3_HEAD(role) "<|start_header_id|>" role "<|end_header_id|>\n\n"
#define CHATML_HEAD(role) "<|im_start|>" role "\n"
#define PHI_HEAD(role) "<|" role "|>"
#define PHI3_HEAD(role) PHI_HEAD(role) "\n"
#define GEMMA_HEAD(role) "<start_of_turn>" role "\n"
#define GEMMA4_HEAD(role) "<|turn>" role "\n"
#define GRANITE_HEAD(role) "<|start_of_role|>" role "<|end_of_role|>"
#define LLAMA31_BODY                                                                              \
    .bos = "<|begin_of_text|>", ROLES(LLAMA3_HEAD, "<|eot_id|>"), .sys_default = "",             \
    .gen_prompt = LLAMA3_HEAD("assistant"), .end_no_gen = "", .eot = "<|eot_id|>", .trim = true, \
    .tools = ELM_TOOLS_LLAMA
/* Mistral's [SYSTEM_PROMPT] generation: BOS text, messages as they are, replies closed by EOS */
#define MISTRAL_BODY                                                                              \
    .bos = "<s>", .sys_pre = "[SYSTEM_PROMPT]", .sys_post = "[/SYSTEM_PROMPT]",                  \
    .user_pre = "[INST]", .user_post = "[/INST]", .asst_pre = "", .asst_post = "</s>",           \
    .gen_prompt = "", .end_no_gen = "", .eot = "</s>"
#define CHATML_TURNS ROLES(CHATML_HEAD, "<|im_end|>\n"), .end_no_gen = "", .eot = "<|im_end|>"
#define CHATML_BODY .bos = "", CHATML_TURNS
/* LFM2: ChatML after BOS, with no system block for an empty system message */
#define LFM2_BODY                                                                                 \
    .bos = "<|startoftext|>", CHATML_TURNS, .sys_if_text = true,                                  \
    .gen_prompt = CHATML_HEAD("assistant")
/* Gemma 4: the assistant is "model"; the system turn's head is the caller's (with thinking on it
 * holds <|think|> and is written even without a system message) */
#define GEMMA4_BODY                                                                               \
    .bos = "<bos>", .sys_post = "<turn|>\n", .user_pre = GEMMA4_HEAD("user"),                     \
    .user_post = "<turn|>\n", .asst_pre = GEMMA4_HEAD("model"), .asst_post = "<turn|>\n",         \
    .end_no_gen = "", .eot = "<turn|>", .trim = true, .reply = REPLY_GEMMA4,                     \
    .tools = ELM_TOOLS_GEMMA4

/* SmolLM3's system block: reasoning mode, then the custom instructions (the system message less
 * its /think and /no_think) or the default ones of the mode. */
#define SMOLLM3_HEAD CHATML_HEAD("system") "## Metadata\n\nKnowledge Cutoff Date: June 2025\n"
#define SMOLLM3_THINK_DEFAULT                                                                     \
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
#define SMOLLM3_NO_THINK_DEFAULT "You are a helpful AI assistant named SmolLM, trained by Hugging Face."
#define EMPTY_THINK "<think>\n\n</think>\n"

/* Mistral Small 3.2's system prompt when there is no system message: the text before today's date
 * and the text after it */
#define MISTRAL_SMALL32_DEFAULT                                                                   \
    "You are Mistral Small 3, a Large Language Model (LLM) created by Mistral AI, a French "       \
    "startup headquartered in Paris.\nYour knowledge base was last updated on 2023-10-01. "       \
    "The current date is "
#define MISTRAL_SMALL32_DEFAULT_DATED                                                             \
    ".\n\nWhen you're not sure about some information or when the user's request requires "       \
    "up-to-date or specific data, you must use the available tools to fetch the information. "     \
    "Do not hesitate to use tools whenever they can provide a more accurate or complete response. "\
    "If no relevant tools are available, then clearly state that you don't have the information "  \
    "and avoid making up anything.\n\nIf the user's question is not clear, ambiguous, or does "    \
    "not provide enough context for you to accurately answer the question, you do not try "         \
    "to answer it right away and you rather ask the user to clarify their request (e.g. \"What "   \
    "are some good restaurants around me?\" => \"Where are you?\" or \"When is the next flight " \
    "to Tokyo\" => \"Where do you travel from?\").\nYou are always very attentive to dates, "     \
    "and when asked about information at specific dates, you discard information that is at "       \
    "another date.\nYou follow these instructions in all languages, and always respond to "        \
    "the user in the language they use or request.\nNext sections describe the capabilities "      \
    "that you have.\n\n# WEB BROWSING INSTRUCTIONS\n\nYou cannot perform any web search or "      \
    "access internet to open URLs, links etc. If it seems like the user is expecting you to "       \
    "do so, you clarify the situation and ask the user to copy paste the text directly in "         \
    "the chat.\n\n# MULTI-MODAL INSTRUCTIONS\n\nYou have the ability to read images, but you "    \
    "cannot generate images. You also cannot transcribe audio files or videos.\nYou cannot "       \
    "read nor transcribe audio files or videos.\n\n# TOOL CALLING INSTRUCTIONS\n\nYou may "       \
    "have access to tools that you can use to fetch information or perform actions. You must "      \
    "use these tools in the following situations:\n\n1. When the request requires up-to-date "     \
    "information.\n2. When the request requires specific data that you do not have in your "       \
    "knowledge base.\n3. When the request involves actions that you cannot perform without "       \
    "tools.\n\nAlways prioritize using tools to provide the most accurate and helpful response. "  \
    "If tools are not available, inform the user that you cannot perform the requested action "    \
    "at the moment."

/* Ministral 3's system prompt when there is no system message (the Reasoning model's template) */
#define MINISTRAL3_DEFAULT                                                                        \
    "# HOW YOU SHOULD THINK AND ANSWER\n\nFirst draft your thinking process (inner monologue) "   \
    "until you arrive at a response. Format your response using Markdown, and use LaTeX for any " \
    "mathematical equations. Write both your thoughts and the response in the same language as "  \
    "the input.\n\nYour thinking process must follow the template below:[THINK]Your thoughts "    \
    "or/and draft, like working through an exercise on scratch paper. Be as casual and as long "   \
    "as you want until you are confident to generate the response to the user.[/THINK]Here, "     \
    "provide a self-contained response."

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
                             .bos = "<|begin_of_text|>", ROLES(LLAMA3_HEAD, "<|eot_id|>"),
                             .gen_prompt = LLAMA3_HEAD("assistant"), .end_no_gen = "",
                             .eot = "<|eot_id|>", .trim = true},
    [ELM_TEMPLATE_CHATML] = {.name = "chatml", .sig = {"<|im_start|>", NULL}, CHATML_BODY,
                             .gen_prompt = CHATML_HEAD("assistant"), .trim = false},
    [ELM_TEMPLATE_PHI3] = {.name = "phi3", .sig = {"<|user|>", "<|end|>"}, .bos = "",
                           ROLES(PHI3_HEAD, "<|end|>\n"), .gen_prompt = PHI3_HEAD("assistant"),
                           .end_no_gen = "<|endoftext|>", .eot = "<|end|>", .trim = false},
    /* no system turn, and the assistant is "model" */
    [ELM_TEMPLATE_GEMMA] = {.name = "gemma", .sig = {"<start_of_turn>", NULL}, .bos = "<bos>",
                            .merge_pre = "", .merge_post = "\n\n",
                            .user_pre = GEMMA_HEAD("user"), .user_post = "<end_of_turn>\n",
                            .asst_pre = GEMMA_HEAD("model"), .asst_post = "<end_of_turn>\n",
                            .gen_prompt = GEMMA_HEAD("model"), .end_no_gen = "",
                            .eot = "<end_of_turn>", .trim = true},
    [ELM_TEMPLATE_QWEN3] = {.name = "qwen3", .sig = {"<|im_start|>", "enable_thinking"},
                            CHATML_BODY, .gen_prompt = CHATML_HEAD("assistant"),
                            .reply = REPLY_QWEN3, .think_pair = ELM_TEMPLATE_QWEN3_NO_THINK,
                            .tools = ELM_TOOLS_HERMES},
    [ELM_TEMPLATE_QWEN3_NO_THINK] = {.name = "qwen3-no-think", CHATML_BODY,
                                     .gen_prompt = CHATML_HEAD("assistant") EMPTY_THINK "\n",
                                     .reply = REPLY_QWEN3, .no_think = true,
                                     .think_pair = ELM_TEMPLATE_QWEN3, .tools = ELM_TOOLS_HERMES},
    [ELM_TEMPLATE_SMOLLM3] = {.name = "smollm3", .sig = {"<|im_start|>", "Reasoning Mode"},
                              CHATML_BODY, .gen_prompt = CHATML_HEAD("assistant"),
                              .reply = REPLY_SMOLLM3, .smollm3 = true,
                              .think_pair = ELM_TEMPLATE_SMOLLM3_NO_THINK},
    [ELM_TEMPLATE_SMOLLM3_NO_THINK] = {.name = "smollm3-no-think", CHATML_BODY,
                                       .gen_prompt = CHATML_HEAD("assistant"),
                                       .reply = REPLY_SMOLLM3, .smollm3 = true, .no_think = true,
                                       .think_pair = ELM_TEMPLATE_SMOLLM3},
    /* LFM2's template names its tool-list tokens, LFM2.5's its keep_past_thinking switch */
    [ELM_TEMPLATE_LFM2] = {.name = "lfm2", .sig = {"<|im_start|>", "<|tool_list_start|>"},
                           LFM2_BODY, .tools = ELM_TOOLS_LFM2},
    [ELM_TEMPLATE_LFM25] = {.name = "lfm25", .sig = {"<|im_start|>", "keep_past_thinking"},
                            LFM2_BODY, .reply = REPLY_LFM25, .tools = ELM_TOOLS_LFM25},
    /* Qwen3.5 trims every message, and its generation prompt opens the think block */
    [ELM_TEMPLATE_QWEN35] = {.name = "qwen35", .sig = {"enable_thinking", "<|vision_start|>"},
                             CHATML_BODY, .gen_prompt = CHATML_HEAD("assistant") "<think>\n",
                             .trim = true, .reply = REPLY_QWEN35,
                             .think_pair = ELM_TEMPLATE_QWEN35_NO_THINK, .tools = ELM_TOOLS_QWEN_XML},
    [ELM_TEMPLATE_QWEN35_NO_THINK] = {.name = "qwen35-no-think", CHATML_BODY,
                                      .gen_prompt = CHATML_HEAD("assistant") EMPTY_THINK "\n",
                                      .trim = true, .reply = REPLY_QWEN35, .no_think = true,
                                      .think_pair = ELM_TEMPLATE_QWEN35, .tools = ELM_TOOLS_QWEN_XML},
    /* Granite 4.0 writes its default system message when there is none (4.1's template, which
     * has no default, does not name it) */
    [ELM_TEMPLATE_GRANITE4] = {.name = "granite4",
                               .sig = {"<|start_of_role|>", "g4_default_system_message"},
                               .bos = "", ROLES(GRANITE_HEAD, "<|end_of_text|>\n"),
                               .sys_default = "You are a helpful assistant. Please ensure "
                                              "responses are professional, accurate, and safe.",
                               .sys_if_text = true, .gen_prompt = GRANITE_HEAD("assistant"),
                               .end_no_gen = "", .eot = "<|end_of_text|>", .tools = ELM_TOOLS_GRANITE},
    /* thinking off by default (enable_thinking undefined): the reply opens with an empty thought
     * channel */
    [ELM_TEMPLATE_GEMMA4] = {.name = "gemma4", .sig = {"<|turn>", "<turn|>"}, GEMMA4_BODY,
                             .sys_pre = GEMMA4_HEAD("system"),
                             .gen_prompt = GEMMA4_HEAD("model") "<|channel>thought\n<channel|>",
                             .no_think = true, .think_pair = ELM_TEMPLATE_GEMMA4_THINK},
    [ELM_TEMPLATE_GEMMA4_THINK] = {.name = "gemma4-think", GEMMA4_BODY,
                                   .sys_pre = GEMMA4_HEAD("system") "<|think|>\n",
                                   .sys_default = "",
                                   .gen_prompt = GEMMA4_HEAD("model"),
                                   .think_pair = ELM_TEMPLATE_GEMMA4},
    /* Phi-4-mini: Phi-3's tokens without the newlines; its template names the tool-list tokens */
    [ELM_TEMPLATE_PHI4_MINI] = {.name = "phi4-mini", .sig = {"<|/tool|>", "<|end|>"}, .bos = "",
                                ROLES(PHI_HEAD, "<|end|>"), .gen_prompt = PHI_HEAD("assistant"),
                                .end_no_gen = "<|endoftext|>", .eot = "<|end|>",
                                .tools = ELM_TOOLS_PHI4_MINI},
    /* Llama 3.1 and 3.3 date the system turn with a fixed day, 3.2 with today's (strftime_now) */
    [ELM_TEMPLATE_LLAMA31] = {.name = "llama31", .sig = {"<|start_header_id|>", "Cutting Knowledge"},
                              LLAMA31_BODY, .date = "26 Jul 2024"},
    [ELM_TEMPLATE_LLAMA32] = {.name = "llama32", .sig = {"<|start_header_id|>", "strftime_now"},
                              LLAMA31_BODY, .date = ""},
    /* Ministral 3 (and the templates of its generation: [SYSTEM_PROMPT] and [ARGS]): messages as
     * they are, no generation prompt (the prompt ends with [/INST]), the tools after the system
     * block */
    [ELM_TEMPLATE_MINISTRAL3] = {.name = "ministral3", .sig = {"[SYSTEM_PROMPT]", "[ARGS]"},
                                 MISTRAL_BODY, .sys_default = MINISTRAL3_DEFAULT,
                                 .tools = ELM_TOOLS_MISTRAL},
    /* Mistral Small 3.2: the same turns; its template writes call ids ([CALL_ID]) */
    [ELM_TEMPLATE_MISTRAL_SMALL32] = {.name = "mistral-small32",
                                      .sig = {"[SYSTEM_PROMPT]", "[CALL_ID]"}, MISTRAL_BODY,
                                      .sys_default = MISTRAL_SMALL32_DEFAULT,
                                      .sys_default_dated = MISTRAL_SMALL32_DEFAULT_DATED,
                                      .tools = ELM_TOOLS_MISTRAL_IDS},
    /* Mistral Nemo (v3): no system block, the system message merged into the last message when
     * that is a user's; its template writes the system message into "[INST]" without a space
     * (Mistral 7B v0.3's with one) */
    [ELM_TEMPLATE_MISTRAL_NEMO] = {.name = "mistral-nemo",
                                   .sig = {"[TOOL_CALLS][", "\"[INST]\" + system_message"},
                                   .bos = "<s>", .merge_pre = "", .merge_post = "\n\n",
                                   .merge_last = true, .user_pre = "[INST]", .user_post = "[/INST]",
                                   .asst_pre = "", .asst_post = "</s>", .gen_prompt = "",
                                   .end_no_gen = "", .eot = "</s>", .tools = ELM_TOOLS_MISTRAL_V3},
    /* gpt-oss: its system and developer messages are written apart (elm_harmony_put_opening),
     * the rest by elm_harmony_put_messages; these fields serve a chat's turns. A call ends the
     * reply (<|call|>) as the end of sequence (<|return|>) does. */
    [ELM_TEMPLATE_GPT_OSS] = {.name = "gpt-oss", .sig = {"<|channel|>", "<|message|>"}, .bos = "",
                              .sys_pre = "", .user_pre = "<|start|>user<|message|>",
                              .user_post = "<|end|>",
                              .asst_pre = "<|start|>assistant<|channel|>final<|message|>",
                              .asst_post = "<|end|>", .gen_prompt = "<|start|>assistant",
                              .end_no_gen = "", .eot = "<|call|>", .tools = ELM_TOOLS_HARMONY},
};

/* Detection order: the more specific markers first (Phi-3 and Llama 3 templates may also mention
 * tokens of other families in comments; ChatML's marker is the most widely borrowed, and of the
 * ChatML families' markers enable_thinking is the most shared; Mistral's templates write Llama 2's
 * [INST] too). */
static const elm_chat_template detect_order[] = {
    ELM_TEMPLATE_GPT_OSS, ELM_TEMPLATE_LLAMA32,  ELM_TEMPLATE_LLAMA31,   ELM_TEMPLATE_LLAMA3,   ELM_TEMPLATE_PHI4_MINI, ELM_TEMPLATE_PHI3,   ELM_TEMPLATE_GEMMA4,
    ELM_TEMPLATE_GEMMA,    ELM_TEMPLATE_GRANITE4,  ELM_TEMPLATE_SMOLLM3, ELM_TEMPLATE_QWEN35,
    ELM_TEMPLATE_QWEN3,    ELM_TEMPLATE_LFM25,     ELM_TEMPLATE_LFM2,   ELM_TEMPLATE_CHATML,
    ELM_TEMPLATE_MISTRAL_SMALL32, ELM_TEMPLATE_MINISTRAL3, ELM_TEMPLATE_MISTRAL_NEMO,
    ELM_TEMPLATE_LLAMA2};

const char *elm_chat_template_name(elm_chat_template t) {
    return (unsigned)t < ELM_TEMPLATE_COUNT ? specs[t].name : "unknown";
}

bool elm_chat_template_parse(const char *name, elm_chat_template *out) {
    const long t = elm_named_find((elm_named_rows)ELM_NAMED_ROWS(specs), name);
    if (t >= 0) *out = (elm_chat_template)t;
    return t >= 0;
}

const char *elm_chat_template_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_named_list(&names, (elm_named_rows)ELM_NAMED_ROWS(specs));
}

elm_chat_template elm_chat_template_thinking(elm_chat_template t, bool on) {
    if ((unsigned)t >= ELM_TEMPLATE_COUNT || !specs[t].think_pair) return t;
    return specs[t].no_think == !on ? t : specs[t].think_pair;
}

bool elm_chat_template_recognise(const char *jinja, elm_chat_template *out) {
    *out = ELM_TEMPLATE_PLAIN;
    if (!jinja) return true;
    for (size_t i = 0; i < sizeof detect_order / sizeof detect_order[0]; i++) {
        const tmpl_spec *s = &specs[detect_order[i]];
        if (strstr(jinja, s->sig[0]) && (!s->sig[1] || strstr(jinja, s->sig[1]))) {
            *out = detect_order[i];
            return true;
        }
    }
    return false;
}

elm_chat_template elm_chat_template_detect(const char *jinja) {
    elm_chat_template t;
    elm_chat_template_recognise(jinja, &t);
    return t;
}

elm_tool_syntax elm_chat_template_tool_syntax(elm_chat_template t) {
    return (unsigned)t < ELM_TEMPLATE_COUNT ? specs[t].tools : ELM_TOOLS_NONE;
}

bool elm_chat_template_has_tools(elm_chat_template t) {
    return elm_chat_template_tool_syntax(t) != ELM_TOOLS_NONE;
}

static void fill_tool_names(char *buf, size_t cap) {
    for (int t = 0; t < ELM_TEMPLATE_COUNT; t++)
        if (specs[t].tools != ELM_TOOLS_NONE) elm_list_add(buf, cap, specs[t].name);
}

const char *elm_chat_tool_template_names(void) {
    static elm_names names = ELM_NAMES_INIT;
    return elm_names_get(&names, fill_tool_names);
}

int32_t elm_chat_tool_preserved_ids(elm_chat_template t, const elm_vocab *v, int32_t *ids) {
    const char *const *texts = elm_tools_marker_tokens(elm_chat_template_tool_syntax(t));
    int32_t n = 0;
    for (int i = 0; texts[i] && n < ELM_TOOL_PRESERVED_MAX; i++) {
        const int32_t id = elm_chat_special_id(v, texts[i]);
        if (id >= 0 && v->types[id] == ELM_TOKEN_CONTROL) ids[n++] = id;
    }
    return n;
}

bool elm_chat_template_channels(elm_chat_template t) {
    return elm_chat_template_tool_syntax(t) == ELM_TOOLS_HARMONY;
}

size_t elm_chat_reply_settled(elm_chat_template t, const char *text, size_t len) {
    return elm_chat_template_channels(t) ? elm_harmony_settled(text, len) : len;
}

const char *elm_chat_tool_call_open(elm_chat_template t) {
    return elm_tools_call_open(elm_chat_template_tool_syntax(t));
}

void elm_chat_tool_call_id(elm_chat_template t, const char *tag, int32_t i, char *out) {
    if (!elm_tools_mistral_ids(elm_chat_template_tool_syntax(t))) {
        snprintf(out, ELM_TOOL_CALL_ID_MAX, "call_%.64s_%d", tag, (int)i);
        return;
    }
    /* FNV-1a of the tag and the index, written in base 62 */
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    uint64_t h = 14695981039346656037u;
    char idx[16];
    snprintf(idx, sizeof idx, "_%d", (int)i);
    for (const char *p = tag; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    for (const char *p = idx; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    h ^= h >> 33; /* mixed, so that every character varies (FNV's high bits barely do) */
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    h ^= h >> 33;
    for (int k = 0; k < ELM_MISTRAL_ID_LEN; k++, h /= 62) out[k] = digits[h % 62];
    out[ELM_MISTRAL_ID_LEN] = '\0';
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

/* The text [b, e) of a message: the templates cut, split and strip messages, which spans do
 * without copying. */
typedef struct span {
    const char *b, *e;
} span;

static span whole(const char *s) { return (span){s, s + strlen(s)}; }
static void put_span(text *t, span x) { put_n(t, x.b, (size_t)(x.e - x.b)); }

/* x without leading and trailing whitespace (Jinja's trim, str.strip) */
static span trimmed(span x) {
    while (x.b < x.e && is_space(*x.b)) x.b++;
    while (x.e > x.b && is_space(x.e[-1])) x.e--;
    return x;
}

/* x without leading, or trailing, newlines (str.lstrip("\n"), str.rstrip("\n")) */
static span lstrip_nl(span x) {
    while (x.b < x.e && *x.b == '\n') x.b++;
    return x;
}
static span rstrip_nl(span x) {
    while (x.e > x.b && x.e[-1] == '\n') x.e--;
    return x;
}

/* The first or the last occurrence of pat wholly inside x, or NULL. */
static const char *find_first(span x, const char *pat) {
    const size_t n = strlen(pat);
    for (const char *p = x.b; (size_t)(x.e - p) >= n; p++)
        if (!memcmp(p, pat, n)) return p;
    return NULL;
}
static const char *find_last(span x, const char *pat) {
    const size_t n = strlen(pat);
    for (size_t k = (size_t)(x.e - x.b); k >= n; k--)
        if (!memcmp(x.b + k - n, pat, n)) return x.b + k - n;
    return NULL;
}

/* content, trimmed where the family trims messages */
static void put_content(text *t, const tmpl_spec *s, const char *content) {
    put_span(t, s->trim ? trimmed(whole(content)) : whole(content));
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

/* SmolLM3's reasoning mode: the template's unless the system message says /no_think or /think. */
static bool smollm3_thinks(const tmpl_spec *s, const char *system) {
    if (system && strstr(system, "/no_think")) return false;
    if (system && strstr(system, "/think")) return true;
    return !s->no_think;
}

/* SmolLM3's system block, written whether or not there is a system message. */
static void put_smollm3_head(text *t, const tmpl_spec *s, const char *system) {
    const bool think = smollm3_thinks(s, system);
    put(t, SMOLLM3_HEAD "Reasoning Mode: ");
    put(t, think ? "/think" : "/no_think");
    put(t, "\n\n## Custom Instructions\n\n");
    /* the system message without /no_think and /think (replaced in that order), right-trimmed */
    text custom = {0};
    put(&custom, "");
    for (const char *p = system; p && *p;) {
        if (!strncmp(p, "/no_think", 9)) p += 9;
        else if (!strncmp(p, "/think", 6)) p += 6;
        else put_n(&custom, p++, 1);
    }
    while (!custom.oom && custom.len > 0 && is_space(custom.s[custom.len - 1])) custom.len--;
    if (!custom.oom && custom.len > 0) put_n(t, custom.s, custom.len);
    else put(t, think ? SMOLLM3_THINK_DEFAULT : SMOLLM3_NO_THINK_DEFAULT);
    t->oom = t->oom || custom.oom;
    free(custom.s);
    put(t, "\n\n<|im_end|>\n");
}

/* What opens an assistant message and the generation prompt: SmolLM3 without thinking adds an
 * empty think block (one newline after it, where Qwen3's has two). */
static void put_asst_open(text *t, const tmpl_spec *s, const char *system, bool generation) {
    put(t, generation ? s->gen_prompt : s->asst_pre);
    if (s->smollm3 && !smollm3_thinks(s, system)) put(t, EMPTY_THINK);
}

/* A finished Qwen3 or Qwen3.5 assistant message: its reasoning is the text from the last "<think>"
 * before the first "</think>" to that one, its answer what follows the last "</think>" (both
 * without the newlines around them; Qwen3.5 trims the message and its reasoning). A message after
 * the last user message is written as its reasoning in a think block and the answer (Qwen3 writes
 * the block for the last message or one with reasoning only), an earlier one as its answer. */
static void put_qwen3_reply(text *t, const tmpl_spec *s, const char *content, bool after_query,
                            bool last) {
    const span c = s->trim ? trimmed(whole(content)) : whole(content);
    span answer = c, reasoning = {c.b, c.b};
    const char *close = find_first(c, "</think>");
    if (close) {
        answer = lstrip_nl((span){find_last(c, "</think>") + 8, c.e});
        reasoning = rstrip_nl((span){c.b, close});
        const char *open = find_last(reasoning, "<think>");
        if (open) reasoning.b = open + 7;
        reasoning = lstrip_nl(reasoning);
        if (s->trim) reasoning = trimmed(reasoning);
    }
    if (after_query && (s->reply == REPLY_QWEN35 || last || reasoning.e > reasoning.b)) {
        put(t, "<think>\n");
        put_span(t, reasoning);
        put(t, "\n</think>\n\n");
        answer = lstrip_nl(answer);
    }
    put_span(t, answer);
}

/* Gemma 4's strip_thinking: of each part of the message between "<channel|>" markers, the text
 * before its first "<|channel>" (so a thought channel goes), all of it trimmed. */
static void put_without_channels(text *t, const char *content) {
    text kept = {0};
    put(&kept, "");
    for (const char *p = content;;) {
        const char *close = strstr(p, "<channel|>");
        const span part = {p, close ? close : p + strlen(p)};
        const char *open = find_first(part, "<|channel>");
        put_span(&kept, (span){p, open ? open : part.e});
        if (!close) break;
        p = close + strlen("<channel|>");
    }
    if (!kept.oom) put_span(t, trimmed((span){kept.s, kept.s + kept.len}));
    t->oom = t->oom || kept.oom;
    free(kept.s);
}

/* A finished assistant message: after_query when it follows the last user message, last when it
 * ends the conversation, latest when no assistant message follows it (LFM2.5 keeps the reasoning
 * of that one only: split("</think>")[-1] | trim of the others). */
static void put_reply(text *t, const tmpl_spec *s, const char *content, bool after_query,
                      bool last, bool latest) {
    const char *close;
    switch (s->reply) {
    case REPLY_CONTENT: put_content(t, s, content); break;
    case REPLY_SMOLLM3: put_span(t, lstrip_nl(whole(content))); break;
    case REPLY_QWEN3:
    case REPLY_QWEN35: put_qwen3_reply(t, s, content, after_query, last); break;
    case REPLY_LFM25:
        close = latest ? NULL : find_last(whole(content), "</think>");
        put_span(t, close ? trimmed((span){close + 8, content + strlen(content)}) : whole(content));
        break;
    case REPLY_GEMMA4: put_without_channels(t, content); break;
    }
}

/* The day of `now` (0: today) in strftime's format fmt into buf [cap] (the templates'
 * strftime_now: local time). */
static void format_today(char *buf, size_t cap, const char *fmt, time_t now) {
    if (!now) now = time(NULL);
    struct tm tm;
    strftime(buf, cap, fmt, localtime_r(&now, &tm));
}

static void put_today(text *t, const char *fmt, time_t now) {
    char today[32];
    format_today(today, sizeof today, fmt, now);
    put(t, today);
}

/* Llama 3.1's date lines, and with tools the line that switches its tool use on. */
static void put_date(text *t, const char *date, bool tools, time_t now) {
    if (tools) put(t, "Environment: ipython\n");
    put(t, "Cutting Knowledge Date: December 2023\nToday Date: ");
    if (*date) put(t, date);
    else put_today(t, "%d %b %Y", now);
    put(t, "\n\n");
}

/* The opening of a conversation: BOS text and, for families that have one, the system block (with
 * the family's default text where it writes one without a system message); with tools, the
 * system turn that holds them, or Mistral's tools block after the system block. */
static void put_opening(text *t, const tmpl_spec *s, const char *system, const cJSON *tools,
                        const elm_chat_opts *o) {
    /* Gemma 4 and Phi-4-mini write the tools at the end of their system block, Mistral's
     * templates in a block of their own */
    const bool in_block = tools && (s->tools == ELM_TOOLS_GEMMA4 || s->tools == ELM_TOOLS_PHI4_MINI);
    if (s->tools == ELM_TOOLS_HARMONY) {
        char today[32];
        format_today(today, sizeof today, "%Y-%m-%d", o->now);
        elm_harmony_put_opening(t, system, tools,
                                o->reasoning_effort ? o->reasoning_effort : "medium", today);
        return;
    }
    if (tools && s->tools != ELM_TOOLS_LLAMA && !in_block && !elm_tools_is_mistral(s->tools)) {
        put(t, s->bos);
        elm_tools_put_system(t, s->tools, system, tools);
        return;
    }
    if (s->smollm3) {
        put_smollm3_head(t, s, system);
        return;
    }
    put(t, s->bos);
    if (system && !*system && s->sys_if_text) system = NULL;
    const bool dated = !system && s->sys_default_dated;
    if (!system) system = in_block ? "" : s->sys_default;
    if (system && s->sys_pre) {
        put(t, s->sys_pre);
        if (s->date) put_date(t, s->date, tools != NULL, o->now);
        put_content(t, s, system);
        if (dated) {
            put_today(t, "%Y-%m-%d", o->now);
            put(t, s->sys_default_dated);
        }
        if (in_block) elm_tools_put_in_system(t, s->tools, tools);
        put(t, s->sys_post);
    }
    if (tools && s->tools == ELM_TOOLS_MISTRAL) elm_tools_put_list(t, s->tools, tools);
}

static elm_status finish(text *t, char **out, elm_error *err) {
    if (!(*out = elm_sb_finish(t))) return elm_errorf(err, ELM_ERR_NOMEM, "chat template: out of memory");
    return ELM_OK;
}

/* Whether an assistant message's calls follow text, as each template tests it: Qwen3 the answer
 * after any reasoning, Qwen3.5 the same trimmed, Granite the content as it is. */
static bool calls_follow_text(elm_tool_syntax syn, const char *content) {
    if (syn == ELM_TOOLS_GRANITE || syn == ELM_TOOLS_PHI4_MINI) return *content != '\0';
    const char *close = find_last(whole(content), "</think>");
    span answer = lstrip_nl(close ? whole(close + 8) : whole(content));
    if (syn == ELM_TOOLS_QWEN_XML) answer = trimmed(answer);
    return answer.e > answer.b;
}

/* Gemma 4's assistant message i: its calls, the results of the tool messages right after it
 * (each named by the call its tool_call_id names, "unknown" for none, or without an id by the
 * call at its place), then its text. A message after another assistant's (tool messages
 * between) continues that turn; one with results and no text leaves the turn open for the reply.
 * Returns whether the message made calls (then the template writes no generation prompt). */
static bool put_gemma4_reply(text *t, const tmpl_spec *s, const elm_chat_msg *msgs, int32_t first,
                             int32_t i, int32_t n) {
    const elm_chat_msg *m = &msgs[i];
    int32_t j = i - 1;
    while (j >= first && !strcmp(msgs[j].role, "tool")) j--;
    if (j < first || strcmp(msgs[j].role, "assistant")) put(t, s->asst_pre);
    elm_tools_put_calls(t, s->tools, m->tool_calls, m->n_tool_calls, false);
    bool results = false;
    for (int32_t k = i + 1; m->n_tool_calls > 0 && k < n && !strcmp(msgs[k].role, "tool"); k++) {
        const char *id = msgs[k].tool_call_id, *name = "unknown";
        if (!id && k - i - 1 < m->n_tool_calls) name = m->tool_calls[k - i - 1].name;
        for (int32_t c = 0; id && c < m->n_tool_calls; c++)
            if (m->tool_calls[c].id && !strcmp(m->tool_calls[c].id, id)) name = m->tool_calls[c].name;
        elm_tools_put_gemma4_result(t, name, msgs[k].content);
        results = true;
    }
    put_reply(t, s, m->content, false, false, false);
    if (m->n_tool_calls > 0 && !results) put(t, "<|tool_response>");
    else if (!results || *m->content) put(t, s->asst_post);
    return m->n_tool_calls > 0;
}

/* Whether id (NULL: none) is one template s can write: any where it writes none, else one of
 * ELM_MISTRAL_ID_LEN characters (Mistral Small 3.2's and Nemo's templates raise on others). */
static bool id_fits(const tmpl_spec *s, const char *id) {
    if (!elm_tools_mistral_ids(s->tools)) return true;
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    return id && strlen(id) == ELM_MISTRAL_ID_LEN && strspn(id, alnum) == ELM_MISTRAL_ID_LEN;
}

/* The messages' tool calls against template s: its syntax takes calls, each one's arguments a
 * JSON object, and the calls' and results' ids fit it (id_fits). */
static elm_status check_calls(const tmpl_spec *s, const elm_chat_msg *msgs, int32_t n,
                              elm_error *err) {
    for (int32_t i = 0; i < n; i++) {
        if (msgs[i].n_tool_calls > 0 && !s->tools)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "chat message %d: template %s has no "
                              "tool calls", i, s->name);
        if (msgs[i].n_tool_calls > 1 && s->tools == ELM_TOOLS_LLAMA)
            return elm_errorf(err, ELM_ERR_UNSUPPORTED, "chat message %d: template %s takes one "
                              "tool call a message", i, s->name);
        if (!strcmp(msgs[i].role, "tool") && !id_fits(s, msgs[i].tool_call_id))
            return elm_errorf(err, ELM_ERR_FORMAT, "chat message %d: tool_call_id: template %s "
                              "takes an id of %d letters and digits", i, s->name, ELM_MISTRAL_ID_LEN);
        for (int32_t k = 0; k < msgs[i].n_tool_calls; k++) {
            if (!id_fits(s, msgs[i].tool_calls[k].id))
                return elm_errorf(err, ELM_ERR_FORMAT, "chat message %d: tool call %d: id: "
                                  "template %s takes an id of %d letters and digits", i, k, s->name,
                                  ELM_MISTRAL_ID_LEN);
            cJSON *a = cJSON_Parse(msgs[i].tool_calls[k].arguments);
            const bool ok = cJSON_IsObject(a);
            cJSON_Delete(a);
            if (!ok)
                return elm_errorf(err, ELM_ERR_FORMAT, "chat message %d: tool call %d: arguments "
                                  "are not a JSON object", i, k);
        }
    }
    return ELM_OK;
}

/* elm_chat_render with tools: a parsed array, or NULL. */
static elm_status render(elm_chat_template tm, const elm_chat_msg *msgs, int32_t n,
                         const cJSON *tools, bool add_generation_prompt, const elm_chat_opts *o,
                         char **out, elm_error *err) {
    *out = NULL;
    if ((unsigned)tm >= ELM_TEMPLATE_COUNT)
        return elm_errorf(err, ELM_ERR_ARG, "chat template %d unknown", (int)tm);
    const tmpl_spec *s = &specs[tm];
    elm_status st = check_calls(s, msgs, n, err);
    if (st) return st;
    const char *system = NULL;
    int32_t first = 0;
    if (n > 0 && !strcmp(msgs[0].role, "system")) {
        system = msgs[0].content;
        first = 1;
    }
    /* Llama 3.1 writes the tools into the first message after the system one, a user's */
    bool llama_tools = tools && s->tools == ELM_TOOLS_LLAMA;
    if (llama_tools && (first >= n || strcmp(msgs[first].role, "user")))
        return elm_errorf(err, ELM_ERR_ARG, "chat: template %s writes the tools into the first "
                          "user message, and there is none after the system message", s->name);
    text t = {0};
    put(&t, ""); /* an empty conversation renders as "" rather than NULL */
    put_opening(&t, s, system, tools, o);
    bool pending_system = system != NULL;
    int32_t last_user = -1, last_asst = -1;
    for (int32_t i = first; i < n; i++) {
        if (!strcmp(msgs[i].role, "user")) last_user = i;
        if (!strcmp(msgs[i].role, "assistant")) last_asst = i;
    }
    if (s->tools == ELM_TOOLS_HARMONY) {
        if ((st = elm_harmony_put_messages(&t, msgs, first, n, add_generation_prompt, err))) {
            free(t.s);
            return st;
        }
        return finish(&t, out, err);
    }
    bool turn_open = false; /* Gemma 4: the last message made calls, the model's turn goes on */
    /* Qwen3's last_query_index: no user message, no block */
    const int32_t last_query = last_user >= 0 ? last_user : n - 1;
    for (int32_t i = first; i < n; i++) {
        const elm_chat_msg *m = &msgs[i];
        if (strcmp(m->role, "tool")) turn_open = false;
        if (!strcmp(m->role, "user") && llama_tools) {
            elm_tools_put_llama_user(&t, tools, m->content);
            llama_tools = false;
        } else if (!strcmp(m->role, "user")) {
            /* Mistral Small 3.2 and Nemo write the tools before the last user message */
            if (tools && (s->tools == ELM_TOOLS_MISTRAL_IDS || s->tools == ELM_TOOLS_MISTRAL_V3) &&
                i == last_user)
                elm_tools_put_list(&t, s->tools, tools);
            const bool merge = s->merge_last ? i == n - 1 : pending_system;
            put_user(&t, s, merge ? system : NULL, m->content);
            pending_system = false;
        } else if (!strcmp(m->role, "assistant") && m->n_tool_calls > 0 &&
                   (s->tools == ELM_TOOLS_LLAMA || elm_tools_mistral_ids(s->tools))) {
            /* the calls in place of the content */
            put(&t, s->asst_pre);
            elm_tools_put_calls(&t, s->tools, m->tool_calls, m->n_tool_calls, false);
            put(&t, s->asst_post);
        } else if (!strcmp(m->role, "assistant") && s->tools == ELM_TOOLS_GEMMA4) {
            turn_open = put_gemma4_reply(&t, s, msgs, first, i, n);
        } else if (!strcmp(m->role, "tool") && s->tools == ELM_TOOLS_GEMMA4) {
            /* written with the calls it answers (or, as the template does, not at all) */
        } else if (!strcmp(m->role, "assistant")) {
            put_asst_open(&t, s, system, false);
            put_reply(&t, s, m->content, i > last_query, i == n - 1, i == last_asst);
            elm_tools_put_calls(&t, s->tools, m->tool_calls, m->n_tool_calls,
                                calls_follow_text(s->tools, m->content));
            put(&t, s->asst_post);
        } else if (!strcmp(m->role, "tool") && s->tools) {
            elm_tools_put_result(&t, s->tools, m->content, m->tool_call_id,
                                 i == 0 || strcmp(msgs[i - 1].role, "tool"),
                                 i == n - 1 || strcmp(msgs[i + 1].role, "tool"));
        } else {
            free(t.s);
            return elm_errorf(err, ELM_ERR_ARG, "chat message %d: role '%s' (expected %s%s)", i,
                              m->role, i == 0 ? "system, user or assistant" : "user or assistant",
                              s->tools ? " or tool" : "");
        }
    }
    if (add_generation_prompt && !turn_open) put_asst_open(&t, s, system, true);
    else put(&t, s->end_no_gen);
    return finish(&t, out, err);
}

static const elm_chat_opts no_opts = {.reasoning_effort = NULL, .now = 0};

elm_status elm_chat_render(elm_chat_template tm, const elm_chat_msg *msgs, int32_t n,
                           bool add_generation_prompt, char **out, elm_error *err) {
    return render(tm, msgs, n, NULL, add_generation_prompt, &no_opts, out, err);
}

elm_status elm_chat_render_tools(elm_chat_template tm, const elm_chat_msg *msgs, int32_t n,
                                 const char *tools, bool add_generation_prompt, char **out,
                                 elm_error *err) {
    return elm_chat_render_with(tm, msgs, n, tools, add_generation_prompt, &no_opts, out, err);
}

elm_status elm_chat_effort_check(const char *effort, elm_error *err) {
    static const char *const efforts[] = {"low", "medium", "high"};
    for (size_t i = 0; effort && i < sizeof efforts / sizeof efforts[0]; i++)
        if (!strcmp(effort, efforts[i])) return ELM_OK;
    return elm_errorf(err, ELM_ERR_ARG, "reasoning_effort: '%.32s' (expected low, medium or high)",
                      effort ? effort : "(null)");
}

elm_status elm_chat_render_with(elm_chat_template tm, const elm_chat_msg *msgs, int32_t n,
                                const char *tools, bool add_generation_prompt,
                                const elm_chat_opts *opts, char **out, elm_error *err) {
    *out = NULL;
    if (!opts) opts = &no_opts;
    if (opts->reasoning_effort && elm_chat_effort_check(opts->reasoning_effort, err))
        return ELM_ERR_ARG;
    if (!tools) return render(tm, msgs, n, NULL, add_generation_prompt, opts, out, err);
    if (!elm_chat_template_has_tools(tm))
        return elm_errorf(err, ELM_ERR_UNSUPPORTED, "tools: template %s has no tool calls",
                          elm_chat_template_name(tm));
    cJSON *arr = cJSON_Parse(tools);
    elm_status st = elm_tools_check(arr, "tools", err);
    /* no tools is a prompt without them, as the template's `if tools` */
    if (!st) st = render(tm, msgs, n, cJSON_GetArraySize(arr) ? arr : NULL, add_generation_prompt,
                         opts, out, err);
    cJSON_Delete(arr);
    return st;
}

elm_status elm_chat_render_turn(elm_chat_template tm, const char *system, const char *user,
                                bool first, char **out, elm_error *err) {
    return elm_chat_render_turn_with(tm, system, user, first, NULL, out, err);
}

elm_status elm_chat_render_turn_with(elm_chat_template tm, const char *system, const char *user,
                                     bool first, const elm_chat_opts *opts, char **out,
                                     elm_error *err) {
    *out = NULL;
    if (!opts) opts = &no_opts;
    if (opts->reasoning_effort && elm_chat_effort_check(opts->reasoning_effort, err))
        return ELM_ERR_ARG;
    if ((unsigned)tm >= ELM_TEMPLATE_COUNT)
        return elm_errorf(err, ELM_ERR_ARG, "chat template %d unknown", (int)tm);
    const tmpl_spec *s = &specs[tm];
    text t = {0};
    put(&t, "");
    if (first) put_opening(&t, s, system, NULL, opts);
    else put(&t, s->asst_post);
    put_user(&t, s, first ? system : NULL, user);
    put_asst_open(&t, s, system, true);
    return finish(&t, out, err);
}
