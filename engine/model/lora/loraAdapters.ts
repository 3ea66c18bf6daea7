/**
 * LoRA adapters on a LlamaModel (issue 30, item 7; Hu et al., arXiv 2106.09685, as PEFT implements it): each targeted
 * linear map W [in, out] of each layer gets a low-rank update, y = x·W + dropout(x)·A·B · (alpha / r), with A [in, r]
 * and B [r, out] the only trained variables. Initialised as PEFT's default: A uniform in ±1/√in (kaiming_uniform with
 * a = √5), B zero, so a fresh adapter leaves the model's outputs exactly as they were.
 *
 * Stored in the forward pass's layout (llama.ts: linear maps are [in, out]), so A and B are the transposes of PEFT's
 * lora_A.weight [r, in] and lora_B.weight [out, r]; lora/peftAdapter.ts converts. Dropout (PEFT's lora_dropout) acts
 * on the adapter's input in differentiable passes only, as PEFT's train mode; its masks are drawn from a counter the
 * adapters keep (`dropoutCalls`), so a seed and that counter reproduce them.
 */
import { z } from 'zod';
import { UserError } from '../../base/userError';
import type { Rng } from '../../random/prng';
import { tf } from '../../tensor/backend';
import { mm, transposeLast } from '../../tensor/matMul';
import { headDim, type LlamaConfig } from '../config';

/** PEFT's module names, and the weight each adapts in llama.ts's names. */
export const LORA_TARGETS = {
  q_proj: 'wq',
  k_proj: 'wk',
  v_proj: 'wv',
  o_proj: 'wo',
  gate_proj: 'wg',
  up_proj: 'wu',
  down_proj: 'wd',
} as const;
export type LoraTarget = keyof typeof LORA_TARGETS;
export const LORA_TARGET_NAMES = Object.keys(LORA_TARGETS) as LoraTarget[];

/** The form's titles and descriptions ride along (the launch form is drawn from the run config's JSON Schema). */
const about = (title: string, description: string) => ({ title, description });

export const loraSpecSchema = z.strictObject({
  rank: z.int().min(1).max(4096).meta(about('Rank', 'The adapters’ inner width r.')),
  alpha: z
    .number()
    .positive()
    .meta(about('Alpha', 'The adapters’ output is scaled by alpha / rank (PEFT’s lora_alpha).')),
  dropout: z
    .number()
    .min(0)
    .lt(1)
    .default(0)
    .meta(about('Dropout', 'Dropout on an adapter’s input in training passes (PEFT’s lora_dropout).')),
  targets: z
    .array(z.enum(LORA_TARGET_NAMES as [LoraTarget, ...LoraTarget[]]))
    .min(1)
    .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])
    .meta(about('Target modules', 'The projections that get adapters (PEFT’s target_modules).')),
});
export type LoraSpec = z.output<typeof loraSpecSchema>;

/** [in, out] of the weight `w` (llama.ts's name) of every layer. */
export function linearShape(c: LlamaConfig, w: (typeof LORA_TARGETS)[LoraTarget]): [number, number] {
  const d = c.hidden_size;
  const q = c.num_attention_heads * headDim(c);
  const kv = c.num_key_value_heads * headDim(c);
  const I = c.intermediate_size;
  switch (w) {
    case 'wq':
      return [d, q];
    case 'wk':
    case 'wv':
      return [d, kv];
    case 'wo':
      return [q, d];
    case 'wg':
    case 'wu':
      return [d, I];
    case 'wd':
      return [I, d];
  }
}

/** A frozen weight's product on the pass's path (llama.ts): x·W, and the gradient dy·Wᵀ it passes back to x. */
export interface FrozenProduct {
  value: (x: tf.Tensor2D) => tf.Tensor2D;
  grad: (dy: tf.Tensor2D) => tf.Tensor2D;
}

/** The adapters' host arrays by name (`layers.L.wq.A` [in, r], `layers.L.wq.B` [r, out]). */
export type LoraTensors = Map<string, { shape: [number, number]; data: Float32Array }>;

let counter = 0;

export class LoraAdapters {
  readonly spec: LoraSpec;
  readonly scale: number;
  /** By name, `layers.L.<w>.A` then `.B`, layer by layer in LORA_TARGET_NAMES order: the optimiser's order. */
  readonly params: Map<string, tf.Variable>;
  /** Seed of the dropout masks, and how many differentiable passes have drawn from it. */
  dropoutSeed: number;
  dropoutCalls = 0;

  constructor(spec: LoraSpec, params: Map<string, tf.Variable>, dropoutSeed = 0) {
    this.spec = spec;
    this.scale = spec.alpha / spec.rank;
    this.params = params;
    this.dropoutSeed = dropoutSeed;
  }

  /** Fresh adapters for `config`, as PEFT initialises them (A from `rng`, B zero). */
  static create(config: LlamaConfig, spec: LoraSpec, rng: Rng): LoraAdapters {
    const tensors: LoraTensors = new Map();
    for (let l = 0; l < config.num_hidden_layers; l++) {
      for (const t of spec.targets) {
        const w = LORA_TARGETS[t];
        const [inDim, outDim] = linearShape(config, w);
        const bound = 1 / Math.sqrt(inDim);
        const a = new Float32Array(inDim * spec.rank);
        for (let i = 0; i < a.length; i++) a[i] = (2 * rng.next() - 1) * bound;
        tensors.set(`layers.${l}.${w}.A`, { shape: [inDim, spec.rank], data: a });
        tensors.set(`layers.${l}.${w}.B`, { shape: [spec.rank, outDim], data: new Float32Array(spec.rank * outDim) });
      }
    }
    return LoraAdapters.fromTensors(config, spec, tensors, rng.int(2 ** 31));
  }

  /** Adapters from host arrays, checked against `config`'s shapes (a missing or misshapen tensor is refused by name). */
  static fromTensors(config: LlamaConfig, spec: LoraSpec, tensors: LoraTensors, dropoutSeed = 0): LoraAdapters {
    const params = new Map<string, tf.Variable>();
    const id = ++counter;
    try {
      for (let l = 0; l < config.num_hidden_layers; l++) {
        for (const t of spec.targets) {
          const w = LORA_TARGETS[t];
          const [inDim, outDim] = linearShape(config, w);
          for (const [part, shape] of [
            ['A', [inDim, spec.rank]],
            ['B', [spec.rank, outDim]],
          ] as const) {
            const name = `layers.${l}.${w}.${part}`;
            const host = tensors.get(name);
            if (!host) throw new UserError(`LoRA adapter: no ${part} matrix for layer ${l} ${t}`);
            if (host.shape[0] !== shape[0] || host.shape[1] !== shape[1]) {
              throw new UserError(
                `LoRA adapter: layer ${l} ${t} ${part} is [${host.shape.join(', ')}], the model needs [${shape.join(', ')}] (rank ${spec.rank})`,
              );
            }
            params.set(name, tf.variable(tf.tensor2d(host.data, [shape[0], shape[1]]), true, `lora${id}.${name}`));
          }
        }
      }
    } catch (e) {
      for (const v of params.values()) v.dispose();
      throw e;
    }
    return new LoraAdapters(spec, params, dropoutSeed);
  }

  /** Whether the weight `layers.L.<w>` has an adapter. */
  has(weight: string): boolean {
    return this.params.has(`${weight}.A`);
  }

  /**
   * The adapted linear map `weight` (`layers.L.<w>`) on input x [rows, in]: x·W + dropout(x)·A·B·scale [rows, out],
   * or null where that map has no adapter. `base` is the frozen product x·W and its input gradient dy·Wᵀ (llama.ts).
   * `train`: a differentiable pass, where dropout acts.
   *
   * One differentiable op whose backward keeps only the adapter's input after dropout, the dropout's keep mask (a
   * byte a value) and x·A [rows, r]. Composed of TensorFlow.js ops, the tape kept every step of the dropout, the
   * products, the scaling and the sum (and on the wasm backend a copy of each): 3 to 5 MB a token for SmolLM2-135M,
   * which overran the wasm heap (issue 30). The forward and backward run the very ops autodiff ran, in its order, and
   * x's gradient comes as two inputs' (the adapter's path, then W's) so the tape sums it as it did: the same floats.
   */
  linear(weight: string, x: tf.Tensor2D, base: FrozenProduct, train: boolean): tf.Tensor2D | null {
    const a = this.params.get(`${weight}.A`) as tf.Tensor2D | undefined;
    if (!a) return null;
    const b = this.params.get(`${weight}.B`) as tf.Tensor2D;
    const p = this.spec.dropout;
    const seed = train && p > 0 ? this.nextSeed() : null;
    const scale = this.scale;
    const op = tf.customGrad(((
      xA: tf.Tensor2D,
      xW: tf.Tensor2D,
      av: tf.Tensor2D,
      bv: tf.Tensor2D,
      save: tf.GradSaveFunc,
    ) => {
      let input = xA;
      let keep: tf.Tensor | null = null;
      if (seed !== null) {
        const kept = tf.sub(tf.randomUniform(xA.shape, 0, 1, 'float32', seed), p);
        keep = tf.greater(kept, 0); // where step(kept) is 1
        input = tf.mul(xA, tf.div(tf.step(kept), 1 - p));
      }
      const xa = tf.matMul(input, av); // [rows, r]
      save(keep ? [input, xa, keep] : [input, xa]);
      return {
        value: tf.add(base.value(xW), tf.mul(tf.matMul(xa, bv), scale)),
        gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) =>
          tf.tidy(() => {
            const [dropped, xaSaved, keptMask] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor?];
            const g = tf.mul(dy, scale);
            const dB = tf.matMul(transposeLast(xaSaved), g);
            const dxa = tf.matMul(g, transposeLast(bv));
            const dA = tf.matMul(transposeLast(dropped), dxa);
            const dDropped = tf.matMul(dxa, transposeLast(av));
            const dxA = keptMask ? tf.mul(dDropped, tf.div(tf.cast(keptMask, 'float32'), 1 - p)) : dDropped;
            return [dxA, base.grad(dy), dA, dB];
          }),
      };
    }) as unknown as Parameters<typeof tf.customGrad>[0]);
    return op(x, x, a, b) as tf.Tensor2D;
  }

  private nextSeed(): number {
    return (this.dropoutSeed + Math.imul(++this.dropoutCalls, 0x9e3779b1)) >>> 0;
  }

  /** The adapters' values as host arrays, by name. */
  async toTensors(): Promise<LoraTensors> {
    const out: LoraTensors = new Map();
    for (const [name, v] of this.params) {
      out.set(name, { shape: v.shape as [number, number], data: (await v.data()) as Float32Array });
    }
    return out;
  }

  parameterCount(): number {
    let n = 0;
    for (const v of this.params.values()) n += v.size;
    return n;
  }

  dispose(): void {
    for (const v of this.params.values()) v.dispose();
  }
}

/**
 * Folds the adapters into the weights they adapt (W ← W + scale·A·B, PEFT's merge_and_unload) and detaches them: the
 * model is then a plain model whose outputs equal the adapted one's (outside dropout), to float rounding.
 */
export function mergeLora(model: { lora: LoraAdapters | null; params: Map<string, tf.Variable> }): void {
  const lora = model.lora;
  if (!lora) return;
  for (const [name, w] of model.params) {
    if (!lora.has(name)) continue;
    tf.tidy(() => {
      const a = lora.params.get(`${name}.A`) as tf.Tensor2D;
      const b = lora.params.get(`${name}.B`) as tf.Tensor2D;
      w.assign(tf.add(w, tf.mul(mm(a, b), lora.scale)));
    });
  }
  model.lora = null;
  lora.dispose();
}
