/**
 * The llama.cpp side of `npm run bench:sampling` (tests/bench/realSamplingBench.ts), a benchmark fixture, never a
 * test: node-llama-cpp 3.21.1's prebuilt CPU build (scripts/llamaPeer.mjs) generating at most `newTokens` greedy
 * tokens (a sequence also ends at the model's end of generation) after each of the given prompts (token ids, so tokenization plays no part), every prompt in a sequence of
 * its own in one context, all at once: node-llama-cpp batches the sequences' evaluations into one llama_decode a
 * step, as mars-lab's sampler batches its rows.
 *
 *     node llama_sampling_peer.mjs PEER_DIR INPUT_JSON
 *
 * INPUT_JSON {"model", "prompts": [[ids]], "newTokens", "threads", "repeats"}; prints one JSON line {"ms": [wall ms of
 * each timed repeat], "tokens": tokens generated in the last repeat}. One untimed warm-up repeat first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peerDir, input] = process.argv.slice(2);
const entry = path.join(peerDir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const { getLlama } = await import(pathToFileURL(entry).href);
const spec = JSON.parse(fs.readFileSync(input, 'utf8'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: spec.model });
const rows = spec.prompts.length;
const longest = Math.max(...spec.prompts.map((p) => p.length));
const context = await model.createContext({
  contextSize: rows * (longest + spec.newTokens + 8),
  sequences: rows,
  threads: spec.threads,
  batchSize: Math.max(512, rows * longest),
});
const sequences = spec.prompts.map(() => context.getSequence());

async function once() {
  let tokens = 0;
  await Promise.all(
    spec.prompts.map(async (prompt, i) => {
      const seq = sequences[i];
      await seq.clearHistory();
      let n = 0;
      for await (const token of seq.evaluate(prompt, { temperature: 0 })) {
        n++;
        if (n >= spec.newTokens || model.isEogToken(token)) break;
      }
      tokens += n;
    }),
  );
  return tokens;
}

await once();
const ms = [];
let tokens = 0;
for (let r = 0; r < spec.repeats; r++) {
  const t0 = performance.now();
  tokens = await once();
  ms.push(performance.now() - t0);
}
console.log(JSON.stringify({ ms, tokens }));
await context.dispose();
await model.dispose();
await llama.dispose();
