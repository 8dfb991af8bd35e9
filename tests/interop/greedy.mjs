// Greedy continuation of prompts by llama.cpp (node-llama-cpp's prebuilt CPU library), for the
// interop tests: prints one JSON array of {prompt, prompt_ids, generated_ids, top}, top[i] being
// llama.cpp's 4 most probable [id, probability] pairs at generated step i (so a test can tell a
// near-tie, which rounding decides, from a real difference). GREEDY_TOP=N keeps N pairs instead
// (tests/lib/logit_delta.py turns them into logit differences: log(p_i / p_top) = l_i - l_top).
// GREEDY_CTX=N sets the context size (default 256; llama.cpp pads it to a multiple of 256), which
// picks LongRoPE's factors (long above the original context): run edgelm with the same -c.
// Usage: node greedy.mjs NODE_LLAMA_CPP_DIR MODEL.gguf N_PREDICT PROMPT...
// The KV cache is kept in F32 and flash attention off (its CPU kernel rounds to F16) so that
// llama.cpp and edgelm differ only in the order of float additions.
import {pathToFileURL} from "node:url";
import path from "node:path";

const [pkgDir, modelPath, nPredictArg, ...prompts] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(pkgDir, "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const nPredict = Number(nPredictArg);
const nTop = Number(process.env.GREEDY_TOP || 4);
const nCtx = Number(process.env.GREEDY_CTX || 256);
const results = [];

// the k most probable [id, probability] pairs of a Map over the whole vocabulary, most probable
// first, ties in vocabulary order: one pass, where sorting 100k+ entries at each step took seconds
function mostProbable(probabilities, k) {
    const best = [];
    for (const [id, p] of probabilities) {
        if (best.length === k && p <= best[k - 1][1]) continue;
        let i = Math.min(best.length, k - 1);
        for (; i > 0 && best[i - 1][1] < p; i--) best[i] = best[i - 1];
        best[i] = [id, p];
    }
    return best;
}

for (const prompt of prompts) {
    const context = await model.createContext({
        contextSize: nCtx, batchSize: 256, sequences: 1, threads: 1, flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
    });
    const sequence = context.getSequence();
    const bos = model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos] : [];
    const promptIds = bos.concat(Array.from(model.tokenize(prompt, false)));
    const generated = [], top = [];
    for await (const step of sequence.evaluateWithMetadata(promptIds, {probabilities: true},
                                                           {temperature: 0})) {
        generated.push(step.token);
        top.push(mostProbable(step.probabilities, nTop));
        if (generated.length >= nPredict) break;
    }
    results.push({prompt, prompt_ids: promptIds, generated_ids: generated, top});
    await context.dispose();
}
console.log(JSON.stringify(results));
await model.dispose();
await llama.dispose();
