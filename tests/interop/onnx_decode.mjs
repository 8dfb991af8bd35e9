// Runs an `edgelm export onnx` folder in ONNX Runtime (onnxruntime-node, CPU) the way
// onnxruntime-genai drives a decoder: prefill of the prompt, then one token per step through
// past_key_values -> present. For each case of CASES (edgelm `run --json --logits N` outputs, one
// JSON object per line) it decodes greedily as many tokens as edgelm generated and compares the
// logits of the first N steps with edgelm's. Prints one JSON line per case:
// {prompt_ids, generated_ids, max_abs_dlogit, steps}.
// usage: node onnx_decode.mjs NPM_DIR MODEL_DIR CASES.jsonl
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [npmDir, modelDir, casesPath] = process.argv.slice(2);
const ort = createRequire(path.resolve(npmDir, 'package.json'))('onnxruntime-node');
const cfg = JSON.parse(fs.readFileSync(modelDir + '/genai_config.json', 'utf8')).model.decoder;
const session = await ort.InferenceSession.create(modelDir + '/model.onnx', { executionProviders: ['cpu'] });
const i64 = (a, dims) => new ort.Tensor('int64', BigInt64Array.from(a.map(BigInt)), dims);

async function decode(prompt, nGen, refLogits) {
  const kvDims = (t) => [1, cfg.num_key_value_heads, t, cfg.head_size];
  let past = {};
  for (let l = 0; l < cfg.num_hidden_layers; l++)
    for (const kind of ['key', 'value'])
      past[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), kvDims(0));
  let ids = prompt, total = 0, maxd = 0;
  const out = [];
  for (let step = 0; step < nGen; step++) {
    const pos = ids.map((_, i) => total + i);
    total += ids.length;
    const r = await session.run({
      input_ids: i64(ids, [1, ids.length]),
      attention_mask: i64(new Array(total).fill(1), [1, total]),
      position_ids: i64(pos, [1, ids.length]),
      ...past,
    });
    const vocab = r.logits.dims[2];
    const last = r.logits.data.subarray((ids.length - 1) * vocab, ids.length * vocab);
    if (step < refLogits.length)
      for (let v = 0; v < vocab; v++) maxd = Math.max(maxd, Math.abs(last[v] - refLogits[step][v]));
    let best = 0;
    for (let v = 1; v < vocab; v++) if (last[v] > last[best]) best = v;
    out.push(best);
    past = {};
    for (let l = 0; l < cfg.num_hidden_layers; l++)
      for (const kind of ['key', 'value']) past[`past_key_values.${l}.${kind}`] = r[`present.${l}.${kind}`];
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
