// The official OpenAI Node client against `edgelm serve`: models, chat (streamed and not),
// completions (streamed and not), a 400 surfaced as the client's APIError naming the field, and a
// wrong key as its AuthenticationError. Greedy, so streamed and whole replies must agree.
// usage: node serve_openai.cjs NPM_DIR BASE_URL API_KEY
const path = require("path");
const OpenAI = require(path.join(process.argv[2], "node_modules", "openai"));
const baseURL = process.argv[3] + "/v1", apiKey = process.argv[4];
const client = new OpenAI({baseURL, apiKey, maxRetries: 0});
let failed = 0, passed = 0;
function check(cond, what) {
  if (cond) passed++;
  else { failed++; console.error("FAIL: " + what); }
}

(async () => {
  const models = await client.models.list();
  check(models.data.length === 1 && models.data[0].object === "model", "models: " + JSON.stringify(models.data));
  const model = models.data[0].id;

  const messages = [{role: "system", content: "You tell stories."}, {role: "user", content: "Once upon a time"}];
  const chat = await client.chat.completions.create({model, messages, max_tokens: 20, temperature: 0, seed: 1});
  const text = chat.choices[0].message.content;
  check(chat.object === "chat.completion" && text.length > 0, "chat: " + JSON.stringify(chat));
  check(chat.usage.completion_tokens === 20 && chat.usage.prompt_tokens > 0, "chat usage: " + JSON.stringify(chat.usage));

  const stream = await client.chat.completions.create({model, messages, max_tokens: 20, temperature: 0, stream: true});
  let streamed = "", chunks = 0, finish = null;
  for await (const chunk of stream) {
    chunks++;
    streamed += chunk.choices[0].delta.content || "";
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  check(streamed === text, `chat stream '${streamed}' vs '${text}'`);
  check(chunks >= 2 && finish === "length", `chat stream: ${chunks} chunks, finish ${finish}`);

  const next = messages.concat([{role: "assistant", content: text}, {role: "user", content: "And then?"}]);
  const turn2 = await client.chat.completions.create({model, messages: next, max_tokens: 8, temperature: 0});
  check(turn2.usage.prompt_tokens_details.cached_tokens >= chat.usage.prompt_tokens,
        "turn 2 cached tokens: " + JSON.stringify(turn2.usage));

  const compl = await client.completions.create({model, prompt: "Once upon a time", max_tokens: 12, temperature: 0});
  check(compl.object === "text_completion" && compl.choices[0].text.length > 0, "completions: " + JSON.stringify(compl));
  const cstream = await client.completions.create({model, prompt: "Once upon a time", max_tokens: 12, temperature: 0, stream: true});
  let ctext = "";
  for await (const chunk of cstream) ctext += chunk.choices[0].text;
  check(ctext === compl.choices[0].text, `completions stream '${ctext}' vs '${compl.choices[0].text}'`);

  try {
    await client.chat.completions.create({model, messages, max_tokens: -5});
    check(false, "max_tokens -5 accepted");
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400 && /max_tokens/.test(e.message), "400: " + e);
  }
  try {
    await new OpenAI({baseURL, apiKey: apiKey + "x", maxRetries: 0}).models.list();
    check(false, "wrong key accepted");
  } catch (e) {
    check(e instanceof OpenAI.AuthenticationError && e.status === 401, "401: " + e);
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error("FAIL: " + (e.stack || e)); process.exit(1); });
