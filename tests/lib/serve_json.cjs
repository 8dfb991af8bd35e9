// Constrained replies of `edgelm serve`, through the official OpenAI Node client: every
// response_format json_schema reply, over schemas that use the supported keywords, seeds and
// temperatures (greedy to hot), streamed or not, parses and validates under ajv (draft 2020-12,
// ajv-formats); json_object replies that end parse as objects (those cut by max_tokens open one); llama-server's `grammar` field
// holds the text to its GBNF; what the server cannot enforce is a 400 naming it, and the server
// goes on serving.
// usage: node serve_json.cjs NPM_DIR BASE_URL
const t = require("./openai_check.cjs")(process.argv[2], process.argv[3]);
const {OpenAI, client, ajv, check} = t;
const base = process.argv[3];

const schemas = {
  person: {
    type: "object",
    properties: {
      name: {type: "string", minLength: 1, maxLength: 12},
      age: {type: "integer", minimum: 0, maximum: 120},
      pet: {enum: ["cat", "dog", null, 3]},
      nick: {type: "string", maxLength: 6},
    },
    required: ["name", "age"],
    additionalProperties: false,
  },
  list: {
    type: "array",
    items: {type: "object", properties: {id: {type: "integer", exclusiveMinimum: -3, maximum: 99},
                                         ok: {type: "boolean"}}, required: ["id", "ok"]},
    minItems: 1, maxItems: 3,
  },
  tree: {
    $defs: {node: {type: "object", properties: {v: {type: "integer", minimum: 0, maximum: 9},
                                                 kids: {type: "array", items: {$ref: "#/$defs/node"}, maxItems: 2}},
                   required: ["v"], additionalProperties: false}},
    $ref: "#/$defs/node",
  },
  choice: {
    anyOf: [{type: "object", properties: {kind: {const: "a"}, n: {type: "number", minimum: -1, maximum: 1}}, required: ["kind", "n"]},
            {type: "string", format: "date"}, {type: "null"}],
  },
  tagged: {
    oneOf: [{type: "object", properties: {t: {const: "x"}, d: {type: "string", format: "uuid"}}, required: ["t", "d"]},
            {type: "object", properties: {t: {const: "y"}, b: {type: "boolean"}}, required: ["t"]}],
  },
  tuple: {type: "array", prefixItems: [{type: "integer", minimum: 10, maximum: 20}, {type: "string", maxLength: 3}],
          items: false, minItems: 2},
};

async function chat(params) {
  return client.chat.completions.create({model: "m", max_tokens: 400, ...params});
}

t.run(async () => {
  const messages = [{role: "user", content: "Tell me about a cat as JSON."}];
  let n = 0;
  for (const [name, schema] of Object.entries(schemas)) {
    const validate = ajv.compile(schema);
    for (const temperature of [0, 0.8, 1.5]) {
      for (const seed of [1, 2, 3]) {
        if (temperature === 0 && seed > 1) continue;
        const stream = (n++ % 3) === 2;
        const response_format = {type: "json_schema", json_schema: {name, schema, strict: true}};
        let text = "", finish = null;
        try {
          if (stream) {
            const s = await chat({messages, response_format, temperature, seed, stream: true});
            for await (const chunk of s) {
              text += chunk.choices[0].delta.content || "";
              finish = chunk.choices[0].finish_reason || finish;
            }
          } else {
            const r = await chat({messages, response_format, temperature, seed});
            text = r.choices[0].message.content;
            finish = r.choices[0].finish_reason;
          }
        } catch (e) {
          finish = "" + e;
        }
        const what = `${name} temp ${temperature} seed ${seed}${stream ? " streamed" : ""}: '${text}'`;
        let doc, parsed = true;
        try { doc = JSON.parse(text); } catch (e) { parsed = false; }
        check(finish === "stop", `${what}: finish ${finish}`);
        check(parsed, `${what}: does not parse`);
        check(parsed && validate(doc), `${what}: invalid: ${JSON.stringify(validate.errors)}`);
      }
    }
  }

  // json_object: a reply that ends is an object; stories260K's strings tend to run on to
  // max_tokens (then the reply is cut: finish "length"), so it is seen to open one
  for (const seed of [1, 2]) {
    const r = await chat({messages, response_format: {type: "json_object"}, temperature: 1, seed, max_tokens: 60});
    const text = r.choices[0].message.content, finish = r.choices[0].finish_reason;
    let doc = null;
    try { doc = JSON.parse(text); } catch (e) {}
    check(finish === "stop" ? doc !== null && typeof doc === "object" && !Array.isArray(doc)
                            : finish === "length" && /^\{\s*("|\})/.test(text),
          `json_object seed ${seed}: ${finish} '${text}'`);
  }

  // llama-server's grammar field, raw
  const grammar = 'root ::= ("yes" | "no") " " [0-9]{2}';
  for (const seed of [1, 2]) {
    const r = await fetch(base + "/v1/completions", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({prompt: "Once upon a time", grammar, temperature: 1, seed, max_tokens: 20})});
    const body = await r.json();
    const text = body.choices && body.choices[0].text;
    check(r.status === 200 && /^(yes|no) [0-9]{2}$/.test(text) && body.choices[0].finish_reason === "stop",
          `grammar seed ${seed}: ${r.status} ${JSON.stringify(body)}`);
  }

  // refusals name the field; the server goes on
  const refusals = [
    [{response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: "string", pattern: "^a+$"}}}}, /pattern/],
    [{response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: "object", required: 5}}}}, /required/],
    [{response_format: {type: "json_schema", json_schema: {name: "p", schema: {type: "number", multipleOf: 2}}}}, /multipleOf/],
    [{response_format: {type: "json_schema", json_schema: {name: "p", schema: {oneOf: [{type: "integer"}, {type: "number"}]}}}}, /oneOf/],
    [{response_format: {type: "xml"}}, /response_format.type/],
    [{grammar: "root ::= [a-"}, /grammar/],
    [{grammar: "root ::= x"}, /grammar.*x/],
    [{grammar: "root ::= \"a\"", response_format: {type: "json_object"}}, /give one/],
  ];
  await t.refusals((extra) => chat({messages, ...extra}), refusals);
  const health = await fetch(base + "/health");
  check(health.status === 200, "health after refusals: " + health.status);
  const after = await chat({messages, max_tokens: 4, temperature: 0});
  check(after.choices[0].finish_reason === "length", "a plain request after refusals: " + JSON.stringify(after));
});
