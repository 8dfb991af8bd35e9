// What the server's OpenAI-client tests share (serve_json.cjs, serve_tools.cjs,
// serve_responses.cjs): the client on BASE_URL, ajv (draft 2020-12 with ajv-formats), a check
// counter, the refusals loop (each case a 400 whose message matches) and the closing line.
// usage: const t = require("./openai_check.cjs")(NPM_DIR, BASE_URL); t.run(async () => {...});
const path = require("path");

module.exports = function (npmDir, base) {
  const mod = (name) => require(path.join(npmDir, "node_modules", name));
  const OpenAI = mod("openai");
  const Ajv2020 = mod("ajv/dist/2020");
  const ajv = new Ajv2020({strict: false});
  mod("ajv-formats")(ajv);
  const t = {OpenAI, ajv, passed: 0, failed: 0,
             client: new OpenAI({baseURL: base + "/v1", apiKey: "none", maxRetries: 0})};
  t.check = (cond, what) => {
    if (cond) t.passed++;
    else { t.failed++; console.error("FAIL: " + what); }
  };
  // create(extra) must fail with a 400 matching pattern, for each [extra, pattern]
  t.refusals = async (create, cases) => {
    for (const [extra, pattern] of cases) {
      try {
        await create(extra);
        t.check(false, "accepted: " + JSON.stringify(extra));
      } catch (e) {
        t.check(e instanceof OpenAI.APIError && e.status === 400 && pattern.test(e.message),
                `${JSON.stringify(extra)}: ${e}`);
      }
    }
  };
  t.run = (body) => body().then(() => {
    console.log(`${t.passed} passed, ${t.failed} failed`);
    process.exit(t.failed ? 1 : 0);
  }, (e) => {
    console.error("FAIL: " + (e.stack || e));
    process.exit(1);
  });
  return t;
};
