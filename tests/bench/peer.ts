/**
 * The PyTorch peer (tests/bench/peer/torch_peer.py), run by `npm run bench` in the same invocation when a Python with
 * torch is present. It receives only numbers (model config, shapes, thread count) and returns its timings as JSON.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LlamaConfig } from '../../engine/model/config';
import type { Stat } from './stats';

const SCRIPT = fileURLToPath(new URL('./peer/torch_peer.py', import.meta.url));

export const PEER_HOWTO =
  'install PyTorch for the Python on PATH (Debian/Ubuntu: `apt-get install -y python3-torch libopenblas0-pthread` — ' +
  'OpenBLAS matters, the reference BLAS is about 5× slower; elsewhere `pip install torch`), or pass --python /path/to/python';

export interface PeerSpec {
  config: LlamaConfig;
  batch: number;
  seq: number;
  klCoef: number;
  threads: number;
  trainRepeats: number;
  newTokens: number;
  sampleRepeats: number;
  /** [rows, repeats of the recomputing loop (0 = skip it)] */
  sampleBatches: [number, number][];
  /** Shapes [m, k, n] of plain matrix products to time (the backend's raw GEMM throughput). */
  gemm: [number, number, number][];
}

export interface PeerResult {
  torch: string;
  threads: number;
  train: { msPerStep: Stat; cpuMsPerStep?: Stat; tokensPerSec: number };
  /** The OpenBLAS torch loaded: its core name (openblas_get_corename) and thread count. */
  blas?: { library?: string; core?: string | null; threads?: number; error?: string };
  sampling: { batch: number; kvMs: Stat; kvTokensPerSec: number; naiveMs?: Stat; naiveTokensPerSec?: number }[];
  gemm: { shape: [number, number, number]; ms: number; gflops: number }[];
}

/** The first of `--python`, $MARS_LAB_PYTHON, python3 on PATH, /usr/bin/python3 that imports torch; or why none did. */
export function findTorchPython(explicit?: string): { python: string; torch: string } | { skip: string } {
  const tried: string[] = [];
  for (const py of [explicit, process.env.MARS_LAB_PYTHON, 'python3', '/usr/bin/python3'].filter((p): p is string =>
    Boolean(p),
  )) {
    if (tried.includes(py)) continue;
    tried.push(py);
    const r = spawnSync(py, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8' });
    if (r.status === 0) return { python: py, torch: r.stdout.trim() };
  }
  return {
    skip: `PyTorch peer skipped: no Python with torch found (tried ${tried.join(', ')}); to compare, ${PEER_HOWTO}.`,
  };
}

/**
 * Runs the peer at spec.threads. `torch.set_num_threads` alone does not cap the OpenBLAS torch links (it ran 2 threads
 * inside a "1-thread" peer: docs/build-notes.md §8), so the BLAS and OpenMP pools are pinned through the environment as well.
 * `core` runs its OpenBLAS at that core type (OPENBLAS_CORETYPE, kernel for kernel with mars-lab's); without it the
 * peer detects its own, as PyTorch does when installed (a user's OPENBLAS_CORETYPE is not passed on then either).
 */
export function runPeer(python: string, spec: PeerSpec, core?: string): PeerResult {
  const n = String(spec.threads);
  const env: NodeJS.ProcessEnv = { ...process.env, OPENBLAS_NUM_THREADS: n, OMP_NUM_THREADS: n, MKL_NUM_THREADS: n };
  if (core) env.OPENBLAS_CORETYPE = core;
  else delete env.OPENBLAS_CORETYPE;
  const r = spawnSync(python, [SCRIPT], { input: JSON.stringify(spec), encoding: 'utf8', maxBuffer: 1 << 24, env });
  if (r.status !== 0) {
    throw new Error(`the PyTorch peer failed (exit ${r.status}): ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  }
  return JSON.parse(r.stdout) as PeerResult;
}
