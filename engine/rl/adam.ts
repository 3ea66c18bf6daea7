/**
 * Adam with global-norm gradient clipping, a learning-rate schedule and serialisable state (docs/algorithms.md §4 `lr`,
 * `gradClip`). It replaces tf.train.adam so that clipping, the schedule and checkpointing of the moments live in one
 * place.
 *
 * Update for step t (1-based), with g the clipped gradient (Kingma & Ba, 2015; decoupled weight decay as AdamW,
 * Loshchilov & Hutter, 2019, in torch.optim.AdamW's order):
 *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
 *   p ← p·(1 − lr·wd) − lr · (m/(1−β1^t)) / (sqrt(v/(1−β2^t)) + eps)
 *
 * The tensor ops below are the reference. While the native kernels are active on the wasm backend (issue 16), the
 * norm and the update run instead as two fused native passes in place on the wasm heap (nativeAdam.ts), in the same
 * float32 order, so an unclipped update is the same to the bit and a clipped one differs only by the norm's rounding;
 * the moments live in the same variables either way, so checkpoints do not depend on the path.
 */
import { tf } from '../tensor/backend';
import { lrAt, validateSchedule, type LrSchedule } from './schedule';
import { fusedAdamUpdate, fusedSumSquares, nativeAdamStatus, type FusedOptimiser } from './nativeAdam';

export interface AdamOptions {
  /** A constant learning rate or a schedule. */
  lr: number | LrSchedule;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (default 0). */
  weightDecay?: number;
  /** Which variables weight decay applies to (default: all). */
  decays?: (name: string) => boolean;
  /** Global-norm clip threshold (default 1.0); null or Infinity turns clipping off. */
  maxGradNorm?: number | null;
  /**
   * What the schedule's step counts. 'update' (default): every parameter update advances it. 'trainingStep': the
   * caller passes the training step to `step`, so every update of one training step (minibatches × epochs, or
   * MARTI's per-agent updates) uses that step's rate and a schedule over budget.steps spans the whole run. This is
   * verl's convention: its actor lr scheduler steps once per `update_actor` call (one training step), however many
   * optimizer steps the update took, over total_training_steps.
   */
  scheduleUnit?: 'update' | 'trainingStep';
  /**
   * Which path computes the norm and the update: 'auto' (default) the fused native one when it is available
   * (nativeAdam.ts), else the tensor ops; 'js' always the tensor ops; 'native' the fused one or an error.
   */
  implementation?: 'auto' | 'js' | 'native';
}

export interface AdamStepResult {
  /** Global L2 norm of the gradients before clipping. */
  gradNorm: number;
  /** The learning rate this step used (0 when skipped). */
  lr: number;
  /** Whether the gradients were scaled down by maxGradNorm/gradNorm. */
  clipped: boolean;
  /** True when the gradient norm was not finite: nothing was updated and the step count did not advance. */
  skipped: boolean;
  /** Updates performed so far, this one included. */
  step: number;
  /** Whether the fused native passes computed the update (and the norm). */
  native: boolean;
}

export interface AdamTensorState {
  shape: number[];
  data: Float32Array;
}

/** Moments are named `m/<variable>` and `v/<variable>`, so they can sit in a safetensors file of their own. */
export interface AdamState {
  step: number;
  tensors: Record<string, AdamTensorState>;
}

interface Slot {
  name: string;
  variable: tf.Variable;
  m: tf.Variable;
  v: tf.Variable;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class Adam {
  private readonly slots: Map<string, Slot>;
  private readonly schedule: LrSchedule;
  private readonly beta1: number;
  private readonly beta2: number;
  private readonly eps: number;
  private readonly weightDecay: number;
  private readonly decays: (name: string) => boolean;
  private readonly maxGradNorm: number;
  private readonly scheduleUnit: 'update' | 'trainingStep';
  private readonly implementation: 'auto' | 'js' | 'native';
  private t = 0;
  private disposed = false;

  /**
   * `vars` as a record is keyed by the names `step` will use; as a list, each variable's own `name` is used, which is
   * what `tf.variableGrads` keys its gradients by.
   */
  constructor(vars: Record<string, tf.Variable> | readonly tf.Variable[], opts: AdamOptions) {
    this.schedule = typeof opts.lr === 'number' ? { kind: 'constant', lr: opts.lr } : opts.lr;
    validateSchedule(this.schedule);
    this.beta1 = opts.beta1 ?? 0.9;
    this.beta2 = opts.beta2 ?? 0.999;
    this.eps = opts.eps ?? 1e-8;
    this.weightDecay = opts.weightDecay ?? 0;
    this.decays = opts.decays ?? (() => true);
    this.maxGradNorm = opts.maxGradNorm === null ? Infinity : (opts.maxGradNorm ?? 1.0);
    this.scheduleUnit = opts.scheduleUnit ?? 'update';
    this.implementation = opts.implementation ?? 'auto';
    if (!['auto', 'js', 'native'].includes(this.implementation)) {
      throw new Error(`Adam: implementation must be 'auto', 'js' or 'native', got '${this.implementation as string}'.`);
    }
    if (this.scheduleUnit !== 'update' && this.scheduleUnit !== 'trainingStep') {
      throw new Error(`Adam: scheduleUnit must be 'update' or 'trainingStep', got '${this.scheduleUnit as string}'.`);
    }
    for (const [what, x] of [
      ['beta1', this.beta1],
      ['beta2', this.beta2],
    ] as const) {
      if (!(x >= 0 && x < 1)) throw new Error(`Adam: ${what} must be in [0, 1), got ${x}.`);
    }
    if (!(this.eps > 0)) throw new Error(`Adam: eps must be > 0, got ${this.eps}.`);
    if (!(this.weightDecay >= 0) || !Number.isFinite(this.weightDecay)) {
      throw new Error(`Adam: weightDecay must be a finite number ≥ 0, got ${this.weightDecay}.`);
    }
    if (!(this.maxGradNorm > 0)) {
      throw new Error(`Adam: maxGradNorm must be > 0 (or null for no clipping), got ${opts.maxGradNorm}.`);
    }

    const entries: [string, tf.Variable][] = Array.isArray(vars)
      ? (vars as readonly tf.Variable[]).map((v) => [v.name, v])
      : Object.entries(vars as Record<string, tf.Variable>);
    if (entries.length === 0) throw new Error('Adam: there are no variables to optimise.');
    this.slots = new Map();
    for (const [name, variable] of entries) {
      if (this.slots.has(name)) throw new Error(`Adam: variable name '${name}' appears twice.`);
      if (variable.dtype !== 'float32') {
        throw new Error(`Adam: variable '${name}' is ${variable.dtype}; only float32 can be trained.`);
      }
      const m = tf.tidy(() => tf.variable(tf.zerosLike(variable), false));
      const v = tf.tidy(() => tf.variable(tf.zerosLike(variable), false));
      this.slots.set(name, { name, variable, m, v });
    }
  }

  /** Updates performed so far. */
  get stepCount(): number {
    return this.t;
  }

  /** The learning rate the next update will use (under scheduleUnit 'trainingStep': an update of `trainingStep`). */
  nextLr(trainingStep?: number): number {
    return lrAt(this.schedule, this.schedulePosition(trainingStep));
  }

  /** Where on the schedule an update is: its own count, or the 0-based training step it belongs to. */
  private schedulePosition(trainingStep: number | undefined): number {
    if (this.scheduleUnit === 'update') return this.t;
    if (trainingStep === undefined || !Number.isInteger(trainingStep) || trainingStep < 0) {
      throw new Error(
        `Adam: scheduleUnit 'trainingStep' needs the 0-based training step of the update, got ${trainingStep}.`,
      );
    }
    return trainingStep;
  }

  private checkGrads(grads: Record<string, tf.Tensor>): [Slot, tf.Tensor][] {
    if (this.disposed) throw new Error('Adam: this optimiser was disposed.');
    const pairs: [Slot, tf.Tensor][] = [];
    for (const [name, g] of Object.entries(grads)) {
      const slot = this.slots.get(name);
      if (!slot) {
        throw new Error(
          `Adam: gradient '${name}' matches no optimised variable (known: ${[...this.slots.keys()].slice(0, 8).join(', ')}${this.slots.size > 8 ? ', …' : ''}).`,
        );
      }
      if (!sameShape(g.shape, slot.variable.shape)) {
        throw new Error(
          `Adam: gradient '${name}' has shape [${g.shape.join(', ')}] but the variable has [${slot.variable.shape.join(', ')}].`,
        );
      }
      pairs.push([slot, g]);
    }
    return pairs;
  }

  /**
   * One update. Variables without a gradient in `grads` are left alone, moments included (as torch does for a
   * parameter whose .grad is None). The gradients stay owned by the caller. `trainingStep` (0-based) is required
   * under scheduleUnit 'trainingStep' and ignored otherwise.
   */
  async step(grads: Record<string, tf.Tensor>, trainingStep?: number): Promise<AdamStepResult> {
    const pairs = this.checkGrads(grads);
    const position = this.schedulePosition(trainingStep);
    const fused = this.fusedOptimiser();
    let gradNorm =
      fused && pairs.length > 0
        ? fusedSumSquares(
            fused,
            pairs.map(([, g]) => g),
          )
        : null;
    if (gradNorm !== null) gradNorm = Math.sqrt(gradNorm);
    else {
      if (this.implementation === 'native' && pairs.length > 0) {
        throw new Error('Adam: the native norm needs float32 gradients on the wasm backend.');
      }
      const normT = tf.tidy(() => {
        if (pairs.length === 0) return tf.scalar(0);
        const squares = pairs.map(([, g]) => tf.sum(tf.square(tf.cast(g, 'float32'))));
        return tf.sqrt(squares.length === 1 ? squares[0]! : tf.addN(squares));
      });
      gradNorm = (await normT.data())[0]!;
      normT.dispose();
    }
    if (!Number.isFinite(gradNorm)) {
      return { gradNorm, lr: 0, clipped: false, skipped: true, step: this.t, native: false };
    }

    const clipped = gradNorm > this.maxGradNorm;
    const scale = clipped ? this.maxGradNorm / gradNorm : 1;
    const lr = lrAt(this.schedule, position);
    this.t += 1;
    const bc1 = 1 - Math.pow(this.beta1, this.t);
    const bc2 = 1 - Math.pow(this.beta2, this.t);
    const decayFactor = (slot: Slot) =>
      this.weightDecay > 0 && this.decays(slot.name) ? 1 - lr * this.weightDecay : 1;
    if (fused) {
      const slots = pairs.map(([slot, grad]) => ({
        variable: slot.variable,
        m: slot.m,
        v: slot.v,
        grad,
        decayFactor: decayFactor(slot),
      }));
      if (fusedAdamUpdate(fused, slots, { scale, beta1: this.beta1, beta2: this.beta2, eps: this.eps, lr, bc1, bc2 })) {
        return { gradNorm, lr, clipped, skipped: false, step: this.t, native: true };
      }
      if (this.implementation === 'native') {
        this.t -= 1; // nothing was updated
        throw new Error(
          'Adam: the native update needs float32 tensors on the wasm backend, and gradients that share no data with what it writes.',
        );
      }
    }
    for (const [slot, grad] of pairs) {
      tf.tidy(() => {
        const g = scale === 1 ? tf.cast(grad, 'float32') : tf.mul(grad, scale);
        const m = tf.add(tf.mul(slot.m, this.beta1), tf.mul(g, 1 - this.beta1));
        const v = tf.add(tf.mul(slot.v, this.beta2), tf.mul(tf.square(g), 1 - this.beta2));
        slot.m.assign(m);
        slot.v.assign(v);
        const update = tf.div(tf.div(m, bc1), tf.add(tf.sqrt(tf.div(v, bc2)), this.eps));
        let p: tf.Tensor = slot.variable;
        const decay = decayFactor(slot);
        if (decay !== 1) p = tf.mul(p, decay);
        slot.variable.assign(tf.sub(p, tf.mul(update, lr)));
      });
    }
    return { gradNorm, lr, clipped, skipped: false, step: this.t, native: false };
  }

  /** The fused native passes when this step may and can use them (implementation 'native': must). */
  private fusedOptimiser(): FusedOptimiser | null {
    if (this.implementation === 'js') return null;
    const { optimiser, detail } = nativeAdamStatus();
    if (!optimiser && this.implementation === 'native') {
      throw new Error(`Adam: implementation 'native' is not available: ${detail}.`);
    }
    return optimiser;
  }

  /** Copies of the step count and both moments of every variable. */
  async exportState(): Promise<AdamState> {
    if (this.disposed) throw new Error('Adam: this optimiser was disposed.');
    const tensors: Record<string, AdamTensorState> = {};
    for (const slot of this.slots.values()) {
      for (const [prefix, t] of [
        ['m', slot.m],
        ['v', slot.v],
      ] as const) {
        // A copy: the cpu backend hands out its live backing array.
        tensors[`${prefix}/${slot.name}`] = { shape: [...t.shape], data: new Float32Array(await t.data()) };
      }
    }
    return { step: this.t, tensors };
  }

  /** Restores a state from `exportState`. Everything is checked before anything is changed. */
  importState(saved: AdamState): void {
    if (this.disposed) throw new Error('Adam: this optimiser was disposed.');
    const state = this.splitLegacyFusedMoments(saved);
    if (!Number.isInteger(state.step) || state.step < 0) {
      throw new Error(`Adam state: step must be an integer ≥ 0, got ${state.step}.`);
    }
    const expected = new Set<string>();
    for (const slot of this.slots.values()) {
      for (const prefix of ['m', 'v']) {
        const key = `${prefix}/${slot.name}`;
        expected.add(key);
        const entry = state.tensors[key];
        if (!entry) throw new Error(`Adam state: tensor '${key}' is missing.`);
        if (!sameShape(entry.shape, slot.variable.shape)) {
          throw new Error(
            `Adam state: tensor '${key}' has shape [${entry.shape.join(', ')}] but variable '${slot.name}' has [${slot.variable.shape.join(', ')}].`,
          );
        }
        if (entry.data.length !== slot.variable.size) {
          throw new Error(
            `Adam state: tensor '${key}' holds ${entry.data.length} values but shape [${entry.shape.join(', ')}] needs ${slot.variable.size}.`,
          );
        }
      }
    }
    for (const key of Object.keys(state.tensors)) {
      if (!expected.has(key)) throw new Error(`Adam state: tensor '${key}' belongs to no optimised variable.`);
    }
    for (const slot of this.slots.values()) {
      tf.tidy(() => {
        // Copied: tf.tensor may adopt the caller's array as its storage.
        slot.m.assign(tf.tensor(state.tensors[`m/${slot.name}`]!.data.slice(), slot.variable.shape, 'float32'));
        slot.v.assign(tf.tensor(state.tensors[`v/${slot.name}`]!.data.slice(), slot.variable.shape, 'float32'));
      });
    }
    this.t = state.step;
  }

  /**
   * Checkpoints written before the model kept q, k, v (and gate, up) as separate variables hold the moments of the
   * fused `layers.L.wqkv` ([in, q+k+v]) and `layers.L.wgu` ([in, gate+up]). Their columns are split into the
   * separate variables' moments, so those runs still resume exactly.
   */
  private splitLegacyFusedMoments(state: AdamState): AdamState {
    const fused: [string, string[]][] = [
      ['wqkv', ['wq', 'wk', 'wv']],
      ['wgu', ['wg', 'wu']],
    ];
    const tensors = { ...state.tensors };
    for (const [key, entry] of Object.entries(state.tensors)) {
      const m = /^([mv])\/(layers\.\d+)\.(wqkv|wgu)$/.exec(key);
      if (!m) continue;
      const parts = fused.find(([f]) => f === m[3])![1].map((p) => this.slots.get(`${m[2]}.${p}`));
      if (parts.some((p) => !p) || entry.shape.length !== 2) continue; // not this layout: reported as unknown below
      const rows = entry.shape[0]!;
      const widths = parts.map((p) => p!.variable.shape[1]!);
      const total = widths.reduce((a, b) => a + b, 0);
      if (entry.shape[1] !== total || parts.some((p) => p!.variable.shape[0] !== rows)) continue;
      let off = 0;
      parts.forEach((p, i) => {
        const w = widths[i]!;
        const data = new Float32Array(rows * w);
        for (let r = 0; r < rows; r++) data.set(entry.data.subarray(r * total + off, r * total + off + w), r * w);
        tensors[`${m[1]}/${p!.name}`] = { shape: [rows, w], data };
        off += w;
      });
      delete tensors[key];
    }
    return { step: state.step, tensors };
  }

  /** Frees the moment tensors (not the optimised variables). */
  dispose(): void {
    if (this.disposed) return;
    for (const slot of this.slots.values()) {
      slot.m.dispose();
      slot.v.dispose();
    }
    this.disposed = true;
  }
}
