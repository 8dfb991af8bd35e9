// The official OpenAI Node client against `edgelm serve`: models, chat (streamed and not),
// completions (streamed and not), a 400 surfaced as the client's APIError naming the field, and a
// wrong key as its AuthenticationError; logprobs (chat and legacy completions, streamed and not);
// n = 2 (streamed and not).
// Greedy, so streamed and whole replies must agree.
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
  // logprobs: greedy picks each token's most likely alternative; the tokens spell the reply,
  // streamed or not (the streamed request's prompt comes from the slot's cache: its logits equal
  // the first's to float rounding); completions' legacy form has offsets into the text
  const lp = await client.chat.completions.create({model, messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3});
  const content = lp.choices[0].logprobs && lp.choices[0].logprobs.content;
  check(Array.isArray(content) && content.length === 12 && content.map(t => t.token).join("") === lp.choices[0].message.content,
        "logprobs tokens: " + JSON.stringify(lp.choices[0]));
  check(content && content.every(t => t.logprob <= 0 && t.top_logprobs.length === 3 &&
        t.top_logprobs[0].token === t.token && Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6 &&
        t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob && t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob &&
        t.top_logprobs.reduce((a, x) => a + Math.exp(x.logprob), 0) <= 1 + 1e-5 &&
        Buffer.from(t.bytes).toString() === t.token), "logprobs values: " + JSON.stringify(content));
  const lps = await client.chat.completions.create({model, messages, max_tokens: 12, temperature: 0, logprobs: true, stream: true});
  let lpTokens = [];
  for await (const chunk of lps) if (chunk.choices[0].logprobs) lpTokens = lpTokens.concat(chunk.choices[0].logprobs.content);
  check(content && lpTokens.length === 12 && lpTokens.every((t, i) => t.token === content[i].token &&
        Math.abs(t.logprob - content[i].logprob) < 1e-3), "streamed logprobs: " + JSON.stringify(lpTokens));
  const clp = await client.completions.create({model, prompt: "Once upon a time", max_tokens: 6, temperature: 0, logprobs: 2});
  const L = clp.choices[0].logprobs;
  check(L && L.tokens.length === 6 && L.tokens.join("") === clp.choices[0].text && L.text_offset[0] === 0 &&
        L.tokens.every((t, i) => clp.choices[0].text.startsWith(t, L.text_offset[i]) && Object.keys(L.top_logprobs[i]).length <= 2),
        "completions logprobs: " + JSON.stringify(clp.choices[0]));
  // n: one choice per slot, each drawn with its own seed; usage counts the prompt once
  const two = await client.chat.completions.create({model, messages, max_tokens: 10, temperature: 1, seed: 7, n: 2});
  check(two.choices.length === 2 && two.choices[0].index === 0 && two.choices[1].index === 1 &&
        two.choices.every(c => c.message.content.length > 0) && two.usage.completion_tokens === 20 &&
        two.usage.prompt_tokens === chat.usage.prompt_tokens, "n 2: " + JSON.stringify(two));
  // streamed, each chunk is one choice's (by index) and each choice ends on its own; same seeds,
  // same texts
  const twoStream = await client.chat.completions.create({model, messages, max_tokens: 10, temperature: 1, seed: 7, n: 2, stream: true});
  const parts = ["", ""], ends = [[], []];
  let lastUsage = null;
  for await (const chunk of twoStream) {
    const c = chunk.choices[0];
    parts[c.index] += c.delta.content || "";
    if (c.finish_reason) ends[c.index].push(c.finish_reason);
    lastUsage = chunk.usage || lastUsage;
  }
  check(parts.every((p, i) => p === two.choices[i].message.content) &&
        ends.every((e, i) => e.length === 1 && e[0] === two.choices[i].finish_reason) &&
        lastUsage && lastUsage.completion_tokens === two.usage.completion_tokens,
        `n 2 streamed: ${JSON.stringify(parts)} ${JSON.stringify(ends)} ${JSON.stringify(lastUsage)}`);
  try {
    await client.chat.completions.create({model, messages, n: 3});
    check(false, "n over the slots accepted");
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400 && /^400 n: 3 out of range 1\.\.2/.test(e.message), "400 n: " + e);
  }
  try {
    await client.chat.completions.create({model, messages, top_logprobs: 2});
    check(false, "top_logprobs without logprobs accepted");
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400 && /top_logprobs/.test(e.message), "400 top_logprobs: " + e);
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error("FAIL: " + (e.stack || e)); process.exit(1); });
