/**
 * `npm run bench`: the performance suite (figures, never test assertions). Parts, all by default:
 *
 * - engine: per model size, one GRPO training step (forward, backward, Adam; ppoToken + k3 KL against a reference
 *   copy) on B sequences × T tokens, and sampling of N new tokens for batches 1, 16 and 64 with and without the KV
 *   cache; TF.js bytes, tensors leaked, and a plain matrix product of the MLP's shape (the backend's raw GEMM rate);
 * - peer: the same figures from PyTorch on the CPU with the same thread count (tests/bench/peer/torch_peer.py), in
 *   the same invocation, and the ratio mars-lab / PyTorch per figure; PyTorch runs at the OpenBLAS core it detects
 *   (as installed) and, when mars-lab's core differs, a second time at mars-lab's core (kernel for kernel);
 * - mars, marti: step breakdowns of the mars-tiny and marti-homo presets;
 * - runs: run-folder append rates and the watcher's append → event latency;
 * - leak (only with --leak-steps N): the tensor count after step 10 and after step N of the tiny model.
 *
 *   npm run bench -- [--parts engine,peer,mars,marti,runs (or '' for none)] [--sizes tiny,small,medium] [--repeats 5]
 *                    [--backend wasm] [--threads N] [--python PATH] [--leak-steps 1000] [--json out.json] [--md out.md]
 *
 * The matrix-product path (native OpenBLAS / own kernel / the backend's own, issue 16) and the optimiser's path are
 * printed in the header and recorded in the JSON; MARS_LAB_NATIVE=0 measures without the native kernels,
 * MARS_LAB_NATIVE_ADAM=0 without the fused optimiser only. --threads N gives both sides N BLAS threads
 * (MARS_LAB_BLAS_THREADS here; OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and torch.set_num_threads in the peer).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sizedConfig, parameterCount, MODEL_SIZES, type LlamaConfig, type ModelSize } from '../../engine/model/config';
import { cloneModel, initHfTensors, modelFromHf } from '../../engine/model/formats/hfWeights';
import type { LlamaModel } from '../../engine/model/llama';
import { generate } from '../../engine/model/sampler';
import { readCpu } from '../../engine/tensor/native/coreType';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { BACKENDS, initBackend, tf, type BackendName } from '../../engine/tensor/backend';
import { findTorchPython, runPeer, type PeerResult, type PeerSpec } from './peer';
import { benchRunFolders, describeRunFolderBench, type RunFolderBench } from './runsBench';
import { msStat, num, table, timeRepeats, timeRepeatsCpu, type Stat } from './stats';
import { benchTrainer, PHASES, type StepBreakdown } from './trainerBench';

const PARTS = ['engine', 'peer', 'mars', 'marti', 'runs'] as const;
const { values: args } = parseArgs({
  options: {
    parts: { type: 'string', default: PARTS.join(',') },
    sizes: { type: 'string', default: 'tiny,small,medium' },
    repeats: { type: 'string', default: '5' },
    backend: { type: 'string' },
    threads: { type: 'string' },
    batch: { type: 'string', default: '16' },
    seq: { type: 'string', default: '64' },
    'new-tokens': { type: 'string', default: '64' },
    'trainer-steps': { type: 'string', default: '4' },
    'leak-steps': { type: 'string', default: '0' },
    python: { type: 'string' },
    json: { type: 'string' },
    md: { type: 'string' },
  },
});

const B = Number(args.batch);
const T = Number(args.seq);
const NEW = Number(args['new-tokens']);
const REPEATS = Number(args.repeats);
const SAMPLE_BATCHES = [1, 16, 64];
const KL = 1e-3;
const parts = new Set(args.parts.split(',').filter(Boolean));
for (const p of parts) {
  if (!(PARTS as readonly string[]).includes(p)) {
    throw new Error(`--parts: unknown part '${p}' (known: ${PARTS.join(', ')})`);
  }
}
if (args.backend && !BACKENDS.includes(args.backend as BackendName)) {
  throw new Error(`--backend must be one of ${BACKENDS.join(', ')}`);
}
const sizes = args.sizes.split(',') as ModelSize[];
for (const s of sizes) {
  if (!(s in MODEL_SIZES)) {
    throw new Error(`--sizes: unknown size '${s}' (known: ${Object.keys(MODEL_SIZES).join(', ')})`);
  }
}

/** Fewer timed repeats for larger models, so the whole suite stays within minutes. */
const trainRepeats = (size: ModelSize) =>
  size === 'tiny' ? REPEATS : size === 'small' ? Math.max(3, Math.ceil(REPEATS / 2)) : 2;
/**
 * Batches at which the (deliberately slow) prefix-recomputing sampler is also timed, and how often. Its cost grows
 * with rows × new tokens² × parameters; beyond these it would take minutes and says so in the table.
 */
const NAIVE: Record<string, Record<number, number>> = {
  micro: { 1: 3, 16: 3, 64: 1 },
  tiny: { 1: 3, 16: 3, 64: 1 },
  small: { 1: 1, 16: 1 },
  medium: { 1: 1 },
};

/** Forward + backward FLOPs of one training step: 6·params·tokens plus attention (no causal saving counted). */
function trainFlops(c: LlamaConfig): number {
  return 6 * parameterCount(c) * B * T + 6 * c.num_hidden_layers * B * T * T * c.hidden_size;
}

function makeModel(cfg: LlamaConfig, rng: Rng) {
  return modelFromHf(
    cfg,
    initHfTensors(cfg, () => rng.normal()),
  );
}

function trainingBatch(cfg: LlamaConfig, rng: Rng): Sample[] {
  return Array.from({ length: B }, (_, i) => {
    const tokens = Array.from({ length: T }, () => rng.int(cfg.vocab_size));
    return {
      role: 'node',
      groupId: 'g',
      paramId: 'p',
      tokens,
      lossMask: tokens.map((_, t) => (t > 0 ? 1 : 0)),
      behaviourLogProbs: tokens.map(() => 0),
      reward: i % 2,
      advantage: i % 2 ? 1 : -1,
    };
  });
}

const trainStep = (model: LlamaModel, reference: LlamaModel, opt: Adam, samples: Sample[]) =>
  policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: KL }, reference });

interface SamplingRow {
  batch: number;
  kvMs: Stat;
  kvTokensPerSec: number;
  naiveMs: Stat | null;
  naiveTokensPerSec: number | null;
  kvSpeedup: number | null;
}

interface EngineRow {
  size: ModelSize;
  params: number;
  train: Stat;
  /** CPU time of the process per training step (all threads). */
  trainCpu: Stat;
  trainTokensPerSec: number;
  trainGflops: number;
  sampling: SamplingRow[];
  gemm: { shape: [number, number, number]; ms: number; gflops: number };
  tfBytes: number;
  tensorsLeaked: number;
  /** The process's resident-memory high-water mark once this size was done (sizes run smallest first). */
  peakRssMiB: number;
  peer?: PeerResult;
  /** PyTorch again at mars-lab's OpenBLAS core, when the core it detects is another. */
  peerSameCore?: PeerResult;
}

async function gemmRate(m: number, k: number, n: number) {
  const a = tf.randomNormal([m, k]);
  const b = tf.randomNormal([k, n]);
  const s = await timeRepeats(
    async () => {
      const c = tf.matMul(a, b);
      await c.data();
      c.dispose();
    },
    15,
    3,
  );
  tf.dispose([a, b]);
  return { shape: [m, k, n] as [number, number, number], ms: s.median, gflops: (2 * m * k * n) / s.median / 1e6 };
}

async function benchEngine(size: ModelSize): Promise<EngineRow> {
  const cfg = sizedConfig(size);
  const rng = new Rng(1);
  const model = makeModel(cfg, rng);
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 1e-5 });
  const samples = trainingBatch(cfg, rng);
  const tensorsBefore = tf.memory().numTensors;
  const { wall: train, cpu: trainCpu } = await timeRepeatsCpu(
    () => trainStep(model, reference, opt, samples),
    trainRepeats(size),
    2,
  );
  const tensorsLeaked = tf.memory().numTensors - tensorsBefore;
  const sampling: SamplingRow[] = [];
  for (const rows of SAMPLE_BATCHES) {
    const prompts = Array.from({ length: rows }, () => [1]);
    const kv = await timeRepeats(
      () => generate(model, prompts, { maxNewTokens: NEW, rng }),
      size === 'medium' ? 2 : 3,
      1,
    );
    const naiveRepeats = NAIVE[size]?.[rows] ?? 0;
    const naive = naiveRepeats
      ? await timeRepeats(() => generate(model, prompts, { maxNewTokens: NEW, rng, useCache: false }), naiveRepeats, 0)
      : null;
    const tps = (s: Stat) => (rows * NEW) / (s.median / 1000);
    sampling.push({
      batch: rows,
      kvMs: kv,
      kvTokensPerSec: tps(kv),
      naiveMs: naive,
      naiveTokensPerSec: naive && tps(naive),
      kvSpeedup: naive && naive.median / kv.median,
    });
  }
  const gemm = await gemmRate(B * T, cfg.hidden_size, cfg.intermediate_size);
  const tfBytes = tf.memory().numBytes;
  model.dispose();
  reference.dispose();
  opt.dispose();
  return {
    size,
    params: parameterCount(cfg),
    train,
    trainCpu,
    trainTokensPerSec: (B * T) / (train.median / 1000),
    trainGflops: trainFlops(cfg) / (train.median / 1000) / 1e9,
    sampling,
    gemm,
    tfBytes,
    tensorsLeaked,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

function peerSpec(size: ModelSize, threads: number): PeerSpec {
  const cfg = sizedConfig(size);
  return {
    config: cfg,
    batch: B,
    seq: T,
    klCoef: KL,
    threads,
    trainRepeats: trainRepeats(size),
    newTokens: NEW,
    sampleRepeats: size === 'medium' ? 2 : 3,
    sampleBatches: SAMPLE_BATCHES.map((rows) => [rows, NAIVE[size]?.[rows] ?? 0]),
    gemm: [[B * T, cfg.hidden_size, cfg.intermediate_size]],
  };
}

/** Tensor count and bytes after step 10 and after step `steps` of the tiny model's training step. */
async function leakCheck(steps: number) {
  const cfg = sizedConfig('tiny');
  const rng = new Rng(2);
  const model = makeModel(cfg, rng);
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 1e-4 });
  const samples = trainingBatch(cfg, rng);
  let at10 = { numTensors: 0, numBytes: 0, rssMiB: 0 };
  const t0 = performance.now();
  for (let i = 1; i <= steps; i++) {
    await trainStep(model, reference, opt, samples);
    if (i === 10) {
      at10 = {
        numTensors: tf.memory().numTensors,
        numBytes: tf.memory().numBytes,
        rssMiB: process.memoryUsage().rss / 2 ** 20,
      };
    }
    if (i % 100 === 0) process.stdout.write(`\rleak check: step ${i}/${steps}`);
  }
  const end = {
    numTensors: tf.memory().numTensors,
    numBytes: tf.memory().numBytes,
    rssMiB: process.memoryUsage().rss / 2 ** 20,
  };
  process.stdout.write('\n');
  model.dispose();
  reference.dispose();
  opt.dispose();
  return { steps, afterStep10: at10, afterLastStep: end, minutes: (performance.now() - t0) / 60000 };
}

// ---------------------------------------------------------------------------------------------------------------

if (args.threads !== undefined) process.env.MARS_LAB_BLAS_THREADS = args.threads;
const report = await initBackend({ force: args.backend as BackendName | undefined });
/** Threads of the matrix products: the native BLAS's when it runs them, else the backend's. */
const threads =
  args.threads !== undefined ? Number(args.threads) : report.native.active ? report.native.threads : report.threads;
const cpu = `${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}`;
const header = `mars-lab bench: backend ${report.chosen} (threads ${report.threads}${report.simd ? ', SIMD' : ''}), ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}, ${new Date().toISOString().slice(0, 10)}`;
const lscpu = spawnSync('lscpu', { encoding: 'utf8' });
const cpuFlags = readCpu()?.flags;
/** The flags that decide the kernels: SIMD width and FMA. */
const simdFlags = cpuFlags
  ? [...cpuFlags].filter((f) => /^(sse4_2|avx|avx2|fma|avx512\w*|amx\w*)$/.test(f)).join(' ')
  : 'unknown (no /proc/cpuinfo)';
const lscpuText =
  lscpu.status === 0
    ? lscpu.stdout
        .split('\n')
        .filter((l) => !/^(Flags|Vulnerability)/.test(l))
        .join('\n')
    : null;
const load = os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(' ');
console.log(header);
const md: string[] = [
  header,
  `CPU flags (SIMD): ${simdFlags}`,
  `matrix products: ${report.native.active ? 'native' : "the backend's own"} — ${report.native.detail}`,
  `optimiser (Adam): ${report.native.adam ? 'native' : 'tensor ops'} — ${report.native.adamDetail}`,
  `load average at the start: ${load}`,
  '',
];
for (const line of md.slice(1, -1)) console.log(line);
const say = (s: string) => {
  console.log(s);
  md.push(s);
};

const out: Record<string, unknown> = {
  date: new Date().toISOString(),
  command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
  backend: report,
  machine: {
    cpu: os.cpus()[0]?.model,
    cores: os.cpus().length,
    memGiB: os.totalmem() / 2 ** 30,
    node: process.versions.node,
    lscpu: lscpuText,
    loadAverageAtStart: os.loadavg(),
  },
  batch: B,
  seq: T,
  newTokens: NEW,
  threads,
  cpuFlags: simdFlags,
};

if (parts.has('engine')) {
  const peerPy = parts.has('peer') ? findTorchPython(args.python) : null;
  const rows: EngineRow[] = [];
  for (const s of sizes) {
    process.stdout.write(`engine: ${s}…\n`);
    const r = await benchEngine(s);
    if (peerPy && 'python' in peerPy) {
      process.stdout.write(`peer: ${s}…\n`);
      r.peer = runPeer(peerPy.python, peerSpec(s, threads));
      const ours = report.native.kernel === 'openblas' ? report.native.core : undefined;
      if (ours && r.peer.blas?.core && r.peer.blas.core.toLowerCase() !== ours.toLowerCase()) {
        process.stdout.write(`peer at core ${ours}: ${s}…\n`);
        r.peerSameCore = runPeer(peerPy.python, peerSpec(s, threads), ours);
      }
    }
    rows.push(r);
  }
  out.engine = rows;
  const ratio = (ours: number, theirs: number | undefined) => (theirs ? `×${(ours / theirs).toFixed(1)}` : '—');
  say(
    `\nTraining step: GRPO update (ppoToken + k3 KL vs a frozen reference, Adam) on ${B} × ${T} tokens, vocabulary 512; ms per step median (min–max, n) after 2 warm-up steps.`,
  );
  if (peerPy && 'skip' in peerPy) say(peerPy.skip);
  else if (peerPy) {
    const blas = rows.find((r) => r.peer?.blas)?.peer?.blas;
    const blasText = blas?.core
      ? `OpenBLAS core ${blas.core} as it detects it, ${blas.threads} BLAS thread(s)`
      : `BLAS core unknown (${JSON.stringify(blas ?? null)})`;
    const same = rows.find((r) => r.peerSameCore)?.peerSameCore?.blas;
    say(
      `PyTorch peer: ${peerPy.python}, torch ${peerPy.torch}, ${threads} thread(s) like mars-lab's matrix products (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=${threads}); ${blasText}; ` +
        (same
          ? `"at mars-lab's core": PyTorch again with OPENBLAS_CORETYPE=${same.core} (kernel for kernel); `
          : `mars-lab's core is the same, so kernel for kernel is the same column; `) +
        'ratio = mars-lab time / PyTorch time (as installed). CPU = process CPU time per step, all threads.',
    );
  }
  say('');
  say(
    table(
      [
        'size',
        'parameters',
        'mars-lab ms/step',
        'CPU ms',
        'tokens/s',
        'GFLOP/s',
        'PyTorch ms/step',
        'PyTorch CPU ms',
        'ratio',
        "PyTorch at mars-lab's core",
        'ratio (same core)',
      ],
      rows.map((r) => [
        r.size,
        `${(r.params / 1e6).toFixed(2)}M`,
        msStat(r.train),
        num(r.trainCpu.median),
        num(r.trainTokensPerSec),
        num(r.trainGflops, 1),
        r.peer ? msStat(r.peer.train.msPerStep) : '—',
        r.peer?.train.cpuMsPerStep ? num(r.peer.train.cpuMsPerStep.median) : '—',
        ratio(r.train.median, r.peer?.train.msPerStep.median),
        r.peerSameCore ? msStat(r.peerSameCore.train.msPerStep) : 'same core',
        r.peerSameCore ? ratio(r.train.median, r.peerSameCore.train.msPerStep.median) : '—',
      ]),
    ),
  );
  say(
    `\nSampling: ${NEW} new tokens from a 1-token prompt, temperature 1; tokens/s (median ms). "recompute" reruns the whole prefix every token.\n`,
  );
  say(
    table(
      [
        'size',
        'batch',
        'KV cache',
        'recompute',
        'KV speed-up',
        'PyTorch KV',
        'PyTorch recompute',
        'ratio KV',
        'ratio recompute',
        'ratio KV (same core)',
      ],
      rows.flatMap((r) =>
        r.sampling.map((s) => {
          const p = r.peer?.sampling.find((x) => x.batch === s.batch);
          const q = r.peerSameCore?.sampling.find((x) => x.batch === s.batch);
          return [
            r.size,
            String(s.batch),
            `${num(s.kvTokensPerSec)} tok/s (${num(s.kvMs.median)} ms)`,
            s.naiveMs ? `${num(s.naiveTokensPerSec!)} tok/s (${num(s.naiveMs.median)} ms)` : 'not run (minutes)',
            s.kvSpeedup ? `×${s.kvSpeedup.toFixed(1)}` : '—',
            p ? `${num(p.kvTokensPerSec)} tok/s` : '—',
            p?.naiveTokensPerSec ? `${num(p.naiveTokensPerSec)} tok/s` : '—',
            ratio(s.kvMs.median, p?.kvMs.median),
            s.naiveMs ? ratio(s.naiveMs.median, p?.naiveMs?.median) : '—',
            q ? ratio(s.kvMs.median, q.kvMs.median) : 'same core',
          ];
        }),
      ),
    ),
  );
  say(
    '\nRaw matrix product of the MLP shape (tokens × hidden · hidden × intermediate), the ceiling of every formulation above:\n',
  );
  say(
    table(
      ['size', 'shape', 'mars-lab GFLOP/s', 'PyTorch GFLOP/s', "PyTorch at mars-lab's core"],
      rows.map((r) => [
        r.size,
        r.gemm.shape.join('×'),
        num(r.gemm.gflops, 1),
        r.peer ? num(r.peer.gemm[0]!.gflops, 1) : '—',
        r.peerSameCore ? num(r.peerSameCore.gemm[0]!.gflops, 1) : 'same core',
      ]),
    ),
  );
  say('\nMemory:\n');
  say(
    table(
      [
        'size',
        'TF.js bytes held (model, reference, Adam)',
        'tensors leaked over the timed steps',
        'process peak RSS so far',
      ],
      rows.map((r) => [
        r.size,
        `${num(r.tfBytes / 2 ** 20, 1)} MiB`,
        String(r.tensorsLeaked),
        `${num(r.peakRssMiB)} MiB`,
      ]),
    ),
  );
}

for (const [algorithm, preset] of [
  ['mars', 'mars-tiny'],
  ['marti', 'marti-homo'],
] as const) {
  if (!parts.has(algorithm)) continue;
  process.stdout.write(`${algorithm}: ${preset}, ${args['trainer-steps']} steps after one warm-up step…\n`);
  const b: StepBreakdown = await benchTrainer(algorithm, preset, Number(args['trainer-steps']));
  out[algorithm] = b;
  say(
    `\n${algorithm.toUpperCase()} step breakdown (${preset}, ${b.steps} steps after the first): mean ms per step of each phase (share of the mean step); whole step median (min–max, n):\n`,
  );
  const cols = [...PHASES[algorithm]];
  const whole = cols.reduce((s, c) => s + b.phases[c]!, 0) + b.otherMs;
  const cell = (ms: number) => `${num(ms)} (${((100 * ms) / whole).toFixed(0)}%)`;
  say(
    table(
      [...cols.map((c) => c.replace(/Ms$/, '')), 'other', 'step'],
      [[...cols.map((c) => cell(b.phases[c]!)), cell(b.otherMs), msStat(b.total)]],
    ),
  );
}

if (parts.has('runs')) {
  process.stdout.write('runs: run-folder appends and watcher latency…\n');
  const r: RunFolderBench = await benchRunFolders();
  out.runs = r;
  say('\nRun folders (20,000 appended lines per file; 300 single appends watched):\n');
  for (const line of describeRunFolderBench(r)) say(`- ${line}`);
}

const leakSteps = Number(args['leak-steps']);
if (leakSteps > 0) {
  const l = await leakCheck(leakSteps);
  out.leak = l;
  say(
    `\nLeak check (tiny training step × ${l.steps}, ${l.minutes.toFixed(1)} min): tensors ${l.afterStep10.numTensors} after step 10 → ${l.afterLastStep.numTensors} after step ${l.steps}; TF.js bytes ${num(l.afterStep10.numBytes / 2 ** 20, 2)} → ${num(l.afterLastStep.numBytes / 2 ** 20, 2)} MiB; process RSS ${num(l.afterStep10.rssMiB)} → ${num(l.afterLastStep.rssMiB)} MiB.`,
  );
}

// the kernel's high-water mark (kB), not a sample: a busy event loop cannot sample during a long step
const peakRss = process.resourceUsage().maxRSS * 1024;
out.peakRssBytes = peakRss;
say(`\nPeak resident memory of the benchmark process: ${num(peakRss / 2 ** 20)} MiB.`);
if (args.json) {
  fs.writeFileSync(args.json, JSON.stringify(out, null, 2));
  console.log(`wrote ${args.json}`);
}
if (args.md) {
  fs.writeFileSync(args.md, md.join('\n') + '\n');
  console.log(`wrote ${args.md}`);
}
process.exit(0);
