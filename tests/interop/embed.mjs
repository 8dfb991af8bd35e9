// Embeddings by llama.cpp (node-llama-cpp's prebuilt CPU library), for the embeddings interop
// test: prints one JSON array of {prompt, prompt_ids, embedding}, the embedding being what
// llama.cpp pools by the model's pooling_type (llama_get_embeddings_seq: not normalized), for the
// prompt's tokens with BOS and EOS as the vocabulary adds them (as getEmbeddingFor does).
// Usage: node embed.mjs NODE_LLAMA_CPP_DIR MODEL.gguf PROMPT...
import {pathToFileURL} from "node:url";
import path from "node:path";

const [pkgDir, modelPath, ...prompts] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(pkgDir, "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createEmbeddingContext({contextSize: 256, batchSize: 256, threads: 1});
const results = [];
for (const prompt of prompts) {
    const t = model.tokens;
    const ids = Array.from(model.tokenize(prompt, false));
    if (t.shouldPrependBosToken && t.bos != null) ids.unshift(t.bos);
    if (t.shouldAppendEosToken && t.eos != null) ids.push(t.eos);
    const embedding = await context.getEmbeddingFor(ids);
    results.push({prompt, prompt_ids: ids, embedding: Array.from(embedding.vector)});
}
console.log(JSON.stringify(results));
await context.dispose();
await model.dispose();
await llama.dispose();
