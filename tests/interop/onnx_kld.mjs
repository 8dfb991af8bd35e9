// KL divergence of QDQ exports from a baseline export, computed from ONNX Runtime's logits the way
// `edgelm eval` chunks a text: chunk c is tokens [c·P, (c+1)·P) with BOS in its first slot, run
// through each folder's prompt_processor.onnx (static P tokens, its past slots masked off), and
// scored at positions P/2 .. P-2: KLD = Σ_v p_base(v)·(log p_base(v) - log p(v)), log-softmax in
// double. Prints {"chunks", "positions", "ppl_base", "kld": {DIR: mean over positions}}.
// usage: node onnx_kld.mjs NPM_DIR TOKENS.json N_CHUNKS BASE_DIR DIR...
//   TOKENS.json: `edgelm tokenize --ids` of the text (a list starting with BOS)
import fs from 'node:fs';
import { onnxRuntime } from './onnx_session.mjs';

const [npmDir, tokensPath, nChunksArg, baseDir, ...dirs] = process.argv.slice(2);
const { ort, open, i64 } = onnxRuntime(npmDir);
const ids = JSON.parse(fs.readFileSync(tokensPath, 'utf8'));
const sessions = await Promise.all([baseDir, ...dirs].map((d) => open(`${d}/prompt_processor.onnx`)));
const meta = (s, name) => s.inputMetadata.find((x) => x.name === name).shape;
const [, P] = meta(sessions[0], 'input_ids'), [, C] = meta(sessions[0], 'attention_mask');
const [, heads, past, hd] = meta(sessions[0], 'past_key_values.0.key');
const nChunks = Number(nChunksArg);
if (ids.length < nChunks * P) throw new Error(`${tokensPath}: ${ids.length} tokens < ${nChunks} chunks of ${P}`);

const feeds = (window) => {
  const f = {
    input_ids: i64(window, [1, P]),
    attention_mask: i64([...new Array(C - P).fill(0), ...new Array(P).fill(1)], [1, C]),
    position_ids: i64(window.map((_, i) => i), [1, P]),
  };
  for (const name of sessions[0].inputNames.filter((x) => x.startsWith('past_key_values.')))
    f[name] = new ort.Tensor('float32', new Float32Array(heads * past * hd), [1, heads, past, hd]);
  return f;
};
// log-softmax of row j of logits [1, P, V], in double
const logSoftmax = (data, j, V) => {
  const row = data.subarray(j * V, (j + 1) * V);
  let max = -Infinity, sum = 0;
  for (const x of row) max = Math.max(max, x);
  for (const x of row) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(row, (x) => x - lse);
};

const kld = dirs.map(() => 0);
let positions = 0, nll = 0;
for (let c = 0; c < nChunks; c++) {
  const window = ids.slice(c * P, (c + 1) * P);
  window[0] = ids[0];
  const out = [];
  for (const s of sessions) out.push((await s.run(feeds(window))).logits);
  const V = out[0].dims[2];
  for (let j = P / 2; j < P - 1; j++) {
    const base = logSoftmax(out[0].data, j, V);
    nll -= base[window[j + 1]];
    positions++;
    for (let k = 0; k < dirs.length; k++) {
      const q = logSoftmax(out[k + 1].data, j, V);
      let kl = 0;
      for (let v = 0; v < V; v++) kl += Math.exp(base[v]) * (base[v] - q[v]);
      kld[k] += kl;
    }
  }
}
console.log(JSON.stringify({
  chunks: nChunks, positions, ppl_base: Math.exp(nll / positions),
  kld: Object.fromEntries(dirs.map((d, k) => [d, kld[k] / positions])),
}));
