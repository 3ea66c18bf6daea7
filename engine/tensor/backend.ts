/**
 * The one place that chooses and initialises a TensorFlow.js backend (DESIGN.md "Backends").
 *
 * Ladder, first that loads wins: tensorflow (tfjs-node-gpu, then tfjs-node) → webgpu (a hardware adapter) → wasm → cpu.
 * Every rung that was not taken is reported with the reason, so `doctor`, run.json and the UI can say why.
 */
import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { UserError } from '../userError';

export { tf };

export const BACKENDS = ['tensorflow', 'webgpu', 'wasm', 'cpu'] as const;
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

const require = createRequire(import.meta.url);

function isNotInstalled(err: unknown, pkg: string): boolean {
  const e = err as { code?: string; message?: string };
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(pkg)
  );
}

function message(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.split('\n')[0]!.slice(0, 400);
}

function packageVersion(pkg: string): string | null {
  try {
    return (require(`${pkg}/package.json`) as { version: string }).version;
  } catch {
    return null;
  }
}

async function tryTensorflow(attempts: BackendAttempt[]): Promise<boolean> {
  for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
    try {
      await import(pkg);
      if (!(await tf.setBackend('tensorflow'))) throw new Error('setBackend("tensorflow") returned false');
      attempts.push({ backend: 'tensorflow', package: pkg, status: 'chosen', detail: `libtensorflow through ${pkg}` });
      return true;
    } catch (err) {
      if (isNotInstalled(err, pkg)) {
        attempts.push({
          backend: 'tensorflow',
          package: pkg,
          status: 'not-installed',
          detail: `${pkg} is an optional dependency whose installer downloads libtensorflow; it is absent when that download was not possible`,
        });
      } else {
        const gpuHint =
          pkg.endsWith('-gpu') && /lib(cudart|cublas|cudnn|cufft|curand|cusolver|cusparse)/i.test(message(err))
            ? ' — the GPU build needs CUDA 11.2 and cuDNN 8.1 libraries on the library path (LD_LIBRARY_PATH)'
            : '';
        attempts.push({ backend: 'tensorflow', package: pkg, status: 'failed', detail: message(err) + gpuHint });
      }
    }
  }
  return false;
}

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|softpipe|software/i;

interface GpuAdapterLike {
  info?: { vendor?: string; architecture?: string; device?: string; description?: string };
  isFallbackAdapter?: boolean;
}

/**
 * On Linux Dawn reaches GPUs through libvulkan.so.1; without it there is no adapter, and loading Dawn anyway only
 * prints a warning on every start. Look for the loader where the dynamic linker would.
 */
function vulkanLoaderMissing(): boolean {
  if (process.platform !== 'linux') return false;
  const dirs = [
    ...(process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean),
    `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`,
    '/usr/lib64',
    '/usr/lib',
    '/usr/local/lib',
    '/lib64',
  ];
  return !dirs.some((d) => fs.existsSync(path.join(d, 'libvulkan.so.1')));
}

async function tryWebgpu(attempts: BackendAttempt[], forced: boolean): Promise<boolean> {
  const record = (status: AttemptStatus, detail: string, pkg = 'webgpu') =>
    attempts.push({ backend: 'webgpu', package: pkg, status, detail });
  if (packageVersion('webgpu') === null) {
    record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    return false;
  }
  if (vulkanLoaderMissing()) {
    record('no-adapter', 'libvulkan.so.1 was not found, so Dawn can reach no GPU (install the GPU vendor\'s Vulkan driver)');
    return false;
  }
  let dawn: { create: (opts: string[]) => { requestAdapter: () => Promise<GpuAdapterLike | null> }; globals: object };
  try {
    dawn = (await import('webgpu')) as unknown as typeof dawn;
  } catch (err) {
    if (isNotInstalled(err, 'webgpu')) record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    else record('failed', message(err));
    return false;
  }
  try {
    const gpu = dawn.create([]);
    const adapter = await Promise.race([
      gpu.requestAdapter(),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000).unref()),
    ]);
    if (!adapter) {
      record('no-adapter', 'Dawn found no GPU adapter (no Vulkan driver or no GPU)');
      return false;
    }
    const info = adapter.info ?? {};
    const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'unknown adapter';
    if (!forced && (adapter.isFallbackAdapter || SOFTWARE_ADAPTER.test(name))) {
      record('software-adapter', `only a software adapter (${name}) was found; it is slower than wasm. Force it with --backend webgpu`);
      return false;
    }
    Object.assign(globalThis, dawn.globals);
    const nav = ((globalThis as { navigator?: object }).navigator ??= {}) as { gpu?: unknown };
    Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
    await import('@tensorflow/tfjs-backend-webgpu');
    if (!(await tf.setBackend('webgpu'))) throw new Error('setBackend("webgpu") returned false');
    record('chosen', `adapter: ${name}`, '@tensorflow/tfjs-backend-webgpu');
    return true;
  } catch (err) {
    if (isNotInstalled(err, '@tensorflow/tfjs-backend-webgpu'))
      record('not-installed', 'the optional @tensorflow/tfjs-backend-webgpu package is not installed', '@tensorflow/tfjs-backend-webgpu');
    else record('failed', message(err));
    return false;
  }
}

async function tryWasm(attempts: BackendAttempt[]): Promise<boolean> {
  try {
    await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") returned false');
    attempts.push({ backend: 'wasm', package: '@tensorflow/tfjs-backend-wasm', status: 'chosen', detail: 'WebAssembly kernels' });
    return true;
  } catch (err) {
    attempts.push({ backend: 'wasm', package: '@tensorflow/tfjs-backend-wasm', status: 'failed', detail: message(err) });
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
 * without it, the ladder is walked and the first that loads is kept. Calling again with the same choice is free.
 */
export async function initBackend(opts: { force?: BackendName } = {}): Promise<BackendReport> {
  if (current && (!opts.force || opts.force === current.chosen)) return current;
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
    for (const b of BACKENDS)
      if (b !== chosen) attempts.push({ backend: b, package: '-', status: 'not-tried', detail: `--backend ${chosen} was forced` });
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
  current = { ...describeThreads(chosen), ...(await simdAndVersions(chosen)), chosen, forced: Boolean(opts.force), attempts, platform: `${process.platform}-${process.arch}`, cpus: os.cpus().length };
  return current;
}

function describeThreads(chosen: BackendName): { threads: number; threadsDetail: string } {
  switch (chosen) {
    case 'wasm':
      // tfjs-backend-wasm hard-codes multithreading off under Node (tfjs#3830); see BUILD-NOTES.md §1.
      return { threads: 1, threadsDetail: 'tfjs-backend-wasm runs single-threaded under Node.js (multithreading is disabled there)' };
    case 'cpu':
      return { threads: 1, threadsDetail: 'the cpu backend is single-threaded JavaScript' };
    case 'tensorflow':
      return { threads: os.cpus().length, threadsDetail: 'libtensorflow uses its own intra-op thread pool' };
    case 'webgpu':
      return { threads: 1, threadsDetail: 'kernels run on the GPU' };
  }
}

async function simdAndVersions(chosen: BackendName): Promise<{ simd: boolean | null; versions: Record<string, string> }> {
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
