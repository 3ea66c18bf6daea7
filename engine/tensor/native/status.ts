/**
 * Whether this process's matrix products run on the native addon, and why (issue 16). `initBackend` calls
 * `configureNativeKernels` once a backend is chosen; the report goes into BackendReport, so `doctor` prints it and
 * run.json records it, and a figure can be traced to the path that produced it.
 */
import {
  blasThreads,
  defaultBlasThreads,
  loadAddon,
  nativeAdamRequest,
  nativeFusedRequest,
  nativeRequest,
  type AddonLoad,
  type NativeKernel,
} from './addon';
import { nativeKernelsRegistered, registerNativeKernels, unregisterNativeKernels } from './kernels';

export interface NativeKernelReport {
  /** The kernel the wasm backend's matrix products run on: OpenBLAS, the project's own, or none (wasm's stock kernels). */
  kernel: NativeKernel;
  /** Whether the native kernels are registered for the backend in use. */
  active: boolean;
  /** One line: what runs and why (or why not). */
  detail: string;
  /** What the installed addon was built with, or null when there is none. */
  built: 'openblas' | 'own' | null;
  /** OpenBLAS's core name (openblas_get_corename), when it is the kernel. */
  core?: string;
  /**
   * Where that core came from (engine/tensor/native/coreType.ts): OpenBLAS's own detection, the user's OPENBLAS_CORETYPE, or
   * mars-lab's choice over a generic fallback core; with what OpenBLAS detects, when that was learnt.
   */
  coreFrom?: 'detected' | 'environment' | 'chosen';
  coreDetected?: string;
  /**
   * BLAS threads of this process, as OpenBLAS reports them (openblas_get_num_threads): --blas-threads,
   * MARS_LAB_BLAS_THREADS or the run config's blasThreads (in that order), else this process's share of the cores
   * (all of them for a run alone, cores / MARS_LAB_WORKER_SLOTS beside others); the own kernel has 1.
   */
  threads: number;
  /** Where the thread count came from. */
  threadsFrom: 'default' | 'config' | 'environment' | 'flag';
  /** Whether the optimiser's norm and update run as the addon's fused passes (engine/rl/nativeAdam.ts). */
  adam: boolean;
  /** One line: why the optimiser runs natively or on tensor ops. */
  adamDetail: string;
  /** Whether the transformer's RMSNorm, SwiGLU, RoPE, log-softmax and row gathers run fused (engine/tensor/native/fused.ts). */
  fused: boolean;
  /** One line: why the fused ops run or not. */
  fusedDetail: string;
  /** The addon file loaded. */
  file?: string;
}

export interface NativeOptions {
  /** BLAS threads asked for by the caller: a CLI flag ('flag') or the run config ('config'). */
  blasThreads?: { threads: number; from: 'config' | 'flag' };
}

let cachedLoad: AddonLoad | null = null;

/** The addon of this process, loaded once (a Node-API addon cannot be unloaded anyway). */
export function addonLoad(): AddonLoad {
  cachedLoad ??= loadAddon();
  return cachedLoad;
}

/** Forget the loaded addon so the next call loads again (tests that point MARS_LAB_NATIVE_PATH elsewhere). */
export function resetAddonLoad(): void {
  cachedLoad = null;
}

let lastReport: NativeKernelReport | null = null;

/** The report of the last `configureNativeKernels`, or null before it. */
export function nativeKernelReport(): NativeKernelReport | null {
  return lastReport;
}

/** Whether BatchMatMul on wasm is the native kernel right now. */
export function nativeMatMulActive(): boolean {
  return nativeKernelsRegistered();
}

/**
 * The thread count asked for and where from: a flag over MARS_LAB_BLAS_THREADS over the run config over this process's
 * share of the cores (defaultBlasThreads).
 */
function requestedThreads(opts: NativeOptions): { threads: number; from: NativeKernelReport['threadsFrom'] } {
  const asked = opts.blasThreads;
  if (asked?.from === 'flag') return asked;
  const env = process.env.MARS_LAB_BLAS_THREADS;
  if (env !== undefined && env.trim() !== '') return { threads: blasThreads(), from: 'environment' };
  return asked ?? { threads: defaultBlasThreads().threads, from: 'default' };
}

/** Whether the optimiser will run as the addon's fused passes, given the products are native (`active`). */
function adamReport(load: AddonLoad | null, active: boolean): { adam: boolean; adamDetail: string } {
  if (!active) return { adam: false, adamDetail: 'tensor ops (the native kernels are not active)' };
  const addon = load?.loaded?.addon;
  if (typeof addon?.adam !== 'function' || typeof addon.sumSquares !== 'function') {
    return {
      adam: false,
      adamDetail:
        "tensor ops: this addon predates the fused optimiser (rebuild it with 'node scripts/buildNative.mjs')",
    };
  }
  if (nativeAdamRequest() === 'off') {
    return { adam: false, adamDetail: 'tensor ops: switched off with MARS_LAB_NATIVE_ADAM=0' };
  }
  return {
    adam: true,
    adamDetail: 'fused native passes for the gradient norm and the AdamW update, in place on the wasm heap',
  };
}

const FUSED_FUNCTIONS = ['rmsNorm', 'swiglu', 'rope', 'logSoftmaxPick', 'gatherRows', 'scatterAddRows'] as const;

/** Whether the transformer's fused ops will run, given the products are native (`active`). */
function fusedReport(load: AddonLoad | null, active: boolean): { fused: boolean; fusedDetail: string } {
  if (!active) return { fused: false, fusedDetail: 'tensor ops (the native kernels are not active)' };
  const addon = load?.loaded?.addon;
  if (FUSED_FUNCTIONS.some((f) => typeof addon?.[f] !== 'function')) {
    return {
      fused: false,
      fusedDetail: "tensor ops: this addon predates the fused ops (rebuild it with 'node scripts/buildNative.mjs')",
    };
  }
  if (nativeFusedRequest() === 'off') {
    return { fused: false, fusedDetail: 'tensor ops: switched off with MARS_LAB_NATIVE_FUSED=0' };
  }
  return {
    fused: true,
    fusedDetail: 'RMSNorm, SwiGLU, RoPE, log-softmax with the target picked and row gathers fused natively',
  };
}

/**
 * Registers the native kernels when the backend is wasm, the addon is built and MARS_LAB_NATIVE allows it; otherwise
 * leaves (or puts back) the stock wasm kernels. Sets OpenBLAS's thread count (see NativeOptions). Throws UserError
 * for a malformed MARS_LAB_NATIVE / MARS_LAB_BLAS_THREADS / MARS_LAB_NATIVE_ADAM. Calling it again reconfigures.
 */
export function configureNativeKernels(backend: string, opts: NativeOptions = {}): NativeKernelReport {
  const request = nativeRequest();
  const { threads, from } = requestedThreads(opts);
  const load = request === 'off' ? null : addonLoad();
  const built = load?.loaded?.info.built ?? null;
  const none = (detail: string): NativeKernelReport => {
    unregisterNativeKernels();
    return {
      kernel: 'none',
      active: false,
      detail,
      built,
      threads: 1,
      threadsFrom: from,
      ...adamReport(load, false),
      ...fusedReport(load, false),
    };
  };
  if (request === 'off') {
    lastReport = none('switched off with MARS_LAB_NATIVE=0; the wasm backend runs its own matrix products');
  } else if (!load?.loaded) {
    lastReport = none(
      `no native addon: ${load?.reason ?? 'not loaded'}; the wasm backend runs its own matrix products`,
    );
  } else if (backend !== 'wasm') {
    lastReport = none(`the native kernels serve the wasm backend only; this process uses ${backend}`);
  } else {
    const { addon, info, file } = load.loaded;
    const kernel = request === 'own' ? 'own' : info.built;
    addon.setKernel(kernel);
    const t = addon.setThreads(threads);
    registerNativeKernels(addon);
    const now = addon.info() as { openblasCore?: string; microkernel?: string };
    const adam = { ...adamReport(load, true), ...fusedReport(load, true) };
    if (kernel === 'openblas') {
      lastReport = {
        kernel,
        active: true,
        built,
        core: now.openblasCore,
        coreFrom: load.core?.from,
        coreDetected: load.core?.detected,
        threads: t,
        threadsFrom: from,
        ...adam,
        file,
        detail:
          `OpenBLAS (core ${now.openblasCore ?? '?'}${load.linkage ? `, ${load.linkage}ally linked` : ''}), ${t} thread${t === 1 ? '' : 's'}` +
          `; core ${load.core?.why ?? 'as OpenBLAS detected it'}`,
      };
    } else {
      const why =
        request === 'own'
          ? 'MARS_LAB_NATIVE=own'
          : load.buildReasons.length
            ? `built without OpenBLAS: ${load.buildReasons.join('; ')}`
            : 'built without OpenBLAS';
      lastReport = {
        kernel,
        active: true,
        built,
        threads: 1,
        threadsFrom: from,
        ...adam,
        file,
        detail: `the project's own kernel (${now.microkernel ?? '?'}, 1 thread): ${why}`,
      };
    }
  }
  return lastReport;
}
