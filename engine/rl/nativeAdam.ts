/**
 * The native path of the optimiser (issue 16): the global gradient norm and the AdamW update of engine/rl/adam.ts as
 * two fused passes of the native addon (native/mars_adam.c), in place on the wasm heap, instead of ~10 wasm kernel
 * launches and as many temporary tensors per variable. adam.ts stays the reference and decides when this runs: only
 * while the native matrix products are active on the wasm backend (so MARS_LAB_NATIVE=0 turns both off), and unless
 * MARS_LAB_NATIVE_ADAM=0. The moments stay in the optimiser's own tf.Variables, so checkpoints are the same files
 * whichever path wrote them.
 *
 * In place means: the parameter and both moments are overwritten where the wasm backend keeps them. A tensor whose
 * data another live tensor shares (the backend's refCount > 1, e.g. a reshape of a parameter someone holds) is first
 * given a private copy, so that other tensor keeps the old values as it would after the JS path's `assign`.
 */
import { tf } from '../tensor/backend';
import { addonLoad, nativeMatMulActive } from '../tensor/native/status';
import { nativeAdamRequest, type NativeAddon } from '../tensor/native/addon';

export { nativeAdamRequest };

/** The addon's fused optimiser passes. */
export type FusedOptimiser = Required<Pick<NativeAddon, 'sumSquares' | 'adam'>>;

/** The parts of tfjs-backend-wasm's BackendWasm this module uses. */
interface WasmBackendLike {
  dataIdMap: { get(dataId: object): { memoryOffset: number; refCount: number; dtype: string } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  wasm: { HEAPU8: Uint8Array };
}

/** Whether the optimiser's update can run natively in this process now, and why (not). */
export function nativeAdamStatus(): { optimiser: FusedOptimiser | null; detail: string } {
  const loaded = addonLoad().loaded;
  if (!loaded || !nativeMatMulActive()) return { optimiser: null, detail: 'the native kernels are not active' };
  if (tf.getBackend() !== 'wasm') return { optimiser: null, detail: `the backend is ${tf.getBackend()}, not wasm` };
  const { addon } = loaded;
  if (typeof addon.sumSquares !== 'function' || typeof addon.adam !== 'function') {
    return {
      optimiser: null,
      detail: "the addon predates the fused optimiser (rebuild it with 'node scripts/buildNative.mjs')",
    };
  }
  if (nativeAdamRequest() === 'off') return { optimiser: null, detail: 'switched off with MARS_LAB_NATIVE_ADAM=0' };
  return { optimiser: addon as FusedOptimiser, detail: 'Adam and the gradient norm fused natively' };
}

function wasmBackend(): WasmBackendLike | null {
  if (tf.getBackend() !== 'wasm') return null;
  return tf.backend() as unknown as WasmBackendLike;
}

/** The byte offset of a float32 tensor on the wasm backend, or null when it is not one. */
function offsetOf(backend: WasmBackendLike, t: tf.Tensor): number | null {
  if (t.isDisposed || t.dtype !== 'float32') return null;
  const entry = backend.dataIdMap.get(t.dataId);
  return entry && entry.dtype === 'float32' ? entry.memoryOffset : null;
}

/**
 * Σ x² over all gradients, in double precision, or null when one is not a float32 tensor on the wasm backend (the
 * caller then computes the norm with tensor ops).
 */
export function fusedSumSquares(optimiser: FusedOptimiser, grads: readonly tf.Tensor[]): number | null {
  const backend = wasmBackend();
  if (!backend) return null;
  const table = new Float64Array(2 * grads.length);
  for (let i = 0; i < grads.length; i++) {
    const off = offsetOf(backend, grads[i]!);
    if (off === null) return null;
    table[2 * i] = off;
    table[2 * i + 1] = grads[i]!.size;
  }
  return optimiser.sumSquares(backend.wasm.HEAPU8.buffer as ArrayBuffer, table);
}

export interface FusedSlot {
  variable: tf.Variable;
  m: tf.Variable;
  v: tf.Variable;
  grad: tf.Tensor;
  /** float32(1 − lr·wd) where weight decay applies, else 1. */
  decayFactor: number;
}

export interface FusedScalars {
  /** The clip factor; 1 means the gradients are used as they are. */
  scale: number;
  beta1: number;
  beta2: number;
  eps: number;
  lr: number;
  /** 1 − β1^t and 1 − β2^t. */
  bc1: number;
  bc2: number;
}

let updates = 0;

/** How many fused updates this process has run (tests check that a run really took the native path). */
export function fusedUpdateCount(): number {
  return updates;
}

/** Gives `v` data of its own (a copy) when another live tensor shares its data. */
function ownData(backend: WasmBackendLike, v: tf.Variable): void {
  const entry = backend.dataIdMap.get(v.dataId)!;
  if (entry.refCount <= 1) return;
  const info = backend.makeOutput([...v.shape], 'float32');
  const to = backend.dataIdMap.get(info.dataId)!.memoryOffset;
  const from = backend.dataIdMap.get(v.dataId)!.memoryOffset;
  backend.wasm.HEAPU8.copyWithin(to, from, from + 4 * v.size);
  const copy = tf.engine().makeTensorFromTensorInfo(info);
  v.assign(copy);
  copy.dispose();
}

/**
 * One AdamW update of every slot in place. Returns false, having changed nothing, when a tensor is not float32 on the
 * wasm backend or a gradient shares its data with a tensor the update writes (the caller then runs the JS update).
 */
export function fusedAdamUpdate(optimiser: FusedOptimiser, slots: readonly FusedSlot[], s: FusedScalars): boolean {
  const backend = wasmBackend();
  if (!backend) return false;
  const written = new Set<object>();
  for (const slot of slots) {
    for (const t of [slot.variable, slot.m, slot.v, slot.grad]) if (offsetOf(backend, t) === null) return false;
    for (const t of [slot.variable, slot.m, slot.v]) written.add(t.dataId);
  }
  if (slots.some((slot) => written.has(slot.grad.dataId))) return false;
  for (const slot of slots) for (const t of [slot.variable, slot.m, slot.v]) ownData(backend, t);
  const table = new Float64Array(6 * slots.length);
  slots.forEach((slot, i) => {
    table.set(
      [
        offsetOf(backend, slot.variable)!,
        offsetOf(backend, slot.grad)!,
        offsetOf(backend, slot.m)!,
        offsetOf(backend, slot.v)!,
        slot.variable.size,
        slot.decayFactor,
      ],
      6 * i,
    );
  });
  // Fetched after the copies above: an allocation can grow the heap, which replaces its ArrayBuffer.
  const heap = backend.wasm.HEAPU8.buffer as ArrayBuffer;
  optimiser.adam(
    heap,
    table,
    s.scale !== 1,
    s.scale,
    s.beta1,
    1 - s.beta1,
    s.beta2,
    1 - s.beta2,
    s.bc1,
    s.bc2,
    s.eps,
    s.lr,
  );
  updates++;
  return true;
}
