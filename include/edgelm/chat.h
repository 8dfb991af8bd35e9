/* Chat: the conversation templates of the common model families, and a multi-turn conversation
 * that lives in one context's KV cache, so each turn prefills only its own new tokens.
 *
 * Templates are built in (no Jinja interpreter): each family's published format is written out as
 * the pieces around system, user and assistant messages, and a model's own Jinja template (GGUF
 * tokenizer.chat_template, Hugging Face tokenizer_config.json "chat_template" or
 * chat_template.jinja) is recognised by its signature. Sources: the chat_template of
 * meta-llama/Llama-2-7b-chat-hf, meta-llama/Meta-Llama-3-8B-Instruct,
 * microsoft/Phi-3-mini-4k-instruct, google/gemma-7b-it (with Gemma 3's rule for a system message:
 * its text and a blank line open the first user turn; Gemma 3's template renders exactly this),
 * ChatML as OpenAI and Qwen use it, Qwen/Qwen3-0.6B and HuggingFaceTB/SmolLM3-3B (as llama.cpp's
 * models/templates has it: no date line), microsoft/Phi-4-mini-instruct, and LiquidAI's LFM2 and
 * LFM2.5, Qwen/Qwen3.5-4B, IBM Granite 4.0, google/gemma-4-31B-it,
 * mistralai/Ministral-3-14B-Reasoning-2512, Mistral-Small-3.2-24B-Instruct-2506 and
 * Mistral-Nemo-Instruct-2407, and OpenAI's gpt-oss (harmony) as tests/data/templates holds them.
 * Plain chat only: tools and documents are not rendered. */
#ifndef EDGELM_CHAT_H
#define EDGELM_CHAT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "edgelm/generate.h"
#include "edgelm/speculative.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum elm_chat_template {
    ELM_TEMPLATE_PLAIN = 0, /* "System\n\nUser: ...\nAssistant: ...": for models without a format */
    ELM_TEMPLATE_LLAMA2,    /* <s>[INST] <<SYS>>\n..\n<</SYS>>\n\nuser [/INST] reply </s> */
    ELM_TEMPLATE_LLAMA3,    /* <|start_header_id|>role<|end_header_id|>\n\n..<|eot_id|> */
    ELM_TEMPLATE_CHATML,    /* <|im_start|>role\n..<|im_end|>\n (Qwen, many fine-tunes) */
    ELM_TEMPLATE_PHI3,      /* <|user|>\n..<|end|>\n */
    ELM_TEMPLATE_GEMMA,     /* <start_of_turn>user\n..<end_of_turn>\n, "model" for the assistant
                             * (Gemma 3's template renders the same text) */
    ELM_TEMPLATE_QWEN3,     /* ChatML with thinking: the last assistant message in a <think> block,
                             * earlier ones without theirs */
    ELM_TEMPLATE_QWEN3_NO_THINK,   /* Qwen3 with enable_thinking false: an empty <think> block
                                    * opens the reply */
    ELM_TEMPLATE_SMOLLM3,          /* ChatML under SmolLM3's metadata system block, "/think" */
    ELM_TEMPLATE_SMOLLM3_NO_THINK, /* the same in "/no_think" mode */
    ELM_TEMPLATE_LFM2,             /* ChatML after <|startoftext|> (LiquidAI LFM2) */
    ELM_TEMPLATE_LFM25,            /* LFM2.5: the same, replies before the latest without their
                                    * reasoning (the text up to "</think>") */
    ELM_TEMPLATE_QWEN35,           /* Qwen3.5: Qwen3's format on trimmed messages, the generation
                                    * prompt opening a <think> block */
    ELM_TEMPLATE_QWEN35_NO_THINK,  /* Qwen3.5 with enable_thinking false: an empty block */
    ELM_TEMPLATE_GRANITE4,         /* <|start_of_role|>role<|end_of_role|>..<|end_of_text|>\n (IBM
                                    * Granite 4.0, its default system message when none is given) */
    ELM_TEMPLATE_GEMMA4,           /* <|turn>role\n..<turn|>\n (Gemma 4); thinking off, its
                                    * default: the reply opens with an empty thought channel */
    ELM_TEMPLATE_GEMMA4_THINK,     /* Gemma 4 with enable_thinking: <|think|> in the system turn */
    ELM_TEMPLATE_PHI4_MINI,        /* <|user|>..<|end|>, Phi-3's tokens without newlines */
    ELM_TEMPLATE_LLAMA31,          /* Llama 3.1 and 3.3: Llama 3's turns, a system turn always,
                                    * dated 26 Jul 2024 */
    ELM_TEMPLATE_LLAMA32,          /* Llama 3.2: the same dated today (its strftime_now) */
    ELM_TEMPLATE_MINISTRAL3,       /* Ministral 3: <s>[SYSTEM_PROMPT]..[/SYSTEM_PROMPT][INST]..[/INST]
                                    * reply</s>, its default system prompt when none is given */
    ELM_TEMPLATE_MISTRAL_SMALL32,  /* Mistral Small 3.2: the same turns, its default system prompt
                                    * dated today; tools before the last user message, calls and
                                    * results with their 9-character ids */
    ELM_TEMPLATE_MISTRAL_NEMO,     /* Mistral Nemo: <s>[INST]..[/INST]reply</s>, the system message
                                    * in the user message that ends the conversation; calls a JSON
                                    * list after [TOOL_CALLS] */
    ELM_TEMPLATE_GPT_OSS,          /* gpt-oss's harmony: <|start|>role<|message|>..<|end|>, replies
                                    * in channels (analysis: reasoning, final: the answer) */
    ELM_TEMPLATE_COUNT
} elm_chat_template;

/* "plain", "llama2", "llama3", "chatml", "phi3", "gemma", "qwen3", "qwen3-no-think", "smollm3",
 * "smollm3-no-think", "lfm2", "lfm25", "qwen35", "qwen35-no-think", "granite4", "gemma4",
 * "gemma4-think", "phi4-mini", "llama31", "llama32", "ministral3", "mistral-small32",
 * "mistral-nemo". */
const char *elm_chat_template_name(elm_chat_template t);

/* The names above, comma-separated, for messages: a static string, built once (thread-safe). */
const char *elm_chat_template_names(void);

/* The template of t's family with thinking on or off (the enable_thinking of Qwen3, Qwen3.5 and
 * Gemma 4, SmolLM3's /think and /no_think); t itself for families without the switch. */
elm_chat_template elm_chat_template_thinking(elm_chat_template t, bool on);

/* Recognises jinja as elm_chat_template_detect does, into *out; false when jinja is a template
 * none of the built-in ones matches (NULL, no template, gives plain and true). */
bool elm_chat_template_recognise(const char *jinja, elm_chat_template *out);

/* Parses one of the names above (case-sensitive); false when unknown. */
bool elm_chat_template_parse(const char *name, elm_chat_template *out);

/* Recognises a Jinja chat template by the markers its family writes (e.g. "<|im_start|>" for
 * ChatML, "[INST]" for Llama 2); ELM_TEMPLATE_PLAIN for NULL or an unknown template. */
elm_chat_template elm_chat_template_detect(const char *jinja);

/* The end-of-turn marker a reply ends with ("<|im_end|>", "<|eot_id|>", ...), or NULL when the
 * model's end-of-sequence token ends replies (plain). */
const char *elm_chat_template_eot(elm_chat_template t);

/* The token a control text like "<|im_end|>" (elm_chat_template_eot) stands for in vocabulary v,
 * or -1 (NULL text, not a single token, or a normal token). */
int32_t elm_chat_special_id(const elm_vocab *v, const char *text);

/* A function call an assistant message made (OpenAI's tool_calls[i].function). */
typedef struct elm_tool_call {
    const char *name;
    const char *arguments; /* JSON text of an object, written into the prompt as the family's
                            * template writes it (Python's json.dumps of the parsed object) */
    const char *id;        /* OpenAI's tool_calls[i].id, or NULL: written by the templates that
                            * write ids (mistral-small32, mistral-nemo: 9 characters, required) */
} elm_tool_call;

typedef struct elm_chat_msg {
    const char *role;    /* "system" (first message only), "user", "assistant", or "tool" (a
                          * function's result; with tools) */
    const char *content; /* UTF-8 text */
    const elm_tool_call *tool_calls; /* an assistant message's calls [n_tool_calls], or NULL */
    int32_t n_tool_calls;
    const char *tool_call_id; /* a "tool" message's tool_call_id, or NULL (as elm_tool_call.id) */
    const char *reasoning; /* an assistant message's reasoning (OpenAI-style servers'
                            * reasoning_content), or NULL: written by templates with channels
                            * (gpt-oss) before the message's calls, as its analysis channel */
} elm_chat_msg;

/* Renders msgs [n] as the family does (content trimmed where the family trims it), followed by the
 * assistant's generation prompt when add_generation_prompt. *out is malloc'd (caller frees).
 * ELM_ERR_ARG for an unknown role or a system message that is not first; ELM_ERR_UNSUPPORTED for
 * tool calls on a template without tools, or more than one call in a message of Llama 3.1-3.3;
 * ELM_ERR_FORMAT for a call's arguments that are not a JSON object, or a call or tool message
 * without the 9-character id Mistral Small 3.2's and Nemo's templates require; ELM_ERR_NOMEM.
 * mistral-nemo writes the system message into the user message that ends the conversation (none
 * when another message ends it), as its template does. */
elm_status elm_chat_render(elm_chat_template t, const elm_chat_msg *msgs, int32_t n,
                           bool add_generation_prompt, char **out, elm_error *err);

/* Whether template t renders tools and its replies' tool calls are parsed: qwen3 and
 * qwen3-no-think (<tool_call> JSON blocks), granite4 (the same), qwen35 and qwen35-no-think
 * (<tool_call><function=...> XML blocks), llama31 and llama32 (the reply a JSON call), gemma4 and
 * gemma4-think (<|tool_call>call:NAME{...}<tool_call|> in Gemma's own value syntax), phi4-mini
 * (functools[{"name": ..., "arguments": {...}}, ...]), lfm2 and lfm25
 * (<|tool_call_start|>[name(key=value, ...)]<|tool_call_end|>, Python calls), ministral3
 * ([TOOL_CALLS]NAME[ARGS]{...}), mistral-small32 (the same with [CALL_ID]ID) and mistral-nemo
 * ([TOOL_CALLS][{"name": ..., "arguments": {...}, "id": ...}]), gpt-oss (<|channel|>commentary
 * to=functions.NAME <|constrain|>json<|message|>{...}, one call a reply). */
bool elm_chat_template_has_tools(elm_chat_template t);

/* The names of the templates with tools, ", "-separated, for messages ("qwen3, qwen3-no-think,
 * ..."). */
const char *elm_chat_tool_template_names(void);

/* elm_chat_render with the functions the model may call: `tools` is the JSON text of OpenAI's
 * "tools" array ([{"type": "function", "function": {"name", "description", "parameters"}}]),
 * written into the prompt as the family's template does (each tool as Python's json.dumps writes
 * it, as transformers' tojson); NULL renders as elm_chat_render. Tool calls of assistant messages
 * and "tool" messages are written as the template writes them. ELM_ERR_UNSUPPORTED for a
 * template without tools (elm_chat_template_has_tools) given tools or calls; ELM_ERR_FORMAT when
 * tools is not such an array; ELM_ERR_ARG for Llama 3.1-3.3 given tools and no user message (its
 * template writes them into the first); elm_chat_render's otherwise. */
elm_status elm_chat_render_tools(elm_chat_template t, const elm_chat_msg *msgs, int32_t n,
                                 const char *tools, bool add_generation_prompt, char **out,
                                 elm_error *err);

/* What a rendering may set beyond the messages (elm_chat_render_with); zero for the defaults. */
typedef struct elm_chat_opts {
    const char *reasoning_effort; /* gpt-oss's "Reasoning:" line: "low", "medium" or "high"
                                   * (OpenAI's reasoning_effort); NULL: medium, its default */
    time_t now;                   /* the day the templates that date their prompt write (Llama
                                   * 3.2, Mistral Small 3.2, gpt-oss: their strftime_now, local
                                   * time); 0: today */
} elm_chat_opts;

/* elm_chat_render_tools with opts (NULL: the defaults). ELM_ERR_ARG for a reasoning effort other
 * than low, medium or high (elm_chat_effort_check); elm_chat_render_tools' errors otherwise. */
elm_status elm_chat_render_with(elm_chat_template t, const elm_chat_msg *msgs, int32_t n,
                                const char *tools, bool add_generation_prompt,
                                const elm_chat_opts *opts, char **out, elm_error *err);

/* ELM_OK when effort is "low", "medium" or "high"; else ELM_ERR_ARG naming reasoning_effort and
 * the value. */
elm_status elm_chat_effort_check(const char *effort, elm_error *err);

/* Whether name can be a tool's function name: 1 to 64 of A-Z a-z 0-9 _ - . (OpenAI's rule, which
 * also keeps names quoted in messages to one line). */
bool elm_tool_name_ok(const char *name);

/* A reply split into its text and its tool calls (elm_chat_parse_tool_calls). */
typedef struct elm_tool_calls {
    char *content;         /* the text before the first call (LFM2: the text around its calls),
                            * trailing whitespace trimmed */
    int32_t n;
    elm_tool_call *calls;  /* [n]: name and arguments (compact JSON) malloc'd */
    char *reasoning;       /* gpt-oss: the text of its analysis channel (malloc'd), NULL when
                            * none; other families' reasoning stays in content */
} elm_tool_calls;

/* The tool calls in `reply`, as template t's family writes them (every <tool_call> or
 * <|tool_call> block to the end, Llama's {"name": ..., "parameters": ...}, Phi-4-mini's
 * functools[...] and Mistral Nemo's [TOOL_CALLS][...] lists, each [TOOL_CALLS]NAME[ARGS]{...} of
 * Mistral's, LFM2's lists of Python calls, or gpt-oss's messages to=functions.NAME, its analysis
 * channel then read as `reasoning` and its final channel as content; a last call cut short is
 * dropped; Gemma 4's values and LFM2's Python literals are read back into JSON, None as null).
 * `tools` (the request's tools JSON, or NULL) types Qwen3.5's parameter values: a string
 * parameter's text stays a string, others are read as JSON. ELM_ERR_FORMAT when a complete call
 * does not hold a name and an object of arguments, naming it; ELM_ERR_UNSUPPORTED for a template
 * without tools; ELM_ERR_NOMEM. Free with elm_tool_calls_free. */
elm_status elm_chat_parse_tool_calls(elm_chat_template t, const char *tools, const char *reply,
                                     elm_tool_calls *out, elm_error *err);
void elm_tool_calls_free(elm_tool_calls *c);

/* Whether template t's replies are written in channels (gpt-oss's harmony: reasoning in the
 * analysis channel, the answer in final): every reply is then read with
 * elm_chat_parse_tool_calls, tools or not, for its content and its reasoning, and its channel
 * markers must be decoded as their text (elm_chat_tool_preserved_ids). */
bool elm_chat_template_channels(elm_chat_template t);

/* How much of a reply being generated, text [len], elm_chat_parse_tool_calls can read as it
 * stands without taking a marker cut short for text: all of it but for templates with channels
 * (elm_chat_template_channels), there all but a channel marker begun at its end, and nothing
 * while its first message header is incomplete. */
size_t elm_chat_reply_settled(elm_chat_template t, const char *text, size_t len);

/* The longest id elm_chat_tool_call_id writes, with its NUL. */
#define ELM_TOOL_CALL_ID_MAX 96

/* Writes into out [ELM_TOOL_CALL_ID_MAX] the id of call i of a reply (OpenAI's
 * tool_calls[i].id), made from `tag` (unique to the reply, up to 64 bytes) in the form template
 * t takes back: "call_TAG_I", or for templates that write ids of their own form (mistral-small32,
 * mistral-nemo) 9 letters and digits hashed from both. */
void elm_chat_tool_call_id(elm_chat_template t, const char *tag, int32_t i, char *out);

/* The text a reply's first tool call opens with in template t ("<tool_call>", Gemma 4's
 * "<|tool_call>", Phi-4-mini's "functools[", LFM2's "<|tool_call_start|>", Mistral's
 * "[TOOL_CALLS]", or Llama's {"name": "); NULL for a template without tools. A stream holds back
 * text that could begin it. */
const char *elm_chat_tool_call_open(elm_chat_template t);

/* The most ids elm_chat_tool_preserved_ids writes. */
#define ELM_TOOL_PRESERVED_MAX 8

/* The control tokens template t's tool calls are written with, as ids of vocabulary v (at most
 * ELM_TOOL_PRESERVED_MAX into ids; returns how many): the texts of the family's call markers
 * (LFM2's <|tool_call_start|>, Mistral's [TOOL_CALLS] and [ARGS], a Hermes <tool_call> where a
 * vocabulary makes it a control token)
 * that v has as single control tokens; absent ones and those v writes as text anyway left out. A
 * control token has no text (elm_token_to_bytes), so while a request has tools these are
 * "preserved", as llama.cpp's preserved tokens: decoded as their text (elm_detok_preserve), so
 * the reply holds the markers the parser and a stream's hold-back look for, and matched by their
 * text in the grammar (elm_grammar_vocab_new_preserved), so a lazy matcher sees its trigger and
 * the grammar can require the closing marker: elm_gen_params.preserved for generation with
 * elm_chat_tool_grammar's grammar. 0 for a template without tools. */
int32_t elm_chat_tool_preserved_ids(elm_chat_template t, const elm_vocab *v, int32_t *ids);

/* How a reply may call the tools (OpenAI's tool_choice). */
typedef enum elm_tool_mode {
    ELM_TOOL_CHOICE_NONE = 0,     /* text only (the tools, if any, are still in the prompt) */
    ELM_TOOL_CHOICE_AUTO = 1,     /* text or calls: a call, once opened, held to the schemas */
    ELM_TOOL_CHOICE_REQUIRED = 2  /* calls only (of `only` when it names one) */
} elm_tool_mode;

typedef struct elm_tool_choice {
    elm_tool_mode mode;
    char only[65]; /* the one function a choice names, "" for any */
} elm_tool_choice;

/* Reads tool_choice (JSON text: "none", "auto", "required" or {"type": "function", "function":
 * {"name": N}}; NULL: absent, "auto" with tools and "none" without) against tools (JSON text of
 * OpenAI's array; NULL or "[]": none) and template t, as the server and the Python package take
 * them. Errors (one line naming the field): ELM_ERR_ARG for a tool_choice other than "none"
 * without tools, an unknown choice or function name, tools that are not an array;
 * ELM_ERR_UNSUPPORTED for tools on a template without them (listing those with). */
elm_status elm_tool_choice_parse(elm_chat_template t, const char *tools, const char *tool_choice,
                                 elm_tool_choice *out, elm_error *err);

/* The GBNF (malloc'd) that holds a reply to template t's tool calls of the functions in `tools`
 * (as for elm_chat_render_tools; only the one named `only` when not NULL), each call's arguments
 * valid under its function's parameters schema; one call, or several when `parallel`. With
 * `lazy`, the grammar is of what follows *trigger (set to the family's opening of a call,
 * elm_chat_tool_call_open: a matcher given the trigger lets the model write text first,
 * elm_grammar_matcher_set_trigger);
 * without, of the whole reply. ELM_ERR_UNSUPPORTED for a template without tools or a schema the
 * translation cannot enforce (its message names the function); ELM_ERR_FORMAT for bad tools or
 * an `only` that names none. */
elm_status elm_chat_tool_grammar(elm_chat_template t, const char *tools, const char *only,
                                 bool parallel, bool lazy, char **gbnf, const char **trigger,
                                 elm_error *err);

/* The text one new user turn adds to a conversation, ending with the generation prompt: for the
 * first turn the opening (BOS text, system) and the user message; for a later one the close of the
 * previous assistant message and the user message. Concatenating the turns with the replies as
 * generated gives elm_chat_render of the same conversation, but for mistral-nemo, whose template
 * moves the system message to the latest user message: its turns keep it in the first (which the
 * cache holds). system may be NULL. *out malloc'd. */
elm_status elm_chat_render_turn(elm_chat_template t, const char *system, const char *user,
                                bool first, char **out, elm_error *err);

/* elm_chat_render_turn with opts (NULL: the defaults; elm_chat_render_with's, the same errors). */
elm_status elm_chat_render_turn_with(elm_chat_template t, const char *system, const char *user,
                                     bool first, const elm_chat_opts *opts, char **out,
                                     elm_error *err);

/* System prompt and temperature of a preset for a common on-device task:
 *  "translate": translate each message from language `from` to `to`, output the translation only;
 *  "code": a programming assistant answering with code;
 *  "rag": answer only from `context` (a document's text) and say so when the answer is not there.
 * *system is malloc'd (caller frees). ELM_ERR_ARG for an unknown preset or a missing argument
 * (from/to for translate, context for rag). */
elm_status elm_chat_preset(const char *name, const char *from, const char *to, const char *context,
                           char **system, float *temp, elm_error *err);

/* ---- a conversation kept in a context's KV cache ---- */

typedef struct elm_chat_params {
    elm_chat_template tmpl;
    const char *system;          /* system prompt, or NULL (copied) */
    elm_gen_params gen;          /* per reply: n_predict, sampling, context shift, grammar and
                                  * preserved tokens (borrowed: must outlive the chat); n_keep 0
                                  * keeps the first turn's prompt (system and first message) on a
                                  * shift */
    const elm_spec_params *spec; /* speculative decoding, or NULL (borrowed: must outlive the chat) */
    elm_chat_opts opts;          /* the turns' rendering (gpt-oss's reasoning effort, borrowed:
                                  * must outlive the chat); zero for the defaults */
} elm_chat_params;

typedef struct elm_chat elm_chat;

/* A conversation on context c (borrowed; the chat owns its cache contents from now on). The
 * reply of each turn ends at the template's end-of-turn token or the end-of-sequence token. */
elm_status elm_chat_new(elm_context *c, const elm_chat_params *p, elm_chat **out, elm_error *err);
void elm_chat_free(elm_chat *ch);

/* One turn: renders the user message, prefills only those new tokens after the cached
 * conversation, generates the reply streaming it to cb (may be NULL; a non-zero return stops the
 * reply). stats->prompt_tokens counts the tokens this turn prefilled. The reply text is then
 * available from elm_chat_reply. ELM_ERR_ARG when the turn does not fit the context even after a
 * shift (or with shifting off). */
elm_status elm_chat_turn(elm_chat *ch, const char *user, elm_token_cb cb, void *cb_user,
                         elm_gen_stats *stats, elm_error *err);

/* Like elm_chat_turn for text that goes in as it is, without the template: a plain continuation
 * of whatever the conversation holds (the first text gets BOS when the model wants one). */
elm_status elm_chat_append(elm_chat *ch, const char *text, elm_token_cb cb, void *cb_user,
                           elm_gen_stats *stats, elm_error *err);

/* Most tokens a reply may have from now on (n > 0; elm_chat_params.gen.n_predict at first). */
void elm_chat_set_n_predict(elm_chat *ch, int32_t n);

/* Text of the last reply (empty before the first turn). */
const char *elm_chat_reply(const elm_chat *ch);

/* Speculative-decoding figures of the last turn (zero without speculation). */
const elm_spec_stats *elm_chat_spec_stats(const elm_chat *ch);

/* Forgets the conversation: the next turn starts again with the system prompt. */
void elm_chat_reset(elm_chat *ch);

/* Forgets the conversation (as elm_chat_reset) and makes system (NULL: none; copied) the system
 * prompt the next turn starts with: what a chat answering each question from its own retrieved
 * documents does before each turn (edgelm/rag.h, elm_docs_prompt_build). A context shift then
 * keeps the new opening when elm_chat_params.gen.n_keep was 0. ELM_ERR_NOMEM (the chat is reset,
 * its system prompt unchanged). */
elm_status elm_chat_set_system(elm_chat *ch, const char *system, elm_error *err);

/* Saves / restores the conversation as a session file (see session.h); after a load the next turn
 * continues the restored conversation. */
elm_status elm_chat_save(elm_chat *ch, const char *path, elm_error *err);
elm_status elm_chat_load(elm_chat *ch, const char *path, elm_error *err);

#ifdef __cplusplus
}
#endif
#endif
