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
 */
import * as tf from '@tensorflow/tfjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { UserError } from '../base/userError';
import { configureNativeKernels, type NativeKernelReport, type NativeOptions } from './native/status';

export { tf };

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

/**
 * The CUDA 11.2 / cuDNN 8.1 libraries that libtensorflow 2.9 (under tfjs-node-gpu 4.x) opens at run time. Without them
 * the GPU build either fails to load or, more often, loads and quietly runs on the CPU.
 */
export const CUDA_LIBRARIES = [
  'libcudart.so.11.0',
  'libcublas.so.11',
  'libcublasLt.so.11',
  'libcufft.so.10',
  'libcurand.so.10',
  'libcusolver.so.11',
  'libcusparse.so.11',
  'libcudnn.so.8',
] as const;

export const CUDA_REQUIREMENT =
  'the GPU build (@tensorflow/tfjs-node-gpu 4.x, libtensorflow 2.9) needs CUDA 11.2 and cuDNN 8.1: ' +
  `${CUDA_LIBRARIES.join(', ')} on the library path (LD_LIBRARY_PATH or ldconfig); newer CUDA majors (12.x) do not satisfy it`;

/** The CUDA / cuDNN libraries of CUDA_LIBRARIES that the dynamic linker would not find here. */
export function missingCudaLibraries(): string[] {
  return CUDA_LIBRARIES.filter((lib) => findSharedLibrary(lib) === null);
}

function cudaHint(): string {
  const missing = missingCudaLibraries();
  return missing.length
    ? ` — ${CUDA_REQUIREMENT}; not found here: ${missing.join(', ')}`
    : ` — ${CUDA_REQUIREMENT}; all of them were found here, so the error lies elsewhere`;
}

/**
 * Why tfjs-node(-gpu) is absent: mars-lab does not depend on it (its installer downloads libtensorflow from Google's
 * storage, outside the npm registry, and failed every offline `npm ci`), and how a user who wants it adds it.
 */
export const TENSORFLOW_NOT_INSTALLED = (pkg: string) =>
  `not installed: no dependency of mars-lab (its installer downloads libtensorflow from outside the npm registry). ` +
  `Add it with 'npm install ${pkg}@4.22.0' where that download works` +
  (pkg.endsWith('-gpu')
    ? '; for a current NVIDIA GPU webgpu is the rung (this build needs CUDA 11.2 and cuDNN 8.1 and has no machine code for Hopper or Blackwell)'
    : '');

async function tryTensorflow(attempts: BackendAttempt[]): Promise<boolean> {
  for (const pkg of ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']) {
    try {
      await import(pkg);
      if (!(await tf.setBackend('tensorflow'))) throw new Error('setBackend("tensorflow") returned false');
      let detail = `libtensorflow through ${pkg}`;
      if (pkg.endsWith('-gpu')) {
        // tfjs-node's backend says whether libtensorflow registered a GPU device; without CUDA it falls back to the CPU.
        const onGpu = (tf.backend() as { isUsingGpuDevice?: boolean }).isUsingGpuDevice;
        if (onGpu === true) detail += ', on the GPU';
        else if (onGpu === false) detail += `, but libtensorflow found no usable GPU and runs on the CPU${cudaHint()}`;
      }
      attempts.push({ backend: 'tensorflow', package: pkg, status: 'chosen', detail });
      return true;
    } catch (err) {
      if (isNotInstalled(err, pkg)) {
        attempts.push({
          backend: 'tensorflow',
          package: pkg,
          status: 'not-installed',
          detail: TENSORFLOW_NOT_INSTALLED(pkg),
        });
      } else {
        // A shared library that would not load (libtensorflow itself, or a CUDA/cuDNN library it links) is the usual
        // failure of the GPU build: say what it needs and which of those libraries are missing.
        const libraryError =
          /\.so(\.\d+)*\b|shared object|dlopen|cannot open|libtensorflow|cuda|cudnn|tfjs_binding/i.test(message(err));
        const hint = pkg.endsWith('-gpu') && libraryError ? cudaHint() : '';
        attempts.push({ backend: 'tensorflow', package: pkg, status: 'failed', detail: message(err) + hint });
      }
    }
  }
  return false;
}

const SOFTWARE_ADAPTER = /llvmpipe|lavapipe|swiftshader|softpipe|software/i;

interface GpuLike {
  requestAdapter: (opts?: { powerPreference?: string; featureLevel?: string }) => Promise<GpuAdapterLike | null>;
}

interface DawnModule {
  create: (opts: string[]) => GpuLike;
  globals: object;
}

interface DawnProbe {
  gpu: GpuLike;
  name: string;
  software: boolean;
  /** How Dawn reached it: its default backend (Vulkan on Linux), or OpenGL in WebGPU's compatibility mode. */
  via: 'native' | 'opengl';
}

/** Give up on an adapter request that hangs (a driver that never answers) after this long. */
const ADAPTER_TIMEOUT_MS = 10_000;

function withTimeout<T>(p: Promise<T | null>): Promise<T | null> {
  return Promise.race([p, new Promise<null>((resolve) => setTimeout(() => resolve(null), ADAPTER_TIMEOUT_MS).unref())]);
}

function describeAdapter(adapter: GpuAdapterLike): string {
  const info = adapter.info ?? {};
  return [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'unknown adapter';
}

/**
 * One Dawn instance per process and kind: tfjs keeps the device it made from the first one, and a second instance
 * (when a process switches back to webgpu) lets the first be garbage-collected under that device, which crashes Dawn's
 * threads. Each probe is kept (and its instance with it) whatever its outcome.
 */
let nativeProbe: Promise<DawnProbe | null> | null = null;
let openglProbe: Promise<DawnProbe | null> | null = null;
/** Instances that found no adapter are kept too, so that nothing Dawn made is collected while its threads run. */
const keptInstances: GpuLike[] = [];

/** Dawn's default backend for the platform (Vulkan on Linux): the GPU rung proper. */
function probeDawn(dawn: DawnModule): Promise<DawnProbe | null> {
  nativeProbe ??= (async () => {
    const gpu = dawn.create([]);
    keptInstances.push(gpu);
    // The adapter tfjs-backend-webgpu will ask for (a discrete GPU before an integrated or software one).
    const adapter = await withTimeout(gpu.requestAdapter({ powerPreference: 'high-performance' }));
    if (!adapter) return null;
    const name = describeAdapter(adapter);
    return { gpu, name, via: 'native', software: Boolean(adapter.isFallbackAdapter) || SOFTWARE_ADAPTER.test(name) };
  })();
  return nativeProbe;
}

/**
 * The software adapter for machines without a GPU: Dawn's OpenGL backend over Mesa's llvmpipe, through EGL without a
 * display (EGL_PLATFORM=surfaceless, unless the environment names another platform). Dawn offers its
 * OpenGL backend only at WebGPU's compatibility feature level, so every adapter request of this instance (tfjs's own
 * included) asks for that level. Dawn refuses Mesa's Vulkan rasteriser (lavapipe 22.3 in Debian 12: "Vulkan
 * shaderUniform*ArrayDynamicIndexing required"), hence OpenGL.
 */
function probeDawnOpenGL(dawn: DawnModule): Promise<DawnProbe | null> {
  openglProbe ??= (async () => {
    // Dawn opens EGL by its unversioned name, which only the development package (libegl-dev) provides.
    if (process.platform === 'linux' && !findSharedLibrary('libEGL.so')) return null;
    const gpu = dawn.create(['backend=opengl']);
    keptInstances.push(gpu);
    const request = gpu.requestAdapter.bind(gpu);
    gpu.requestAdapter = (opts = {}) => request({ ...opts, featureLevel: 'compatibility' });
    // Dawn opens the EGL display again for each device, so the variable stays set for the process once needed.
    process.env.EGL_PLATFORM ??= 'surfaceless';
    const adapter = await withTimeout(gpu.requestAdapter({ powerPreference: 'high-performance' }));
    if (!adapter) return null;
    const name = describeAdapter(adapter);
    return { gpu, name, via: 'opengl', software: Boolean(adapter.isFallbackAdapter) || SOFTWARE_ADAPTER.test(name) };
  })();
  return openglProbe;
}

interface GpuAdapterLike {
  info?: { vendor?: string; architecture?: string; device?: string; description?: string };
  isFallbackAdapter?: boolean;
}

/** The folders the dynamic linker searches: LD_LIBRARY_PATH, /etc/ld.so.conf(.d), then the usual system folders. */
function librarySearchPath(): string[] {
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  const confs = ['/etc/ld.so.conf'];
  try {
    for (const f of fs.readdirSync('/etc/ld.so.conf.d').sort()) {
      if (f.endsWith('.conf')) confs.push(path.join('/etc/ld.so.conf.d', f));
    }
  } catch {
    // no ld.so.conf.d
  }
  for (const conf of confs) {
    try {
      for (const line of fs.readFileSync(conf, 'utf8').split('\n')) {
        const d = line.replace(/#.*/, '').trim();
        if (d.startsWith('/')) dirs.push(d);
      }
    } catch {
      // unreadable or absent
    }
  }
  const triple = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';
  dirs.push(`/usr/lib/${triple}`, `/lib/${triple}`, '/usr/lib64', '/lib64', '/usr/lib', '/lib', '/usr/local/lib');
  return [...new Set(dirs)];
}

/** Where the dynamic linker would find a shared library (by its soname), or null. Linux only; elsewhere null. */
export function findSharedLibrary(soname: string): string | null {
  if (process.platform !== 'linux') return null;
  for (const d of librarySearchPath()) {
    const p = path.join(d, soname);
    if (fs.existsSync(p)) return p;
  }
  return null;
}

export interface VulkanEnvironment {
  /** libvulkan.so.1, the Vulkan loader Dawn opens, or null when the dynamic linker would not find it. */
  loader: string | null;
  /** Installable client driver manifests the loader would read (NVIDIA's is nvidia_icd.json). */
  icds: string[];
}

/** What Dawn needs on Linux to reach a GPU: the Vulkan loader and at least one driver (ICD) manifest. */
export function vulkanEnvironment(): VulkanEnvironment {
  const loader = findSharedLibrary('libvulkan.so.1');
  const explicit = (process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? '').split(':').filter(Boolean);
  let icds: string[];
  if (explicit.length) icds = explicit.filter((f) => fs.existsSync(f));
  else {
    const roots = [
      ...(process.env.XDG_CONFIG_DIRS ?? '/etc/xdg').split(':'),
      '/etc',
      ...(process.env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(':'),
      '/usr/local/share',
      '/usr/share',
    ];
    icds = [];
    for (const r of new Set(roots.filter(Boolean))) {
      const d = path.join(r, 'vulkan', 'icd.d');
      try {
        for (const f of fs.readdirSync(d).sort()) if (f.endsWith('.json')) icds.push(path.join(d, f));
      } catch {
        // no such folder
      }
    }
  }
  return { loader, icds: [...new Set(icds)] };
}

function describeVulkan(v: VulkanEnvironment): string {
  const icds = v.icds.length ? v.icds.join(', ') : 'none (looked in */vulkan/icd.d and VK_ICD_FILENAMES)';
  return `Vulkan loader ${v.loader ?? 'not found'}; driver manifests: ${icds}`;
}

/**
 * tfjs-backend-webgpu 4.22's AddN binds every input as a storage buffer in one shader, but asks for the device's
 * default limit of 8 storage buffers per stage, so `tf.addN` of more than 7 tensors (a gradient norm over a model's
 * parameters, for one) makes an invalid pipeline and silently yields garbage. Concat splits its inputs to fit that
 * limit; this gives AddN the same treatment: sum chunks that fit, then sum the partial sums.
 */
function chunkWebgpuAddN(): void {
  const kernel = tf.getKernel('AddN', 'webgpu') as (tf.KernelConfig & { chunked?: true }) | undefined;
  if (!kernel || kernel.chunked) return;
  const original = kernel.kernelFunc;
  const kernelFunc: tf.KernelFunc = (args) => {
    const inputs = args.inputs as unknown as tf.TensorInfo[];
    const backend = args.backend as {
      device?: { limits?: { maxStorageBuffersPerShaderStage?: number } };
      disposeData(id: object): void;
    };
    const max = Math.max(2, (backend.device?.limits?.maxStorageBuffersPerShaderStage ?? 8) - 1);
    if (inputs.length <= max) return original(args);
    const partial: tf.TensorInfo[] = [];
    for (let i = 0; i < inputs.length; i += max) {
      const chunk = inputs.slice(i, i + max);
      partial.push(
        chunk.length === 1
          ? chunk[0]!
          : (kernelFunc({ ...args, inputs: chunk as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo),
      );
    }
    const out = kernelFunc({ ...args, inputs: partial as unknown as tf.NamedTensorInfoMap }) as tf.TensorInfo;
    for (const p of partial) if (!inputs.includes(p)) backend.disposeData(p.dataId);
    return out;
  };
  tf.unregisterKernel('AddN', 'webgpu');
  tf.registerKernel({ ...kernel, kernelFunc, chunked: true } as tf.KernelConfig);
}

/** Whether the webgpu backend this process set up runs on a software adapter (its kernels then run on CPU threads). */
let webgpuOnSoftware = false;

async function tryWebgpu(attempts: BackendAttempt[], forced: boolean): Promise<boolean> {
  const record = (status: AttemptStatus, detail: string, pkg = 'webgpu') =>
    attempts.push({ backend: 'webgpu', package: pkg, status, detail });
  if (packageVersion('webgpu') === null) {
    record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    return false;
  }
  const vulkan = vulkanEnvironment();
  const noLoader = process.platform === 'linux' && !vulkan.loader;
  const hardwareWhy = noLoader
    ? 'libvulkan.so.1 (the Vulkan loader) was not found, so Dawn can reach no GPU. Install the GPU ' +
      "vendor's Vulkan driver (NVIDIA: libvulkan1 and the driver's nvidia_icd.json; in a container, " +
      'NVIDIA_DRIVER_CAPABILITIES must include graphics)'
    : `Dawn found no GPU adapter (${describeVulkan(vulkan)})`;
  const softwareHint =
    "; --backend webgpu also tries a software adapter (Mesa's llvmpipe through Dawn's OpenGL backend), slower than wasm";
  if (noLoader && !forced) {
    // Loading Dawn anyway would only print a warning on every start.
    record('no-adapter', `no hardware adapter: ${hardwareWhy}${softwareHint}`);
    return false;
  }
  let dawn: DawnModule;
  try {
    dawn = (await import('webgpu')) as unknown as DawnModule;
  } catch (err) {
    if (isNotInstalled(err, 'webgpu')) {
      record('not-installed', 'the optional `webgpu` package (Dawn for Node) is not installed');
    } else record('failed', message(err));
    return false;
  }
  try {
    let probe = noLoader ? null : await probeDawn(dawn);
    if (!probe && !forced) {
      record('no-adapter', `no hardware adapter: ${hardwareWhy}${softwareHint}`);
      return false;
    }
    probe ??= await probeDawnOpenGL(dawn);
    if (!probe) {
      record(
        'no-adapter',
        `no adapter: ${hardwareWhy}; and no software adapter through OpenGL either (Mesa's llvmpipe over EGL: Dawn ` +
          "opens libEGL.so, the unversioned name, and Mesa's swrast driver: apt-get install libegl-dev libgl1-mesa-dri)",
      );
      return false;
    }
    const { gpu, name, software, via } = probe;
    if (!forced && software) {
      record(
        'software-adapter',
        `only a software adapter (${name}) was found; it is slower than wasm. Force it with --backend webgpu`,
      );
      return false;
    }
    Object.assign(globalThis, dawn.globals);
    const nav = ((globalThis as { navigator?: object }).navigator ??= {}) as { gpu?: unknown };
    Object.defineProperty(nav, 'gpu', { value: gpu, configurable: true });
    await import('@tensorflow/tfjs-backend-webgpu');
    chunkWebgpuAddN();
    if (!(await tf.setBackend('webgpu'))) throw new Error('setBackend("webgpu") returned false');
    const how =
      via === 'opengl'
        ? ` (${software ? 'software, ' : ''}through Dawn's OpenGL backend at WebGPU's compatibility level, as no ` +
          `hardware adapter was found: ${hardwareWhy.split(/(?<=[A-Za-z)])\. /)[0]})`
        : '';
    webgpuOnSoftware = software;
    record('chosen', `adapter: ${name}${how}`, '@tensorflow/tfjs-backend-webgpu');
    return true;
  } catch (err) {
    if (isNotInstalled(err, '@tensorflow/tfjs-backend-webgpu')) {
      record(
        'not-installed',
        'the optional @tensorflow/tfjs-backend-webgpu package is not installed',
        '@tensorflow/tfjs-backend-webgpu',
      );
    } else record('failed', message(err));
    return false;
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

function describeThreads(chosen: BackendName): { threads: number; threadsDetail: string } {
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
      return webgpuOnSoftware
        ? {
            threads: os.cpus().length,
            threadsDetail: "a software adapter: the kernels run on the rasteriser's CPU threads",
          }
        : { threads: 1, threadsDetail: 'kernels run on the GPU' };
  }
}

async function simdAndVersions(
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
