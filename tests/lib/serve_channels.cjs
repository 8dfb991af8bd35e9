// Replies in channels (a server on gpt-oss's template) through the official OpenAI Node client:
// a reply held by a GBNF grammar to reasoning in the analysis channel, then an answer in final,
// comes back as message.reasoning_content and message.content, without a marker in either;
// streamed, the deltas' reasoning_content and content add up to the same; a reply without
// channels (the model wrote none) is all content. reasoning_effort (and the Responses API's
// reasoning.effort) goes into the prompt: "medium" is the default's, "low" another; "max" a 400.
// An assistant message's reasoning_content before its call goes back into the prompt; the Responses
// API gives the reasoning as a reasoning item (streamed as reasoning_text deltas), and takes one
// back before a call.
// usage: node serve_channels.cjs NPM_DIR BASE_URL
const t = require("./openai_check.cjs")(process.argv[2], process.argv[3]);
const {client, check} = t;

const reasoning = "The user greets. Answer <b> briefly.", answer = "Hello there, friend!";
const grammar = `root ::= "<|channel|>analysis<|message|>${reasoning}<|end|><|start|>assistant<|channel|>final<|message|>${answer}"`;
const req = {model: "m", messages: [{role: "user", content: "Hi"}], temperature: 1, seed: 3, max_tokens: 200, grammar};

t.run(async () => {
  const r = await client.chat.completions.create(req);
  const m = r.choices[0].message;
  check(m.reasoning_content === reasoning && m.content === answer, "whole: " + JSON.stringify(m));

  const s = await client.chat.completions.create({...req, stream: true});
  let content = "", thought = "", chunks = 0;
  for await (const chunk of s) {
    const d = chunk.choices[0].delta;
    content += d.content || "";
    thought += d.reasoning_content || "";
    chunks++;
  }
  check(thought === reasoning && content === answer && chunks > 3, `stream: '${thought}' '${content}' in ${chunks} chunks`);

  const usage = async (extra) => (await client.chat.completions.create({...req, max_tokens: 1, grammar: 'root ::= "x"', ...extra})).usage.prompt_tokens;
  const [byDefault, medium, low] = [await usage({}), await usage({reasoning_effort: "medium"}), await usage({reasoning_effort: "low"})];
  check(byDefault === medium && low !== medium, `reasoning_effort: prompt tokens ${byDefault} ${medium} ${low}`);
  const resp = await client.responses.create({model: "m", input: "Hi", max_output_tokens: 1, reasoning: {effort: "low"}});
  check(resp.usage.input_tokens === low, `responses reasoning.effort: ${JSON.stringify(resp.usage)} vs ${low}`);
  const tools = [{type: "function", function: {name: "now", description: "The time", parameters: {type: "object", properties: {}}}}];
  const called = [{role: "user", content: "Time?"},
                  {role: "assistant", content: null, tool_calls: [{id: "c1", type: "function", function: {name: "now", arguments: "{}"}}]},
                  {role: "tool", tool_call_id: "c1", content: "noon"}];
  const plainCall = await usage({messages: called, tools, tool_choice: "none"});
  const reasoned = called.map((m, i) => i === 1 ? {...m, reasoning_content: "I should call now."} : m);
  check(await usage({messages: reasoned, tools, tool_choice: "none"}) > plainCall, "reasoning_content before a call");
  await t.refusals((extra) => client.chat.completions.create({...req, max_tokens: 1, ...extra}),
                   [[{reasoning_effort: "max"}, /reasoning_effort: 'max'/], [{reasoning_effort: 3}, /reasoning_effort/]]);

  // the Responses API: the reasoning as a reasoning item before the message
  const rr = await client.responses.create({model: "m", input: "Hi", max_output_tokens: 200, temperature: 1, seed: 3, grammar});
  const kinds = rr.output.map((o) => o.type);
  check(kinds.join() === "reasoning,message" && rr.output[0].content[0].text === reasoning && rr.output_text === answer,
        "responses reasoning item: " + JSON.stringify(rr.output));

  // streamed: the reasoning item's text deltas at output 0, then the message's at output 1
  const rs = await client.responses.create({model: "m", input: "Hi", max_output_tokens: 200, temperature: 1, seed: 3, grammar, stream: true});
  let rText = "", mText = "", mIndex = -1, done = null;
  for await (const e of rs) {
    if (e.type === "response.reasoning_text.delta" && e.output_index === 0) rText += e.delta;
    if (e.type === "response.output_text.delta") { mText += e.delta; mIndex = e.output_index; }
    if (e.type === "response.completed") done = e.response;
  }
  check(rText === reasoning && mText === answer && mIndex === 1 && done &&
        done.output.map((o) => o.type).join() === "reasoning,message" && done.output[0].content[0].text === reasoning,
        `responses stream: '${rText}' '${mText}' ${mIndex} ${JSON.stringify(done && done.output)}`);

  // sent back, a reasoning item before a call goes into the prompt; one before an answer is dropped
  const inputs = (items) => client.responses.create({model: "m", tools: [{type: "function", name: "now", parameters: {type: "object", properties: {}}}],
                                                      tool_choice: "none", max_output_tokens: 1, input: items});
  const think = {type: "reasoning", id: "rs_1", summary: [], content: [{type: "reasoning_text", text: "I should call now."}]};
  const callItems = [{role: "user", content: "Time?"}, {type: "function_call", call_id: "c1", name: "now", arguments: "{}"},
                     {type: "function_call_output", call_id: "c1", output: "noon"}];
  const [bare, withThought] = [await inputs(callItems), await inputs([callItems[0], think, ...callItems.slice(1)])];
  check(withThought.usage.input_tokens > bare.usage.input_tokens, `reasoning item: ${bare.usage.input_tokens} ${withThought.usage.input_tokens}`);
  const answered = [{role: "user", content: "Hi"}, {role: "assistant", content: "Hello."}, {role: "user", content: "Bye"}];
  const [a1, a2] = [await inputs(answered), await inputs([answered[0], think, ...answered.slice(1)])];
  check(a1.usage.input_tokens === a2.usage.input_tokens, `reasoning before an answer: ${a1.usage.input_tokens} ${a2.usage.input_tokens}`);

  const plain = await client.chat.completions.create({...req, grammar: 'root ::= "Just text."'});
  check(plain.choices[0].message.content === "Just text." && plain.choices[0].message.reasoning_content === undefined,
        "no channels: " + JSON.stringify(plain.choices[0].message));
});
