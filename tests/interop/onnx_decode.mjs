// Runs an `edgelm export onnx` folder in ONNX Runtime (onnxruntime-node, CPU) the way its runtimes
// drive a decoder: prefill of the prompt, then one token per step through the KV cache. For each
// case of CASES (edgelm `run --json --logits N` outputs, one JSON object per line) it decodes
// greedily as many tokens as edgelm generated and compares the logits of the first N steps with
// edgelm's. Prints one JSON line per case: {prompt_ids, generated_ids, max_abs_dlogit, steps}.
//   dynamic (model.onnx, genai's layout): past_key_values grows by present each step;
//   static P,C (--format qdq: prompt_processor.onnx, token_generator.onnx): the prompt, padded to
//   P tokens, fills cache slots 0..n-1 of a C-slot cache kept here; each later token sees the
//   C-1 slots of the cache (attention_mask 0 where unused) and its key/value go to slot n.
// usage: node onnx_decode.mjs NPM_DIR MODEL_DIR CASES.jsonl [P,C]
import fs from 'node:fs';
import { onnxRuntime } from './onnx_session.mjs';

const [npmDir, modelDir, casesPath, shapes] = process.argv.slice(2);
const { ort, i64, open: openFile } = onnxRuntime(npmDir);
const open = (f) => openFile(`${modelDir}/${f}`);

// Dynamic shapes: returns a step function (ids, start position) -> logits rows [ids.length, vocab].
async function dynamicRunner() {
  const cfg = JSON.parse(fs.readFileSync(`${modelDir}/genai_config.json`, 'utf8')).model.decoder;
  const session = await open('model.onnx');
  let past = {};
  for (let l = 0; l < cfg.num_hidden_layers; l++)
    for (const kind of ['key', 'value'])
      past[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0),
        [1, cfg.num_key_value_heads, 0, cfg.head_size]);
  return async (ids, n) => {
    const r = await session.run({
      input_ids: i64(ids, [1, ids.length]),
      attention_mask: i64(new Array(n + ids.length).fill(1), [1, n + ids.length]),
      position_ids: i64(ids.map((_, i) => n + i), [1, ids.length]),
      ...past,
    });
    past = {};
    for (const k of session.outputNames.filter((x) => x.startsWith('present.')))
      past[k.replace('present', 'past_key_values')] = r[k];
    return r.logits;
  };
}

// Static shapes P,C: the two graphs and a C-slot cache per layer, [kv_heads, C, head_dim].
async function staticRunner(P, C) {
  const pp = await open('prompt_processor.onnx'), tg = await open('token_generator.onnx');
  const layers = pp.inputNames.filter((x) => x.startsWith('past_key_values.')).length / 2;
  // KV heads and head size: the static shape of the graph's past_key_values.0.key
  const [, heads, , hd] = pp.inputMetadata.find((x) => x.name === 'past_key_values.0.key').shape;
  const cache = {};
  // copies n slots of present [1, heads, S, hd] from slot `from` into the cache from slot `to`
  const keep = (r, from, n, to, S) => {
    for (let l = 0; l < layers; l++)
      for (const kind of ['key', 'value']) {
        const t = r[`present.${l}.${kind}`];
        const c = (cache[`${l}.${kind}`] ??= new Float32Array(heads * C * hd));
        for (let h = 0; h < heads; h++)
          c.set(t.data.subarray((h * S + from) * hd, (h * S + from + n) * hd), (h * C + to) * hd);
      }
  };
  const pastOf = (slots) => {
    const feeds = {};
    for (let l = 0; l < layers; l++)
      for (const kind of ['key', 'value']) {
        const a = new Float32Array(heads * slots * hd), c = cache[`${l}.${kind}`];
        for (let h = 0; c && h < heads; h++) a.set(c.subarray(h * C * hd, (h * C + slots) * hd), h * slots * hd);
        feeds[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', a, [1, heads, slots, hd]);
      }
    return feeds;
  };
  return async (ids, n) => {
    if (n === 0) { // prompt: padded to P, in the last P of C positions, no past
      if (ids.length > P) throw new Error(`prompt of ${ids.length} tokens > ${P}`);
      const feeds = pastOf(C - P);
      const pad = new Array(P - ids.length).fill(0);
      const r = await pp.run({
        ...feeds,
        input_ids: i64([...ids, ...pad], [1, P]),
        attention_mask: i64([...new Array(C - P).fill(0), ...ids.map(() => 1), ...pad], [1, C]),
        position_ids: i64([...ids, ...pad].map((_, i) => i), [1, P]),
      });
      keep(r, C - P, ids.length, 0, C);
      const V = r.logits.dims[2];
      return { dims: [1, ids.length, V], data: r.logits.data.subarray(0, ids.length * V) };
    }
    const r = await tg.run({
      ...pastOf(C - 1),
      input_ids: i64(ids, [1, 1]),
      attention_mask: i64([...new Array(n).fill(1), ...new Array(C - 1 - n).fill(0), 1], [1, C]),
      position_ids: i64([n], [1, 1]),
    });
    keep(r, C - 1, 1, n, C);
    return r.logits;
  };
}

async function decode(prompt, nGen, refLogits) {
  const [P, C] = shapes ? shapes.split(',').map(Number) : [];
  const step = shapes ? await staticRunner(P, C) : await dynamicRunner();
  let ids = prompt, n = 0, maxd = 0;
  const out = [];
  for (let s = 0; s < nGen; s++) {
    const logits = await step(ids, n);
    n += ids.length;
    const vocab = logits.dims[2];
    const last = logits.data.subarray((ids.length - 1) * vocab, ids.length * vocab);
    if (s < refLogits.length)
      for (let v = 0; v < vocab; v++) maxd = Math.max(maxd, Math.abs(last[v] - refLogits[s][v]));
    let best = 0;
    for (let v = 1; v < vocab; v++) if (last[v] > last[best]) best = v;
    out.push(best);
    ids = [best];
  }
  return { generated_ids: out, max_abs_dlogit: maxd };
}

for (const line of fs.readFileSync(casesPath, 'utf8').split('\n')) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  const r = await decode(c.prompt_ids, c.generated_ids.length, c.logits);
  console.log(JSON.stringify({ prompt_ids: c.prompt_ids, ...r, steps: c.logits.length }));
}
