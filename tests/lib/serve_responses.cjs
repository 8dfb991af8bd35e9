// OpenAI's Responses API on `edgelm serve` (a model on Qwen3's template) through the official
// Node client: text in and out (the same greedy text as chat completions), instructions and item
// lists, the stream of events, function calls and their outputs in a second turn, text.format
// json_schema, and the refusals.
// usage: node serve_responses.cjs NPM_DIR BASE_URL
const t = require("./openai_check.cjs")(process.argv[2], process.argv[3]);
const {client, ajv, check} = t;

t.run(async () => {
  const r = await client.responses.create({model: "m", input: "Tell me a story.", max_output_tokens: 16, temperature: 0});
  check(r.object === "response" && r.status === "incomplete" && r.incomplete_details.reason === "max_output_tokens" &&
        r.output_text.length > 0 && r.usage.output_tokens === 16 && r.usage.input_tokens > 0,
        "text: " + JSON.stringify(r));
  const chat = await client.chat.completions.create({model: "m", messages: [{role: "user", content: "Tell me a story."}],
                                                     max_tokens: 16, temperature: 0});
  check(chat.choices[0].message.content === r.output_text, `same as chat: '${r.output_text}' vs '${chat.choices[0].message.content}'`);

  const items = await client.responses.create({model: "m", instructions: "You tell stories.", temperature: 0, max_output_tokens: 8,
    input: [{role: "user", content: [{type: "input_text", text: "Once upon a time"}]}]});
  check(items.output[0].type === "message" && items.output[0].content[0].type === "output_text", "items: " + JSON.stringify(items));

  // the stream: created, the text in deltas, done, and the final response with the same text
  const s = await client.responses.create({model: "m", input: "Tell me a story.", max_output_tokens: 16, temperature: 0, stream: true});
  const types = [];
  let deltas = "", done = null, last = null, seq = -1, ordered = true;
  for await (const e of s) {
    types.push(e.type);
    ordered = ordered && e.sequence_number === seq + 1;
    seq = e.sequence_number;
    if (e.type === "response.output_text.delta") deltas += e.delta;
    if (e.type === "response.output_text.done") done = e.text;
    last = e;
  }
  check(types[0] === "response.created" && types.includes("response.output_item.added") && ordered &&
        deltas === r.output_text && done === deltas && last.type === "response.incomplete" &&
        last.response.output[0].content[0].text === deltas,
        `stream: ${types.join(" ")} '${deltas}'`);

  // a function call, then its output in the next turn
  const parameters = {type: "object", properties: {city: {type: "string", maxLength: 12}}, required: ["city"], additionalProperties: false};
  const tools = [{type: "function", name: "get_weather", description: "The weather", parameters, strict: true}];
  const input = [{role: "user", content: "Weather in Paris?"}];
  const call = await client.responses.create({model: "m", input, tools, tool_choice: {type: "function", name: "get_weather"},
                                              parallel_tool_calls: false, temperature: 1, seed: 3, max_output_tokens: 200});
  const fc = call.output.find((o) => o.type === "function_call");
  let args = null;
  try { args = JSON.parse(fc.arguments); } catch (e) {}
  check(fc && fc.name === "get_weather" && fc.call_id && args && ajv.validate(parameters, args), "function call: " + JSON.stringify(call.output));
  if (fc) {
    const next = await client.responses.create({model: "m", tools, tool_choice: "none", temperature: 0, max_output_tokens: 12,
      input: input.concat([fc, {type: "function_call_output", call_id: fc.call_id, output: "Sunny"}])});
    check(next.output_text.length > 0 && next.usage.input_tokens > call.usage.input_tokens, "second turn: " + JSON.stringify(next));
  }
  const sstream = await client.responses.create({model: "m", input, tools, tool_choice: "required", parallel_tool_calls: false,
                                                 temperature: 1, seed: 4, max_output_tokens: 200, stream: true});
  let argsDone = null, final = null;
  for await (const e of sstream) {
    if (e.type === "response.function_call_arguments.done") argsDone = e.arguments;
    if (e.type === "response.completed") final = e.response;
  }
  check(argsDone && final && final.output.some((o) => o.type === "function_call" && o.arguments === argsDone),
        "streamed call: " + JSON.stringify(final));

  // text.format: the schema's JSON
  const schema = {type: "object", properties: {n: {type: "integer", minimum: 1, maximum: 9}}, required: ["n"], additionalProperties: false};
  const js = await client.responses.create({model: "m", input: "A number", temperature: 1, seed: 2, max_output_tokens: 100,
                                            text: {format: {type: "json_schema", name: "n", schema, strict: true}}});
  let doc = null;
  try { doc = JSON.parse(js.output_text); } catch (e) {}
  check(doc && ajv.validate(schema, doc), "text.format: " + js.output_text);

  await t.refusals((extra) => client.responses.create({model: "m", input: "x", max_output_tokens: 4, ...extra}),
                   [[{previous_response_id: "resp_1"}, /previous_response_id/],
                    [{tools: [{type: "web_search"}]}, /tools\[0\]\.type/],
                    [{input: [{type: "web_search_call", id: "ws_1"}]}, /input\[0\]\.type/],
                    [{input: []}, /input: an empty array/]]);
});
