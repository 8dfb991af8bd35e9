// The official OpenAI Node client's embeddings.create against `edgelm serve`: by default it asks
// for base64 and decodes the little-endian float32 bytes itself; the vectors must be those
// `edgelm embed` printed (WANT.json: {text: [floats]}), with encoding_format "float" too, for one
// text and for an array (in order), "dimensions" shortening them; a bad input is the client's
// APIError, a 400 naming the field.
// usage: node serve_embeddings.cjs NPM_DIR BASE_URL WANT.json
const fs = require("fs");
const path = require("path");
const OpenAI = require(path.join(process.argv[2], "node_modules", "openai"));
const client = new OpenAI({baseURL: process.argv[3] + "/v1", apiKey: "none", maxRetries: 0});
const want = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const texts = Object.keys(want);
let failed = 0, passed = 0;
function check(cond, what) {
  if (cond) passed++;
  else { failed++; console.error("FAIL: " + what); }
}
const same = (a, b) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-7);

(async () => {
  const model = (await client.models.list()).data[0].id;
  const one = await client.embeddings.create({model, input: texts[0]});
  check(one.object === "list" && one.data.length === 1 && one.data[0].object === "embedding",
        "one: " + JSON.stringify(one).slice(0, 200));
  check(same(one.data[0].embedding, want[texts[0]]), "base64 (the default): " + one.data[0].embedding.slice(0, 4));
  check(one.usage.prompt_tokens > 0 && one.usage.total_tokens === one.usage.prompt_tokens, "usage " + JSON.stringify(one.usage));
  const floats = await client.embeddings.create({model, input: texts, encoding_format: "float"});
  check(floats.data.length === texts.length && floats.data.every((d, i) => d.index === i && same(d.embedding, want[texts[i]])),
        "float, an array of texts");
  const short = await client.embeddings.create({model, input: texts, dimensions: 16});
  check(short.data.every(d => d.embedding.length === 16 &&
                         Math.abs(Math.hypot(...d.embedding) - 1) < 1e-5), "dimensions 16");
  try {
    await client.embeddings.create({model, input: []});
    check(false, "an empty input accepted");
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400 && /input/.test(e.message), "400: " + e);
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch(e => { console.error("FAIL: " + e); process.exit(1); });
