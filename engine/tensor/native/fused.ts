/**
 * The transformer's small ops fused natively (issue 16): RMSNorm, SwiGLU, RoPE, log-softmax with the target picked
 * (and the entropy), and row gather/scatter, each one wasm kernel forward and one backward instead of 3–20 stock ones.
 * The tiny model's step is bound by kernel launches, not arithmetic; these cut them.
 *
 * Each op is a kernel registered for the wasm backend under its own name (Mars…) with a gradient registered for that
 * name, so TensorFlow.js's tape differentiates through it like any op. A kernel lets the backend allocate its outputs
 * on the wasm heap (`makeOutput`) and hands the addon (native/mars_fused.c) the heap's current ArrayBuffer and byte
 * offsets: nothing is copied. `fusedOps()` returns the ops only while the native matrix products are registered for
 * the wasm backend in use and MARS_LAB_NATIVE_FUSED is not 0; otherwise null, and callers (engine/model/llama.ts,
 * engine/model/logProbs.ts) keep their stock tensor ops unchanged. While they run, the wasm backend's Identity (which
 * TensorFlow.js runs to save every tensor a gradient needs) shares data instead of copying it (kernels.ts,
 * `useSharedIdentity`).
 */
import * as tf from '@tensorflow/tfjs';
import { nativeFusedRequest, type NativeAddon } from './addon';
import { registeredAddon, useSharedIdentity } from './kernels';

/** The addon's fused ops, all present. */
type FusedAddon = Required<
  Pick<
    NativeAddon,
    | 'rmsNorm'
    | 'rmsNormGrad'
    | 'swiglu'
    | 'swigluGrad'
    | 'rope'
    | 'logSoftmaxPick'
    | 'logSoftmaxPickGrad'
    | 'gatherRows'
    | 'scatterAddRows'
  >
>;

const FUSED_FUNCTIONS = [
  'rmsNorm',
  'rmsNormGrad',
  'swiglu',
  'swigluGrad',
  'rope',
  'logSoftmaxPick',
  'logSoftmaxPickGrad',
  'gatherRows',
  'scatterAddRows',
] as const;

/** The parts of tfjs-backend-wasm's BackendWasm these kernels use. */
interface WasmBackendLike {
  dataIdMap: { get(dataId: object): { memoryOffset: number } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  wasm: { HEAPU8: Uint8Array };
}

export interface FusedOps {
  /** x / √(mean(x²) + eps) · weight over the last axis, x [rows, D], weight [D]. */
  rmsNorm(x: tf.Tensor2D, weight: tf.Tensor, eps: number): tf.Tensor2D;
  /** silu(gate) ⊙ up, element-wise (equal shapes). */
  swiglu<T extends tf.Tensor>(gate: T, up: T): T;
  /** (x·cos + rotate_half(x)·sin)·scale for x [B, n, T, hd] and cos, sin [B, 1, T, hd] (HF's rotate-half RoPE). */
  rope(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D, scale: number): tf.Tensor4D;
  /**
   * logSoftmax(logits / temperature)[r, targets[r]] for logits [R, V] (0 where a target lies outside [0, V)), and
   * with `entropy` the distribution's entropy per row; both [R].
   */
  logSoftmaxPick(
    logits: tf.Tensor2D,
    targets: tf.Tensor1D,
    temperature: number,
    entropy: boolean,
  ): { logp: tf.Tensor1D; entropy?: tf.Tensor1D };
  /** x[idx] along the first axis (float32 x); the gradient is a scatter-add. */
  gatherRows<T extends tf.Tensor>(x: T, idx: tf.Tensor1D): T;
  /** `rows` rows, zero except row idx[i] = values[i] (duplicates summed); the gradient is a gather. */
  scatterRows<T extends tf.Tensor>(values: T, idx: tf.Tensor1D, rows: number): T;
}

/** Why the fused ops do not run now, or '' when they do (and `fusedOps()` returns them). */
export function fusedInactiveReason(): string {
  if (nativeFusedRequest() === 'off') return 'switched off with MARS_LAB_NATIVE_FUSED=0';
  const addon = registeredAddon();
  if (!addon) return 'the native kernels are not active';
  if (tf.getBackend() !== 'wasm') return `the backend is ${tf.getBackend()}, not wasm`;
  if (FUSED_FUNCTIONS.some((f) => typeof addon[f] !== 'function')) {
    return "the addon predates the fused ops (rebuild it with 'node scripts/buildNative.mjs')";
  }
  return '';
}

let calls = 0;

/** How many fused kernels have run in this process (tests check that a path really ran fused). */
export function fusedKernelCount(): number {
  return calls;
}

function offsetOf(backend: WasmBackendLike, t: tf.TensorInfo): number {
  const entry = backend.dataIdMap.get(t.dataId);
  if (!entry) throw new Error('native fused op: a tensor has no data on the wasm backend');
  return entry.memoryOffset;
}

function float32(name: string, ...ts: tf.TensorInfo[]): void {
  for (const t of ts) {
    if (t.dtype !== 'float32') throw new Error(`${name}: expected float32 tensors, got ${t.dtype}`);
  }
}

function int32(name: string, t: tf.TensorInfo): void {
  if (t.dtype !== 'int32') throw new Error(`${name}: indices must be int32, got ${t.dtype}`);
}

const size = (shape: readonly number[]) => tf.util.sizeFromShape(shape as number[]);

type Inputs = Record<string, tf.TensorInfo>;
type Attrs = Record<string, unknown>;

/** One wasm kernel: counts its calls and hands `f` the backend, inputs and attributes. */
const wasmKernel = (
  kernelName: string,
  f: (b: WasmBackendLike, inputs: Inputs, attrs: Attrs) => tf.TensorInfo | tf.TensorInfo[],
) => ({
  kernelName,
  backendName: 'wasm',
  kernelFunc: ((args: { inputs: unknown; backend: unknown; attrs?: unknown }) => {
    calls++;
    return f(args.backend as WasmBackendLike, args.inputs as Inputs, (args.attrs ?? {}) as Attrs);
  }) as unknown as tf.KernelFunc,
});

const heap = (b: WasmBackendLike) => b.wasm.HEAPU8.buffer as ArrayBuffer;

/** RMSNorm forward and backward. */
function rmsNormKernels(addon: FusedAddon): tf.KernelConfig[] {
  return [
    wasmKernel('MarsRmsNorm', (b, { x, weight }, { eps }) => {
      float32('rmsNorm', x!, weight!);
      const d = x!.shape[x!.shape.length - 1]!;
      if (size(weight!.shape) !== d) throw new Error(`rmsNorm: weight has ${size(weight!.shape)} values, not ${d}`);
      const y = b.makeOutput(x!.shape, 'float32');
      addon.rmsNorm(
        heap(b),
        offsetOf(b, x!),
        offsetOf(b, weight!),
        offsetOf(b, y),
        size(x!.shape) / d,
        d,
        eps as number,
      );
      return y;
    }),
    wasmKernel('MarsRmsNormGrad', (b, { x, weight, dy }, { eps }) => {
      const d = x!.shape[x!.shape.length - 1]!;
      const dx = b.makeOutput(x!.shape, 'float32');
      const dw = b.makeOutput(weight!.shape, 'float32');
      addon.rmsNormGrad(
        heap(b),
        offsetOf(b, x!),
        offsetOf(b, weight!),
        offsetOf(b, dy!),
        offsetOf(b, dx),
        offsetOf(b, dw),
        size(x!.shape) / d,
        d,
        eps as number,
      );
      return [dx, dw];
    }),
  ];
}

/** SwiGLU forward and backward. */
function swigluKernels(addon: FusedAddon): tf.KernelConfig[] {
  return [
    wasmKernel('MarsSwiGLU', (b, { gate, up }) => {
      float32('swiglu', gate!, up!);
      if (!tf.util.arraysEqual(gate!.shape, up!.shape)) throw new Error('swiglu: gate and up must have one shape');
      const y = b.makeOutput(gate!.shape, 'float32');
      addon.swiglu(heap(b), offsetOf(b, gate!), offsetOf(b, up!), offsetOf(b, y), size(gate!.shape));
      return y;
    }),
    wasmKernel('MarsSwiGLUGrad', (b, { gate, up, dy }) => {
      const dg = b.makeOutput(gate!.shape, 'float32');
      const du = b.makeOutput(up!.shape, 'float32');
      addon.swigluGrad(
        heap(b),
        offsetOf(b, gate!),
        offsetOf(b, up!),
        offsetOf(b, dy!),
        offsetOf(b, dg),
        offsetOf(b, du),
        size(gate!.shape),
      );
      return [dg, du];
    }),
  ];
}

/** RoPE, whose backward is the same kernel with the adjoint rotation. */
function ropeKernels(addon: FusedAddon): tf.KernelConfig[] {
  return [
    wasmKernel('MarsRope', (b, { x, cos, sin }, { scale, adjoint }) => {
      float32('rope', x!, cos!, sin!);
      const [outer, heads, t, hd] = x!.shape as [number, number, number, number];
      const tableShape = [outer, 1, t, hd];
      if (
        x!.shape.length !== 4 ||
        !tf.util.arraysEqual(cos!.shape, tableShape) ||
        !tf.util.arraysEqual(sin!.shape, tableShape)
      ) {
        throw new Error(
          `rope: x [B, n, T, hd] with cos, sin [B, 1, T, hd]; got ${x!.shape}, ${cos!.shape}, ${sin!.shape}`,
        );
      }
      const y = b.makeOutput(x!.shape, 'float32');
      addon.rope(
        heap(b),
        offsetOf(b, x!),
        offsetOf(b, cos!),
        offsetOf(b, sin!),
        offsetOf(b, y),
        outer,
        heads,
        t,
        hd,
        scale as number,
        adjoint ? 1 : 0,
      );
      return y;
    }),
  ];
}

/** Log-softmax with the target picked (and the entropy), forward and backward. */
function logSoftmaxPickKernels(addon: FusedAddon): tf.KernelConfig[] {
  return [
    wasmKernel('MarsLogSoftmaxPick', (b, { logits, targets }, { temperature, entropy }) => {
      float32('logSoftmaxPick', logits!);
      int32('logSoftmaxPick', targets!);
      const [rows, v] = logits!.shape as [number, number];
      if (logits!.shape.length !== 2 || size(targets!.shape) !== rows) {
        throw new Error(`logSoftmaxPick: logits [R, V] and targets [R]; got ${logits!.shape}, ${targets!.shape}`);
      }
      const logp = b.makeOutput([rows], 'float32');
      const ent = entropy ? b.makeOutput([rows], 'float32') : null;
      addon.logSoftmaxPick(
        heap(b),
        offsetOf(b, logits!),
        offsetOf(b, targets!),
        offsetOf(b, logp),
        ent ? offsetOf(b, ent) : -1,
        rows,
        v,
        temperature as number,
      );
      return ent ? [logp, ent] : [logp];
    }),
    wasmKernel('MarsLogSoftmaxPickGrad', (b, { logits, targets, dLogp, dEntropy }, { temperature }) => {
      const [rows, v] = logits!.shape as [number, number];
      const dz = b.makeOutput(logits!.shape, 'float32');
      addon.logSoftmaxPickGrad(
        heap(b),
        offsetOf(b, logits!),
        offsetOf(b, targets!),
        offsetOf(b, dLogp!),
        dEntropy ? offsetOf(b, dEntropy) : -1,
        offsetOf(b, dz),
        rows,
        v,
        temperature as number,
      );
      return dz;
    }),
  ];
}

/** Row gather and scatter-add, each the other's backward. */
function rowKernels(addon: FusedAddon): tf.KernelConfig[] {
  return [
    wasmKernel('MarsGatherRows', (b, { x, indices }) => {
      float32('gatherRows', x!);
      int32('gatherRows', indices!);
      const n = x!.shape[0]!;
      const m = size(indices!.shape);
      const width = n === 0 ? 0 : size(x!.shape) / n;
      const y = b.makeOutput([m, ...x!.shape.slice(1)], 'float32');
      addon.gatherRows(heap(b), offsetOf(b, x!), offsetOf(b, indices!), offsetOf(b, y), n, m, width);
      return y;
    }),
    wasmKernel('MarsScatterAddRows', (b, { values, indices }, { rows }) => {
      float32('scatterRows', values!);
      int32('scatterRows', indices!);
      const m = size(indices!.shape);
      if (values!.shape[0] !== m) throw new Error(`scatterRows: ${values!.shape[0]} rows of values for ${m} indices`);
      const width = m === 0 ? size(values!.shape.slice(1)) : size(values!.shape) / m;
      const y = b.makeOutput([rows as number, ...values!.shape.slice(1)], 'float32');
      addon.scatterAddRows(
        heap(b),
        offsetOf(b, values!),
        offsetOf(b, indices!),
        offsetOf(b, y),
        rows as number,
        m,
        width,
      );
      return y;
    }),
  ];
}

/** The wasm kernels, closing over the addon. */
function kernelConfigs(addon: FusedAddon): tf.KernelConfig[] {
  return [
    ...rmsNormKernels(addon),
    ...swigluKernels(addon),
    ...ropeKernels(addon),
    ...logSoftmaxPickKernels(addon),
    ...rowKernels(addon),
  ];
}

const run = (name: string, inputs: Record<string, tf.Tensor>, attrs: Attrs = {}) =>
  tf.engine().runKernel<tf.Tensor | tf.Tensor[]>(name, inputs, attrs as tf.NamedAttrMap);

const one = (r: tf.Tensor | tf.Tensor[]) => (Array.isArray(r) ? r[0]! : r);

/**
 * Gradients of the fused kernels. A gradient function is called once per backward pass, before the tape asks for
 * each input's gradient, so kernels with two outputs (dx and dw) run once there and hand out both.
 */
function gradientConfigs(): tf.GradConfig[] {
  return [
    {
      kernelName: 'MarsRmsNorm',
      inputsToSave: ['x', 'weight'],
      gradFunc: (dy, saved, attrs) => {
        const [x, weight] = saved as [tf.Tensor, tf.Tensor];
        const [dx, dw] = run('MarsRmsNormGrad', { x, weight, dy: dy as tf.Tensor }, { eps: attrs.eps }) as tf.Tensor[];
        return { x: () => dx!, weight: () => dw! };
      },
    },
    {
      kernelName: 'MarsSwiGLU',
      inputsToSave: ['gate', 'up'],
      gradFunc: (dy, saved) => {
        const [gate, up] = saved as [tf.Tensor, tf.Tensor];
        const [dg, du] = run('MarsSwiGLUGrad', { gate, up, dy: dy as tf.Tensor }) as tf.Tensor[];
        return { gate: () => dg!, up: () => du! };
      },
    },
    {
      kernelName: 'MarsRope',
      inputsToSave: ['cos', 'sin'],
      gradFunc: (dy, saved, attrs) => {
        const [cos, sin] = saved as [tf.Tensor, tf.Tensor];
        return {
          x: () => one(run('MarsRope', { x: dy as tf.Tensor, cos, sin }, { scale: attrs.scale, adjoint: true })),
          // The tables are constants; their gradient is asked for only if someone differentiates through them.
          cos: () => tf.zerosLike(cos),
          sin: () => tf.zerosLike(sin),
        };
      },
    },
    {
      kernelName: 'MarsLogSoftmaxPick',
      inputsToSave: ['logits', 'targets'],
      gradFunc: (dy, saved, attrs) => {
        const [logits, targets] = saved as [tf.Tensor, tf.Tensor];
        const dys = Array.isArray(dy) ? dy : [dy];
        const inputs: Record<string, tf.Tensor> = { logits, targets, dLogp: dys[0]! };
        if (attrs.entropy && dys[1]) inputs.dEntropy = dys[1];
        return {
          logits: () => one(run('MarsLogSoftmaxPickGrad', inputs, { temperature: attrs.temperature })),
          targets: () => tf.zerosLike(targets),
        };
      },
    },
    {
      kernelName: 'MarsGatherRows',
      inputsToSave: ['x', 'indices'],
      gradFunc: (dy, saved) => {
        const [x, indices] = saved as [tf.Tensor, tf.Tensor];
        return {
          x: () => one(run('MarsScatterAddRows', { values: dy as tf.Tensor, indices }, { rows: x.shape[0] })),
          indices: () => tf.zerosLike(indices),
        };
      },
    },
    {
      kernelName: 'MarsScatterAddRows',
      inputsToSave: ['indices'],
      gradFunc: (dy, saved) => {
        const [indices] = saved as [tf.Tensor];
        return {
          values: () => one(run('MarsGatherRows', { x: dy as tf.Tensor, indices })),
          indices: () => tf.zerosLike(indices),
        };
      },
    },
  ];
}

let registeredFor: FusedAddon | null = null;
let gradientsRegistered = false;

function ensureRegistered(addon: FusedAddon): void {
  if (!gradientsRegistered) {
    for (const g of gradientConfigs()) tf.registerGradient(g);
    gradientsRegistered = true;
  }
  if (registeredFor === addon) return;
  for (const c of kernelConfigs(addon)) {
    if (tf.getKernel(c.kernelName, c.backendName)) tf.unregisterKernel(c.kernelName, c.backendName);
    tf.registerKernel(c);
  }
  registeredFor = addon;
}

const OPS: FusedOps = {
  rmsNorm: (x, weight, eps) => one(run('MarsRmsNorm', { x, weight }, { eps })) as tf.Tensor2D,
  swiglu: (gate, up) => one(run('MarsSwiGLU', { gate, up })) as typeof gate,
  rope: (x, cos, sin, scale) => one(run('MarsRope', { x, cos, sin }, { scale, adjoint: false })) as tf.Tensor4D,
  logSoftmaxPick: (logits, targets, temperature, entropy) => {
    const r = run('MarsLogSoftmaxPick', { logits, targets }, { temperature, entropy }) as tf.Tensor[];
    const outs = Array.isArray(r) ? r : [r];
    return entropy
      ? { logp: outs[0] as tf.Tensor1D, entropy: outs[1] as tf.Tensor1D }
      : { logp: outs[0] as tf.Tensor1D };
  },
  gatherRows: (x, idx) => one(run('MarsGatherRows', { x, indices: idx })) as typeof x,
  scatterRows: (values, idx, rows) =>
    one(run('MarsScatterAddRows', { values, indices: idx }, { rows })) as typeof values,
};

/** The fused ops when they can run now (see the module comment), else null: use the stock tensor ops then. */
export function fusedOps(): FusedOps | null {
  const active = fusedInactiveReason() === '';
  // The saved-for-gradient copies go with the fused ops (and come back with the stock path).
  if (tf.getBackend() === 'wasm') useSharedIdentity(active);
  if (!active) return null;
  ensureRegistered(registeredAddon() as FusedAddon);
  return OPS;
}
