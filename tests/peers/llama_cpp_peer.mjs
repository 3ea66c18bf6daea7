/**
 * The reference side of tests/unit/model/llamaCppPeers.test.ts: greedy continuations by llama.cpp itself
 * (node-llama-cpp 3.21.1's prebuilt CPU binary, installed apart from the project by scripts/llamaPeer.mjs), on token
 * ids given by the test, so tokenization plays no part.
 *
 *     node llama_cpp_peer.mjs PEER_DIR INPUT_JSON OUTPUT_JSON
 *
 * INPUT_JSON {"model": GGUF path, "prompts": [[ids]], "maxTokens": N, "threads": T}; OUTPUT_JSON {"results":
 * [{"tokens": [...], "logProbs": [...]}], "seconds": S}: each token is llama.cpp's argmax at temperature 0, its
 * log-prob the natural log of the probability llama.cpp gives it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peerDir, input, output] = process.argv.slice(2);
const entry = path.join(peerDir, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const { getLlama } = await import(pathToFileURL(entry).href);
const spec = JSON.parse(fs.readFileSync(input, 'utf8'));
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: spec.model });
const context = await model.createContext({ contextSize: 1024, threads: spec.threads ?? 2 });
const results = [];
const t0 = performance.now();
const seq = context.getSequence();
for (const prompt of spec.prompts) {
  await seq.clearHistory();
  const tokens = [];
  const logProbs = [];
  for await (const r of seq.evaluateWithMetadata(prompt, { probabilities: true }, { temperature: 0 })) {
    tokens.push(r.token);
    logProbs.push(Math.log(r.probabilities.get(r.token) ?? Number.NaN));
    if (tokens.length >= spec.maxTokens || model.isEogToken(r.token)) break;
  }
  results.push({ tokens, logProbs });
}
fs.writeFileSync(output, JSON.stringify({ results, seconds: (performance.now() - t0) / 1000 }));
await context.dispose();
await model.dispose();
await llama.dispose();
