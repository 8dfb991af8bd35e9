// Greedy continuation of prompts by llama.cpp (node-llama-cpp's prebuilt CPU library), for the
// interop tests: prints one JSON array of {prompt, prompt_ids, generated_ids, top}, top[i] being
// llama.cpp's 4 most probable [id, probability] pairs at generated step i, the probabilities a
// softmax over those 4 logits (so a test can tell a near-tie, which rounding decides, from a real
// difference; a gap between two of them is no smaller than over the whole vocabulary).
// GREEDY_TOP=N keeps N pairs instead (tests/lib/logit_delta.py turns them into logit
// differences: log(p_i / p_top) = l_i - l_top).
// GREEDY_CTX=N sets the context size (default 256; llama.cpp pads it to a multiple of 256), which
// picks LongRoPE's factors (long above the original context): run edgelm with the same -c.
// Usage: node greedy.mjs NODE_LLAMA_CPP_DIR MODEL.gguf N_PREDICT PROMPT...
//        node greedy.mjs NODE_LLAMA_CPP_DIR --jobs FILE
// The second form runs many models in one process (the library and its backends loaded once, a
// few seconds saved a model): FILE holds one JSON object a line, {out, model, n_predict, prompts,
// top, ctx} (top and ctx as GREEDY_TOP and GREEDY_CTX, null for their defaults), and each job's
// array is written to its out (through out.PID, renamed). A job that fails is reported on stderr
// and the next one runs; the exit status is 1 if any failed.
// The KV cache is kept in F32 and flash attention off (its CPU kernel rounds to F16) so that
// llama.cpp and edgelm differ only in the order of float additions.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [pkgDir, ...rest] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(pkgDir, "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});

// the [id, probability] pairs of the sampler's Map, most probable first, ties to the lower id (as
// llama.cpp's greedy sampler, which keeps the first of equal logits in vocabulary order)
const mostProbable = (probabilities) =>
    Array.from(probabilities).sort((x, y) => y[1] - x[1] || x[0] - y[0]);

async function greedy(job) {
    const model = await llama.loadModel({modelPath: job.model});
    const nTop = Number(job.top || 4), nCtx = Number(job.ctx || 256);
    const results = [];
    // one context for all prompts (creating one costs more than a tiny model's prompt); each
    // prompt gets a fresh sequence, whose KV cache and recurrent state start empty
    const context = await model.createContext({
        contextSize: nCtx, batchSize: 256, sequences: 1, threads: 1, flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
    });
    // llama.cpp's top-k sampler keeps the nTop largest logits, sorted, so the library's softmax
    // (the probabilities it returns) runs over nTop tokens instead of the whole vocabulary: ~100 ms
    // a step at 150k tokens, most of the reference's time. The ratios p_i / p_top, all that
    // logit_delta.py reads, are the same; the next token is the most probable one (greedy, ties to
    // the lower id), fed back by hand, since the sampler's own pick would be a random one of them.
    const next = {probabilities: true,
                  options: {temperature: 1, topK: nTop, topP: 1, minP: 0, seed: 0}};
    for (const prompt of job.prompts) {
        const sequence = context.getSequence();
        const bos = model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos] : [];
        const promptIds = bos.concat(Array.from(model.tokenize(prompt, false)));
        const generated = [], top = [];
        let input = promptIds.slice(0, -1).concat([[promptIds.at(-1), {generateNext: next}]]);
        while (generated.length < job.n_predict) {
            const out = (await sequence.controlledEvaluate(input))[input.length - 1];
            const best = mostProbable(out?.next?.probabilities ?? []);
            // the library returns no probabilities when its sampler selects no token (an empty
            // top-16 was seen once, 2026-12-05, with evaluateWithMetadata): the job fails, and
            // greedy_ref runs it again alone, rather than a short reference being written
            if (best.length < nTop)
                throw new Error(`${prompt}: step ${generated.length}: ${best.length} tokens`);
            generated.push(best[0][0]);
            top.push(best);
            input = [[best[0][0], {generateNext: next}]];
        }
        results.push({prompt, prompt_ids: promptIds, generated_ids: generated, top});
        sequence.dispose();
        await new Promise(setImmediate); // the sequence id is reclaimed asynchronously
    }
    await context.dispose();
    await model.dispose();
    return JSON.stringify(results);
}

if (rest[0] === "--jobs") {
    let failures = 0;
    for (const line of fs.readFileSync(rest[1], "utf8").split("\n").filter(Boolean)) {
        const job = JSON.parse(line);
        try {
            const tmp = `${job.out}.${process.pid}`; // two tests may fetch the same reference
            fs.writeFileSync(tmp, (await greedy(job)) + "\n");
            fs.renameSync(tmp, job.out);
        } catch (e) {
            console.error(`${job.model}: ${e.message}`);
            failures++;
        }
    }
    process.exitCode = failures ? 1 : 0;
} else {
    const [model, nPredict, ...prompts] = rest;
    console.log(await greedy({model, n_predict: Number(nPredict), prompts,
                              top: process.env.GREEDY_TOP, ctx: process.env.GREEDY_CTX}));
}
await llama.dispose();
