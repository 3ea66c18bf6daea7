/**
 * The native matrix products registered as the wasm backend's own `BatchMatMul` and `_FusedMatMul` kernels (issue 16).
 *
 * Each call reads the operands where the wasm backend keeps them (their byte offsets in the wasm heap), lets the
 * backend allocate the output there (`makeOutput`), and hands the addon the heap's current ArrayBuffer: the heap can
 * grow between calls, which replaces the buffer, so it is fetched after the output exists and never kept. Nothing is
 * copied. Cases the addon does not cover (non-float32, rank < 2, a bias or PReLU weights that are not one value per
 * column or a single one) go to the stock kernel, which stays registered under the hood and comes back when the native kernels are switched off.
 */
import * as tf from '@tensorflow/tfjs';
import type { NativeAddon } from './addon';

/** The parts of tfjs-backend-wasm's BackendWasm these kernels use. */
interface WasmBackendLike {
  dataIdMap: { get(dataId: object): { memoryOffset: number; shape: number[] } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  wasm: { HEAPU8: Uint8Array };
}

/** Activation codes of native/mars_gemm.c's epilogue. */
const ACTIVATIONS: Record<string, number> = {
  linear: 0,
  relu: 1,
  relu6: 2,
  sigmoid: 3,
  leakyrelu: 4,
  elu: 5,
  prelu: 6,
};

export interface ProductPlan {
  m: number;
  n: number;
  k: number;
  /** The output's batch dimensions followed by [m, n]. */
  outShape: number[];
  /** (count, aStride, bStride) per batch dimension that is not 1, adjacent contiguous ones merged; null for none. */
  batch: Int32Array | null;
}

/**
 * Sizes and batch strides of op(a)·op(b) with tfjs's broadcasting of the leading dimensions (each pair equal, or one
 * of them 1 or missing). Throws tfjs's own kind of message for shapes that do not fit.
 */
export function planProduct(
  aShape: readonly number[],
  bShape: readonly number[],
  transposeA: boolean,
  transposeB: boolean,
): ProductPlan {
  const ra = aShape.length;
  const rb = bShape.length;
  const m = transposeA ? aShape[ra - 1]! : aShape[ra - 2]!;
  const k = transposeA ? aShape[ra - 2]! : aShape[ra - 1]!;
  const kb = transposeB ? bShape[rb - 1]! : bShape[rb - 2]!;
  const n = transposeB ? bShape[rb - 2]! : bShape[rb - 1]!;
  if (k !== kb) {
    throw new Error(
      `Error in matMul: inner shapes (${k}) and (${kb}) of Tensors with shapes ${aShape} and ${bShape} and ` +
        `transposeA=${transposeA} and transposeB=${transposeB} must match.`,
    );
  }
  const ba = aShape.slice(0, -2);
  const bb = bShape.slice(0, -2);
  const nd = Math.max(ba.length, bb.length);
  const strides = (dims: readonly number[]) => {
    const s = new Array<number>(dims.length).fill(1);
    for (let i = dims.length - 2; i >= 0; i--) s[i] = s[i + 1]! * dims[i + 1]!;
    return s;
  };
  const sa = strides(ba);
  const sb = strides(bb);
  const outBatch: number[] = [];
  const triples: [number, number, number][] = [];
  for (let d = 0; d < nd; d++) {
    const ia = d - (nd - ba.length);
    const ib = d - (nd - bb.length);
    const da = ia >= 0 ? ba[ia]! : 1;
    const db = ib >= 0 ? bb[ib]! : 1;
    if (da !== db && da !== 1 && db !== 1) {
      throw new Error(`Operands could not be broadcast together with shapes ${aShape} and ${bShape}.`);
    }
    const count = da === 1 ? db : da;
    outBatch.push(count);
    if (count === 1) continue;
    triples.push([count, da === 1 ? 0 : sa[ia]!, db === 1 ? 0 : sb[ib]!]);
  }
  // Merge an outer dimension into the next inner one where both operands step through them contiguously.
  const merged: [number, number, number][] = [];
  for (const t of triples) {
    const last = merged[merged.length - 1];
    if (last && last[1] === t[1] * t[0] && last[2] === t[2] * t[0]) {
      merged[merged.length - 1] = [last[0] * t[0], t[1], t[2]];
    } else merged.push([...t]);
  }
  return { m, n, k, outShape: [...outBatch, m, n], batch: merged.length ? Int32Array.from(merged.flat()) : null };
}

let calls = 0;

/** How many products the native kernels have run in this process (tests check that a path really ran natively). */
export function nativeProductCount(): number {
  return calls;
}

/** Runs one product on the heap; returns the output's TensorInfo. */
function runProduct(
  addon: NativeAddon,
  backend: WasmBackendLike,
  a: tf.TensorInfo,
  b: tf.TensorInfo,
  transposeA: boolean,
  transposeB: boolean,
  epilogue: { bias: tf.TensorInfo | null; activation: number; alpha: number; prelu: tf.TensorInfo | null },
): tf.TensorInfo {
  const plan = planProduct(a.shape, b.shape, transposeA, transposeB);
  const out = backend.makeOutput(plan.outShape, 'float32');
  const offset = (t: tf.TensorInfo) => {
    const entry = backend.dataIdMap.get(t.dataId);
    if (!entry) throw new Error('native matMul: a tensor has no data on the wasm backend');
    return entry.memoryOffset;
  };
  const heap = backend.wasm.HEAPU8.buffer as ArrayBuffer;
  const bias = epilogue.bias;
  calls++;
  addon.gemm(
    heap,
    offset(a),
    offset(b),
    offset(out),
    plan.m,
    plan.n,
    plan.k,
    transposeA,
    transposeB,
    plan.batch,
    bias ? offset(bias) : -1,
    bias ? tf.util.sizeFromShape(bias.shape) : 0,
    epilogue.activation,
    epilogue.alpha,
    epilogue.prelu ? offset(epilogue.prelu) : -1,
    epilogue.prelu ? tf.util.sizeFromShape(epilogue.prelu.shape) : 0,
  );
  return out;
}

function stockFallback(name: string, stock: tf.KernelConfig | undefined): tf.KernelFunc {
  return (args) => {
    if (!stock) throw new Error(`native ${name}: no stock wasm kernel to fall back on`);
    return stock.kernelFunc(args);
  };
}

/** The two kernel configs for the wasm backend, falling back to the given stock ones. */
export function nativeKernelConfigs(
  addon: NativeAddon,
  stock: { batchMatMul?: tf.KernelConfig; fusedMatMul?: tf.KernelConfig },
): tf.KernelConfig[] {
  const stockBatch = stockFallback('BatchMatMul', stock.batchMatMul);
  const stockFused = stockFallback('_FusedMatMul', stock.fusedMatMul);
  const batchMatMul: tf.KernelFunc = (args) => {
    const { a, b } = args.inputs as unknown as { a: tf.TensorInfo; b: tf.TensorInfo };
    const { transposeA, transposeB } = args.attrs as unknown as { transposeA: boolean; transposeB: boolean };
    if (a.dtype !== 'float32' || b.dtype !== 'float32' || a.shape.length < 2 || b.shape.length < 2) {
      return stockBatch(args);
    }
    return runProduct(addon, args.backend as unknown as WasmBackendLike, a, b, transposeA, transposeB, {
      bias: null,
      activation: 0,
      alpha: 0,
      prelu: null,
    });
  };
  const fusedMatMul: tf.KernelFunc = (args) => {
    const { a, b, bias, preluActivationWeights } = args.inputs as unknown as {
      a: tf.TensorInfo;
      b: tf.TensorInfo;
      bias?: tf.TensorInfo | null;
      preluActivationWeights?: tf.TensorInfo | null;
    };
    const { transposeA, transposeB, activation, leakyreluAlpha } = args.attrs as unknown as {
      transposeA: boolean;
      transposeB: boolean;
      activation: string;
      leakyreluAlpha?: number;
    };
    const code = ACTIVATIONS[activation ?? 'linear'];
    const n = transposeB ? b.shape[b.shape.length - 2] : b.shape[b.shape.length - 1];
    // One value per output column, or a single one: what the addon broadcasts (tfjs allows more; those go to stock).
    const perColumn = (t: tf.TensorInfo | null | undefined) =>
      t == null || (t.dtype === 'float32' && t.shape.length <= 1 && [1, n].includes(tf.util.sizeFromShape(t.shape)));
    const prelu = code === ACTIVATIONS.prelu ? preluActivationWeights : null;
    if (
      code === undefined ||
      !perColumn(bias) ||
      (code === ACTIVATIONS.prelu && (prelu == null || !perColumn(prelu))) ||
      a.dtype !== 'float32' ||
      b.dtype !== 'float32' ||
      a.shape.length < 2 ||
      b.shape.length < 2
    ) {
      return stockFused(args);
    }
    return runProduct(addon, args.backend as unknown as WasmBackendLike, a, b, transposeA, transposeB, {
      bias: bias ?? null,
      activation: code,
      alpha: leakyreluAlpha ?? 0.2,
      prelu: prelu ?? null,
    });
  };
  return [
    { kernelName: 'BatchMatMul', backendName: 'wasm', kernelFunc: batchMatMul },
    { kernelName: '_FusedMatMul', backendName: 'wasm', kernelFunc: fusedMatMul },
  ];
}

interface Registration {
  addon: NativeAddon;
  stock: { batchMatMul?: tf.KernelConfig; fusedMatMul?: tf.KernelConfig };
  native: tf.KernelConfig[];
}

let registration: Registration | null = null;

function swap(configs: (tf.KernelConfig | undefined)[]): void {
  for (const c of configs) {
    if (!c) continue;
    if (tf.getKernel(c.kernelName, c.backendName)) tf.unregisterKernel(c.kernelName, c.backendName);
    tf.registerKernel(c);
  }
}

/**
 * Registers the native kernels for the wasm backend (tfjs-backend-wasm must have registered its own first). Calling it
 * again is free; after `unregisterNativeKernels` it registers them again.
 */
export function registerNativeKernels(addon: NativeAddon): void {
  if (registration?.addon === addon && nativeKernelsRegistered()) return;
  const stock = registration?.stock ?? {
    batchMatMul: tf.getKernel('BatchMatMul', 'wasm'),
    fusedMatMul: tf.getKernel('_FusedMatMul', 'wasm'),
  };
  if (!stock.batchMatMul) throw new Error('the wasm backend has not registered its BatchMatMul kernel');
  const native = registration?.addon === addon ? registration.native : nativeKernelConfigs(addon, stock);
  registration = { addon, stock, native };
  swap(native);
}

/** Puts the stock wasm kernels back (the native ones stay loaded for a later `registerNativeKernels`). */
export function unregisterNativeKernels(): void {
  useSharedIdentity(false);
  if (!registration) return;
  swap([registration.stock.batchMatMul, registration.stock.fusedMatMul]);
}

let stockIdentity: tf.KernelConfig | undefined;
let sharedIdentity: tf.KernelConfig | null = null;

/**
 * The wasm backend's Identity copies its input; TensorFlow.js runs it for every tensor it saves for a gradient (~200
 * copies per training step of the tiny model, some of [rows, V]). With `on`, Identity shares the input's data as the cpu
 * and WebGL backends' do (a reference count, like the wasm backend's own Reshape); `off` puts the stock kernel back.
 * Safe because nothing writes into a wasm tensor's memory in place except the native optimiser, which gives a
 * parameter whose data is shared a private copy first (engine/rl/nativeAdam.ts). Used with the fused ops (fused.ts).
 */
export function useSharedIdentity(on: boolean): void {
  const current = tf.getKernel('Identity', 'wasm');
  if (on) {
    if (sharedIdentity && current === sharedIdentity) return;
    stockIdentity ??= current;
    const stock = stockIdentity;
    if (!stock) throw new Error('the wasm backend has not registered its Identity kernel');
    sharedIdentity ??= {
      kernelName: 'Identity',
      backendName: 'wasm',
      kernelFunc: ((args: { inputs: { x: tf.TensorInfo }; backend: { incRef(dataId: object): void } }) => {
        const { x } = args.inputs;
        if (x.dtype === 'string') return stock.kernelFunc(args);
        args.backend.incRef(x.dataId);
        return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
      }) as unknown as tf.KernelFunc,
    };
    swap([sharedIdentity]);
  } else if (sharedIdentity && current === sharedIdentity) {
    swap([stockIdentity]);
  }
}

/** Whether the wasm backend's Identity shares data right now (`useSharedIdentity`). */
export function sharedIdentityRegistered(): boolean {
  return sharedIdentity !== null && tf.getKernel('Identity', 'wasm') === sharedIdentity;
}

/** The addon whose products are registered for the wasm backend right now, or null. */
export function registeredAddon(): NativeAddon | null {
  return nativeKernelsRegistered() ? registration!.addon : null;
}

/** Whether the wasm backend's BatchMatMul is the native one right now. */
export function nativeKernelsRegistered(): boolean {
  return registration !== null && tf.getKernel('BatchMatMul', 'wasm') === registration.native[0];
}
