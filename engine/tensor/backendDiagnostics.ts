/**
 * What the backend report (backend.ts) says about the chosen backend besides the ladder: its threads and why, whether
 * wasm has SIMD, and the versions of the packages involved.
 */
import * as tf from '@tensorflow/tfjs';
import os from 'node:os';
import type { BackendName } from './backend';
import { packageVersion } from './moduleLoading';
import { webgpuRunsOnSoftware } from './webgpuRung';

export function describeThreads(chosen: BackendName): { threads: number; threadsDetail: string } {
  switch (chosen) {
    case 'wasm':
      // tfjs-backend-wasm hard-codes multithreading off under Node (tfjs#3830); see docs/build-notes.md §1.
      return {
        threads: 1,
        threadsDetail: 'tfjs-backend-wasm runs single-threaded under Node.js (multithreading is disabled there)',
      };
    case 'cpu':
      return { threads: 1, threadsDetail: 'the cpu backend is single-threaded JavaScript' };
    case 'tensorflow':
      return { threads: os.cpus().length, threadsDetail: 'libtensorflow uses its own intra-op thread pool' };
    case 'webgpu':
      return webgpuRunsOnSoftware()
        ? {
            threads: os.cpus().length,
            threadsDetail: "a software adapter: the kernels run on the rasteriser's CPU threads",
          }
        : { threads: 1, threadsDetail: 'kernels run on the GPU' };
  }
}

export async function simdAndVersions(
  chosen: BackendName,
): Promise<{ simd: boolean | null; versions: Record<string, string> }> {
  let simd: boolean | null = null;
  if (chosen === 'wasm') simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
  const versions: Record<string, string> = { node: process.versions.node, 'tfjs-core': tf.version_core };
  for (const pkg of [
    '@tensorflow/tfjs-backend-wasm',
    '@tensorflow/tfjs-backend-webgpu',
    'webgpu',
    '@tensorflow/tfjs-node',
    '@tensorflow/tfjs-node-gpu',
  ]) {
    const v = packageVersion(pkg);
    if (v) versions[pkg] = v;
  }
  return { simd, versions };
}
