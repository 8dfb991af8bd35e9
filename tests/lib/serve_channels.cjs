// Replies in channels (a server on gpt-oss's template) through the official OpenAI Node client:
// a reply held by a GBNF grammar to reasoning in the analysis channel, then an answer in final,
// comes back as message.reasoning_content and message.content, without a marker in either;
// streamed, the deltas' reasoning_content and content add up to the same; a reply without
// channels (the model wrote none) is all content.
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

  const plain = await client.chat.completions.create({...req, grammar: 'root ::= "Just text."'});
  check(plain.choices[0].message.content === "Just text." && plain.choices[0].message.reasoning_content === undefined,
        "no channels: " + JSON.stringify(plain.choices[0].message));
});
