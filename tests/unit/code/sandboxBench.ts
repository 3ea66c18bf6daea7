/**
 * Figures, not a test (vitest runs only *.test.ts): the sandbox's start-up cost against a bare interpreter and the
 * alternatives (unshare -n, bubblewrap alone), and its throughput at 16 programs × 8 tests, medians over repeats.
 * docs/results/marti-python.md quotes its output. Run on an otherwise idle machine:
 *
 *   npx tsx tests/unit/code/sandboxBench.ts [--repeats 30] [--batches 7]
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { detectIsolation } from '../../../engine/code/sandbox/isolation';
import { DEFAULT_LIMITS } from '../../../engine/code/sandbox/limits';
import { runAll } from '../../../engine/code/sandbox/pool';
import { bwrapArgs, runInSandbox, sandboxIds, type SandboxRequest } from '../../../engine/code/sandbox/sandbox';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REPEATS = arg('--repeats', 30);
const BATCHES = arg('--batches', 7);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function timeSpawn(cmd: string, args: string[], opts: { uid?: number; gid?: number } = {}): number {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { stdio: 'ignore', env: {}, ...opts });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')}… exited ${r.status ?? r.signal}`);
  return ms;
}

async function main(): Promise<void> {
  const iso = await detectIsolation();
  if (iso.kind !== 'bubblewrap') throw new Error('bubblewrap is needed for these figures');
  const ids = sandboxIds() ?? {};
  const py = iso.python;
  const bw = bwrapArgs(iso, DEFAULT_LIMITS);
  const bwPrefix = bw.slice(0, bw.indexOf('--'));
  const rows: [string, () => number | Promise<number>][] = [
    [`${py} -c pass`, () => timeSpawn(py, ['-c', 'pass'])],
    [`${py} -I -S -B -c pass`, () => timeSpawn(py, ['-I', '-S', '-B', '-c', 'pass'])],
    [`${py} -I -B -c pass (site imported)`, () => timeSpawn(py, ['-I', '-B', '-c', 'pass'])],
    ['unshare -n python3 -I -S -B -c pass', () => timeSpawn('unshare', ['-n', py, '-I', '-S', '-B', '-c', 'pass'])],
    [
      'bwrap (our arguments) python3 -I -S -B -c pass',
      () => timeSpawn(iso.bwrap, [...bwPrefix, '--', py, '-I', '-S', '-B', '-c', 'pass'], ids),
    ],
    [
      'runner, unsandboxed (rlimits only), `x = 1`',
      async () => (await runInSandbox({ kind: 'none', python: py }, DEFAULT_LIMITS, { program: 'x = 1' })).wallMs,
    ],
    [
      'runner in bubblewrap (the sandbox), `x = 1`',
      async () => (await runInSandbox(iso, DEFAULT_LIMITS, { program: 'x = 1' })).wallMs,
    ],
  ];
  console.log(
    `# ${os.cpus()[0]?.model ?? '?'} × ${os.availableParallelism()}, load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}, ${new Date().toISOString()}`,
  );
  console.log(`## start-up, median of ${REPEATS} sequential runs (ms, spawn to exit, from Node)`);
  for (const [name, fn] of rows) {
    await fn(); // warm the page cache
    const xs: number[] = [];
    for (let i = 0; i < REPEATS; i++) xs.push(await fn());
    console.log(
      `${name}\t${median(xs).toFixed(1)}\t(min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`,
    );
  }

  // 16 programs × 8 tests: each a small function (a HumanEval-sized body) and 8 asserts on it.
  const batch: SandboxRequest[] = Array.from({ length: 16 }, (_, p) => ({
    program: `def f(xs):\n    out = []\n    for x in xs:\n        if x % ${p + 2} == 0:\n            out.append(x * ${p + 1})\n    return sorted(out)\n`,
    tests: Array.from({ length: 8 }, (_, t) => {
      const xs = Array.from({ length: 20 }, (_, i) => (i * (t + 3)) % 97);
      const want = xs
        .filter((x) => x % (p + 2) === 0)
        .map((x) => x * (p + 1))
        .sort((a, b) => a - b);
      return `assert f(${JSON.stringify(xs)}) == ${JSON.stringify(want)}`;
    }),
  }));
  console.log(`## 16 programs × 8 tests, median of ${BATCHES} batches`);
  for (const workers of [1, 2, 4]) {
    for (const [label, mode] of [
      ['bubblewrap', iso],
      ['unsandboxed', { kind: 'none', python: py } as const],
    ] as const) {
      const times: number[] = [];
      for (let b = 0; b <= BATCHES; b++) {
        const t0 = performance.now();
        const rs = await runAll(mode, DEFAULT_LIMITS, batch, workers);
        const ms = performance.now() - t0;
        if (!rs.every((r) => r.passed)) throw new Error(`a bench program failed: ${rs.find((r) => !r.passed)?.reason}`);
        if (b > 0) times.push(ms); // the first batch warms up
      }
      const m = median(times);
      console.log(
        `${label}, ${workers} workers\t${m.toFixed(0)} ms a batch\t${((16 * 1000) / m).toFixed(1)} programs/s`,
      );
    }
  }
}

await main();
