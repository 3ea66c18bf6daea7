/**
 * `npm run bench:lora`: one LoRA policy-gradient step on the real SmolLM2-135M (issue 30, "Speed"), mars-lab against
 * PyTorch + PEFT (tests/bench/peer/lora_step_peer.py) at the same shape, LoRA and thread count, in the same
 * invocation. A figure, never a test.
 *
 *   npm run bench:lora -- [--rows 16] [--seq 128] [--rank 16] [--threads 1] [--repeats 3] [--backend wasm]
 *
 * mars-lab's step is engine/rl/policyUpdate (ppoToken, one epoch, one minibatch: the ratio is 1), passes cut by its
 * default tokens-per-pass, Adam over the adapters; the peer's is the same loss in train mode with torch.optim.Adam.
 * Rows are random token ids (the time of a step does not depend on which tokens), the second half of each row
 * trained, advantages alternating ±1. The peer runs its OpenBLAS at the core it detects and, when that differs from
 * mars-lab's, again at mars-lab's (kernel for kernel). Peak resident memory of this process is printed too.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { LoraAdapters, LORA_TARGET_NAMES } from '../../engine/model/lora/loraAdapters';
import { loadRealModel } from '../../engine/model/realModel';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { adamVariables, defaultTokensPerPass, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { initBackend, type BackendName } from '../../engine/tensor/backend';
import { peerPythonOrSkipReason, realModelPath } from '../fixtures/gguf/ggufKit';
import { msStat, stat, timeRepeats } from './stats';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '16' },
    seq: { type: 'string', default: '128' },
    rank: { type: 'string', default: '16' },
    threads: { type: 'string', default: '1' },
    repeats: { type: 'string', default: '3' },
    backend: { type: 'string' },
  },
});
const rows = Number(args.rows);
const seq = Number(args.seq);
const rank = Number(args.rank);
const threads = Number(args.threads);
const repeats = Number(args.repeats);
process.env.MARS_LAB_BLAS_THREADS = String(threads);

const report = await initBackend({ force: args.backend as BackendName | undefined });
const file = realModelPath();
const real = await loadRealModel(file);
const m = real.model;
const spec = { rank, alpha: 2 * rank, dropout: 0, targets: [...LORA_TARGET_NAMES] };
m.lora = LoraAdapters.create(m.config, spec, new Rng(1));
const rng = new Rng(2);
const ids = Array.from({ length: rows }, () => Array.from({ length: seq }, () => rng.int(m.config.vocab_size)));
const mask = ids.map((r) => r.map((_, t) => (t >= seq / 2 ? 1 : 0)));
const adv = ids.map((_, i) => (i % 2 ? -1 : 1));
const samples: Sample[] = ids.map((tokens, i) => ({
  role: 'node',
  groupId: 'g',
  paramId: 'policy',
  tokens,
  lossMask: mask[i]!,
  behaviourLogProbs: tokens.map(() => 0),
  reward: adv[i]! > 0 ? 1 : 0,
  advantage: adv[i]!,
}));
const opt = new Adam(adamVariables(m), { lr: 1e-4 });
const ours = await timeRepeats(
  () => policyUpdate(m, opt, samples, { loss: { kind: 'ppoToken', klCoef: 0 } }),
  repeats,
  1,
);
const rssMb = process.resourceUsage().maxRSS / 1024;

function peer(core?: string): { ms: number[]; torch: string; peft: string } {
  const n = String(threads);
  const env: NodeJS.ProcessEnv = { ...process.env, OPENBLAS_NUM_THREADS: n, OMP_NUM_THREADS: n, MKL_NUM_THREADS: n };
  if (core) env.OPENBLAS_CORETYPE = core;
  else delete env.OPENBLAS_CORETYPE;
  const input = JSON.stringify({
    gguf: file,
    ids,
    mask,
    adv,
    rank,
    alpha: 2 * rank,
    targets: spec.targets,
    threads,
    repeats,
  });
  const python = peerPythonOrSkipReason().python;
  if (!python) throw new Error('the PEFT peer needs .venv-peers: node scripts/peerEnv.mjs');
  const r = spawnSync(python, [path.resolve('tests/bench/peer/lora_step_peer.py')], {
    input,
    encoding: 'utf8',
    maxBuffer: 1 << 24,
    env: { ...env, TRANSFORMERS_VERBOSITY: 'error' },
  });
  if (r.status !== 0) throw new Error(`the PEFT peer failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { ms: number[]; torch: string; peft: string };
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
console.log(`SmolLM2-135M, LoRA rank ${rank} alpha ${2 * rank} on all seven projections, ${rows} × ${seq} tokens`);
console.log(`${cpu}, ${threads} thread(s); mars-lab ${report.chosen}, matrix products: ${report.native.detail}`);
console.log(
  `mars-lab: ${msStat(ours)} ms per step (passes of ≤ ${defaultTokensPerPass(m)} tokens), peak RSS ${rssMb.toFixed(0)} MB`,
);
const asInstalled = peer();
const t = stat(asInstalled.ms);
console.log(
  `PyTorch ${asInstalled.torch} + PEFT ${asInstalled.peft}, OpenBLAS as it detects: ${msStat(t)} ms; ratio ${(ours.median / t.median).toFixed(2)}`,
);
const core = report.native.kernel === 'openblas' ? report.native.core : undefined;
if (core) {
  const same = stat(peer(core).ms);
  console.log(
    `PyTorch + PEFT at mars-lab's core ${core}: ${msStat(same)} ms; ratio ${(ours.median / same.median).toFixed(2)}`,
  );
}
