/**
 * Finds and loads the native matrix-product addon (native/mars_gemm.c, built by scripts/buildNative.mjs at install;
 * issue 16) and says why when it cannot: `doctor`, run.json and the tests read that reason.
 *
 * Environment: MARS_LAB_NATIVE=0 (or off) leaves the addon unloaded; MARS_LAB_NATIVE=own uses the project's own kernel
 * even in an OpenBLAS build; MARS_LAB_NATIVE_PATH names an addon file to load instead of native/build's;
 * MARS_LAB_BLAS_THREADS sets OpenBLAS's thread count for the process (over the run config's blasThreads; the CLI's
 * --blas-threads is over both; unset, a process takes its share of the cores, see defaultBlasThreads);
 * MARS_LAB_WORKER_SLOTS says how many processes share the cores; MARS_LAB_NATIVE_ADAM=0 keeps the optimiser on its tensor ops (engine/rl/nativeAdam.ts);
 * MARS_LAB_NATIVE_FUSED=0 keeps the transformer's RMSNorm, SwiGLU, RoPE, log-softmax and row gathers on the stock
 * tensor ops (engine/tensor/native/fused.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { chooseOpenblasCore, type CoreChoice } from './coreType';

export const ADDON_FILE = 'mars_native.node';

/** The addon's functions (see the headers of native/mars_gemm.c and native/mars_adam.c). */
export interface NativeAddon {
  gemm(
    heap: ArrayBuffer,
    aOffset: number,
    bOffset: number,
    cOffset: number,
    m: number,
    n: number,
    k: number,
    transposeA: boolean,
    transposeB: boolean,
    batch: Int32Array | null,
    biasOffset: number,
    biasLength: number,
    activation: number,
    alpha: number,
    preluOffset: number,
    preluLength: number,
  ): void;
  info(): unknown;
  setThreads(n: number): number;
  setKernel(kernel: 'openblas' | 'own'): string;
  /**
   * The optimiser's fused passes (native/mars_adam.c). Optional: an addon built before they existed lacks them, and
   * the JS optimiser then runs.
   */
  sumSquares?(heap: ArrayBuffer, table: Float64Array): number;
  adam?(
    heap: ArrayBuffer,
    table: Float64Array,
    scaled: boolean,
    scale: number,
    beta1: number,
    oneMinusBeta1: number,
    beta2: number,
    oneMinusBeta2: number,
    biasCorrection1: number,
    biasCorrection2: number,
    eps: number,
    lr: number,
  ): void;
  /**
   * The transformer's fused ops and their gradients (native/mars_fused.c; arguments are byte offsets into the heap,
   * then sizes). Optional like the optimiser's: an older addon lacks them and the stock tensor ops run.
   */
  rmsNorm?(heap: ArrayBuffer, x: number, w: number, y: number, rows: number, d: number, eps: number): void;
  rmsNormGrad?(
    heap: ArrayBuffer,
    x: number,
    w: number,
    dy: number,
    dx: number,
    dw: number,
    rows: number,
    d: number,
    eps: number,
  ): void;
  swiglu?(heap: ArrayBuffer, gate: number, up: number, y: number, n: number): void;
  swigluGrad?(heap: ArrayBuffer, gate: number, up: number, dy: number, dGate: number, dUp: number, n: number): void;
  rope?(
    heap: ArrayBuffer,
    x: number,
    cos: number,
    sin: number,
    y: number,
    outer: number,
    heads: number,
    t: number,
    hd: number,
    scale: number,
    adjoint: number,
  ): void;
  logSoftmaxPick?(
    heap: ArrayBuffer,
    logits: number,
    targets: number,
    logp: number,
    entropy: number,
    rows: number,
    v: number,
    temperature: number,
  ): void;
  logSoftmaxPickGrad?(
    heap: ArrayBuffer,
    logits: number,
    targets: number,
    dLogp: number,
    dEntropy: number,
    dLogits: number,
    rows: number,
    v: number,
    temperature: number,
  ): void;
  gatherRows?(heap: ArrayBuffer, x: number, idx: number, y: number, n: number, m: number, width: number): void;
  scatterAddRows?(heap: ArrayBuffer, v: number, idx: number, y: number, n: number, m: number, width: number): void;
}

const addonInfoSchema = z.object({
  built: z.enum(['openblas', 'own']),
  kernel: z.enum(['openblas', 'own']),
  microkernel: z.string(),
  threads: z.number().int(),
  openblasCore: z.string().optional(),
  openblasConfig: z.string().optional(),
});
export type AddonInfo = z.infer<typeof addonInfoSchema>;

/** build.json, written by scripts/buildNative.mjs: what it built, or why nothing. */
const buildRecordSchema = z.looseObject({
  kernel: z.enum(['openblas', 'own', 'none']),
  reasons: z.array(z.string()).default([]),
  builtAt: z.string().optional(),
  openblas: z.looseObject({ linkage: z.string(), lib: z.string() }).optional(),
});

export type NativeKernel = 'openblas' | 'own' | 'none';

export interface LoadedAddon {
  addon: NativeAddon;
  info: AddonInfo;
  file: string;
}

export interface AddonLoad {
  loaded: LoadedAddon | null;
  /** Why no addon was loaded (empty when one was). */
  reason: string;
  /** The linkage OpenBLAS was built with ('static' | 'dynamic'), from build.json, when known. */
  linkage?: string;
  /** Why the build did not use OpenBLAS (from build.json), when it built the own kernel. */
  buildReasons: string[];
  /** How OpenBLAS's core type was chosen at load (engine/tensor/native/coreType.ts), when the addon may link OpenBLAS. */
  core?: CoreChoice;
}

const BLAS_THREADS = z.coerce.number().int().min(1).max(256);

/** MARS_LAB_BLAS_THREADS, or `fallback` (the default share of the cores, defaultBlasThreads) when it is unset. */
export function blasThreads(env: NodeJS.ProcessEnv = process.env, fallback = defaultBlasThreads(env).threads): number {
  const raw = env.MARS_LAB_BLAS_THREADS;
  if (raw === undefined || raw.trim() === '') return fallback;
  const parsed = BLAS_THREADS.safeParse(raw.trim());
  if (!parsed.success) {
    throw new UserError(
      `MARS_LAB_BLAS_THREADS: '${raw.slice(0, 20)}' is not a whole number from 1 to 256; unset it (the default share of the cores) or set e.g. 2.`,
    );
  }
  return parsed.data;
}

/**
 * The default BLAS thread count (issue 28): this process's share of the machine's cores. A run alone takes them all;
 * a process started as one of several side by side (the app's and web mode's worker slots, a local study's parallel
 * runs) is told how many share the machine through MARS_LAB_WORKER_SLOTS and takes cores / slots, at least one, so
 * threads × processes never exceeds the cores.
 */
export function defaultBlasThreads(
  env: NodeJS.ProcessEnv = process.env,
  cores: number = os.availableParallelism?.() ?? os.cpus().length,
): { threads: number; cores: number; slots: number } {
  const raw = env.MARS_LAB_WORKER_SLOTS;
  let slots = 1;
  if (raw !== undefined && raw.trim() !== '') {
    const parsed = BLAS_THREADS.safeParse(raw.trim());
    if (!parsed.success) {
      throw new UserError(
        `MARS_LAB_WORKER_SLOTS: '${raw.slice(0, 20)}' is not a whole number from 1 to 256 (how many processes share the cores); unset it for a run alone.`,
      );
    }
    slots = parsed.data;
  }
  return { threads: Math.max(1, Math.floor(cores / slots)), cores, slots };
}

/** The environment variable that tells a child process how many processes share the cores (defaultBlasThreads). */
export const WORKER_SLOTS_ENV = 'MARS_LAB_WORKER_SLOTS';

/** What MARS_LAB_NATIVE asks for: 'auto' (the default), 'off' or 'own'. */
export function nativeRequest(env: NodeJS.ProcessEnv = process.env): 'auto' | 'off' | 'own' {
  const v = (env.MARS_LAB_NATIVE ?? '').trim().toLowerCase();
  if (v === '' || v === '1' || v === 'on' || v === 'auto') return 'auto';
  if (v === '0' || v === 'off' || v === 'false') return 'off';
  if (v === 'own') return 'own';
  throw new UserError(
    `MARS_LAB_NATIVE: '${v.slice(0, 20)}' is not one of 1, 0, own; unset it to use the native kernels when they are built.`,
  );
}

/** What MARS_LAB_NATIVE_ADAM asks for: 'auto' (the default: native when the native products are active) or 'off'. */
export function nativeAdamRequest(env: NodeJS.ProcessEnv = process.env): 'auto' | 'off' {
  const v = (env.MARS_LAB_NATIVE_ADAM ?? '').trim().toLowerCase();
  if (v === '' || v === '1' || v === 'on' || v === 'auto') return 'auto';
  if (v === '0' || v === 'off' || v === 'false') return 'off';
  throw new UserError(
    `MARS_LAB_NATIVE_ADAM: '${v.slice(0, 20)}' is not one of 1, 0; unset it to fuse the optimiser natively when the native kernels are active.`,
  );
}

/** What MARS_LAB_NATIVE_FUSED asks for: 'auto' (the default: fused ops when the native products are active) or 'off'. */
export function nativeFusedRequest(env: NodeJS.ProcessEnv = process.env): 'auto' | 'off' {
  const v = (env.MARS_LAB_NATIVE_FUSED ?? '').trim().toLowerCase();
  if (v === '' || v === '1' || v === 'on' || v === 'auto') return 'auto';
  if (v === '0' || v === 'off' || v === 'false') return 'off';
  throw new UserError(
    `MARS_LAB_NATIVE_FUSED: '${v.slice(0, 20)}' is not one of 1, 0; unset it to fuse the transformer's small ops natively when the native kernels are active.`,
  );
}

/** The project's root: the nearest folder above this module with a native/ folder and package.json. */
function projectRoot(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (fs.existsSync(path.join(dir, 'native')) && fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

/** native/build/mars_native.node under the project root (whether or not it exists), or null without a root. */
export function defaultAddonPath(): string | null {
  const root = projectRoot();
  return root ? path.join(root, 'native', 'build', ADDON_FILE) : null;
}

function readBuildRecord(dir: string): z.infer<typeof buildRecordSchema> | null {
  try {
    const parsed = buildRecordSchema.safeParse(JSON.parse(fs.readFileSync(path.join(dir, 'build.json'), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

const require = createRequire(import.meta.url);

/** Loads the addon named by MARS_LAB_NATIVE_PATH or native/build; never throws for a missing or broken file. */
export function loadAddon(env: NodeJS.ProcessEnv = process.env): AddonLoad {
  const explicit = env.MARS_LAB_NATIVE_PATH?.trim();
  const file = explicit ? path.resolve(explicit) : defaultAddonPath();
  if (!file) {
    return {
      loaded: null,
      reason: 'the project folder (with native/) was not found next to the engine',
      buildReasons: [],
    };
  }
  const record = readBuildRecord(path.dirname(file));
  if (!fs.existsSync(file)) {
    if (record && record.kernel === 'none') {
      return {
        loaded: null,
        reason: `not built at install: ${record.reasons.join('; ') || 'no reason recorded'}`,
        buildReasons: record.reasons,
      };
    }
    if (explicit) return { loaded: null, reason: `MARS_LAB_NATIVE_PATH: ${file} does not exist`, buildReasons: [] };
    return {
      loaded: null,
      reason: `not built (${file} is missing; run 'node scripts/buildNative.mjs' in the project folder)`,
      buildReasons: [],
    };
  }
  // OpenBLAS reads OPENBLAS_CORETYPE once, when the addon loads: set it for the load only, so child processes choose
  // for themselves and a user's own value is never overwritten.
  const core = record?.kernel === 'own' ? undefined : chooseOpenblasCore(file, env);
  let addon: NativeAddon;
  try {
    if (core?.set) process.env.OPENBLAS_CORETYPE = core.set;
    addon = require(file) as NativeAddon;
  } catch (err) {
    const msg = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300);
    return {
      loaded: null,
      reason: `${file} would not load: ${msg} (rebuild it with 'node scripts/buildNative.mjs')`,
      buildReasons: [],
    };
  } finally {
    if (core?.set) delete process.env.OPENBLAS_CORETYPE;
  }
  const info = addonInfoSchema.safeParse(typeof addon.info === 'function' ? addon.info() : null);
  if (!info.success || typeof addon.gemm !== 'function') {
    return {
      loaded: null,
      reason: `${file} is not the mars-lab addon of this version (rebuild it with 'node scripts/buildNative.mjs')`,
      buildReasons: [],
    };
  }
  return {
    loaded: { addon, info: info.data, file },
    reason: '',
    linkage: record?.openblas?.linkage,
    buildReasons: record?.reasons ?? [],
    core,
  };
}
