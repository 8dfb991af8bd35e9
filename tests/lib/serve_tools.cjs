// Tool calls of `edgelm serve` (a model on a template with tools) through the official OpenAI Node
// client: a forced call (named function, or "required") comes back as message.tool_calls whose
// arguments validate under the function's schema (ajv), streamed as delta.tool_calls too (with
// n = 2, each choice's call under its index); a two-step conversation (call, tool result,
// answer); runTools running our function; and the refusals, each a 400 naming the field.
// usage: node serve_tools.cjs NPM_DIR BASE_URL
const t = require("./openai_check.cjs")(process.argv[2], process.argv[3]);
const {client, ajv, check} = t;

const weather = {type: "object", properties: {city: {type: "string", minLength: 1, maxLength: 12},
                                              days: {type: "integer", minimum: 1, maximum: 7}},
                 required: ["city"], additionalProperties: false};
const tools = [{type: "function", function: {name: "get_weather", description: "The weather in a city", parameters: weather}},
               {type: "function", function: {name: "get_time", parameters: {type: "object", properties: {zone: {enum: ["UTC", "CET"]}}, required: ["zone"]}}}];
const schemaOf = {get_weather: ajv.compile(weather), get_time: ajv.compile(tools[1].function.parameters)};
const messages = [{role: "user", content: "What is the weather in Paris?"}];

function validCall(tc, what) {
  let args = null;
  try { args = JSON.parse(tc.function.arguments); } catch (e) {}
  const validate = schemaOf[tc.function.name];
  check(tc.type === "function" && typeof tc.id === "string" && validate && args !== null && validate(args),
        `${what}: ${JSON.stringify(tc)} ${validate ? JSON.stringify(validate.errors) : ""}`);
}

t.run(async () => {
  for (const seed of [1, 2, 3]) {
    for (const tool_choice of [{type: "function", function: {name: "get_weather"}}, "required"]) {
      const r = await client.chat.completions.create({model: "m", messages, tools, tool_choice, parallel_tool_calls: false,
                                                      temperature: 1, seed, max_tokens: 200});
      const c = r.choices[0], what = `seed ${seed} ${JSON.stringify(tool_choice)}`;
      check(c.finish_reason === "tool_calls" && c.message.content === null && c.message.tool_calls.length === 1,
            `${what}: ${JSON.stringify(c)}`);
      if (c.message.tool_calls) validCall(c.message.tool_calls[0], what);
      if (typeof tool_choice === "object" && c.message.tool_calls)
        check(c.message.tool_calls[0].function.name === "get_weather", `${what}: name`);
    }
  }

  // streamed: the call arrives as delta.tool_calls, and nothing of it as content
  const s = await client.chat.completions.create({model: "m", messages, tools, tool_choice: "required", parallel_tool_calls: false,
                                                  temperature: 1, seed: 4, max_tokens: 200, stream: true});
  let content = "", calls = [], finish = null;
  for await (const chunk of s) {
    const d = chunk.choices[0].delta;
    content += d.content || "";
    for (const tc of d.tool_calls || []) calls[tc.index] = tc;
    finish = chunk.choices[0].finish_reason || finish;
  }
  check(finish === "tool_calls" && content === "" && calls.length === 1, `stream: ${finish} '${content}' ${JSON.stringify(calls)}`);
  if (calls[0]) validCall(calls[0], "stream");

  // n = 2 streamed: each choice's call arrives in its own delta.tool_calls, as the whole reply
  // with the same seeds has it
  const req2 = {model: "m", messages, tools, tool_choice: "required", parallel_tool_calls: false, temperature: 1, seed: 5,
                max_tokens: 200, n: 2};
  const whole2 = await client.chat.completions.create(req2);
  const s2 = await client.chat.completions.create({...req2, stream: true});
  const calls2 = [[], []], content2 = ["", ""], finish2 = [[], []];
  for await (const chunk of s2) {
    const c = chunk.choices[0];
    content2[c.index] += c.delta.content || "";
    for (const tc of c.delta.tool_calls || []) calls2[c.index][tc.index] = tc;
    if (c.finish_reason) finish2[c.index].push(c.finish_reason);
  }
  for (const i of [0, 1]) {
    const want = whole2.choices[i].message.tool_calls;
    check(finish2[i].length === 1 && finish2[i][0] === "tool_calls" && content2[i] === "" && calls2[i].length === 1 &&
          want && want.length === 1 && calls2[i][0].function.name === want[0].function.name &&
          calls2[i][0].function.arguments === want[0].function.arguments,
          `n 2 stream choice ${i}: ${finish2[i]} '${content2[i]}' ${JSON.stringify(calls2[i])} vs ${JSON.stringify(want)}`);
    if (calls2[i][0]) validCall(calls2[i][0], `n 2 stream choice ${i}`);
  }

  // two steps: the call, the tool's result, then an answer in text
  const first = await client.chat.completions.create({model: "m", messages, tools, parallel_tool_calls: false,
    tool_choice: {type: "function", function: {name: "get_weather"}}, temperature: 0, max_tokens: 200});
  const call = first.choices[0].message.tool_calls[0];
  const second = await client.chat.completions.create({model: "m", tools, tool_choice: "none", temperature: 0, max_tokens: 24,
    messages: messages.concat([first.choices[0].message, {role: "tool", tool_call_id: call.id, content: "Sunny, 21 C"}])});
  check(second.choices[0].message.content.length > 0 && !second.choices[0].message.tool_calls &&
        second.usage.prompt_tokens > first.usage.prompt_tokens, "second step: " + JSON.stringify(second));

  // runTools: the client calls our function with the parsed arguments (a forced function runs once)
  let ran = null;
  const runner = client.beta.chat.completions.runTools({model: "m", messages, temperature: 0, max_tokens: 200, parallel_tool_calls: false,
    tool_choice: {type: "function", function: {name: "get_weather"}},
    tools: [{type: "function", function: {name: "get_weather", parameters: weather, parse: JSON.parse,
                                           function: (args) => { ran = args; return "Sunny"; }}}]});
  await runner.done();
  check(ran !== null && schemaOf.get_weather(ran), "runTools: " + JSON.stringify(ran));
  const toolMsgs = runner.messages.filter((m) => m.role === "tool");
  check(toolMsgs.length === 1 && toolMsgs[0].content === "Sunny", "runTools messages: " + JSON.stringify(runner.messages));

  const refusals = [
    [{tools, tool_choice: {type: "function", function: {name: "nope"}}}, /tool_choice.*nope/],
    [{tools: [{type: "function", function: {name: "f", parameters: 3}}]}, /tools\[0\]\.function\.parameters/],
    [{tools: [{type: "function", function: {name: "f", parameters: {type: "object", properties: {x: {type: "string", pattern: "a"}}}}}]}, /pattern/],
    [{tools: [{type: "function", function: {name: "bad name"}}]}, /tools\[0\]\.function\.name/],
    [{tools, tool_choice: "sometimes"}, /tool_choice/],
    [{tools, response_format: {type: "json_object"}}, /response_format/],
    [{tool_choice: "required"}, /tool_choice: no tools/],
  ];
  await t.refusals((extra) => client.chat.completions.create({model: "m", messages, max_tokens: 8, ...extra}),
                   refusals);
});
