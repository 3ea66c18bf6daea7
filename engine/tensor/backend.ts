/**
 * The one place that chooses and initialises a TensorFlow.js backend (docs/architecture.md "Backends").
 *
 * Ladder, first that loads wins: webgpu (a hardware adapter) → tensorflow (tfjs-node-gpu, then tfjs-node) → wasm → cpu.
 * webgpu ranks first: Dawn runs over the GPU driver's Vulkan side, while tfjs-node-gpu is tied to libtensorflow 2.9.1 with
 * CUDA 11.2 / cuDNN 8.1, has no machine code for Hopper or Blackwell GPUs and has not been released since 2024-10 (issue
 * 16); tfjs-node(-gpu) is no dependency of mars-lab, only used where a user installed it. Forced with --backend webgpu,
 * a machine without a GPU gets Mesa's software rasteriser (llvmpipe) through Dawn's OpenGL backend, which is how the
 * numerics tests run the webgpu kernels in CI. Every rung that was not taken is reported with the reason, so `doctor`,
 * run.json and the UI can say why.
 *
 * This file holds the ladder and the report; the rungs are in webgpuRung.ts (with dawnProbe.ts) and tensorflowRung.ts,
 * what the machine's linker finds in systemLibraries.ts, the report's threads and versions in backendDiagnostics.ts.
 */
import * as tf from '@tensorflow/tfjs';
import os from 'node:os';
import { UserError } from '../base/userError';
import { describeThreads, simdAndVersions } from './backendDiagnostics';
import { configureNativeKernels, type NativeKernelReport, type NativeOptions } from './native/status';
import { message } from './moduleLoading';
import { tryTensorflow } from './tensorflowRung';
import { tryWebgpu } from './webgpuRung';

export { tf };
export {
  CUDA_LIBRARIES,
  CUDA_REQUIREMENT,
  findSharedLibrary,
  missingCudaLibraries,
  vulkanEnvironment,
  type VulkanEnvironment,
} from './systemLibraries';
export { TENSORFLOW_NOT_INSTALLED } from './tensorflowRung';

/** The ladder, in the order it is walked. */
export const BACKENDS = ['webgpu', 'tensorflow', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKENDS)[number];

export type AttemptStatus = 'chosen' | 'not-installed' | 'no-adapter' | 'software-adapter' | 'failed' | 'not-tried';

export interface BackendAttempt {
  backend: BackendName;
  /** The package that provides it (for tensorflow, the build that was tried). */
  package: string;
  status: AttemptStatus;
  detail: string;
}

export interface BackendReport {
  chosen: BackendName;
  forced: boolean;
  attempts: BackendAttempt[];
  threads: number;
  threadsDetail: string;
  simd: boolean | null;
  versions: Record<string, string>;
  platform: string;
  cpus: number;
  /** The native matrix-product kernels (issue 16): which path the wasm backend's products take, and why. */
  native: NativeKernelReport;
}

export class BackendUnavailableError extends UserError {
  constructor(
    readonly backend: BackendName,
    readonly attempts: BackendAttempt[],
  ) {
    const why = attempts
      .filter((a) => a.backend === backend)
      .map((a) => `${a.package}: ${a.status} (${a.detail})`)
      .join('; ');
    super(
      `Backend '${backend}' is not available: ${why}. ` +
        `Run 'npx mars-lab doctor' to see which backends load here, or drop --backend to let mars-lab choose.`,
    );
  }
}

async function tryWasm(attempts: BackendAttempt[]): Promise<boolean> {
  try {
    await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") returned false');
    attempts.push({
      backend: 'wasm',
      package: '@tensorflow/tfjs-backend-wasm',
      status: 'chosen',
      detail: 'WebAssembly kernels',
    });
    return true;
  } catch (err) {
    attempts.push({
      backend: 'wasm',
      package: '@tensorflow/tfjs-backend-wasm',
      status: 'failed',
      detail: message(err),
    });
    return false;
  }
}

async function tryCpu(attempts: BackendAttempt[]): Promise<boolean> {
  const ok = await tf.setBackend('cpu');
  attempts.push({
    backend: 'cpu',
    package: '@tensorflow/tfjs-backend-cpu',
    status: ok ? 'chosen' : 'failed',
    detail: ok ? 'pure JavaScript kernels (slow; the last resort)' : 'setBackend("cpu") returned false',
  });
  return ok;
}

let current: BackendReport | null = null;

/** The report of the backend initialised in this process, or null before `initBackend`. */
export function backendReport(): BackendReport | null {
  return current;
}

/**
 * Initialise a backend. With `force`, only that backend is tried and failure throws `BackendUnavailableError`;
 * without it, the ladder is walked and the first that loads is kept. Calling again with the same choice is free
 * (it only sets the native kernels' BLAS threads again when `blasThreads` is given).
 */
export async function initBackend(opts: { force?: BackendName } & NativeOptions = {}): Promise<BackendReport> {
  if (current && (!opts.force || opts.force === current.chosen)) {
    if (opts.blasThreads) {
      current = { ...current, native: configureNativeKernels(current.chosen, { blasThreads: opts.blasThreads }) };
    }
    return current;
  }
  if (opts.force && !BACKENDS.includes(opts.force)) {
    throw new UserError(`Unknown backend '${opts.force}'. Choose one of: ${BACKENDS.join(', ')}.`);
  }
  // Production mode: no per-op debug checks, and no console banner urging tfjs-node on every start.
  tf.enableProdMode();
  const attempts: BackendAttempt[] = [];
  const tries: Record<BackendName, () => Promise<boolean>> = {
    tensorflow: () => tryTensorflow(attempts),
    webgpu: () => tryWebgpu(attempts, Boolean(opts.force)),
    wasm: () => tryWasm(attempts),
    cpu: () => tryCpu(attempts),
  };
  let chosen: BackendName | null = null;
  if (opts.force) {
    if (await tries[opts.force]()) chosen = opts.force;
    else throw new BackendUnavailableError(opts.force, attempts);
    for (const b of BACKENDS) {
      if (b !== chosen) {
        attempts.push({ backend: b, package: '-', status: 'not-tried', detail: `--backend ${chosen} was forced` });
      }
    }
  } else {
    for (const b of BACKENDS) {
      if (chosen) {
        attempts.push({ backend: b, package: '-', status: 'not-tried', detail: `${chosen} ranks higher and loaded` });
      } else if (await tries[b]()) {
        chosen = b;
      }
    }
    if (!chosen) throw new Error('No TensorFlow.js backend could be initialised, not even cpu.');
  }
  await tf.ready();
  const native = configureNativeKernels(chosen, { blasThreads: opts.blasThreads });
  current = {
    ...describeThreads(chosen),
    ...(await simdAndVersions(chosen)),
    chosen,
    forced: Boolean(opts.force),
    attempts,
    platform: `${process.platform}-${process.arch}`,
    cpus: os.cpus().length,
    native,
  };
  return current;
}
