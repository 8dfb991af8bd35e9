// Token ids by llama.cpp (node-llama-cpp's prebuilt CPU library) of each text, for comparing
// edgelm's tokenizer with llama.cpp's on the same vocabulary: prints one JSON array of id arrays,
// the texts tokenized without BOS and with control-token text taken as plain text.
// Usage: node tokenize.mjs NODE_LLAMA_CPP_DIR VOCAB.gguf TEXT...
import {pathToFileURL} from "node:url";
import path from "node:path";

const [pkgDir, modelPath, ...texts] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(pkgDir, "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
console.log(JSON.stringify(texts.map((t) => Array.from(model.tokenize(t, false)))));
await model.dispose();
await llama.dispose();
